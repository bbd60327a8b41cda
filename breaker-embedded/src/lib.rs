#![doc = include_str!("../README.md")]
#![no_std]
#![deny(missing_docs)]

pub use breaker_core::*;
