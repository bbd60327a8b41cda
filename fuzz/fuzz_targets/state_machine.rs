//! The state machine (`machine.rs`, through `Breaker` and `SharedBreaker`) against the
//! reference model written from the behaviour spec.
//!
//! The input's bytes are the numbers a history is drawn from ([`Draw::Bytes`], read as
//! needed): first the policy and the clock's first reading, then operations until the
//! bytes run out (at most 256). The three breakers run the history and must agree after
//! every step (decisions, states, transitions with their cooldowns, staleness, snapshots,
//! counters); the first difference panics, which libFuzzer reports as a crash.

#![no_main]

use breaker_fuzz::differential::{history, Draw};
use libfuzzer_sys::fuzz_target;

/// Operations in one history, at most: longer inputs add nothing a shorter one cannot
/// reach, and keep each run fast.
const MAX_OPS: usize = 256;

fuzz_target!(|data: &[u8]| {
    let mut draw = Draw::Bytes(data);
    let policy = draw.policy();
    let start = match draw.below(4) {
        0 => 500,
        1 => u32::MAX - draw.below_u32(1000),
        _ => draw.any_u32(),
    };
    let mut ops = Vec::new();
    while !draw.is_spent() && ops.len() < MAX_OPS {
        ops.push(draw.op());
    }
    history(policy, start, &ops);
});
