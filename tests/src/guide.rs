//! The guide's chapters, each included as the documentation of an item so that rustdoc
//! runs its code blocks as doctests (only under `cargo test --doc`: the chapters are read
//! on GitHub, not in rustdoc).

#[doc = include_str!("../../docs/attribute.md")]
pub struct Attribute;
#[doc = include_str!("../../docs/behaviour.md")]
pub struct Behaviour;
#[doc = include_str!("../../docs/ladder.md")]
pub struct Ladder;
#[doc = include_str!("../../docs/rerouting.md")]
pub struct Rerouting;
#[doc = include_str!("../../docs/windows.md")]
pub struct Windows;
#[doc = include_str!("../../docs/by-hand.md")]
pub struct ByHand;
#[doc = include_str!("../../docs/composition.md")]
pub struct Composition;
#[doc = include_str!("../../docs/ecosystem.md")]
pub struct Ecosystem;
#[doc = include_str!("../../docs/hal.md")]
pub struct Hal;
#[doc = include_str!("../../docs/quota.md")]
pub struct Quota;
#[doc = include_str!("../../docs/redis.md")]
pub struct Redis;
#[doc = include_str!("../../docs/firmware.md")]
pub struct Firmware;
#[doc = include_str!("../../docs/demos.md")]
pub struct Demos;
