//! SplitMix64, the small pseudo-random generator behind the retry ladder's jitter.
//!
//! Steele, Lea and Flood's generator ("Fast splittable pseudorandom number generators",
//! OOPSLA 2014), as `java.util.SplittableRandom` and many seeders use it: a 64-bit counter
//! stepped by the golden-ratio increment and passed through a mixing function. Every seed,
//! zero included, gives a full-period sequence of well-mixed values; one step is an add,
//! two multiplies and three shifts, with no table and no allocation. It is not a
//! cryptographic generator, and jitter needs none: only spread.

/// The generator's state: the seed, stepped once per value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`: the same seed gives the same sequence.
    pub(crate) const fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 pseudo-random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value drawn uniformly from `lo..=hi` (`lo` if `hi < lo`).
    ///
    /// The top 32 bits of the next value, scaled by the span with a multiply and a shift
    /// (Lemire's method, without the rejection step: over a span of at most 2^32 values the
    /// bias is below one part in 2^32 per value, far below anything a delay can show).
    pub(crate) fn between(&mut self, lo: u32, hi: u32) -> u32 {
        let span = u64::from(hi.saturating_sub(lo)) + 1;
        let scaled = ((self.next_u64() >> 32) * span) >> 32;
        // `scaled < span`, so `lo + scaled <= hi`: no overflow.
        lo.saturating_add(scaled as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs of the reference implementation seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn between_stays_in_range_and_reaches_both_ends() {
        let mut r = SplitMix64::new(7);
        let (mut saw_lo, mut saw_hi) = (false, false);
        for _ in 0..10_000 {
            let v = r.between(3, 6);
            assert!((3..=6).contains(&v));
            saw_lo |= v == 3;
            saw_hi |= v == 6;
        }
        assert!(saw_lo && saw_hi);
        assert_eq!(r.between(5, 5), 5);
        assert_eq!(r.between(9, 2), 9);
        let wide = r.between(0, u32::MAX);
        let _ = wide; // any value is in range
    }
}
