//! loopctl's model breaker as a run: a large model with two cheaper backups behind a
//! `FallbackChain` (trip after 3 failed turns, cooldown 60 s, 2 probe successes, each
//! backup's budget 2 failed turns), one line per turn: the chain's phase after the turn,
//! where the turn was routed, what it answered, and what that did. Every row of the
//! table shows up, exhaustion and a recovery clearing the chain included; every figure
//! comes from the chain itself.
//!
//! ```text
//! cargo run -p demos --example fallback
//! ```

use std::cell::RefCell;
use std::fmt::Write;

use breaker_core::{
    Backup, BackupSpent, ChainObserver, Clock, Duration, FallbackChain, FallbackEvent, Instant, ManualClock, Outcome,
    Phase, Policy, Reason, Route, State, Transition, Turn, Verdict, DEFAULT_CHAIN_POLICY,
};

static POLICY: Policy = DEFAULT_CHAIN_POLICY;

/// What a model answered.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Ok,
    /// Might pass: a strike.
    Timeout,
    /// 429, "no more load": a trip verdict.
    RateLimited,
    /// 401: a trip verdict.
    KeyRevoked,
    /// The user cancelled the turn: says nothing about the model.
    Cancelled,
}

impl Answer {
    fn words(self) -> &'static str {
        match self {
            Answer::Ok => "ok",
            Answer::Timeout => "timeout",
            Answer::RateLimited => "rate limited",
            Answer::KeyRevoked => "key revoked",
            Answer::Cancelled => "cancelled",
        }
    }

    /// The turn's outcome as the chain records it.
    fn outcome(self) -> Outcome {
        match self {
            Answer::Ok => Outcome::Success,
            Answer::Timeout => Outcome::Error(Verdict::Strike),
            Answer::RateLimited | Answer::KeyRevoked => Outcome::Error(Verdict::Trip),
            Answer::Cancelled => Outcome::Error(Verdict::Neutral),
        }
    }
}

/// What the chain told its observer during one turn, in order.
#[derive(Default)]
struct Told(RefCell<Vec<Event>>);

enum Event {
    Moved(Transition),
    Fallback(FallbackEvent),
    Spent(BackupSpent),
}

impl ChainObserver for Told {
    fn on_transition(&self, t: &Transition) {
        self.0.borrow_mut().push(Event::Moved(*t));
    }
    fn on_fallback(&self, e: &FallbackEvent) {
        self.0.borrow_mut().push(Event::Fallback(*e));
    }
    fn on_backup_spent(&self, e: &BackupSpent) {
        self.0.borrow_mut().push(Event::Spent(*e));
    }
}

struct Run<const N: usize> {
    chain: FallbackChain<N, Told>,
    clock: ManualClock,
    out: RefCell<String>,
}

/// Where a route goes, in words.
fn target(route: Route, primary: &str) -> String {
    match route {
        Route::Primary { .. } => primary.to_string(),
        Route::Backup { name, .. } => name.to_string(),
        Route::Exhausted { .. } | Route::Probing => "-".to_string(),
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl<const N: usize> Run<N> {
    fn new(primary: &'static str, backups: [Backup; N]) -> Self {
        Run {
            chain: FallbackChain::with_observer(&POLICY, primary, backups, Told::default()),
            clock: ManualClock::new(Instant::ZERO),
            out: RefCell::new(String::new()),
        }
    }

    fn at(&self, secs: u32) {
        self.clock.set(Instant::ZERO.wrapping_add(Duration::from_secs(secs)));
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn secs(&self) -> u32 {
        self.now().as_millis() / 1000
    }

    fn header(&self, title: &str) {
        writeln!(self.out.borrow_mut(), "  {title}").unwrap();
        writeln!(
            self.out.borrow_mut(),
            "    {:<6} {:<11} {:<21} {:<18} side effects",
            "t",
            "phase",
            "routed to",
            "outcome"
        )
        .unwrap();
    }

    fn note(&self, what: &str) {
        writeln!(self.out.borrow_mut(), "    {:<6} {what}", format!("{}s", self.secs())).unwrap();
    }

    /// Routes a turn now; what the routing itself did (entering Recovering) goes with it.
    fn route(&self) -> (Turn<'_, ManualClock, N, Told>, Vec<Event>) {
        let turn = self.chain.route(&self.clock);
        (turn, self.told())
    }

    fn told(&self) -> Vec<Event> {
        self.chain.observer().0.borrow_mut().drain(..).collect()
    }

    /// One turn at `secs`: routed, answered, and its line printed.
    fn turn(&self, secs: u32, answer: Answer) {
        self.at(secs);
        let (turn, routed) = self.route();
        self.answer(turn, routed, answer, "");
    }

    /// Answers a routed turn and prints its line.
    fn answer(&self, turn: Turn<'_, ManualClock, N, Told>, mut told: Vec<Event>, answer: Answer, remark: &str) {
        let route = turn.route();
        let mut to = target(route, self.chain.primary());
        if matches!(route, Route::Primary { probe: true }) {
            to.push_str(" (probe)");
        }
        let outcome = match route {
            Route::Exhausted { .. } => "FallbackExhausted",
            Route::Probing => "refused",
            _ => answer.words(),
        };
        turn.record(answer.outcome());
        told.extend(self.told());
        let effects = self.effects(route, answer, remark, &told);
        let phase = self.chain.phase(self.now()).name();
        let line = format!(
            "{:<6} {phase:<11} {to:<21} {outcome:<18} {effects}",
            format!("{}s", self.secs())
        );
        writeln!(self.out.borrow_mut(), "    {}", line.trim_end()).unwrap();
    }

    /// What the turn did, from what the chain told and what it now reports.
    fn effects(&self, route: Route, answer: Answer, remark: &str, told: &[Event]) -> String {
        let mut parts: Vec<String> = Vec::new();
        if !remark.is_empty() {
            parts.push(remark.to_string());
        }
        let moved = told.iter().any(|e| matches!(e, Event::Moved(_)));
        // What happened before the turn was routed comes first.
        for e in told {
            if let Event::Moved(t) = e {
                if t.to == Phase::HalfOpen {
                    parts.push("cooldown elapsed: RECOVERING, success count = 0, this turn is the probe".into());
                }
            }
        }
        let state = self.chain.breaker().state(self.now());
        match route {
            Route::Exhausted { retry_in } => parts.push(format!(
                "every backup failed: fail honestly, not on the known-bad primary ({} of cooldown left)",
                retry_in.map_or_else(|| "no end".to_string(), |d| d.to_string())
            )),
            Route::Probing => parts.push(
                "the probe is out and every backup failed: nowhere to go (not FallbackExhausted: the phase is recovering)"
                    .into(),
            ),
            _ if matches!(answer, Answer::Cancelled) => parts.push("neutral: nothing changes".into()),
            Route::Backup { index, name } => {
                let b = self.chain.backup(index).expect("routed to it");
                if matches!(answer, Answer::Ok) {
                    parts.push(format!("{name} attempts {}/{} (a success spends nothing)", b.attempts, b.budget));
                } else if !told.iter().any(|e| matches!(e, Event::Spent(_))) {
                    parts.push(format!("{name} attempts {}/{}", b.attempts, b.budget));
                }
            }
            Route::Primary { .. } => match state {
                State::Closed { strikes } if !moved => parts.push(format!("consecutive failures = {strikes}")),
                State::HalfOpen { streak, .. } => match answer {
                    Answer::Timeout => {
                        parts.push("transient failure: success count = 0, probation continues".into())
                    }
                    _ => parts.push(format!("success count = {streak}/{}", POLICY.probes_to_close())),
                },
                State::Open { .. } if self.chain.backups().is_empty() && !moved => {
                    parts.push("no chain: the trip is bookkeeping, the primary keeps serving".into())
                }
                _ => {}
            },
        }
        for e in told {
            match e {
                Event::Moved(t) => match (t.from, t.to, t.why) {
                    (Phase::Closed, Phase::Open, Reason::Strikes) => {
                        parts.push(format!("{} failed turn in a row: TRIPPED", ordinal(POLICY.trip())))
                    }
                    (Phase::Closed, Phase::Open, _) => parts.push("trip verdict: TRIPPED at once".into()),
                    (Phase::HalfOpen, Phase::Open, _) => parts.push(format!(
                        "\"no more load\": RE-TRIPPED at once, fresh cooldown {}",
                        t.cooldown
                    )),
                    (Phase::HalfOpen, Phase::Closed, _) => {
                        let mut line = format!(
                            "{} probe success in a row: PRIMARY again, everything zeroed",
                            ordinal(POLICY.probes_to_close())
                        );
                        if N > 0 {
                            line.push_str(&format!(", every backup's attempts cleared ({})", self.attempts()));
                        }
                        parts.push(line)
                    }
                    _ => {}
                },
                Event::Fallback(f) => {
                    let first = if f.why == Reason::ProbeFailed {
                        String::new()
                    } else {
                        format!(
                            "fallback_activated = true, counters zeroed, cooldown {} starts, ",
                            POLICY.cooldown()
                        )
                    };
                    let to = match f.to {
                        Route::Exhausted { .. } => "nothing: every backup has failed".to_string(),
                        Route::Primary { .. } => format!("{} (no chain)", f.from),
                        other => target(other, f.from),
                    };
                    parts.push(format!("{first}fallback event {} -> {to}", f.from));
                }
                Event::Spent(s) => {
                    let b = self.chain.backup(s.index).expect("spent one exists");
                    parts.push(format!(
                        "{} attempts {}/{}: FAILED, routing advances next turn",
                        s.name, b.attempts, b.budget
                    ))
                }
            }
        }
        parts.join("; ")
    }

    fn attempts(&self) -> String {
        let all: Vec<String> = (0..N)
            .filter_map(|i| self.chain.backup(i))
            .map(|b| {
                let off = if b.disabled { " (switched off)" } else { "" };
                format!("{} {}/{}{off}", b.name, b.attempts, b.budget)
            })
            .collect();
        all.join(", ")
    }
}

/// The whole demo's text.
pub fn render() -> String {
    let mut out = String::new();
    writeln!(
        out,
        "FALLBACK CHAIN (loopctl's model breaker: trip after {} failed turns, cooldown {}, {} probe successes to recover, each backup's budget {} failed turns)",
        POLICY.trip(),
        POLICY.cooldown(),
        POLICY.probes_to_close(),
        breaker_core::chain::DEFAULT_BUDGET
    )
    .unwrap();
    writeln!(out).unwrap();

    // Act one: the table, row by row.
    let run = Run::new("model-large", [Backup::new("model-medium"), Backup::new("model-small")]);
    run.header("act one: the primary fails, both backups are spent, the primary recovers");
    run.turn(0, Answer::Ok);
    run.turn(1, Answer::Timeout);
    run.turn(2, Answer::Ok);
    run.turn(3, Answer::Timeout);
    run.turn(4, Answer::Timeout);
    run.turn(5, Answer::Timeout);
    run.turn(6, Answer::Ok);
    run.turn(7, Answer::Timeout);
    run.turn(8, Answer::Cancelled);
    run.turn(9, Answer::Timeout);
    run.turn(10, Answer::Ok);
    run.turn(11, Answer::Timeout);
    run.turn(12, Answer::Timeout);
    run.turn(13, Answer::Ok);
    run.turn(65, Answer::Ok);
    run.turn(66, Answer::Timeout);
    run.turn(67, Answer::Ok);
    run.turn(68, Answer::RateLimited);
    run.turn(69, Answer::Ok);
    run.turn(128, Answer::Ok);
    // While the probe is out, another turn has nowhere to go: every backup is spent.
    run.at(129);
    let (probe, routed) = run.route();
    let (other, _) = run.route();
    run.answer(other, vec![], Answer::Ok, "a turn beside the probe");
    run.answer(probe, routed, Answer::Ok, "");
    run.turn(130, Answer::Ok);
    out.push_str(&run.out.borrow());
    let report = run.chain.report(run.now());
    let to_backups: u32 = report.backups.iter().map(|b| b.turns).sum();
    writeln!(
        out,
        "    fallback_activated is still {} (sticky). The primary's breaker refused {} turns: {to_backups} went to a backup, {} were FallbackExhausted, {} had nowhere to go.",
        report.fallback_activated,
        report.counters.skips,
        report.exhausted,
        report.counters.skips - to_backups - report.exhausted
    )
    .unwrap();
    writeln!(out).unwrap();

    // Act two: fresh budgets, a backup switched off by hand, a concurrent turn.
    run.out.borrow_mut().clear();
    run.header("act two: a revoked key, a backup switched off, turns beside the probe");
    run.turn(131, Answer::KeyRevoked);
    run.turn(132, Answer::Timeout);
    run.chain.disable(0).expect("model-medium is backup 0");
    run.note("operator switches model-medium off: routing skips it");
    run.turn(133, Answer::Ok);
    run.at(191);
    let (probe, routed) = run.route();
    let (other, _) = run.route();
    run.answer(probe, routed, Answer::Ok, "");
    run.answer(
        other,
        vec![],
        Answer::Ok,
        "routed while the probe was out: the active backup",
    );
    run.turn(192, Answer::Ok);
    out.push_str(&run.out.borrow());
    writeln!(out, "    at the end: {}", run.attempts()).unwrap();
    writeln!(out).unwrap();

    // Act three: no chain configured.
    let solo = Run::new("model-large", []);
    solo.header("act three: no chain configured: it trips, keeps serving the primary, never exhausts");
    solo.turn(0, Answer::Timeout);
    solo.turn(1, Answer::Timeout);
    solo.turn(2, Answer::Timeout);
    solo.turn(3, Answer::Timeout);
    solo.turn(4, Answer::Ok);
    solo.turn(62, Answer::Ok);
    solo.turn(63, Answer::Ok);
    out.push_str(&solo.out.borrow());
    let r = solo.chain.report(solo.now());
    writeln!(
        out,
        "    fallback_activated = {}, answered FallbackExhausted: {}",
        r.fallback_activated, r.exhausted
    )
    .unwrap();
    out
}

#[allow(dead_code)] // The output test includes this file as a module and calls `render`.
fn main() {
    print!("{}", render());
}
