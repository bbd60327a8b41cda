//! `cargo bench -p bench --bench tower`: what `breaker_core::tower`'s layer costs a service
//! call, beside the same service without it, in one process: a closed call (the inner
//! service answers `Ok`) against the bare service answering `Ok`, and a refusal (the
//! breaker open) against the bare service answering an error, boxed as tower boxes every
//! error. The inner service is ready at once and its future completes on its first poll,
//! so what is measured is the layer. Beside them, the refusal's floor: a bare service
//! that refuses as any breaker layer must (the state word's test, a clock read compared
//! with a cooldown read from memory, the skip counted, the refusal boxed as the layer
//! boxes it).
//!
//! Modes (argv; `cargo bench` adds a `--bench` flag, which is ignored):
//!
//! * no mode: ns per call of every case, interleaved rounds, medians, and heap allocations
//!   per call.
//! * `--icount CASE COUNT`: runs one case for `COUNT` calls and exits (for callgrind.sh).
//! * `--allocs`: heap allocations made inside each case's loop of 100 000 calls, one line
//!   per case (`CASE\tALLOCATIONS`).
//! * `--list`: prints the case keys.

use std::future::{ready, Future, Ready};
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use bench::{CountingAlloc, TimedCase};
use breaker_core::tower::{BoxError, CircuitBreakerLayer, RefusedError};
use breaker_core::{Clock, Duration, Policy, RefusalReason, Refused, SharedBreaker, StdClock};
use tower::{Layer, Service};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

const ROUNDS: usize = 15;

static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
static CLOSED: SharedBreaker = SharedBreaker::new(&POLICY);
static TRIPPED: SharedBreaker = SharedBreaker::new(&POLICY);

/// The inner service's error: a unit struct, boxed (which allocates nothing).
#[derive(Debug)]
struct Down;
impl std::fmt::Display for Down {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("down")
    }
}
impl std::error::Error for Down {}
impl breaker_core::Classify for Down {}

/// A service answering `Ok(request)`, or `Err(Down)` when `up` is false, at once.
#[derive(Clone, Copy)]
struct Echo {
    up: bool,
}

impl Service<u64> for Echo {
    type Response = u64;
    type Error = Down;
    type Future = Ready<Result<u64, Down>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Down>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u64) -> Self::Future {
        ready(if self.up { Ok(request) } else { Err(Down) })
    }
}

/// The bare service's answer boxed as a tower stack's error would be.
#[derive(Clone, Copy)]
struct Boxed<S>(S);

impl Service<u64> for Boxed<Echo> {
    type Response = u64;
    type Error = BoxError;
    type Future = BoxedFuture<Ready<Result<u64, Down>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: u64) -> Self::Future {
        BoxedFuture(self.0.call(request))
    }
}

struct BoxedFuture<F>(F);

impl<F: Future<Output = Result<u64, Down>> + Unpin> Future for BoxedFuture<F> {
    type Output = Result<u64, BoxError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map_err(Into::into)
    }
}

/// The refusal floor's state word (a tripped breaker's) and its cooldown in milliseconds,
/// read from memory as a breaker reads its policy's (never over).
static FLOOR_WORD: AtomicU64 = AtomicU64::new(0);
static FLOOR_COOLDOWN_MS: AtomicU32 = AtomicU32::new(u32::MAX);

/// The refusal's floor as a bare service: what any breaker layer refusing this call does,
/// with nothing else (no breaker, no response future of its own).
#[derive(Clone, Copy)]
struct Refuser<'a> {
    skips: &'a AtomicU64,
}

impl Service<u64> for Refuser<'_> {
    type Response = u64;
    type Error = BoxError;
    type Future = Ready<Result<u64, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u64) -> Self::Future {
        let w = FLOOR_WORD.load(Ordering::Acquire);
        if w & 0xfff == 0 {
            return ready(Ok(request));
        }
        let elapsed = StdClock.now().as_millis().wrapping_sub((w >> 32) as u32);
        let cooldown = FLOOR_COOLDOWN_MS.load(Ordering::Relaxed);
        if elapsed >= cooldown {
            return ready(Ok(request));
        }
        self.skips
            .store(self.skips.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        ready(Err(RefusedError::boxed(Refused {
            reason: RefusalReason::Open,
            retry_in: Some(Duration::from_millis(cooldown - elapsed)),
        })))
    }
}

/// One request through `service`: ready, called, its future polled once.
#[inline(always)]
fn one<S: Service<u64, Response = u64, Error = BoxError>>(service: &mut S, request: u64) -> Result<u64, BoxError> {
    let cx = &mut Context::from_waker(Waker::noop());
    match service.poll_ready(cx) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(e)) => return Err(e),
        Poll::Pending => unreachable!("the inner service is always ready"),
    }
    let future = pin!(service.call(request));
    match future.poll(cx) {
        Poll::Ready(r) => r,
        Poll::Pending => unreachable!("the inner future completes on its first poll"),
    }
}

/// `n` requests through `service`, the answers summed (a refusal or error counts 1).
#[inline(never)]
fn loop_service<S: Service<u64, Response = u64, Error = BoxError>>(service: &mut S, n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        match one(service, black_box(i)) {
            Ok(v) => acc = acc.wrapping_add(v),
            Err(e) => {
                black_box(&e);
                acc = acc.wrapping_add(1);
            }
        }
    }
    acc
}

fn timed(run: impl FnOnce() -> u64) -> (StdDuration, u64) {
    let before = ALLOC.snapshot();
    let start = StdInstant::now();
    black_box(run());
    let elapsed = start.elapsed();
    (elapsed, ALLOC.snapshot().since(before).allocs)
}

fn run_bare_ok(n: u64) -> (StdDuration, u64) {
    let mut service = Boxed(Echo { up: true });
    timed(|| loop_service(&mut service, n))
}

fn run_layer_closed(n: u64) -> (StdDuration, u64) {
    let mut service = CircuitBreakerLayer::new(&CLOSED, StdClock).layer(Echo { up: true });
    timed(|| loop_service(&mut service, n))
}

fn run_bare_err(n: u64) -> (StdDuration, u64) {
    let mut service = Boxed(Echo { up: false });
    timed(|| loop_service(&mut service, n))
}

fn run_layer_refused(n: u64) -> (StdDuration, u64) {
    for _ in 0..3 {
        let _ = TRIPPED.call(&StdClock, || Err::<(), _>(Down));
    }
    let mut service = CircuitBreakerLayer::new(&TRIPPED, StdClock).layer(Echo { up: true });
    timed(|| loop_service(&mut service, n))
}

fn run_bare_refuse(n: u64) -> (StdDuration, u64) {
    let tripped = SharedBreaker::new(&POLICY);
    for _ in 0..3 {
        let _ = tripped.call(&StdClock, || Err::<(), _>(Down));
    }
    FLOOR_WORD.store(tripped.word(), Ordering::Release);
    let skips = AtomicU64::new(0);
    let mut service = Refuser { skips: &skips };
    timed(|| loop_service(&mut service, n))
}

const CASES: &[TimedCase] = &[
    TimedCase {
        key: "tower-bare-ok",
        label: "the bare service, answering Ok (its error boxed, as in a stack)",
        run: run_bare_ok,
    },
    TimedCase {
        key: "tower-layer-closed",
        label: "`CircuitBreakerLayer` over it, closed",
        run: run_layer_closed,
    },
    TimedCase {
        key: "tower-bare-err",
        label: "the bare service, answering an error (boxed)",
        run: run_bare_err,
    },
    TimedCase {
        key: "tower-bare-refuse",
        label:
            "the refusal's floor: a bare service refusing as a layer must (word, clock, cooldown, skip, boxed refusal)",
        run: run_bare_refuse,
    },
    TimedCase {
        key: "tower-layer-refused",
        label: "`CircuitBreakerLayer`, open: refused (`StdClock`)",
        run: run_layer_refused,
    },
];

fn main() {
    bench::timed_main("tower", CASES, ROUNDS, || {
        println!("\nInstructions per call: `BENCH=tower bench/callgrind.sh`.");
    });
}
