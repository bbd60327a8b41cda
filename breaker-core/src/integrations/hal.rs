//! Any driver, guarded: `embedded-hal` and `embedded-io` adapters with a breaker inside
//! (feature `embedded-hal`).
//!
//! Driver crates are generic over `embedded-hal` 1.0's [`I2c`](embedded_hal::i2c::I2c) and
//! [`SpiDevice`](embedded_hal::spi::SpiDevice), over `embedded-io`'s
//! [`Read`](embedded_io::Read) / [`Write`](embedded_io::Write), or over their async twins.
//! A [`Guarded`] peripheral implements the very trait of the peripheral it wraps, so such
//! a driver takes it unchanged and gets a circuit breaker for free: every transaction is
//! one call through the breaker, a refused one never reaches the bus and comes back as
//! [`GuardedError::Refused`], and the bus's own errors are kept ([`GuardedError::Inner`])
//! and judged by their `ErrorKind` ([`ByErrorKind`]; replace it with
//! [`Guarded::classify_with`]). On a shared I2C bus, a [`DeviceBreakers`] table gives each
//! listed address its own breaker, and a [`KeyedBreakers`](crate::KeyedBreakers) table
//! keyed by address gives one to any address, on first use.
//!
//! ```
//! use breaker_core::{Duration, Guarded, GuardedError, Instant, ManualClock, Policy, SharedBreaker};
//! use embedded_hal::i2c::{ErrorKind, NoAcknowledgeSource};
//! use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
//! use tmp1x2::{SlaveAddr, Tmp1x2};
//!
//! static POLICY: Policy = Policy::new(3, Duration::from_secs(2));
//! static THERMOMETER: SharedBreaker = SharedBreaker::new(&POLICY);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//!
//! // What the bus does: one good reading (25.0625 °C), then three address NACKs.
//! let nack = ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);
//! let read = |msb, lsb| Transaction::write_read(0x48, vec![0x00], vec![msb, lsb]);
//! let i2c = Mock::new(&[read(0x19, 0x10), read(0, 0).with_error(nack), read(0, 0).with_error(nack), read(0, 0).with_error(nack)]);
//!
//! // The TMP102 driver, unchanged, over the guarded bus.
//! let mut sensor = Tmp1x2::new(Guarded::new(i2c, &THERMOMETER, &CLOCK), SlaveAddr::default());
//! assert_eq!(sensor.read_temperature().unwrap(), 25.0625);
//! for _ in 0..3 {
//!     assert!(matches!(sensor.read_temperature(), Err(tmp1x2::Error::I2C(GuardedError::Inner(_)))));
//! }
//! // Three strikes: the breaker is open, and the driver's next read does not touch the bus.
//! match sensor.read_temperature() {
//!     Err(tmp1x2::Error::I2C(GuardedError::Refused(r))) => assert_eq!(r.retry_in, Some(Duration::from_secs(2))),
//!     other => panic!("expected a refusal, got {other:?}"),
//! }
//! sensor.destroy().into_inner().done(); // exactly the four scripted transactions reached the bus
//! ```
//!
//! # Where it lives, and the clock it reads
//!
//! The adapter is in `breaker-core`, behind the `embedded-hal` feature, rather than in
//! `breaker-embedded`: a blocking driver on RTIC or a bare `loop {}` has no embassy, and
//! `breaker-embedded` brings embassy-time. It needs no macro (it works with
//! `default-features = false`) and no clock of its own: like every breaker here it reads
//! the [`Clock`](crate::Clock) it is given, `EmbassyClock` on embassy firmware (where
//! `breaker-embedded`'s `embedded-hal` feature turns this one on),
//! [`GlobalClock`](crate::GlobalClock) or a timer of your own elsewhere. The four trait
//! crates it adds hold traits only, and a firmware that guards nothing carries none of it.
//!
//! # Verdicts
//!
//! By default [`ByErrorKind`] reads the error's `kind()`: for I2C, `NoAcknowledge`, `Bus`
//! and `ArbitrationLoss` are strikes and `Overrun` (the controller's own) is neutral; the
//! full tables for I2C, SPI and serial ports are on [`ByErrorKind`]. A closure over your
//! HAL's own error type replaces them ([`Guarded::classify_with`]).
//!
//! # A busy device
//!
//! Some devices NACK their address while busy (a conversion, an EEPROM's write cycle):
//! [`Guarded::retry_not_ready`] with a [`NotReady`] policy and a `DelayNs` tries such a
//! transaction again, a few times and shortly, inside its one breaker permit, before the
//! failure counts: a retry that succeeds is one success, tries spent are one verdict.
//!
//! # A shared bus
//!
//! One breaker for a whole I2C bus would let one dead sensor refuse every device on it.
//! [`DeviceBreakers`] keeps one per listed address (a `KeyedBreakers<u8, N>` one per
//! address seen, created on first use, bounded); guard the bus with it once and share the
//! guarded bus between drivers with `embedded-hal-bus`:
//!
//! ```
//! use core::cell::RefCell;
//! use breaker_core::{DeviceBreakers, Duration, Guarded, Instant, ManualClock, Policy, SharedBreaker};
//! use embedded_hal_bus::i2c::RefCellDevice;
//! # use embedded_hal_mock::eh1::i2c::Mock;
//! use tmp1x2::{SlaveAddr, Tmp1x2};
//!
//! static POLICY: Policy = Policy::new(3, Duration::from_secs(2));
//! static BUS: DeviceBreakers<2> = DeviceBreakers::new([0x48, 0x49], [const { SharedBreaker::new(&POLICY) }; 2]);
//! static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);
//! breaker_core::register!(BUS[0x48], "i2c1/inside", CLOCK);
//! breaker_core::register!(BUS[0x49], "i2c1/outside", CLOCK);
//!
//! # let i2c = Mock::new(&[]);
//! let bus = RefCell::new(Guarded::new(i2c, &BUS, &CLOCK));
//! let inside = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Alternative(false, false)); // 0x48
//! let outside = Tmp1x2::new(RefCellDevice::new(&bus), SlaveAddr::Alternative(false, true)); // 0x49
//! # bus.into_inner().into_inner().done();
//! ```

mod devices;
mod error;
mod guarded;
mod i2c;
mod io;
mod not_ready;
mod spi;
mod verdicts;

pub use devices::{DeviceBreakers, DeviceTableError};
pub use error::GuardedError;
pub use guarded::{AsyncRecover, Guarded, GuardsPeripheral, NoRecovery, PickBreaker, Recover};
pub use not_ready::{AddressNack, AsyncRetryNotReady, IsNotReady, NoRetry, NotReady, RetryNotReady, Retrying};
pub use verdicts::{ByErrorKind, ClassifyHal};
