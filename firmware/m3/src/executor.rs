//! A thread-mode embassy executor that sleeps with `WFI`.
//!
//! embassy's own thread executor (`arch-cortex-m`, `executor-thread`) sleeps with `WFE`
//! and is woken by `SEV`. QEMU (7.2) implements `WFE` as a yield that never halts the
//! core, so that executor spins. The runner runs every firmware with `-icount
//! shift=0,sleep=off` (virtual time follows the instructions executed and jumps to the
//! next timer deadline while the core is halted): a spinning executor never halts, and
//! virtual time then crawls at one nanosecond per instruction of its spin loop. This
//! executor halts in `WFI` instead, so idle time costs nothing and every run of a test
//! reads the same times, however loaded the host.
//!
//! What embassy's documentation of [`raw::Executor`] suggests for chips whose sleep
//! needs other steps: the same `raw::Executor`, a pender that records that a task was
//! woken, and a loop that polls and sleeps. The sleep is race-free: interrupts are
//! masked while the pended flag is checked, and `WFI` wakes on a pending interrupt even
//! while they are masked.

use core::sync::atomic::{AtomicBool, Ordering};

use embassy_executor::{raw, Spawner};

/// Set when a task was woken and the executor needs to poll; starts set, so the first
/// round polls the tasks `init` spawned.
static PENDED: AtomicBool = AtomicBool::new(true);

/// Called by embassy when a task is woken, from a task or an interrupt handler.
#[export_name = "__pender"]
fn pender(_context: *mut ()) {
    PENDED.store(true, Ordering::Release);
}

/// Runs the executor in thread mode, forever: `init` spawns the first tasks through the
/// [`Spawner`] it is given (and may keep copies of it).
pub fn run(init: impl FnOnce(Spawner)) -> ! {
    let executor = raw::Executor::new(core::ptr::null_mut());
    // SAFETY: this function never returns, so `executor`, a local of it, lives as long
    // as anything that holds the reference (the tasks and their spawners).
    let executor: &'static raw::Executor = unsafe { &*core::ptr::from_ref(&executor) };
    init(executor.spawner());
    loop {
        if PENDED.swap(false, Ordering::AcqRel) {
            // SAFETY: `poll` is called from this loop only, never reentrantly: the
            // pender only sets a flag.
            unsafe { executor.poll() };
            continue;
        }
        cortex_m::interrupt::disable();
        if !PENDED.load(Ordering::Acquire) {
            cortex_m::asm::wfi();
        }
        // SAFETY: re-enables the interrupts masked just above; no critical section of
        // ours is open here.
        unsafe { cortex_m::interrupt::enable() };
    }
}
