//! The health router: asked for a tool, it calls the tool if its breaker would allow a call,
//! else the tool's first healthy substitute, else refuses softly.
//!
//! loopctl's `HealthRouter`, over breakers the program already has: `static`
//! [`SharedBreaker`](crate::SharedBreaker)s ([`Tool::new`]), [`registry`]
//! entries by name ([`Tool::registered`]: a `#[circuit_breaker]` function's breaker, or a
//! static listed with [`register!`](crate::register)), or any shared breaker built at
//! run time and owned by the program ([`Tool::shared`]: an `Arc<SharedBreaker>` with an
//! owned policy, a `RedisBreaker`). The table is fixed: `N` rows, each a tool and its
//! substitutes in order of preference, in a `static` or borrowing the program's breakers.
//!
//! A `#[circuit_breaker]` function found by name gates itself: [`HealthRouter::call`]
//! chooses it by its oracle and calls it without taking a permit, so its own gate grants
//! its probe and its own breaker counts each outcome once ([`Tool::gates_itself`]).
//!
//! It chooses with each breaker's **pure oracle** (`would_allow`), which changes nothing,
//! so it never takes the probe of a tool it does not call; then it calls the chosen tool
//! through that tool's **gate** (`try_acquire`). A gate refusing what its oracle allowed an
//! instant earlier (another caller took the probe in between) costs nothing: the router
//! moves on to the next candidate. When no candidate is healthy the answer is a soft,
//! typed refusal that prints as `tool temporarily unavailable: circuit breaker open`.
//! Every substitution and refusal is counted per row ([`HealthRouter::report`]).
//!
//! Visibility: the router owns no breaker. Its tools' breakers are what a dashboard reads
//! in the registry (list hand-built statics with [`register!`](crate::register)); the
//! router's own figures are in [`HealthRouter::report`].
//!
//! ```
//! use breaker_core::{CallError, Classify, Duration, HealthRouter, Instant, ManualClock, Policy, Row, RouterError, SharedBreaker, Tool};
//!
//! #[derive(Debug)]
//! struct Down;
//! impl Classify for Down {}
//!
//! static POLICY: Policy = Policy::new(1, Duration::from_secs(30));
//! static SEARCH: SharedBreaker = SharedBreaker::new(&POLICY);
//! static MIRROR: SharedBreaker = SharedBreaker::new(&POLICY);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//! static ROUTER: HealthRouter<1> = HealthRouter::new([Row::new(
//!     Tool::new("search", &SEARCH, &CLOCK),
//!     &[Tool::new("search-mirror", &MIRROR, &CLOCK)],
//! )]);
//!
//! // "search" fails once and trips (trip = 1): the router substitutes the mirror.
//! assert!(matches!(ROUTER.call("search", |_| Err::<(), _>(Down)), Err(RouterError::Inner(Down))));
//! let served_by = ROUTER.call("search", |tool| Ok::<_, Down>(tool.name())).unwrap();
//! assert_eq!(served_by, "search-mirror");
//! assert_eq!(ROUTER.report()[0].substitutions, 1);
//! ```

use core::convert::Infallible;
use core::fmt;

use crate::atomic::{AtomicU32, Ordering};
use crate::registry::{self, AnyBreaker, LookupError};
use crate::{CircuitBreaker, Classify, Clock, Instant, Outcome, Refused, Verdict};

/// One tool the router can call: a name and a breaker (with the clock its callers read).
///
/// The breaker is borrowed for `'a`: a `static` ([`Tool::new`], [`Tool::registered`]), or
/// breakers a program built at start-up and owns, in an `Arc` or a `Vec`
/// ([`Tool::shared`]), with the router living no longer than they do.
#[derive(Clone, Copy)]
pub struct Tool<'a> {
    name: &'static str,
    // Where the breaker is, without a tag to decode on each turn: a `static` breaker
    // (called directly, the fast path), else any shared breaker behind `dyn`, else (both
    // `None`) the registry entry named `name`.
    breaker: Option<&'static AnyBreaker>,
    gate: Option<&'a dyn ToolGate>,
    // The clock of `breaker` or `gate`; unused for a registry name (its entry names one).
    clock: &'a (dyn Clock + Sync),
}

/// A breaker a router tool can go through, behind `dyn`: every shared breaker kind whose
/// reference is a [`CircuitBreaker`] (a [`SharedBreaker`](crate::SharedBreaker) with any
/// observer and policy storage, windowed or not; a registry entry;
/// `breaker_redis::RedisBreaker`). Implemented for them all; not meant to be implemented
/// by hand.
pub trait ToolGate: Sync {
    /// The pure oracle at `clock`'s now (kinds with a clock of their own read theirs).
    fn would_allow_at(&self, clock: &dyn Clock) -> bool;
    /// Whether the breaker's own function passes every call through its gate
    /// ([`CircuitBreaker::gates_itself`]).
    fn self_gating(&self) -> bool;
    /// Runs `call` through the gate, reporting the outcome it returns; `Err` if the gate
    /// refused (and `call` was not run).
    fn through(&self, clock: &dyn Clock, call: &mut dyn FnMut() -> Outcome) -> Result<(), Refused>;
}

impl<T: ?Sized + Sync> ToolGate for T
where
    for<'x> &'x T: CircuitBreaker,
{
    fn would_allow_at(&self, clock: &dyn Clock) -> bool {
        CircuitBreaker::would_allow(&self, &clock)
    }
    fn self_gating(&self) -> bool {
        CircuitBreaker::gates_itself(&self)
    }
    fn through(&self, clock: &dyn Clock, call: &mut dyn FnMut() -> Outcome) -> Result<(), Refused> {
        let mut me = self;
        let attempt = me.attempt(&clock)?;
        attempt.record(call());
        Ok(())
    }
}

impl fmt::Debug for Tool<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match (self.breaker, self.gate) {
            (Some(_), _) => "static",
            (None, Some(_)) => "borrowed",
            (None, None) => "registry",
        };
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("source", &source)
            .finish()
    }
}

/// A tool's breaker, resolved.
#[derive(Clone, Copy)]
enum Resolved<'a> {
    Any(&'static AnyBreaker, &'a (dyn Clock + Sync)),
    Gate(&'a dyn ToolGate, &'a (dyn Clock + Sync)),
}

impl Resolved<'_> {
    fn would_allow(self) -> bool {
        match self {
            Resolved::Any(b, clock) => b.would_allow(clock.now()),
            Resolved::Gate(g, clock) => g.would_allow_at(&clock),
        }
    }
}

impl Tool<'static> {
    /// A tool guarded by `breaker` (any `static` [`SharedBreaker`](crate::SharedBreaker),
    /// whatever its observer), whose callers read `clock`.
    pub const fn new(
        name: &'static str,
        breaker: &'static AnyBreaker,
        clock: &'static (dyn Clock + Sync),
    ) -> Tool<'static> {
        Tool {
            name,
            breaker: Some(breaker),
            gate: None,
            clock,
        }
    }

    /// The tool whose breaker is registered as `name`, with the clock its entry names:
    /// looked up at each use. A name that is not registered, or registered twice, makes
    /// the tool unavailable; [`HealthRouter::check`] finds such names at start-up.
    pub const fn registered(name: &'static str) -> Tool<'static> {
        Tool {
            name,
            breaker: None,
            gate: None,
            clock: &Instant::ZERO,
        }
    }
}

impl<'a> Tool<'a> {
    /// A tool guarded by any shared breaker the program owns (see [`ToolGate`]): a
    /// `SharedBreaker` with an owned policy in an `Arc` (pass `&*arc`), a windowed one, a
    /// `RedisBreaker`; whose callers read `clock`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_core::{Duration, HealthRouter, Instant, ManualClock, Policy, Row, SharedBreaker, Tool};
    ///
    /// // Built at start-up, from a configuration: owned, no `static`, no leak.
    /// let search = Arc::new(SharedBreaker::with_policy(Policy::new(1, Duration::from_secs(30))));
    /// let mirror = Arc::new(SharedBreaker::with_policy(Policy::new(1, Duration::from_secs(30))));
    /// let clock = ManualClock::new(Instant::ZERO);
    /// let substitutes = [Tool::shared("mirror", &*mirror, &clock)];
    /// let router = HealthRouter::new([Row::new(Tool::shared("search", &*search, &clock), &substitutes)]);
    /// let served_by = router.call("search", |tool| Ok::<_, std::io::Error>(tool.name())).unwrap();
    /// assert_eq!(served_by, "search");
    /// ```
    pub fn shared<B: ToolGate>(name: &'static str, breaker: &'a B, clock: &'a (dyn Clock + Sync)) -> Tool<'a> {
        Tool {
            name,
            breaker: None,
            gate: Some(breaker),
            clock,
        }
    }

    /// The name the router knows it by.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the tool passes through its breaker's own gate when called (a
    /// `#[circuit_breaker]` function found by [`Tool::registered`]): the router then takes
    /// no permit and reports nothing for it, since the function does both itself. See
    /// [`registry::Entry::gates_itself`].
    pub fn gates_itself(&self) -> bool {
        self.resolve().is_ok_and(|(_, gates_itself)| gates_itself)
    }

    /// The breaker, and whether the tool gates itself.
    fn resolve(&self) -> Result<(Resolved<'a>, bool), LookupError> {
        match (self.breaker, self.gate) {
            (Some(breaker), _) => Ok((Resolved::Any(breaker, self.clock), false)),
            (None, Some(gate)) => Ok((Resolved::Gate(gate, self.clock), gate.self_gating())),
            (None, None) => registry::get(self.name).map(|e| (Resolved::Any(e.breaker(), e.clock()), e.gates_itself())),
        }
    }

    /// Whether the tool's breaker is found: always for a breaker given directly; for a
    /// registry name, whether exactly one breaker is registered under it.
    pub fn lookup(&self) -> Result<(), LookupError> {
        self.resolve().map(|_| ())
    }

    /// The pure oracle of the tool's breaker: would a call be allowed now? Never takes the
    /// probe. An unresolved registry name is never allowed.
    pub fn would_allow(&self) -> bool {
        self.resolve().is_ok_and(|(b, _)| b.would_allow())
    }
}

/// One row of the table: a tool and its substitutes, in order of preference.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    tool: Tool<'a>,
    substitutes: &'a [Tool<'a>],
}

impl<'a> Row<'a> {
    /// `tool`, standing in for which `substitutes` are tried in order.
    pub const fn new(tool: Tool<'a>, substitutes: &'a [Tool<'a>]) -> Row<'a> {
        Row { tool, substitutes }
    }

    /// The tool.
    pub const fn tool(&self) -> &Tool<'a> {
        &self.tool
    }

    /// Its substitutes, in order of preference.
    pub const fn substitutes(&self) -> &'a [Tool<'a>] {
        self.substitutes
    }

    /// The tool, then its substitutes.
    fn candidates(&self) -> impl Iterator<Item = &Tool<'a>> {
        core::iter::once(&self.tool).chain(self.substitutes)
    }
}

/// What the router would call for a tool, by the pure oracles: [`HealthRouter::choose`].
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Choice<'a> {
    /// The tool itself: its breaker would allow a call.
    Itself(&'a Tool<'a>),
    /// A substitute: the tool's breaker would refuse, this one's would allow.
    Substitute {
        /// The tool asked for.
        asked: &'a Tool<'a>,
        /// The substitute.
        with: &'a Tool<'a>,
        /// Its place among the tool's substitutes (0 is the first).
        rank: usize,
    },
    /// Neither the tool nor any substitute would be allowed.
    Unavailable(&'a Tool<'a>),
}

impl<'a> Choice<'a> {
    /// The tool that would be called, if any.
    pub fn tool(&self) -> Option<&'a Tool<'a>> {
        match *self {
            Choice::Itself(t) | Choice::Substitute { with: t, .. } => Some(t),
            Choice::Unavailable(_) => None,
        }
    }
}

/// Why the router called nothing, or the called tool's own error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RouterError<E> {
    /// The soft refusal: neither the tool nor any substitute is healthy. Nothing was called.
    Unavailable {
        /// The tool asked for.
        tool: &'static str,
    },
    /// The tool is not in the router's table. Nothing was called.
    UnknownTool,
    /// A tool was called and failed.
    Inner(E),
}

impl<E> RouterError<E> {
    /// The called tool's own error, if one was called.
    pub fn into_inner(self) -> Option<E> {
        match self {
            RouterError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for RouterError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouterError::Unavailable { .. } => f.write_str("tool temporarily unavailable: circuit breaker open"),
            RouterError::UnknownTool => f.write_str("no such tool in the health router"),
            RouterError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for RouterError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            RouterError::Inner(e) => Some(e),
            _ => None,
        }
    }
}

/// A registry name in the table that does not resolve to exactly one breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Misconfigured {
    /// The name.
    pub name: &'static str,
    /// What the registry answered.
    pub error: LookupError,
}

impl fmt::Display for Misconfigured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "health router tool `{}`: {}", self.name, self.error)
    }
}

impl core::error::Error for Misconfigured {}

/// One row's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RowReport {
    /// The tool.
    pub tool: &'static str,
    /// Requests that reached a tool: the tool itself or a substitute (saturating).
    pub served: u32,
    /// Of those, requests a substitute served (saturating).
    pub substitutions: u32,
    /// Requests refused softly: nothing healthy (saturating).
    pub refusals: u32,
}

struct RowCounts {
    served: AtomicU32,
    substitutions: AtomicU32,
    refusals: AtomicU32,
}

impl RowCounts {
    #[cfg(not(loom))]
    const fn new() -> RowCounts {
        RowCounts {
            served: AtomicU32::new(0),
            substitutions: AtomicU32::new(0),
            refusals: AtomicU32::new(0),
        }
    }

    #[cfg(loom)]
    fn new() -> RowCounts {
        RowCounts {
            served: AtomicU32::new(0),
            substitutions: AtomicU32::new(0),
            refusals: AtomicU32::new(0),
        }
    }
}

/// A fixed table of `N` tools, each with its ordered substitutes. See the
/// [module documentation](crate::router).
pub struct HealthRouter<'a, const N: usize> {
    rows: [Row<'a>; N],
    counts: [RowCounts; N],
}

impl<const N: usize> fmt::Debug for HealthRouter<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthRouter")
            .field("rows", &self.rows)
            .field("report", &self.report())
            .finish()
    }
}

impl<'a, const N: usize> HealthRouter<'a, N> {
    /// A router over `rows`.
    #[cfg(not(loom))]
    pub const fn new(rows: [Row<'a>; N]) -> Self {
        HealthRouter {
            rows,
            counts: [const { RowCounts::new() }; N],
        }
    }

    /// A router over `rows` (not `const` under loom).
    #[cfg(loom)]
    pub fn new(rows: [Row<'a>; N]) -> Self {
        HealthRouter {
            rows,
            counts: core::array::from_fn(|_| RowCounts::new()),
        }
    }

    /// The rows.
    pub fn rows(&self) -> &[Row<'a>; N] {
        &self.rows
    }

    fn find(&self, tool: &str) -> Option<(&Row<'a>, &RowCounts)> {
        self.rows.iter().zip(&self.counts).find(|(r, _)| r.tool.name == tool)
    }

    /// What would be called for `tool` now, by the pure oracles: nothing changes, no
    /// probe is taken. `None` if `tool` is not in the table.
    pub fn choose(&self, tool: &str) -> Option<Choice<'_>> {
        let (row, _) = self.find(tool)?;
        let choice = match row.candidates().enumerate().find(|(_, t)| t.would_allow()) {
            Some((0, t)) => Choice::Itself(t),
            Some((rank, with)) => Choice::Substitute {
                asked: &row.tool,
                with,
                rank: rank - 1,
            },
            None => Choice::Unavailable(&row.tool),
        };
        Some(choice)
    }

    /// Calls `tool`, or its first healthy substitute, through that tool's gate: `f` gets
    /// the tool chosen and makes the call; its error's [`Classify`] verdict is reported to
    /// that tool's breaker. Nothing healthy: [`RouterError::Unavailable`], `f` not called.
    ///
    /// A tool that gates itself (a `#[circuit_breaker]` function found by
    /// [`Tool::registered`], see [`Tool::gates_itself`]) is chosen the same way but called
    /// without a permit of the router's: `f` calls the function, whose own gate decides and
    /// whose own breaker counts the outcome, once. If that gate refuses what the oracle
    /// allowed an instant earlier (another caller took the probe in between), the
    /// function's refusal comes back as [`RouterError::Inner`].
    pub fn call<T, E: Classify>(
        &self,
        tool: &str,
        f: impl FnOnce(&Tool<'a>) -> Result<T, E>,
    ) -> Result<T, RouterError<E>> {
        self.call_classified(tool, f, |e| e.verdict())
    }

    /// [`HealthRouter::call`] with the verdict given by `classify`.
    pub fn call_classified<T, E>(
        &self,
        tool: &str,
        f: impl FnOnce(&Tool<'a>) -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, RouterError<E>> {
        let (row, counts) = self.find(tool).ok_or(RouterError::UnknownTool)?;
        let (mut f, mut classify) = (f, classify);
        for (rank, candidate) in row.candidates().enumerate() {
            let Ok((breaker, gates_itself)) = candidate.resolve() else {
                continue;
            };
            match breaker {
                // A `static` breaker: its own permit, the call inlined here.
                Resolved::Any(b, clock) => {
                    // The oracle first: a tool it rules out is never asked through its gate.
                    if !b.would_allow(clock.now()) {
                        continue;
                    }
                    if gates_itself {
                        // Its own gate takes the permit and its own breaker hears the
                        // outcome: a permit here would count each outcome twice and hold
                        // its probe.
                        count(&counts.served, rank > 0, &counts.substitutions);
                        return f(candidate).map_err(RouterError::Inner);
                    }
                    let Ok(permit) = b.try_acquire(&clock) else {
                        // Refused: another caller took the probe since; the next candidate.
                        continue;
                    };
                    count(&counts.served, rank > 0, &counts.substitutions);
                    return match f(candidate) {
                        Ok(v) => {
                            permit.success();
                            Ok(v)
                        }
                        Err(e) => {
                            permit.failure(classify(&e));
                            Err(RouterError::Inner(e))
                        }
                    };
                }
                // Any other shared breaker, behind `dyn`: the call runs inside its gate,
                // out of line, which gives it back unrun if it refuses.
                Resolved::Gate(gate, clock) => {
                    if !gate.would_allow_at(&clock) {
                        continue;
                    }
                    if gates_itself {
                        count(&counts.served, rank > 0, &counts.substitutions);
                        return f(candidate).map_err(RouterError::Inner);
                    }
                    match through_gate(gate, clock, candidate, f, classify) {
                        Ok(r) => {
                            count(&counts.served, rank > 0, &counts.substitutions);
                            return r.map_err(RouterError::Inner);
                        }
                        // Refused: another caller took the probe since; nothing was taken,
                        // the call is still ours: the next candidate.
                        Err(Some(back)) => (f, classify) = back,
                        Err(None) => break,
                    }
                }
            }
        }
        bump(&counts.refusals);
        Err(RouterError::Unavailable { tool: row.tool.name })
    }

    /// Chooses for `tool` by the pure oracles, counts the substitution or the refusal, and
    /// returns the tool to call, for a caller that dispatches the call itself. No permit
    /// is taken and nothing is reported here: use it for tools that pass through their own
    /// gate when called (`#[circuit_breaker]` functions; [`HealthRouter::call`] treats
    /// those the same way by itself), or where the call cannot be written as a closure.
    pub fn select(&self, tool: &str) -> Result<&Tool<'_>, RouterError<Infallible>> {
        let (_, counts) = self.find(tool).ok_or(RouterError::UnknownTool)?;
        match self.choose(tool) {
            Some(Choice::Itself(t)) => {
                count(&counts.served, false, &counts.substitutions);
                Ok(t)
            }
            Some(Choice::Substitute { with, .. }) => {
                count(&counts.served, true, &counts.substitutions);
                Ok(with)
            }
            Some(Choice::Unavailable(t)) => {
                bump(&counts.refusals);
                Err(RouterError::Unavailable { tool: t.name })
            }
            None => Err(RouterError::UnknownTool),
        }
    }

    /// `Ok` if every tool named by registry name resolves to exactly one breaker; else the
    /// first that does not. Call it once at start-up (or in a test).
    pub fn check(&self) -> Result<(), Misconfigured> {
        for tool in self.rows.iter().flat_map(Row::candidates) {
            if let Err(error) = tool.lookup() {
                return Err(Misconfigured { name: tool.name, error });
            }
        }
        Ok(())
    }

    /// Each row's figures.
    pub fn report(&self) -> [RowReport; N] {
        core::array::from_fn(|i| {
            let get = |c: Option<&AtomicU32>| c.map_or(0, |c| c.load(Ordering::Relaxed));
            let counts = self.counts.get(i);
            RowReport {
                tool: self.rows.get(i).map_or("", |r| r.tool.name),
                served: get(counts.map(|c| &c.served)),
                substitutions: get(counts.map(|c| &c.substitutions)),
                refusals: get(counts.map(|c| &c.refusals)),
            }
        })
    }
}

/// Runs `f` for `candidate` through a `dyn` gate, reporting its outcome by `classify`;
/// gives both back, unrun, if the gate refused (`Err(None)` only if a gate took the call
/// and neither ran nor returned it, which none does). Out of line: the router's turn to a
/// `static` breaker stays as small as it was before tools could be behind `dyn`.
#[inline(never)]
fn through_gate<'a, T, E, F, K>(
    gate: &dyn ToolGate,
    clock: &dyn Clock,
    candidate: &Tool<'a>,
    f: F,
    classify: K,
) -> Result<Result<T, E>, Option<(F, K)>>
where
    F: FnOnce(&Tool<'a>) -> Result<T, E>,
    K: FnOnce(&E) -> Verdict,
{
    let mut slot = Some((f, classify));
    let mut result = None;
    // Whether the gate refused is known from the slot: the call ran, or it is still ours.
    let _ = gate.through(clock, &mut || match slot.take() {
        Some((call, classify)) => {
            let r = call(candidate);
            let outcome = match &r {
                Ok(_) => Outcome::Success,
                Err(e) => Outcome::Error(classify(e)),
            };
            result = Some(r);
            outcome
        }
        // Each gate runs its call once; never reached.
        None => Outcome::NEUTRAL,
    });
    match result {
        Some(r) => Ok(r),
        None => Err(slot),
    }
}

fn count(served: &AtomicU32, substituted: bool, substitutions: &AtomicU32) {
    bump(served);
    if substituted {
        bump(substitutions);
    }
}

/// Adds one, saturating at `u32::MAX`.
fn bump(counter: &AtomicU32) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
}
