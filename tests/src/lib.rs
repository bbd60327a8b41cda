//! The project's integration tests live in `tests/`; this library carries the workspace
//! README, so that its examples run as doctests, and the private Redis server the Redis
//! tests start ([`redis_server`]).
#![doc = include_str!("../../README.md")]

pub mod redis_server;
