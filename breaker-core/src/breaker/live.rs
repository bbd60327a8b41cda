//! Where a shared breaker keeps its policy: [`PolicyStore`], and [`LivePolicy`], a policy
//! that can be replaced while callers use the breaker ([`SharedBreaker::reload`]).

use core::borrow::Borrow;
use core::fmt;
use core::ops::Deref;

use crate::atomic::{fence, spin_loop, AtomicU32, Ordering};
use crate::Policy;
#[cfg(doc)]
use crate::SharedBreaker;

/// Where a [`SharedBreaker`] keeps its policy: anything that [`Borrow`]s one (a
/// `&'static Policy`, the [`Policy`] itself, an `Arc<Policy>`), which never changes, or a
/// [`LivePolicy`] (by value or by `&`), which [`SharedBreaker::reload`] replaces.
pub trait PolicyStore {
    /// The policy as read: a reference for a policy that never changes, a copy for a
    /// [`LivePolicy`] (a reload does not change a policy already read).
    type Read<'a>: Deref<Target = Policy>
    where
        Self: 'a;

    /// The policy now.
    fn read(&self) -> Self::Read<'_>;

    /// Whether [`read`](PolicyStore::read) costs more than a load (a [`LivePolicy`]'s
    /// copy): a breaker then asks its observer whether it holds a window before it reads
    /// the policy's rate rule, so that a breaker without one never reads the policy on its
    /// closed-state path. `false`: the rule is read first, and a type-erased observer is
    /// never asked for a window a policy of consecutive strikes does not use.
    const COSTLY_READ: bool = false;
}

impl<T: Borrow<Policy>> PolicyStore for T {
    type Read<'a>
        = &'a Policy
    where
        T: 'a;

    #[inline(always)]
    fn read(&self) -> &Policy {
        self.borrow()
    }
}

/// A policy a running breaker reads at each decision and a reload replaces at once, for
/// every caller: the storage of a [`SharedBreaker`] whose policy an operator can change
/// without a restart ([`SharedBreaker::reload`]), keeping its state.
///
/// `no_std` and lock-free for readers: the policy is kept twice, in words of their own; a
/// reload writes the copy no reader is sent to, then sends readers to it. A reader never
/// waits for a reload (an interrupt handler reading it while the reload it interrupted is
/// half done reads the previous policy whole); it reads again only if a reload finished
/// while it read. Reloads take turns: one waits for another to finish (so do not reload
/// from an interrupt handler that may interrupt a reload). A breaker without a window
/// does not read it on a closed call that has nothing to report, which then costs what it
/// costs over a `&'static Policy` (`live-closed` in `bench/README.md`).
///
/// ```
/// use breaker_core::{Duration, LivePolicy, Policy, SharedBreaker};
///
/// let breaker = SharedBreaker::with_policy(LivePolicy::new(Policy::new(3, Duration::from_secs(30))));
/// breaker.reload(Policy::new(5, Duration::from_secs(60))).unwrap();
/// assert_eq!(breaker.policy().trip(), 5);
/// assert_eq!(breaker.policy().cooldown(), Duration::from_secs(60));
/// ```
pub struct LivePolicy {
    /// Reloads finished; readers read slot `version % 2`.
    version: AtomicU32,
    /// 1 while a reload writes.
    writing: AtomicU32,
    slots: [[AtomicU32; 8]; 2],
}

/// A policy read from a [`LivePolicy`]: a copy, which a later reload does not change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPolicy(Policy);

impl Deref for ReadPolicy {
    type Target = Policy;

    #[inline(always)]
    fn deref(&self) -> &Policy {
        &self.0
    }
}

#[cfg(loom)]
fn words(policy: &Policy) -> [AtomicU32; 8] {
    policy.to_words().map(AtomicU32::new)
}

impl LivePolicy {
    /// A live policy, `policy` until a reload.
    #[cfg(not(loom))]
    pub const fn new(policy: Policy) -> LivePolicy {
        let w = policy.to_words();
        LivePolicy {
            version: AtomicU32::new(0),
            writing: AtomicU32::new(0),
            slots: [
                [
                    AtomicU32::new(w[0]),
                    AtomicU32::new(w[1]),
                    AtomicU32::new(w[2]),
                    AtomicU32::new(w[3]),
                    AtomicU32::new(w[4]),
                    AtomicU32::new(w[5]),
                    AtomicU32::new(w[6]),
                    AtomicU32::new(w[7]),
                ],
                [
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                    AtomicU32::new(0),
                ],
            ],
        }
    }

    /// A live policy (not `const` under loom).
    #[cfg(loom)]
    pub fn new(policy: Policy) -> LivePolicy {
        LivePolicy {
            version: AtomicU32::new(0),
            writing: AtomicU32::new(0),
            slots: [words(&policy), words(&policy)],
        }
    }

    /// The policy now: whole, either the one before a concurrent reload or the one after.
    pub fn get(&self) -> Policy {
        loop {
            let version = self.version.load(Ordering::Acquire);
            let slot = &self.slots[(version % 2) as usize];
            let w = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| slot[i].load(Ordering::Relaxed));
            // A word written by a later reload (one that reuses this slot) makes the
            // version read below newer: see `set`.
            fence(Ordering::Acquire);
            if self.version.load(Ordering::Relaxed) == version {
                return Policy::from_words(w);
            }
            spin_loop();
        }
    }

    /// Replaces the policy, for every reader from now on. Unchecked: the breaker's
    /// `reload` checks it first.
    pub(crate) fn set(&self, policy: &Policy) {
        while self
            .writing
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_loop();
        }
        let version = self.version.load(Ordering::Relaxed);
        let next = version.wrapping_add(1);
        let slot = &self.slots[(next % 2) as usize];
        // Orders the version readers last saw before this slot's words: a reader that
        // sees one of the words below sees a version other than the one it started from.
        fence(Ordering::Release);
        for (word, value) in slot.iter().zip(policy.to_words()) {
            word.store(value, Ordering::Relaxed);
        }
        self.version.store(next, Ordering::Release);
        self.writing.store(0, Ordering::Release);
    }
}

impl fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LivePolicy").field(&self.get()).finish()
    }
}

impl PolicyStore for LivePolicy {
    type Read<'a> = ReadPolicy;
    const COSTLY_READ: bool = true;

    #[inline]
    fn read(&self) -> ReadPolicy {
        ReadPolicy(self.get())
    }
}

impl PolicyStore for &LivePolicy {
    type Read<'a>
        = ReadPolicy
    where
        Self: 'a;
    const COSTLY_READ: bool = true;

    #[inline]
    fn read(&self) -> ReadPolicy {
        ReadPolicy(self.get())
    }
}

/// A store [`SharedBreaker::reload`] can replace the policy of: a [`LivePolicy`], by
/// value or by `&`.
pub trait Reloadable: PolicyStore {
    /// The live policy.
    fn live(&self) -> &LivePolicy;
}

impl Reloadable for LivePolicy {
    fn live(&self) -> &LivePolicy {
        self
    }
}

impl Reloadable for &LivePolicy {
    fn live(&self) -> &LivePolicy {
        self
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{Duration, WindowSize};

    #[test]
    fn every_field_survives_the_words() {
        let policies = [
            Policy::new(1, Duration::from_millis(1)),
            Policy::new(255, Duration::from_secs(30))
                .with_probe_lease(Duration::from_secs(7))
                .with_probes_to_close(15)
                .with_backoff(255, Duration::MAX),
            Policy::failure_rate(50, WindowSize::Calls(51), Duration::from_secs(10))
                .with_min_calls(51)
                .with_slow_calls(Duration::from_millis(300), 100),
            Policy::failure_rate(1, WindowSize::Time(Duration::from_secs(60)), Duration::from_secs(10))
                .with_half_open_rate(15, 100),
            Policy::new(2, Duration::from_secs(1)).with_half_open_rate(10, 50),
        ];
        for p in policies {
            assert_eq!(Policy::from_words(p.to_words()), p, "{p:?}");
            let live = LivePolicy::new(Policy::new(3, Duration::from_secs(1)));
            live.set(&p);
            assert_eq!(live.get(), p);
            live.set(&policies[0]);
            assert_eq!(live.get(), policies[0]);
        }
    }
}
