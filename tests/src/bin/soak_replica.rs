//! One replica process of the bounded soak (`tests/redis_soak.rs`): `THREADS` threads
//! calling `KEYS` breakers of one `RedisLink` at random (all but key `INDEX`, which this
//! replica only watches: it learns that key's trips from Redis alone), each call's outcome drawn from
//! the upstream's health ([`tests::soak`]), and a watcher noting each breaker's phase and
//! whether it follows Redis. Everything runs on the shared clock (`StdClock`), in
//! milliseconds since the run's start. At the end (every breaker back on Redis, the link's
//! queue drained) it prints, one per line:
//!
//! ```text
//! probe KEY T_ASK T_GRANTED T_ANSWER ok|fail|neutral shared|local
//! phase KEY T closed|open|half-open shared|apart        a change of either
//! event T unreachable | slow KEY | bad KEY | resync KEY HOW
//! key KEY calls=N refused=N successes=N failures=N neutrals=N probes_seen=N gave_up=N
//!     failures_counted=N skips=N trips=N probes=N      (one line)
//! summary calls=N worst_wait_us=N late_bad=N shared=BOOL
//! ```
//!
//! `gave_up` counts, for each call, the whole timeouts it waited (each may have left the
//! link a decision nobody took); `late_bad` the calls refused or failed in the run's last
//! second.
//!
//! Usage: `soak_replica URL KEY_PREFIX KEYS THREADS SEED INDEX START_MS RUN_MS`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{Clock, Phase, StdClock, Verdict};
use breaker_redis::{Config, LinkEvent, RedisBreaker, RedisLink};
use tests::soak::{outcome, sick, Rng, CALM_MS, POLICY, PROBE_MS, REFRESH, RETRY, TIMEOUT};

/// What one thread saw of one key.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    calls: u64,
    refused: u64,
    successes: u64,
    failures: u64,
    neutrals: u64,
    probes: u64,
    gave_up: u64,
}

impl Seen {
    fn add(&mut self, o: &Seen) {
        self.calls += o.calls;
        self.refused += o.refused;
        self.successes += o.successes;
        self.failures += o.failures;
        self.neutrals += o.neutrals;
        self.probes += o.probes;
        self.gave_up += o.gave_up;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, prefix, keys, threads, seed, index, start, run] = &args[..] else {
        eprintln!("usage: soak_replica URL KEY_PREFIX KEYS THREADS SEED INDEX START_MS RUN_MS");
        std::process::exit(2);
    };
    let keys: usize = keys.parse().expect("KEYS");
    let threads: u64 = threads.parse().expect("THREADS");
    let seed: u64 = seed.parse().expect("SEED");
    let index: u64 = index.parse().expect("INDEX");
    let start: u32 = start.parse().expect("START_MS");
    let run_ms: i64 = run.parse().expect("RUN_MS");
    let rel = move || i64::from(StdClock.now().as_millis().wrapping_sub(start) as i32);

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let log_lines = lines.clone();
    let config = Config::new()
        .timeout(TIMEOUT)
        .refresh(REFRESH)
        .retry(RETRY)
        .shared_clock(StdClock)
        .log(move |e| {
            let t = rel();
            let line = match e {
                LinkEvent::Unreachable { .. } => format!("event {t} unreachable"),
                LinkEvent::Slow { key } => format!("event {t} slow {key}"),
                LinkEvent::BadValue { key, .. } => format!("event {t} bad {key}"),
                LinkEvent::Resynchronised { key, how } => format!("event {t} resync {key} {how:?}"),
                other => format!("event {t} other {other:?}").replace(' ', "_"),
            };
            log_lines.lock().unwrap().push(line);
        });
    let link = RedisLink::open(url.as_str(), config).expect("a valid URL");
    let breakers: Vec<RedisBreaker> = (0..keys)
        .map(|k| link.breaker(format!("{prefix}:{k}"), &POLICY))
        .collect();
    while rel() < 0 {
        std::thread::sleep(StdDuration::from_millis(1));
    }

    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (breakers, lines, done) = (breakers.clone(), lines.clone(), done.clone());
        std::thread::spawn(move || {
            let mut last = vec![None; breakers.len()];
            while !done.load(Ordering::SeqCst) {
                for (k, b) in breakers.iter().enumerate() {
                    let now = (b.phase(), b.is_shared());
                    if last[k] != Some(now) {
                        last[k] = Some(now);
                        let whose = if now.1 { "shared" } else { "apart" };
                        let line = format!("phase {} {} {} {whose}", b.key(), rel(), name(now.0));
                        lines.lock().unwrap().push(line);
                    }
                }
                std::thread::sleep(StdDuration::from_millis(2));
            }
        })
    };

    let callers: Vec<_> = (0..threads)
        .map(|thread| {
            let (breakers, lines) = (breakers.clone(), lines.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed, 100 + index * 64 + thread);
                let mut seen = vec![Seen::default(); breakers.len()];
                let (mut worst, mut late_bad) = (StdDuration::ZERO, 0u64);
                while rel() < run_ms {
                    // Every key but one: replica `INDEX` only watches key `INDEX`, and learns
                    // its trips from Redis alone.
                    let watched = index as usize % breakers.len();
                    let k = (watched + 1 + rng.below(breakers.len() as u64 - 1) as usize) % breakers.len();
                    let b = &breakers[k];
                    let s = &mut seen[k];
                    let late = rel() >= run_ms - 1_000;
                    s.calls += 1;
                    let t_ask = rel();
                    let asked = StdInstant::now();
                    let admitted = b.try_acquire();
                    let mut waited = asked.elapsed();
                    s.gave_up += (waited.as_micros() / TIMEOUT.as_micros()) as u64;
                    let t_granted = rel();
                    match admitted {
                        Err(_) => {
                            s.refused += 1;
                            late_bad += u64::from(late);
                        }
                        Ok(permit) => {
                            let (probe, local) = (permit.is_probe(), permit.is_local());
                            s.probes += u64::from(probe);
                            std::thread::sleep(StdDuration::from_millis(if probe { PROBE_MS } else { 1 }));
                            let t = rel();
                            let drawn = outcome(&mut rng, sick(seed, k, t, run_ms), t >= run_ms - CALM_MS);
                            // Read before the answer is handed over: the next probe anywhere
                            // can only be granted after this.
                            let t_answer = rel();
                            let answering = StdInstant::now();
                            let how = match drawn {
                                None => {
                                    s.successes += 1;
                                    permit.success();
                                    "ok"
                                }
                                Some(Verdict::Neutral) => {
                                    s.neutrals += 1;
                                    permit.failure(Verdict::Neutral);
                                    "neutral"
                                }
                                Some(v) => {
                                    s.failures += 1;
                                    late_bad += u64::from(late);
                                    permit.failure(v);
                                    "fail"
                                }
                            };
                            waited += answering.elapsed();
                            if probe {
                                let whose = if local { "local" } else { "shared" };
                                let line = format!("probe {} {t_ask} {t_granted} {t_answer} {how} {whose}", b.key());
                                lines.lock().unwrap().push(line);
                            }
                        }
                    }
                    worst = worst.max(waited);
                    std::thread::sleep(StdDuration::from_millis(rng.between(1, 4) as u64));
                }
                (seen, worst, late_bad)
            })
        })
        .collect();

    let mut seen = vec![Seen::default(); keys];
    let (mut worst, mut late_bad) = (StdDuration::ZERO, 0);
    for c in callers {
        let (s, w, l) = c.join().expect("a caller thread panicked");
        for (total, one) in seen.iter_mut().zip(&s) {
            total.add(one);
        }
        worst = worst.max(w);
        late_bad += l;
    }
    // Every breaker back on Redis (bounded: the test fails on `shared=false`), and every
    // outcome handed to the link swapped in or applied before the counters are read.
    let back = StdInstant::now();
    while !breakers.iter().all(RedisBreaker::is_shared) && back.elapsed() < StdDuration::from_secs(30) {
        link.refresh();
        std::thread::sleep(StdDuration::from_millis(10));
    }
    link.refresh();
    link.refresh();
    done.store(true, Ordering::SeqCst);
    watcher.join().expect("the watcher panicked");

    for line in lines.lock().unwrap().iter() {
        println!("{line}");
    }
    let mut calls = 0;
    for (b, s) in breakers.iter().zip(&seen) {
        let c = b.counters();
        calls += s.calls;
        println!(
            "key {} calls={} refused={} successes={} failures={} neutrals={} probes_seen={} gave_up={} failures_counted={} skips={} trips={} probes={}",
            b.key(),
            s.calls,
            s.refused,
            s.successes,
            s.failures,
            s.neutrals,
            s.probes,
            s.gave_up,
            c.failures,
            c.skips,
            c.trips,
            c.probes
        );
    }
    println!(
        "summary calls={calls} worst_wait_us={} late_bad={late_bad} shared={}",
        worst.as_micros(),
        breakers.iter().all(RedisBreaker::is_shared)
    );
}

fn name(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}
