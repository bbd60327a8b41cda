//! The project's integration tests live in `tests/`; this library only carries the
//! workspace README, so that its examples run as doctests.
#![doc = include_str!("../../README.md")]
