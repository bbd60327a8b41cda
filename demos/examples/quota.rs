//! Squad's predictive quota breaker, "State Transitions in Practice" as a run: Ralph's
//! rounds against a simulated GitHub API on a manual clock. The seed's two worked examples,
//! consumption accelerating until the prediction opens the breaker before the rate limit is
//! hit, the 120 s cooldown, two successful rounds closing it; then a second outage (the
//! token is shared with another agent, which drains it) with amber's high-priority-only
//! rounds and re-opens of 2 m, 4 m and 8 m; then the process restarts in the middle of the
//! cooldown and resumes the wait from the state file, wall-clock time spent down counted.
//!
//! Every figure comes from the library: the gauge's forecasts and lights, the breaker's
//! cooldowns, the console lines of `QuotaLog`, the state file's JSON. With `--svg PATH` it
//! also writes the run's timeline (the breaker's `History`, drawn by `Timeline`): the
//! failures, the backoff windows growing 2m, 4m, 8m, the recoveries.
//!
//! ```text
//! cargo run -p demos --example quota --features state-file
//! cargo run -p demos --example quota --features state-file -- --svg quota-timeline.svg
//! ```

use std::cell::{Cell, RefCell};
use std::fmt::{self, Write as _};
use std::rc::Rc;
use std::time::{Duration as StdDuration, SystemTime, UNIX_EPOCH};

use breaker_core::{
    CallError, Classify, Clock, Console, Duration, Forecast, History, Instant, Light, Phase, Policy, Priority, Quota,
    QuotaGauge, QuotaGuard, QuotaLog, QuotaPolicy, RefusalReason, Sample, SharedBreaker, State, StateFile, Timeline,
    Transition, Verdict,
};

/// Squad's breaker: cooldown 2 m doubling at each re-open up to 30 m, 2 successful rounds
/// (probes) to close.
static POLICY: Policy = Policy::new(3, Duration::from_mins(2))
    .with_probes_to_close(2)
    .with_backoff(2, Duration::from_mins(30));
/// Squad's gauge: warning 120 s; green above 20 %, red at 5 % or below.
const QUOTA_POLICY: QuotaPolicy = QuotaPolicy::new();
/// GitHub's quota for an authenticated user: 5,000 requests an hour.
const LIMIT: u32 = 5_000;
/// The simulated wall clock starts at 2025-08-15 14:00:00 UTC.
const START_UNIX_S: u64 = 1_755_266_400;
/// The hourly quota window resets at this many seconds past each hour.
const RESET_PAST_THE_HOUR: u64 = 15 * 60 + 30;

// ---- the world: a wall clock, the API, the printed lines --------------------------------

/// Simulated time and the demo's output, shared by both "processes".
struct World {
    /// Seconds since 14:00:00.
    secs: Cell<u64>,
    out: RefCell<String>,
}

impl World {
    fn wall(&self) -> SystemTime {
        UNIX_EPOCH + StdDuration::from_secs(START_UNIX_S + self.secs.get())
    }

    fn stamp(&self) -> String {
        let s = 14 * 3600 + self.secs.get();
        format!("[{:02}:{:02}:{:02}]", s / 3600, s / 60 % 60, s % 60)
    }

    /// One line, stamped with the time.
    fn say(&self, line: impl fmt::Display) {
        let stamp = self.stamp();
        writeln!(self.out.borrow_mut(), "{stamp} {line}").unwrap();
    }

    /// One line without a stamp.
    fn note(&self, line: impl fmt::Display) {
        writeln!(self.out.borrow_mut(), "{line}").unwrap();
    }

    fn go_to(&self, secs: u64) {
        assert!(secs >= self.secs.get(), "time runs forward");
        self.secs.set(secs);
    }
}

/// A process's monotonic clock: milliseconds since the process started.
struct ProcessClock {
    world: Rc<World>,
    started_at: u64,
}

impl Clock for ProcessClock {
    fn now(&self) -> Instant {
        Instant::from_millis(((self.world.secs.get() - self.started_at) * 1000) as u32)
    }
}

/// Where `QuotaLog` writes: the demo's output, each line stamped like the rest.
struct Stamped(Rc<World>);

impl Console for Stamped {
    fn line(&self, line: fmt::Arguments<'_>) {
        self.0.say(line);
    }
}

/// GitHub's answer to a request over the limit.
#[derive(Debug)]
struct TooManyRequests;

impl Classify for TooManyRequests {
    fn verdict(&self) -> Verdict {
        // 429: no more load. Trips at once, and re-opens a probing breaker.
        Verdict::Trip
    }
}

/// A simulated GitHub API: 5,000 requests an hour, the window resetting at :15:30, and a
/// second agent sharing the token that drains it at 2.4 requests a second from 14:30 until
/// the window resets at 15:15:30.
struct GitHub {
    world: Rc<World>,
    remaining: Cell<u32>,
    /// When the current hourly window resets, seconds since 14:00:00.
    next_reset: Cell<u64>,
    /// Requests the other agent has made so far.
    other_agent: Cell<u64>,
}

/// The other agent drains the shared token from 14:29:50 until the window resets at
/// 15:15:30, 12 requests every 5 s.
const OTHER_AGENT: (u64, u64) = (29 * 60 + 50, 75 * 60 + 30);

impl GitHub {
    fn new(world: Rc<World>, remaining: u32) -> GitHub {
        GitHub {
            world,
            remaining: Cell::new(remaining),
            next_reset: Cell::new(RESET_PAST_THE_HOUR),
            other_agent: Cell::new(0),
        }
    }

    /// Brings the quota up to now: the other agent's requests, then every window reset.
    fn catch_up(&self) {
        let now = self.world.secs.get();
        while self.next_reset.get() <= now {
            self.other_agent_until(self.next_reset.get());
            self.remaining.set(LIMIT);
            self.next_reset.set(self.next_reset.get() + 3600);
        }
        self.other_agent_until(now);
    }

    fn other_agent_until(&self, t: u64) {
        let (from, to) = OTHER_AGENT;
        let total = t.clamp(from, to).saturating_sub(from) * 12 / 5;
        let new = total - self.other_agent.get();
        self.other_agent.set(total);
        self.remaining.set(
            self.remaining
                .get()
                .saturating_sub(u32::try_from(new).unwrap_or(u32::MAX)),
        );
    }

    /// `GET /rate_limit`: the quota, free of charge (it does not count against the limit).
    fn rate_limit(&self) -> Quota {
        self.catch_up();
        Quota::new(self.remaining.get(), LIMIT)
    }

    /// One call of `cost` requests (a page of issues, a review): the quota after it, or a
    /// 429 if the quota runs out. Every response carries the rate limit headers.
    fn request(&self, cost: u32) -> (Result<(), TooManyRequests>, Option<Quota>) {
        self.catch_up();
        let left = self.remaining.get();
        self.remaining.set(left.saturating_sub(cost));
        let quota = Some(Quota::new(self.remaining.get(), LIMIT));
        if left < cost {
            (Err(TooManyRequests), quota)
        } else {
            (Ok(()), quota)
        }
    }
}

// ---- Ralph ------------------------------------------------------------------------------

/// Ralph's breaker, keeping its last 32 transitions for the timeline.
type Breaker = SharedBreaker<History<32, QuotaLog<Stamped>>>;

fn new_breaker(w: &Rc<World>) -> Breaker {
    SharedBreaker::with_observer(&POLICY, History::new(QuotaLog::with_console(Stamped(w.clone()))))
}

/// One process of Ralph: its guarded breaker, its monotonic clock, its state file.
struct Ralph<'a> {
    world: Rc<World>,
    api: &'a GitHub,
    clock: ProcessClock,
    guard: QuotaGuard<&'a Breaker>,
    file: &'a StateFile,
    tally: &'a Tally,
}

/// What Ralph's calls met, over both processes.
#[derive(Default)]
struct Tally {
    calls: Cell<u32>,
    rate_limited: Cell<u32>,
    refused_quota_low: Cell<u32>,
}

/// One call of a round: its cost in requests and its priority.
#[derive(Clone, Copy)]
struct Work {
    cost: u32,
    priority: Priority,
}

const fn work(cost: u32, priority: Priority) -> Work {
    Work { cost, priority }
}

/// What a round did.
#[derive(Default)]
struct Done {
    calls: u32,
    refused_low: u32,
    rate_limited: bool,
}

impl<'a> Ralph<'a> {
    fn start(world: &Rc<World>, api: &'a GitHub, breaker: &'a Breaker, file: &'a StateFile, tally: &'a Tally) -> Self {
        Ralph {
            world: world.clone(),
            api,
            clock: ProcessClock {
                world: world.clone(),
                started_at: world.secs.get(),
            },
            guard: QuotaGuard::new(breaker, QUOTA_POLICY),
            file,
            tally,
        }
    }

    fn tick(&self) {
        self.world.go_to(self.world.secs.get() + 1);
    }

    /// One round: while closed it starts with a free `/rate_limit` check (in half-open the
    /// round's one call is the probe); then one call a second until the work is done or
    /// the breaker opens. The state file is saved at the end.
    fn round(&mut self, work: &[Work]) -> Done {
        let mut done = Done::default();
        let mut busy = false;
        if self.phase() == Phase::Closed {
            let quota = self.api.rate_limit();
            self.guard.observe(quota, self.clock.now());
            busy = true;
        }
        for w in work {
            if !self.guard.state(self.clock.now()).allows_call() {
                break;
            }
            if busy {
                self.tick();
            }
            busy = true;
            let api = self.api;
            match self.guard.call(&self.clock, w.priority, || api.request(w.cost)) {
                Ok(()) => done.calls += 1,
                Err(CallError::Inner(TooManyRequests)) => {
                    done.calls += 1;
                    done.rate_limited = true;
                }
                Err(CallError::Refused(r)) if r.reason == RefusalReason::QuotaLow => done.refused_low += 1,
                Err(CallError::Refused(r)) => unreachable!("Ralph does not call an open breaker: {r:?}"),
            }
        }
        let t = self.tally;
        t.calls.set(t.calls.get() + done.calls);
        t.rate_limited.set(t.rate_limited.get() + u32::from(done.rate_limited));
        t.refused_quota_low.set(t.refused_quota_low.get() + done.refused_low);
        self.save();
        done
    }

    fn phase(&self) -> Phase {
        self.guard.state(self.clock.now()).phase()
    }

    /// The wait left before the breaker lets a probe through.
    fn cooldown_left(&self) -> Option<Duration> {
        match self.guard.state(self.clock.now()) {
            State::Open { remaining, .. } => Some(remaining),
            _ => None,
        }
    }

    fn save(&self) {
        self.guard
            .save_state(self.file, self.clock.now(), self.world.wall())
            .expect("the state file is writable");
    }

    /// Sleeps until the cooldown is over: Ralph does not poll an open breaker.
    fn wait_out_cooldown(&self) {
        if let Some(left) = self.cooldown_left() {
            let secs = u64::from(left.as_millis()).div_ceil(1000);
            self.world.go_to(self.world.secs.get() + secs);
        }
    }

    /// The last quota and the gauge's forecast, for a round's line.
    fn figures(&self) -> String {
        let reading = self.guard.gauge().reading();
        let Some(q) = reading.quota else {
            return "no quota reported".into();
        };
        let light = reading.light.map_or("-", Light::name);
        match reading.forecast {
            Some(f) => format!(
                "quota {q}, {light}; {}, exhausted in ~{}s",
                rate(f.centis_per_second()),
                secs(f)
            ),
            None => format!("quota {q}, {light}"),
        }
    }

    /// A half-open round: the probe is a check of one call.
    fn probe_round(&mut self, number: u32) -> Done {
        let done = self.round(&[work(10, Priority::Normal)]);
        let q = self.guard.gauge().last().map_or(0, |s| s.remaining);
        if done.rate_limited {
            self.world.note(format_args!(
                "           Round {number}: the probe got 429 Too Many Requests"
            ));
        } else {
            self.world
                .say(format_args!("✓ Round {number} — check succeeded (quota now {q})"));
        }
        done
    }
}

fn rate(centis_per_second: u64) -> String {
    format!("{}.{:02}/s", centis_per_second / 100, centis_per_second % 100)
}

fn secs(f: Forecast) -> u32 {
    f.exhausted_in.as_millis() / 1000
}

// ---- the demo ---------------------------------------------------------------------------

fn header(w: &World) {
    w.note("PREDICTIVE QUOTA BREAKER: Squad's Ralph against a simulated GitHub API");
    w.note(format_args!(
        "  quota {LIMIT} requests an hour; the gauge keeps the last 10 samples and warns {}s ahead",
        QUOTA_POLICY.warning().as_millis() / 1000
    ));
    w.note(format_args!(
        "  traffic light: green above {green}, amber {red}-{green} (high-priority work only), red at {red} or below",
        green = QUOTA_POLICY.green_above(),
        red = QUOTA_POLICY.red_at_or_below(),
    ));
    w.note(format_args!(
        "  breaker: cooldown {} doubling at each re-open up to {}, {} successful rounds to close",
        POLICY.cooldown(),
        POLICY.max_cooldown(),
        POLICY.probes_to_close()
    ));
    w.note("");
}

fn worked_examples(w: &World) {
    w.note("the seed's worked examples (the window's first and last sample, 30 s apart)");
    for (first, last) in [(4_900, 4_850), (4_900, 4_100)] {
        let mut gauge = QuotaGauge::<10>::new(QUOTA_POLICY);
        gauge.observe(Sample::new(Instant::ZERO, first, LIMIT));
        let reading = gauge.observe(Sample::new(Instant::from_millis(30_000), last, LIMIT));
        let f = reading.forecast.expect("consumption over 30 s predicts");
        let secs = secs(f);
        let verdict = if reading.opens() {
            "OPENS"
        } else if secs < 2 * QUOTA_POLICY.warning().as_millis() / 1000 {
            "closed, but close"
        } else {
            "closed"
        };
        let minutes = if secs >= 600 {
            format!(" ({} minutes)", secs / 60)
        } else {
            String::new()
        };
        w.note(format_args!(
            "  {first} -> {last}: {} consumed in 30s = {}; at that rate the {last} left last about {secs}s{minutes}: {verdict}",
            f.consumed,
            rate(f.centis_per_second()),
        ));
    }
    w.note("");
}

/// The whole demo's text.
pub fn render() -> String {
    render_with_timeline().0
}

/// The whole demo's text, and its run's timeline as SVG.
pub fn render_with_timeline() -> (String, String) {
    let world = Rc::new(World {
        secs: Cell::new(0),
        out: RefCell::new(String::new()),
    });
    // One directory per run, so that two runs in one process (the tests) never share a file.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run_number = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("breaker-quota-demo-{}-{run_number}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = StateFile::new(dir.join("ralph-circuit-breaker.json"));
    let _ = std::fs::remove_file(file.path());
    let transitions = run(&world, &file);
    let _ = std::fs::remove_dir_all(&dir);
    let out = world.out.borrow().clone();
    let end = Instant::from_millis((world.secs.get() * 1000) as u32);
    let svg = Timeline::new(transitions.iter().copied(), end)
        .titled("Ralph's breaker, both processes")
        .to_string();
    (out, svg)
}

/// A process's recorded transitions on the world's clock (each process's own starts at 0).
fn on_world_clock(breaker: &Breaker, clock: &ProcessClock) -> Vec<Transition> {
    let offset = Duration::from_millis((clock.started_at * 1000) as u32);
    breaker
        .observer()
        .recent()
        .iter()
        .map(|t| Transition {
            at: t.at.wrapping_add(offset),
            ..t
        })
        .collect()
}

/// Runs both processes; their breakers' transitions, on the world's clock.
fn run(w: &Rc<World>, file: &StateFile) -> Vec<Transition> {
    header(w);
    worked_examples(w);

    let api = GitHub::new(w.clone(), START_REMAINING);
    let tally = Tally::default();
    let breaker = new_breaker(w);
    let mut ralph = Ralph::start(w, &api, &breaker, file, &tally);
    w.note("the run: a round every 5 minutes, one call a second while it works; the quota window resets at :15:30");
    let normal = Priority::Normal;

    // 1. Ralph starts (closed).
    w.say("✓ Ralph started — Round 1");
    ralph.round(&[work(5, normal); 10]);
    w.say(format_args!(
        "Triaged 3 issues, 0 PRs need review ({})",
        ralph.figures()
    ));

    // 2. Consumption accelerates (still closed, the quota sampled on every call).
    for (number, cost, what) in [(2, 10, "3 issues, 4 PRs reviewed"), (3, 16, "5 issues, 9 PRs reviewed")] {
        w.go_to((number - 1) * 5 * 60);
        ralph.round(&[work(cost, normal); 10]);
        w.say(format_args!("Round {number} — {what} ({})", ralph.figures()));
    }

    // 3. The prediction opens the breaker, well before the limit.
    w.go_to(3 * 5 * 60);
    let done = ralph.round(&[work(30, normal); 20]);
    assert_eq!(ralph.phase(), Phase::Open);
    let f = ralph.guard.gauge().forecast().expect("a prediction opened it");
    w.note(format_args!(
        "           At current rate ({}), quota exhausted in ~{} seconds: Round 4 stops after {} of its 20 calls",
        rate(f.centis_per_second()),
        secs(f),
        done.calls
    ));

    // 4. The cooldown expires: half-open. 5. Two successful rounds close it.
    let mut number = 5;
    for _ in 0..2 {
        ralph.wait_out_cooldown();
        ralph.probe_round(number);
        number += 1;
        if ralph.phase() == Phase::HalfOpen {
            w.go_to(w.secs.get() + 5 * 60);
        }
    }

    // 6. Normal polling: triage (high priority) and PR reviews (normal) every 5 minutes,
    // while another agent sharing the token drains it.
    w.note("");
    w.note("a second agent shares the token from 14:29:50 and drains it at 2.4 requests a second until the reset");
    let round_start = w.secs.get() + 5 * 60;
    for k in 0.. {
        w.go_to(round_start + k * 5 * 60);
        let done = ralph.round(&[work(5, Priority::High), work(5, normal)]);
        if ralph.phase() == Phase::Open {
            let r = ralph.guard.gauge().reading();
            w.note(format_args!(
                "           Round {number}: the rate limit check alone opened it ({} left, {}): nothing was sent",
                r.quota.expect("checked"),
                r.forecast
                    .map_or("no prediction".into(), |f| format!("exhausted in ~{}s", secs(f)))
            ));
            number += 1;
            break;
        }
        let what = if done.refused_low > 0 {
            "1 issue triaged; PR reviews refused: quota low, high priority only"
        } else {
            "1 issue triaged, 1 PR reviewed"
        };
        w.say(format_args!("Round {number} — {what} ({})", ralph.figures()));
        number += 1;
    }

    // The other agent spends the rest: each probe meets a 429 and the cooldown doubles.
    for _ in 0..2 {
        ralph.wait_out_cooldown();
        assert!(ralph.probe_round(number).rate_limited);
        number += 1;
    }

    // The process stops 3 minutes into the 8-minute cooldown and starts 1 minute later.
    w.go_to(w.secs.get() + 3 * 60);
    ralph.save();
    w.say(format_args!(
        "Ralph stops ({}s of the cooldown left); the state file holds:",
        ralph.cooldown_left().expect("open").as_millis() / 1000
    ));
    for line in std::fs::read_to_string(file.path()).expect("saved").lines() {
        w.note(format_args!("           {line}"));
    }
    let mut transitions = on_world_clock(&breaker, &ralph.clock);
    drop(ralph);
    w.go_to(w.secs.get() + 60);

    let breaker = new_breaker(w);
    let mut ralph = Ralph::start(w, &api, &breaker, file, &tally);
    let fresh = breaker.state(ralph.clock.now()).phase();
    let resumed = ralph.guard.resume(file, ralph.clock.now(), w.wall());
    assert!(matches!(resumed, Ok(Some(_))), "{resumed:?}");
    w.say(format_args!(
        "Ralph starts again, its monotonic clock back at {} ms (a fresh breaker: {}); resumed from the state file",
        ralph.clock.now().as_millis(),
        phase_name(fresh)
    ));
    breaker
        .observer()
        .observer()
        .cooling_down(ralph.cooldown_left().expect("resumed open"));

    // The wait resumes; the quota window has reset: two successful rounds close it.
    for _ in 0..2 {
        ralph.wait_out_cooldown();
        ralph.probe_round(number);
        number += 1;
        if ralph.phase() == Phase::HalfOpen {
            w.go_to(w.secs.get() + 5 * 60);
        }
    }
    assert_eq!(ralph.phase(), Phase::Closed);

    w.note("");
    w.note(format_args!(
        "Ralph made {} calls in {} rounds. {} met a 429, both of them probes after the other agent had spent",
        tally.calls.get(),
        number - 1,
        tally.rate_limited.get()
    ));
    w.note(format_args!(
        "the quota; while amber, {} PR review was held back for high-priority triage. Each predicted opening",
        tally.refused_quota_low.get()
    ));
    w.note("came before Ralph hit the limit, and the restart did not make the breaker forget its cooldown.");
    transitions.extend(on_world_clock(&breaker, &ralph.clock));
    transitions
}

/// Remaining at 14:00:00: the first hour's window began at 13:15:30.
const START_REMAINING: u32 = 2_680;

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}

#[allow(dead_code)] // The output test includes this file as a module and calls `render`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let svg_path = match args.as_slice() {
        [] => None,
        [flag, path] if flag == "--svg" => Some(path.clone()),
        _ => {
            eprintln!("usage: quota [--svg PATH]   (PATH: where to write the run's timeline as SVG)");
            std::process::exit(2);
        }
    };
    let (text, svg) = render_with_timeline();
    print!("{text}");
    if let Some(path) = svg_path {
        if let Err(e) = std::fs::write(&path, svg) {
            eprintln!("cannot write the timeline to {path}: {e}");
            std::process::exit(1);
        }
        eprintln!("timeline written to {path}");
    }
}
