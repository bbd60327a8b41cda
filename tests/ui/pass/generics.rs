//! Generic functions: type and lifetime parameters, `where` clauses, `impl Trait`
//! arguments, a generic error type, and `impl Trait` in the return type.
#![deny(warnings)]

use breaker_core::{circuit_breaker, Classify, Refused};

#[derive(Debug, PartialEq)]
pub struct Error;
impl Classify for Error {}
impl From<Refused> for Error {
    fn from(_: Refused) -> Self {
        Error
    }
}

#[circuit_breaker]
fn longest<'a, T>(a: &'a [T], b: &'a [T]) -> Result<&'a [T], Error>
where
    T: PartialEq,
{
    Ok(if a.len() >= b.len() { a } else { b })
}

#[circuit_breaker]
fn total(items: impl IntoIterator<Item = u32>) -> Result<u32, Error> {
    Ok(items.into_iter().sum())
}

#[circuit_breaker]
fn generic_error<E: From<Refused> + Classify>(fail: Option<E>) -> Result<(), E> {
    match fail {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[circuit_breaker]
fn evens(limit: u32) -> Result<impl Iterator<Item = u32>, Error> {
    Ok((0..limit).filter(|n| n % 2 == 0))
}

fn main() {
    assert_eq!(longest(&[1, 2], &[3]), Ok(&[1, 2][..]));
    assert_eq!(total([1, 2, 3]), Ok(6));
    assert_eq!(generic_error::<Error>(None), Ok(()));
    assert_eq!(generic_error(Some(Error)), Err(Error));
    assert_eq!(evens(5).unwrap().collect::<Vec<_>>(), [0, 2, 4]);
}
