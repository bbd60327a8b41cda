//! The state word's layout: one breaker's whole state as the 64-bit word a
//! [`SharedBreaker`](crate::SharedBreaker) stores, its fields, and the tests the hot paths
//! make on it. The transition rules that change it are in `machine.rs`.

use core::fmt;

use crate::{Instant, Phase};

/// Generation numbers are this many bits wide (they wrap; see [`Core::gen`]).
const GEN_BITS: u32 = 11;
const GEN_MASK: u16 = (1 << GEN_BITS) - 1;

/// The whole state of one breaker, in the layout of the 64-bit word a
/// [`SharedBreaker`](crate::SharedBreaker) stores: the flags in one half, the anchor in the
/// other, so packing and unpacking cost nothing and a transition is a few bit operations.
///
/// ```text
/// flags: bits 0..2 phase   2 probe out   3 forced   4..12 strikes
///             12..16 streak   16..20 backoff step   20 shadow   21..32 generation
/// ```
///
/// Closed with no strikes has bits 0..12 all zero: the shared breaker's hot path tests
/// only that. Under a half-open failure rate (`Policy::with_half_open_rate`) a half-open
/// state counts its probes' failures in the strike bits and their successes in the streak
/// bits. The shadow bit is a mode, not a state: it is kept across every transition
/// and read only where a call would be refused (see `Builder::acquire`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Core {
    flags: u32,
    /// Open: the instant the cooldown counts from (later than the real opening when a trip
    /// verdict asked for a longer hold). Half-open with a probe out: when the probe started.
    pub anchor: Instant,
}

const PHASE_BITS: u32 = 0b11;
const PROBE_OUT: u32 = 1 << 2;
const FORCED: u32 = 1 << 3;
const STRIKES_AT: u32 = 4;
const STREAK_AT: u32 = 12;
const STEP_AT: u32 = 16;
const SHADOW: u32 = 1 << 20;
const GEN_AT: u32 = 21;
const NIBBLE: u32 = 0xF;
/// Closed only: the breaker counts every call ([`Policy::counting_calls`](crate::Policy::counting_calls)).
/// The probe-slot bit, which a closed breaker never uses, and one of [`Core::HOT_MASK`]'s:
/// a counting breaker's closed word is never hot, so the hot paths' one test sends each of
/// its calls off the hot path, where it is counted, and a breaker that does not count pays
/// nothing. Not part of a [`Core`]: [`Core::unpack`] drops it, [`Core::pack_marked`] sets
/// it. Hosted targets only (bare metal counts no calls).
const COUNT_MARK: u32 = PROBE_OUT;

/// The flags' phase bits for `phase`.
const fn phase_bits(phase: Phase) -> u32 {
    match phase {
        Phase::Closed => 0,
        Phase::Open => 1,
        Phase::HalfOpen => 2,
    }
}

/// The permit data a gate decision hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ticket {
    pub gen: u16,
    pub probe: bool,
}

impl Ticket {
    /// The ticket of a call a shadowed breaker let through where it would have refused
    /// it: its outcome is not reported to the machine (the breaker, as a live one, never
    /// saw the call). Its generation is none a breaker ever has (they are 11 bits wide).
    pub const UNTRACKED: Ticket = Ticket {
        gen: u16::MAX,
        probe: false,
    };

    /// Whether this is [`Ticket::UNTRACKED`]: its generation is out of range (one
    /// comparison with a power of two, which Thumb-2 takes as an immediate).
    #[inline(always)]
    pub const fn untracked(self) -> bool {
        self.gen > GEN_MASK
    }
}

impl Core {
    pub const INITIAL: Core = Core {
        flags: 0,
        anchor: Instant::ZERO,
    };

    /// [`Core::INITIAL`] in shadow mode.
    pub const INITIAL_SHADOWED: Core = Core {
        flags: SHADOW,
        anchor: Instant::ZERO,
    };

    /// A state from its fields (values wider than their bits are cut to them).
    #[allow(clippy::too_many_arguments)]
    pub const fn from_fields(
        phase: Phase,
        probe_out: bool,
        forced: bool,
        strikes: u8,
        streak: u8,
        step: u8,
        gen: u16,
        anchor: Instant,
    ) -> Core {
        Core {
            flags: phase_bits(phase)
                | if probe_out { PROBE_OUT } else { 0 }
                | if forced { FORCED } else { 0 }
                | (strikes as u32) << STRIKES_AT
                | (streak as u32 & NIBBLE) << STREAK_AT
                | (step as u32 & NIBBLE) << STEP_AT
                | ((gen & GEN_MASK) as u32) << GEN_AT,
            anchor,
        }
    }

    /// Where the breaker is.
    pub const fn phase(self) -> Phase {
        match self.flags & PHASE_BITS {
            0 => Phase::Closed,
            1 => Phase::Open,
            _ => Phase::HalfOpen,
        }
    }

    /// Whether the breaker is in `phase` (one comparison of the phase bits, where a
    /// `match` on [`Core::phase`] would decode them first).
    pub const fn is(self, phase: Phase) -> bool {
        self.flags & PHASE_BITS == phase_bits(phase)
    }

    /// Half-open only: the probe slot is taken.
    pub const fn probe_out(self) -> bool {
        self.flags & PROBE_OUT != 0
    }

    /// Open only: forced open until reset.
    pub const fn forced(self) -> bool {
        self.flags & FORCED != 0
    }

    /// Closed: consecutive strikes. Half-open under a half-open failure rate: the probe
    /// failures counted (otherwise 0 outside closed).
    pub const fn strikes(self) -> u8 {
        (self.flags >> STRIKES_AT) as u8
    }

    /// Half-open only: consecutive probe successes (under a half-open failure rate, the
    /// probe successes counted).
    pub const fn streak(self) -> u8 {
        (self.flags >> STREAK_AT & NIBBLE) as u8
    }

    /// Re-opens since the last close (the backoff step), at most `MAX_BACKOFF_STEP`.
    pub const fn step(self) -> u8 {
        (self.flags >> STEP_AT & NIBBLE) as u8
    }

    /// Bumped on every phase change; a permit from an older generation is stale. It wraps
    /// after 2048 transitions, so a permit held across exactly a multiple of that many
    /// transitions would pass for fresh.
    pub const fn gen(self) -> u16 {
        (self.flags >> GEN_AT) as u16
    }

    /// Shadow mode, in any phase: a call this state would refuse (but for a forced
    /// opening) is let through, untracked (see `Builder::acquire`).
    pub const fn shadow(self) -> bool {
        self.flags & SHADOW != 0
    }

    /// Whether a refusal in this state is let through by shadow mode: shadowed, and not
    /// forced open (one test of two flags).
    #[inline(always)]
    pub const fn shadow_passes(self) -> bool {
        self.flags & (SHADOW | FORCED) == SHADOW
    }

    pub(crate) fn set_shadow(&mut self, on: bool) {
        self.flags = self.flags & !SHADOW | if on { SHADOW } else { 0 };
    }

    pub(crate) fn set_probe_out(&mut self, out: bool) {
        self.flags = self.flags & !PROBE_OUT | if out { PROBE_OUT } else { 0 };
    }

    pub(crate) fn set_strikes(&mut self, strikes: u8) {
        self.flags = self.flags & !(0xFF << STRIKES_AT) | u32::from(strikes) << STRIKES_AT;
    }

    pub(crate) fn set_streak(&mut self, streak: u8) {
        self.flags = self.flags & !(NIBBLE << STREAK_AT) | (u32::from(streak) & NIBBLE) << STREAK_AT;
    }

    pub(crate) fn set_step(&mut self, step: u8) {
        self.flags = self.flags & !(NIBBLE << STEP_AT) | (u32::from(step) & NIBBLE) << STEP_AT;
    }

    /// Forced open (the flag is only ever set in open).
    pub(crate) fn set_forced(&mut self) {
        self.flags |= FORCED;
    }

    /// Enters phase `to` in the next generation, with the probe slot free, not forced, and
    /// no strikes or streak; the backoff step and the shadow mode are kept.
    pub(crate) fn enter(&mut self, to: Phase) {
        let gen = (self.gen().wrapping_add(1) & GEN_MASK) as u32;
        self.flags = self.flags & (NIBBLE << STEP_AT | SHADOW) | phase_bits(to) | gen << GEN_AT;
    }

    // ---- the packed word -------------------------------------------------------------
    //
    // The flags in the low half, so that the hot path's tests take 32-bit immediates; the
    // anchor in the high half.

    /// Bits that are all zero exactly when the breaker is Closed with no strikes pending.
    pub const HOT_MASK: u64 = 0xFFF;

    /// [`Core::HOT_MASK`]'s bits of a counting breaker's word when closed with no strikes
    /// pending: the count mark alone.
    pub const COUNTING_IDLE: u64 = COUNT_MARK as u64;

    /// The ticket of a call admitted on the hot path, if the packed word `w` is Closed with
    /// no strikes pending: there the gate admits without changing anything or reading the
    /// clock, exactly as [`Core::acquire`] would.
    #[inline(always)]
    pub const fn hot_ticket(w: u64) -> Option<Ticket> {
        if w & Self::HOT_MASK == 0 {
            Some(Ticket {
                gen: Core::unpack(w).gen(),
                probe: false,
            })
        } else {
            None
        }
    }

    /// Whether the packed word `w` is Closed with no strikes pending: the test of
    /// [`Core::hot_ticket`], on the flags' half of the word.
    #[inline(always)]
    pub const fn is_hot(w: u64) -> bool {
        (w as u32) & (Self::HOT_MASK as u32) == 0
    }

    /// The ticket of a call admitted on the hot path in the packed word `w` (which
    /// [`Core::hot_ticket`] found hot): computed off the hot path, from the word kept.
    #[inline(always)]
    pub const fn closed_ticket(w: u64) -> Ticket {
        Ticket {
            gen: Core::unpack(w).gen(),
            probe: false,
        }
    }

    /// Bits of a packed word that say "open, not forced, backoff step 0, not shadowed"
    /// when they equal [`Core::COOLING_BITS`]: phase, probe slot, forced, the backoff step
    /// and the shadow bit, so that a shadowed breaker's refusal takes the general path and
    /// a live one's test costs nothing more. Also the lowest strike bit, always clear when
    /// open: with it the mask is `0x001F_001F`, one Thumb-2 immediate (as `0x000F_000F`
    /// was), where `0x001F_000F` would take a second instruction or a literal.
    pub const COOLING_MASK: u64 =
        (PHASE_BITS | PROBE_OUT | FORCED | 1 << STRIKES_AT | NIBBLE << STEP_AT | SHADOW) as u64;
    /// [`Core::COOLING_MASK`]'s bits when open, not forced, at backoff step 0, not
    /// shadowed.
    pub const COOLING_BITS: u64 = 1;

    /// The bit of a packed word that says "forced open" (only ever set in open).
    pub const FORCED_MASK: u64 = FORCED as u64;

    /// The 64-bit word: the flags in the low half, the anchor in the high half.
    #[inline(always)]
    pub const fn pack(self) -> u64 {
        self.flags as u64 | (self.anchor.as_millis() as u64) << 32
    }

    /// The word of this state for a breaker that counts every call (`counting`) or not:
    /// [`Core::pack`], with the count mark set if closed and counting (hosted targets).
    #[inline(always)]
    pub const fn pack_marked(self, counting: bool) -> u64 {
        let marked = cfg!(not(target_os = "none")) && counting && self.is(Phase::Closed);
        self.pack() | if marked { COUNT_MARK as u64 } else { 0 }
    }

    /// The state a packed word holds (without the count mark of a counting breaker's
    /// closed word).
    #[inline(always)]
    pub const fn unpack(w: u64) -> Core {
        let mut flags = w as u32;
        if cfg!(not(target_os = "none")) && flags & PHASE_BITS == 0 {
            flags &= !COUNT_MARK;
        }
        Core {
            flags,
            anchor: Instant::from_millis((w >> 32) as u32),
        }
    }

    /// The state a packed word holds, the count mark of a counting breaker's closed word
    /// left in (a closed state's probe-slot bit, which only a half-open state is read
    /// for): for a view of the state ([`Core::view`], which reads a closed state's strikes
    /// only), never compared, stored or stepped, and then no more than the word's halves.
    #[inline(always)]
    pub const fn peek(w: u64) -> Core {
        Core {
            flags: w as u32,
            anchor: Instant::from_millis((w >> 32) as u32),
        }
    }

    /// The packed word `w` without the count mark: the same word whatever the policy
    /// counts (for words compared or handed out, and the eviction test).
    #[inline(always)]
    pub const fn unmarked(w: u64) -> u64 {
        Core::unpack(w).pack()
    }

    /// Whether the packed word `w` is closed with no strikes pending, counting breaker or
    /// not: [`Core::is_hot`] but for the count mark (a keyed table's eviction test).
    #[inline(always)]
    pub const fn is_idle(w: u64) -> bool {
        Core::is_hot(Core::unmarked(w))
    }
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("phase", &self.phase())
            .field("probe_out", &self.probe_out())
            .field("forced", &self.forced())
            .field("strikes", &self.strikes())
            .field("streak", &self.streak())
            .field("step", &self.step())
            .field("gen", &self.gen())
            .field("anchor", &self.anchor)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_mark_makes_a_closed_word_cold_and_is_not_part_of_the_state() {
        let closed = Core::INITIAL;
        let marked = closed.pack_marked(true);
        assert_eq!(closed.pack_marked(false), closed.pack());
        assert!(Core::is_hot(closed.pack()) && !Core::is_hot(marked));
        assert!(Core::hot_ticket(marked).is_none());
        assert!(Core::is_idle(marked) && Core::is_idle(closed.pack()));
        assert_eq!(Core::unpack(marked), closed);
        // A view of the marked word: closed, no probe, whatever the lease says.
        let policy = crate::Policy::new(3, crate::Duration::from_secs(30));
        let later = Instant::from_millis(3_600_000);
        assert_eq!(Core::peek(marked).view(&policy, later), closed.view(&policy, later));
        // Not closed: no mark, and the probe slot is the probe slot.
        let probing = Core::from_fields(Phase::HalfOpen, true, false, 0, 0, 0, 5, Instant::ZERO);
        assert_eq!(probing.pack_marked(true), probing.pack());
        assert!(Core::unpack(probing.pack()).probe_out());
        assert!(!Core::is_idle(probing.pack()));
    }

    #[test]
    fn fields_round_trip_through_the_word() {
        let c = Core::from_fields(
            Phase::HalfOpen,
            true,
            false,
            255,
            15,
            15,
            GEN_MASK,
            Instant::from_millis(u32::MAX),
        );
        assert_eq!(
            (
                c.phase(),
                c.probe_out(),
                c.forced(),
                c.strikes(),
                c.streak(),
                c.step(),
                c.gen()
            ),
            (Phase::HalfOpen, true, false, 255, 15, 15, GEN_MASK)
        );
        assert_eq!(c.anchor, Instant::from_millis(u32::MAX));
        assert_eq!(Core::unpack(c.pack()), c);
        assert_eq!(Core::unpack(Core::INITIAL.pack()), Core::INITIAL);
        assert_eq!(Core::INITIAL.pack() & Core::HOT_MASK, 0);
        for phase in [Phase::Closed, Phase::Open, Phase::HalfOpen] {
            let c = Core::from_fields(phase, false, true, 3, 2, 1, 9, Instant::from_millis(5));
            assert_eq!(
                (c.phase(), c.forced(), c.strikes(), c.streak(), c.step(), c.gen()),
                (phase, true, 3, 2, 1, 9)
            );
        }
    }

    #[test]
    fn setters_touch_only_their_field() {
        let mut c = Core::from_fields(Phase::Open, true, true, 7, 3, 5, 100, Instant::from_millis(9));
        c.set_strikes(200);
        c.set_streak(14);
        c.set_step(2);
        c.set_probe_out(false);
        assert_eq!(
            c,
            Core::from_fields(Phase::Open, false, true, 200, 14, 2, 100, Instant::from_millis(9))
        );
        c.enter(Phase::HalfOpen);
        assert_eq!(
            c,
            Core::from_fields(Phase::HalfOpen, false, false, 0, 0, 2, 101, Instant::from_millis(9))
        );
        let mut wraps = Core::from_fields(Phase::Closed, false, false, 0, 0, 0, GEN_MASK, Instant::ZERO);
        wraps.enter(Phase::Open);
        assert_eq!((wraps.phase(), wraps.gen()), (Phase::Open, 0));
    }

    #[test]
    fn only_a_generation_no_breaker_has_is_untracked() {
        let ticket = |gen, probe| Ticket { gen, probe };
        // The last generation a breaker reaches before wrapping is a tracked one.
        assert!(!ticket(GEN_MASK, false).untracked());
        assert!(!ticket(0, true).untracked());
        assert!(ticket(GEN_MASK + 1, false).untracked());
        assert!(Ticket::UNTRACKED.untracked());
    }

    #[test]
    fn only_closed_without_strikes_is_hot() {
        let quiet = Core::from_fields(Phase::Closed, false, false, 0, 0, 3, 7, Instant::from_millis(12345));
        assert_eq!(quiet.pack() & Core::HOT_MASK, 0);
        let struck = Core::from_fields(Phase::Closed, false, false, 1, 0, 0, 7, Instant::ZERO);
        assert_ne!(struck.pack() & Core::HOT_MASK, 0);
        let open = Core::from_fields(Phase::Open, false, false, 0, 0, 0, 0, Instant::ZERO);
        assert_ne!(open.pack() & Core::HOT_MASK, 0);
        assert_eq!(open.pack() & Core::COOLING_MASK, Core::COOLING_BITS);
        assert_eq!(open.pack() & Core::FORCED_MASK, 0);
        let mut forced = open;
        forced.set_forced();
        assert_ne!(forced.pack() & Core::FORCED_MASK, 0);
        assert_ne!(forced.pack() & Core::COOLING_MASK, Core::COOLING_BITS);
    }
}
