use std::vec::Vec;

use super::*;
use crate::{Instant, ManualClock, Phase};

static POLICY: Policy = Policy::new(2, Duration::from_secs(10));

type Table = KeyedBreakers<u32, 4>;

fn table() -> Table {
    KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 4])
}

/// The keys in slot order.
fn keys(t: &Table) -> Vec<u32> {
    t.iter().map(|(k, _)| k).collect()
}

fn strike(t: &Table, key: u32, clock: &ManualClock) {
    let mut e = t.entry(key);
    assert!(e.is_guarded());
    e.attempt(clock).unwrap().record(Outcome::STRIKE);
}

#[test]
fn first_use_creates_one_breaker_per_key_and_a_key_keeps_it() {
    let t = table();
    let clock = ManualClock::new(Instant::ZERO);
    assert!(t.is_empty());
    let a = t.entry(7);
    assert!(core::ptr::eq(a.breaker().unwrap(), t.entry(7).breaker().unwrap()));
    assert!(!core::ptr::eq(a.breaker().unwrap(), t.entry(8).breaker().unwrap()));
    assert_eq!((t.len(), t.capacity()), (2, 4));
    strike(&t, 7, &clock);
    strike(&t, 7, &clock);
    assert_eq!(t.get(7).unwrap().phase(clock.now()), Phase::Open);
    assert_eq!(t.get(8).unwrap().phase(clock.now()), Phase::Closed);
    assert!(t.get(9).is_none());
    assert_eq!(t.entry(7).state(&clock).phase(), Phase::Open);
    assert_eq!(t.entry(7).counters().failures, 2);
}

#[test]
fn a_table_whose_keys_are_added_on_use_is_not_listed() {
    let t = table();
    assert!(!t.is_listed());
    t.entry(7);
    assert!(!t.is_listed());
}

#[test]
fn a_full_table_evicts_closed_idle_entries_in_second_chance_order() {
    let t = table();
    // The home slots of keys 1 to 7 in a table of 4 (its neighbourhood is the whole
    // table): each key takes its home slot, or the first free one after it.
    assert_eq!([1, 2, 3, 4, 5, 6, 7].map(Table::home), [2, 0, 3, 1, 0, 2, 1]);
    for k in 1..=4 {
        t.entry(k);
    }
    assert_eq!(keys(&t), [2, 4, 1, 3]);
    // Every entry was marked used by its lookup: from key 5's home slot (0), the first
    // turn of the sweep clears the marks, the second evicts the entry there.
    let fifth = t.try_entry(5).unwrap();
    assert_eq!(t.evictions(), 1);
    assert_eq!(keys(&t), [5, 4, 1, 3]);
    assert!(t.get(2).is_none());
    assert_eq!(fifth.breaker().unwrap().counters(), Counters::ZERO);
    // Key 1 (slot 2) is looked up, marked again: key 6's sweep, from slot 2, spares it
    // (clearing its mark) and takes slot 3, unused since the first sweep passed; key 7's,
    // from slot 1, takes key 4's slot.
    t.entry(1);
    t.try_entry(6).unwrap();
    assert_eq!(keys(&t), [5, 4, 1, 6]);
    t.try_entry(7).unwrap();
    assert_eq!(keys(&t), [5, 7, 1, 6]);
    assert_eq!(t.evictions(), 3);
}

/// `count` keys whose home slot in a table of `N` slots is `home`, from 1 up.
fn keys_homed_at<const N: usize>(home: usize, count: usize) -> Vec<u32> {
    (1..)
        .filter(|&k| KeyedBreakers::<u32, N>::home(k) == home)
        .take(count)
        .collect()
}

/// The slot holding `key`, if any.
fn slot_of<const N: usize>(t: &KeyedBreakers<u32, N>, key: u32) -> Option<usize> {
    t.slots.iter().position(|w| {
        let w = w.load(Ordering::Relaxed);
        key_of(w) == key && w & STATE_MASK == READY
    })
}

#[test]
fn a_key_sits_within_its_neighbourhood_and_evicts_there_while_other_slots_are_free() {
    static T: KeyedBreakers<u32, 128> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 128]);
    let clock = ManualClock::new(Instant::ZERO);
    // 33 keys with one home slot: the first 32 fill its neighbourhood (slots 5 to 36).
    let crowd = keys_homed_at::<128>(5, NEIGHBOURHOOD + 1);
    for &k in &crowd[..NEIGHBOURHOOD] {
        assert!(T.try_entry(k).is_ok());
    }
    assert_eq!(T.len(), NEIGHBOURHOOD);
    let slot = |k: u32| slot_of(&T, k);
    assert_eq!(slot(crowd[31]), Some(5 + 31));
    // All of them open: the 33rd may not sit past the neighbourhood, and may evict none
    // of them. It is answered `Full` (an unguarded entry), though 96 slots are free.
    for &k in &crowd[..NEIGHBOURHOOD] {
        T.entry(k).attempt(&clock).unwrap().record(Outcome::TRIP);
    }
    assert_eq!(T.try_entry(crowd[32]).unwrap_err(), TableError::Full);
    assert!(!T.entry(crowd[32]).is_guarded());
    // A key homed elsewhere still takes a free slot of its own.
    let other = keys_homed_at::<128>(100, 1)[0];
    assert_eq!(
        T.try_entry(other).unwrap().breaker().map(|_| slot(other)),
        Some(Some(100))
    );
    // One of the crowd closes again (its cooldown over, its probe a success): the 33rd
    // evicts it, and only it.
    clock.advance(Duration::from_secs(10));
    T.entry(crowd[7]).attempt(&clock).unwrap().record(Outcome::Success);
    let evictions = T.evictions();
    assert!(T.try_entry(crowd[32]).is_ok());
    assert_eq!(T.evictions(), evictions + 1);
    assert_eq!(slot(crowd[32]), Some(5 + 7));
    assert!(T.get(crowd[7]).is_none());
    assert_eq!(T.len(), NEIGHBOURHOOD + 1);
}

#[test]
fn a_table_churned_by_many_more_keys_than_it_holds_keeps_every_key_within_its_neighbourhood() {
    static T: KeyedBreakers<u32, 256> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 256]);
    // 100 keys in use at a time, drifting: every round, one of them is replaced by a key
    // never seen; 5,000 rounds fill the table many times over, and evictions make room.
    let mut rng = crate::compose::rng::SplitMix64::new(11);
    let mut in_use: Vec<u32> = (0..100).map(|_| rng.next_u64() as u32).collect();
    for round in 0..5_000u64 {
        let k = in_use[(rng.next_u64() % 100) as usize];
        assert!(T.try_entry(k).is_ok(), "round {round}: key {k} found no slot");
        if round % 2 == 0 {
            in_use[(rng.next_u64() % 100) as usize] = rng.next_u64() as u32;
        }
    }
    assert!(T.evictions() > 1_000, "{} evictions", T.evictions());
    // Every key sits within 32 slots of its home slot: a lookup scans at most that many.
    for (k, _) in T.iter() {
        let (home, at) = (KeyedBreakers::<u32, 256>::home(k), slot_of(&T, k).unwrap());
        assert!(
            (at + 256 - home) % 256 < NEIGHBOURHOOD,
            "key {k} at slot {at}, home {home}"
        );
    }
    // Every key in use is found where it sits.
    for &k in &in_use {
        assert!(T.try_entry(k).unwrap().breaker().is_some());
    }
}

#[test]
fn open_half_open_and_struck_entries_are_never_evicted_and_a_full_table_answers_unguarded() {
    let t = table();
    let clock = ManualClock::new(Instant::ZERO);
    for k in 1..=4 {
        strike(&t, k, &clock);
    }
    // 1 and 2 open; 3 struck once; 4 half-open with its probe out.
    strike(&t, 1, &clock);
    strike(&t, 2, &clock);
    strike(&t, 4, &clock);
    clock.advance(Duration::from_secs(10));
    let mut four = t.entry(4);
    let probe = four.enter(&clock).unwrap();
    assert!(probe.is_probe());
    assert_eq!(t.get(4).unwrap().phase(clock.now()), Phase::HalfOpen);
    // Two full turns of the sweep find nothing to evict.
    for _ in 0..3 {
        assert_eq!(t.try_entry(99).unwrap_err(), TableError::Full);
    }
    assert_eq!(t.evictions(), 0);
    let mut unguarded = t.entry(99);
    assert!(!unguarded.is_guarded());
    assert_eq!(unguarded.key(), 99);
    // An unguarded entry lets every call through, counting nothing.
    for _ in 0..5 {
        unguarded.attempt(&clock).unwrap().record(Outcome::STRIKE);
    }
    assert_eq!(unguarded.state(&clock), State::Closed { strikes: 0 });
    assert_eq!(unguarded.counters(), Counters::ZERO);
    assert!(t.get(99).is_none());
    // The held keys kept their breakers, untouched.
    assert_eq!(t.get(1).unwrap().phase(clock.now()), Phase::Open); // cooled down: its next call probes
    assert_eq!(t.get(3).unwrap().state(clock.now()), State::Closed { strikes: 1 });
    // Once the probe succeeds, 4 is closed and idle again: evictable.
    four.report(probe, Outcome::Success, &clock);
    assert_eq!(t.get(4).unwrap().phase(clock.now()), Phase::Closed);
    assert!(t.try_entry(99).is_ok());
    assert!(t.get(4).is_none());
    assert_eq!(
        std::string::ToString::to_string(&TableError::Full),
        TableError::Full.message()
    );
}

#[test]
fn an_entry_kept_across_its_eviction_looks_its_key_up_again_and_a_stale_outcome_is_dropped() {
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut a = t.entry(1);
    let ticket = a.enter(&clock).unwrap();
    // Key 2 takes the one slot (1 is closed; its mark is cleared on the first turn).
    let mut b = t.try_entry(2).unwrap();
    assert!(a.breaker().is_none());
    // A's late failure is dropped: B's breaker does not count it.
    a.report(ticket, Outcome::TRIP, &clock);
    assert_eq!(b.counters().failures, 0);
    assert_eq!(b.state(&clock), State::Closed { strikes: 0 });
    // B trips; A's next call looks key 1 up again: the table is full of an open entry,
    // so A is unguarded, and B is not evicted.
    b.attempt(&clock).unwrap().record(Outcome::TRIP);
    let t1 = a.enter(&clock).unwrap();
    assert!(!a.is_guarded());
    a.report(t1, Outcome::TRIP, &clock);
    assert_eq!(t.get(2).unwrap().phase(clock.now()), Phase::Open);
    assert_eq!(t.get(2).unwrap().counters().failures, 1);
}

#[test]
fn a_failing_call_through_an_entry_kept_across_its_eviction_counts_on_its_own_key() {
    // The call of an entry whose slot now holds another key, closed and idle: not on the
    // slot's breaker (the other key's), but on the key's own, looked up again (evicting
    // the other key, closed and idle).
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut stale = t.entry(1);
    t.try_entry(2).unwrap();
    let failed = stale.call_classified(&clock, || Err::<(), u8>(7), |_| Verdict::Strike);
    assert!(matches!(failed, Err(CallError::Inner(7))));
    assert!(t.get(2).is_none());
    assert_eq!(t.get(1).unwrap().counters().failures, 1);
    assert_eq!(t.get(1).unwrap().state(clock.now()), State::Closed { strikes: 1 });
}

#[test]
fn a_call_through_an_entry_kept_across_its_eviction_is_not_refused_by_the_keys_after_it() {
    // The slot now holds another key, open: the entry's call is not refused by that
    // key's breaker. Its own key, looked up again, finds the table full of an open entry
    // (never evicted): the call runs unguarded, and the open key counts no refusal.
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut stale = t.entry(1);
    let mut other = t.try_entry(2).unwrap();
    other.attempt(&clock).unwrap().record(Outcome::TRIP);
    assert_eq!(
        stale.call_classified(&clock, || Ok::<_, u8>(5), |_| Verdict::Strike),
        Ok(5)
    );
    assert!(!stale.is_guarded());
    assert!(t.get(1).is_none());
    assert_eq!(t.get(2).unwrap().phase(clock.now()), Phase::Open);
    assert_eq!(t.get(2).unwrap().counters().skips, 0);
}

#[test]
fn a_ticket_from_before_its_key_left_and_came_back_to_the_same_slot_is_dropped() {
    // Key 1 evicted for key 2, then key 2 for key 1: the same slot holds key 1 again, a
    // fresh breaker. A ticket of key 1's first time there belongs to a breaker that is
    // gone: its outcome is dropped (the slot's version tells them apart, not the key).
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut first = t.entry(1);
    let ticket = first.enter(&clock).unwrap();
    t.try_entry(2).unwrap();
    let mut again = t.try_entry(1).unwrap();
    assert_eq!(
        (t.evictions(), t.iter().map(|(k, _)| k).collect::<Vec<_>>()),
        (2, [1].into())
    );
    first.report(ticket, Outcome::TRIP, &clock);
    assert_eq!(again.state(&clock), State::Closed { strikes: 0 });
    assert_eq!(again.counters().failures, 0);
    // The stale entry looks its key up again on its next call, and counts there.
    assert_eq!(again.enter(&clock).map(|t| t.is_probe()), Ok(false));
    first.attempt(&clock).unwrap().record(Outcome::TRIP);
    assert_eq!(t.get(1).unwrap().phase(clock.now()), Phase::Open);
}

#[test]
fn a_probe_taken_from_a_slot_that_changed_hands_is_given_back() {
    // Key 1 evicted for key 2, which trips and cools down: an entry of key 1 kept from
    // before enters the slot, sees it changed hands, and must not keep key 2's probe.
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut stale = t.entry(1);
    t.try_entry(2).unwrap().attempt(&clock).unwrap().record(Outcome::TRIP);
    clock.advance(Duration::from_secs(10));
    let ticket = stale.enter(&clock).unwrap();
    assert!(!stale.is_guarded());
    assert!(!ticket.is_probe());
    // The probe is free for key 2's own callers.
    let mut two = t.entry(2);
    assert!(two.enter(&clock).unwrap().is_probe());
}

#[test]
fn concurrent_first_use_of_one_key_creates_one_breaker() {
    static TABLE: KeyedBreakers<u32, 64> = KeyedBreakers::new([const { SharedBreaker::new(&POLICY) }; 64]);
    let slots: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let e = TABLE.try_entry(0xDEAD).unwrap();
                    e.breaker().unwrap() as *const SharedBreaker as usize
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(slots.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(TABLE.len(), 1);
}

#[test]
fn keys_of_every_kind_round_trip() {
    let t = KeyedBreakers::<core::net::Ipv4Addr, 2>::new([const { SharedBreaker::new(&POLICY) }; 2]);
    let host = core::net::Ipv4Addr::new(10, 0, 0, 7);
    t.entry(host);
    assert_eq!(t.iter().map(|(k, _)| k).collect::<Vec<_>>(), [host]);
    assert_eq!(<u8 as TableKey>::from_bits(0x48u8.to_bits()), 0x48);
    assert_eq!(<u16 as TableKey>::from_bits(0x3ffu16.to_bits()), 0x3ff);
    assert!(std::format!("{t:?}").starts_with("{10.0.0.7: SharedBreaker"));
}

#[test]
fn an_entry_is_a_circuit_breaker_of_its_key() {
    use std::format;
    let t = table();
    let clock = ManualClock::new(Instant::ZERO);
    let mut e = t.entry(7);
    assert!(!t.is_empty());
    assert_eq!(format!("{e:?}"), "KeyedEntry { key: 7, guarded: true }");
    assert_eq!((e.policy(), e.counts_calls()), (POLICY, false));
    CircuitBreaker::trip(&mut e, Reason::Predicted, Duration::from_secs(5), &clock);
    assert_eq!(t.get(7).unwrap().phase(clock.now()), Phase::Open);
    // The probe of the half-open key (after the policy's cooldown, longer than the
    // hold), abandoned, counts as failed: open again.
    clock.advance(Duration::from_secs(10));
    let probe = e.enter(&clock).unwrap();
    assert!(probe.is_probe());
    assert!(e.enter(&clock).is_err(), "one probe at a time");
    assert_eq!(e.state(&clock).phase(), Phase::HalfOpen);
    e.abandon(probe, &clock);
    assert_eq!(e.state(&clock).phase(), Phase::Open);
}

#[test]
fn an_entry_kept_across_its_eviction_trips_its_key_and_an_unguarded_one_trips_nothing() {
    use std::format;
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut stale = t.entry(1);
    t.try_entry(2).unwrap();
    // Key 1 is looked up again (evicting 2, closed and idle) and its own breaker trips.
    CircuitBreaker::trip(&mut stale, Reason::Predicted, Duration::from_secs(5), &clock);
    assert!(t.get(2).is_none());
    assert_eq!(t.get(1).unwrap().phase(clock.now()), Phase::Open);
    // Key 3 finds the table full of an open entry: unguarded. Once key 1 is closed and
    // idle again, tripping the unguarded entry still trips nothing (it holds no breaker;
    // its next lookup, not a trip, may place it).
    let mut unguarded = t.entry(3);
    assert!(!unguarded.is_guarded());
    assert_eq!(format!("{unguarded:?}"), "KeyedEntry { key: 3, guarded: false }");
    t.get(1).unwrap().reset(clock.now());
    CircuitBreaker::trip(&mut unguarded, Reason::Predicted, Duration::from_secs(5), &clock);
    assert!(!unguarded.is_guarded());
    assert!(t.get(3).is_none());
    assert_eq!(t.get(1).unwrap().phase(clock.now()), Phase::Closed);
    // An unguarded entry answers with the table's first breaker's policy, counting nothing.
    assert_eq!((unguarded.policy(), unguarded.counts_calls()), (POLICY, false));
    assert_eq!(unguarded.counters(), Counters::ZERO);
}

#[test]
fn an_entry_of_a_counting_policy_counts_calls_guarded_or_not() {
    static COUNTING: Policy = Policy::new(2, Duration::from_secs(10)).counting_calls();
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&COUNTING)]);
    let clock = ManualClock::new(Instant::ZERO);
    let mut a = t.entry(1);
    assert!(a.counts_calls());
    a.attempt(&clock).unwrap().record(Outcome::TRIP);
    let b = t.entry(2);
    assert!(!b.is_guarded());
    assert!(b.counts_calls(), "the first slot's policy counts calls");
}

// The growable map (`KeyedBreakerMap`) needs an allocator: feature `std`.
#[cfg(feature = "std")]
mod map {
    use core::num::NonZeroUsize;

    use super::*;

    fn map(capacity: usize) -> KeyedBreakerMap {
        KeyedBreakerMap::new(
            NonZeroUsize::new(capacity).unwrap(),
            Policy::new(2, Duration::from_secs(10)),
        )
        .unwrap()
    }

    fn names(m: &KeyedBreakerMap) -> Vec<std::string::String> {
        m.snapshot().into_iter().map(|(k, _)| k.into()).collect()
    }

    #[test]
    fn a_full_map_evicts_the_least_recently_used_closed_entry_no_handle_holds() {
        let m = map(3);
        let clock = ManualClock::new(Instant::ZERO);
        for host in ["a", "b", "c"] {
            m.entry(host);
        }
        m.entry("a"); // b is now the least recently used
        m.entry("d");
        assert_eq!(names(&m), ["a", "c", "d"]);
        // c is struck, a's handle is held (a call in flight): d, the only other, goes.
        m.entry("c").attempt(&clock).unwrap().record(Outcome::STRIKE);
        let held = m.entry("a");
        m.entry("e");
        assert_eq!(names(&m), ["a", "c", "e"]);
        // e opens; with a held and c struck, nothing can go: full.
        for _ in 0..2 {
            m.entry("e").attempt(&clock).unwrap().record(Outcome::STRIKE);
        }
        assert_eq!(m.try_entry("f").unwrap_err(), TableError::Full);
        let mut f = m.entry("f");
        assert!(!f.is_guarded());
        f.attempt(&clock).unwrap().record(Outcome::STRIKE);
        assert_eq!(f.counters(), Counters::ZERO);
        assert_eq!(f.policy().trip(), 2);
        // The handle dropped, a is evictable.
        drop(held);
        assert!(m.try_entry("f").is_ok());
        assert_eq!(names(&m), ["c", "e", "f"]);
        assert_eq!(m.evictions(), 3);
        assert_eq!((m.len(), m.capacity()), (3, 3));
    }

    #[test]
    fn a_map_entry_is_a_circuit_breaker_of_its_key() {
        use std::format;
        let m = map(1);
        let clock = ManualClock::new(Instant::ZERO);
        let mut a = m.entry("a");
        assert!(a.is_guarded());
        assert_eq!(format!("{a:?}"), "MapEntry { guarded: true }");
        assert_eq!(format!("{m:?}"), "KeyedBreakerMap { len: 1, capacity: 1 }");
        a.attempt(&clock).unwrap().record(Outcome::STRIKE);
        assert_eq!(a.counters().failures, 1);
        CircuitBreaker::trip(&mut a, Reason::Predicted, Duration::from_secs(5), &clock);
        assert_eq!(m.get("a").unwrap().phase(clock.now()), Phase::Open);
        // Full of an open entry: "b" is unguarded, and tripping it trips nothing.
        let mut b = m.entry("b");
        assert_eq!(format!("{b:?}"), "MapEntry { guarded: false }");
        CircuitBreaker::trip(&mut b, Reason::Predicted, Duration::from_secs(5), &clock);
        assert!(m.get("b").is_none());
        assert_eq!(b.state(&clock), State::Closed { strikes: 0 });
    }

    #[test]
    fn a_map_is_empty_until_its_first_key() {
        let m = map(2);
        assert!(m.is_empty());
        assert_eq!(m.len(), 0);
        m.entry("a");
        assert!(!m.is_empty());
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn a_map_entrys_ticket_is_a_probe_only_when_its_breaker_lets_the_probe_through() {
        let m = map(1);
        let clock = ManualClock::new(Instant::ZERO);
        let mut a = m.entry("a");
        let closed = CircuitBreaker::enter(&mut a, &clock).unwrap();
        assert!(closed.is_some());
        assert!(!CallTicket::is_probe(&closed));
        CircuitBreaker::report(&mut a, closed, Outcome::STRIKE, &clock);
        let second = CircuitBreaker::enter(&mut a, &clock).unwrap();
        CircuitBreaker::report(&mut a, second, Outcome::STRIKE, &clock);
        assert_eq!(a.state(&clock).phase(), Phase::Open);
        clock.advance(Duration::from_secs(10));
        let probe = CircuitBreaker::enter(&mut a, &clock).unwrap();
        assert!(CallTicket::is_probe(&probe));
        // The map is full of an entry that cannot go: "b" is unguarded, its ticket none.
        let mut b = m.entry("b");
        assert!(!b.is_guarded());
        let none = CircuitBreaker::enter(&mut b, &clock).unwrap();
        assert!(none.is_none());
        assert!(!CallTicket::is_probe(&none));
        CircuitBreaker::report(&mut a, probe, Outcome::Success, &clock);
    }

    #[test]
    fn a_windowed_policy_needs_a_window() {
        let rate = Policy::failure_rate(50, crate::WindowSize::Calls(10), Duration::from_secs(5));
        let one = NonZeroUsize::new(1).unwrap();
        assert_eq!(
            KeyedBreakerMap::new(one, rate).err(),
            Some(crate::PolicyError::NeedsWindow)
        );
        let m = KeyedBreakerMap::with_observer(one, rate, || crate::Windowed::calls(())).unwrap();
        let clock = ManualClock::new(Instant::ZERO);
        assert!(m.entry("x").attempt(&clock).is_ok());
    }
}

#[test]
fn a_counting_policy_s_idle_entries_are_evicted_and_recycled_still_counting() {
    static COUNTING: Policy = Policy::new(2, Duration::from_secs(10)).counting_calls();
    let t = KeyedBreakers::<u32, 2>::new([const { SharedBreaker::new(&COUNTING) }; 2]);
    let clock = ManualClock::new(Instant::ZERO);
    for k in [1, 2] {
        t.entry(k)
            .call(&clock, || Ok::<_, core::convert::Infallible>(()))
            .unwrap();
    }
    assert_eq!(t.get(1).unwrap().counters().successes, 1);
    // Closed and idle although their words carry the count mark: evicted for new keys.
    t.try_entry(3).unwrap();
    t.try_entry(4).unwrap();
    assert_eq!(t.evictions(), 2);
    let mut fresh = t.entry(3);
    assert_eq!(fresh.counters(), Counters::ZERO);
    fresh.call(&clock, || Ok::<_, core::convert::Infallible>(())).unwrap();
    let c = t.get(3).unwrap().counters();
    assert_eq!((c.calls, c.successes), (1, 1));
}

#[derive(Debug)]
struct Down;
impl crate::Classify for Down {}

#[test]
fn a_call_through_an_entry_counts_on_its_key_even_kept_across_its_eviction() {
    let t = KeyedBreakers::<u32, 1>::new([SharedBreaker::new(&POLICY)]);
    let clock = ManualClock::new(Instant::ZERO);
    // The closed path: a failure counts on the key, a success clears nothing else.
    let mut a = t.entry(1);
    assert!(matches!(
        a.call(&clock, || Err::<(), _>(Down)),
        Err(CallError::Inner(Down))
    ));
    assert_eq!(t.get(1).unwrap().counters().failures, 1);
    assert_eq!(a.call(&clock, || Ok::<_, Down>(5)).unwrap(), 5);
    assert_eq!(t.get(1).unwrap().state(clock.now()), State::Closed { strikes: 0 });
    // Key 2 takes the one slot; A's next call finds the slot changed hands, looks key 1
    // up again (evicting 2, closed and idle) and counts on key 1's breaker, not on 2's.
    let two = t.try_entry(2).unwrap();
    assert!(two.is_guarded() && a.breaker().is_none());
    assert!(matches!(
        a.call(&clock, || Err::<(), _>(Down)),
        Err(CallError::Inner(Down))
    ));
    assert!(t.get(2).is_none());
    assert_eq!(t.get(1).unwrap().counters().failures, 1);
    assert_eq!(t.evictions(), 2);
    // Tripped through calls, the key refuses the next one without making it.
    assert!(matches!(
        a.call(&clock, || Err::<(), _>(Down)),
        Err(CallError::Inner(Down))
    ));
    assert_eq!(t.get(1).unwrap().phase(clock.now()), Phase::Open);
    let mut made = false;
    assert!(matches!(
        a.call(&clock, || {
            made = true;
            Ok::<_, Down>(())
        }),
        Err(CallError::Refused(_))
    ));
    assert!(!made);
    assert_eq!(t.get(1).unwrap().counters().skips, 1);
}

#[test]
fn each_table_error_says_what_went_wrong() {
    use std::string::ToString;
    for (why, text) in [
        (
            TableError::Full,
            "keyed breaker table full: every entry is open, half-open, struck or in use",
        ),
        (
            TableError::Busy,
            "keyed breaker table busy: another caller is evicting an entry",
        ),
        (
            TableError::Unlisted,
            "keyed breaker table of listed keys: this key is not listed",
        ),
    ] {
        assert_eq!((why.message(), why.to_string().as_str()), (text, text));
    }
}

#[test]
fn key_zero_is_a_key_like_any_other() {
    // An empty slot's word is zero too: only the state tells key 0's slot from a free one.
    let t = table();
    let zero = t.entry(0);
    assert!(zero.is_guarded());
    assert_eq!((t.len(), keys(&t)), (1, [0].into()));
    let again = t.entry(0);
    assert!(again.is_guarded());
    assert!(core::ptr::eq(zero.breaker().unwrap(), again.breaker().unwrap()));
    assert!(t.get(0).is_some());
}

#[test]
fn a_table_of_a_size_not_a_power_of_two_fills_every_slot_going_round() {
    let t = KeyedBreakers::<u32, 5>::new([const { SharedBreaker::new(&POLICY) }; 5]);
    // Five keys with one home slot, the last: the scan goes round to slots 0 to 3.
    let crowd = keys_homed_at::<5>(4, 5);
    for &k in &crowd {
        assert!(t.entry(k).is_guarded(), "key {k}");
    }
    let slots: Vec<_> = crowd.iter().map(|&k| slot_of(&t, k)).collect();
    assert_eq!(slots, [4, 0, 1, 2, 3].map(Some));
    assert_eq!(t.evictions(), 0);
}

#[test]
fn a_listed_key_is_found_however_far_from_its_home_it_was_placed() {
    // 64 listed keys with one home slot: placed in all 64 slots, the last 32 beyond the
    // neighbourhood a key added on use could take. Each is found, and none is evicted.
    const N: usize = 64;
    let keys: [u32; N] = keys_homed_at::<N>(0, N).try_into().unwrap();
    let to = KeyedBreakers::<u32, N>::placement(&keys);
    let t = KeyedBreakers::<u32, N>::new([const { SharedBreaker::new(&POLICY) }; N]).listing(&keys, to);
    assert!(t.is_listed());
    let clock = ManualClock::new(Instant::ZERO);
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(slot_of(&t, k), Some(i));
        assert!(core::ptr::eq(t.get(k).unwrap(), &t.breakers[i]), "key {k}");
        let mut e = t.try_entry(k).unwrap();
        e.attempt(&clock).unwrap().record(Outcome::TRIP);
    }
    assert_eq!(
        t.try_entry(keys_homed_at::<N>(0, N + 1)[N]).unwrap_err(),
        TableError::Unlisted
    );
    assert_eq!(t.evictions(), 0);
    assert!(t.iter().all(|(_, b)| b.phase(clock.now()) == Phase::Open));
}
