//! What the fuzz targets share: the macro crate's parsing modules and the oracles.
//!
//! # Reaching the attribute's parsers
//!
//! `breaker-macros` is a `proc-macro` crate: it can be loaded by the compiler but not
//! linked into a program, so a fuzz target cannot call it. Its argument parser, however,
//! lives in plain modules (`args.rs`, `validate.rs`, `duration.rs`, `errors.rs`, the
//! window's `window.rs` and the `retry_*` arguments' `retry.rs`) that use
//! `proc_macro2` and `syn`, never `proc_macro`. They are compiled here a second time,
//! from the same files, at the same module paths (`crate::args`, `crate::duration`, ...),
//! so their `crate::` imports resolve unchanged. The macro crate has no fuzzing hooks
//! (the settings are read from its configurations' `pub` fields); if it
//! moves a file or gives these modules a new `crate::` dependency, this crate stops
//! compiling rather than fuzzing stale code.
//!
//! Outside a procedural macro, `proc_macro2` uses its own lexer and spans (with the
//! `span-locations` feature: byte positions in the parsed text), so a target can check
//! which token each error points at. The one difference from a real build is the lexer:
//! the compiler's may accept or reject a few token texts differently, which only decides
//! which inputs reach the parser.
//!
//! # Oracles
//!
//! [`snapshot_spec`], [`redis_value_spec`] and [`duration_spec`] are written from the
//! documentation of the formats and of the grammar, without calling the code under test, so that a target can
//! decide what the right answer is, not only that there was one. The state machine's
//! oracle is the `tests` crate's reference model ([`model`], written from the behaviour
//! spec), run against both breakers by [`differential`].

#[path = "../../breaker-macros/src/args.rs"]
pub mod args;
#[path = "../../breaker-macros/src/duration.rs"]
pub mod duration;
#[path = "../../breaker-macros/src/errors.rs"]
pub mod errors;
#[path = "../../breaker-macros/src/retry.rs"]
pub mod retry;
#[path = "../../breaker-macros/src/validate.rs"]
pub mod validate;
#[path = "../../breaker-macros/src/window.rs"]
pub mod window;

pub mod duration_spec;
pub mod redis_value_spec;
pub mod snapshot_spec;

// The Redis link's value format, compiled from `breaker-redis`'s file (it needs only
// `breaker_core::Policy` and `crc32fast`), so that the target does not build the Redis
// client.
#[path = "../../breaker-redis/src/value.rs"]
pub mod redis_value;

// The reference model of the single breaker and the driver that runs it against
// `Breaker` and `SharedBreaker`, compiled from the `tests` crate's files at the same
// module paths (the driver imports `crate::model`).
#[path = "../../tests/src/differential.rs"]
pub mod differential;
#[path = "../../tests/src/model.rs"]
pub mod model;
