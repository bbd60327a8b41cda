//! Model checks of the keyed table with loom: two callers using one key for the first time
//! get one breaker, a call of a key racing that key's eviction never changes the state of
//! the key that takes its slot, and a lookup of a key while it is being placed never takes
//! the slot in that instant.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p breaker-core --test loom_keyed --release
//! ```
#![cfg(loom)]

use breaker_core::keyed::{KeyedBreakers, KeyedEntry, TableError};
use breaker_core::{CircuitBreaker, Duration, Instant, ManualClock, Outcome, Policy, SharedBreaker, State};
use loom::sync::Arc;
use loom::thread;

static POLICY: Policy = Policy::new(2, Duration::from_millis(10));
static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[test]
fn concurrent_first_use_creates_one_breaker() {
    loom::model(|| {
        let table = Arc::new(KeyedBreakers::<u32, 2>::new([
            SharedBreaker::new(&POLICY),
            SharedBreaker::new(&POLICY),
        ]));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let table = table.clone();
                thread::spawn(move || {
                    let entry = table.try_entry(7).unwrap();
                    entry.breaker().unwrap() as *const SharedBreaker as usize
                })
            })
            .collect();
        let got: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got[0], got[1], "both callers got the same breaker");
        assert_eq!(table.len(), 1);
    });
}

type OneSlot = KeyedBreakers<u32, 1>;

/// A table of one slot holding key 1; `call` makes a call of key 1 through its entry while
/// another thread places key 2 (evicting 1 if it may). The table, the eviction's answer,
/// and the keys held after both.
fn race_with_eviction(call: fn(&mut KeyedEntry<'_, u32, 1>)) -> (Arc<OneSlot>, Result<(), TableError>, Vec<u32>) {
    let table = Arc::new(OneSlot::new([SharedBreaker::new(&POLICY)]));
    table.try_entry(1).unwrap();
    let caller = {
        let table = table.clone();
        thread::spawn(move || call(&mut table.entry(1)))
    };
    let evictor = {
        let table = table.clone();
        thread::spawn(move || table.try_entry(2).map(|_| ()))
    };
    caller.join().unwrap();
    let placed = evictor.join().unwrap();
    let held = table.iter().map(|(k, _)| k).collect();
    (table, placed, held)
}

/// Key 2 holds the one slot, and key 1's strike is not key 2's. Its failure counter may
/// show it, reported in the instant of the eviction (documented): a stale outcome changes
/// no state, but is counted.
fn key_two_took_the_slot_untouched(table: &OneSlot, held: &[u32]) {
    assert_eq!(held, [2]);
    let two = table.get(2).unwrap();
    assert_eq!(
        two.state(Instant::ZERO),
        State::Closed { strikes: 0 },
        "key 1's strike is not key 2's"
    );
    assert!(two.counters().failures <= 1);
}

#[test]
fn a_call_racing_its_keys_eviction_never_counts_against_the_new_key() {
    loom::model(|| {
        let (table, placed, held) = race_with_eviction(|one| {
            if let Ok(attempt) = one.attempt(&CLOCK) {
                attempt.record(Outcome::STRIKE);
            };
        });
        assert_eq!(held.len(), 1, "one slot, one key");
        match placed {
            Ok(()) => key_two_took_the_slot_untouched(&table, &held),
            Err(e) => {
                // The strike landed first (key 1 is struck: not evictable), or the caller
                // was looking key 1 up again while the slot was being placed.
                assert!(matches!(e, TableError::Full | TableError::Busy));
                if held == [1] {
                    let one = table.get(1).unwrap();
                    assert!(one.counters().failures <= 1);
                }
            }
        }
    });
}

#[derive(Debug)]
struct Down;
impl breaker_core::Classify for Down {}

/// The same race through `call` (the entry's own path, the lone breaker's closed path with
/// the slot's word checked after the breaker's is read): the strike never changes the
/// state of the key that takes the slot.
#[test]
fn a_call_through_the_entry_racing_its_keys_eviction_never_counts_against_the_new_key() {
    loom::model(|| {
        let (table, placed, held) = race_with_eviction(|one| {
            let _ = one.call(&CLOCK, || Err::<(), _>(Down));
        });
        assert_eq!(held.len(), 1, "one slot, one key");
        if placed.is_ok() {
            key_two_took_the_slot_untouched(&table, &held);
        } else if held == [1] {
            assert!(table.get(1).unwrap().counters().failures <= 1);
        }
    });
}

/// Two callers of key 2 while it is being placed in key 1's slot: each gets the key's
/// breaker as placed, or is told the table is busy; none keeps an entry of the slot's
/// word in the instant of placing (its breaker then being reset for the key), which the
/// placed word leaves stale. (The table is leaked, a few hundred bytes an execution, so
/// that the entries outlive the threads and are looked at once both are done.)
#[test]
fn a_lookup_of_a_key_being_placed_never_takes_the_placing_word() {
    loom::model(|| {
        let table: &'static OneSlot = Box::leak(Box::new(OneSlot::new([SharedBreaker::new(&POLICY)])));
        table.try_entry(1).unwrap();
        let handles: Vec<_> = (0..2).map(|_| thread::spawn(move || table.try_entry(2))).collect();
        let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(got.iter().any(Result::is_ok), "one of them placed key 2");
        for answer in got {
            match answer {
                Ok(entry) => assert!(entry.breaker().is_some(), "an entry of key 2's placed slot"),
                Err(e) => assert_eq!(e, TableError::Busy),
            }
        }
        let after: Vec<u32> = table.iter().map(|(k, _)| k).collect();
        assert_eq!(after, [2]);
    });
}
