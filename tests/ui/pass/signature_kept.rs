//! Everything about the signature survives: doc comments, attributes, inner attributes,
//! visibility, `unsafe`, `extern` ABIs, `#[must_use]`, in a crate that denies `unsafe`
//! code outside one module, missing docs and every warning.
#![deny(unsafe_code)]
#![deny(warnings, missing_docs)]

use breaker_core::{circuit_breaker, Classify, Refused};

/// The error.
#[derive(Debug, PartialEq)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

/// A module, to check visibility.
pub mod link {
    use super::*;

    /// Documented, public, `#[must_use]` and `#[inline]`.
    #[must_use]
    #[inline]
    #[circuit_breaker]
    pub fn documented(x: u8) -> Result<u8, Error> {
        #![allow(clippy::identity_op)]
        Ok(x + 0)
    }

    #[circuit_breaker]
    pub(crate) fn crate_visible() -> Result<(), Error> {
        Ok(())
    }

    #[allow(improper_ctypes_definitions)]
    #[circuit_breaker]
    pub(super) extern "C" fn with_abi(mut x: u8) -> Result<u8, Error> {
        x += 1;
        Ok(x)
    }
}

#[allow(unsafe_code)]
mod raw {
    use super::*;

    /// # Safety
    /// `p` must be valid for reads.
    #[circuit_breaker]
    pub unsafe fn read(p: *const u8) -> Result<u8, Error> {
        // SAFETY: the caller promises `p` is valid for reads.
        Ok(unsafe { *p })
    }
}

fn main() {
    assert_eq!(link::documented(1), Ok(1));
    assert_eq!(link::crate_visible(), Ok(()));
    assert_eq!(link::with_abi(1), Ok(2));
    let x = 5u8;
    #[allow(unsafe_code)]
    // SAFETY: `&x` is valid for reads.
    let read = unsafe { raw::read(&x) };
    assert_eq!(read, Ok(5));
}
