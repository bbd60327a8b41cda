//! The scenario of the bounded soak (`tests/redis_soak.rs`) that its replica processes
//! (`src/bin/soak_replica.rs`) run: the policy, the links' settings, the upstream each key
//! guards (sick in some periods of the run, healthy in others, the same for every replica),
//! the outcomes a call draws, and a small seeded random generator, so that a run can be
//! replayed from its seed.
//!
//! Every process reads the same clock, `StdClock` (the host's monotonic clock, in wrapping
//! milliseconds, the same in every process of the host), which the links are given as
//! their shared clock: the times the replicas report compare exactly, with no skew to
//! allow for.

use std::time::Duration as StdDuration;

use breaker_core::{Duration, Policy, Verdict};

/// Three strikes trip it for two seconds (longer than a trip needs to reach every connected
/// replica, with its margin: each trip can be checked); a probe's lease is five seconds.
pub static POLICY: Policy = Policy::new(3, Duration::from_secs(2)).with_probe_lease(Duration::from_secs(5));

/// The links' timeout: past it a call decides on the replica's local breaker.
pub const TIMEOUT: StdDuration = StdDuration::from_millis(300);
/// The links' refresh interval.
pub const REFRESH: StdDuration = StdDuration::from_millis(50);
/// The links' interval between reconnection attempts.
pub const RETRY: StdDuration = StdDuration::from_millis(100);

/// How long a probe call takes (a normal call takes a millisecond).
pub const PROBE_MS: u64 = 10;

/// The last stretch of the run, in milliseconds: no fault, the upstream healthy and never
/// failing, so that every replica is back on Redis and every breaker closed at the end.
pub const CALM_MS: i64 = 10_000;

/// A period of the upstream's health, in milliseconds.
pub const PERIOD_MS: i64 = 1_500;

/// splitmix64: small, seeded, good enough to draw faults and outcomes.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` and a stream of it (a replica, a thread).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.bits();
        r
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.bits() % n
    }

    /// A number in `lo..hi`.
    pub fn between(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo) as u64) as i64
    }
}

/// Whether key `key`'s upstream is sick at `t` ms into a run of `run_ms` (never in the
/// calm stretch at the end): about one period in three, the same for every replica.
pub fn sick(seed: u64, key: usize, t: i64, run_ms: i64) -> bool {
    if t < 0 || t >= run_ms - CALM_MS {
        return false;
    }
    Rng::new(seed, 1_000 + key as u64 * 100_003 + (t / PERIOD_MS) as u64).below(3) == 0
}

/// A call's outcome: `None` for a success, or the error's verdict. A sick upstream fails
/// most calls (a trip verdict now and then); a healthy one fails one call in twenty, and
/// none in the calm stretch. Some calls are neutral either way.
pub fn outcome(rng: &mut Rng, sick: bool, calm: bool) -> Option<Verdict> {
    let roll = rng.below(100);
    match (sick, calm) {
        (true, _) if roll < 65 => Some(Verdict::Strike),
        (true, _) if roll < 70 => Some(Verdict::Trip),
        (true, _) if roll < 80 => Some(Verdict::Neutral),
        (false, false) if roll < 5 => Some(Verdict::Strike),
        (false, false) if roll < 10 => Some(Verdict::Neutral),
        _ => None,
    }
}
