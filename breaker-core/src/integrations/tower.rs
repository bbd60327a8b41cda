//! A circuit breaker as a `tower` [`Layer`] and [`Service`] (feature `tower`), for axum,
//! tonic and hyper stacks: it goes in a `ServiceBuilder` next to timeout and retry.
//!
//! ```
//! use breaker_core::tower::CircuitBreakerLayer;
//! use breaker_core::{Duration, Policy, SharedBreaker, StdClock};
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
//! static UPSTREAM: SharedBreaker = SharedBreaker::new(&POLICY);
//!
//! # let mut rt = std::pin::pin!(async {
//! let mut svc = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::new(&UPSTREAM, StdClock))
//!     .service(service_fn(|name: &'static str| async move {
//!         Ok::<_, std::io::Error>(format!("hello {name}"))
//!     }));
//! let reply = svc.ready().await?.call("world").await?;
//! assert_eq!(reply, "hello world");
//! # Ok::<_, tower::BoxError>(())
//! # });
//! # use std::future::Future;
//! # let cx = &mut std::task::Context::from_waker(std::task::Waker::noop());
//! # let std::task::Poll::Ready(r) = rt.as_mut().poll(cx) else { panic!() };
//! # r.unwrap();
//! ```
//!
//! # Decisions
//!
//! - **Refusal in `call`, not `poll_ready`.** `poll_ready` only asks the inner service.
//!   An open breaker answers `call` at once with an error, without calling the inner
//!   service: nothing is sent, no timeout waited out. Refusing in `poll_ready` would break
//!   tower's contract either way: `Pending` would hold callers back (backpressure) while
//!   the breaker means "fail fast", and an error from `poll_ready` tells tower the service
//!   is dead for good; taking the half-open probe slot in `poll_ready` would hold it for a
//!   caller that may never call. This is what tower's own load-shedding layer does.
//! - **Errors are `BoxError`,** as with tower's timeout: the inner service's error boxed,
//!   or a refusal, a [`RefusedError`] boxed without allocating (find it with
//!   [`Refusal`]: `error.refusal()`, `error.is_refused()`, `error.retry_in()`, e.g. in
//!   axum's `HandleErrorLayer` to answer 503; or `error.downcast_ref::<RefusedError>()`).
//!   A boxed refusal is neutral to [`Classify`], so an outer breaker does not count an
//!   inner one's refusals.
//! - **Classification:** by default a response is a success and an error is classified
//!   by its type's [`Classify`] (`std::io::Error`, `BoxError`, `Infallible` and your own
//!   types). [`CircuitBreakerLayer::classify`] takes a function of the whole result, so
//!   an HTTP 503 *response* can count as a strike.
//! - **One breaker for every clone.** The layer holds a handle to the breaker: a
//!   `&'static SharedBreaker` (a `static`, listed in the registry with `register!`), or
//!   an `Arc<SharedBreaker<..>>` (a policy read at run time). Every service the layer
//!   makes, and every clone of one, shares that one breaker: concurrent requests race for
//!   the one probe slot exactly as threads do.
//! - **Cancellation:** the permit lives in the response future. A future dropped
//!   unanswered while it is the half-open probe (a timeout above this layer fired, the
//!   client went away) counts as a failed probe at once; any other dropped call is
//!   neutral.
//! - **One breaker per host:** [`KeyedLayer`] takes a keyed table
//!   ([`keyed`](crate::keyed)) and a function of the request, so that each host (or
//!   tenant) has its own breaker and one dead host does not refuse the others.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::boxed::Box;

use tower_layer::Layer;
use tower_service::Service;

use crate::{CallTicket, CircuitBreaker, Classify, Clock, GuardsCalls, Outcome, Refusal, RefusalReason, Refused};

/// The error type of a [`CircuitBreakerService`]: the inner service's error, boxed, or a
/// [`Refused`] (tower's `BoxError`).
pub type BoxError = Box<dyn core::error::Error + Send + Sync>;

/// A [`BoxError`] answers [`Refusal`] by finding a refusal in it (a [`RefusedError`], what
/// the layer answers with, or a boxed [`Refused`]): the error itself, or one of its
/// [`source`](core::error::Error::source)s (a layer above may have wrapped it). So
/// `error.is_refused()` and `error.retry_in()` work on what a tower stack returns.
///
/// ```
/// use breaker_core::tower::{BoxError, RefusedError};
/// use breaker_core::{Duration, Refusal, RefusalReason, Refused};
///
/// let refused = Refused { reason: RefusalReason::Open, retry_in: Some(Duration::from_secs(3)) };
/// let boxed: BoxError = Box::new(refused);
/// assert_eq!(boxed.refusal(), Some(refused));
/// assert_eq!(RefusedError::boxed(refused).retry_in(), Some(Duration::from_secs(3)));
/// let other: BoxError = "connection reset".into();
/// assert!(!other.is_refused());
/// ```
impl Refusal for BoxError {
    fn refusal(&self) -> Option<Refused> {
        find_refusal(&**self)
    }
}

/// The refusal in `error` or one of its sources, if any.
pub(crate) fn find_refusal(error: &(dyn core::error::Error + 'static)) -> Option<Refused> {
    let mut error = Some(error);
    while let Some(e) = error {
        if let Some(r) = e.downcast_ref::<RefusedError>() {
            return Some(r.refused());
        }
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(*r);
        }
        error = e.source();
    }
    None
}

/// The error a [`CircuitBreakerService`] answers a refused call with, boxed as a
/// [`BoxError`] without allocating: a zero-sized value whose [`Refused`] (why, and the
/// wait left) is kept in the box's address, so a refusal costs no trip to the allocator.
/// It prints, classifies and answers [`Refusal`] as the [`Refused`] does.
///
/// ```
/// use breaker_core::tower::{BoxError, RefusedError};
/// use breaker_core::{Duration, Refusal, RefusalReason, Refused};
///
/// let refused = Refused { reason: RefusalReason::Open, retry_in: Some(Duration::from_millis(1500)) };
/// let error: BoxError = RefusedError::boxed(refused);
/// assert_eq!(error.downcast_ref::<RefusedError>().map(RefusedError::refused), Some(refused));
/// assert_eq!(format!("{error:#}"), format!("{refused:#}"));
/// ```
pub struct RefusedError(());

/// The reasons in the order of their codes in a [`RefusedError`]'s address.
const REASONS: [RefusalReason; 4] = [
    RefusalReason::Open,
    RefusalReason::Probing,
    RefusalReason::ForcedOpen,
    RefusalReason::QuotaLow,
];

impl RefusedError {
    /// `refused` as a [`BoxError`]: with no allocation on 64-bit targets, where the
    /// refusal fits in the box's address; boxed as a [`Refused`] (one allocation) on others.
    pub fn boxed(refused: Refused) -> BoxError {
        match Self::encode(refused) {
            // SAFETY: `RefusedError` is zero-sized, and a `Box` of a zero-sized type may
            // hold any non-null, aligned pointer (its alignment is 1): it never reads
            // through it, and dropping it frees nothing. `encode` never returns 0.
            #[allow(unsafe_code)]
            Some(address) => unsafe { Box::from_raw(core::ptr::without_provenance_mut::<RefusedError>(address)) },
            None => Box::new(refused),
        }
    }

    /// The refusal.
    pub fn refused(&self) -> Refused {
        Self::decode(core::ptr::from_ref(self).addr())
    }

    /// The address that holds `refused` (bit 0 always set, so never 0): bits 1..3 the
    /// reason, bit 3 whether a wait is known, bits 32.. the wait in milliseconds (at most
    /// `Duration::MAX`, 30 bits). `None` where an address has no room for it (32 bits).
    fn encode(refused: Refused) -> Option<usize> {
        // Its place in `REASONS`.
        let reason: u64 = match refused.reason {
            RefusalReason::Open => 0,
            RefusalReason::Probing => 1,
            RefusalReason::ForcedOpen => 2,
            RefusalReason::QuotaLow => 3,
        };
        let (known, wait) = match refused.retry_in {
            Some(d) => (1u64, u64::from(d.as_millis())),
            None => (0, 0),
        };
        usize::try_from(1 | reason << 1 | known << 3 | wait << 32).ok()
    }

    fn decode(address: usize) -> Refused {
        let a = address as u64;
        Refused {
            reason: REASONS[(a >> 1 & 0b11) as usize],
            retry_in: (a >> 3 & 1 == 1).then(|| crate::Duration::from_millis((a >> 32) as u32)),
        }
    }
}

impl core::fmt::Debug for RefusedError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("RefusedError").field(&self.refused()).finish()
    }
}

impl core::fmt::Display for RefusedError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.refused(), f)
    }
}

impl core::error::Error for RefusedError {}

impl Refusal for RefusedError {
    fn refusal(&self) -> Option<Refused> {
        Some(self.refused())
    }
}

/// Says what a service's result testifies: [`Outcome::Success`] or a failure's verdict.
///
/// Implemented for every `Fn(&Result<Res, Err>) -> Outcome`, and by [`ByClassify`], the
/// default.
pub trait ClassifyResult<Res, Err> {
    /// The outcome `result` reports to the breaker.
    fn outcome(&self, result: &Result<Res, Err>) -> Outcome;
}

impl<Res, Err, F: Fn(&Result<Res, Err>) -> Outcome> ClassifyResult<Res, Err> for F {
    fn outcome(&self, result: &Result<Res, Err>) -> Outcome {
        self(result)
    }
}

/// The default classification: a response is a success, an error is classified by its
/// type's [`Classify`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByClassify;

impl<Res, Err: Classify> ClassifyResult<Res, Err> for ByClassify {
    fn outcome(&self, result: &Result<Res, Err>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err(e) => Outcome::Error(e.verdict()),
        }
    }
}

/// Wraps services in a [`CircuitBreakerService`] sharing one breaker (see the
/// [module documentation](self) for the decisions).
#[derive(Clone, Debug)]
pub struct CircuitBreakerLayer<B, C, K = ByClassify> {
    breaker: B,
    clock: C,
    classify: K,
}

impl<B: GuardsCalls + Clone, C> CircuitBreakerLayer<B, C> {
    /// A layer guarding services with `breaker`: any [`CircuitBreaker`] handle that clones
    /// into the same breaker (a `&'static SharedBreaker`, an `Arc<SharedBreaker<..>>`, a
    /// `RedisBreaker`), reading `clock`, classifying errors with [`Classify`]. Not a
    /// registry entry, which guards its own function only ([`GuardsCalls`]), nor a
    /// single-owner `Breaker`, which is not `Clone` (each service would get a breaker of
    /// its own).
    pub const fn new(breaker: B, clock: C) -> Self {
        CircuitBreakerLayer {
            breaker,
            clock,
            classify: ByClassify,
        }
    }
}

impl<B, C, K> CircuitBreakerLayer<B, C, K> {
    /// Classifies results with `classify` instead: any `Fn(&Result<Res, Err>) -> Outcome`,
    /// so that a response can count as a failure.
    ///
    /// ```
    /// use breaker_core::tower::CircuitBreakerLayer;
    /// use breaker_core::{Duration, Outcome, Policy, SharedBreaker, StdClock, Verdict};
    ///
    /// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
    /// static UPSTREAM: SharedBreaker = SharedBreaker::new(&POLICY);
    ///
    /// /// An HTTP-like status: 5xx strikes, 401 trips, the rest is a success.
    /// fn by_status(result: &Result<u16, std::io::Error>) -> Outcome {
    ///     match result {
    ///         Ok(500..=599) => Outcome::STRIKE,
    ///         Ok(401) => Outcome::TRIP,
    ///         Ok(_) => Outcome::Success,
    ///         Err(e) => Outcome::Error(breaker_core::Classify::verdict(e)),
    ///     }
    /// }
    /// let layer = CircuitBreakerLayer::new(&UPSTREAM, StdClock).classify(by_status);
    /// # let _ = layer;
    /// ```
    pub fn classify<K2>(self, classify: K2) -> CircuitBreakerLayer<B, C, K2> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            clock: self.clock,
            classify,
        }
    }
}

impl<S, B: Clone, C: Clone, K: Clone> Layer<S> for CircuitBreakerLayer<B, C, K> {
    type Service = CircuitBreakerService<S, B, C, K>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService {
            inner,
            breaker: self.breaker.clone(),
            clock: self.clock.clone(),
            classify: self.classify.clone(),
        }
    }
}

/// A service guarded by a circuit breaker: made by [`CircuitBreakerLayer`]. Clones share
/// the breaker.
#[derive(Clone, Debug)]
pub struct CircuitBreakerService<S, B, C, K = ByClassify> {
    inner: S,
    breaker: B,
    clock: C,
    classify: K,
}

impl<S, B, C, K> CircuitBreakerService<S, B, C, K> {
    /// The guarded service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The breaker handle.
    pub fn breaker(&self) -> &B {
        &self.breaker
    }
}

impl<S, Req, B, C, K> Service<Req> for CircuitBreakerService<S, B, C, K>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    B: GuardsCalls + Clone,
    C: Clock + Clone,
    K: ClassifyResult<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, B, C, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let state = match self.breaker.enter(&self.clock) {
            Ok(ticket) => State::Called {
                future: self.inner.call(request),
                permit: OwnedPermit {
                    breaker: self.breaker.clone(),
                    clock: self.clock.clone(),
                    ticket: Some(ticket),
                },
                classify: self.classify.clone(),
            },
            Err(refused) => State::Refused { refused: Some(refused) },
        };
        ResponseFuture { state }
    }
}

/// A permit that owns its handle to the breaker and its clock (so the response future
/// can be `'static`): reported once, or dropped unanswered by the rule of
/// [`SharedPermit`](crate::SharedPermit).
struct OwnedPermit<B: CircuitBreaker, C: Clock> {
    breaker: B,
    clock: C,
    ticket: Option<B::Ticket>,
}

impl<B: CircuitBreaker, C: Clock> OwnedPermit<B, C> {
    fn record(&mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.report(ticket, outcome, &self.clock);
        }
    }
}

impl<B: CircuitBreaker, C: Clock> Drop for OwnedPermit<B, C> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.abandon(ticket, &self.clock);
        }
    }
}

impl<B: CircuitBreaker, C: Clock> core::fmt::Debug for OwnedPermit<B, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("probe", &self.ticket.as_ref().is_some_and(CallTicket::is_probe))
            .field("answered", &self.ticket.is_none())
            .finish()
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`CircuitBreakerService`]: the inner call with its
    /// permit, or a refusal, ready at once.
    #[derive(Debug)]
    pub struct ResponseFuture<F, B, C, K>
    where
        B: CircuitBreaker,
        C: Clock,
    {
        #[pin]
        state: State<F, B, C, K>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    #[derive(Debug)]
    enum State<F, B, C, K>
    where
        B: CircuitBreaker,
        C: Clock,
    {
        Called {
            #[pin]
            future: F,
            permit: OwnedPermit<B, C>,
            classify: K,
        },
        Refused {
            refused: Option<Refused>,
        },
    }
}

impl<F, Res, Err, B, C, K> Future for ResponseFuture<F, B, C, K>
where
    F: Future<Output = Result<Res, Err>>,
    Err: Into<BoxError>,
    B: CircuitBreaker,
    C: Clock,
    K: ClassifyResult<Res, Err>,
{
    type Output = Result<Res, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Called {
                future,
                permit,
                classify,
            } => {
                let result = core::task::ready!(future.poll(cx));
                permit.record(classify.outcome(&result));
                Poll::Ready(result.map_err(Into::into))
            }
            StateProj::Refused { refused } => match refused.take() {
                Some(refused) => Poll::Ready(Err(RefusedError::boxed(refused))),
                // Polled again after it returned the refusal: a contract breach by the
                // caller; answer the same instead of panicking.
                None => Poll::Ready(Err(RefusedError::boxed(Refused {
                    reason: RefusalReason::Open,
                    retry_in: None,
                }))),
            },
        }
    }
}

/// Wraps services in a [`KeyedService`]: one breaker per key of the request, from a keyed
/// table ([`KeyedBreakers`](crate::KeyedBreakers), or a
/// [`KeyedBreakerMap`](crate::KeyedBreakerMap) for string keys), so that one dead host
/// does not refuse the others.
///
/// `key` is a function of the request, `Fn(&Req) -> Q`: for example the URI's authority.
/// Each call looks its key up (creating its breaker on first use) and goes through that
/// breaker exactly as through [`CircuitBreakerLayer`]'s; when the table is full of entries
/// it may not evict, the call goes through unguarded (see
/// [`keyed`](crate::keyed#when-the-table-is-full)).
///
/// ```
/// use std::num::NonZeroUsize;
/// use std::sync::Arc;
/// use breaker_core::keyed::KeyedBreakerMap;
/// use breaker_core::tower::KeyedLayer;
/// use breaker_core::{Duration, Policy, StdClock};
/// use tower::{service_fn, ServiceBuilder};
///
/// struct Request { host: String }
///
/// let hosts = Arc::new(KeyedBreakerMap::new(NonZeroUsize::new(256).unwrap(), Policy::new(3, Duration::from_secs(30))).unwrap());
/// let svc = ServiceBuilder::new()
///     .layer(KeyedLayer::new(hosts, |r: &Request| r.host.clone(), StdClock))
///     .service(service_fn(|r: Request| async move { Ok::<_, std::io::Error>(r.host) }));
/// # let _ = svc;
/// ```
#[derive(Clone, Debug)]
pub struct KeyedLayer<T, F, C, K = ByClassify> {
    table: T,
    key: F,
    clock: C,
    classify: K,
}

impl<T, F, C> KeyedLayer<T, F, C> {
    /// A layer guarding each call with the breaker `table` keeps for `key(&request)`
    /// (`table`: a `&'static KeyedBreakers`, an `Arc<KeyedBreakerMap>`: any
    /// [`KeyedTable`](crate::KeyedTable) that clones into the same table), reading
    /// `clock`, classifying errors with [`Classify`].
    pub const fn new(table: T, key: F, clock: C) -> Self {
        KeyedLayer {
            table,
            key,
            clock,
            classify: ByClassify,
        }
    }
}

impl<T, F, C, K> KeyedLayer<T, F, C, K> {
    /// Classifies results with `classify` instead (see [`CircuitBreakerLayer::classify`]).
    pub fn classify<K2>(self, classify: K2) -> KeyedLayer<T, F, C, K2> {
        KeyedLayer {
            table: self.table,
            key: self.key,
            clock: self.clock,
            classify,
        }
    }
}

impl<S, T: Clone, F: Clone, C: Clone, K: Clone> Layer<S> for KeyedLayer<T, F, C, K> {
    type Service = KeyedService<S, T, F, C, K>;

    fn layer(&self, inner: S) -> Self::Service {
        KeyedService {
            inner,
            table: self.table.clone(),
            key: self.key.clone(),
            clock: self.clock.clone(),
            classify: self.classify.clone(),
        }
    }
}

/// A service guarded by one breaker per key of the request: made by [`KeyedLayer`].
/// Clones share the table.
#[derive(Clone, Debug)]
pub struct KeyedService<S, T, F, C, K = ByClassify> {
    inner: S,
    table: T,
    key: F,
    clock: C,
    classify: K,
}

impl<S, T, F, C, K> KeyedService<S, T, F, C, K> {
    /// The guarded service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The table of breakers.
    pub fn table(&self) -> &T {
        &self.table
    }
}

impl<S, Req, T, F, Q, C, K> Service<Req> for KeyedService<S, T, F, C, K>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    F: Fn(&Req) -> Q,
    T: crate::KeyedTable<Q>,
    C: Clock + Clone,
    K: ClassifyResult<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, T::Entry, C, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let mut breaker = self.table.entry(&(self.key)(&request));
        let state = match breaker.enter(&self.clock) {
            Ok(ticket) => State::Called {
                future: self.inner.call(request),
                permit: OwnedPermit {
                    breaker,
                    clock: self.clock.clone(),
                    ticket: Some(ticket),
                },
                classify: self.classify.clone(),
            },
            Err(refused) => State::Refused { refused: Some(refused) },
        };
        ResponseFuture { state }
    }
}
