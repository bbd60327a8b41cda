//! The breaker to share: `&self` methods, `const fn new`, `Sync`, lives in a `static`.

use core::cell::Cell;
use core::fmt;

use crate::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(target_os = "none"))]
use crate::counts::Spread;
use crate::counts::{CountStore, DefaultCounts, Lean};
use crate::layout::{Core, Ticket};
use crate::live::{PolicyStore, Reloadable};
use crate::machine::{Events, SharedBuilder, Transitions};
use crate::window::{self, Pushed, WindowStats, WindowStore, Windowed};
use crate::{
    CallError, Classify, Clock, Counters, Duration, Instant, Observer, Outcome, Phase, Policy, PolicyError, Reason,
    RefusalReason, Refused, State, TransitionCounts, Verdict,
};

mod watch;

/// A circuit breaker shared between threads, interrupt handlers and async tasks.
///
/// Its whole state is one 64-bit word, updated by compare-and-swap, so exactly one caller
/// wins the half-open probe slot and no transition is lost when outcomes race. It behaves
/// exactly as the single-owner [`Breaker`](crate::Breaker) does.
///
/// The closed-state happy path reads the word once, runs the call, reads the word once
/// more, and writes nothing: no lock, no read-modify-write, no clock read. That is why
/// the calls and successes of that path are not counted: [`SharedBreaker::counters`]
/// keeps failures, skips, trips, probes, lease expiries, the probes' outcomes and the
/// changes of phase by kind, and reports `calls`, `successes` and `neutrals` as zero,
/// unless its policy asks for them ([`Policy::counting_calls`], hosted targets, at the
/// price of two atomic adds per call). On bare metal (`target_os = "none"`) it keeps the first five only, so that its state is
/// 32 bytes of RAM, and reports the probes' outcomes and the changes of phase as zero too
/// (a [`Observer`](crate::Observer), such as `breaker_embedded::DefmtLog`, hears every
/// change there).
///
/// The third parameter, `S`, is where the counters live ([`crate::counts`]): by default
/// beside the state word (88 bytes in all on x86-64); [`Lean`] keeps the first five only
/// (40 bytes: [`SharedBreaker::lean`], for keyed tables of many breakers);
/// `Spread` gives them cache lines of their own so that cores refused at the same moment
/// do not contend (`SharedBreaker::spread`, hosted targets).
///
/// ```
/// use breaker_core::{CallError, Duration, ManualClock, Instant, Policy, SharedBreaker};
///
/// static BREAKER: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30)));
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
///
/// #[derive(Debug)]
/// struct Nack;
/// impl breaker_core::Classify for Nack {} // no opinion: a strike
///
/// for _ in 0..3 {
///     assert!(matches!(BREAKER.call(&CLOCK, || Err::<(), _>(Nack)), Err(CallError::Inner(Nack))));
/// }
/// match BREAKER.call(&CLOCK, || Ok::<_, Nack>(42)) {
///     Err(CallError::Refused(r)) => assert_eq!(r.to_string(), "circuit breaker open: call refused"),
///     other => panic!("{other:?}"),
/// }
/// ```
///
/// # Observers and the registry
///
/// The observer is the last field and may be unsized: a `&SharedBreaker<O>` coerces to a
/// `&SharedBreaker<dyn Observer + Sync>`, which is how the [`registry`](crate::registry)
/// holds breakers of every observer type. Everything but telling the observer is compiled
/// once, whatever the observer types of a program's breakers.
///
/// # A policy known only at run time
///
/// The second parameter, `P`, is how the breaker holds its [`Policy`]: by default a
/// `&'static Policy` (a `static` in flash, what [`SharedBreaker::new`] takes and what the
/// registry lists), or any [`PolicyStore`]: anything that borrows one (the `Policy`
/// itself, an `Arc<Policy>` shared by many breakers, a `&'a Policy`), or a
/// [`LivePolicy`](crate::LivePolicy), which [`SharedBreaker::reload`] replaces while the
/// breaker runs. A policy read from a configuration file at start-up needs no `static` and
/// no leak:
///
/// ```
/// use std::sync::Arc;
/// use breaker_core::{CallError, Duration, Policy, SharedBreaker, StdClock};
///
/// let trip = "5".parse().unwrap(); // from the configuration, say
/// let policy = Policy::try_new(trip, Duration::from_secs(10)).unwrap();
/// let breaker: Arc<SharedBreaker<(), Policy>> = Arc::new(SharedBreaker::with_policy(policy));
/// assert_eq!(breaker.policy().trip(), 5);
/// assert_eq!(breaker.call(&StdClock, || Ok::<_, std::io::Error>(1)).unwrap(), 1);
/// ```
///
/// A windowed policy ([`Policy::failure_rate`]) runs with a [`Windowed`] observer, which
/// holds the window: [`SharedBreaker::with_policy_and_observer`]. A policy that may be of
/// either kind (read from a file with the `serde` feature, say) goes through
/// [`SharedBreaker::try_with_policy`] or [`SharedBreaker::try_with_policy_and_observer`],
/// which answer a policy the breaker cannot run with a [`PolicyError`], not a panic.
///
/// Such a breaker is not listed in the [`registry`](crate::registry), which holds
/// `static` breakers with a `&'static Policy`.
///
/// # Shadow mode
///
/// A breaker in shadow mode ([`SharedBreaker::set_shadow`], switched on or off at any time)
/// decides exactly as a live one would and refuses nothing but a forced opening: what a
/// team runs first on production traffic, to see what a policy would do before it is
/// allowed to refuse. The rules:
///
/// - **The same machine.** Every call a live breaker would admit (closed, or the
///   half-open probe) is admitted and its outcome reported as live: strikes, trips,
///   cooldowns, probes and transitions (the observer is told of each) are the ones a live
///   breaker in its place would make.
/// - **A would-be refusal is let through, untracked.** A call a live breaker would refuse
///   while open (cooling down) or half-open (the probe out) is counted as the refusal it
///   would be (a skip: [`Counters::skips`] counts would-be refusals, as a live breaker's
///   counts refusals) and then made. Its outcome changes nothing and counts nothing (no
///   failure, no restarted cooldown, no window sample): the live breaker never saw that
///   call, so the shadowed one does not either, and both go through the same states.
/// - **A forced opening still refuses.** [`SharedBreaker::force_open`] is an operator's
///   order, not a threshold being tuned: shadow mode does not override it (and a forced
///   refusal stays the cheapest one, settled from the word alone).
/// - **Switching.** The mode is one bit of the state word, kept across every transition,
///   by [`SharedBreaker::reset`] and by a snapshot's [`restore`](SharedBreaker::restore);
///   reading it costs nothing on the closed-state path, and nothing on a live breaker's
///   refusal. Switched off, the breaker refuses from the next call on, as its state then
///   says; a call let through before that is still untracked.
///
/// ```
/// use breaker_core::{Clock, Duration, Instant, ManualClock, Phase, Policy, SharedBreaker};
///
/// static BREAKER: SharedBreaker = SharedBreaker::new(&Policy::new(2, Duration::from_secs(30)));
/// let clock = ManualClock::new(Instant::ZERO);
/// BREAKER.set_shadow(true);
/// let down = || Err::<u32, _>(std::io::Error::other("down"));
/// for _ in 0..3 {
///     assert!(BREAKER.call(&clock, down).is_err()); // made every time: never refused
/// }
/// // Tripped by the first two, as a live breaker would be; the third was let through.
/// assert_eq!(BREAKER.phase(clock.now()), Phase::Open);
/// assert_eq!((BREAKER.counters().failures, BREAKER.counters().skips), (2, 1));
/// BREAKER.set_shadow(false);
/// assert!(BREAKER.call(&clock, || Ok::<_, std::io::Error>(1)).is_err()); // refused now
/// ```
pub struct SharedBreaker<O: ?Sized + Observer = (), P = &'static Policy, S = DefaultCounts> {
    inner: Inner<P, S>,
    observer: O,
}

/// The part of a shared breaker that does not depend on its observer.
struct Inner<P, S> {
    word: AtomicU64,
    /// The counters, indexed like the low bits of [`Events`], so that counting a step is
    /// one loop over its bits (see [`crate::counts`] for where each storage keeps them).
    counts: S,
    policy: P,
}

impl<O: ?Sized + Observer, P: PolicyStore, S: CountStore> fmt::Debug for SharedBreaker<O, P, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBreaker")
            .field("core", &self.inner.load_core())
            .field("counters", &self.counters())
            .field("policy", &*self.policy())
            .finish()
    }
}

impl SharedBreaker<()> {
    /// A closed breaker following `policy`.
    ///
    /// # Panics
    /// If `policy` is windowed (use [`SharedBreaker::windowed`]); a compile error in a
    /// `static`.
    #[cfg(not(loom))]
    pub const fn new(policy: &'static Policy) -> SharedBreaker<()> {
        SharedBreaker::with_observer(policy, ())
    }

    /// A closed breaker following `policy` (not `const` under loom).
    #[cfg(loom)]
    pub fn new(policy: &'static Policy) -> SharedBreaker<()> {
        SharedBreaker::with_observer(policy, ())
    }
}

/// A storage's zeroed counters ([`crate::counts`]).
#[cfg(not(loom))]
macro_rules! zero {
    ($storage:ty) => {
        <$storage as crate::counts::sealed::Store>::ZERO
    };
}

/// A storage's zeroed counters (loom's atomics are not made in `const`).
#[cfg(loom)]
macro_rules! zero {
    ($storage:ty) => {
        <$storage as crate::counts::sealed::Store>::zero()
    };
}

/// A closed shared breaker; `$counting`: whether its policy counts every call (its
/// closed word then carries the count mark, if the storage keeps those counts); its
/// counters kept in `$storage` ([`DefaultCounts`] when not named).
macro_rules! shared_breaker_init {
    ($policy:expr, $observer:expr, $counting:expr) => {
        shared_breaker_init!($policy, $observer, $counting, DefaultCounts)
    };
    ($policy:expr, $observer:expr, $counting:expr, $storage:ty) => {
        SharedBreaker {
            inner: Inner {
                word: AtomicU64::new(
                    Core::INITIAL.pack_marked(<$storage as crate::counts::sealed::Store>::CALLS && $counting),
                ),
                counts: zero!($storage),
                policy: $policy,
            },
            observer: $observer,
        }
    };
}

impl<O: Observer> SharedBreaker<O> {
    /// A closed breaker that tells `observer` of every transition.
    ///
    /// # Panics
    /// If `policy` is windowed (use [`SharedBreaker::windowed`]); a compile error in a
    /// `static`.
    #[cfg(not(loom))]
    pub const fn with_observer(policy: &'static Policy, observer: O) -> SharedBreaker<O> {
        window::check_no_window(policy.rule());
        shared_breaker_init!(policy, observer, policy.counts_calls())
    }

    /// A closed breaker that tells `observer` of every transition (not `const` under loom).
    #[cfg(loom)]
    pub fn with_observer(policy: &'static Policy, observer: O) -> SharedBreaker<O> {
        window::check_no_window(policy.rule());
        shared_breaker_init!(policy, observer, policy.counts_calls())
    }
}

impl<O: Observer, S: CountStore> SharedBreaker<O, &'static Policy, S> {
    /// This breaker, closed and in [shadow mode](SharedBreaker#shadow-mode) from the start:
    /// for a `static`, which can be switched later with [`SharedBreaker::set_shadow`].
    /// `#[circuit_breaker(.., shadow)]` builds its breaker this way.
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, SharedBreaker};
    ///
    /// static NEW_UPSTREAM: SharedBreaker = SharedBreaker::new(&Policy::new(3, Duration::from_secs(30))).shadowed();
    /// assert!(NEW_UPSTREAM.is_shadow());
    /// ```
    #[cfg(not(loom))]
    pub const fn shadowed(mut self) -> Self {
        self.inner.word = AtomicU64::new(Self::shadowed_word(self.inner.policy));
        self
    }

    /// [`SharedBreaker::shadowed`] (not `const` under loom).
    #[cfg(loom)]
    pub fn shadowed(mut self) -> Self {
        self.inner.word = AtomicU64::new(Self::shadowed_word(self.inner.policy));
        self
    }

    /// The state word of a fresh breaker in shadow mode: marked as counting calls where
    /// both its storage and `policy` count them.
    const fn shadowed_word(policy: &Policy) -> u64 {
        let counting = <S as crate::counts::sealed::Store>::CALLS && policy.counts_calls();
        Core::INITIAL_SHADOWED.pack_marked(counting)
    }
}

impl SharedBreaker<(), &'static Policy, Lean> {
    /// A closed breaker following `policy`, its counters kept [`Lean`]: the first five
    /// only (failures, skips, trips, probes, lease expiries), 40 bytes in all on x86-64
    /// instead of 88: for a keyed table of many breakers. See [`crate::counts`].
    ///
    /// ```
    /// use breaker_core::counts::Lean;
    /// use breaker_core::keyed::KeyedBreakers;
    /// use breaker_core::{Duration, Policy, SharedBreaker};
    ///
    /// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
    /// static HOSTS: KeyedBreakers<u32, 1024, (), &Policy, Lean> =
    ///     KeyedBreakers::new([const { SharedBreaker::lean(&POLICY) }; 1024]);
    /// # #[cfg(target_pointer_width = "64")]
    /// assert!(size_of_val(&HOSTS) <= 1024 * 64);
    /// ```
    ///
    /// # Panics
    /// If `policy` is windowed (use [`SharedBreaker::with_counts`] and a [`Windowed`]
    /// observer); a compile error in a `static`.
    #[cfg(not(loom))]
    pub const fn lean(policy: &'static Policy) -> Self {
        SharedBreaker::with_counts(policy, ())
    }

    /// [`SharedBreaker::lean`] (not `const` under loom).
    #[cfg(loom)]
    pub fn lean(policy: &'static Policy) -> Self {
        SharedBreaker::with_counts(policy, ())
    }
}

#[cfg(not(target_os = "none"))]
impl SharedBreaker<(), &'static Policy, Spread> {
    /// A closed breaker following `policy`, its counters kept [`Spread`]: on cache lines
    /// of their own, the refusals' skips spread over four more, so that cores refused at
    /// the same moment do not take the state word's line from each other (768 bytes on
    /// x86-64). See [`crate::counts`] for when to choose it.
    ///
    /// # Panics
    /// If `policy` is windowed (use [`SharedBreaker::with_counts`] and a [`Windowed`]
    /// observer); a compile error in a `static`.
    #[cfg(not(loom))]
    pub const fn spread(policy: &'static Policy) -> Self {
        SharedBreaker::with_counts(policy, ())
    }

    /// [`SharedBreaker::spread`] (not `const` under loom).
    #[cfg(loom)]
    pub fn spread(policy: &'static Policy) -> Self {
        SharedBreaker::with_counts(policy, ())
    }
}

impl<O: Observer, S: CountStore> SharedBreaker<O, &'static Policy, S> {
    /// A closed breaker following `policy`, telling `observer` of every transition, its
    /// counters kept in the storage `S` ([`crate::counts`]: [`Lean`], `Spread`, or the
    /// default). A windowed policy takes [`SharedBreaker::windowed_with_counts`].
    ///
    /// ```
    /// use breaker_core::counts::Lean;
    /// use breaker_core::{Duration, Policy, SharedBreaker, StderrLog};
    ///
    /// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
    /// static UPSTREAM: SharedBreaker<StderrLog, &Policy, Lean> = SharedBreaker::with_counts(&POLICY, StderrLog::new("upstream"));
    /// # let _ = &UPSTREAM;
    /// ```
    ///
    /// # Panics
    /// If `policy` is windowed; a compile error in a `static`.
    #[cfg(not(loom))]
    pub const fn with_counts(policy: &'static Policy, observer: O) -> Self {
        window::check_no_window(policy.rule());
        shared_breaker_init!(policy, observer, policy.counts_calls(), S)
    }

    /// [`SharedBreaker::with_counts`] (not `const` under loom).
    #[cfg(loom)]
    pub fn with_counts(policy: &'static Policy, observer: O) -> Self {
        window::check_no_window(policy.rule());
        shared_breaker_init!(policy, observer, policy.counts_calls(), S)
    }
}

impl<W: WindowStore + window::sealed::Kind, O: Observer> SharedBreaker<Windowed<W, O>> {
    /// A closed breaker with a windowed policy ([`Policy::failure_rate`]): `windowed` holds
    /// the window (`Windowed::calls(observer)` for a count window, `Windowed::time(observer)`
    /// for a time window) and the observer told of every transition. See
    /// [`crate::window`].
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, SharedBreaker, WindowSize, Windowed};
    ///
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30)).with_min_calls(10);
    /// static UPSTREAM: SharedBreaker<Windowed> = SharedBreaker::windowed(&POLICY, Windowed::calls(()));
    /// # let _ = &UPSTREAM;
    /// ```
    ///
    /// # Panics
    /// If `policy` is not windowed, or its window is of the other kind or more than the
    /// storage holds ([`PolicyError::NeedsCallRing`], [`PolicyError::BucketsOutOfRange`]): a compile error in
    /// a `static`.
    #[cfg(not(loom))]
    pub const fn windowed(policy: &'static Policy, windowed: Windowed<W, O>) -> SharedBreaker<Windowed<W, O>> {
        window::check_kind::<W>(policy.rule());
        shared_breaker_init!(policy, windowed, policy.counts_calls())
    }

    /// [`SharedBreaker::windowed`] (not `const` under loom).
    #[cfg(loom)]
    pub fn windowed(policy: &'static Policy, windowed: Windowed<W, O>) -> SharedBreaker<Windowed<W, O>> {
        window::check_kind::<W>(policy.rule());
        shared_breaker_init!(policy, windowed, policy.counts_calls())
    }
}

impl<W: WindowStore + window::sealed::Kind, O: Observer, S: CountStore>
    SharedBreaker<Windowed<W, O>, &'static Policy, S>
{
    /// [`SharedBreaker::windowed`] with the counters kept in the storage `S`
    /// ([`crate::counts`]).
    ///
    /// ```
    /// use breaker_core::counts::Lean;
    /// use breaker_core::{Duration, Policy, SharedBreaker, WindowSize, Windowed};
    ///
    /// static POLICY: Policy = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30));
    /// static UPSTREAM: SharedBreaker<Windowed, &Policy, Lean> =
    ///     SharedBreaker::windowed_with_counts(&POLICY, Windowed::calls(()));
    /// # let _ = &UPSTREAM;
    /// ```
    ///
    /// # Panics
    /// As [`SharedBreaker::windowed`].
    #[cfg(not(loom))]
    pub const fn windowed_with_counts(policy: &'static Policy, windowed: Windowed<W, O>) -> Self {
        window::check_kind::<W>(policy.rule());
        shared_breaker_init!(policy, windowed, policy.counts_calls(), S)
    }

    /// [`SharedBreaker::windowed_with_counts`] (not `const` under loom).
    #[cfg(loom)]
    pub fn windowed_with_counts(policy: &'static Policy, windowed: Windowed<W, O>) -> Self {
        window::check_kind::<W>(policy.rule());
        shared_breaker_init!(policy, windowed, policy.counts_calls(), S)
    }
}

impl<P: PolicyStore> SharedBreaker<(), P> {
    /// A closed breaker holding its policy as `P`: the [`Policy`] itself (known only at
    /// run time, no `static` needed), an `Arc<Policy>`, a `&'a Policy`. See
    /// [the type's documentation](SharedBreaker#a-policy-known-only-at-run-time).
    ///
    /// # Panics
    /// If the policy is windowed ([`Policy::failure_rate`]), which needs a window to keep
    /// its samples in: see [`SharedBreaker::try_with_policy`].
    pub fn with_policy(policy: P) -> SharedBreaker<(), P> {
        window::check_no_window(policy.read().rule());
        let counting = policy.read().counts_calls();
        shared_breaker_init!(policy, (), counting)
    }

    /// [`SharedBreaker::with_policy`], or [`PolicyError::NeedsWindow`] if the policy is
    /// windowed: for a policy read at run time, which may be either kind. A windowed one
    /// runs with a [`Windowed`] observer ([`SharedBreaker::try_with_policy_and_observer`]).
    ///
    /// ```
    /// use breaker_core::{Duration, Policy, PolicyError, SharedBreaker, WindowSize};
    ///
    /// let rate = Policy::failure_rate(50, WindowSize::Calls(20), Duration::from_secs(30));
    /// assert_eq!(SharedBreaker::try_with_policy(rate).err(), Some(PolicyError::NeedsWindow));
    /// ```
    pub fn try_with_policy(policy: P) -> Result<SharedBreaker<(), P>, PolicyError> {
        window::fits_storage(policy.read().rule(), None)?;
        let counting = policy.read().counts_calls();
        Ok(shared_breaker_init!(policy, (), counting))
    }
}

impl<O: Observer, P: PolicyStore> SharedBreaker<O, P> {
    /// [`SharedBreaker::with_policy`] with an observer told of every transition. A
    /// [`Windowed`] observer gives the breaker its window: a windowed policy known only at
    /// run time needs no `static` either.
    ///
    /// # Panics
    /// If the policy is windowed and the observer holds no window of its kind: see
    /// [`SharedBreaker::try_with_policy_and_observer`].
    pub fn with_policy_and_observer(policy: P, observer: O) -> SharedBreaker<O, P> {
        match Self::try_with_policy_and_observer(policy, observer) {
            Ok(breaker) => breaker,
            Err(e) => e.fail(),
        }
    }

    /// [`SharedBreaker::with_policy_and_observer`], or an error if the policy is windowed
    /// and the observer holds no window ([`PolicyError::NeedsWindow`]) or one of the other
    /// kind ([`PolicyError::NeedsCountWindow`], [`PolicyError::NeedsTimeWindow`]). A
    /// policy of consecutive strikes runs beside any observer (a window is then unused).
    ///
    /// ```
    /// use breaker_core::{CallError, Duration, ManualClock, Instant, Policy, SharedBreaker, Windowed};
    ///
    /// // A policy from a configuration file, say (`serde` reads one from JSON).
    /// let policy = Policy::failure_rate(50, breaker_core::WindowSize::Calls(4), Duration::from_secs(30));
    /// let breaker = SharedBreaker::try_with_policy_and_observer(policy, Windowed::calls(())).unwrap();
    /// let clock = ManualClock::new(Instant::ZERO);
    /// for ok in [true, false, true, false] {
    ///     let _ = breaker.call(&clock, || if ok { Ok(()) } else { Err(std::io::Error::other("down")) });
    /// }
    /// // Half of the last four calls failed: open.
    /// assert!(matches!(breaker.call(&clock, || Ok::<_, std::io::Error>(())), Err(CallError::Refused(_))));
    /// ```
    pub fn try_with_policy_and_observer(policy: P, observer: O) -> Result<SharedBreaker<O, P>, PolicyError> {
        window::fits_storage(policy.read().rule(), observer.window().map(|w| w.shape()))?;
        let counting = policy.read().counts_calls();
        Ok(shared_breaker_init!(policy, observer, counting))
    }
}

impl<O: ?Sized + Observer, P: Reloadable, S: CountStore> SharedBreaker<O, P, S> {
    /// Replaces the policy of a breaker kept in a [`LivePolicy`](crate::LivePolicy), at
    /// once for every caller, keeping the breaker's state and counters: the next decision
    /// of any caller follows `policy`. Lock-free for the callers (see `LivePolicy`); two
    /// reloads take turns.
    ///
    /// What the state becomes under the new policy, where it does not fit:
    ///
    /// - **Strikes**: a closed breaker keeps its consecutive strikes; with `trip` lowered
    ///   to or below them, the next strike trips it (a success still clears them).
    /// - **Cooldown**: an opening in progress is measured against the new cooldown (at its
    ///   backoff step, capped by the new maximum) from the instant it counts from: a
    ///   shorter one can end it at once, so that the next call probes; a longer one
    ///   extends it. A forced opening stays until a reset.
    /// - **Probe lease**: a probe out is measured against the new lease from when it
    ///   started.
    /// - **Probes to close**: with it lowered to or below the successful probes so far,
    ///   the next successful probe closes the breaker.
    /// - **Window**: a new rate rule starts from an empty window (the samples were taken
    ///   under the old rule); a consecutive-strikes policy leaves the window unused.
    /// - **Counting calls** ([`Policy::counting_calls`]): switched on, calls, successes
    ///   and neutral outcomes count from the next call on; switched off, their counters
    ///   keep what they counted and [`SharedBreaker::counters`] reports them as zero.
    ///
    /// An error, and no change, if the breaker cannot run `policy`: a windowed one on a
    /// breaker without a window of its kind ([`PolicyError::NeedsWindow`],
    /// [`PolicyError::NeedsCountWindow`], [`PolicyError::NeedsTimeWindow`]).
    ///
    /// ```
    /// use breaker_core::{CallError, Clock, Duration, Instant, LivePolicy, ManualClock, Phase, Policy, SharedBreaker};
    ///
    /// let breaker = SharedBreaker::with_policy(LivePolicy::new(Policy::new(3, Duration::from_secs(30))));
    /// let clock = ManualClock::new(Instant::ZERO);
    /// let fail = || Err::<(), _>(std::io::Error::other("down"));
    /// let _ = breaker.call(&clock, fail);
    /// let _ = breaker.call(&clock, fail);
    /// // An operator lowers the trip count to 2: the breaker has two strikes, so the next trips.
    /// breaker.reload(Policy::new(2, Duration::from_secs(30))).unwrap();
    /// assert_eq!(breaker.phase(clock.now()), Phase::Closed);
    /// let _ = breaker.call(&clock, fail);
    /// assert_eq!(breaker.phase(clock.now()), Phase::Open);
    /// // ... and shortens the cooldown: 10 s after the opening, the next call probes.
    /// breaker.reload(Policy::new(2, Duration::from_secs(10))).unwrap();
    /// clock.advance(Duration::from_secs(10));
    /// assert!(breaker.call(&clock, || Ok::<_, std::io::Error>(())).is_ok());
    /// assert_eq!(breaker.phase(clock.now()), Phase::Closed);
    /// ```
    pub fn reload(&self, policy: Policy) -> Result<(), PolicyError> {
        window::fits_storage(policy.rule(), self.observer.window().map(|w| w.shape()))?;
        let live = self.inner.policy.live();
        let before = live.get();
        live.set(&policy);
        if before.rule() != policy.rule() {
            if let Some(window) = window::of(&self.observer, policy.rule()) {
                window.clear(self.load_core().gen());
            }
        }
        if before.counts_calls() != policy.counts_calls() {
            // A step that changes nothing but the count mark, which it sets or clears.
            self.inner.update(&|_| {});
        }
        Ok(())
    }
}

impl<P: PolicyStore, S: CountStore> Inner<P, S> {
    #[inline(always)]
    fn policy(&self) -> P::Read<'_> {
        self.policy.read()
    }

    /// Applies `f` to the state until the compare-and-swap lands, then counts; returns the
    /// step's transitions, for the observer. A step that changes nothing writes nothing.
    /// Every transition goes through this one copy of the loop (out of line, off the hot
    /// paths: firmware stays small); `f` works on a builder on this loop's stack.
    #[inline(never)]
    fn update(&self, f: &dyn Fn(&mut SharedBuilder)) -> Transitions {
        let mut w = self.word.load(Ordering::Acquire);
        let (step, counting) = loop {
            // Read on every turn: a reload that switches counting and then takes its own
            // step makes this turn fail and the next one mark the word as the policy says.
            let counting = self.counting();
            let mut b = SharedBuilder::new(Core::unpack(w));
            f(&mut b);
            let next = b.core.pack_marked(counting);
            if next == w {
                break (b, counting);
            }
            match self
                .word
                .compare_exchange_weak(w, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break (b, counting),
                Err(actual) => w = actual,
            }
        };
        self.count(&step.events, counting);
        step.transitions
    }

    /// Counts a counting breaker's closed-state success or neutral outcome with one add,
    /// if the word is still closed with nothing pending in `ticket`'s generation: there the
    /// step would change nothing but that count. `false` (nothing counted) otherwise, and
    /// always for a breaker that does not count, whose closed word never has the mark.
    #[inline(always)]
    fn count_quiet(&self, ticket: Ticket, outcome: Outcome) -> bool {
        if cfg!(target_os = "none") || ticket.probe {
            return false;
        }
        let event = match outcome {
            Outcome::Success => Events::SUCCESS,
            Outcome::Error(Verdict::Neutral) => Events::NEUTRAL,
            Outcome::Error(_) => return false,
        };
        let w = self.word.load(Ordering::Acquire);
        if w & Core::HOT_MASK != Core::COUNTING_IDLE || Core::closed_ticket(w).gen != ticket.gen {
            return false;
        }
        bump(self.counter(event));
        true
    }

    /// Whether this breaker counts every call ([`Policy::counting_calls`]; never on bare
    /// metal, nor with a storage that has no counters for them).
    #[inline(always)]
    fn counting(&self) -> bool {
        cfg!(not(target_os = "none")) && S::CALLS && self.policy().counts_calls()
    }

    /// Counts a step's events; admitted calls, successes and neutral outcomes only if the
    /// breaker counts every call (without the count mark, only some of them go through a
    /// step, and a count of some would mislead). A storage that keeps fewer counters
    /// counts the events it has counters for.
    fn count(&self, e: &Events, counting: bool) {
        let mut bits = e.bits();
        if !counting {
            bits &= !(Events::ADMITTED | Events::SUCCESS | Events::NEUTRAL);
        }
        for counter in self.counts.counts() {
            if bits & 1 != 0 {
                bump(counter);
            }
            bits >>= 1;
        }
    }

    /// Counts one call refused on the refusal fast path (open and cooling down, or forced
    /// open) without a locked read-modify-write, where the storage keeps such skips: a
    /// refusal stays as cheap as a load of the word and a clock read. Refusals that go
    /// through a transition step are counted exactly.
    #[inline(always)]
    fn count_skip(&self) {
        self.counts.count_skip();
    }

    /// The counter of `event`, one of the low bits the storage keeps.
    #[inline(always)]
    fn counter(&self, event: u16) -> &AtomicU32 {
        &self.counts.counts()[event.trailing_zeros() as usize]
    }

    /// The count of `event`: 0 for one this breaker does not count (the probes' outcomes
    /// and the changes of phase, on bare metal or with a [`Lean`] storage).
    fn count_of(&self, event: u16) -> u32 {
        self.counts
            .counts()
            .get(event.trailing_zeros() as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    fn load_core(&self) -> Core {
        Core::unpack(self.word.load(Ordering::Acquire))
    }

    fn state(&self, now: Instant) -> State {
        Core::peek(self.word.load(Ordering::Acquire)).view(&self.policy(), now)
    }

    /// The skips: the transition steps' count and the refusal fast path's slots,
    /// saturating at `u32::MAX`.
    fn skips(&self) -> u32 {
        let counted = u64::from(self.counter(Events::SKIPPED).load(Ordering::Relaxed));
        u32::try_from(counted.saturating_add(self.counts.fast_skips())).unwrap_or(u32::MAX)
    }

    fn counters(&self) -> Counters {
        let get = |event: u16| self.count_of(event);
        let mut counters = Counters {
            failures: get(Events::FAILURE),
            skips: self.skips(),
            trips: get(Events::TRIP),
            probes: get(Events::PROBE_GRANTED),
            lease_expiries: get(Events::LEASE_EXPIRED),
            probe_successes: get(Events::PROBE_SUCCEEDED),
            probe_failures: get(Events::PROBE_FAILED),
            probe_neutrals: get(Events::PROBE_NEUTRAL),
            transitions: TransitionCounts {
                closed_to_open: get(Events::CLOSED_TO_OPEN),
                open_to_half_open: get(Events::OPEN_TO_HALF_OPEN),
                half_open_to_closed: get(Events::HALF_OPEN_TO_CLOSED),
                half_open_to_open: get(Events::HALF_OPEN_TO_OPEN),
                open_to_closed: get(Events::OPEN_TO_CLOSED),
            },
            ..Counters::ZERO
        };
        if self.counting() {
            counters.calls = get(Events::ADMITTED);
            counters.successes = get(Events::SUCCESS);
            counters.neutrals = get(Events::NEUTRAL);
        }
        counters
    }

    fn store_core(&self, core: Core, counters: &Counters) {
        self.word.store(core.pack_marked(self.counting()), Ordering::Release);
        for (event, value) in [
            (Events::FAILURE, counters.failures),
            (Events::SKIPPED, counters.skips),
            (Events::TRIP, counters.trips),
            (Events::PROBE_GRANTED, counters.probes),
            (Events::LEASE_EXPIRED, counters.lease_expiries),
            (Events::PROBE_SUCCEEDED, counters.probe_successes),
            (Events::PROBE_FAILED, counters.probe_failures),
            (Events::PROBE_NEUTRAL, counters.probe_neutrals),
            (Events::CLOSED_TO_OPEN, counters.transitions.closed_to_open),
            (Events::OPEN_TO_HALF_OPEN, counters.transitions.open_to_half_open),
            (Events::HALF_OPEN_TO_CLOSED, counters.transitions.half_open_to_closed),
            (Events::HALF_OPEN_TO_OPEN, counters.transitions.half_open_to_open),
            (Events::OPEN_TO_CLOSED, counters.transitions.open_to_closed),
            (Events::ADMITTED, counters.calls),
            (Events::SUCCESS, counters.successes),
            (Events::NEUTRAL, counters.neutrals),
        ] {
            if let Some(counter) = self.counts.counts().get(event.trailing_zeros() as usize) {
                counter.store(value, Ordering::Relaxed);
            }
        }
        self.counts.clear_fast_skips();
    }
}

impl<O: ?Sized + Observer, P: PolicyStore, S: CountStore> SharedBreaker<O, P, S> {
    /// Runs [`Inner::update`] and tells the observer of each transition. A windowed
    /// breaker's step that enters the closed state clears the window for the new
    /// generation first, before the transition lands (see [`crate::window`]).
    pub(crate) fn update(&self, f: &dyn Fn(&mut SharedBuilder)) {
        let transitions = match window::of_store(&self.observer, &self.inner.policy) {
            None => self.inner.update(f),
            Some(w) => self.inner.update(&|b: &mut SharedBuilder| {
                f(b);
                if window::enters_closed(&b.transitions) {
                    w.clear(b.core.gen());
                }
            }),
        };
        for t in transitions.iter().flatten() {
            self.observer.on_transition(t);
        }
    }

    /// The mutating gate: may a call go ahead now? In half-open, a grant takes the one
    /// probe slot. The returned permit is a guard: dropped without an outcome, a probe
    /// counts as failed at that moment and any other call as neutral.
    pub fn try_acquire<'a, C: Clock>(&'a self, clock: &'a C) -> Result<Permit<'a, C, O, P, S>, Refused> {
        if let Some(window) = self.watched() {
            return self.try_acquire_watched(window, clock);
        }
        let ticket = self.acquire_ticket(clock)?;
        Ok(Permit::new(self, clock, ticket))
    }

    /// [`SharedBreaker::try_acquire`]'s decision, for permits that hold the breaker some
    /// other way (the `tower` service's owned permit).
    #[inline(always)]
    pub(crate) fn acquire_ticket<C: Clock>(&self, clock: &C) -> Result<Ticket, Refused> {
        let w = self.inner.word.load(Ordering::Acquire);
        match Core::hot_ticket(w) {
            Some(ticket) => Ok(ticket),
            None => self.gate_out_of_line(w, clock),
        }
    }

    /// [`SharedBreaker::gate`], out of line: a permit's closed-state path (the retry
    /// ladder's loop, an `async` call) keeps its registers.
    #[inline(never)]
    fn gate_out_of_line<C: Clock>(&self, w: u64, clock: &C) -> Result<Ticket, Refused> {
        self.gate(w, clock)
    }

    /// Reports the outcome of a call admitted with `ticket`: a success in Closed with
    /// nothing pending changes nothing, so it skips the clock read (a windowed breaker's
    /// success is a sample of its window).
    pub(crate) fn report<C: Clock>(&self, ticket: Ticket, outcome: Outcome, clock: &C) {
        if let Some(window) = window::of_store(&self.observer, &self.inner.policy) {
            self.report_windowed(window, ticket, outcome, clock);
            return;
        }
        let hot = outcome == Outcome::Success
            && !ticket.probe
            && self.inner.word.load(Ordering::Acquire) & Core::HOT_MASK == 0;
        if !hot {
            self.record_ticket_out_of_line(ticket, outcome, clock);
        }
    }

    /// [`SharedBreaker::report`] for a windowed breaker, out of line on hosted targets: the
    /// closed-state path of a breaker without a window keeps its registers. Inlined on bare
    /// metal, as `record_ticket_out_of_line`.
    #[cfg_attr(not(target_os = "none"), inline(never))]
    #[cfg_attr(target_os = "none", inline(always))]
    fn report_windowed<C: Clock>(&self, window: &dyn WindowStore, ticket: Ticket, outcome: Outcome, clock: &C) {
        self.record_windowed(window, ticket, outcome, None, None, self.inner.counting(), clock);
    }

    /// What an unanswered permit counts as when dropped: a probe as a failed probe (so the
    /// breaker re-opens instead of wedging in half-open), anything else as neutral, which
    /// changes nothing this breaker keeps.
    /// [`SharedBreaker::report`] with a closed-state success inline: a load and a test in
    /// the caller's code (the retry ladder's loop, any composite through
    /// [`CircuitBreaker`](crate::CircuitBreaker)); everything else goes through `report`.
    #[inline]
    pub(crate) fn report_inline<C: Clock>(&self, ticket: Ticket, outcome: Outcome, clock: &C) {
        // A windowed breaker's closed success is a sample: through `report`.
        let windowed = window::of_store(&self.observer, &self.inner.policy).is_some();
        let hot = !windowed
            && outcome == Outcome::Success
            && !ticket.probe
            && self.inner.word.load(Ordering::Acquire) & Core::HOT_MASK == 0;
        if !hot {
            self.report_out_of_line(ticket, outcome, clock);
        }
    }

    /// [`SharedBreaker::report`], out of line: the caller's loop keeps its registers.
    #[inline(never)]
    fn report_out_of_line<C: Clock>(&self, ticket: Ticket, outcome: Outcome, clock: &C) {
        self.report(ticket, outcome, clock)
    }

    pub(crate) fn abandon<C: Clock>(&self, ticket: Ticket, clock: &C) {
        if ticket.probe {
            self.record_ticket(ticket, Outcome::STRIKE, clock.now());
        } else if self.inner.counting() {
            // Neutral changes nothing but a counting breaker's count of neutral outcomes.
            self.record_with(ticket, Outcome::NEUTRAL, clock);
        }
    }

    /// The gate off the hot path. Open and cooling down (one clock read), or forced open
    /// (no clock read), the refusal is settled right here, exactly as `Core::acquire`
    /// would settle it (a refusal that changes nothing but the skip count), with no
    /// compare-and-swap and no `Step`; anything else takes the full transition, out of
    /// line, after one clock read.
    #[inline(always)]
    fn gate<C: Clock>(&self, w: u64, clock: &C) -> Result<Ticket, Refused> {
        if w & Core::COOLING_MASK == Core::COOLING_BITS {
            let now = clock.now();
            if let Some(refused) = Core::cooling_refusal(w, &self.inner.policy(), now) {
                self.inner.count_skip();
                return Err(refused);
            }
            return self.acquire_slow(now);
        }
        if let Some(refused) = Core::forced_refusal(w) {
            self.inner.count_skip();
            return Err(refused);
        }
        self.acquire_rest(w, clock)
    }

    /// The gate's two refusals that change nothing but the skip count (open and cooling
    /// down: one clock read; forced open: none), as [`SharedBreaker::gate`] settles them,
    /// not yet counted; `None` for anything else, which the gate decides out of line.
    #[inline(always)]
    fn plain_refusal<C: Clock>(&self, w: u64, clock: &C) -> Option<Refused> {
        if w & Core::COOLING_MASK == Core::COOLING_BITS {
            Core::cooling_refusal(w, &self.inner.policy(), clock.now())
        } else {
            Core::forced_refusal(w)
        }
    }

    /// The gate past its refusals, out of line: a counting breaker, closed with nothing
    /// pending, admits as the hot path admits (nothing changes, no clock read) and counts
    /// the call with one add; anything else takes the full transition.
    #[cfg(not(target_os = "none"))]
    #[inline(never)]
    fn acquire_rest<C: Clock>(&self, w: u64, clock: &C) -> Result<Ticket, Refused> {
        if w & Core::HOT_MASK == Core::COUNTING_IDLE {
            bump(self.inner.counter(Events::ADMITTED));
            return Ok(Core::closed_ticket(w));
        }
        self.acquire_slow(clock.now())
    }

    /// The gate past its refusals (bare metal, which counts no calls: the full transition).
    #[cfg(target_os = "none")]
    #[inline(always)]
    fn acquire_rest<C: Clock>(&self, _: u64, clock: &C) -> Result<Ticket, Refused> {
        self.acquire_slow(clock.now())
    }

    /// The full gate transition, out of line so that callers' loops keep their registers.
    #[inline(never)]
    fn acquire_slow(&self, now: Instant) -> Result<Ticket, Refused> {
        // Through the one copy of the update loop: the decision of the step that landed is
        // the last one written here, and at least one always is.
        let decision = Cell::new(Err(Refused {
            reason: RefusalReason::Open,
            retry_in: None,
        }));
        self.update(&|b| decision.set(b.acquire(&self.inner.policy(), now)));
        decision.get()
    }

    /// The pure oracle: would a call be allowed at `now`? Writes nothing, so polling it
    /// never eats the probe; it agrees with [`SharedBreaker::try_acquire`] at every instant
    /// (in [shadow mode](SharedBreaker#shadow-mode), every call is let through but a
    /// forced opening's).
    pub fn would_allow(&self, now: Instant) -> bool {
        // The state first, as a live breaker's oracle reads it; the mode only when the
        // state says no (a second load: the oracle is not the gate, and a change of mode
        // in between answers for the later word).
        self.state(now).allows_call() || self.load_core().shadow_passes()
    }

    fn record_ticket(&self, ticket: Ticket, outcome: Outcome, now: Instant) {
        self.update(&|b| b.record(&self.inner.policy(), ticket, outcome, now))
    }

    /// [`SharedBreaker::record_ticket`], reading the clock only if the outcome takes a
    /// step: a counting breaker's closed-state success or neutral outcome with nothing
    /// pending is counted with one add instead ([`Inner::count_quiet`]).
    #[inline(always)]
    fn record_with<C: Clock>(&self, ticket: Ticket, outcome: Outcome, clock: &C) {
        if !self.inner.count_quiet(ticket, outcome) {
            self.record_ticket(ticket, outcome, clock.now());
        }
    }

    /// [`SharedBreaker::record_ticket`] out of line on hosted targets, for a permit's
    /// report: its closed-state success, inlined in the caller (the router's turn), keeps
    /// its registers and computes nothing only a change of state needs. Inlined on bare
    /// metal, where the second copy of the step would cost flash.
    #[cfg_attr(not(target_os = "none"), inline(never))]
    #[cfg_attr(target_os = "none", inline(always))]
    fn record_ticket_out_of_line<C: Clock>(&self, ticket: Ticket, outcome: Outcome, clock: &C) {
        self.record_with(ticket, outcome, clock)
    }

    /// A windowed breaker's report: the machine's part (failures, trip verdicts, probes),
    /// then, for a closed call, its sample, and the window is judged. `elapsed` is the
    /// call's duration if it was timed; `now` a clock reading already taken, if any (the
    /// clock is read only when something needs the time). `counting`: whether the breaker
    /// may count every call (`false` where the caller knows it does not: a closed call
    /// admitted from a word without the count mark). Inlined where the window's type is
    /// known, so that its `push` is called directly (and inlined, for a count window).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn record_windowed<C: Clock>(
        &self,
        window: &dyn WindowStore,
        ticket: Ticket,
        outcome: Outcome,
        elapsed: Option<Duration>,
        now: Option<Instant>,
        counting: bool,
        clock: &C,
    ) {
        if ticket.untracked() {
            // Let through by shadow mode: a live breaker never saw it, nor does its window.
            return;
        }
        let policy = self.inner.policy();
        let policy = &*policy;
        let rule = policy.rule();
        let mut now = now;
        let mut read = || *now.get_or_insert_with(|| clock.now());
        // A closed success changes nothing the machine keeps: only its sample counts (and
        // the success itself, for a breaker that counts every call).
        if (ticket.probe || outcome != Outcome::Success || counting) && !self.inner.count_quiet(ticket, outcome) {
            self.record_ticket(ticket, outcome, read());
        }
        let sample = match window::sample(rule, outcome, elapsed) {
            Some(sample) if !ticket.probe => sample,
            _ => return,
        };
        // A count window needs no time; a time window needs the sample's bucket.
        let at = if rule.is_time() { read() } else { Instant::ZERO };
        if let Pushed::Changed(tally) = window.push(rule, ticket.gen, sample, at) {
            if crate::machine::verdict(rule, &tally).is_some() {
                let at = read();
                self.update(&|b| b.judge(policy, ticket.gen, &tally, at));
            }
        }
    }

    /// [`SharedBreaker::call_classified`] for a windowed breaker: every closed call is a
    /// sample of the window, timed if the policy has a slow-call rule.
    #[inline]
    fn call_windowed<T, E, C: Clock>(
        &self,
        window: &dyn WindowStore,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        if !window.slots().is_empty() {
            return self.call_watched(window, clock, f, classify);
        }
        let w = self.inner.word.load(Ordering::Acquire);
        let Some(ticket) = Core::hot_ticket(w) else {
            // Open and cooling down, or forced open: refused here, as the lone breaker's
            // call refuses (the window takes no sample of a refusal).
            if let Some(r) = self.plain_refusal(w, clock) {
                self.inner.count_skip();
                return Err(CallError::Refused(r));
            }
            return self.call_windowed_gated(window, w, clock, f, classify);
        };
        self.call_windowed_closed(window, ticket, false, clock, f, classify)
    }

    /// [`SharedBreaker::call_windowed`] off the hot path, out of line: open, or half-open
    /// (a refusal, or a probe under a guard), or closed in a counting breaker's word
    /// (never hot): a closed call, timed as any.
    #[inline(never)]
    fn call_windowed_gated<T, E, C: Clock>(
        &self,
        window: &dyn WindowStore,
        w: u64,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let ticket = self.gate(w, clock).map_err(CallError::Refused)?;
        if ticket.probe || ticket.untracked() {
            return self.call_slow(clock, ticket, f, classify, CallError::Inner);
        }
        self.call_windowed_closed(window, ticket, true, clock, f, classify)
    }

    /// A windowed breaker's closed call admitted with `ticket` (`counting`: see
    /// `record_windowed`): timed if the policy has a slow-call rule, and its sample taken.
    #[inline(always)]
    fn call_windowed_closed<T, E, C: Clock>(
        &self,
        window: &dyn WindowStore,
        ticket: Ticket,
        counting: bool,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        // Closed (a windowed policy keeps no strikes): a call that never answers is
        // neutral, which changes nothing; no guard is needed.
        let timed = self.inner.policy().rule().times_calls();
        let started = if timed { Some(clock.now()) } else { None };
        let result = f();
        let (now, elapsed) = match started {
            Some(start) => {
                let end = clock.now();
                (Some(end), Some(end.since(start)))
            }
            None => (None, None),
        };
        let outcome = match &result {
            Ok(_) => Outcome::Success,
            Err(e) => Outcome::Error(classify(e)),
        };
        self.record_windowed(window, ticket, outcome, elapsed, now, counting, clock);
        result.map_err(CallError::Inner)
    }

    /// Runs `f` if the breaker allows it and reports its outcome, classifying its error
    /// with [`Classify`]. The clock is read only when the breaker needs the time: never
    /// on the closed-state path with no strikes pending.
    #[inline]
    pub fn call<T, E: Classify>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, CallError<E>> {
        self.call_classified(clock, f, |e| e.verdict())
    }

    /// [`SharedBreaker::call`] with the verdict given by `classify` instead of [`Classify`].
    #[inline]
    pub fn call_classified<T, E>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        self.call_inner::<T, E, CallError<E>, false>(clock, f, classify, CallError::Inner, CallError::Refused)
    }

    /// [`SharedBreaker::call_classified`] for a function that answers with its own error
    /// type: a refusal becomes that error through `refused`, and the call's own error is
    /// returned as it is, with no [`CallError`] to unwrap. `#[circuit_breaker]` expands
    /// to it.
    ///
    /// Everything but the closed-state path (a refusal, a probe, a failure, a success that
    /// finds strikes pending) runs out of line and is reached by a jump, so a function
    /// that wraps its body in this and is not inlined (called from many places) needs no
    /// stack frame of its own on that path: one load and test of the state word before
    /// the call, one after. [`SharedBreaker::call_classified`] settles a refusal inline
    /// instead, which suits a call inlined into its caller's loop.
    ///
    /// ```
    /// use breaker_core::{Duration, ManualClock, Instant, Policy, Refused, SharedBreaker, Verdict};
    ///
    /// static RADIO: SharedBreaker = SharedBreaker::new(&Policy::new(1, Duration::from_secs(30)));
    /// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum SendError { Nack, Refused(Refused) }
    ///
    /// fn send(ok: bool) -> Result<u8, SendError> {
    ///     RADIO.call_mapped(&CLOCK, || if ok { Ok(1) } else { Err(SendError::Nack) }, |_| Verdict::Strike, SendError::Refused)
    /// }
    /// assert_eq!(send(true), Ok(1));
    /// assert_eq!(send(false), Err(SendError::Nack)); // trips (trip = 1)
    /// assert!(matches!(send(true), Err(SendError::Refused(_))));
    /// ```
    #[inline]
    pub fn call_mapped<T, E>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
        refused: impl FnOnce(Refused) -> E,
    ) -> Result<T, E> {
        self.call_inner::<T, E, E, true>(clock, f, classify, |e| e, refused)
    }

    /// The one call path of [`SharedBreaker::call_classified`] and
    /// [`SharedBreaker::call_mapped`]: the call's error becomes `R` through `inner`, a
    /// refusal through `refused`. `OUT_OF_LINE`: everything off the closed-state path (the
    /// gate, a failure's report, a late success's) runs out of line, reached by a jump
    /// (for a caller that is itself out of line), instead of inline (for a caller's loop,
    /// where a refusal then costs no call).
    #[inline(always)]
    fn call_inner<T, E, R, const OUT_OF_LINE: bool>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
        inner: impl FnOnce(E) -> R,
        refused: impl FnOnce(Refused) -> R,
    ) -> Result<T, R> {
        // Decided by the observer's type: without a window this is not compiled in.
        if let Some(window) = window::of_store(&self.observer, &self.inner.policy) {
            return match self.call_windowed(window, clock, f, classify) {
                Ok(v) => Ok(v),
                Err(CallError::Inner(e)) => Err(inner(e)),
                Err(CallError::Refused(r)) => Err(refused(r)),
            };
        }
        let w = self.inner.word.load(Ordering::Acquire);
        if Core::hot_ticket(w).is_none() {
            // Open, or half-open: a refusal, or a probe under a guard.
            if OUT_OF_LINE {
                return self.call_gated(w, clock, f, classify, inner, refused);
            }
            return match self.gate(w, clock) {
                Ok(ticket) => self.call_slow(clock, ticket, f, classify, inner),
                Err(r) => Err(refused(r)),
            };
        }
        // Closed, nothing pending: no permit guard is needed, since a call that never
        // answers in Closed is neutral, which changes nothing here. Everything but the
        // success that finds the word still hot is out of line, reached by a jump.
        match f() {
            Ok(v) => {
                if !Core::is_hot(self.inner.word.load(Ordering::Acquire)) {
                    if OUT_OF_LINE {
                        return self.closed_report(w, Ok(v), classify, clock, inner);
                    }
                    self.record_ticket(Core::closed_ticket(w), Outcome::Success, clock.now());
                }
                Ok(v)
            }
            Err(e) => {
                if OUT_OF_LINE {
                    return self.closed_report(w, Err(e), classify, clock, inner);
                }
                self.record_ticket(Core::closed_ticket(w), Outcome::Error(classify(&e)), clock.now());
                Err(inner(e))
            }
        }
    }

    /// [`SharedBreaker::call_classified`]'s closed-state path for a breaker that a keyed
    /// table's slot holds for one key at a time: `held()` says whether the slot still
    /// holds it for the caller's key, and is asked after the state word is read (an
    /// eviction changes the slot before it recycles the breaker, so a word read before a
    /// `true` is the key's). Closed with nothing pending and held, the call is the lone
    /// breaker's: no clock read, nothing written, the outcome reported under the word's
    /// generation (dropped if the breaker has been recycled since). Open and cooling down,
    /// or forced open, and held, the refusal is settled here, as the lone breaker's gate
    /// settles it. Anything else (a probe, a counted or windowed call, a slot that changed
    /// hands) hands `f` and `classify` back unmade, for the caller's gate, which checks the
    /// slot again after it decides.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn call_held<T, E, F, K, C: Clock>(
        &self,
        clock: &C,
        held: impl Fn() -> bool,
        f: F,
        classify: K,
    ) -> Result<Result<T, CallError<E>>, (F, K)>
    where
        F: FnOnce() -> Result<T, E>,
        K: FnOnce(&E) -> Verdict,
    {
        if window::of_store(&self.observer, &self.inner.policy).is_some() {
            return Err((f, classify));
        }
        let w = self.inner.word.load(Ordering::Acquire);
        if Core::hot_ticket(w).is_none() {
            // The gate's two refusals, settled here as the lone breaker settles them (the
            // word read before `held()` is the key's); anything else goes to the caller.
            return match self.plain_refusal(w, clock) {
                Some(refused) if held() => {
                    self.inner.count_skip();
                    Ok(Err(CallError::Refused(refused)))
                }
                _ => Err((f, classify)),
            };
        }
        if !held() {
            return Err((f, classify));
        }
        Ok(match f() {
            Ok(v) => {
                if !Core::is_hot(self.inner.word.load(Ordering::Acquire)) {
                    self.record_ticket(Core::closed_ticket(w), Outcome::Success, clock.now());
                }
                Ok(v)
            }
            Err(e) => {
                self.record_ticket(Core::closed_ticket(w), Outcome::Error(classify(&e)), clock.now());
                Err(CallError::Inner(e))
            }
        })
    }

    /// [`SharedBreaker::call_inner`] off the hot path, out of line: a refusal, or a
    /// half-open probe under a guard.
    #[inline(never)]
    fn call_gated<T, E, R, C: Clock>(
        &self,
        w: u64,
        clock: &C,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
        inner: impl FnOnce(E) -> R,
        refused: impl FnOnce(Refused) -> R,
    ) -> Result<T, R> {
        match self.gate(w, clock) {
            Ok(ticket) => self.call_slow(clock, ticket, f, classify, inner),
            Err(r) => Err(refused(r)),
        }
    }

    /// The report of a closed-state call admitted on the hot path (in word `w`) that
    /// failed, or succeeded but found strikes pending when it returned (another call
    /// failed meanwhile): out of line, reached by a jump, answering for the caller.
    #[cold]
    #[inline(never)]
    fn closed_report<T, E, R, C: Clock>(
        &self,
        w: u64,
        result: Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
        clock: &C,
        inner: impl FnOnce(E) -> R,
    ) -> Result<T, R> {
        let outcome = match &result {
            Ok(_) => Outcome::Success,
            Err(e) => Outcome::Error(classify(e)),
        };
        self.record_with(Core::closed_ticket(w), outcome, clock);
        result.map_err(inner)
    }

    /// [`SharedBreaker::call_classified`] for a call whose fallback needs what the call
    /// owns: `f` runs whether or not the breaker admits the call, and is told which.
    /// Admitted, `f(Ok(probe))` makes the call (`probe`: it is the half-open probe), and
    /// its outcome is reported (classified by `classify`) exactly as `call_classified`
    /// reports it, on the same happy path (no clock read, nothing written). Refused,
    /// `f(Err(refused))` answers instead (a
    /// fallback), and its result is returned as it is, not reported: the refusal is
    /// counted as a skip, as always. One closure serves both branches, so the arguments it
    /// owns can go to either; `#[circuit_breaker(fallback = ..)]` expands to it.
    ///
    /// ```
    /// use breaker_core::{Duration, ManualClock, Instant, Policy, SharedBreaker, Verdict};
    ///
    /// static MODEM: SharedBreaker = SharedBreaker::new(&Policy::new(1, Duration::from_secs(30)));
    /// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
    ///
    /// fn send(frame: Vec<u8>, fail: bool) -> Result<String, ()> {
    ///     MODEM.call_or_else(
    ///         &CLOCK,
    ///         move |admitted| match admitted {
    ///             Ok(_) if fail => Err(()),
    ///             Ok(_probe) => Ok(format!("sent {} bytes", frame.len())),
    ///             Err(_refused) => Ok(format!("queued {} bytes", frame.len())),
    ///         },
    ///         |_| Verdict::Strike,
    ///     )
    /// }
    /// assert_eq!(send(vec![1, 2], true), Err(()));
    /// assert_eq!(send(vec![1, 2], false).unwrap(), "queued 2 bytes"); // tripped (trip = 1)
    /// ```
    #[inline]
    pub fn call_or_else<T, E>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce(Result<bool, Refused>) -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, E> {
        if window::of_store(&self.observer, &self.inner.policy).is_some() {
            // A windowed breaker: every admitted call is a sample, timed if the policy has
            // a slow-call rule, reported through a permit.
            return match self.try_acquire(clock) {
                Ok(permit) => {
                    let timed = self.inner.policy().rule().times_calls();
                    let started = if timed { Some(clock.now()) } else { None };
                    let result = f(Ok(permit.is_probe()));
                    let outcome = match &result {
                        Ok(_) => Outcome::Success,
                        Err(e) => Outcome::Error(classify(e)),
                    };
                    match started {
                        Some(started) => permit.record_timed(outcome, started),
                        None => permit.record(outcome),
                    }
                    result
                }
                Err(refused) => f(Err(refused)),
            };
        }
        let w = self.inner.word.load(Ordering::Acquire);
        if let Some(ticket) = Core::hot_ticket(w) {
            // As in `call_classified`: closed with nothing pending, no permit guard.
            return match f(Ok(false)) {
                Ok(v) => {
                    if self.inner.word.load(Ordering::Acquire) & Core::HOT_MASK != 0 {
                        self.record_ticket(ticket, Outcome::Success, clock.now());
                    }
                    Ok(v)
                }
                Err(e) => {
                    self.record_ticket(ticket, Outcome::Error(classify(&e)), clock.now());
                    Err(e)
                }
            };
        }
        match self.gate(w, clock) {
            Ok(ticket) => {
                let permit = Permit::new(self, clock, ticket);
                match f(Ok(ticket.probe)) {
                    Ok(v) => {
                        permit.record(Outcome::Success);
                        Ok(v)
                    }
                    Err(e) => {
                        permit.record(Outcome::Error(classify(&e)));
                        Err(e)
                    }
                }
            }
            Err(refused) => f(Err(refused)),
        }
    }

    // Cold: keeps the closed-state loop of a caller one straight block.
    #[cold]
    #[inline(never)]
    fn call_slow<T, E, R, C: Clock>(
        &self,
        clock: &C,
        ticket: Ticket,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
        inner: impl FnOnce(E) -> R,
    ) -> Result<T, R> {
        let permit = Permit::new(self, clock, ticket);
        match f() {
            Ok(v) => {
                permit.record(Outcome::Success);
                Ok(v)
            }
            Err(e) => {
                permit.record(Outcome::Error(classify(&e)));
                Err(inner(e))
            }
        }
    }

    /// Opens at `now` as a trip would, with no call involved (see [`Breaker::trip`](crate::Breaker::trip)
    /// for the rules). Lock-free, like every transition.
    pub fn trip(&self, why: Reason, now: Instant) {
        self.trip_for(why, crate::Duration::ZERO, now)
    }

    /// [`SharedBreaker::trip`], staying open at least `hold` (see
    /// [`Breaker::trip_for`](crate::Breaker::trip_for)).
    pub fn trip_for(&self, why: Reason, hold: crate::Duration, now: Instant) {
        self.update(&|b| b.trip(&self.inner.policy(), why, now, hold))
    }

    /// Opens until [`SharedBreaker::reset`], whatever the cooldown says.
    pub fn force_open(&self, now: Instant) {
        self.update(&|b| b.force_open(now))
    }

    /// Closes, with strikes, probe streak and backoff zeroed. Counters are kept.
    pub fn reset(&self, now: Instant) {
        self.update(&|b| b.reset(now))
    }

    /// Switches shadow mode on or off, at once for every caller, keeping the state and
    /// the counters: see [shadow mode](SharedBreaker#shadow-mode). Lock-free, like every
    /// transition (it is none: the observer is not told).
    pub fn set_shadow(&self, on: bool) {
        self.update(&|b| b.core.set_shadow(on))
    }

    /// Whether the breaker runs in [shadow mode](SharedBreaker#shadow-mode).
    pub fn is_shadow(&self) -> bool {
        self.load_core().shadow()
    }

    /// The state at `now` (a lapsed probe lease shows as open). Pure.
    pub fn state(&self, now: Instant) -> State {
        self.inner.state(now)
    }

    /// The phase at `now`. Pure.
    pub fn phase(&self, now: Instant) -> Phase {
        self.state(now).phase()
    }

    /// The counters this breaker keeps (see the type's documentation for the three it
    /// reports as zero unless its policy counts every call).
    ///
    /// `skips` is exact for one caller at a time. A refusal while cooling down or forced
    /// open is counted with a plain load and store, not a locked add, so that a refusal
    /// costs no more than a load of the state word and a clock read: two refusals at the
    /// same instant by two threads may count as one. By default the count is beside the
    /// state word; a [`Spread`] breaker counts in one of four slots (one cache line each)
    /// chosen by the caller's stack, so that threads refused at the same time usually write
    /// lines of their own (see [`crate::counts`]). Every other count is exact; a [`Lean`]
    /// breaker keeps the first five only.
    pub fn counters(&self) -> Counters {
        self.inner.counters()
    }

    /// What a windowed breaker's window holds at `now` (empty unless closed: the window is
    /// cleared on every transition); `None` for a policy of consecutive strikes. Pure.
    pub fn window_stats(&self, now: Instant) -> Option<WindowStats> {
        let core = self.load_core().settled(&self.inner.policy(), now);
        window::stats(&self.observer, &self.inner.policy(), core, now)
    }

    /// The policy: a `&Policy` for a policy that never changes, a copy
    /// ([`ReadPolicy`](crate::ReadPolicy)) for a [`LivePolicy`](crate::LivePolicy), as
    /// of now.
    pub fn policy(&self) -> P::Read<'_> {
        self.inner.policy()
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    pub(crate) fn load_core(&self) -> Core {
        self.inner.load_core()
    }

    /// The state word itself, for [`crate::word`]'s reads and compare-and-swaps.
    #[inline(always)]
    pub(crate) fn word_cell(&self) -> &AtomicU64 {
        &self.inner.word
    }

    /// Counts a step's events, as the update loop does.
    pub(crate) fn count_events(&self, events: &Events) {
        self.inner.count(events, self.inner.counting())
    }

    /// Whether this breaker counts every call (its closed word carries the count mark).
    pub(crate) fn counting(&self) -> bool {
        self.inner.counting()
    }

    pub(crate) fn store_core(&self, core: Core, counters: &Counters) {
        self.inner.store_core(core, counters)
    }

    /// Makes this breaker as good as new for another key of a keyed table, if its state
    /// word still is `expected` (closed with no strikes pending: the caller checked): one
    /// compare-and-swap to closed in the next generation, so that a permit granted before
    /// is stale; then the counters and the window are cleared. `false` if the word moved.
    pub(crate) fn recycle(&self, expected: u64) -> bool {
        let mut core = Core::unpack(expected);
        core.enter(Phase::Closed);
        core.set_step(0);
        core.anchor = Instant::ZERO;
        let next = core.pack_marked(self.inner.counting());
        if self
            .inner
            .word
            .compare_exchange(expected, next, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        for counter in self.inner.counts.counts() {
            counter.store(0, Ordering::Relaxed);
        }
        self.inner.counts.clear_fast_skips();
        if let Some(window) = window::of_store(&self.observer, &self.inner.policy) {
            window.clear(core.gen());
        }
        true
    }
}

/// Adds one to a counter with one `fetch_add` (a `lock xadd` on x86-64) instead of a
/// compare-and-swap loop. The caller whose add wrapped the counter puts it back at
/// `u32::MAX`, so it saturates; a reader may glimpse the wrapped value for that moment.
#[inline(always)]
fn bump(counter: &AtomicU32) {
    if counter.fetch_add(1, Ordering::Relaxed) == u32::MAX {
        counter.store(u32::MAX, Ordering::Relaxed);
    }
}

/// Leave to make one call through a [`SharedBreaker`]: a guard. Report the outcome with
/// [`Permit::record`] (or [`Permit::success`] / [`Permit::failure`]). Dropped unanswered
/// (a cancelled future, a panic, an early return), a probe permit counts as a failed probe
/// at that moment, so the breaker re-opens instead of wedging in half-open; any other
/// permit counts as neutral.
#[must_use = "report the call's outcome; dropping the permit counts a probe as failed"]
pub struct Permit<
    'a,
    C: Clock,
    O: ?Sized + Observer = (),
    P: PolicyStore = &'static Policy,
    S: CountStore = DefaultCounts,
> {
    breaker: &'a SharedBreaker<O, P, S>,
    clock: &'a C,
    ticket: Ticket,
    answered: bool,
    /// The in-flight slot its call holds ([`window::NO_SLOT`] for none).
    slot: u8,
}

impl<C: Clock, O: ?Sized + Observer, P: PolicyStore, S: CountStore> fmt::Debug for Permit<'_, C, O, P, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("probe", &self.ticket.probe)
            .field("gen", &self.ticket.gen)
            .finish()
    }
}

impl<'a, C: Clock, O: ?Sized + Observer, P: PolicyStore, S: CountStore> Permit<'a, C, O, P, S> {
    fn new(breaker: &'a SharedBreaker<O, P, S>, clock: &'a C, ticket: Ticket) -> Self {
        Permit {
            breaker,
            clock,
            ticket,
            answered: false,
            slot: window::NO_SLOT,
        }
    }

    /// Whether this call is the half-open probe.
    pub fn is_probe(&self) -> bool {
        self.ticket.probe
    }

    /// Whether the breaker has moved on since this permit was granted, so its outcome
    /// will be ignored (except a failure while open, which restarts the wait).
    pub fn is_stale(&self) -> bool {
        !self
            .breaker
            .load_core()
            .is_fresh(&self.breaker.policy(), self.ticket, self.clock.now())
    }

    /// Reports the call's outcome.
    // Inlined on hosted targets: out of line, the closed path of a caller holding a permit
    // (the router's turn) pays a call for it; on bare metal every copy costs flash.
    #[cfg_attr(not(target_os = "none"), inline(always))]
    pub fn record(mut self, outcome: Outcome) {
        if self.holds_slot() {
            return self.record_watched(outcome, None);
        }
        self.answered = true;
        self.breaker.report(self.ticket, outcome, self.clock);
        // Answered, and holding no slot: nothing is left for the drop to do, and a drop
        // that tests both again would be a call on the caller's closed path.
        core::mem::forget(self);
    }

    /// Reports the outcome of a call that started at `started` (a reading of the permit's
    /// clock): with a windowed policy's slow-call rule ([`Policy::with_slow_calls`]), a
    /// success that took longer than its duration counts as slow. [`Permit::record`]
    /// counts every success as not slow; [`SharedBreaker::call`] times its calls itself.
    pub fn record_timed(mut self, outcome: Outcome, started: Instant) {
        if self.holds_slot() {
            return self.record_watched(outcome, Some(started));
        }
        match window::of_store(&self.breaker.observer, &self.breaker.inner.policy) {
            Some(window) => {
                self.answered = true;
                let now = self.clock.now();
                self.breaker.record_windowed(
                    window,
                    self.ticket,
                    outcome,
                    Some(now.since(started)),
                    Some(now),
                    self.breaker.inner.counting(),
                    self.clock,
                );
            }
            None => self.record(outcome),
        }
    }

    /// Reports success.
    #[inline]
    pub fn success(self) {
        self.record(Outcome::Success)
    }

    /// Reports a failed (or neutral) call with its verdict.
    #[inline]
    pub fn failure(self, verdict: Verdict) {
        self.record(Outcome::Error(verdict))
    }
}

impl<C: Clock, O: ?Sized + Observer, P: PolicyStore, S: CountStore> Drop for Permit<'_, C, O, P, S> {
    #[cfg_attr(not(target_os = "none"), inline(always))]
    fn drop(&mut self) {
        if self.holds_slot() {
            self.drop_watched();
        }
        if !self.answered {
            self.breaker.abandon(self.ticket, self.clock);
        }
    }
}
