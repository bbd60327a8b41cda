//! The Redis link's two probe paths that no call sees the end of: a probe Redis grants
//! after its caller stopped waiting (the link hands the slot back), and a probe whose
//! permit is dropped unanswered on a shared breaker (it counts as failed in Redis, so no
//! replica waits out the lease). Each is made to happen, not hoped for: the link thread is
//! held at a known point by the shared clock it reads, and released by the test.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{CallError, Classify, Clock, Duration, Instant, ManualClock, Phase, Policy, State};
use breaker_redis::{Config, LinkEvent, RedisBreaker, RedisLink};
use tests::redis_server::{shared_url, unique_key};

#[derive(Debug)]
struct Down;
impl Classify for Down {}

/// The longest any step of these tests may take before it counts as a hang (never a
/// measure of speed: each step takes milliseconds).
const HANG: StdDuration = StdDuration::from_secs(60);

/// Where a link thread is held: after `skip` more of its clock readings, at the next one,
/// until the test releases it.
#[derive(Default)]
struct Hold {
    state: Mutex<HoldState>,
    changed: Condvar,
}

#[derive(Default)]
struct HoldState {
    skip: Option<usize>,
    held: bool,
}

impl Hold {
    /// Holds the link thread at its `skip + 1`-th clock reading from now.
    fn arm(&self, skip: usize) {
        self.state.lock().unwrap().skip = Some(skip);
    }

    /// Waits until the link thread is held.
    fn wait_held(&self) {
        let deadline = StdInstant::now() + HANG;
        let mut s = self.state.lock().unwrap();
        while !s.held {
            let left = deadline.saturating_duration_since(StdInstant::now());
            assert!(
                !left.is_zero(),
                "the link thread never read the clock where it was expected to"
            );
            s = self.changed.wait_timeout(s, left).unwrap().0;
        }
    }

    fn release(&self) {
        self.state.lock().unwrap().held = false;
        self.changed.notify_all();
    }

    /// Called at each clock reading.
    fn pass(&self) {
        // Only the link's own thread is held; the calls read the same clock.
        if std::thread::current().name() != Some("breaker-redis-link") {
            return;
        }
        let mut s = self.state.lock().unwrap();
        match s.skip {
            Some(0) => {
                s.skip = None;
                s.held = true;
                self.changed.notify_all();
                while s.held {
                    s = self.changed.wait(s).unwrap();
                }
            }
            Some(n) => s.skip = Some(n - 1),
            None => {}
        }
    }
}

/// The shared time every replica of a test reads (a manual clock), with the hold of one
/// replica's link thread.
#[derive(Clone)]
struct Time {
    clock: &'static ManualClock,
    hold: Arc<Hold>,
}

impl Clock for Time {
    fn now(&self) -> Instant {
        self.hold.pass();
        self.clock.now()
    }
}

type Events = Arc<Mutex<Vec<LinkEvent>>>;

/// A replica whose link reads Redis only when the test says (`refresh`), on the shared
/// manual clock, with its reports kept.
fn replica(url: &str, clock: &'static ManualClock, timeout: StdDuration) -> (RedisLink, Arc<Hold>, Events) {
    let hold = Arc::new(Hold::default());
    let events: Events = Arc::default();
    let kept = events.clone();
    let config = Config::new()
        .timeout(timeout)
        .refresh(StdDuration::from_secs(3600))
        .retry(StdDuration::from_secs(3600))
        .shared_clock(Time {
            clock,
            hold: hold.clone(),
        })
        .log(move |e| {
            eprintln!("test link: {e}");
            kept.lock().unwrap().push(e.clone());
        });
    (RedisLink::open(url, config).expect("a valid URL"), hold, events)
}

fn settle(links: &[&RedisLink]) {
    for _ in 0..2 {
        for l in links {
            l.refresh();
        }
    }
}

fn fail(b: &RedisBreaker) -> Result<(), CallError<Down>> {
    b.call(|| Err::<(), _>(Down))
}

const OPEN_FOR_1S: State = State::Open {
    remaining: Duration::from_secs(1),
    forced: false,
};

/// Trips the shared breaker from replica a and lets the cooldown run out: the next call
/// through the gate is the half-open probe.
fn tripped_and_cooled(clock: &ManualClock, ra: &RedisBreaker, links: &[&RedisLink], others: &[&RedisBreaker]) {
    assert!(ra.is_shared() && others.iter().all(|b| b.is_shared()));
    assert!(matches!(fail(ra), Err(CallError::Inner(Down))));
    settle(links);
    for b in others {
        assert_eq!(b.state(), OPEN_FOR_1S);
    }
    clock.advance(Duration::from_secs(1));
}

#[test]
fn a_probe_granted_after_its_caller_gave_up_is_handed_back() {
    let Some(url) = shared_url("a_probe_granted_after_its_caller_gave_up_is_handed_back") else {
        return;
    };
    // A lease far longer than the test: a probe slot that is not handed back stays taken.
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1)).with_probe_lease(Duration::from_secs(600));
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(5_000));
    let key = unique_key("late-probe");
    // The call waits 1 s for the link: only a link thread stalled for a whole second before
    // it picks the request up would miss the point where the test holds it.
    let (a, hold, a_events) = replica(&url, &CLOCK, StdDuration::from_secs(1));
    let (b, _, _) = replica(&url, &CLOCK, StdDuration::from_secs(1));
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    tripped_and_cooled(&CLOCK, &ra, &[&a, &b], &[&ra, &rb]);

    // The link reads the clock when it takes the request, then to stamp the compare-and-
    // swap it sends: it is held there, the swap not yet sent, until the call gave up.
    hold.arm(1);
    let local = ra.try_acquire().expect("the local breaker grants the probe");
    assert!(
        local.is_probe() && local.is_local(),
        "decided locally, after the timeout"
    );
    hold.wait_held();
    assert_eq!(
        a_events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, LinkEvent::Slow { .. }))
            .count(),
        1
    );
    // Released, the link's swap takes the shared probe slot for a caller who has gone: the
    // link hands it back (a neutral answer) before it serves anything else. Replica b sees
    // the slot free (a, apart, is not asked: its next refresh would push its own local
    // probe into Redis, as a replica whose probe is out does when Redis has not moved).
    hold.release();
    let released = StdInstant::now();
    // On its way there, b may still find the cooled-down open word (the swap not sent
    // yet) and the slot taken (granted, not yet handed back).
    loop {
        b.refresh();
        match rb.state() {
            State::HalfOpen {
                probing: false,
                streak: 0,
            } => break,
            State::HalfOpen {
                probing: true,
                streak: 0,
            }
            | State::Open {
                remaining: Duration::ZERO,
                forced: false,
            } => assert!(
                released.elapsed() < HANG,
                "the probe slot granted to nobody was never handed back: {:?}",
                rb.state()
            ),
            other => panic!("replica b found {other:?}"),
        }
    }
    let probe = rb
        .try_acquire()
        .expect("the slot is free: b takes the probe now, not after the lease");
    assert!(probe.is_probe() && !probe.is_local());
    probe.success();
    // a's own local probe answers too; both replicas end closed, on Redis's word.
    local.success();
    settle(&[&a, &b]);
    assert!(ra.is_shared() && rb.is_shared());
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
}

#[test]
fn a_shared_probe_dropped_unanswered_fails_in_redis() {
    let Some(url) = shared_url("a_shared_probe_dropped_unanswered_fails_in_redis") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1)).with_probe_lease(Duration::from_secs(600));
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(5_000));
    let key = unique_key("dropped-probe");
    let (a, _, _) = replica(&url, &CLOCK, StdDuration::from_secs(5));
    let (b, _, _) = replica(&url, &CLOCK, StdDuration::from_secs(5));
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    tripped_and_cooled(&CLOCK, &ra, &[&a, &b], &[&ra, &rb]);

    let probe = ra.try_acquire().expect("a takes the probe");
    assert!(probe.is_probe() && !probe.is_local(), "granted by Redis");
    settle(&[&a, &b]);
    assert_eq!(
        rb.state(),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    // The caller gives up on the call (a timeout, a panic unwinding): the permit is
    // dropped unanswered. It counts as a failed probe in Redis: open again, not half-open
    // with the slot taken until the lease runs out.
    drop(probe);
    settle(&[&a, &b]);
    assert_eq!(rb.state(), OPEN_FOR_1S);
    assert_eq!(ra.state(), OPEN_FOR_1S);
    let c = ra.counters();
    assert_eq!((c.probes, c.failures, c.trips, c.lease_expiries), (1, 2, 2, 0));

    // And b takes the next probe once the cooldown is over.
    CLOCK.advance(Duration::from_secs(1));
    let next = rb.try_acquire().expect("not wedged");
    assert!(next.is_probe() && !next.is_local());
    next.success();
    settle(&[&a, &b]);
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
}

#[test]
fn a_shared_probe_whose_async_call_is_dropped_fails_in_redis() {
    let Some(url) = shared_url("a_shared_probe_whose_async_call_is_dropped_fails_in_redis") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_secs(1)).with_probe_lease(Duration::from_secs(600));
    static CLOCK: ManualClock = ManualClock::new(Instant::from_millis(5_000));
    let key = unique_key("dropped-async-probe");
    let (a, _, _) = replica(&url, &CLOCK, StdDuration::from_secs(5));
    let (b, _, _) = replica(&url, &CLOCK, StdDuration::from_secs(5));
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    tripped_and_cooled(&CLOCK, &ra, &[&a, &b], &[&ra, &rb]);

    // The probe's call hangs (its future never finishes); the caller drops it (as a
    // `select!` with a timeout does) once it is running.
    let started = AtomicBool::new(false);
    {
        let hung = std::future::poll_fn(|_| {
            started.store(true, Ordering::SeqCst);
            Poll::<Result<(), Down>>::Pending
        });
        let mut call = pin!(ra.call_async(hung));
        let mut cx = Context::from_waker(Waker::noop());
        let deadline = StdInstant::now() + HANG;
        while !started.load(Ordering::SeqCst) {
            assert!(call.as_mut().poll(&mut cx).is_pending());
            assert!(StdInstant::now() < deadline, "the gate never let the probe through");
            std::thread::sleep(StdDuration::from_millis(1));
        }
        settle(&[&a, &b]);
        assert_eq!(
            rb.state(),
            State::HalfOpen {
                probing: true,
                streak: 0
            }
        );
    } // dropped here, mid-call
    settle(&[&a, &b]);
    assert_eq!(rb.state(), OPEN_FOR_1S);
    let c = ra.counters();
    assert_eq!((c.probes, c.trips, c.lease_expiries), (1, 2, 0));
}
