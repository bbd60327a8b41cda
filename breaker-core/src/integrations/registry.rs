//! Every `#[circuit_breaker]` function's breaker, listed in a static table: no
//! allocation, no start-up code, and breakers never yet called are listed too.
//!
//! Each annotated function places one [`Entry`] in a linker section; the linker gathers
//! them into one slice (the `linkme` crate does the work). On a
//! host nothing else is needed. A hand-built `static` [`SharedBreaker`] joins the same
//! table with one line, [`register!`](crate::register).
//!
//! [`table`] prints them all as an aligned table (`print!("{}", registry::table())`, or
//! [`print_table`] with `std`); a [`Report`] prints as one line and, with the `serde`
//! feature, serializes (a health endpoint's JSON).
//!
//! ```
//! use breaker_core::{registry, Phase};
//!
//! for entry in registry::iter() {
//!     let r = entry.report();
//!     println!("{:<40} {:?} allow={} skips={}", r.name, r.state.phase(), r.would_allow, r.counters.skips);
//! }
//! assert_eq!(registry::get("no::such::breaker").unwrap_err(), registry::LookupError::NotFound);
//! assert!(registry::check_unique().is_ok());
//! ```
//!
//! # Cortex-M
//!
//! The linker must be told to put the table in flash, or it lands in RAM, where
//! `cortex-m-rt`'s start-up code overwrites it and the firmware faults. This crate's
//! build script ships the linker fragment `breaker.x` (the way `defmt` ships
//! `defmt.x`); add it to the final binary's linker arguments, next to `link.x`, in its
//! `.cargo/config.toml`:
//!
//! ```toml
//! [target.'cfg(all(target_arch = "arm", target_os = "none"))']
//! rustflags = ["-C", "link-arg=-Tlink.x", "-C", "link-arg=-Tbreaker.x"]
//! ```
//!
//! The fragment assumes a memory region named `FLASH` (as `cortex-m-rt`'s `memory.x`
//! defines) and a `.rodata` output section to follow. A firmware that reads the registry
//! without it does not link: `undefined symbol: __breaker_core_registry_needs_-Tbreaker.x`.
//!
//! # Names
//!
//! An entry is named by the attribute's `name = "..."` argument, or else
//! `module_path!()` + `"::"` + the function's name. A method's default name does not
//! include its `Self` type (an attribute on a method cannot see it), so two methods of the
//! same name in one module collide: give them names. Collisions are never merged: lookups
//! by an ambiguous name fail with [`LookupError::Ambiguous`], and [`duplicates`] /
//! [`check_unique`] name both definitions.

use core::fmt;

pub use crate::health::{health, Health, HealthStatus};
#[cfg(feature = "std")]
pub use crate::table::print_table;
pub use crate::table::{table, Table};
use crate::{
    CircuitBreaker, Clock, Counters, Duration, Instant, Observer, Outcome, Policy, Reason, Recent, Refused,
    SharedBreaker, SharedTicket, State,
};

/// Lists a hand-built `static` [`SharedBreaker`] in the registry, as `#[circuit_breaker]`
/// lists the breakers it makes: one line, no allocation, no start-up code, listed whether
/// it was ever called or not.
///
/// `register!(BREAKER, "name", CLOCK)`: the path of a `static SharedBreaker<O>` (any
/// observer that is `Sync`) or of a `static` [`FallbackChain`](crate::FallbackChain) (its
/// primary's breaker is listed: the chain's phase is that breaker's), its registry name (a
/// `&'static str` constant expression), and the path of a `static` clock (implementing
/// [`Clock`] + `Sync`) that the registry reads for "now": the clock the breaker's callers
/// use. It may appear wherever an item may: at module level or inside a function.
///
/// `register!(TABLE[address], "name", CLOCK)` lists the breaker a
/// `DeviceBreakers` table (feature `embedded-hal`) keeps for one
/// I2C address, so that each device on a shared bus has a line of its own. An address the
/// table does not list is a compile error.
///
/// ```
/// use breaker_core::{registry, Duration, Instant, ManualClock, Policy, SharedBreaker};
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
/// static UPLINK: SharedBreaker = SharedBreaker::new(&POLICY);
/// static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
/// breaker_core::register!(UPLINK, "uplink", CLOCK);
///
/// let entry = registry::get("uplink").unwrap();
/// assert!(core::ptr::addr_eq(entry.breaker(), &UPLINK));
/// assert!(entry.would_allow());
/// ```
#[macro_export]
macro_rules! register {
    ($table:path [$address:expr], $name:expr, $clock:path $(,)?) => {
        const _: () = {
            #[$crate::__private::linkme::distributed_slice($crate::__private::BREAKERS)]
            #[linkme(crate = $crate::__private::linkme)]
            static __BREAKER_CORE_ENTRY: $crate::__private::Entry = $crate::__private::Entry::new(
                $name,
                $table.breaker_of($address),
                &$clock,
                ::core::file!(),
                ::core::line!(),
            );
        };
    };
    ($breaker:path, $name:expr, $clock:path $(,)?) => {
        const _: () = {
            #[$crate::__private::linkme::distributed_slice($crate::__private::BREAKERS)]
            #[linkme(crate = $crate::__private::linkme)]
            static __BREAKER_CORE_ENTRY: $crate::__private::Entry = $crate::__private::Entry::new(
                $name,
                $breaker.__registry_breaker(),
                &$clock,
                ::core::file!(),
                ::core::line!(),
            );
        };
    };
}

/// A registered breaker, whatever its observer: every [`SharedBreaker`] coerces to this.
pub type AnyBreaker = SharedBreaker<dyn Observer + Sync>;

impl<O: Observer + Sync + 'static> SharedBreaker<O> {
    /// The breaker as the registry holds it: what [`register!`](crate::register) lists
    /// (each kind of `static` it takes has a `const fn` of this name). Not public API.
    #[doc(hidden)]
    pub const fn __registry_breaker(&'static self) -> &'static AnyBreaker {
        self
    }
}

/// One registered breaker: its name, where it was defined, the breaker, and the clock it
/// reads (so that "now" means the same thing to the registry as to the function).
pub struct Entry {
    name: &'static str,
    breaker: &'static AnyBreaker,
    clock: &'static (dyn Clock + Sync),
    file: &'static str,
    line: u32,
    gates_itself: bool,
}

impl Entry {
    /// An entry; `#[circuit_breaker]` and [`register!`](crate::register) write these. Not
    /// public API.
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        breaker: &'static AnyBreaker,
        clock: &'static (dyn Clock + Sync),
        file: &'static str,
        line: u32,
    ) -> Entry {
        Entry {
            name,
            breaker,
            clock,
            file,
            line,
            gates_itself: false,
        }
    }

    /// The same entry, marked as a breaker whose function passes through its gate on
    /// every call (what `#[circuit_breaker]` writes). Not public API.
    #[doc(hidden)]
    pub const fn gating_itself(self) -> Entry {
        Entry {
            gates_itself: true,
            ..self
        }
    }

    /// Whether the breaker's own function passes every call through the breaker's gate
    /// and reports its outcome itself: `true` for a `#[circuit_breaker]` function, `false`
    /// for a breaker listed with [`register!`](crate::register). A composite that calls
    /// such a function must neither take a permit nor report for it (it would count each
    /// outcome twice and hold the probe the function's own gate needs); the
    /// [health router](crate::router) does this by itself.
    pub fn gates_itself(&self) -> bool {
        self.gates_itself
    }

    /// The registry name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The source file and line of the annotated function.
    pub fn location(&self) -> (&'static str, u32) {
        (self.file, self.line)
    }

    /// The policy.
    pub fn policy(&self) -> &'static Policy {
        self.breaker.policy()
    }

    /// The breaker itself, with its observer behind a trait object: everything a
    /// [`SharedBreaker`] does, for a function whose breaker has no name in code. For
    /// example, its state across a reboot:
    ///
    /// ```
    /// use breaker_core::{registry, Snapshot};
    ///
    /// // Before shutting down: one snapshot per registered breaker, to store in flash.
    /// let saved: Vec<(&str, [u8; Snapshot::LEN])> = registry::iter()
    ///     .map(|e| (e.name(), e.breaker().snapshot(e.now()).to_bytes()))
    ///     .collect();
    /// // At start-up: put each back, its cooldown resuming with the time that was left.
    /// for (name, bytes) in &saved {
    ///     if let (Ok(entry), Ok(snapshot)) = (registry::get(name), Snapshot::from_bytes(bytes)) {
    ///         entry.breaker().restore(&snapshot, entry.now());
    ///     }
    /// }
    /// ```
    pub fn breaker(&self) -> &'static AnyBreaker {
        self.breaker
    }

    /// A reading of the clock this breaker's function uses.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// The clock this breaker's function uses (the one [`Entry::now`] reads).
    pub fn clock(&self) -> &'static (dyn Clock + Sync) {
        self.clock
    }

    /// The state now (pure).
    pub fn state(&self) -> State {
        self.breaker.state(self.now())
    }

    /// The counters (a shared breaker reports `calls`, `successes` and `neutrals` as
    /// zero: see [`SharedBreaker`]).
    pub fn counters(&self) -> Counters {
        self.breaker.counters()
    }

    /// The breaker's recent transitions, oldest first, if its observer keeps them (a
    /// [`History`](crate::History)); `None` otherwise. See [`crate::history`].
    pub fn history(&self) -> Option<Recent<'static>> {
        self.breaker.observer().history()
    }

    /// Would a call be allowed now? Pure: it never takes the probe slot.
    pub fn would_allow(&self) -> bool {
        self.breaker.would_allow(self.now())
    }

    /// Closes the breaker now, zeroing strikes, probe streak and backoff.
    pub fn reset(&self) {
        self.breaker.reset(self.now())
    }

    /// Opens the breaker now, until [`Entry::reset`].
    pub fn force_open(&self) {
        self.breaker.force_open(self.now())
    }

    /// Switches the breaker's [shadow mode](SharedBreaker#shadow-mode) on or off: it
    /// decides as before and refuses nothing but a forced opening.
    pub fn set_shadow(&self, on: bool) {
        self.breaker.set_shadow(on)
    }

    /// Whether the breaker runs in [shadow mode](SharedBreaker#shadow-mode).
    pub fn is_shadow(&self) -> bool {
        self.breaker.is_shadow()
    }

    /// Everything at one reading of the clock (and of the state word).
    pub fn report(&self) -> Report {
        let now = self.now();
        let policy = *self.breaker.policy();
        let core = self.breaker.load_core();
        let state = core.view(&policy, now);
        Report {
            name: self.name,
            policy,
            now,
            state,
            counters: self.breaker.counters(),
            would_allow: core.shadow_passes() || state.allows_call(),
            shadow: core.shadow(),
            history: self.history(),
        }
    }
}

/// An entry is its breaker read through its own clock: the clock a composite passes is
/// not read (see [`CircuitBreaker`]). A `#[circuit_breaker]` function's entry
/// [gates itself](Entry::gates_itself), so an entry is not
/// [`GuardsCalls`](crate::GuardsCalls): the tower layer and `Guarded` do not take it.
impl CircuitBreaker for &Entry {
    type Ticket = SharedTicket;

    #[inline]
    fn enter<C: Clock>(&mut self, _: &C) -> Result<SharedTicket, Refused> {
        CircuitBreaker::enter(&mut { self.breaker }, &self.clock)
    }
    #[inline]
    fn report<C: Clock>(&mut self, ticket: SharedTicket, outcome: Outcome, _: &C) {
        CircuitBreaker::report(&mut { self.breaker }, ticket, outcome, &self.clock)
    }
    fn abandon<C: Clock>(&mut self, ticket: SharedTicket, _: &C) {
        CircuitBreaker::abandon(&mut { self.breaker }, ticket, &self.clock)
    }
    fn state<C: Clock>(&self, _: &C) -> State {
        Entry::state(self)
    }
    fn would_allow<C: Clock>(&self, _: &C) -> bool {
        Entry::would_allow(self)
    }
    fn trip<C: Clock>(&mut self, why: Reason, hold: Duration, _: &C) {
        self.breaker.trip_for(why, hold, self.now())
    }
    fn policy(&self) -> Policy {
        *self.breaker.policy()
    }
    fn counters(&self) -> Counters {
        Entry::counters(self)
    }
    fn is_shadow(&self) -> bool {
        Entry::is_shadow(self)
    }
    fn gates_itself(&self) -> bool {
        Entry::gates_itself(self)
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("file", &self.file)
            .field("line", &self.line)
            .field("policy", self.breaker.policy())
            .finish()
    }
}

/// One registered breaker at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Report {
    /// The registry name.
    pub name: &'static str,
    /// The policy.
    pub policy: Policy,
    /// The reading of the breaker's clock everything else was taken at.
    pub now: Instant,
    /// The state at `now`.
    pub state: State,
    /// The counters.
    pub counters: Counters,
    /// Whether a call would be allowed at `now` (the pure oracle). In shadow mode every
    /// call is, but a forced opening's: `state` says what a live breaker would do.
    pub would_allow: bool,
    /// Whether the breaker runs in [shadow mode](SharedBreaker#shadow-mode): its
    /// refusals, but for a forced opening, are only counted.
    pub shadow: bool,
    /// The breaker's recent transitions as its [`History`](crate::History) held them at
    /// `now`, oldest first; `None` for a breaker whose observer keeps none.
    pub history: Option<Recent<'static>>,
}

/// Why a lookup by name failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LookupError {
    /// No breaker has this name.
    NotFound,
    /// More than one breaker has this name; none was touched. See [`duplicates`].
    Ambiguous {
        /// How many breakers share it.
        count: usize,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound => f.write_str("no circuit breaker is registered under this name"),
            LookupError::Ambiguous { count } => write!(
                f,
                "{count} circuit breakers are registered under this name; give them distinct `name = \"...\"` arguments"
            ),
        }
    }
}

impl core::error::Error for LookupError {}

/// Two breakers registered under the same name.
#[derive(Clone, Copy, Debug)]
pub struct Duplicate {
    /// The first one in the table.
    pub first: &'static Entry,
    /// A later one with the same name.
    pub second: &'static Entry,
}

impl Duplicate {
    /// The shared name.
    pub fn name(&self) -> &'static str {
        self.first.name
    }
}

impl fmt::Display for Duplicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (self.first, self.second);
        write!(
            f,
            "two circuit breakers are registered as `{}` ({}:{} and {}:{}); give one of them a distinct `name = \"...\"`",
            a.name, a.file, a.line, b.file, b.line
        )
    }
}

impl core::error::Error for Duplicate {}

/// Every registered breaker, in link order (not sorted), including those never called.
pub fn entries() -> &'static [Entry] {
    crate::linker::require_registry_fragment();
    crate::__private::BREAKERS.static_slice()
}

/// Iterates [`entries`].
pub fn iter() -> core::slice::Iter<'static, Entry> {
    entries().iter()
}

/// The breaker registered as `name`.
pub fn get(name: &str) -> Result<&'static Entry, LookupError> {
    let mut found = None;
    let mut count = 0;
    for e in iter().filter(|e| e.name == name) {
        found.get_or_insert(e);
        count += 1;
    }
    match (found, count) {
        (Some(e), 1) => Ok(e),
        (None, _) => Err(LookupError::NotFound),
        (Some(_), count) => Err(LookupError::Ambiguous { count }),
    }
}

/// Closes the breaker registered as `name` (reading its own clock).
pub fn reset(name: &str) -> Result<(), LookupError> {
    get(name).map(Entry::reset)
}

/// Opens the breaker registered as `name` until it is reset.
pub fn force_open(name: &str) -> Result<(), LookupError> {
    get(name).map(Entry::force_open)
}

/// Switches the [shadow mode](SharedBreaker#shadow-mode) of the breaker registered as
/// `name` on or off.
pub fn set_shadow(name: &str, on: bool) -> Result<(), LookupError> {
    get(name).map(|entry| entry.set_shadow(on))
}

/// Every entry whose name an earlier entry already has, paired with that earlier entry.
/// Three breakers sharing a name give two pairs.
pub fn duplicates() -> impl Iterator<Item = Duplicate> {
    let all = entries();
    all.iter().enumerate().filter_map(move |(i, second)| {
        let earlier = all.get(..i).unwrap_or(&[]);
        earlier
            .iter()
            .find(|e| e.name == second.name)
            .map(|first| Duplicate { first, second })
    })
}

/// `Ok` if every registered name is unique, else the first collision: call it once at
/// start-up (or in a test) to turn a naming mistake into a clear message.
pub fn check_unique() -> Result<(), Duplicate> {
    match duplicates().next() {
        Some(d) => Err(d),
        None => Ok(()),
    }
}
