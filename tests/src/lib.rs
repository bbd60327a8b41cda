//! The project's integration tests live in `tests/`. This library carries the workspace
//! README and the guide's chapters (`docs/`), so that their examples run as doctests
//! (`guide`, compiled for doctests only), and what the tests share: the reference
//! model of the breaker ([`model`]) and the driver that runs it against both breakers
//! ([`differential`]), the number of cases a property test runs ([`cases`]),
//! the private Redis server the Redis tests start ([`redis_server`]), the fault-injecting
//! proxy they put in front of it ([`fault_proxy`]), the scenario of the replica
//! processes ([`replica`]) and of the soak's ([`soak`]), and the states the state-file
//! writer process saves ([`state_file`]).
#![doc = include_str!("../../README.md")]

pub mod differential;
pub mod fault_proxy;
#[cfg(doctest)]
pub mod guide;
pub mod model;
pub mod redis_server;
pub mod replica;
pub mod soak;
pub mod state_file;

/// How many cases a property test runs: `default`, or fewer if the `PROPTEST_CASES`
/// environment variable caps it lower (mutation testing does, for speed).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(default, |cap: u32| cap.min(default))
}
