//! `defmt::Format` for the public types that hold references or atomics and so cannot
//! derive it. They print what their `Debug` impls print, in defmt's compact form.

use defmt::{write, Format, Formatter};

use crate::registry::{Duplicate, Entry};
use crate::router::Row;
use crate::{
    Attempt, Backups, Breaker, CallTicket, ChainObserver, CircuitBreaker, Clock, FallbackChain, GlobalClock,
    HealthRouter, Ladder, ManualClock, Observer, Permit, SharedBreaker, SharedPermit, SharedTicket, Tool, Turn,
    WordStep,
};

impl<O: Observer> Format for Breaker<O> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "Breaker {{ policy: {}, counters: {} }}",
            self.policy,
            self.counters()
        )
    }
}

impl<O: ?Sized + Observer, P: crate::PolicyStore, S: crate::counts::CountStore> Format for SharedBreaker<O, P, S> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "SharedBreaker {{ policy: {}, counters: {} }}",
            &*self.policy(),
            self.counters()
        )
    }
}

impl Format for WordStep {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "WordStep {{ word: {=u64:#x}, admitted: {} }}",
            self.word(),
            self.admitted()
        )
    }
}

impl Format for Permit {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Permit {{ probe: {} }}", self.is_probe())
    }
}

impl<C: Clock, O: ?Sized + Observer, P: crate::PolicyStore> Format for SharedPermit<'_, C, O, P> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "SharedPermit {{ probe: {} }}", self.is_probe())
    }
}

impl Format for SharedTicket {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "SharedTicket {{ probe: {} }}", self.is_probe())
    }
}

impl<B: CircuitBreaker + ?Sized, C: Clock> Format for Attempt<'_, B, C> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Attempt {{ probe: {} }}", self.is_probe())
    }
}

impl<G, C, S, K, N> Format for Ladder<'_, G, C, S, K, N> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Ladder {{ policy: {}, seed: {} }}", self.policy(), self.seed_given())
    }
}

impl Format for ManualClock {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "ManualClock {{ now: {} }}", self.now())
    }
}

impl Format for GlobalClock {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "GlobalClock")
    }
}

#[cfg(feature = "std")]
impl Format for crate::StdClock {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "StdClock")
    }
}

impl Format for Entry {
    fn format(&self, f: Formatter<'_>) {
        let (file, line) = self.location();
        write!(
            f,
            "Entry {{ name: {=str}, at: {=str}:{}, policy: {} }}",
            self.name(),
            file,
            line,
            self.policy()
        )
    }
}

impl Format for Duplicate {
    fn format(&self, f: Formatter<'_>) {
        let (a, b) = (self.first.location(), self.second.location());
        write!(
            f,
            "two circuit breakers are registered as `{=str}` ({=str}:{} and {=str}:{}); give one a distinct name",
            self.name(),
            a.0,
            a.1,
            b.0,
            b.1
        )
    }
}

#[cfg(feature = "embedded-hal")]
impl<const N: usize, O: Observer> Format for crate::DeviceBreakers<N, O> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "DeviceBreakers {{");
        for (address, breaker) in self.iter() {
            write!(f, " {=u8:#04x}: {}", address, breaker);
        }
        write!(f, " }}");
    }
}

impl<const N: usize, O: ChainObserver, P: crate::PolicyStore> Format for FallbackChain<N, O, P> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "FallbackChain {{ primary: {=str}, backups: {}, counters: {} }}",
            self.primary(),
            self.backups(),
            self.breaker().counters()
        )
    }
}

impl<const N: usize, O: ChainObserver> Format for Backups<N, O> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Backups {{ count: {=usize} }}", N)
    }
}

impl<C: Clock, const N: usize, O: ChainObserver> Format for Turn<'_, C, N, O> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Turn {{ route: {} }}", self.route())
    }
}

impl Format for Tool<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Tool {{ name: {=str} }}", self.name())
    }
}

impl Format for Row<'_> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "Row {{ tool: {=str}, substitutes: {=usize} }}",
            self.tool().name(),
            self.substitutes().len()
        )
    }
}

impl<const N: usize> Format for HealthRouter<'_, N> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "HealthRouter {{ report: {} }}", self.report())
    }
}

// The quota gauge and its guard.
use crate::{LastQuota, QuotaGauge, QuotaGuard};

impl<const N: usize> Format for QuotaGauge<N> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "QuotaGauge {{ samples: {=usize}/{=usize}, last: {}, policy: {} }}",
            self.len(),
            N,
            self.last(),
            self.policy()
        )
    }
}

impl<B: Format + crate::Steer, const N: usize> Format for QuotaGuard<B, N> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "QuotaGuard {{ breaker: {}, gauge: {} }}",
            self.breaker(),
            self.gauge()
        )
    }
}

impl Format for LastQuota {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "LastQuota({})", self.get())
    }
}

#[cfg(feature = "std")]
impl<C: crate::Console> Format for crate::QuotaLog<C> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "QuotaLog {{ last: {} }}", self.last_quota())
    }
}

#[cfg(feature = "state-file")]
impl Format for crate::StateFile {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "StateFile")
    }
}

#[cfg(feature = "state-file")]
impl Format for crate::SavedState {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "SavedState {{ status: {}, cooldown: {}, consecutive failures: {=u32}, successes: {=u32}, probing: {=bool}, last quota: {} }}",
            self.status,
            self.cooldown,
            self.consecutive_failures,
            self.consecutive_successes,
            self.probing,
            self.last_quota
        )
    }
}

#[cfg(feature = "state-file")]
impl Format for crate::StateFileProblem {
    fn format(&self, f: Formatter<'_>) {
        match self {
            crate::StateFileProblem::Corrupt(_) => write!(f, "Corrupt"),
            crate::StateFileProblem::Foreign(_) => write!(f, "Foreign"),
            crate::StateFileProblem::UnsupportedVersion(v) => write!(f, "UnsupportedVersion({=u32})", v),
            crate::StateFileProblem::Invalid(why) => write!(f, "Invalid({=str})", why),
        }
    }
}

#[cfg(feature = "state-file")]
impl Format for crate::StateFileError {
    fn format(&self, f: Formatter<'_>) {
        match self {
            crate::StateFileError::Read(_) => write!(f, "Read"),
            crate::StateFileError::Rejected { problem, .. } => write!(f, "Rejected {{ problem: {} }}", problem),
            crate::StateFileError::NotSetAside { problem, .. } => write!(f, "NotSetAside {{ problem: {} }}", problem),
        }
    }
}
