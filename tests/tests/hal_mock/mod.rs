//! Scripted peripherals for the `Guarded` tests: each answers the next scripted result,
//! logs every call that reaches it (the method's name), and panics on a call it has no
//! answer for, so a refused transaction that reached the bus fails the test. Blocking and
//! async; and a one-shot executor for the async tests.

#![allow(dead_code)] // Each test file uses a different part.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use embedded_hal::i2c;
use embedded_hal::spi::{self, Operation};

/// What reached a scripted peripheral, and what it still has to answer.
#[derive(Debug)]
pub struct Script<E> {
    answers: VecDeque<Result<(), E>>,
    /// The methods called, in order: `"transaction"`, `"read"`, `"write"`, ...
    pub log: Vec<&'static str>,
}

impl<E: Copy + std::fmt::Debug> Script<E> {
    pub fn new(answers: &[Result<(), E>]) -> Self {
        Script {
            answers: answers.iter().copied().collect(),
            log: Vec::new(),
        }
    }

    fn answer(&mut self, method: &'static str) -> Result<(), E> {
        self.log.push(method);
        self.answers
            .pop_front()
            .unwrap_or_else(|| panic!("`{method}` reached the bus, but the script has no answer left"))
    }

    /// Every scripted answer was consumed.
    pub fn done(&self) {
        assert!(
            self.answers.is_empty(),
            "{} scripted answers never reached",
            self.answers.len()
        );
    }
}

/// An I2C bus (7-bit addresses): every method answers from the script, whatever the
/// address; reads fill the buffer with `0xA5`.
pub type I2c = Script<i2c::ErrorKind>;

impl i2c::ErrorType for I2c {
    type Error = i2c::ErrorKind;
}

impl i2c::I2c for I2c {
    fn read(&mut self, _: u8, read: &mut [u8]) -> Result<(), Self::Error> {
        self.answer("read")?;
        read.fill(0xA5);
        Ok(())
    }

    fn write(&mut self, _: u8, _: &[u8]) -> Result<(), Self::Error> {
        self.answer("write")
    }

    fn write_read(&mut self, _: u8, _: &[u8], read: &mut [u8]) -> Result<(), Self::Error> {
        self.answer("write_read")?;
        read.fill(0xA5);
        Ok(())
    }

    fn transaction(&mut self, _: u8, operations: &mut [i2c::Operation<'_>]) -> Result<(), Self::Error> {
        self.answer("transaction")?;
        for op in operations {
            if let i2c::Operation::Read(buf) = op {
                buf.fill(0xA5);
            }
        }
        Ok(())
    }
}

/// An SPI device: every method answers from the script; reads fill the buffer with `0xA5`.
pub type Spi = Script<spi::ErrorKind>;

impl spi::ErrorType for Spi {
    type Error = spi::ErrorKind;
}

fn fill(ops: &mut [Operation<'_, u8>]) {
    for op in ops {
        match op {
            Operation::Read(buf) | Operation::Transfer(buf, _) | Operation::TransferInPlace(buf) => buf.fill(0xA5),
            Operation::Write(_) | Operation::DelayNs(_) => {}
        }
    }
}

impl spi::SpiDevice<u8> for Spi {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Self::Error> {
        self.answer("transaction")?;
        fill(operations);
        Ok(())
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<(), Self::Error> {
        self.answer("read")?;
        buf.fill(0xA5);
        Ok(())
    }

    fn write(&mut self, _: &[u8]) -> Result<(), Self::Error> {
        self.answer("write")
    }

    fn transfer(&mut self, read: &mut [u8], _: &[u8]) -> Result<(), Self::Error> {
        self.answer("transfer")?;
        read.fill(0xA5);
        Ok(())
    }

    fn transfer_in_place(&mut self, buf: &mut [u8]) -> Result<(), Self::Error> {
        self.answer("transfer_in_place")?;
        buf.fill(0xA5);
        Ok(())
    }
}

impl embedded_hal_async::spi::SpiDevice<u8> for Spi {
    async fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Self::Error> {
        spi::SpiDevice::transaction(self, operations)
    }

    async fn read(&mut self, buf: &mut [u8]) -> Result<(), Self::Error> {
        spi::SpiDevice::read(self, buf)
    }

    async fn write(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        spi::SpiDevice::write(self, buf)
    }

    async fn transfer(&mut self, read: &mut [u8], write: &[u8]) -> Result<(), Self::Error> {
        spi::SpiDevice::transfer(self, read, write)
    }

    async fn transfer_in_place(&mut self, buf: &mut [u8]) -> Result<(), Self::Error> {
        spi::SpiDevice::transfer_in_place(self, buf)
    }
}

/// A serial port: `read` fills the whole buffer with `0x5A`, `write` takes every byte;
/// both answer from the script, as `flush` does. `ready` is what the readiness queries say.
#[derive(Debug)]
pub struct Serial {
    pub script: Script<embedded_io::ErrorKind>,
    pub ready: bool,
}

impl Serial {
    pub fn new(answers: &[Result<(), embedded_io::ErrorKind>]) -> Self {
        Serial {
            script: Script::new(answers),
            ready: false,
        }
    }
}

impl embedded_io::ErrorType for Serial {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Read for Serial {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        self.script.answer("read")?;
        buf.fill(0x5A);
        Ok(buf.len())
    }
}

impl embedded_io::Write for Serial {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.script.answer("write")?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.script.answer("flush")
    }
}

impl embedded_io::ReadReady for Serial {
    fn read_ready(&mut self) -> Result<bool, Self::Error> {
        self.script.log.push("read_ready");
        Ok(self.ready)
    }
}

impl embedded_io::WriteReady for Serial {
    fn write_ready(&mut self) -> Result<bool, Self::Error> {
        self.script.log.push("write_ready");
        Ok(self.ready)
    }
}

impl embedded_io_async::Read for Serial {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        embedded_io::Read::read(self, buf)
    }
}

impl embedded_io_async::Write for Serial {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        embedded_io::Write::write(self, buf)
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        embedded_io::Write::flush(self)
    }
}

/// Runs a future that never waits for anything to completion.
pub fn block_on<F: Future>(future: F) -> F::Output {
    match poll_once(future) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the future waited, but nothing here would wake it"),
    }
}

/// Polls a future once, then drops it: `Pending` means it was cancelled mid-call.
pub fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut future = pin!(future);
    future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}
