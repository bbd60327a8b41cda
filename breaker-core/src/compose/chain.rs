//! The fallback chain: a primary whose open breaker reroutes turns to the first healthy backup.
//!
//! loopctl's model breaker, for a radio with backup links, a sensor with a redundant twin,
//! or a model with cheaper stand-ins. The chain's three phases are its primary's breaker:
//!
//! | chain phase | primary's breaker | where a turn goes |
//! |---|---|---|
//! | [`ChainPhase::Primary`] | [`Phase::Closed`] | the primary |
//! | [`ChainPhase::Fallback`] | [`Phase::Open`] | the first backup that is not failed; none left: [`Route::Exhausted`] |
//! | [`ChainPhase::Recovering`] | [`Phase::HalfOpen`] | one probe at a time to the primary, every other turn to the backup |
//!
//! Every move between them is a transition of that one breaker, made by the state machine
//! every breaker runs ([`SharedBreaker`]); the chain adds only what happens beside it:
//! routing, each backup's budget of failed turns and manual disable, the sticky
//! [`fallback_activated`](FallbackChain::fallback_activated) flag, the
//! [`FallbackEvent`] with from/to, [`Route::Exhausted`], and clearing every backup's count
//! when the primary recovers. It keeps that bookkeeping in [`Backups`], which is the
//! primary breaker's [`Observer`]: it hears every transition, whoever made it (a turn, a
//! lapsed lease, [`reset`](SharedBreaker::reset) from a dashboard).
//!
//! The rows of loopctl's table hold under [`DEFAULT_CHAIN_POLICY`] (trip after 3 failed
//! turns, cooldown 60 s, 2 probe successes to recover, patient probation: in Recovering
//! a strike only resets the success streak, a trip verdict re-trips at once).
//!
//! ```
//! use breaker_core::{Backup, FallbackChain, ManualClock, Instant, Outcome, Route, DEFAULT_CHAIN_POLICY};
//!
//! static RADIO: FallbackChain<2> =
//!     FallbackChain::new(&DEFAULT_CHAIN_POLICY, "lora", [Backup::new("nb-iot"), Backup::new("satellite")]);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//!
//! // Three failed turns on the primary trip it: the next turn goes to the first backup.
//! for _ in 0..3 {
//!     let turn = RADIO.route(&CLOCK);
//!     assert_eq!(turn.route(), Route::Primary { probe: false });
//!     turn.record(Outcome::STRIKE);
//! }
//! assert!(RADIO.fallback_activated());
//! assert_eq!(RADIO.route(&CLOCK).route(), Route::Backup { index: 0, name: "nb-iot" });
//! ```
//!
//! # Concurrency
//!
//! Lock-free, like [`SharedBreaker`], and for the same reasons: no critical section is ever
//! held across a turn, interrupt handlers can route, and the primary's happy path (closed,
//! no strikes) is the breaker's own: one atomic load before the call and one after,
//! nothing written. Which turn is the Recovering probe is decided by the breaker's
//! compare-and-swap, so exactly one turn gets it (model-checked with loom, every
//! interleaving of 2 and 3 turns); the others see the slot taken and go to the active
//! backup. Each backup's count is one atomic word stamped with the *episode* (the number
//! of recoveries so far): a recovery clears every count at once by moving to the next
//! episode, and a backup failure reported from an earlier episode is ignored, so a count
//! can neither be lost to a racing failure nor survive a recovery. The bookkeeping follows
//! a transition a moment after it lands, in the caller that made it.

use core::cell::Cell;
use core::fmt;

use crate::atomic::{AtomicU32, Ordering};
use crate::{
    Classify, Clock, Counters, Duration, Instant, Observer, Outcome, Phase, Policy, Reason, RefusalReason, Refused,
    SharedBreaker, SharedPermit, State, Transition, Verdict,
};

/// loopctl's model breaker: trip after 3 consecutive failed turns (a trip verdict at once),
/// cooldown 60 s, 2 probe successes in a row to recover, patient probation (a probe's
/// strike only resets the success streak; a trip verdict such as a rate limit re-trips at
/// once). The probe lease is the cooldown.
pub const DEFAULT_CHAIN_POLICY: Policy = Policy::new(3, Duration::from_secs(60))
    .with_probes_to_close(2)
    .with_patient_probation();

/// A backup's budget when not given: 2 failed turns.
pub const DEFAULT_BUDGET: u32 = 2;

/// The largest budget a backup may have.
pub const MAX_BUDGET: u32 = 255;

/// One entry of a chain: a name and a budget of failed turns.
///
/// The entry is *failed* once its failed turns in Fallback reach the budget, or while it
/// is disabled by hand; a recovered primary clears every entry's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Backup {
    name: &'static str,
    budget: u8,
}

/// Why a backup's budget was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BudgetError;

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a backup's budget must be between 1 and 255 failed turns")
    }
}

impl core::error::Error for BudgetError {}

impl Backup {
    /// A backup named `name`, with the default budget of [`DEFAULT_BUDGET`] failed turns.
    pub const fn new(name: &'static str) -> Backup {
        Backup {
            name,
            budget: DEFAULT_BUDGET as u8,
        }
    }

    /// The same backup with a budget of `failed_turns`.
    ///
    /// # Panics
    /// If `failed_turns` is 0 or above [`MAX_BUDGET`] (a compile error in a `const`).
    pub const fn with_budget(self, failed_turns: u32) -> Backup {
        match self.try_with_budget(failed_turns) {
            Ok(b) => b,
            Err(_) => panic!("a backup's budget must be between 1 and 255 failed turns"),
        }
    }

    /// [`Backup::with_budget`] for values known only at run time.
    pub const fn try_with_budget(mut self, failed_turns: u32) -> Result<Backup, BudgetError> {
        if failed_turns == 0 || failed_turns > MAX_BUDGET {
            return Err(BudgetError);
        }
        self.budget = failed_turns as u8;
        Ok(self)
    }

    /// The name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Failed turns that spend it.
    pub const fn budget(&self) -> u32 {
        self.budget as u32
    }
}

/// The chain's phase: its primary breaker's, in the chain's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ChainPhase {
    /// Turns go to the primary (its breaker is closed).
    Primary,
    /// The primary tripped: turns go to the first backup not failed (its breaker is open).
    Fallback,
    /// The cooldown is over: one probe at a time goes to the primary, other turns to the
    /// backup (its breaker is half-open).
    Recovering,
}

impl ChainPhase {
    /// The chain phase of a primary breaker in `phase`.
    pub const fn of(phase: Phase) -> ChainPhase {
        match phase {
            Phase::Closed => ChainPhase::Primary,
            Phase::Open => ChainPhase::Fallback,
            Phase::HalfOpen => ChainPhase::Recovering,
        }
    }

    /// `"primary"`, `"fallback"` or `"recovering"`.
    pub const fn name(self) -> &'static str {
        match self {
            ChainPhase::Primary => "primary",
            ChainPhase::Fallback => "fallback",
            ChainPhase::Recovering => "recovering",
        }
    }
}

impl fmt::Display for ChainPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where one turn goes: the chain's answer, typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Route {
    /// To the primary. `probe`: this turn is the Recovering probe. A chain with no backups
    /// serves the primary in every phase (its trip is bookkeeping); such a turn is not a
    /// probe and its outcome is not reported to the breaker.
    Primary {
        /// This turn is the one Recovering probe.
        probe: bool,
    },
    /// To the backup at `index` (0 is the first), the first one not failed.
    Backup {
        /// The backup's place in the chain.
        index: usize,
        /// The backup's name.
        name: &'static str,
    },
    /// FallbackExhausted: the chain is in Fallback, every backup is failed, and there is a
    /// chain (a chain with no backups never answers this). The turn fails honestly rather
    /// than retreat to the known-bad primary.
    Exhausted {
        /// The cooldown left before the primary takes a probe (`None`: forced open, until
        /// reset).
        retry_in: Option<Duration>,
    },
    /// Recovering, another turn holds the one probe of the primary, and every backup is
    /// failed: nowhere to go for this turn. Not FallbackExhausted (the primary is on
    /// probation, not known bad); come back when the probe has answered.
    Probing,
}

impl Route {
    /// Whether the turn goes somewhere (to the primary or a backup).
    pub const fn is_routed(&self) -> bool {
        matches!(self, Route::Primary { .. } | Route::Backup { .. })
    }
}

/// Told of what a chain does: its primary's transitions, fallbacks, spent backups. Every
/// method does nothing by default; `()` is the observer that does nothing and costs nothing.
pub trait ChainObserver {
    /// A transition of the primary's breaker (the chain's phase changes with it).
    fn on_transition(&self, transition: &Transition) {
        let _ = transition;
    }

    /// Turns left the primary for the chain: a trip from Primary or Recovering.
    fn on_fallback(&self, event: &FallbackEvent) {
        let _ = event;
    }

    /// A backup's failed turns reached its budget: routing advances on the next turn.
    fn on_backup_spent(&self, event: &BackupSpent) {
        let _ = event;
    }
}

impl ChainObserver for () {}

/// Turns left the primary: loopctl's `on_fallback`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FallbackEvent {
    /// The primary's name.
    pub from: &'static str,
    /// Where turns go now: the first backup not failed; [`Route::Exhausted`] if every
    /// backup is failed; [`Route::Primary`] for a chain with no backups.
    pub to: Route,
    /// Why the primary's breaker opened.
    pub why: Reason,
    /// When.
    pub at: Instant,
}

/// A backup's failed turns reached its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BackupSpent {
    /// Its place in the chain.
    pub index: usize,
    /// Its name.
    pub name: &'static str,
    /// When its last failed turn was reported.
    pub at: Instant,
}

// One backup's word: failed turns, the disabled flag, and the episode the count belongs to.
const ATTEMPTS: u32 = 0xFF;
const DISABLED: u32 = 1 << 8;
const STAMP_AT: u32 = 9;
/// Episodes are stamped in 23 bits: a count untouched for exactly 2^23 recoveries would
/// pass for current.
const STAMP_MASK: u32 = (1 << (32 - STAMP_AT)) - 1;
// The chain's word: the sticky "ever tripped" flag and the episode (recoveries so far).
const ACTIVATED: u32 = 1;
const EPISODE_AT: u32 = 1;

const fn stamp(episode: u32) -> u32 {
    episode & STAMP_MASK
}

/// Failed turns counted in `w` during `episode` (zero if counted in another).
const fn attempts_in(w: u32, episode: u32) -> u32 {
    if w >> STAMP_AT == stamp(episode) {
        w & ATTEMPTS
    } else {
        0
    }
}

/// A chain's backups and its bookkeeping beside the primary's breaker: each backup's
/// failed turns and disabled flag, the sticky "ever tripped" flag, the episode. It is the
/// primary breaker's [`Observer`], so it hears every transition of it.
pub struct Backups<const N: usize, O: ChainObserver = ()> {
    primary: &'static str,
    backups: [Backup; N],
    words: [AtomicU32; N],
    turns: [AtomicU32; N],
    state: AtomicU32,
    exhausted: AtomicU32,
    observer: O,
}

impl<const N: usize, O: ChainObserver> fmt::Debug for Backups<N, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backups")
            .field("primary", &self.primary)
            .field("backups", &self.reports())
            .field("fallback_activated", &self.activated())
            .finish()
    }
}

impl<const N: usize, O: ChainObserver> Backups<N, O> {
    fn episode(&self) -> u32 {
        self.state.load(Ordering::Acquire) >> EPISODE_AT
    }

    fn activated(&self) -> bool {
        self.state.load(Ordering::Acquire) & ACTIVATED != 0
    }

    /// Whether backup `i` is failed in `episode`.
    fn failed(&self, i: usize, episode: u32) -> bool {
        match (self.words.get(i), self.backups.get(i)) {
            (Some(word), Some(backup)) => {
                let w = word.load(Ordering::Acquire);
                w & DISABLED != 0 || attempts_in(w, episode) >= backup.budget()
            }
            _ => true,
        }
    }

    /// The first backup not failed in `episode`.
    fn active(&self, episode: u32) -> Option<usize> {
        (0..N).find(|&i| !self.failed(i, episode))
    }

    /// Where a turn goes when the primary's breaker refuses it for `reason`.
    fn route_around(&self, episode: u32, reason: RefusalReason, retry_in: Option<Duration>) -> Route {
        match self.active(episode) {
            Some(index) => Route::Backup {
                index,
                name: self.name(index),
            },
            None if N == 0 => Route::Primary { probe: false },
            None if reason == RefusalReason::Probing => Route::Probing,
            None => Route::Exhausted { retry_in },
        }
    }

    fn name(&self, i: usize) -> &'static str {
        self.backups.get(i).map_or("", |b| b.name)
    }

    /// Counts a failed turn on backup `i`, routed in `episode`; a turn from an earlier
    /// episode (the primary recovered since) counts for nothing.
    fn fail(&self, i: usize, episode: u32, now: Instant) {
        let (Some(word), Some(backup)) = (self.words.get(i), self.backups.get(i)) else {
            return;
        };
        let mut w = word.load(Ordering::Acquire);
        loop {
            if self.episode() != episode {
                return;
            }
            let attempts = attempts_in(w, episode);
            let next = attempts.saturating_add(1).min(ATTEMPTS);
            let nw = next | (w & DISABLED) | stamp(episode) << STAMP_AT;
            match word.compare_exchange_weak(w, nw, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    if next == backup.budget() {
                        self.observer.on_backup_spent(&BackupSpent {
                            index: i,
                            name: backup.name,
                            at: now,
                        });
                    }
                    return;
                }
                Err(actual) => w = actual,
            }
        }
    }

    fn set_disabled(&self, i: usize, disabled: bool) -> bool {
        let Some(word) = self.words.get(i) else {
            return false;
        };
        if disabled {
            word.fetch_or(DISABLED, Ordering::AcqRel);
        } else {
            word.fetch_and(!DISABLED, Ordering::AcqRel);
        }
        true
    }

    fn report(&self, i: usize, episode: u32) -> BackupReport {
        let backup = self.backups.get(i).copied().unwrap_or(Backup::new(""));
        let w = self.words.get(i).map_or(0, |w| w.load(Ordering::Acquire));
        let attempts = attempts_in(w, episode);
        BackupReport {
            index: i,
            name: backup.name,
            budget: backup.budget(),
            attempts,
            disabled: w & DISABLED != 0,
            failed: w & DISABLED != 0 || attempts >= backup.budget(),
            turns: self.turns.get(i).map_or(0, |t| t.load(Ordering::Relaxed)),
        }
    }

    fn reports(&self) -> [BackupReport; N] {
        let episode = self.episode();
        core::array::from_fn(|i| self.report(i, episode))
    }
}

impl<const N: usize, O: ChainObserver> Observer for Backups<N, O> {
    fn on_transition(&self, t: &Transition) {
        match t.to {
            // Recovered (or reset): every backup gets a fresh budget, all at once.
            Phase::Closed => {
                self.state.fetch_add(1 << EPISODE_AT, Ordering::AcqRel);
            }
            Phase::Open => {
                self.state.fetch_or(ACTIVATED, Ordering::AcqRel);
            }
            Phase::HalfOpen => {}
        }
        self.observer.on_transition(t);
        if t.to == Phase::Open && t.from != Phase::Open {
            let forced = t.why == Reason::ForcedOpen;
            let to = self.route_around(
                self.episode(),
                if forced {
                    RefusalReason::ForcedOpen
                } else {
                    RefusalReason::Open
                },
                (!forced).then_some(t.cooldown),
            );
            self.observer.on_fallback(&FallbackEvent {
                from: self.primary,
                to,
                why: t.why,
                at: t.at,
            });
        }
    }
}

/// One backup at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BackupReport {
    /// Its place in the chain.
    pub index: usize,
    /// Its name.
    pub name: &'static str,
    /// Failed turns that spend it.
    pub budget: u32,
    /// Failed turns since the primary last recovered.
    pub attempts: u32,
    /// Disabled by hand.
    pub disabled: bool,
    /// Disabled, or its attempts reached its budget: routing skips it.
    pub failed: bool,
    /// Turns routed to it, ever (saturating).
    pub turns: u32,
}

/// A chain at one instant: what a dashboard shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ChainReport<const N: usize> {
    /// The primary's name.
    pub primary: &'static str,
    /// The instant everything else was read at.
    pub now: Instant,
    /// The chain's phase.
    pub phase: ChainPhase,
    /// The primary breaker's state.
    pub state: State,
    /// Where a turn would go now (the pure oracle: [`FallbackChain::would_route`]).
    pub route: Route,
    /// Whether the primary ever tripped (sticky).
    pub fallback_activated: bool,
    /// Turns answered [`Route::Exhausted`], ever (saturating).
    pub exhausted: u32,
    /// The primary breaker's counters (its skips are the turns routed around it).
    pub counters: Counters,
    /// Each backup.
    pub backups: [BackupReport; N],
}

/// A backup index past the end of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NoSuchBackup;

impl fmt::Display for NoSuchBackup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no backup at this place in the fallback chain")
    }
}

impl core::error::Error for NoSuchBackup {}

/// The result of a turn made with [`FallbackChain::call`]: no route, or the call's own error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ChainError<E> {
    /// FallbackExhausted ([`Route::Exhausted`]): nothing was called.
    Exhausted {
        /// The cooldown left before the primary takes a probe (`None`: forced open).
        retry_in: Option<Duration>,
    },
    /// [`Route::Probing`]: nothing was called.
    Probing,
    /// The turn was made and failed.
    Inner(E),
}

impl<E> ChainError<E> {
    /// The call's own error, if a call was made.
    pub fn into_inner(self) -> Option<E> {
        match self {
            ChainError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for ChainError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainError::Exhausted { .. } => {
                f.write_str("fallback chain exhausted: every backup has failed and the primary is cooling down")
            }
            ChainError::Probing => {
                f.write_str("fallback chain busy: the primary is on probation and every backup has failed")
            }
            ChainError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for ChainError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ChainError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

/// A primary and a fixed chain of `N` backups: a breaker whose open reroutes instead of
/// refusing. See the [module documentation](crate::chain) for the table it follows.
///
/// It lives in a `static` and is shared by every caller; `N` is the number of backups
/// (`0`: no chain; the primary still trips, as bookkeeping, and keeps being served). The
/// primary's breaker is [`FallbackChain::breaker`]: list it in the registry with
/// [`register!`](crate::register), which takes a chain as it takes a breaker.
///
/// ```
/// use breaker_core::{Backup, ChainError, Classify, FallbackChain, Route, StdClock, DEFAULT_CHAIN_POLICY};
///
/// #[derive(Debug)]
/// struct Timeout;
/// impl Classify for Timeout {}
///
/// static MODEL: FallbackChain<2> = FallbackChain::new(
///     &DEFAULT_CHAIN_POLICY,
///     "model-large",
///     [Backup::new("model-medium"), Backup::new("model-small").with_budget(3)],
/// );
/// breaker_core::register!(MODEL, "model", StdClock);
///
/// fn ask(prompt: &str) -> Result<String, ChainError<Timeout>> {
///     MODEL.call(&StdClock, |route| match route {
///         Route::Primary { .. } => Ok(format!("large: {prompt}")),
///         Route::Backup { name, .. } => Ok(format!("{name}: {prompt}")),
///         _ => unreachable!("only routed turns are called"),
///     })
/// }
/// assert_eq!(ask("hi").unwrap(), "large: hi");
/// ```
pub struct FallbackChain<const N: usize, O: ChainObserver = (), P: crate::PolicyStore = &'static Policy> {
    breaker: SharedBreaker<Backups<N, O>, P>,
}

impl<const N: usize, O: ChainObserver, P: crate::PolicyStore> fmt::Debug for FallbackChain<N, O, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FallbackChain")
            .field("breaker", &self.breaker)
            .field("backups", self.book())
            .finish()
    }
}

macro_rules! chain_init {
    ($make:path, $policy:expr, $primary:expr, $backups:expr, $observer:expr, $zeroes:expr) => {
        FallbackChain {
            breaker: $make(
                $policy,
                Backups {
                    primary: $primary,
                    backups: $backups,
                    words: $zeroes,
                    turns: $zeroes,
                    state: AtomicU32::new(0),
                    exhausted: AtomicU32::new(0),
                    observer: $observer,
                },
            ),
        }
    };
}

impl<const N: usize> FallbackChain<N, ()> {
    /// A chain in Primary: `primary`'s breaker follows `policy` (usually
    /// [`DEFAULT_CHAIN_POLICY`]); `backups` in the order routing tries them.
    #[cfg(not(loom))]
    pub const fn new(policy: &'static Policy, primary: &'static str, backups: [Backup; N]) -> Self {
        Self::with_observer(policy, primary, backups, ())
    }

    /// A chain in Primary (not `const` under loom).
    #[cfg(loom)]
    pub fn new(policy: &'static Policy, primary: &'static str, backups: [Backup; N]) -> Self {
        Self::with_observer(policy, primary, backups, ())
    }
}

impl<const N: usize, P: crate::PolicyStore> FallbackChain<N, (), P> {
    /// A chain in Primary whose primary's breaker holds its policy as `P`: the [`Policy`]
    /// itself (read from a configuration file at start-up), an `Arc<Policy>`, a `&'a
    /// Policy`. Not `const`: for a chain built at run time, owned by the program (in an
    /// `Arc` to share it between threads).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_core::{Backup, Clock, Duration, FallbackChain, Instant, ManualClock, Policy, Route};
    ///
    /// let policy = Policy::try_new(2, Duration::from_secs(10)).unwrap(); // from a file
    /// let chain = Arc::new(FallbackChain::with_policy(policy, "model-large", [Backup::new("model-small")]));
    /// let clock = ManualClock::new(Instant::ZERO);
    /// assert_eq!(chain.would_route(clock.now()), Route::Primary { probe: false });
    /// ```
    ///
    /// # Panics
    /// If the policy is windowed: see [`FallbackChain::with_policy_and_observer`].
    pub fn with_policy(policy: P, primary: &'static str, backups: [Backup; N]) -> Self {
        FallbackChain::with_policy_and_observer(policy, primary, backups, ())
    }
}

impl<const N: usize, O: ChainObserver, P: crate::PolicyStore> FallbackChain<N, O, P> {
    /// [`FallbackChain::with_policy`] with an observer told what the chain does.
    ///
    /// # Panics
    /// If the policy is windowed ([`Policy::failure_rate`]): the primary's breaker keeps
    /// consecutive strikes (its observer is the chain's routing book, which holds no
    /// window).
    pub fn with_policy_and_observer(policy: P, primary: &'static str, backups: [Backup; N], observer: O) -> Self {
        chain_init!(
            SharedBreaker::with_policy_and_observer,
            policy,
            primary,
            backups,
            observer,
            core::array::from_fn(|_| AtomicU32::new(0))
        )
    }
}

impl<const N: usize, O: ChainObserver> FallbackChain<N, O> {
    /// A chain that tells `observer` what it does.
    #[cfg(not(loom))]
    pub const fn with_observer(
        policy: &'static Policy,
        primary: &'static str,
        backups: [Backup; N],
        observer: O,
    ) -> Self {
        chain_init!(
            SharedBreaker::with_observer,
            policy,
            primary,
            backups,
            observer,
            [const { AtomicU32::new(0) }; N]
        )
    }

    /// A chain that tells `observer` what it does (not `const` under loom).
    #[cfg(loom)]
    pub fn with_observer(policy: &'static Policy, primary: &'static str, backups: [Backup; N], observer: O) -> Self {
        Self::with_policy_and_observer(policy, primary, backups, observer)
    }
}

impl<const N: usize, O: ChainObserver, P: crate::PolicyStore> FallbackChain<N, O, P> {
    fn book(&self) -> &Backups<N, O> {
        self.breaker.observer()
    }

    /// Routes one turn: the mutating gate. In Recovering, the one turn that takes the
    /// probe slot goes to the primary; every other turn goes to the first backup not
    /// failed. Report the turn's outcome on the returned [`Turn`].
    pub fn route<'a, C: Clock>(&'a self, clock: &'a C) -> Turn<'a, C, N, O, P> {
        let (route, permit, episode) = match self.breaker.try_acquire(clock) {
            Ok(permit) => (
                Route::Primary {
                    probe: permit.is_probe(),
                },
                Some(permit),
                0,
            ),
            Err(refused) => {
                let (route, episode) = self.reroute(refused);
                (route, None, episode)
            }
        };
        Turn {
            chain: self,
            clock,
            route,
            permit,
            episode,
        }
    }

    /// Where a turn the primary's breaker refused goes, counted; and the episode it is in.
    fn reroute(&self, Refused { reason, retry_in }: Refused) -> (Route, u32) {
        let book = self.book();
        let episode = book.episode();
        let route = book.route_around(episode, reason, retry_in);
        match route {
            Route::Backup { index, .. } => {
                if let Some(turns) = book.turns.get(index) {
                    bump(turns);
                }
            }
            Route::Exhausted { .. } => bump(&book.exhausted),
            Route::Primary { .. } | Route::Probing => {}
        }
        (route, episode)
    }

    /// The pure oracle: where would a turn go at `now`? Changes nothing (never takes the
    /// probe) and agrees with [`FallbackChain::route`] at every instant.
    pub fn would_route(&self, now: Instant) -> Route {
        let state = self.breaker.state(now);
        if state.allows_call() {
            return Route::Primary {
                probe: state.phase() != Phase::Closed,
            };
        }
        let (reason, retry_in) = match state {
            State::Open { forced: true, .. } => (RefusalReason::ForcedOpen, None),
            State::Open { remaining, .. } => (RefusalReason::Open, Some(remaining)),
            _ => (RefusalReason::Probing, None),
        };
        let book = self.book();
        book.route_around(book.episode(), reason, retry_in)
    }

    /// Routes a turn and makes it: `f` gets the route ([`Route::Primary`] or
    /// [`Route::Backup`]) and calls that link; its error's [`Classify`] verdict is the
    /// turn's outcome. Exhausted or probing: `f` is not called.
    pub fn call<T, E: Classify>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce(Route) -> Result<T, E>,
    ) -> Result<T, ChainError<E>> {
        self.call_classified(clock, f, |e| e.verdict())
    }

    /// [`FallbackChain::call`] with the verdict given by `classify`.
    ///
    /// A turn to the primary takes the primary breaker's own path
    /// ([`SharedBreaker::call_or_else`]): closed with no strikes pending, one atomic load
    /// before the call and one after, no clock read, nothing written.
    pub fn call_classified<T, E>(
        &self,
        clock: &impl Clock,
        f: impl FnOnce(Route) -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, ChainError<E>> {
        // Used by one branch or the other, never both.
        let classify = Cell::new(Some(classify));
        let verdict = |e: &E| classify.take().map_or(Verdict::Strike, |c| c(e));
        self.breaker.call_or_else(
            clock,
            |admitted| match admitted {
                Ok(probe) => f(Route::Primary { probe }).map_err(ChainError::Inner),
                Err(refused) => {
                    let (route, episode) = self.reroute(refused);
                    match route {
                        Route::Exhausted { retry_in } => Err(ChainError::Exhausted { retry_in }),
                        Route::Probing => Err(ChainError::Probing),
                        // A chain with no backups serving its tripped primary: not reported.
                        Route::Primary { .. } => f(route).map_err(ChainError::Inner),
                        Route::Backup { index, .. } => f(route).map_err(|e| {
                            if verdict(&e) != Verdict::Neutral {
                                self.book().fail(index, episode, clock.now());
                            }
                            ChainError::Inner(e)
                        }),
                    }
                }
            },
            |e| match e {
                ChainError::Inner(e) => verdict(e),
                _ => Verdict::Neutral,
            },
        )
    }

    /// The phase at `now`. Pure.
    pub fn phase(&self, now: Instant) -> ChainPhase {
        ChainPhase::of(self.breaker.phase(now))
    }

    /// Whether the primary ever tripped: set by the first trip, never cleared (not by a
    /// recovery, not by a reset).
    pub fn fallback_activated(&self) -> bool {
        self.book().activated()
    }

    /// The first backup not failed, which a turn rerouted now would go to.
    pub fn active(&self) -> Option<usize> {
        let book = self.book();
        book.active(book.episode())
    }

    /// Disables backup `index` by hand: routing skips it until [`FallbackChain::enable`],
    /// whatever its budget and through recoveries.
    pub fn disable(&self, index: usize) -> Result<(), NoSuchBackup> {
        self.book().set_disabled(index, true).then_some(()).ok_or(NoSuchBackup)
    }

    /// Enables backup `index` again (its count of failed turns is kept).
    pub fn enable(&self, index: usize) -> Result<(), NoSuchBackup> {
        self.book().set_disabled(index, false).then_some(()).ok_or(NoSuchBackup)
    }

    /// The place of the backup named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.book().backups.iter().position(|b| b.name == name)
    }

    /// Backup `index` as it is now.
    pub fn backup(&self, index: usize) -> Option<BackupReport> {
        let book = self.book();
        (index < N).then(|| book.report(index, book.episode()))
    }

    /// The primary's name.
    pub fn primary(&self) -> &'static str {
        self.book().primary
    }

    /// The backups, in routing order.
    pub fn backups(&self) -> &[Backup; N] {
        &self.book().backups
    }

    /// The primary's breaker: its state is the chain's phase. Everything a
    /// [`SharedBreaker`] does: counters, [`reset`](SharedBreaker::reset) (a recovery by
    /// hand: every backup's count is cleared), [`force_open`](SharedBreaker::force_open)
    /// (every turn to the backups until reset), snapshots (of the primary's breaker only:
    /// the backups' counts and the sticky flag start afresh after a restore).
    pub fn breaker(&self) -> &SharedBreaker<Backups<N, O>, P> {
        &self.breaker
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.book().observer
    }

    /// Everything at `now`.
    pub fn report(&self, now: Instant) -> ChainReport<N> {
        let state = self.breaker.state(now);
        let book = self.book();
        ChainReport {
            primary: book.primary,
            now,
            phase: ChainPhase::of(state.phase()),
            state,
            route: self.would_route(now),
            fallback_activated: book.activated(),
            exhausted: book.exhausted.load(Ordering::Relaxed),
            counters: self.breaker.counters(),
            backups: book.reports(),
        }
    }
}

impl<const N: usize, O: ChainObserver + Sync + 'static> FallbackChain<N, O> {
    /// The primary's breaker as the registry holds it; what [`register!`](crate::register)
    /// lists. Not public API.
    #[doc(hidden)]
    pub const fn __registry_breaker(&'static self) -> &'static crate::registry::AnyBreaker {
        &self.breaker
    }
}

/// One routed turn of a [`FallbackChain`]: report its outcome with [`Turn::record`] (or
/// [`Turn::success`] / [`Turn::failure`]).
///
/// Dropped unanswered (a cancelled future, an early return), a primary turn follows the
/// breaker's permit rule (a probe counts as failed at once, any other turn as neutral)
/// and a backup turn counts as neutral.
#[must_use = "report the turn's outcome; dropping a probe's turn counts it as failed"]
pub struct Turn<'a, C: Clock, const N: usize, O: ChainObserver = (), P: crate::PolicyStore = &'static Policy> {
    chain: &'a FallbackChain<N, O, P>,
    clock: &'a C,
    route: Route,
    permit: Option<SharedPermit<'a, C, Backups<N, O>, P>>,
    episode: u32,
}

impl<C: Clock, const N: usize, O: ChainObserver, P: crate::PolicyStore> fmt::Debug for Turn<'_, C, N, O, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn").field("route", &self.route).finish()
    }
}

impl<C: Clock, const N: usize, O: ChainObserver, P: crate::PolicyStore> Turn<'_, C, N, O, P> {
    /// Where this turn goes.
    pub fn route(&self) -> Route {
        self.route
    }

    /// Reports the turn's outcome: to the primary's breaker for a primary turn; for a
    /// backup turn, a strike or trip verdict is one failed turn against its budget. A
    /// turn that was not routed ([`Route::Exhausted`], [`Route::Probing`]) and a primary
    /// turn of a chain with no backups while tripped report nothing.
    pub fn record(self, outcome: Outcome) {
        if let Some(permit) = self.permit {
            permit.record(outcome);
        } else if let (Route::Backup { index, .. }, Outcome::Error(v)) = (self.route, outcome) {
            if v != Verdict::Neutral {
                self.chain.book().fail(index, self.episode, self.clock.now());
            }
        }
    }

    /// Reports success.
    pub fn success(self) {
        self.record(Outcome::Success)
    }

    /// Reports a failed (or neutral) turn with its verdict.
    pub fn failure(self, verdict: Verdict) {
        self.record(Outcome::Error(verdict))
    }
}

/// Adds one, saturating at `u32::MAX`.
fn bump(counter: &AtomicU32) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
}
