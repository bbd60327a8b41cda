//! `defmt::Format` for the public types that hold references or atomics and so cannot
//! derive it. They print what their `Debug` impls print, in defmt's compact form.

use defmt::{write, Format, Formatter};

use crate::registry::{Duplicate, Entry};
use crate::router::Row;
use crate::{
    Backups, Breaker, ChainObserver, Clock, FallbackChain, GlobalClock, HealthRouter, Ladder, ManualClock, Observer,
    OwnedPass, Pass, Permit, SharedBreaker, SharedPermit, Tool, Turn,
};

impl<O: Observer> Format for Breaker<O> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Breaker {{ policy: {}, counters: {} }}", self.policy, self.counters)
    }
}

impl<O: ?Sized + Observer> Format for SharedBreaker<O> {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "SharedBreaker {{ policy: {}, counters: {} }}",
            self.policy(),
            self.counters()
        )
    }
}

impl Format for Permit {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Permit {{ probe: {} }}", self.is_probe())
    }
}

impl<C: Clock, O: ?Sized + Observer> Format for SharedPermit<'_, C, O> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "SharedPermit {{ probe: {} }}", self.is_probe())
    }
}

impl<C: Clock, O: Observer> Format for OwnedPass<'_, C, O> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "OwnedPass {{ probe: {} }}", self.is_probe())
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

impl<const N: usize, O: ChainObserver> Format for FallbackChain<N, O> {
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

impl Format for Tool {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "Tool {{ name: {=str} }}", self.name())
    }
}

impl Format for Row {
    fn format(&self, f: Formatter<'_>) {
        write!(
            f,
            "Row {{ tool: {=str}, substitutes: {=usize} }}",
            self.tool().name(),
            self.substitutes().len()
        )
    }
}

impl<const N: usize> Format for HealthRouter<N> {
    fn format(&self, f: Formatter<'_>) {
        write!(f, "HealthRouter {{ report: {} }}", self.report())
    }
}
