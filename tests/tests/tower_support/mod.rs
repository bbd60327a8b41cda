//! An inner service for the tower layers' tests (`tower.rs`, `tower_keyed.rs`): not ready
//! at its first `poll_ready`, then failing its readiness, for any request.

use std::task::{Context, Poll};

use tower::Service;

/// Not ready at first, then "overloaded"; the count of `poll_ready` calls so far.
pub struct Unready(pub u32);

impl<R> Service<R> for Unready {
    type Response = ();
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<(), std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        self.0 += 1;
        if self.0 == 1 {
            Poll::Pending
        } else {
            Poll::Ready(Err(std::io::Error::other("overloaded")))
        }
    }

    fn call(&mut self, _: R) -> Self::Future {
        std::future::ready(Ok(()))
    }
}
