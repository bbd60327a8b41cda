//! Semihosting helpers: ending the run with a status, reading the host clock.
//!
//! Under QEMU (`-semihosting-config enable=on,target=native`) these are
//! handled by the emulator. On real hardware without a debugger attached, a
//! semihosting call is a hard fault, so keep them out of production firmware.

use cortex_m_semihosting::{debug, syscall, syscall1};

/// Ends the run: QEMU exits with status 0 if `success`, else 1.
pub fn exit(success: bool) -> ! {
    let status = if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    };
    debug::exit(status);
    // Only reached if no semihosting host handled the call: park the core and
    // let the runner's timeout report the run as failed.
    loop {
        cortex_m::asm::wfi();
    }
}

/// Ends the run with exit status 0.
pub fn exit_success() -> ! {
    exit(true)
}

/// Ends the run with exit status 1.
pub fn exit_failure() -> ! {
    exit(false)
}

/// Host wall-clock time since the emulator started, in milliseconds
/// (semihosting `SYS_ELAPSED` and `SYS_TICKFREQ`); `None` if the host cannot
/// tell.
///
/// Useful to check that the firmware's own notion of time (SysTick and the
/// assumed core clock) matches reality. Not `SYS_CLOCK`: QEMU answers that one
/// with its own CPU time, which stands still while the core sleeps.
pub fn host_millis() -> Option<u64> {
    let mut block = [0u32; 2];
    // SAFETY: SYS_ELAPSED writes the 64-bit tick count, least significant word
    // first, to the two-word block it is given, and touches nothing else.
    let status = unsafe { syscall1!(ELAPSED, block.as_mut_ptr()) };
    // SAFETY: SYS_TICKFREQ takes no argument and has no side effect.
    let freq = unsafe { syscall!(TICKFREQ) };
    // Both calls return -1 on error.
    if status != 0 || freq == usize::MAX || freq == 0 {
        return None;
    }
    let (ticks, freq) = (u64::from(block[1]) << 32 | u64::from(block[0]), freq as u64);
    Some(ticks / freq * 1000 + ticks % freq * 1000 / freq)
}
