#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![deny(missing_debug_implementations)]
#![forbid(unsafe_code)]

mod breaker;
mod clock;
mod config;
mod link;
mod reconcile;
mod slot;
mod store;
pub mod value;

pub use breaker::{RedisBreaker, RedisPermit, RedisTicket};
pub use config::{Config, LinkEvent, Resync};
pub use link::RedisLink;
pub use value::ValueError;
