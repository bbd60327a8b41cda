//! Joining a replica's local state with Redis's when they meet again: whose history stands, and what of the other's is kept.
//!
//! A replica apart from Redis (unreachable, too slow, or holding a value it would not obey)
//! runs its own breaker, starting from the last word it shared. When it can follow Redis
//! again it compares three words: its local one, the one it last shared (`base`), and the one
//! Redis holds now (`found`).
//!
//! - Redis has no value (restarted without persistence, key deleted): Redis takes the
//!   local word ([`Resync::Created`]); the first replica back writes it, the others find it.
//! - Redis still holds `base`: nobody moved while apart, so the local history is the only
//!   one and Redis takes it ([`Resync::Pushed`]). So too when Redis holds the word of this
//!   replica's own last write that never answered (a reply lost, a server frozen with the
//!   write in its socket that ran it later): the write's operation is in the local
//!   history as well, so nobody else moved.
//! - Redis moved on: the replicas that stayed connected decided with the fleet's evidence,
//!   and this one takes their word ([`Resync::Adopted`]), with one exception: if this
//!   replica's breaker tripped while apart and is still cooling down, while Redis is closed, the
//!   fleet would otherwise forget a failing upstream; Redis's word then takes that trip, at
//!   the instant it happened, through the machine's own `trip` ([`Resync::AdoptedWithTrip`]).
//!
//! A probe the local breaker granted while apart is never doubled by the meeting: when Redis
//! takes the local word it takes the probe slot with it (the probe's answer then lands in
//! Redis, and every other replica is refused meanwhile); when Redis moved on, the replica
//! stays apart until its probe has answered (the lease bounds the wait).

use breaker_core::{Instant, Phase, Policy, Reason, SharedBreaker, State};

use crate::Resync;

/// What to do to join the two states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Swap Redis's value from `expected` (`None`: absent) to the local word.
    Push {
        /// What Redis must still hold.
        expected: Option<u64>,
        /// Which of the two cases it is.
        how: Resync,
    },
    /// Take Redis's word as it is.
    Adopt,
    /// Run `trip(why)` at `at` on Redis's word and take the result.
    Trip {
        /// The local trip's reason.
        why: Reason,
        /// When it happened.
        at: Instant,
    },
}

/// The plan for a local word `local`, the word last shared `base`, and Redis's `found`;
/// `tripped` is the local breaker's last trip while apart, if any.
pub(crate) fn plan(
    policy: &Policy,
    local: u64,
    base: Option<u64>,
    found: Option<u64>,
    tripped: Option<(Reason, Instant)>,
    now: Instant,
) -> Plan {
    let Some(found) = found else {
        return Plan::Push {
            expected: None,
            how: Resync::Created,
        };
    };
    if base == Some(found) {
        return Plan::Push {
            expected: Some(found),
            how: Resync::Pushed,
        };
    }
    // Still cooling down: a trip whose cooldown is over is old news.
    let still_open =
        matches!(state_of(policy, local, now), State::Open { forced: false, remaining } if remaining.as_millis() > 0);
    match tripped {
        Some((why, at)) if still_open && state_of(policy, found, now).phase() == Phase::Closed => {
            Plan::Trip { why, at }
        }
        _ => Plan::Adopt,
    }
}

/// The state a word shows at `now` under `policy`.
fn state_of(policy: &Policy, word: u64, now: Instant) -> State {
    let b = SharedBreaker::with_policy(policy);
    // A fresh breaker's word is the one it was built with: the swap cannot fail.
    let _ = b.replace_word(b.word(), word);
    b.state(now)
}

#[cfg(test)]
mod tests {
    use breaker_core::{Duration, WordOp, WordTicket};

    use super::*;

    static POLICY: Policy = Policy::new(1, Duration::from_millis(100));

    fn at(ms: u32) -> Instant {
        Instant::from_millis(ms)
    }

    fn closed() -> u64 {
        SharedBreaker::new(&POLICY).word()
    }

    /// A word opened by a strike at `ms`.
    fn opened(ms: u32) -> u64 {
        let b = SharedBreaker::new(&POLICY);
        let t = WordTicket::hot(b.word()).unwrap();
        b.step_word(b.word(), WordOp::Record(t, breaker_core::Outcome::STRIKE), at(ms))
            .word()
    }

    #[test]
    fn a_missing_value_takes_the_local_word() {
        let p = plan(&POLICY, opened(5), Some(closed()), None, None, at(10));
        assert_eq!(
            p,
            Plan::Push {
                expected: None,
                how: Resync::Created
            }
        );
    }

    #[test]
    fn an_unmoved_value_takes_the_local_history() {
        let base = closed();
        let p = plan(
            &POLICY,
            opened(5),
            Some(base),
            Some(base),
            Some((Reason::Strikes, at(5))),
            at(10),
        );
        assert_eq!(
            p,
            Plan::Push {
                expected: Some(base),
                how: Resync::Pushed
            }
        );
    }

    #[test]
    fn a_moved_value_wins() {
        // Redis moved (opened by others); the local breaker stayed closed.
        assert_eq!(
            plan(&POLICY, closed(), None, Some(opened(3)), None, at(10)),
            Plan::Adopt
        );
        // Redis moved and is open; the local breaker tripped too: Redis's trip stands.
        let moved = opened(3);
        let p = plan(
            &POLICY,
            opened(5),
            Some(closed()),
            Some(moved),
            Some((Reason::Strikes, at(5))),
            at(10),
        );
        assert_eq!(p, Plan::Adopt);
    }

    #[test]
    fn a_local_trip_reaches_a_closed_redis_that_moved() {
        // Redis moved (another generation, closed again); this replica tripped at 5 and is
        // still open at 50: the fleet takes the trip.
        let b = SharedBreaker::new(&POLICY);
        let moved = b.step_word(b.word(), WordOp::Reset, at(1)).word();
        let p = plan(
            &POLICY,
            opened(5),
            Some(closed()),
            Some(moved),
            Some((Reason::Strikes, at(5))),
            at(50),
        );
        assert_eq!(
            p,
            Plan::Trip {
                why: Reason::Strikes,
                at: at(5)
            }
        );
        // Once the local cooldown is over (at 200), the trip is old news: nothing is carried.
        let p = plan(
            &POLICY,
            opened(5),
            Some(closed()),
            Some(moved),
            Some((Reason::Strikes, at(5))),
            at(200),
        );
        assert_eq!(p, Plan::Adopt);
    }
}
