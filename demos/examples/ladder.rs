//! loopctl's comparison, computed: a 5-minute outage, a 2-minute timeout per call, several
//! callers, plain retries against retries + breaker, on a manual clock.
//!
//! ```text
//! cargo run -p demos --example ladder
//! ```
//!
//! Each caller sends a request every 10 s, outage or not (its own users keep asking), each
//! request on its own task. A request is retried up to 3 times (1 s, x2, capped at 8 s,
//! full jitter, a seed per request). A call started while the service is down hangs for
//! the whole 2-minute timeout, then fails (a strike); a call started while it is up
//! answers in 200 ms. The plain retries send every attempt; the retries with a breaker
//! climb the same ladder through one shared breaker (trip after 3 strikes, cooldown 30 s,
//! a probe lease longer than the timeout). Every figure is counted while the simulation
//! runs: the callers are async tasks on a tiny single-threaded executor whose timers run
//! on the manual clock, and the breaker's ladder is the library's own `Ladder::call_async`.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use breaker_core::{
    CallError, Classify, Clock, Duration, Instant, Jitter, ManualClock, Observer, Phase, Policy, RetryPolicy,
    SharedBreaker, Transition, Verdict,
};

/// How many callers share the service.
const CALLERS: u32 = 6;
/// The outage: the service is down from 1:00 to 6:00.
const OUTAGE_START: u32 = 60_000;
const OUTAGE_END: u32 = 6 * 60_000;
/// Callers send no new request from this instant on.
const LAST_REQUEST: u32 = 12 * 60_000;
/// A call started during the outage hangs this long, then times out.
const TIMEOUT: Duration = Duration::from_mins(2);
/// A call started while the service is up answers after this.
const LATENCY: Duration = Duration::from_millis(200);
/// How often each caller sends a request.
const EVERY: u32 = 10_000;

static RETRY: RetryPolicy = RetryPolicy::new(3, Duration::from_secs(1))
    .with_max_delay(Duration::from_secs(8))
    .with_jitter(Jitter::Full);
static BREAKER: Policy = Policy::new(3, Duration::from_secs(30)).with_probe_lease(Duration::from_secs(150));

// ---- a tiny executor whose timers run on the manual clock ------------------------------

/// The simulation's time: the manual clock, and the deadlines timers wait for.
struct Sim {
    clock: ManualClock,
    deadlines: RefCell<BinaryHeap<Reverse<u32>>>,
}

impl Sim {
    fn now_ms(&self) -> u32 {
        self.clock.now().as_millis()
    }

    fn sleep(&self, d: Duration) -> Timer<'_> {
        Timer {
            sim: self,
            until: self.now_ms() + d.as_millis(),
        }
    }

    /// Polls every task until all are done: at each instant until none can move, then on
    /// to the next deadline.
    fn run(&self, tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>>) {
        let mut tasks: Vec<Option<_>> = tasks.into_iter().map(Some).collect();
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            for slot in tasks.iter_mut() {
                if let Some(task) = slot {
                    if task.as_mut().poll(&mut cx).is_ready() {
                        *slot = None;
                    }
                }
            }
            if tasks.iter().all(Option::is_none) {
                return;
            }
            let mut deadlines = self.deadlines.borrow_mut();
            let now = self.now_ms();
            if deadlines.peek().is_some_and(|Reverse(d)| *d <= now) {
                while deadlines.peek().is_some_and(|Reverse(d)| *d <= now) {
                    deadlines.pop();
                }
                continue;
            }
            let Some(Reverse(next)) = deadlines.pop() else {
                panic!("tasks are waiting, but no timer will wake them");
            };
            self.clock.set(Instant::from_millis(next));
        }
    }
}

/// A timer on the simulation's clock.
struct Timer<'s> {
    sim: &'s Sim,
    until: u32,
}

impl Future for Timer<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.sim.now_ms() >= self.until {
            Poll::Ready(())
        } else {
            self.sim.deadlines.borrow_mut().push(Reverse(self.until));
            Poll::Pending
        }
    }
}

// ---- the service and what it sees ------------------------------------------------------

#[derive(Debug)]
struct Timeout;

impl Classify for Timeout {
    fn verdict(&self) -> Verdict {
        Verdict::Strike
    }
}

/// The upstream, and everything counted about the run.
#[derive(Default)]
struct Stats {
    calls: Cell<u32>,
    calls_while_down: Cell<u32>,
    /// Calls arriving in each minute of the outage.
    per_minute: RefCell<Vec<u32>>,
    waited_on_timeouts: Cell<u64>,
    requests: Cell<u32>,
    failed_requests: Cell<u32>,
    /// The last instant a call timed out or was refused.
    last_bad: Cell<u32>,
    /// The longest a request took to answer (success or failure).
    longest: Cell<u32>,
}

impl Stats {
    fn new() -> Stats {
        let s = Stats::default();
        *s.per_minute.borrow_mut() = vec![0; ((OUTAGE_END - OUTAGE_START) / 60_000) as usize];
        s
    }

    fn bad_at(&self, at: u32) {
        self.last_bad.set(self.last_bad.get().max(at));
    }
}

/// One call to the service: hangs for the timeout if it arrives during the outage.
async fn call_service(sim: &Sim, stats: &Stats) -> Result<(), Timeout> {
    let at = sim.now_ms();
    stats.calls.set(stats.calls.get() + 1);
    if (OUTAGE_START..OUTAGE_END).contains(&at) {
        stats.calls_while_down.set(stats.calls_while_down.get() + 1);
        stats.per_minute.borrow_mut()[((at - OUTAGE_START) / 60_000) as usize] += 1;
        sim.sleep(TIMEOUT).await;
        stats
            .waited_on_timeouts
            .set(stats.waited_on_timeouts.get() + u64::from(TIMEOUT.as_millis()));
        stats.bad_at(sim.now_ms());
        Err(Timeout)
    } else {
        sim.sleep(LATENCY).await;
        Ok(())
    }
}

/// One request of caller `id`, sent at `at`; `request` decides how it retries.
async fn request<'a, Fut: Future<Output = bool> + 'a>(sim: &'a Sim, stats: &'a Stats, at: u32, request: Fut) {
    sim.sleep(Duration::from_millis(at)).await;
    stats.requests.set(stats.requests.get() + 1);
    if !request.await {
        stats.failed_requests.set(stats.failed_requests.get() + 1);
    }
    stats.longest.set(stats.longest.get().max(sim.now_ms() - at));
}

/// Plain retries: the same delays, every attempt sent.
async fn plain_request(sim: &Sim, stats: &Stats, seed: u64) -> bool {
    let mut delays = RETRY.delays(seed);
    loop {
        if call_service(sim, stats).await.is_ok() {
            return true;
        }
        match delays.next() {
            Some(d) => sim.sleep(d).await,
            None => return false,
        }
    }
}

/// Retries + breaker: the library's ladder through the shared breaker.
async fn guarded_request(sim: &Sim, stats: &Stats, breaker: &Breaker, seed: u64) -> bool {
    let retried = RETRY
        .ladder(breaker, &sim.clock)
        .seed(seed)
        .sleep(|d| sim.sleep(d))
        .call_async(async || call_service(sim, stats).await)
        .await;
    if matches!(retried.result, Err(CallError::Refused(_))) {
        stats.bad_at(sim.now_ms());
    }
    retried.result.is_ok()
}

/// Keeps the breaker's transitions, for the timeline.
#[derive(Default)]
struct Transitions(RefCell<Vec<Transition>>);

impl Observer for Transitions {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(*t);
    }
}

type Breaker = SharedBreaker<Transitions>;

/// What one way of calling did.
struct Run {
    stats: Stats,
    transitions: Vec<Transition>,
    refused: u32,
    trips: u32,
    probes: u32,
}

fn simulate(with_breaker: bool) -> Run {
    let sim = Sim {
        clock: ManualClock::new(Instant::ZERO),
        deadlines: RefCell::new(BinaryHeap::new()),
    };
    let stats = Stats::new();
    let breaker = SharedBreaker::with_observer(&BREAKER, Transitions::default());
    let mut tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = Vec::new();
    for id in 0..CALLERS {
        // Callers start a little apart; each request has its own seed.
        for (n, at) in (id * 1_700..LAST_REQUEST).step_by(EVERY as usize).enumerate() {
            let (sim, stats, breaker) = (&sim, &stats, &breaker);
            let seed = u64::from(id) << 32 | n as u64;
            if with_breaker {
                tasks.push(Box::pin(request(
                    sim,
                    stats,
                    at,
                    guarded_request(sim, stats, breaker, seed),
                )));
            } else {
                tasks.push(Box::pin(request(sim, stats, at, plain_request(sim, stats, seed))));
            }
        }
    }
    sim.run(tasks);
    let c = breaker.counters();
    Run {
        stats,
        transitions: breaker.observer().0.take(),
        refused: c.skips,
        trips: c.trips,
        probes: c.probes,
    }
}

/// `m:ss.s` on the simulation's clock.
fn clock_time(at: Instant) -> String {
    let tenths = at.as_millis() / 100;
    format!("{}:{:02}.{}", tenths / 600, tenths / 10 % 60, tenths % 10)
}

fn phase(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}

fn minutes(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}m{:02}s", s / 60, s % 60)
}

/// The whole output of the demo.
pub fn render() -> String {
    let plain = simulate(false);
    let guarded = simulate(true);
    let mut out = String::new();
    let o = &mut out;
    writeln!(
        o,
        "loopctl's comparison, computed: a 5-minute outage (1:00 to 6:00), a 2-minute timeout per call"
    )
    .unwrap();
    writeln!(
        o,
        "{CALLERS} callers, each sending a request every 10 s until 12:00; each request retried up to 3 times"
    )
    .unwrap();
    writeln!(
        o,
        "(1 s, x2, at most 8 s, full jitter); the breaker: trip 3, cooldown 30 s, probe lease 2m30s"
    )
    .unwrap();
    writeln!(o).unwrap();
    writeln!(o, "| | plain retries | retries + breaker |").unwrap();
    writeln!(o, "|---|---:|---:|").unwrap();
    let row = |o: &mut String, what: &str, a: String, b: String| writeln!(o, "| {what} | {a} | {b} |").unwrap();
    let (p, g) = (&plain.stats, &guarded.stats);
    row(
        o,
        "requests made",
        p.requests.get().to_string(),
        g.requests.get().to_string(),
    );
    row(
        o,
        "requests that failed",
        p.failed_requests.get().to_string(),
        g.failed_requests.get().to_string(),
    );
    row(
        o,
        "longest wait for an answer",
        minutes(u64::from(p.longest.get())),
        minutes(u64::from(g.longest.get())),
    );
    row(
        o,
        "calls attempted",
        p.calls.get().to_string(),
        g.calls.get().to_string(),
    );
    row(
        o,
        "calls refused instantly (nothing sent)",
        plain.refused.to_string(),
        guarded.refused.to_string(),
    );
    row(
        o,
        "time callers spent waiting on timeouts",
        minutes(p.waited_on_timeouts.get()),
        minutes(g.waited_on_timeouts.get()),
    );
    row(
        o,
        "calls that hit the service while it was down",
        p.calls_while_down.get().to_string(),
        g.calls_while_down.get().to_string(),
    );
    let per_minute = |s: &Stats| {
        s.per_minute
            .borrow()
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    row(o, "  of them, per minute of the outage", per_minute(p), per_minute(g));
    let full_traffic = |s: &Stats| minutes(u64::from(s.last_bad.get().saturating_sub(OUTAGE_END)));
    row(
        o,
        "time to full traffic after the fix",
        full_traffic(p),
        full_traffic(g),
    );
    row(
        o,
        "breaker trips / probes",
        "-".to_string(),
        format!("{} / {}", guarded.trips, guarded.probes),
    );
    writeln!(o).unwrap();
    writeln!(
        o,
        "\"time to full traffic\": from the fix until the last call that timed out or was refused; every call after it succeeds."
    )
    .unwrap();
    writeln!(o).unwrap();
    writeln!(o, "The breaker's transitions:").unwrap();
    for t in &guarded.transitions {
        writeln!(
            o,
            "  {}  {} -> {} ({})",
            clock_time(t.at),
            phase(t.from),
            phase(t.to),
            t.why.words()
        )
        .unwrap();
    }
    writeln!(
        o,
        "No call fails until the first timeouts, 2 minutes into the outage: only then can the breaker trip.\n\
         Each late timeout restarts its cooldown (fresh bad news restarts the wait), and a probe let through\n\
         while the service is down hangs for the whole timeout, even past the fix."
    )
    .unwrap();
    out
}

#[allow(dead_code)] // The output test includes this file as a module and calls `render`.
fn main() {
    print!("{}", render());
}
