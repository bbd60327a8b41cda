//! An embassy-time driver on SysTick, shared by both packages (each includes this file
//! as its `time_driver` module and defines `crate::CORE_CLOCK_HZ`, the clock SysTick
//! counts).
//!
//! SysTick interrupts at [`TICK_HZ`] (embassy-time's tick rate, chosen by the final
//! firmware through an embassy-time `tick-hz-*` feature; this driver needs a rate that
//! divides the core clock, e.g. `tick-hz-1_000`). Each interrupt advances a 64-bit tick
//! counter held in a critical-section mutex (so it works on a Cortex-M0, which has no
//! compare-and-swap) and, when the earliest deadline is reached, wakes the expired timers
//! of an [`embassy_time_queue_utils::Queue`]. The queue needs no executor: a `block_on`
//! that polls after every interrupt drives timers as well as embassy's executor does.
//!
//! The runner (`firmware/qemu-run.sh`) runs QEMU with `-icount shift=0,sleep=off`: the
//! virtual clock SysTick counts advances one nanosecond per instruction executed and
//! jumps to the next deadline while the core waits in `WFI`. Time on the emulator is
//! then the firmware's own, the same in every run whatever the host's load; without
//! `-icount` it follows the host's wall clock, loses ticks on a loaded host, and no
//! timing assertion can be trusted.

use core::cell::Cell;
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::{CriticalSection, Mutex};
use embassy_time_driver::{Driver, TICK_HZ};
use embassy_time_queue_utils::Queue;

use crate::CORE_CLOCK_HZ;

/// SysTick reload value: the counter wraps, and interrupts, at `TICK_HZ`.
const RELOAD: u32 = {
    assert!(
        (CORE_CLOCK_HZ as u64).is_multiple_of(TICK_HZ),
        "TICK_HZ must divide the core clock"
    );
    let reload = CORE_CLOCK_HZ as u64 / TICK_HZ - 1;
    assert!(reload > 0 && reload <= 0x00FF_FFFF, "SysTick reload must fit 24 bits");
    reload as u32
};

/// The driver state; every field is only touched inside a critical section.
struct SysTickDriver {
    /// Ticks since [`init`] (or [`restart_from_zero`]).
    ticks: Mutex<Cell<u64>>,
    /// Tick at which the queue next needs attention (`u64::MAX`: never).
    alarm: Mutex<Cell<u64>>,
    /// Pending timers. Taken out and put back around each use (a `Cell` has no
    /// borrow flag, so there is no borrow panic path to pull in `core::fmt`).
    queue: Mutex<Cell<Queue>>,
}

impl SysTickDriver {
    /// Advances time by one tick and wakes the timers that expired.
    fn on_tick(&self) {
        critical_section::with(|cs| {
            let now = self.ticks.borrow(cs).get() + 1;
            self.ticks.borrow(cs).set(now);
            if now >= self.alarm.borrow(cs).get() {
                self.with_queue(cs, |queue| queue.next_expiration(now));
            }
        });
    }

    /// Runs `f` on the timer queue and records the next expiration it returns.
    fn with_queue(&self, cs: CriticalSection<'_>, f: impl FnOnce(&mut Queue) -> u64) -> u64 {
        let cell = self.queue.borrow(cs);
        let mut queue = cell.replace(Queue::new());
        let next = f(&mut queue);
        cell.set(queue);
        self.alarm.borrow(cs).set(next);
        next
    }
}

impl Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| self.ticks.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            let now = self.ticks.borrow(cs).get();
            // Also wakes `waker` right away if `at` is already past.
            self.with_queue(cs, |queue| {
                queue.schedule_wake(at, waker);
                queue.next_expiration(now)
            });
        });
    }
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    ticks: Mutex::new(Cell::new(0)),
    alarm: Mutex::new(Cell::new(u64::MAX)),
    queue: Mutex::new(Cell::new(Queue::new())),
});

/// Starts the SysTick interrupt that drives embassy time. Call once, early: until
/// then, time stands still at 0 and timers never fire.
pub fn init(mut syst: SYST) {
    syst.disable_counter();
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Sets embassy time back to zero, as a reboot does: for simulating a restart
/// without losing the rest of RAM. Refuses (returns `false`, changes nothing)
/// while any timer is pending, since its deadline would then lie far ahead.
pub fn restart_from_zero() -> bool {
    critical_section::with(|cs| {
        let now = DRIVER.ticks.borrow(cs).get();
        if DRIVER.with_queue(cs, |queue| queue.next_expiration(now)) != u64::MAX {
            return false;
        }
        DRIVER.ticks.borrow(cs).set(0);
        true
    })
}

/// Embassy time in milliseconds (the defmt timestamp).
pub fn now_millis() -> u64 {
    DRIVER.now() * 1000 / TICK_HZ
}

/// Sleeps at least `ms` milliseconds without an executor (waiting for interrupts, so
/// the host's CPU is not kept busy). Needs [`init`], or it never returns.
pub fn delay_ms(ms: u64) {
    // One tick more: the current millisecond is already partly gone.
    let until = now_millis() + ms + 1;
    while now_millis() < until {
        cortex_m::asm::wfi();
    }
}

/// Executes `2 * iterations` instructions (a `subs`/`bne` loop) and returns: under the
/// runner's `-icount shift=0`, exactly `2 * iterations` nanoseconds of virtual time,
/// what the smoke tests compare embassy time with.
pub fn spin(iterations: u32) {
    if iterations == 0 {
        return;
    }
    // SAFETY: counts a register down to zero; touches no memory and no stack.
    unsafe {
        core::arch::asm!("2:", "subs r0, #1", "bne 2b", inout("r0") iterations => _, options(nomem, nostack));
    }
}

#[exception]
fn SysTick() {
    DRIVER.on_tick();
}
