//! The breaker a replica calls through: a local mirror of the shared word, read with no network hop, and the few paths that ask Redis.

use core::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use breaker_core::{
    CallError, CallTicket, CircuitBreaker, Classify, Clock, Counters, Instant, Observer, Outcome, Phase, Policy,
    Reason, Refused, SharedBreaker, State, Transition, Verdict, WordOp, WordTicket,
};

use crate::link::{LinkShared, Request};
use crate::slot::{Reply, Slot};
use crate::{LinkEvent, ValueError};

/// Following Redis: the mirror holds Redis's word, and only the link writes it.
const SHARED: u8 = 0;
/// Apart from Redis: the mirror is this replica's own breaker, changed by its callers.
const LOCAL: u8 = 1;

/// One breaker in a replica, bound to one key: a [`SharedBreaker`] mirroring the word Redis
/// holds, with the closed-state path reading only the mirror.
///
/// Made by [`RedisLink::breaker`](crate::RedisLink::breaker); cheap to clone (every clone is
/// the same breaker). Calls are answered as follows:
///
/// - **closed, no strikes pending** (the happy path): one load of the mirror's word before
///   the call and one after, as [`SharedBreaker::call`] does; no network, no clock read.
/// - **anything that changes nothing** (a refusal while cooling down or while another
///   replica's probe is out, a call admitted while strikes are pending): decided on the
///   mirror, no network.
/// - **an outcome that changes the word** (a strike, a success that clears strikes, a
///   probe's answer): handed to the link thread, which swaps it into Redis; the call returns
///   at once and never waits for Redis.
/// - **a transition at the gate** (the cooldown is over: who is the probe?): the call waits
///   for Redis's compare-and-swap, at most [`Config::timeout`](crate::Config::timeout). Past
///   it, or with Redis unreachable, the replica's local breaker decides.
///
/// While apart from Redis the mirror is an ordinary local breaker; the link joins the two
/// again when Redis returns (see [`Resync`](crate::Resync)).
#[derive(Clone)]
pub struct RedisBreaker {
    pub(crate) inner: Arc<Binding>,
}

/// Everything one key's breaker holds, shared by its handles and the link thread.
pub(crate) struct Binding {
    pub key: String,
    pub fingerprint: u32,
    pub link: Arc<LinkShared>,
    pub tx: Sender<Request>,
    mode: AtomicU8,
    /// Calls running an operation on the mirror while apart (the link waits for none to be
    /// running before it declares the breaker shared again).
    local_ops: AtomicUsize,
    /// Probes the local breaker granted and that have not answered yet.
    local_probes: AtomicUsize,
    /// A `Slow` event was reported and the breaker has not been resynchronised since.
    slow_reported: AtomicBool,
    /// The link thread's bookkeeping (locked by it, and by a call reporting `Slow`).
    pub side: Mutex<LinkSide>,
    pub mirror: SharedBreaker<Tap>,
}

/// What the link thread keeps per breaker.
#[derive(Debug, Default)]
pub(crate) struct LinkSide {
    /// The Redis word the mirror last agreed with.
    pub base: Option<u64>,
    /// The word of this replica's last write to Redis that never answered (the connection
    /// failed with it out): Redis may hold it without anyone else having moved. Cleared
    /// when the breaker is shared again.
    pub in_doubt: Option<u64>,
    /// The bad value last reported, so each is reported once.
    pub reported: Option<ValueError>,
    /// Something was reported since the breaker was last shared: its resynchronisation is
    /// reported too.
    pub apart_reported: bool,
}

/// The mirror's observer: tells the user's observer, and remembers the last trip, which a
/// replica that tripped while apart carries back to Redis.
pub(crate) struct Tap {
    user: Box<dyn Observer + Send + Sync>,
    tripped: Mutex<Option<(Reason, Instant)>>,
}

impl Observer for Tap {
    fn on_transition(&self, t: &Transition) {
        if t.to == Phase::Open && t.why != Reason::ForcedOpen {
            *lock(&self.tripped) = Some((t.why, t.at));
        }
        self.user.on_transition(t);
    }
}

impl Tap {
    /// The last trip since [`Tap::forget`].
    pub fn tripped(&self) -> Option<(Reason, Instant)> {
        *lock(&self.tripped)
    }

    /// Forgets the last trip (when the breaker goes apart: only trips while apart count).
    pub fn forget(&self) {
        *lock(&self.tripped) = None;
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every update is
/// one assignment).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Binding {
    pub fn new(
        key: String,
        policy: &'static Policy,
        observer: Box<dyn Observer + Send + Sync>,
        link: Arc<LinkShared>,
        tx: Sender<Request>,
    ) -> Binding {
        Binding {
            key,
            fingerprint: crate::value::fingerprint(policy),
            link,
            tx,
            mode: AtomicU8::new(LOCAL),
            local_ops: AtomicUsize::new(0),
            local_probes: AtomicUsize::new(0),
            slow_reported: AtomicBool::new(false),
            side: Mutex::default(),
            mirror: SharedBreaker::with_observer(
                policy,
                Tap {
                    user: observer,
                    tripped: Mutex::new(None),
                },
            ),
        }
    }

    pub fn now(&self) -> Instant {
        self.link.clock.now()
    }

    pub fn is_shared(&self) -> bool {
        self.mode.load(Ordering::SeqCst) == SHARED
    }

    /// Goes apart from Redis (the link lost it, a call waited too long, or a bad value).
    pub fn go_local(&self) {
        if self.mode.swap(LOCAL, Ordering::SeqCst) == SHARED {
            self.mirror.observer().forget();
        }
    }

    /// Declares the breaker shared again, once no call is running an operation on the
    /// mirror: from then on only the link writes it.
    pub fn go_shared(&self) {
        self.mode.store(SHARED, Ordering::SeqCst);
        while self.local_ops.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        self.slow_reported.store(false, Ordering::SeqCst);
    }

    pub fn local_probes(&self) -> usize {
        self.local_probes.load(Ordering::SeqCst)
    }

    /// Runs `op` on the mirror as the local breaker, if the breaker is apart; `None` if it
    /// is shared (the caller then asks the link).
    fn local(&self, op: WordOp, now: Instant) -> Option<Option<Result<WordTicket, Refused>>> {
        self.local_ops.fetch_add(1, Ordering::SeqCst);
        let result = if self.mode.load(Ordering::SeqCst) == LOCAL {
            Some(self.mirror.apply(op, now))
        } else {
            None
        };
        self.local_ops.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Reports a call that waited the whole timeout, once until the next resync (which is
    /// then reported too).
    fn report_slow(&self) {
        if !self.slow_reported.swap(true, Ordering::SeqCst) {
            lock(&self.side).apart_reported = true;
            (self.link.config.log)(&LinkEvent::Slow { key: self.key.clone() });
        }
    }

    /// Runs `op` through Redis, waiting at most the timeout; past it (or apart from Redis)
    /// on the local breaker. What the gate's transitions and the manual controls use.
    fn decide(self: &Arc<Self>, op: WordOp) -> Option<Result<Admission, Refused>> {
        // A mode that flips under a call sends it round again; after a few rounds (Redis
        // flapping faster than a round trip) the local breaker decides regardless.
        for _ in 0..4 {
            let now = self.now();
            if let Some(local) = self.local(op, now) {
                return local.map(|r| r.map(|t| self.admitted_locally(t)));
            }
            let slot = Slot::new();
            let request = Request::Decide {
                binding: self.clone(),
                op,
                slot: slot.clone(),
            };
            if self.tx.send(request).is_err() {
                // The link thread is gone (only while the process shuts down).
                self.go_local();
                continue;
            }
            match slot.wait(self.link.config.timeout) {
                Some(reply) => {
                    if let Some(decided) = self.settle(reply) {
                        return decided;
                    }
                }
                None => {
                    self.report_slow();
                    self.go_local();
                }
            }
        }
        let now = self.now();
        self.mirror.apply(op, now).map(|r| r.map(|t| self.admitted_locally(t)))
    }

    /// The same as [`Binding::decide`], awaiting the link instead of blocking.
    async fn decide_async(self: &Arc<Self>, op: WordOp) -> Option<Result<Admission, Refused>> {
        for _ in 0..4 {
            let now = self.now();
            if let Some(local) = self.local(op, now) {
                return local.map(|r| r.map(|t| self.admitted_locally(t)));
            }
            let slot = Slot::new();
            let request = Request::Decide {
                binding: self.clone(),
                op,
                slot: slot.clone(),
            };
            if self.tx.send(request).is_err() {
                self.go_local();
                continue;
            }
            match slot.wait_async(self.link.config.timeout).await {
                Some(reply) => {
                    if let Some(decided) = self.settle(reply) {
                        return decided;
                    }
                }
                None => {
                    self.report_slow();
                    self.go_local();
                }
            }
        }
        let now = self.now();
        self.mirror.apply(op, now).map(|r| r.map(|t| self.admitted_locally(t)))
    }

    /// What a reply from the link decides; `None` for "decide locally".
    fn settle(&self, reply: Reply) -> Option<Option<Result<Admission, Refused>>> {
        match reply {
            Reply::Admitted(ticket) => Some(Some(Ok(Admission { ticket, local: false }))),
            Reply::Refused(r) => Some(Some(Err(r))),
            Reply::Done => Some(None),
            Reply::Local => None,
        }
    }

    fn admitted_locally(&self, ticket: WordTicket) -> Admission {
        if ticket.is_probe() {
            self.local_probes.fetch_add(1, Ordering::SeqCst);
        }
        Admission { ticket, local: true }
    }

    /// The gate off the happy path: decided on the mirror when nothing changes, through
    /// Redis when the step is a transition.
    fn gate(self: &Arc<Self>, word: u64) -> Result<Admission, Refused> {
        let now = self.now();
        if let Some(local) = self.local(WordOp::Acquire, now) {
            return admission(local).map(|t| self.admitted_locally(t));
        }
        let step = self.mirror.step_word(word, WordOp::Acquire, now);
        if step.word() == word {
            self.mirror.account(&step);
            return admission(step.admitted()).map(|ticket| Admission { ticket, local: false });
        }
        admission_of(self.decide(WordOp::Acquire))
    }

    async fn gate_async(self: &Arc<Self>, word: u64) -> Result<Admission, Refused> {
        let now = self.now();
        if let Some(local) = self.local(WordOp::Acquire, now) {
            return admission(local).map(|t| self.admitted_locally(t));
        }
        let step = self.mirror.step_word(word, WordOp::Acquire, now);
        if step.word() == word {
            self.mirror.account(&step);
            return admission(step.admitted()).map(|ticket| Admission { ticket, local: false });
        }
        admission_of(self.decide_async(WordOp::Acquire).await)
    }

    /// Reports an outcome: on the local breaker while apart, otherwise handed to the link
    /// (the caller does not wait). An outcome that changes nothing on the mirror is not sent.
    fn record(self: &Arc<Self>, admission: Admission, outcome: Outcome) {
        let now = self.now();
        let op = WordOp::Record(admission.ticket, outcome);
        if self.local(op, now).is_none() {
            let word = self.mirror.word();
            let step = self.mirror.step_word(word, op, now);
            if step.word() == word {
                self.mirror.account(&step);
            } else if self
                .tx
                .send(Request::Record {
                    binding: self.clone(),
                    op,
                    now,
                })
                .is_err()
            {
                // The link thread is gone (only while the process shuts down).
                self.mirror.apply(op, now);
            }
        }
        if admission.local && admission.ticket.is_probe() {
            self.local_probes.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn admission(decision: Option<Result<WordTicket, Refused>>) -> Result<WordTicket, Refused> {
    // `Acquire` always decides; the refusal below is unreachable, and refuses softly.
    decision.unwrap_or(Err(Refused {
        reason: breaker_core::RefusalReason::Probing,
        retry_in: None,
    }))
}

fn admission_of(decision: Option<Result<Admission, Refused>>) -> Result<Admission, Refused> {
    decision.unwrap_or(Err(Refused {
        reason: breaker_core::RefusalReason::Probing,
        retry_in: None,
    }))
}

/// A call's leave to go ahead: its ticket, and whether the local breaker granted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Admission {
    ticket: WordTicket,
    local: bool,
}

impl fmt::Debug for RedisBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBreaker")
            .field("key", &self.inner.key)
            .field("shared", &self.is_shared())
            .field("state", &self.state())
            .field("counters", &self.counters())
            .finish()
    }
}

impl RedisBreaker {
    /// Runs `f` if the shared breaker allows it and reports its outcome, classifying its
    /// error with [`Classify`]. Closed with no strikes pending, nothing but the local mirror
    /// is read.
    #[inline]
    pub fn call<T, E: Classify>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, CallError<E>> {
        self.call_classified(f, |e| e.verdict())
    }

    /// [`RedisBreaker::call`] with the verdict given by `classify`.
    #[inline]
    pub fn call_classified<T, E>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let word = self.inner.mirror.word();
        if let Some(ticket) = WordTicket::hot(word) {
            // Closed, nothing pending: as `SharedBreaker::call`, no guard is needed (a call
            // that never answers in closed is neutral).
            return match f() {
                Ok(v) => {
                    if WordTicket::hot(self.inner.mirror.word()).is_none() {
                        self.inner.record(Admission { ticket, local: false }, Outcome::Success);
                    }
                    Ok(v)
                }
                Err(e) => {
                    self.inner
                        .record(Admission { ticket, local: false }, Outcome::Error(classify(&e)));
                    Err(CallError::Inner(e))
                }
            };
        }
        self.call_slow(word, f, classify)
    }

    #[cold]
    #[inline(never)]
    fn call_slow<T, E>(
        &self,
        word: u64,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&E) -> Verdict,
    ) -> Result<T, CallError<E>> {
        let admission = self.inner.gate(word).map_err(CallError::Refused)?;
        let permit = self.permit(admission);
        match f() {
            Ok(v) => {
                permit.record(Outcome::Success);
                Ok(v)
            }
            Err(e) => {
                permit.record(Outcome::Error(classify(&e)));
                Err(CallError::Inner(e))
            }
        }
    }

    /// Awaits `f` if the shared breaker allows it and reports its outcome. The gate's wait
    /// for Redis is awaited, never blocking the executor (no runtime is assumed). Dropped
    /// mid-call, a probe counts as failed, so the shared breaker never wedges in half-open.
    pub async fn call_async<T, E: Classify>(&self, f: impl Future<Output = Result<T, E>>) -> Result<T, CallError<E>> {
        let word = self.inner.mirror.word();
        let admission = match WordTicket::hot(word) {
            Some(ticket) => Admission { ticket, local: false },
            None => self.inner.gate_async(word).await.map_err(CallError::Refused)?,
        };
        let permit = self.permit(admission);
        match f.await {
            Ok(v) => {
                permit.record(Outcome::Success);
                Ok(v)
            }
            Err(e) => {
                permit.record(Outcome::Error(e.verdict()));
                Err(CallError::Inner(e))
            }
        }
    }

    /// The mutating gate: may a call go ahead now? The returned permit is a guard: dropped
    /// unanswered, a probe counts as failed and any other call as neutral.
    pub fn try_acquire(&self) -> Result<RedisPermit<'_>, Refused> {
        let word = self.inner.mirror.word();
        let admission = match WordTicket::hot(word) {
            Some(ticket) => Admission { ticket, local: false },
            None => self.inner.gate(word)?,
        };
        Ok(self.permit(admission))
    }

    /// [`RedisBreaker::try_acquire`], awaiting Redis instead of blocking.
    pub async fn acquire_async(&self) -> Result<RedisPermit<'_>, Refused> {
        let word = self.inner.mirror.word();
        let admission = match WordTicket::hot(word) {
            Some(ticket) => Admission { ticket, local: false },
            None => self.inner.gate_async(word).await?,
        };
        Ok(self.permit(admission))
    }

    fn permit(&self, admission: Admission) -> RedisPermit<'_> {
        RedisPermit {
            breaker: self,
            admission,
            answered: false,
        }
    }

    /// The pure oracle: would a call be allowed now? Reads the mirror only.
    pub fn would_allow(&self) -> bool {
        self.inner.mirror.would_allow(self.now())
    }

    /// The state now, as this replica's mirror shows it (at most one refresh interval
    /// behind Redis while shared; the local breaker's while apart).
    pub fn state(&self) -> State {
        self.inner.mirror.state(self.now())
    }

    /// The phase now (see [`RedisBreaker::state`]).
    pub fn phase(&self) -> Phase {
        self.state().phase()
    }

    /// This replica's counters: its own failures, skips, the trips and probes its calls
    /// made, and its lease expiries (the `calls`, `successes` and `neutrals` of a
    /// [`SharedBreaker`] are not kept).
    pub fn counters(&self) -> Counters {
        self.inner.mirror.counters()
    }

    /// Opens the shared breaker at once as a trip would (see
    /// [`SharedBreaker::trip`]); waits for Redis at most the timeout.
    pub fn trip(&self, why: Reason) {
        self.inner.decide(WordOp::Trip(why));
    }

    /// Opens the shared breaker until [`RedisBreaker::reset`].
    pub fn force_open(&self) {
        self.inner.decide(WordOp::ForceOpen);
    }

    /// Closes the shared breaker, with strikes, probe streak and backoff zeroed.
    pub fn reset(&self) {
        self.inner.decide(WordOp::Reset);
    }

    /// Whether this replica follows Redis now (`false`: its local breaker decides, until
    /// the link resynchronises it).
    pub fn is_shared(&self) -> bool {
        self.inner.is_shared()
    }

    /// The key in Redis.
    pub fn key(&self) -> &str {
        &self.inner.key
    }

    /// The shared time, as this replica reads it.
    pub fn now(&self) -> Instant {
        self.inner.now()
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        self.inner.mirror.policy()
    }

    /// The local mirror: the [`SharedBreaker`] whose word follows Redis's (for its
    /// [`word`](SharedBreaker::word), to watch it; changing it by hand desynchronises it).
    pub fn mirror(&self) -> &SharedBreaker<dyn Observer + Send + Sync> {
        &self.inner.mirror
    }
}

/// Leave to make one call through a [`RedisBreaker`]: a guard, as
/// [`SharedPermit`](breaker_core::SharedPermit) is.
#[must_use = "report the call's outcome; dropping the permit counts a probe as failed"]
pub struct RedisPermit<'a> {
    breaker: &'a RedisBreaker,
    admission: Admission,
    answered: bool,
}

impl fmt::Debug for RedisPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPermit")
            .field("probe", &self.is_probe())
            .field("local", &self.is_local())
            .finish()
    }
}

impl RedisPermit<'_> {
    /// Whether this call is the half-open probe.
    pub fn is_probe(&self) -> bool {
        self.admission.ticket.is_probe()
    }

    /// Whether the replica's local breaker granted it (apart from Redis), not the shared one.
    pub fn is_local(&self) -> bool {
        self.admission.local
    }

    /// Reports the call's outcome (never waits for Redis).
    pub fn record(mut self, outcome: Outcome) {
        self.answered = true;
        let hot = outcome == Outcome::Success
            && !self.admission.ticket.is_probe()
            && WordTicket::hot(self.breaker.inner.mirror.word()).is_some();
        if hot {
            return;
        }
        self.breaker.inner.record(self.admission, outcome);
    }

    /// Reports success.
    pub fn success(self) {
        self.record(Outcome::Success)
    }

    /// Reports a failed (or neutral) call with its verdict.
    pub fn failure(self, verdict: Verdict) {
        self.record(Outcome::Error(verdict))
    }
}

impl Drop for RedisPermit<'_> {
    fn drop(&mut self) {
        if !self.answered && self.admission.ticket.is_probe() {
            self.breaker.inner.record(self.admission, Outcome::STRIKE);
        }
    }
}

// The mirror's observer must be `Send + Sync` for the breaker to be shared between threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RedisBreaker>();
};

/// The ticket a [`RedisBreaker`]'s gate hands out through [`CircuitBreaker`]: what
/// [`RedisPermit`] carries.
#[derive(Clone, Copy, Debug)]
pub struct RedisTicket(Admission);

impl RedisTicket {
    /// Whether the replica's local breaker granted it (apart from Redis), not the shared one.
    pub fn is_local(&self) -> bool {
        self.0.local
    }
}

impl CallTicket for RedisTicket {
    fn is_probe(&self) -> bool {
        self.0.ticket.is_probe()
    }
}

/// [`CircuitBreaker`] for a [`RedisBreaker`] (itself a handle: its clones share the one
/// breaker, so it goes into a tower layer as it is) and for `&RedisBreaker`. It reads the replicas'
/// shared time ([`RedisBreaker::now`]), not the clock a composite passes; `trip` opens the
/// shared breaker for its policy's cooldown (a longer hold is not carried to Redis).
macro_rules! redis_circuit_breaker {
    ($($handle:ty),*) => {$(
        impl CircuitBreaker for $handle {
            type Ticket = RedisTicket;

            fn enter<C: Clock>(&mut self, _: &C) -> Result<RedisTicket, Refused> {
                let permit = self.try_acquire()?;
                let admission = permit.admission;
                // Handed over to the ticket: answered by `report` or `abandon`.
                core::mem::forget(permit);
                Ok(RedisTicket(admission))
            }
            fn report<C: Clock>(&mut self, ticket: RedisTicket, outcome: Outcome, _: &C) {
                self.permit(ticket.0).record(outcome)
            }
            fn abandon<C: Clock>(&mut self, ticket: RedisTicket, _: &C) {
                drop(self.permit(ticket.0))
            }
            fn state<C: Clock>(&self, _: &C) -> State {
                RedisBreaker::state(self)
            }
            fn would_allow<C: Clock>(&self, _: &C) -> bool {
                RedisBreaker::would_allow(self)
            }
            fn trip<C: Clock>(&mut self, why: Reason, _: breaker_core::Duration, _: &C) {
                RedisBreaker::trip(self, why)
            }
            fn policy(&self) -> Policy {
                *RedisBreaker::policy(self)
            }
            fn counters(&self) -> Counters {
                RedisBreaker::counters(self)
            }
        }
    )*};
}

redis_circuit_breaker!(RedisBreaker, &RedisBreaker);

// A Redis-shared breaker's gate guards whatever call goes through it.
impl breaker_core::GuardsCalls for RedisBreaker {}
impl breaker_core::GuardsCalls for &RedisBreaker {}
