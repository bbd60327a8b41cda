//! `Guarded`: a peripheral with a breaker inside, and the choice of breaker per transaction.

use core::future::Future;

use crate::hal::{AsyncRetryNotReady, GuardedError, NoRetry, NotReady, RetryNotReady, Retrying};
use crate::{ByErrorKind, CallError, CallTicket, CircuitBreaker, ClassifyHal, Clock, GuardsCalls, Outcome, Phase};

/// A peripheral with a circuit breaker inside: it implements the very trait its `inner`
/// implements, so a driver crate written for that trait takes it unchanged.
///
/// | `T` implements | so does `Guarded<T, ..>` |
/// |---|---|
/// | [`embedded_hal::i2c::I2c<A>`] | `I2c<A>` (7- and 10-bit), through one breaker, a [`DeviceBreakers`](crate::DeviceBreakers) table (7-bit) or a [`KeyedBreakers`](crate::KeyedBreakers) table keyed by address |
/// | [`embedded_hal::spi::SpiDevice<W>`] | `SpiDevice<W>` |
/// | [`embedded_io::Read`], [`embedded_io::Write`] | `Read`, `Write` (and `ReadReady`, `WriteReady`) |
/// | the `embedded-hal-async` / `embedded-io-async` twins | the same twins |
///
/// Every transaction is one call through the breaker: an I2C `read`, `write`,
/// `write_read` or `transaction`, an SPI `transaction` (or `read`, `write`, `transfer`,
/// `transfer_in_place`), a serial `read`, `write` or `flush`. Each is forwarded to the
/// same method of `inner`, so a HAL's own fast paths are kept. A refused transaction never
/// reaches the bus and fails with [`GuardedError::Refused`]; a failed one keeps the
/// peripheral's error in [`GuardedError::Inner`], and the classifier `K` says what it
/// testifies ([`ByErrorKind`] by default: the HAL's `ErrorKind`, see its tables).
///
/// - `B` picks the breaker: `&SharedBreaker` (usually a `static`) for the whole
///   peripheral, or `&DeviceBreakers` (listed addresses) or `&KeyedBreakers` (any
///   address, created on first use) for one breaker per I2C address (see [`PickBreaker`]).
/// - `C` is the [`Clock`] the breaker reads, as every breaker of the project takes one:
///   `EmbassyClock` on embassy firmware, [`GlobalClock`](crate::GlobalClock) or your own
///   timer elsewhere, [`StdClock`](crate::StdClock) on a host, a [`ManualClock`](crate::ManualClock)
///   in tests. In the closed state with no strikes pending it is never read.
/// - `W` retries a transaction that fails "not ready yet" (a busy sensor's address NACK)
///   a few times, shortly, inside its one permit, before the failure counts: [`NoRetry`]
///   (the default, free) unless [`Guarded::retry_not_ready`] set one.
/// - An async transaction holds its permit across the `.await`: a future dropped while it
///   is the half-open probe (a timeout that fired, a cancelled task) counts as a failed
///   probe at that moment, so the breaker re-opens instead of wedging (and, with
///   [`Guarded::recover_with`], that re-opening gets its recovery step, as any trip does).
///
/// ```
/// use breaker_core::{Duration, Guarded, GuardedError, Instant, ManualClock, Policy, SharedBreaker};
/// use embedded_hal::i2c::{ErrorKind, I2c, NoAcknowledgeSource};
/// use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
///
/// static POLICY: Policy = Policy::new(2, Duration::from_secs(5));
/// static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// let nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
/// let i2c = Mock::new(&[
///     Transaction::write_read(0x48, vec![0x00], vec![0x19, 0x10]),
///     Transaction::write_read(0x48, vec![0x00], vec![0, 0]).with_error(nack),
///     Transaction::write_read(0x48, vec![0x00], vec![0, 0]).with_error(nack),
///     // The breaker is open for 5 s: the next read never reaches the bus.
///     Transaction::write_read(0x48, vec![0x00], vec![0x19, 0x20]), // after the cooldown
/// ]);
/// let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK);
/// let mut buf = [0; 2];
///
/// bus.write_read(0x48, &[0x00], &mut buf).unwrap();
/// assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(nack)));
/// assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(nack)));
/// assert!(matches!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Refused(_))));
/// CLOCK.advance(Duration::from_secs(5));
/// bus.write_read(0x48, &[0x00], &mut buf).unwrap(); // the probe: it works, the breaker closes
/// assert_eq!(buf, [0x19, 0x20]);
/// bus.into_inner().done();
/// ```
#[derive(Clone, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Guarded<T, B, C, K = ByErrorKind, R = NoRecovery, W = NoRetry> {
    inner: T,
    breakers: B,
    clock: C,
    classify: K,
    recover: R,
    /// A recovery step is owed: a dropped async probe re-opened the breaker, and its step
    /// could not be awaited then.
    owed: bool,
    retry: W,
}

impl<T, B: GuardsPeripheral, C> Guarded<T, B, C> {
    /// `inner`, guarded by `breakers` (a breaker that [guards calls](GuardsCalls), or a
    /// `&DeviceBreakers` or a `&KeyedBreakers`: see [`PickBreaker`]), which read `clock`;
    /// verdicts from the HAL's `ErrorKind` ([`ByErrorKind`]).
    pub const fn new(inner: T, breakers: B, clock: C) -> Self {
        Guarded {
            inner,
            breakers,
            clock,
            classify: ByErrorKind,
            recover: NoRecovery,
            owed: false,
            retry: NoRetry,
        }
    }
}

impl<T, B, C, K, R, W> Guarded<T, B, C, K, R, W> {
    /// The same peripheral with `classify` giving the verdicts instead: any
    /// `Fn(&Error) -> Verdict`, or a [`ClassifyHal`] of your own.
    pub fn classify_with<K2>(self, classify: K2) -> Guarded<T, B, C, K2, R, W> {
        Guarded {
            inner: self.inner,
            breakers: self.breakers,
            clock: self.clock,
            classify,
            recover: self.recover,
            owed: self.owed,
            retry: self.retry,
        }
    }

    /// The same peripheral with a recovery step run when a failure trips the breaker and
    /// before each half-open probe reaches the bus: `recover` gets the peripheral to reset
    /// it (toggle the bus, re-initialise the controller, wait for a sensor to boot). Any
    /// `FnMut(&mut T) -> bool` (`false`: still wedged), or a [`Recover`] (or, for async
    /// transactions, an [`AsyncRecover`]) of your own. See [`Recover`] for what a failed
    /// recovery does.
    ///
    /// The step runs exactly once per trip and once before each probe:
    ///
    /// - A trip is a failure that opens the breaker (a closed-state failure that trips it,
    ///   a failed probe), and also an async probe whose future is dropped (a timeout, a
    ///   cancelled task): that probe counts as failed and re-opens the breaker. Its step
    ///   runs at the drop for a blocking step (every [`Recover`], closures included); an
    ///   async step cannot be awaited inside a drop, so it is *owed*, and the next
    ///   transaction through the same `Guarded` awaits it first, before its gate (even one
    ///   the breaker then refuses; one to an address a `DeviceBreakers` table does not
    ///   list fails before, and leaves it owed).
    /// - A step cut short by a dropped future (the step after a trip, or an owed one) is
    ///   owed again, until one runs to its end. The step before a probe, cut short, is not
    ///   repeated: the probe never reached the bus, and its re-opening's step takes its
    ///   place.
    /// - A probe whose step answered `false` re-opens the breaker without running it again
    ///   (it has just run). Refused transactions, successes and failures that do not trip
    ///   never run it (but for an owed step, which any next transaction runs).
    ///
    /// With [`NoRecovery`], the default, none of this is compiled in.
    pub fn recover_with<R2>(self, recover: R2) -> Guarded<T, B, C, K, R2, W> {
        Guarded {
            inner: self.inner,
            breakers: self.breakers,
            clock: self.clock,
            classify: self.classify,
            recover,
            owed: false,
            retry: self.retry,
        }
    }

    /// The same peripheral with a short, bounded retry of each transaction that fails
    /// "not ready yet" (by default an I2C address NACK: a sensor busy converting, an
    /// EEPROM in its write cycle), inside the transaction and its one breaker permit,
    /// before the failure counts. `delay` waits between the tries: an
    /// [`embedded_hal::delay::DelayNs`] for blocking transactions, an
    /// [`embedded_hal_async::delay::DelayNs`] for async ones (never the breaker's clock).
    ///
    /// - The transaction is tried at most [`NotReady::tries`] times, with one wait of
    ///   [`NotReady::delay_us`] before each retry.
    /// - A retry that succeeds is one success for the breaker; when the tries are spent,
    ///   the last error is classified as usual (a NACK that persists is one strike, not
    ///   one per try); an error that is not "not ready" ends the transaction at once.
    /// - A half-open probe is retried the same way, within its permit; an async one whose
    ///   future is dropped during a wait counts as a failed probe, as at any other `.await`.
    /// - With [`Guarded::recover_with`]: the step before a probe runs once, before the
    ///   first try; the retries come before the failure is reported, and the step after a
    ///   trip runs only if that one reported failure trips the breaker.
    /// - With a [`DeviceBreakers`](crate::DeviceBreakers) table: each transaction is
    ///   retried within the permit of its own address's breaker, so a busy device costs
    ///   its neighbours nothing but the bus time of its retries.
    ///
    /// [`Retrying::tries`] and [`Retrying::retries`] (through [`Guarded::not_ready`]) tell
    /// how many tries were made.
    ///
    /// ```
    /// use breaker_core::hal::NotReady;
    /// use breaker_core::{Clock, Duration, Guarded, GuardedError, Instant, ManualClock, Policy, SharedBreaker, State};
    /// use embedded_hal::i2c::{ErrorKind, I2c, NoAcknowledgeSource};
    /// use embedded_hal_mock::eh1::delay::{CheckedDelay, Transaction as Wait};
    /// use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
    ///
    /// static POLICY: Policy = Policy::new(2, Duration::from_secs(5));
    /// static SENSOR: SharedBreaker = SharedBreaker::new(&POLICY);
    /// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    /// static BUSY: NotReady = NotReady::new(3, Duration::from_millis(2));
    ///
    /// let nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
    /// let read = || Transaction::write_read(0x48, vec![0x00], vec![0x19, 0x10]);
    /// let i2c = Mock::new(&[
    ///     // Converting: the sensor NACKs its address twice, then answers.
    ///     read().with_error(nack),
    ///     read().with_error(nack),
    ///     read(),
    ///     // Gone: three NACKs, the tries spent.
    ///     read().with_error(nack),
    ///     read().with_error(nack),
    ///     read().with_error(nack),
    /// ]);
    /// let wait = || Wait::delay_us(2_000);
    /// let delay = CheckedDelay::new(&[wait(), wait(), wait(), wait()]);
    /// let mut bus = Guarded::new(i2c, &SENSOR, &CLOCK).retry_not_ready(BUSY, delay);
    ///
    /// let mut buf = [0; 2];
    /// bus.write_read(0x48, &[0x00], &mut buf).unwrap(); // one success, no strike
    /// assert_eq!((bus.not_ready().tries(), SENSOR.state(CLOCK.now())), (3, State::Closed { strikes: 0 }));
    /// assert_eq!(bus.write_read(0x48, &[0x00], &mut buf), Err(GuardedError::Inner(nack)));
    /// assert_eq!(SENSOR.state(CLOCK.now()), State::Closed { strikes: 1 }); // one strike, not three
    /// assert_eq!(bus.not_ready().retries(), 4);
    /// bus.not_ready_mut().delay_mut().done(); // exactly four waits of 2 ms
    /// bus.into_inner().done();
    /// ```
    pub fn retry_not_ready<P, D>(self, policy: NotReady<P>, delay: D) -> Guarded<T, B, C, K, R, Retrying<P, D>> {
        Guarded {
            inner: self.inner,
            breakers: self.breakers,
            clock: self.clock,
            classify: self.classify,
            recover: self.recover,
            owed: self.owed,
            retry: Retrying::new(policy, delay),
        }
    }

    /// The recovery step ([`NoRecovery`] unless [`Guarded::recover_with`] set one).
    pub fn recovery(&self) -> &R {
        &self.recover
    }

    /// The recovery step, mutably: to reconfigure it.
    pub fn recovery_mut(&mut self) -> &mut R {
        &mut self.recover
    }

    /// The "not ready" retry ([`NoRetry`] unless [`Guarded::retry_not_ready`] set a
    /// [`Retrying`]): its policy, its delay, the tries it made.
    pub fn not_ready(&self) -> &W {
        &self.retry
    }

    /// The "not ready" retry, mutably: to reach its delay.
    pub fn not_ready_mut(&mut self) -> &mut W {
        &mut self.retry
    }

    /// The peripheral.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The peripheral, mutably: to reconfigure it. Transactions made through this
    /// reference bypass the breaker.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The breaker, or the table of breakers.
    pub fn breakers(&self) -> &B {
        &self.breakers
    }

    /// The clock the breaker reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The classifier.
    pub fn classifier(&self) -> &K {
        &self.classify
    }

    /// Gives the peripheral back.
    pub fn into_inner(self) -> T {
        self.inner
    }

    /// The parts a transaction needs, borrowed apart.
    #[inline(always)]
    pub(super) fn parts(&mut self) -> (&mut T, &mut B, &C, &K, Steps<'_, R>, &mut W) {
        (
            &mut self.inner,
            &mut self.breakers,
            &self.clock,
            &self.classify,
            Steps {
                step: &mut self.recover,
                owed: &mut self.owed,
            },
            &mut self.retry,
        )
    }
}

/// The recovery step, and whether one is owed (see [`AsyncRecover::recover_now`]).
pub(super) struct Steps<'a, R> {
    step: &'a mut R,
    owed: &'a mut bool,
}

/// Picks the breaker that guards a transaction to `address` (an I2C address; `()` where
/// transactions have none).
///
/// - Any breaker that [guards calls](GuardsCalls) (a `&SharedBreaker`, an
///   `Arc<SharedBreaker>`, a [`Breaker`](crate::Breaker) owned by the peripheral, a
///   Redis-shared breaker): one breaker for every transaction, whatever the address. Not a
///   registry entry, which guards its own function only.
/// - `&DeviceBreakers`: the breaker listed for the address, so that one dead sensor is
///   refused while its neighbours on the same bus keep working; `None` for an address the
///   table does not list.
/// - `&KeyedBreakers` (`u8` keys for 7-bit addresses, `u16` for 10-bit ones too): the
///   address's entry, its breaker created on first use, for any address; with no slot
///   left, an unguarded entry (see [`KeyedBreakers::entry`](crate::KeyedBreakers::entry)).
pub trait PickBreaker<A> {
    /// The breaker a transaction goes through.
    type Breaker<'a>: CircuitBreaker
    where
        Self: 'a;

    /// The breaker of a transaction to `address`; `None` if there is none, and the
    /// transaction fails with [`GuardedError::Unlisted`] without reaching the bus.
    fn pick(&mut self, address: A) -> Option<Self::Breaker<'_>>;
}

impl<A, B: GuardsCalls> PickBreaker<A> for B {
    type Breaker<'a>
        = &'a mut B
    where
        B: 'a;

    #[inline(always)]
    fn pick(&mut self, _: A) -> Option<&mut B> {
        Some(self)
    }
}

/// What [`Guarded::new`] takes: a breaker that [guards calls](GuardsCalls) (one for every
/// transaction), or a `&DeviceBreakers` or `&KeyedBreakers` (one per address). The
/// [`PickBreaker`] impls say which breaker a transaction goes through.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot guard a peripheral's transactions",
    label = "`Guarded` needs a breaker that guards calls it does not make itself, or a `&DeviceBreakers` or `&KeyedBreakers`",
    note = "a registry entry guards its own `#[circuit_breaker]` function only: give `Guarded` a breaker of its own (a `&'static SharedBreaker`, an `Arc<SharedBreaker<..>>`, a `Breaker`), or a `&DeviceBreakers` or `&KeyedBreakers` for one per address"
)]
pub trait GuardsPeripheral {}

impl<B: GuardsCalls> GuardsPeripheral for B {}

/// One blocking transaction through `breaker`: its gate, the transaction (tried again
/// while `retry` says it is not ready), its one outcome
/// (for a shared breaker's closed state: the state word read before and after, nothing
/// written). `Kind` selects the classifier's table (the HAL family's error-kind type).
#[inline(always)]
pub(super) fn call<Kind, B, C, K, Rec, W, T, V, E>(
    mut breaker: B,
    clock: &C,
    classify: &K,
    recover: Steps<'_, Rec>,
    retry: &mut W,
    inner: &mut T,
    transaction: impl FnMut(&mut T) -> Result<V, E>,
) -> Result<V, GuardedError<E>>
where
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<Kind, E>,
    Rec: Recover<T>,
    W: RetryNotReady<Kind, E>,
{
    if !Rec::ACTIVE {
        // No recovery step: through the kind's own call path (a shared breaker's settles
        // a refusal inline).
        return match breaker.call_classified(clock, || retry.run(inner, transaction), |e| classify.verdict(e)) {
            Ok(v) => Ok(v),
            Err(CallError::Refused(r)) => Err(GuardedError::Refused(r)),
            Err(CallError::Inner(e)) => Err(GuardedError::Inner(e)),
        };
    }
    // A blocking step is never owed: a `Recover` runs even where it cannot be awaited.
    let recover = recover.step;
    let attempt = breaker.attempt(clock).map_err(GuardedError::Refused)?;
    if attempt.is_probe() && !recover.recover(inner) {
        attempt.record(Outcome::STRIKE);
        return Err(GuardedError::Unrecovered);
    }
    match retry.run(inner, transaction) {
        Ok(v) => {
            attempt.record(Outcome::Success);
            Ok(v)
        }
        Err(e) => {
            attempt.record(Outcome::Error(classify.verdict(&e)));
            if breaker.state(clock).phase() == Phase::Open {
                // This failure tripped it: the step runs now too (its answer is for probes).
                recover.recover(inner);
            }
            Err(GuardedError::Inner(e))
        }
    }
}

/// One async transaction through `breaker`. The future is made only once the breaker
/// let the call through (a HAL may start a transfer when its future is made), and the
/// permit is held across the `.await`: dropped unanswered, a probe counts as failed.
///
/// With a recovery step, the permit is held by a [`Held`] guard instead, whose drop also
/// gives the re-opening of a dropped probe its step (at once, or owed to the next
/// transaction, which runs it first).
#[inline(always)]
pub(super) async fn call_async<Kind, B, C, K, Rec, W, T, V, E>(
    mut breaker: B,
    clock: &C,
    classify: &K,
    recover: Steps<'_, Rec>,
    retry: &mut W,
    inner: &mut T,
    transaction: impl AsyncFnMut(&mut T) -> Result<V, E>,
) -> Result<V, GuardedError<E>>
where
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyHal<Kind, E>,
    Rec: AsyncRecover<T>,
    W: AsyncRetryNotReady<Kind, E>,
{
    if !Rec::ACTIVE {
        let permit = breaker.attempt(clock).map_err(GuardedError::Refused)?;
        return match retry.run(inner, transaction).await {
            Ok(v) => {
                permit.record(Outcome::Success);
                Ok(v)
            }
            Err(e) => {
                permit.record(Outcome::Error(classify.verdict(&e)));
                Err(GuardedError::Inner(e))
            }
        };
    }
    let Steps { step, owed } = recover;
    if *owed {
        // A dropped probe re-opened the breaker and its async step could not run then: it
        // runs now, before the gate. Cut short in turn, it stays owed.
        step.recover(inner).await;
        *owed = false;
    }
    let ticket = breaker.attempt(clock).map_err(GuardedError::Refused)?.into_ticket();
    let mut held = Held {
        breaker: &mut breaker,
        clock,
        ticket,
        inner,
        step,
        owed,
    };
    if held.is_probe() && !held.step.recover(&mut *held.inner).await {
        held.report(Outcome::STRIKE);
        return Err(GuardedError::Unrecovered);
    }
    match retry.run(&mut *held.inner, transaction).await {
        Ok(v) => {
            held.report(Outcome::Success);
            Ok(v)
        }
        Err(e) => {
            held.report(Outcome::Error(classify.verdict(&e)));
            if held.breaker.state(clock).phase() == Phase::Open {
                // This failure tripped it: the step runs now too (its answer is for
                // probes); owed while it runs, should the future be dropped meanwhile.
                *held.owed = true;
                held.step.recover(&mut *held.inner).await;
                *held.owed = false;
            }
            Err(GuardedError::Inner(e))
        }
    }
}

/// An async transaction's permit, with what its drop needs: dropped unanswered (the
/// future was dropped: a timeout, a cancelled task), the permit is abandoned (a probe
/// counts as failed, and the breaker re-opens), and that re-opening gets its recovery
/// step, run at once if it can be ([`AsyncRecover::recover_now`]), else owed.
struct Held<'a, B: CircuitBreaker, C: Clock, T, R: AsyncRecover<T>> {
    breaker: &'a mut B,
    clock: &'a C,
    ticket: Option<B::Ticket>,
    inner: &'a mut T,
    step: &'a mut R,
    owed: &'a mut bool,
}

impl<B: CircuitBreaker, C: Clock, T, R: AsyncRecover<T>> Held<'_, B, C, T, R> {
    #[inline(always)]
    fn is_probe(&self) -> bool {
        self.ticket.as_ref().is_some_and(CallTicket::is_probe)
    }

    /// Reports the call's outcome.
    #[inline(always)]
    fn report(&mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.report(ticket, outcome, self.clock);
        }
    }
}

impl<B: CircuitBreaker, C: Clock, T, R: AsyncRecover<T>> Drop for Held<'_, B, C, T, R> {
    fn drop(&mut self) {
        let Some(ticket) = self.ticket.take() else {
            return;
        };
        let probe = ticket.is_probe();
        self.breaker.abandon(ticket, self.clock);
        if probe && self.breaker.state(self.clock).phase() == Phase::Open && self.step.recover_now(self.inner).is_none()
        {
            *self.owed = true;
        }
    }
}

/// A recovery step for a wedged peripheral, run by [`Guarded`] once when a transaction's
/// failure trips the breaker, and once before each half-open probe (see
/// [`Guarded::recover_with`]): some HALs leave a bus stuck after an address NACK or a bus
/// error until the peripheral is reset, and a probe sent to a stuck peripheral only fails
/// again.
///
/// `recover` returns whether the peripheral is ready. Before a probe, `false` means the
/// probe counts as failed (a strike: the breaker re-opens, with its backoff), the
/// transaction does not reach the bus, and it fails with [`GuardedError::Unrecovered`];
/// that re-opening does not run the step again, since it has just run. At a trip the
/// answer is not needed (the breaker is open either way). Calls that succeed, or fail
/// without tripping, never run it. An async probe whose future is dropped is a trip too:
/// a `Recover` then runs in the drop (see [`Guarded::recover_with`] for the whole rule).
/// Any `FnMut(&mut T) -> bool` is a `Recover<T>`.
pub trait Recover<T> {
    /// Whether there is a step at all: `false` only for [`NoRecovery`], whose transactions
    /// then cost what they cost without one.
    const ACTIVE: bool = true;

    /// Gets `peripheral` working again; whether it is ready for the probe.
    fn recover(&mut self, peripheral: &mut T) -> bool;
}

impl<T, F: FnMut(&mut T) -> bool> Recover<T> for F {
    fn recover(&mut self, peripheral: &mut T) -> bool {
        self(peripheral)
    }
}

/// [`Recover`] for async transactions: the step may await (a reset pin held low for a
/// while, a sensor's boot time). Every [`Recover`] is one.
///
/// A step that awaits cannot run where a probe's future is dropped: the step that
/// re-opening owes runs at the start of the next transaction instead (see
/// [`AsyncRecover::recover_now`] and [`Guarded::recover_with`]).
pub trait AsyncRecover<T> {
    /// Whether there is a step at all (see [`Recover::ACTIVE`]).
    const ACTIVE: bool = true;

    /// Gets `peripheral` working again; whether it is ready for the probe.
    fn recover(&mut self, peripheral: &mut T) -> impl Future<Output = bool>;

    /// The step run without awaiting, where it cannot be awaited: in the drop of a
    /// half-open probe's future, whose re-opening it follows. `Some` (whether the
    /// peripheral is ready) if it ran; `None`, the default, for a step that must be
    /// awaited: it is then owed, and the next transaction through the same [`Guarded`]
    /// awaits it first. Every [`Recover`] runs here.
    fn recover_now(&mut self, peripheral: &mut T) -> Option<bool> {
        let _ = peripheral;
        None
    }
}

impl<T, R: Recover<T>> AsyncRecover<T> for R {
    const ACTIVE: bool = R::ACTIVE;

    async fn recover(&mut self, peripheral: &mut T) -> bool {
        Recover::recover(self, peripheral)
    }

    fn recover_now(&mut self, peripheral: &mut T) -> Option<bool> {
        Some(Recover::recover(self, peripheral))
    }
}

/// No recovery step: the default of [`Guarded`]; a probe goes straight to the bus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NoRecovery;

impl<T> Recover<T> for NoRecovery {
    const ACTIVE: bool = false;

    #[inline(always)]
    fn recover(&mut self, _: &mut T) -> bool {
        true
    }
}

/// The breaker `breakers` lists for `address`, or the error of an unlisted address.
#[inline(always)]
pub(super) fn pick<A: Copy + Into<u16>, B: PickBreaker<A>, E>(
    breakers: &mut B,
    address: A,
) -> Result<B::Breaker<'_>, GuardedError<E>> {
    breakers.pick(address).ok_or(GuardedError::Unlisted {
        address: address.into(),
    })
}
