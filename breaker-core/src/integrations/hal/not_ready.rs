//! "Not ready yet": a short, bounded retry of a guarded transaction, inside its one permit,
//! for the errors that mean "try again shortly" (a busy sensor's address NACK).

use core::future::Future;

use embedded_hal::i2c;

use crate::Duration;

/// A short, bounded retry of a [`Guarded`](crate::Guarded) transaction that failed with a
/// "not ready yet" error, before the failure counts: at most `tries` tries in all, `delay`
/// apart, while the error is one the predicate `P` says is "not ready" ([`AddressNack`] by
/// default: an I2C `NoAcknowledge(Address)`).
///
/// Some devices NACK their own address while busy (a conversion in progress, an EEPROM's
/// write cycle): the NACK means "retry shortly", not a failure. Given to
/// [`Guarded::retry_not_ready`](crate::Guarded::retry_not_ready) with a `DelayNs`, it makes
/// the guarded transaction, with its one breaker permit, try again:
///
/// - a retry that succeeds is one success for the breaker (one outcome, counted once);
/// - when the tries are spent, the last error is judged by the classifier as usual (a NACK
///   that persists is one strike, or whatever the classifier says), never `tries` strikes;
/// - an error that is not "not ready" ends the transaction at once;
/// - a half-open probe is retried the same way, within its permit;
/// - the waits are the given `DelayNs`'s, never the breaker's clock.
///
/// Every constructor is a `const fn`, so a policy can live in a `static`:
///
/// ```
/// use breaker_core::hal::{NotReady, AddressNack};
/// use breaker_core::Duration;
/// use embedded_hal::i2c::{ErrorKind, NoAcknowledgeSource};
///
/// // Three tries in all, 2 ms apart, on an address NACK.
/// static BUSY: NotReady = NotReady::new(3, Duration::from_millis(2));
/// assert_eq!((BUSY.tries(), BUSY.delay_us()), (3, 2_000));
///
/// // An EEPROM's write cycle: 5 tries, 500 µs apart, on any NACK.
/// let nack = |e: &ErrorKind| matches!(e, ErrorKind::NoAcknowledge(_));
/// let eeprom = NotReady::new(5, Duration::ZERO).with_delay_us(500).when(nack);
/// assert!(eeprom.predicate()(&ErrorKind::NoAcknowledge(NoAcknowledgeSource::Data)));
/// assert!(NotReady::try_new(0, Duration::ZERO).is_none()); // at least one try
/// ```
///
/// No try at all is rejected: in a `const` or `static` it does not compile.
///
/// ```compile_fail
/// use breaker_core::{hal::NotReady, Duration};
/// static NEVER: NotReady = NotReady::new(0, Duration::from_millis(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NotReady<P = AddressNack> {
    tries: u8,
    delay_us: u32,
    when: P,
}

impl NotReady {
    /// At most `tries` tries in all (1: no retry), `delay` apart, on an I2C address NACK.
    ///
    /// # Panics
    /// If `tries` is 0: in a `const` or `static`, a compile error. See
    /// [`NotReady::try_new`] for values known only at run time.
    pub const fn new(tries: u8, delay: Duration) -> NotReady {
        match Self::try_new(tries, delay) {
            Some(policy) => policy,
            None => panic!("a not-ready retry needs at least one try"),
        }
    }

    /// [`NotReady::new`], or `None` if `tries` is 0.
    pub const fn try_new(tries: u8, delay: Duration) -> Option<NotReady> {
        if tries == 0 {
            return None;
        }
        Some(NotReady {
            tries,
            delay_us: delay.as_millis().saturating_mul(1000),
            when: AddressNack,
        })
    }

    /// The same policy, with `when` saying which errors mean "not ready yet" instead of an
    /// address NACK: any `Fn(&Error) -> bool`, or an [`IsNotReady`] of your own.
    pub const fn when<P>(self, when: P) -> NotReady<P> {
        NotReady {
            tries: self.tries,
            delay_us: self.delay_us,
            when,
        }
    }
}

impl<P> NotReady<P> {
    /// The same policy, `delay_us` microseconds between tries: for waits shorter than a
    /// millisecond, which a [`Duration`] cannot hold.
    pub const fn with_delay_us(mut self, delay_us: u32) -> Self {
        self.delay_us = delay_us;
        self
    }

    /// The most tries a transaction makes, the first included.
    pub const fn tries(&self) -> u8 {
        self.tries
    }

    /// The wait between two tries, in microseconds.
    pub const fn delay_us(&self) -> u32 {
        self.delay_us
    }

    /// Which errors mean "not ready yet".
    pub const fn predicate(&self) -> &P {
        &self.when
    }
}

/// Says whether a failed transaction's error `E` means "not ready yet, try again shortly",
/// for a [`NotReady`] policy. `Kind` names the trait family, as for
/// [`ClassifyHal`](crate::ClassifyHal). Any `Fn(&E) -> bool` is one, for every family.
pub trait IsNotReady<Kind, E: ?Sized> {
    /// Whether `error` means the device is busy and a retry shortly may succeed.
    fn is_not_ready(&self, error: &E) -> bool;
}

impl<Kind, E: ?Sized, F: Fn(&E) -> bool> IsNotReady<Kind, E> for F {
    #[inline]
    fn is_not_ready(&self, error: &E) -> bool {
        self(error)
    }
}

/// The default "not ready" of a [`NotReady`] policy: an I2C
/// `NoAcknowledge(NoAcknowledgeSource::Address)`, the answer of many devices busy with a
/// conversion or a write cycle (embedded-hal issue 181). A data NACK, a
/// bus error or an arbitration loss is not retried. I2C errors only: for SPI or a serial
/// port, give [`NotReady::when`] a predicate of your own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AddressNack;

impl<E: i2c::Error + ?Sized> IsNotReady<i2c::ErrorKind, E> for AddressNack {
    #[inline]
    fn is_not_ready(&self, error: &E) -> bool {
        matches!(
            error.kind(),
            i2c::ErrorKind::NoAcknowledge(i2c::NoAcknowledgeSource::Address)
        )
    }
}

/// A [`NotReady`] policy with the `DelayNs` it waits with: what
/// [`Guarded::retry_not_ready`](crate::Guarded::retry_not_ready) installs. It counts the
/// tries it makes, so that they can be read back: [`Retrying::tries`] (the last
/// transaction's) and [`Retrying::retries`] (all retries so far).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Retrying<P, D> {
    policy: NotReady<P>,
    delay: D,
    last: u8,
    retries: u32,
}

impl<P, D> Retrying<P, D> {
    /// `policy`, waiting with `delay`.
    pub const fn new(policy: NotReady<P>, delay: D) -> Self {
        Retrying {
            policy,
            delay,
            last: 0,
            retries: 0,
        }
    }

    /// The policy.
    pub const fn policy(&self) -> &NotReady<P> {
        &self.policy
    }

    /// The delay it waits with.
    pub const fn delay(&self) -> &D {
        &self.delay
    }

    /// The delay it waits with, mutably.
    pub const fn delay_mut(&mut self) -> &mut D {
        &mut self.delay
    }

    /// The tries the last transaction that reached the bus made, the first included (0
    /// before any): 1 if it was not retried.
    pub const fn tries(&self) -> u8 {
        self.last
    }

    /// The retries made so far, by every transaction (each a wait and a try beyond the
    /// first); it stops at `u32::MAX`.
    pub const fn retries(&self) -> u32 {
        self.retries
    }

    #[inline]
    fn made(&mut self, tries: u8) {
        self.last = tries;
        self.retries = self.retries.saturating_add(tries as u32 - 1);
    }
}

/// Runs a blocking guarded transaction, retrying it while it is "not ready": the
/// `W` parameter of [`Guarded`](crate::Guarded). [`NoRetry`] (the default) runs it once;
/// a [`Retrying`] over a blocking [`embedded_hal::delay::DelayNs`] retries it.
pub trait RetryNotReady<Kind, E> {
    /// `transaction` on `inner`, tried until it succeeds, fails with an error that is not
    /// "not ready", or the tries are spent; the last result.
    fn run<T, V>(&mut self, inner: &mut T, transaction: impl FnMut(&mut T) -> Result<V, E>) -> Result<V, E>;
}

/// [`RetryNotReady`] for async transactions: a [`Retrying`] over an async
/// [`embedded_hal_async::delay::DelayNs`] (many HALs' delays, `embassy_time::Delay`
/// among them, are both), or [`NoRetry`].
pub trait AsyncRetryNotReady<Kind, E> {
    /// `transaction` on `inner`, tried as [`RetryNotReady::run`] tries it, the waits
    /// awaited.
    fn run<T, V>(
        &mut self,
        inner: &mut T,
        transaction: impl AsyncFnMut(&mut T) -> Result<V, E>,
    ) -> impl Future<Output = Result<V, E>>;
}

impl<Kind, E, P, D> RetryNotReady<Kind, E> for Retrying<P, D>
where
    P: IsNotReady<Kind, E>,
    D: embedded_hal::delay::DelayNs,
{
    fn run<T, V>(&mut self, inner: &mut T, mut transaction: impl FnMut(&mut T) -> Result<V, E>) -> Result<V, E> {
        let mut tries = 1;
        loop {
            match transaction(inner) {
                Err(e) if tries < self.policy.tries && self.policy.when.is_not_ready(&e) => {
                    self.delay.delay_us(self.policy.delay_us);
                    tries += 1;
                }
                result => {
                    self.made(tries);
                    return result;
                }
            }
        }
    }
}

impl<Kind, E, P, D> AsyncRetryNotReady<Kind, E> for Retrying<P, D>
where
    P: IsNotReady<Kind, E>,
    D: embedded_hal_async::delay::DelayNs,
{
    async fn run<T, V>(
        &mut self,
        inner: &mut T,
        mut transaction: impl AsyncFnMut(&mut T) -> Result<V, E>,
    ) -> Result<V, E> {
        let mut tries = 1;
        loop {
            match transaction(inner).await {
                Err(e) if tries < self.policy.tries && self.policy.when.is_not_ready(&e) => {
                    self.delay.delay_us(self.policy.delay_us).await;
                    tries += 1;
                }
                result => {
                    self.made(tries);
                    return result;
                }
            }
        }
    }
}

/// No "not ready" retry: the default of [`Guarded`](crate::Guarded); each transaction is
/// tried once, and costs what it costs without this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NoRetry;

impl<Kind, E> RetryNotReady<Kind, E> for NoRetry {
    #[inline(always)]
    fn run<T, V>(&mut self, inner: &mut T, mut transaction: impl FnMut(&mut T) -> Result<V, E>) -> Result<V, E> {
        transaction(inner)
    }
}

impl<Kind, E> AsyncRetryNotReady<Kind, E> for NoRetry {
    #[inline(always)]
    async fn run<T, V>(
        &mut self,
        inner: &mut T,
        mut transaction: impl AsyncFnMut(&mut T) -> Result<V, E>,
    ) -> Result<V, E> {
        transaction(inner).await
    }
}

#[cfg(test)]
mod tests {
    use super::NotReady;
    use crate::Duration;

    #[test]
    fn a_policy_reads_back_its_tries_and_delay() {
        let policy = NotReady::new(3, Duration::from_millis(2));
        assert_eq!((policy.tries(), policy.delay_us()), (3, 2_000));
        assert_eq!(policy.with_delay_us(250).delay_us(), 250);
    }
}
