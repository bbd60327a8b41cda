//! Model checks of the retry budget with loom: two callers asking for the last retry get
//! it once, in one bucket and across the move to the next; deposits racing each other or a
//! move are all counted; callers moving the window to different buckets at once lose
//! nothing.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom_retry_budget --release
//! ```
#![cfg(loom)]

use breaker_core::{Duration, Instant, RetryBudget};
use loom::sync::Arc;
use loom::thread;

/// Every interleaving with at most 3 preemptions: the races below need one or two.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

fn at(ms: u32) -> Instant {
    Instant::from_millis(ms)
}

/// 100 %, no floor, 10 s (buckets of 1 s): each deposit pays for exactly one retry.
fn budget() -> Arc<RetryBudget> {
    Arc::new(RetryBudget::new(100, 0, Duration::from_secs(10)))
}

/// Two callers, each asking once at its own reading: how many were allowed.
fn two_withdrawals(b: &Arc<RetryBudget>, first: u32, second: u32) -> u32 {
    let other = {
        let b = Arc::clone(b);
        thread::spawn(move || b.try_withdraw(at(second)))
    };
    let mine = b.try_withdraw(at(first));
    u32::from(mine) + u32::from(other.join().unwrap())
}

#[test]
fn two_callers_asking_for_the_last_retry_get_it_once() {
    model(|| {
        let b = budget();
        b.deposit(at(500));
        assert_eq!(two_withdrawals(&b, 600, 700), 1);
        let s = b.snapshot(at(700));
        assert_eq!((s.allowed, s.refused, s.balance), (1, 1, 0));
    });
}

#[test]
fn the_last_retry_goes_once_across_the_move_to_the_next_bucket() {
    // One caller still in bucket 0, the other moving the window on to bucket 1: the
    // deposit of bucket 0 is in both windows and pays for one retry, not two.
    model(|| {
        let b = budget();
        b.deposit(at(500));
        assert_eq!(two_withdrawals(&b, 900, 1_100), 1);
        let s = b.snapshot(at(1_100));
        assert_eq!((s.allowed, s.refused, s.balance), (1, 1, 0));
    });
}

#[test]
fn deposits_racing_each_other_and_a_move_are_all_counted() {
    model(|| {
        let b = budget();
        let depositors: Vec<_> = [200, 1_200]
            .into_iter()
            .map(|t| {
                let b = Arc::clone(&b);
                thread::spawn(move || b.deposit(at(t)))
            })
            .collect();
        b.deposit(at(300));
        for d in depositors {
            d.join().unwrap();
        }
        // Whichever came first, bucket 0 and bucket 1 (or the reading at 200 or 300,
        // after the move, in bucket 1) hold three deposits between them.
        assert_eq!(b.snapshot(at(1_200)).balance, 3);
        for _ in 0..3 {
            assert!(b.try_withdraw(at(1_200)));
        }
        assert!(!b.try_withdraw(at(1_200)));
    });
}

#[test]
fn callers_moving_the_window_to_different_buckets_lose_nothing() {
    // Bucket 0 holds two deposits; two callers move on from it at once, one to bucket 1,
    // the other to bucket 2, each depositing there: whoever seals, records or replaces the
    // head, the window at bucket 2 holds all four.
    model(|| {
        let b = budget();
        b.deposit(at(100));
        b.deposit(at(100));
        let other = {
            let b = Arc::clone(&b);
            thread::spawn(move || b.deposit(at(1_500)))
        };
        b.deposit(at(2_500));
        other.join().unwrap();
        assert_eq!(b.snapshot(at(2_500)).balance, 4);
        assert_eq!(b.snapshot(at(10_999)).balance, 2, "bucket 0 has left");
    });
}
