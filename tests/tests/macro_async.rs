//! `#[circuit_breaker]` on `async fn`s and methods: the permit lives across the `.await`
//! (so a second caller is refused while the probe is out, and a dropped probe future
//! counts as a failed probe), one breaker per function whatever the receiver, and no
//! clock read on the closed-state happy path.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use breaker_core::{circuit_breaker, registry, Classify, Clock, Instant, Phase, RefusalReason, Refused, State};

/// A manual clock that counts its readings.
struct CountingClock {
    millis: AtomicU32,
    reads: AtomicUsize,
}

impl CountingClock {
    const fn new() -> Self {
        CountingClock {
            millis: AtomicU32::new(0),
            reads: AtomicUsize::new(0),
        }
    }
    fn advance_secs(&self, secs: u32) {
        self.millis.fetch_add(secs * 1000, Ordering::Relaxed);
    }
    fn take_reads(&self) -> usize {
        self.reads.swap(0, Ordering::Relaxed)
    }
}

impl Clock for CountingClock {
    fn now(&self) -> Instant {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Instant::from_millis(self.millis.load(Ordering::Relaxed))
    }
}

static CLOCK: CountingClock = CountingClock::new();

#[derive(Debug, PartialEq)]
enum LinkError {
    Timeout,
    Refused(RefusalReason),
}

impl From<Refused> for LinkError {
    fn from(r: Refused) -> Self {
        LinkError::Refused(r.reason)
    }
}

impl Classify for LinkError {}

/// A future that is pending the first `n` times it is polled.
struct Yield(u32);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            Poll::Ready(())
        } else {
            self.0 -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

/// Sends after `waits` pending polls; fails if `fail`.
#[circuit_breaker(trip = 2, cooldown = "10s", probe_lease = "5s", clock = CLOCK, name = "async::send")]
async fn send(waits: u32, fail: bool) -> Result<u32, LinkError> {
    Yield(waits).await;
    if fail {
        return Err(LinkError::Timeout);
    }
    Ok(waits)
}

fn state() -> State {
    registry::get("async::send").unwrap().state()
}

#[test]
fn async_probe_permit_lives_across_the_await_and_a_dropped_probe_fails() {
    CLOCK.take_reads();
    // Closed, nothing pending: no clock reads, whatever the await does.
    assert_eq!(block_on(send(3, false)), Ok(3));
    assert_eq!(
        CLOCK.take_reads(),
        0,
        "the closed-state happy path must not read the clock"
    );

    assert_eq!(block_on(send(0, true)), Err(LinkError::Timeout));
    assert_eq!(block_on(send(0, true)), Err(LinkError::Timeout));
    assert_eq!(state().phase(), Phase::Open);
    assert_eq!(block_on(send(0, false)), Err(LinkError::Refused(RefusalReason::Open)));

    // After the cooldown, the first caller becomes the probe and holds it across awaits.
    CLOCK.advance_secs(10);
    let mut probe = pin!(send(2, false));
    assert!(poll_once(probe.as_mut()).is_pending());
    assert_eq!(
        state(),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    assert_eq!(
        block_on(send(0, false)),
        Err(LinkError::Refused(RefusalReason::Probing))
    );
    assert_eq!(block_on(probe), Ok(2));
    assert_eq!(state().phase(), Phase::Closed);

    // Trip again, then drop the probe future mid-call: the breaker re-opens at once
    // rather than waiting for the lease.
    assert_eq!(block_on(send(0, true)), Err(LinkError::Timeout));
    assert_eq!(block_on(send(0, true)), Err(LinkError::Timeout));
    CLOCK.advance_secs(10);
    {
        let mut probe = Box::pin(send(5, false));
        assert!(poll_once(probe.as_mut()).is_pending());
        assert_eq!(
            state(),
            State::HalfOpen {
                probing: true,
                streak: 0
            }
        );
    }
    assert_eq!(state().phase(), Phase::Open, "a dropped probe counts as failed");
    assert_eq!(block_on(send(0, false)), Err(LinkError::Refused(RefusalReason::Open)));
}

static SYNC_CLOCK: CountingClock = CountingClock::new();

struct Radio {
    sent: u32,
    id: u8,
}

impl Radio {
    /// A `&mut self` method: one breaker for every radio.
    #[circuit_breaker(trip = 2, clock = SYNC_CLOCK, name = "radio::transmit")]
    fn transmit(&mut self, ok: bool) -> Result<u32, LinkError> {
        if !ok {
            return Err(LinkError::Timeout);
        }
        self.sent += 1;
        Ok(self.sent)
    }

    /// A `&self` async method.
    #[circuit_breaker(clock = SYNC_CLOCK, name = "radio::id")]
    async fn id(&self) -> Result<u8, LinkError> {
        Ok(self.id)
    }

    /// Generic, with a `where` clause.
    #[circuit_breaker(clock = SYNC_CLOCK, name = "radio::sum")]
    pub fn sum<I>(&self, items: I) -> Result<u32, LinkError>
    where
        I: IntoIterator<Item = u32>,
    {
        Ok(items.into_iter().sum::<u32>() + u32::from(self.id))
    }
}

#[test]
fn methods_share_one_breaker_per_function_and_keep_their_receivers() {
    let mut a = Radio { sent: 0, id: 1 };
    let mut b = Radio { sent: 10, id: 2 };
    SYNC_CLOCK.take_reads();
    assert_eq!(a.transmit(true), Ok(1));
    assert_eq!(b.transmit(true), Ok(11));
    assert_eq!(block_on(b.id()), Ok(2));
    assert_eq!(a.sum([1, 2, 3]), Ok(7));
    assert_eq!(
        SYNC_CLOCK.take_reads(),
        0,
        "the closed-state happy path must not read the clock"
    );

    // Two strikes through two different receivers trip the one breaker.
    assert_eq!(a.transmit(false), Err(LinkError::Timeout));
    assert_eq!(b.transmit(false), Err(LinkError::Timeout));
    assert_eq!(a.transmit(true), Err(LinkError::Refused(RefusalReason::Open)));
    assert_eq!(a.sent, 1, "the refused call did not run");
    // The other functions have breakers of their own.
    assert_eq!(block_on(a.id()), Ok(1));
    registry::reset("radio::transmit").unwrap();
    assert_eq!(b.transmit(true), Ok(12));
}
