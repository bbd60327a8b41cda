//! The time replicas share: Redis's `TIME`, whatever their own clocks say; and what a skew
//! between replicas does (a cooldown ends early for the one ahead) and does not do (the
//! compare-and-swap still grants one probe).

use std::time::Duration as StdDuration;

use breaker_core::{Classify, Clock, Duration, Instant, ManualClock, Phase, Policy, State, StdClock};
use breaker_redis::{Config, RedisBreaker, RedisLink};
use tests::redis_server::{shared_url, unique_key};

#[derive(Debug)]
struct Down;
impl Classify for Down {}

/// The host's monotonic clock, shifted: a replica whose clock started elsewhere.
struct Shifted(i64);
impl Clock for Shifted {
    fn now(&self) -> Instant {
        Instant::from_millis(StdClock.now().as_millis().wrapping_add(self.0 as u32))
    }
}

/// A generous timeout: on a loaded host a gate transition that waited past it would be
/// decided by the local breaker instead of the shared one these tests are about.
fn config() -> Config {
    Config::new()
        .timeout(StdDuration::from_secs(5))
        .refresh(StdDuration::from_millis(50))
        .log(|e| eprintln!("test link: {e}"))
}

fn settle(links: &[&RedisLink]) {
    for _ in 0..2 {
        for l in links {
            l.refresh();
        }
    }
}

/// How far apart two replicas' shared times may be, in milliseconds.
const AGREE_MS: u32 = 1_000;

fn wrapping_gap(a: Instant, b: Instant) -> u32 {
    let d = a.as_millis().wrapping_sub(b.as_millis());
    d.min(d.wrapping_neg())
}

#[test]
fn the_clock_offset_is_what_the_shared_time_adds_to_the_local_clock() {
    let Some(url) = shared_url("the_clock_offset_is_what_the_shared_time_adds_to_the_local_clock") else {
        return;
    };
    // A local clock that stands still: the shared time is it plus the offset, exactly.
    static LOCAL: ManualClock = ManualClock::new(Instant::from_millis(12_345));
    let l = RedisLink::open(url.as_str(), config().local_clock(&LOCAL)).unwrap();
    l.refresh();
    assert_eq!(l.now(), Instant::from_millis(12_345u32.wrapping_add(l.clock_offset())));
    // And the offset is the one Redis's `TIME` gives (its milliseconds, wrapping at 2^32),
    // give or take the round trips.
    let time: (u64, u64) = redis::cmd("TIME")
        .query(&mut redis::Client::open(url.as_str()).unwrap().get_connection().unwrap())
        .unwrap();
    let server = Instant::from_millis((time.0 * 1_000 + time.1 / 1_000) as u32);
    let gap = wrapping_gap(l.now(), server);
    assert!(gap <= AGREE_MS, "the shared time is {gap} ms from Redis's");
}

#[test]
fn replicas_with_clocks_hours_apart_agree_on_the_time_and_the_cooldown() {
    let Some(url) = shared_url("replicas_with_clocks_hours_apart_agree_on_the_time_and_the_cooldown") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_secs(20));
    let key = unique_key("clocks");
    const HOUR: i64 = 3_600_000;
    let a = RedisLink::open(url.as_str(), config().local_clock(Shifted(3 * HOUR))).unwrap();
    let b = RedisLink::open(url.as_str(), config().local_clock(Shifted(-7 * HOUR))).unwrap();
    let (ra, rb) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    settle(&[&a, &b]);
    // Their own clocks are 10 hours apart; their shared times within a few milliseconds
    // (each is off by at most its round trips to Redis, which a loaded host stretches:
    // the check allows a second, still 36,000 times closer than their clocks).
    let gap = wrapping_gap(a.now(), b.now());
    eprintln!("shared times {gap} ms apart");
    assert!(gap <= AGREE_MS, "shared times {gap} ms apart");

    let _ = ra.call(|| Err::<(), _>(Down));
    settle(&[&a, &b]);
    // b sees a's trip with (almost) the whole cooldown left: the same instant for both.
    let (State::Open { remaining: left_a, .. }, State::Open { remaining: left_b, .. }) = (ra.state(), rb.state())
    else {
        panic!("{:?} {:?}", ra.state(), rb.state());
    };
    let cooldown = POLICY.cooldown().as_millis();
    for left in [left_a, left_b] {
        // A shared time read a few milliseconds before the trip's (the replicas' shared
        // times agree within the gap checked above, not to the millisecond) is a reading
        // before the anchor: the wait left is then the cooldown plus that difference.
        assert!(
            left.as_millis() <= cooldown + AGREE_MS && left.as_millis() + 5_000 >= cooldown,
            "{left}"
        );
    }
    assert!(
        left_a.as_millis().abs_diff(left_b.as_millis()) <= AGREE_MS,
        "{left_a} vs {left_b}"
    );
}

#[test]
fn a_replica_ahead_of_the_others_probes_early_but_alone() {
    let Some(url) = shared_url("a_replica_ahead_of_the_others_probes_early_but_alone") else {
        return;
    };
    static POLICY: Policy = Policy::new(1, Duration::from_millis(100)).with_probe_lease(Duration::from_secs(10));
    static BEHIND: ManualClock = ManualClock::new(Instant::ZERO);
    static AHEAD: ManualClock = ManualClock::new(Instant::from_millis(50));
    let set = |t: u32| {
        BEHIND.set(Instant::from_millis(t));
        AHEAD.set(Instant::from_millis(t + 50));
    };
    let key = unique_key("skew");
    // Each replica takes its own clock as the shared one: b's is 50 ms ahead of a's.
    let a = RedisLink::open(url.as_str(), config().shared_clock(&BEHIND)).unwrap();
    let b = RedisLink::open(url.as_str(), config().shared_clock(&AHEAD)).unwrap();
    let (ra, rb): (RedisBreaker, RedisBreaker) = (a.breaker(&key, &POLICY), b.breaker(&key, &POLICY));
    set(1_000);
    let _ = ra.call(|| Err::<(), _>(Down)); // opens at 1 000 on a's clock
    settle(&[&a, &b]);
    assert_eq!((ra.phase(), rb.phase()), (Phase::Open, Phase::Open));

    // 60 ms later by a's clock: a still cools down (40 ms left), b's clock says it is over.
    set(1_060);
    assert!(ra.try_acquire().is_err());
    let probe = rb.try_acquire().expect("b, ahead, sees the cooldown over");
    assert!(probe.is_probe() && !probe.is_local());
    settle(&[&a, &b]);
    // When a's cooldown is over too, the probe slot is taken: one probe, whatever the clocks.
    set(1_200);
    assert!(ra.try_acquire().is_err(), "a second probe");
    assert_eq!(
        ra.state(),
        State::HalfOpen {
            probing: true,
            streak: 0
        }
    );
    probe.success();
    settle(&[&a, &b]);
    assert_eq!((ra.phase(), rb.phase()), (Phase::Closed, Phase::Closed));
}
