//! The project's integration tests live in `tests/`; this library carries the workspace
//! README, so that its examples run as doctests, the private Redis server the Redis tests
//! start ([`redis_server`]) and the scenario of the replica processes ([`replica`]).
#![doc = include_str!("../../README.md")]

pub mod redis_server;
pub mod replica;
