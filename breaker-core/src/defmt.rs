//! `defmt::Format` for the public types that hold references or atomics and so cannot
//! derive it. They print what their `Debug` impls print, in defmt's compact form.

use defmt::{write, Format, Formatter};

use crate::registry::{Duplicate, Entry};
use crate::{
    Breaker, Clock, GlobalClock, Ladder, ManualClock, Observer, OwnedPass, Pass, Permit, SharedBreaker, SharedPermit,
    WordStep,
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
