//! The link: one Redis connection and one thread that do every network round trip of a replica's breakers, so that no call ever waits on a socket.
//!
//! The thread serves requests in order (a gate's transition, which a call waits for; an
//! outcome, which nobody waits for; a refresh) and, every refresh interval, reads every key
//! it serves in one round trip. Each change of a word is the machine's step computed here
//! and swapped into Redis by a script; a swap that finds another word steps again on it. Any
//! error drops the connection and sends every breaker apart, onto its local state; the thread
//! then tries Redis again every retry interval and joins the states when it answers (see
//! [`Resync`](crate::Resync)).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{Instant, Observer, Outcome, Policy, Verdict, WordOp, WordStep};
use redis::IntoConnectionInfo;

use crate::breaker::{lock, Binding};
use crate::clock::SharedClock;
use crate::config::TimeBase;
use crate::reconcile::{self, Plan};
use crate::slot::{Reply, Slot};
use crate::store::{Cas, Store};
use crate::value::{self, ValueError};
use crate::{Config, LinkEvent, RedisBreaker, Resync};

/// What every breaker of a link shares with it.
pub(crate) struct LinkShared {
    pub clock: SharedClock,
    pub config: Config,
    connected: AtomicBool,
    round_trips: Arc<AtomicU64>,
}

/// What a call hands the link thread.
pub(crate) enum Request {
    /// A new breaker: read its key once, then answer.
    Register { binding: Arc<Binding>, slot: Arc<Slot> },
    /// An operation whose answer a call waits for (a gate's transition, trip, force open, reset).
    Decide {
        binding: Arc<Binding>,
        op: WordOp,
        slot: Arc<Slot>,
    },
    /// An outcome, at the instant it happened; nobody waits for it.
    Record {
        binding: Arc<Binding>,
        op: WordOp,
        now: Instant,
    },
    /// Everything before it handled, read Redis now, then answer.
    Refresh { slot: Arc<Slot> },
}

/// A replica's connection to Redis, serving any number of [`RedisBreaker`]s, each bound to
/// its own key.
///
/// ```no_run
/// use breaker_core::{Classify, Duration, Policy};
/// use breaker_redis::{Config, RedisLink};
///
/// #[derive(Debug)]
/// struct Timeout;
/// impl Classify for Timeout {} // a strike
///
/// static POLICY: Policy = Policy::new(3, Duration::from_secs(30));
///
/// let link = RedisLink::open("redis://127.0.0.1:6390/", Config::default())?;
/// let payments = link.breaker("breaker:payments", &POLICY);
/// let answer = payments.call(|| Ok::<_, Timeout>(42));
/// # Ok::<(), redis::RedisError>(())
/// ```
///
/// Opening never fails on an unreachable server: the breakers start on their local state
/// and join Redis when it answers. The link's thread ends when the link and all its breakers
/// are dropped.
pub struct RedisLink {
    shared: Arc<LinkShared>,
    tx: Sender<Request>,
}

impl core::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RedisLink")
            .field("connected", &self.is_connected())
            .field("config", &self.shared.config)
            .finish()
    }
}

impl RedisLink {
    /// A link to the server at `url` (`redis://host:port/db`, or anything the client
    /// accepts). Fails only on a malformed address; the server is contacted by the link's
    /// thread.
    pub fn open(url: impl IntoConnectionInfo, config: Config) -> redis::RedisResult<RedisLink> {
        let client = redis::Client::open(url)?;
        let clock = match &config.time {
            TimeBase::Redis(local) => SharedClock::following_redis(local.clone()),
            TimeBase::Given(clock) => SharedClock::given(clock.clone()),
        };
        let shared = Arc::new(LinkShared {
            clock,
            config,
            connected: AtomicBool::new(false),
            round_trips: Arc::default(),
        });
        let (tx, rx) = mpsc::channel();
        let worker = Worker {
            store: Store::new(client, shared.config.timeout, shared.round_trips.clone()),
            shared: shared.clone(),
            bindings: Vec::new(),
            down_reported: false,
            next_tick: StdInstant::now(),
        };
        std::thread::Builder::new()
            .name("breaker-redis-link".into())
            .spawn(move || worker.run(rx))
            .map_err(redis::RedisError::from)?;
        Ok(RedisLink { shared, tx })
    }

    /// The breaker bound to `key`, following `policy` (every replica sharing the key must
    /// follow the same policy: the value says which, and a replica with another reports it
    /// and stays local). Waits for the key's first read, at most a few timeouts.
    pub fn breaker(&self, key: impl Into<String>, policy: &'static Policy) -> RedisBreaker {
        self.breaker_with_observer(key, policy, ())
    }

    /// [`RedisLink::breaker`] with an observer of the transitions this replica makes.
    pub fn breaker_with_observer(
        &self,
        key: impl Into<String>,
        policy: &'static Policy,
        observer: impl Observer + Send + Sync + 'static,
    ) -> RedisBreaker {
        let binding = Arc::new(Binding::new(
            key.into(),
            policy,
            Box::new(observer),
            self.shared.clone(),
            self.tx.clone(),
        ));
        let slot = Slot::new();
        let registered = self.tx.send(Request::Register {
            binding: binding.clone(),
            slot: slot.clone(),
        });
        if registered.is_ok() {
            // Connect and read: two round trips, each bounded by the timeout.
            slot.wait(self.shared.config.timeout * 3);
        }
        RedisBreaker { inner: binding }
    }

    /// Waits until the link has handled everything its breakers handed it before, then reads
    /// Redis (reconnecting and resynchronising if apart). Every round trip in it is bounded
    /// by the timeout. For tests and demos that need the replicas in step.
    pub fn refresh(&self) {
        let slot = Slot::new();
        if self.tx.send(Request::Refresh { slot: slot.clone() }).is_ok() {
            slot.wait(StdDuration::from_secs(3600));
        }
    }

    /// Whether the link's connection to Redis is up.
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::SeqCst)
    }

    /// The shared time, as this replica reads it.
    pub fn now(&self) -> Instant {
        use breaker_core::Clock;
        self.shared.clock.now()
    }

    /// The round trips to Redis the link has made so far (polls, compare-and-swaps; not
    /// connection set-ups): what the breakers' calls cost in network traffic.
    pub fn round_trips(&self) -> u64 {
        self.shared.round_trips.load(Ordering::Relaxed)
    }

    /// How far this replica's shared time is from its local clock, in wrapping milliseconds
    /// (shared minus local): what the link learned from Redis's `TIME`.
    pub fn clock_offset(&self) -> u32 {
        self.shared.clock.offset()
    }
}

/// The link thread.
struct Worker {
    shared: Arc<LinkShared>,
    store: Store,
    bindings: Vec<Weak<Binding>>,
    /// `Unreachable` was reported for the current outage.
    down_reported: bool,
    next_tick: StdInstant,
}

/// How many compare-and-swaps one operation tries before it gives the decision back.
const CAS_TRIES: usize = 16;

impl Worker {
    fn run(mut self, rx: Receiver<Request>) {
        loop {
            let now = StdInstant::now();
            if now >= self.next_tick {
                self.tick();
                self.schedule();
                continue;
            }
            match rx.recv_timeout(self.next_tick - now) {
                Ok(request) => self.handle(request),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn schedule(&mut self) {
        let config = &self.shared.config;
        let every = if self.store.is_connected() {
            config.refresh
        } else {
            config.retry
        };
        self.next_tick = StdInstant::now() + every;
    }

    fn now(&self) -> Instant {
        use breaker_core::Clock;
        self.shared.clock.now()
    }

    fn log(&self, event: &LinkEvent) {
        (self.shared.config.log)(event);
    }

    fn live(&mut self) -> Vec<Arc<Binding>> {
        self.bindings.retain(|b| b.strong_count() > 0);
        self.bindings.iter().filter_map(Weak::upgrade).collect()
    }

    fn handle(&mut self, request: Request) {
        match request {
            Request::Register { binding, slot } => {
                self.bindings.push(Arc::downgrade(&binding));
                self.read(std::slice::from_ref(&binding));
                let _ = slot.put(Reply::Done);
            }
            Request::Decide { binding, op, slot } => {
                if slot.is_closed() {
                    return; // the caller gave up and decided locally
                }
                let now = self.now();
                let reply = if binding.is_shared() {
                    self.run_shared(&binding, op, now).unwrap_or(Reply::Local)
                } else {
                    Reply::Local
                };
                if let Err(Reply::Admitted(ticket)) = slot.put(reply) {
                    if ticket.is_probe() {
                        // Granted after its caller gave up: hand the probe slot back.
                        let release = WordOp::Record(ticket, Outcome::Error(Verdict::Neutral));
                        self.run_shared(&binding, release, now);
                    }
                }
            }
            Request::Record { binding, op, now } => {
                let done = binding.is_shared() && self.run_shared(&binding, op, now).is_some();
                if !done {
                    binding.mirror.apply(op, now);
                }
            }
            Request::Refresh { slot } => {
                self.tick();
                self.schedule();
                let _ = slot.put(Reply::Done);
            }
        }
    }

    /// Reads every key (reconnecting if apart) and follows what it finds.
    fn tick(&mut self) {
        let live = self.live();
        if !live.is_empty() {
            self.read(&live);
        }
    }

    fn read(&mut self, bindings: &[Arc<Binding>]) {
        let keys: Vec<&str> = bindings.iter().map(|b| b.key.as_str()).collect();
        match self.store.read(&keys, &self.shared.clock) {
            Err(e) => self.go_down(&e),
            Ok(values) => {
                self.shared.connected.store(true, Ordering::SeqCst);
                self.down_reported = false;
                // Connected: the next read comes a refresh interval later at most.
                self.next_tick = self.next_tick.min(StdInstant::now() + self.shared.config.refresh);
                for (binding, value) in bindings.iter().zip(values) {
                    if !self.store.is_connected() {
                        break;
                    }
                    self.follow(binding, value);
                }
            }
        }
    }

    /// Follows what a read found in a breaker's key.
    fn follow(&mut self, binding: &Arc<Binding>, value: Option<Vec<u8>>) {
        let found = match value {
            None => None,
            Some(v) => match self.decode(binding, &v) {
                Ok(w) => Some(w),
                Err(e) => return self.bad_value(binding, e),
            },
        };
        match found {
            Some(w) if binding.is_shared() => {
                lock(&binding.side).base = Some(w);
                install(binding, w);
            }
            _ => self.reconcile(binding, found),
        }
    }

    fn decode(&self, binding: &Binding, value: &[u8]) -> Result<u64, ValueError> {
        let word = value::decode(value, binding.fingerprint)?;
        if binding.mirror.admits_word(word) {
            lock(&binding.side).reported = None;
            Ok(word)
        } else {
            Err(ValueError::Invalid)
        }
    }

    /// A key holds a value this breaker will not obey: report it (once) and stay local.
    fn bad_value(&mut self, binding: &Binding, error: ValueError) {
        binding.go_local();
        let mut side = lock(&binding.side);
        if side.reported != Some(error) {
            side.reported = Some(error);
            side.apart_reported = true;
            drop(side);
            self.log(&LinkEvent::BadValue {
                key: binding.key.clone(),
                error,
            });
        }
    }

    /// Redis failed: every breaker goes apart onto its local state.
    fn go_down(&mut self, error: &redis::RedisError) {
        self.store.disconnect();
        self.shared.connected.store(false, Ordering::SeqCst);
        let live = self.live();
        for b in &live {
            b.go_local();
        }
        if !self.down_reported {
            self.down_reported = true;
            for b in &live {
                lock(&b.side).apart_reported = true;
            }
            let error = if error.is_timeout() {
                format!("no answer within {:?}", self.shared.config.timeout)
            } else {
                error.to_string()
            };
            self.log(&LinkEvent::Unreachable { error });
        }
        self.next_tick = StdInstant::now() + self.shared.config.retry;
    }

    /// Runs `op` on Redis's word by compare-and-swap and installs the result. `None` when it
    /// could not (Redis failed, a bad value, endless contention): the caller runs it locally.
    fn run_shared(&mut self, binding: &Arc<Binding>, op: WordOp, now: Instant) -> Option<Reply> {
        let fp = binding.fingerprint;
        let mut base = lock(&binding.side).base?;
        for _ in 0..CAS_TRIES {
            let step = binding.mirror.step_word(base, op, now);
            if step.word() == base {
                binding.mirror.account(&step);
                install(binding, base);
                return Some(reply_of(&step));
            }
            let swapped = self.store.cas(
                &binding.key,
                Some(&value::encode(base, fp)),
                &value::encode(step.word(), fp),
                &self.shared.clock,
            );
            match swapped {
                Ok(Cas::Swapped) => {
                    lock(&binding.side).base = Some(step.word());
                    install(binding, step.word());
                    binding.mirror.account(&step);
                    return Some(reply_of(&step));
                }
                Ok(Cas::Found(Some(v))) => match self.decode(binding, &v) {
                    Ok(w) => {
                        lock(&binding.side).base = Some(w);
                        install(binding, w);
                        base = w;
                    }
                    Err(e) => {
                        self.bad_value(binding, e);
                        return None;
                    }
                },
                Ok(Cas::Found(None)) => {
                    // The key is gone (deleted, or the server flushed): put back the word
                    // this breaker follows, then step on whatever is there.
                    match self
                        .store
                        .cas(&binding.key, None, &value::encode(base, fp), &self.shared.clock)
                    {
                        Ok(Cas::Swapped) | Ok(Cas::Found(None)) => {}
                        Ok(Cas::Found(Some(v))) => match self.decode(binding, &v) {
                            Ok(w) => base = w,
                            Err(e) => {
                                self.bad_value(binding, e);
                                return None;
                            }
                        },
                        Err(e) => {
                            lock(&binding.side).in_doubt = Some(base);
                            self.go_down(&e);
                            return None;
                        }
                    }
                }
                Err(e) => {
                    lock(&binding.side).in_doubt = Some(step.word());
                    self.go_down(&e);
                    return None;
                }
            }
        }
        None
    }

    /// Joins a breaker's local state with what Redis holds (`found`), then declares it
    /// shared.
    fn reconcile(&mut self, binding: &Arc<Binding>, mut found: Option<u64>) {
        let apart = !binding.is_shared();
        let fp = binding.fingerprint;
        let policy = binding.mirror.policy();
        for _ in 0..CAS_TRIES {
            let now = self.now();
            let local = binding.mirror.word();
            let (base, in_doubt) = {
                let side = lock(&binding.side);
                (side.base, side.in_doubt)
            };
            // Redis holding the word of this replica's own write that never answered has
            // not moved: that write's operation is in the local history too (a call that
            // got no answer decided locally, an outcome not swapped in was applied locally).
            let base = if found.is_some() && found == in_doubt {
                found
            } else {
                base
            };
            let tripped = if binding.is_shared() {
                None
            } else {
                binding.mirror.observer().tripped()
            };
            let plan = reconcile::plan(policy, local, base, found, tripped, now);
            if binding.local_probes() > 0 && !matches!(plan, Plan::Push { .. }) {
                // A probe the local breaker granted is out and Redis moved on: meet again
                // once it has answered (its lease bounds the wait). Had Redis not moved (or
                // lost the key), it takes the local word, probe slot and all.
                return;
            }
            // The word this join writes, in doubt if the connection fails with it out.
            let writing = match plan {
                Plan::Push { .. } => Some(local),
                Plan::Trip { why, at } => found.map(|f| binding.mirror.step_word(f, WordOp::Trip(why), at).word()),
                Plan::Adopt => None,
            };
            let joined = match plan {
                Plan::Push { expected, how } if expected == Some(local) => Ok(Ok((local, how, None))),
                Plan::Push { expected, how } => {
                    let expected = expected.map(|w| value::encode(w, fp));
                    self.store
                        .cas(
                            &binding.key,
                            expected.as_ref().map(|v| &v[..]),
                            &value::encode(local, fp),
                            &self.shared.clock,
                        )
                        .map(|cas| swapped(cas, (local, how, None)))
                }
                // `plan` adopts or trips only a word Redis holds.
                Plan::Adopt | Plan::Trip { .. } if found.is_none() => Ok(Err(None)),
                Plan::Adopt => Ok(Ok((found.unwrap_or(local), Resync::Adopted, None))),
                Plan::Trip { why, at } => {
                    let f = found.unwrap_or(local);
                    let step = binding.mirror.step_word(f, WordOp::Trip(why), at);
                    self.store
                        .cas(
                            &binding.key,
                            Some(&value::encode(f, fp)),
                            &value::encode(step.word(), fp),
                            &self.shared.clock,
                        )
                        .map(|cas| swapped(cas, (step.word(), Resync::AdoptedWithTrip, Some(step))))
                }
            };
            let (want, how, step) = match joined {
                Ok(Ok(joined)) => joined,
                Ok(Err(other)) => {
                    // Redis holds something else now: plan again on it.
                    found = match other {
                        None => None,
                        Some(v) => match self.decode(binding, &v) {
                            Ok(w) => Some(w),
                            Err(e) => return self.bad_value(binding, e),
                        },
                    };
                    continue;
                }
                Err(e) => {
                    if writing.is_some() {
                        lock(&binding.side).in_doubt = writing;
                    }
                    return self.go_down(&e);
                }
            };
            if let Some(step) = step {
                binding.mirror.account(&step);
            }
            {
                let mut side = lock(&binding.side);
                side.base = Some(want);
                side.in_doubt = None;
            }
            binding.go_shared();
            let current = binding.mirror.word();
            if current != want {
                if matches!(how, Resync::Pushed | Resync::Created) && current != local {
                    // A local operation landed after the local word was read: push it too.
                    found = Some(want);
                    continue;
                }
                // Redis's word wins; only the link writes the mirror now.
                let _ = binding.mirror.replace_word(current, want);
            }
            let mut side = lock(&binding.side);
            if apart && side.apart_reported {
                side.apart_reported = false;
                drop(side);
                self.log(&LinkEvent::Resynchronised {
                    key: binding.key.clone(),
                    how,
                });
            }
            return;
        }
    }
}

type Joined = (u64, Resync, Option<WordStep>);

/// A compare-and-swap's result as the join's: done, or what Redis holds instead.
fn swapped(cas: Cas, joined: Joined) -> Result<Joined, Option<Vec<u8>>> {
    match cas {
        Cas::Swapped => Ok(joined),
        Cas::Found(other) => Err(other),
    }
}

/// Installs Redis's word in a shared breaker's mirror (a breaker apart keeps its own).
fn install(binding: &Binding, word: u64) {
    if binding.is_shared() {
        let current = binding.mirror.word();
        if current != word {
            let _ = binding.mirror.replace_word(current, word);
        }
    }
}

fn reply_of(step: &WordStep) -> Reply {
    match step.admitted() {
        Some(Ok(ticket)) => Reply::Admitted(ticket),
        Some(Err(refused)) => Reply::Refused(refused),
        None => Reply::Done,
    }
}
