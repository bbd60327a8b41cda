//! Panic and fault handlers: log through defmt, then end the run with failure
//! so that a panic or a fault is a failed run rather than a hang.

use core::panic::PanicInfo;
use core::sync::atomic::{AtomicBool, Ordering};

use cortex_m_rt::{exception, ExceptionFrame};

use crate::exit_failure;

/// Set on the first panic, so that a panic while logging (e.g. inside the
/// logger itself) does not recurse.
static PANICKED: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    cortex_m::interrupt::disable();
    // Interrupts are off and the core is single: load + store is atomic enough
    // (and works on cores without compare-and-swap).
    if !PANICKED.load(Ordering::Relaxed) {
        PANICKED.store(true, Ordering::Relaxed);
        // No `core::fmt` here: formatting the message would pull the formatting
        // machinery into every firmware (see `../size.sh`). A literal message and the
        // location are printed as they are; checks log their own details first.
        let message = info.message().as_str().unwrap_or("(formatted message not shown)");
        match info.location() {
            Some(at) => defmt::error!("panicked at {=str}:{=u32}: {=str}", at.file(), at.line(), message),
            None => defmt::error!("panicked: {=str}", message),
        }
    }
    exit_failure()
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    defmt::error!("HardFault at pc={=u32:#010x} lr={=u32:#010x}", frame.pc(), frame.lr());
    exit_failure()
}

#[exception]
unsafe fn DefaultHandler(irqn: i16) -> ! {
    defmt::error!("unhandled exception or interrupt (IRQn {=i16})", irqn);
    exit_failure()
}
