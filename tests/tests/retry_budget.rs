//! The retry budget, alone and under ladders, against a reference model of its documented
//! rules: a scripted outage of 1,000 ladders held to 20 % of the first attempts plus the
//! floor, the floor alone without traffic, recovery once the window has passed, a ladder
//! stopping with `Stop::RetryBudgetSpent` and the last strike (blocking and async), what
//! does not deposit or withdraw, the report, threads sharing a `static` budget, and every
//! sequence of deposits, withdrawals and clock moves (forward, back, far) against the model.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};

use breaker_core::{
    CallError, Classify, Clock, Duration, Instant, ManualClock, Policy, Reason, RetryBudget, RetryBudgetError,
    RetryPolicy, SharedBreaker, Stop,
};
use proptest::prelude::*;

const fn ms(n: u32) -> Duration {
    Duration::from_millis(n)
}

fn at(n: u32) -> Instant {
    Instant::from_millis(n)
}

/// The upstream's answer: a strike, numbered by attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Down(u32);
impl Classify for Down {}

fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

/// A breaker that trips only after 255 consecutive strikes.
fn patient_breaker() -> SharedBreaker {
    SharedBreaker::new(leak(Policy::new(breaker_core::MAX_TRIP, Duration::from_secs(30))))
}

// ---- the reference model -----------------------------------------------------------------

/// The budget's rules as documented, written plainly: buckets of `width` ms on the clock's
/// grid, the window the current bucket and the nine before it, amounts in hundredths.
#[derive(Debug)]
struct Model {
    percent: i64,
    width: u32,
    floor: i64,
    /// The current bucket (a new budget's is bucket 0).
    current: u32,
    /// Each bucket's deposits less withdrawals, in hundredths, since the window last
    /// started afresh.
    nets: BTreeMap<u32, i64>,
    allowed: u32,
    refused: u32,
}

impl Model {
    fn new(percent: u32, min_per_sec: u32, window: Duration) -> Model {
        let width = window.as_millis() / 10;
        Model {
            percent: i64::from(percent),
            width,
            // min_per_sec retries a second over 10 * width ms, in hundredths.
            floor: i64::from(min_per_sec) * i64::from(10 * width) * 100 / 1000,
            current: 0,
            nets: BTreeMap::new(),
            allowed: 0,
            refused: 0,
        }
    }

    /// The bucket `t` counts in, and whether the window starts afresh there.
    fn place(&self, t: u32) -> (u32, bool) {
        let start = u64::from(self.current) * u64::from(self.width);
        let (t64, window) = (u64::from(t), u64::from(10 * self.width));
        if t64 + window >= start && t64 < start + u64::from(self.width) {
            return (self.current, false); // the current bucket, or a little before it
        }
        let bucket = t / self.width;
        let ahead = i64::from(bucket) - i64::from(self.current);
        (bucket, !(1..10).contains(&ahead))
    }

    fn go(&mut self, t: u32) {
        let (bucket, afresh) = self.place(t);
        if afresh {
            self.nets.clear();
        }
        self.current = bucket;
    }

    fn sum(&self, view: u32, nets: &BTreeMap<u32, i64>) -> i64 {
        self.floor + nets.range(view.saturating_sub(9)..=view).map(|(_, n)| n).sum::<i64>()
    }

    fn deposit(&mut self, t: u32) {
        self.go(t);
        *self.nets.entry(self.current).or_default() += self.percent;
    }

    fn withdraw(&mut self, t: u32) -> bool {
        self.go(t);
        let ok = self.sum(self.current, &self.nets) >= 100;
        if ok {
            *self.nets.entry(self.current).or_default() -= 100;
            self.allowed += 1;
        } else {
            self.refused += 1;
        }
        ok
    }

    /// Whole retries available at `t`, rounded down, without moving anything.
    fn balance(&self, t: u32) -> i64 {
        let (bucket, afresh) = self.place(t);
        if afresh {
            self.floor.div_euclid(100)
        } else {
            self.sum(bucket, &self.nets).div_euclid(100)
        }
    }
}

// ---- ladders through a budget ------------------------------------------------------------

static RETRY3: RetryPolicy = RetryPolicy::new(3, ms(1));

#[test]
fn a_scripted_outage_holds_retries_to_twenty_percent_plus_the_floor() {
    // Finagle's default budget; 1,000 ladders of up to 3 retries, one every 10 ms for 10 s
    // (twenty clients round the clock, each with its own breaker), against an upstream
    // that is down: every attempt is a strike, and no breaker sees enough to trip.
    let budget = RetryBudget::new(20, 10, Duration::from_secs(10));
    let clock = ManualClock::new(Instant::ZERO);
    let breakers: Vec<SharedBreaker> = (0..20).map(|_| patient_breaker()).collect();
    let mut model = Model::new(20, 10, Duration::from_secs(10));

    let (mut attempts, mut exhausted, mut spent) = (0u32, 0u32, 0u32);
    let (mut want_exhausted, mut want_spent) = (0u32, 0u32);
    for i in 0..1000u32 {
        let t = 10 * i;
        clock.set(at(t));
        let made = AtomicU32::new(0);
        let r = RETRY3
            .ladder(&breakers[(i % 20) as usize], &clock)
            .budget(&budget)
            .sleep(|_| {})
            .call(|| Err::<(), _>(Down(made.fetch_add(1, Ordering::Relaxed) + 1)));
        attempts += r.attempts;
        // The ladder always ends with its last strike.
        assert_eq!(r.result, Err(CallError::Inner(Down(r.attempts))), "ladder {i}");
        match r.stop {
            Stop::Exhausted => exhausted += 1,
            Stop::RetryBudgetSpent => spent += 1,
            other => panic!("ladder {i}: {other:?}"),
        }
        // The model: one deposit, then withdrawals until three or a refusal.
        model.deposit(t);
        let mut retries = 0;
        while retries < 3 && model.withdraw(t) {
            retries += 1;
        }
        if retries == 3 {
            want_exhausted += 1;
        } else {
            want_spent += 1;
        }
        assert_eq!(r.attempts, 1 + retries, "ladder {i}");
    }
    // Every ladder ran inside one window: the retries are exactly the floor over the
    // window (10 a second for 10 s) plus 20 % of the 1,000 first attempts.
    let retries = attempts - 1000;
    assert_eq!(retries, 10 * 10 + 1000 * 20 / 100);
    assert_eq!(retries, model.allowed);
    assert_eq!((exhausted, spent), (want_exhausted, want_spent));
    // The first ladders drew on the floor, three retries each, until it ran low.
    assert_eq!(exhausted, 35);
    let s = budget.snapshot(clock.now());
    assert_eq!((s.allowed, s.refused), (model.allowed, model.refused));
    assert_eq!(s.refused, spent);
    assert_eq!(s.balance, model.balance(clock.now().as_millis()));

    // Recovery: at 10 s the first second's bucket leaves the window, taking the withdrawals
    // that drained the floor; every other bucket broke even.
    assert_eq!(budget.snapshot(at(10_000)).balance, model.balance(10_000));
    assert_eq!(model.balance(10_000), 100);
    // Once the whole window has passed, the floor alone.
    assert_eq!(budget.snapshot(at(20_000)).balance, 100);
    clock.set(at(20_000));
    let r = RETRY3
        .ladder(&breakers[0], &clock)
        .budget(&budget)
        .sleep(|_| {})
        .call(|| Err::<(), _>(Down(0)));
    assert_eq!((r.attempts, r.stop), (4, Stop::Exhausted));
    assert_eq!(budget.snapshot(clock.now()).balance, 100 - 3);
}

#[test]
fn the_floor_alone_without_traffic() {
    let budget = RetryBudget::new(20, 10, Duration::from_secs(10));
    // 10 a second over 10 s: 100 retries in any window, and no more.
    let allowed = (0..150).filter(|_| budget.try_withdraw(at(0))).count();
    assert_eq!(allowed, 100);
    assert!(!budget.try_withdraw(at(9_999)));
    // The bucket of t = 0 leaves at 10 s, and with it the 100 withdrawals.
    assert_eq!(budget.snapshot(at(10_000)).balance, 100);
    // Spread out: 50 at 10 s, 50 at 15 s; at 20 s the first 50 have left.
    for t in [10_000, 15_000] {
        for _ in 0..50 {
            assert!(budget.try_withdraw(at(t)));
        }
    }
    assert!(!budget.try_withdraw(at(19_999)));
    assert_eq!(budget.snapshot(at(20_000)).balance, 50);
    assert_eq!(budget.snapshot(at(25_000)).balance, 100);
    let s = budget.snapshot(at(25_000));
    assert_eq!((s.allowed, s.refused), (200, 52));
}

#[test]
fn a_ladder_stops_with_the_last_strike_when_the_budget_refuses() {
    // No share of the first attempts, one retry a second over 1 s: one retry in all.
    let budget = RetryBudget::new(0, 1, Duration::from_secs(1));
    let clock = ManualClock::new(at(5_000));
    let b = patient_breaker();
    let (made, notified, slept) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    let r = RETRY3
        .ladder(&b, &clock)
        .budget(&budget)
        .notify(|_: &Down, _| {
            notified.fetch_add(1, Ordering::Relaxed);
        })
        .sleep(|_| {
            slept.fetch_add(1, Ordering::Relaxed);
        })
        .call(|| Err::<(), _>(Down(made.fetch_add(1, Ordering::Relaxed) + 1)));
    assert_eq!(r.attempts, 2);
    assert_eq!(r.stop, Stop::RetryBudgetSpent);
    assert_eq!(r.result, Err(CallError::Inner(Down(2))), "the last strike");
    assert_eq!(r.retry_in(), None, "the breaker did not end it");
    // Only the retry that was made was announced and slept before.
    assert_eq!((notified.into_inner(), slept.into_inner()), (1, 1));
    let s = budget.snapshot(clock.now());
    assert_eq!((s.allowed, s.refused, s.balance), (1, 1, 0));

    // A second later the retry is back.
    clock.advance(Duration::from_secs(1));
    let r = RETRY3
        .ladder(&b, &clock)
        .budget(&budget)
        .sleep(|_| {})
        .call(|| Err::<(), _>(Down(9)));
    assert_eq!((r.attempts, r.stop), (2, Stop::RetryBudgetSpent));
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(out) = f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            return out;
        }
    }
}

#[test]
fn the_async_ladder_draws_on_the_budget_too() {
    let budget = RetryBudget::new(100, 0, Duration::from_secs(10));
    let clock = ManualClock::new(Instant::ZERO);
    let b = patient_breaker();
    let made = AtomicU32::new(0);
    let run = || {
        block_on(
            RETRY3
                .ladder(&b, &clock)
                .budget(&budget)
                .sleep(|_| std::future::ready(()))
                .call_async(async || Err::<(), _>(Down(made.fetch_add(1, Ordering::Relaxed) + 1))),
        )
    };
    // 100 %: each ladder's first attempt pays for exactly one retry.
    let r = run();
    assert_eq!((r.attempts, r.stop), (2, Stop::RetryBudgetSpent));
    assert_eq!(r.result, Err(CallError::Inner(Down(2))));
    let r = run();
    assert_eq!((r.attempts, r.stop), (2, Stop::RetryBudgetSpent));
    assert_eq!(r.result, Err(CallError::Inner(Down(4))));
    let s = budget.snapshot(clock.now());
    assert_eq!((s.allowed, s.refused, s.balance), (2, 2, 0));
}

#[test]
fn refusals_successes_and_breakers_left_open_spend_nothing() {
    let budget = RetryBudget::new(100, 0, Duration::from_secs(10));
    let clock = ManualClock::new(Instant::ZERO);
    // A refused first attempt sent nothing: no deposit.
    let open = patient_breaker();
    open.trip(Reason::Predicted, clock.now());
    let r = RETRY3.ladder(&open, &clock).budget(&budget).call(|| Ok::<u32, Down>(1));
    assert_eq!((r.attempts, r.stop), (0, Stop::Refused));
    assert_eq!(budget.snapshot(clock.now()).balance, 0);
    // A first-attempt success deposits and withdraws nothing.
    let b = patient_breaker();
    let r = RETRY3.ladder(&b, &clock).budget(&budget).call(|| Ok::<u32, Down>(1));
    assert_eq!((r.result, r.attempts, r.stop), (Ok(1), 1, Stop::Succeeded));
    assert_eq!(budget.snapshot(clock.now()).balance, 1);
    // A strike that opens the breaker ends the ladder before the budget is asked.
    let fragile = SharedBreaker::new(leak(Policy::new(1, Duration::from_secs(30))));
    let r = RETRY3
        .ladder(&fragile, &clock)
        .budget(&budget)
        .sleep(|_| {})
        .call(|| Err::<u32, _>(Down(1)));
    assert!(matches!(r.stop, Stop::Opened { .. }), "{:?}", r.stop);
    let s = budget.snapshot(clock.now());
    assert_eq!((s.allowed, s.refused, s.balance), (0, 0, 2));
}

#[test]
fn an_async_first_attempt_that_succeeds_deposits_as_a_blocking_one_does() {
    let budget = RetryBudget::new(100, 0, Duration::from_secs(10));
    let clock = ManualClock::new(Instant::ZERO);
    let b = patient_breaker();
    let r = block_on(
        RETRY3
            .ladder(&b, &clock)
            .budget(&budget)
            .sleep(|_| std::future::ready(()))
            .call_async(async || Ok::<u32, Down>(1)),
    );
    assert_eq!((r.result, r.attempts, r.stop), (Ok(1), 1, Stop::Succeeded));
    assert_eq!(budget.snapshot(clock.now()).balance, 1);
    // A success after a retry deposits nothing more: only first attempts pay.
    let tries = AtomicU32::new(0);
    let r = block_on(
        RETRY3
            .ladder(&b, &clock)
            .budget(&budget)
            .sleep(|_| std::future::ready(()))
            .call_async(async || match tries.fetch_add(1, Ordering::Relaxed) {
                0 => Err(Down(1)),
                _ => Ok(2),
            }),
    );
    assert_eq!((r.result, r.attempts), (Ok(2), 2));
    let s = budget.snapshot(clock.now());
    assert_eq!((s.allowed, s.balance), (1, 1), "one deposit, one withdrawal");
}

#[test]
fn nonsense_budgets_are_errors() {
    let ten = Duration::from_secs(10);
    assert_eq!(
        RetryBudget::try_new(1001, 10, ten).err(),
        Some(RetryBudgetError::PercentTooHigh)
    );
    assert_eq!(
        RetryBudget::try_new(20, 10, Duration::ZERO).err(),
        Some(RetryBudgetError::WindowTooShort)
    );
    assert_eq!(
        RetryBudgetError::PercentTooHigh.to_string(),
        "retry budget percent must be at most 1000"
    );
    let b = RetryBudget::try_new(RetryBudget::MAX_PERCENT, 0, RetryBudget::MIN_WINDOW).unwrap();
    assert_eq!((b.percent(), b.window()), (1000, Duration::from_secs(1)));
}

#[test]
fn the_snapshot_is_a_report() {
    let b = RetryBudget::new(20, 10, Duration::from_secs(10));
    assert!(b.try_withdraw(at(0)));
    let s = b.snapshot(at(0));
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#"{"balance":99,"allowed":1,"refused":0}"#
    );
    assert_eq!(
        format!("{b:?}"),
        "RetryBudget { percent: 20, min_per_sec: 10, window: Duration { millis: 10000 }, balance: 99, allowed: 1, refused: 0 }"
    );
}

// ---- threads sharing a static budget -----------------------------------------------------

static SHARED: RetryBudget = RetryBudget::new(20, 10, Duration::from_secs(10));

#[test]
fn threads_sharing_a_static_budget_never_overdraw() {
    const THREADS: u32 = 8;
    const ROUNDS: u32 = 5_000;
    // One reading for all: every deposit and withdrawal counts in one bucket, so the
    // bound is exact: 100 (the floor) + 20 % of the deposits.
    let now = at(3_000);
    let allowed: u32 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(move || {
                    let mut allowed = 0u32;
                    for _ in 0..ROUNDS {
                        SHARED.deposit(now);
                        // Twice the demand the deposits pay for: the budget stays drained.
                        allowed += u32::from(SHARED.try_withdraw(now));
                        allowed += u32::from(SHARED.try_withdraw(now));
                    }
                    allowed
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let deposits = THREADS * ROUNDS;
    let bound = 100 + deposits * 20 / 100;
    assert!(allowed <= bound, "{allowed} retries allowed for {deposits} deposits");
    let s = SHARED.snapshot(now);
    assert_eq!(s.allowed, allowed);
    assert_eq!(s.allowed + s.refused, 2 * deposits);
    // No deposit was lost and none was spent twice: what is left makes up the bound exactly.
    let left = (0..).take_while(|_| SHARED.try_withdraw(now)).count() as u32;
    assert_eq!(allowed + left, bound);
    assert_eq!(SHARED.snapshot(now).balance, 0);
}

// ---- against the model ---------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Op {
    Deposit,
    Withdraw,
    /// The clock moves on this many ms.
    Forward(u32),
    /// The clock steps back this many ms.
    Back(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Deposit),
        4 => Just(Op::Withdraw),
        3 => (0u32..1_500).prop_map(Op::Forward),
        1 => (0u32..40_000).prop_map(Op::Forward),
        1 => (0u32..25_000).prop_map(Op::Back),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn the_budget_follows_the_model(
        percent in prop_oneof![Just(0u32), Just(20), Just(100), 0u32..=1000],
        min_per_sec in prop_oneof![Just(0u32), Just(10), 0u32..50],
        window_ms in prop_oneof![Just(10_000u32), 1_000u32..30_000],
        start in 0u32..100_000,
        ops in prop::collection::vec(op(), 1..200),
    ) {
        let budget = RetryBudget::new(percent, min_per_sec, ms(window_ms));
        let mut model = Model::new(percent, min_per_sec, ms(window_ms));
        let mut t = start;
        for op in ops {
            match op {
                Op::Deposit => {
                    budget.deposit(at(t));
                    model.deposit(t);
                }
                Op::Withdraw => prop_assert_eq!(budget.try_withdraw(at(t)), model.withdraw(t), "at {}", t),
                Op::Forward(d) => t += d,
                Op::Back(d) => t = t.saturating_sub(d),
            }
            let s = budget.snapshot(at(t));
            prop_assert_eq!(s.balance, model.balance(t), "at {}: {:?}", t, model);
            prop_assert_eq!((s.allowed, s.refused), (model.allowed, model.refused));
        }
    }
}
