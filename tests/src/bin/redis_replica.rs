//! One replica process of `tests/redis_processes.rs`: two threads calling an upstream
//! through a `RedisBreaker` for the length of the run, a third watching the breaker's phase.
//! Reports, one per line, on stdout at the end:
//!
//! ```text
//! probe T0 T1 ok|fail shared|local     a probe call, from T0 to T1 (ms of shared time)
//! phase T closed|open|half-open        the breaker's phase changed at T
//! event TEXT                           a link report
//! summary shared=BOOL phase=P late_bad=N calls=N refused=N trips=N probes=N
//! ```
//!
//! Usage: `redis_replica URL KEY START_MS INDEX` (the run starts when the shared time, in
//! wrapping milliseconds, reaches `START_MS`; replica `INDEX` follows
//! [`tests::replica::calls`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use breaker_core::{Phase, Verdict};
use breaker_redis::{Config, RedisBreaker, RedisLink};
use tests::replica::{down, POLICY, PROBE_MS, RUN_MS};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, key, start, index] = &args[..] else {
        eprintln!("usage: redis_replica URL KEY START_MS INDEX");
        std::process::exit(2);
    };
    let start: u32 = start.parse().expect("START_MS");
    let index: usize = index.parse().expect("INDEX");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let log_lines = lines.clone();
    let config = Config::new()
        .timeout(StdDuration::from_millis(500))
        .refresh(StdDuration::from_millis(50))
        .retry(StdDuration::from_millis(100))
        .log(move |e| log_lines.lock().unwrap().push(format!("event {e}")));
    let link = RedisLink::open(url.as_str(), config).expect("a valid URL");
    let breaker = link.breaker(key.as_str(), &POLICY);
    let rel = {
        let b = breaker.clone();
        move || i64::from(b.now().as_millis().wrapping_sub(start) as i32)
    };
    while rel() < 0 {
        std::thread::sleep(StdDuration::from_millis(1));
    }

    let calls = Arc::new(AtomicU32::new(0));
    let refused = Arc::new(AtomicU32::new(0));
    let late_bad = Arc::new(AtomicU32::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..2)
        .map(|_| {
            let (b, lines, rel) = (breaker.clone(), lines.clone(), rel.clone());
            let (calls, refused, late_bad) = (calls.clone(), refused.clone(), late_bad.clone());
            std::thread::spawn(move || {
                while rel() < RUN_MS {
                    if !tests::replica::calls(index, rel()) {
                        std::thread::sleep(StdDuration::from_millis(2));
                        continue;
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                    let late = rel() >= RUN_MS - 300;
                    match b.try_acquire() {
                        Err(_) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                            if late {
                                late_bad.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Ok(p) => {
                            let (probe, local, t0) = (p.is_probe(), p.is_local(), rel());
                            std::thread::sleep(StdDuration::from_millis(if probe { PROBE_MS } else { 1 }));
                            let t1 = rel();
                            let failed = down(t1);
                            if failed {
                                p.failure(Verdict::Strike);
                                if late {
                                    late_bad.fetch_add(1, Ordering::Relaxed);
                                }
                            } else {
                                p.success();
                            }
                            if probe {
                                let how = if failed { "fail" } else { "ok" };
                                let whose = if local { "local" } else { "shared" };
                                lines.lock().unwrap().push(format!("probe {t0} {t1} {how} {whose}"));
                            }
                        }
                    }
                    std::thread::sleep(StdDuration::from_millis(2));
                }
            })
        })
        .collect();
    let watcher = {
        let (b, lines, rel, done) = (breaker.clone(), lines.clone(), rel.clone(), done.clone());
        std::thread::spawn(move || {
            let mut last = None;
            while !done.load(Ordering::Relaxed) {
                let phase = b.phase();
                if last != Some(phase) {
                    last = Some(phase);
                    lines.lock().unwrap().push(format!("phase {} {}", rel(), name(phase)));
                }
                std::thread::sleep(StdDuration::from_millis(1));
            }
        })
    };
    for c in callers {
        c.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    link.refresh();
    report(&lines, &breaker, &calls, &refused, &late_bad);
}

fn name(p: Phase) -> &'static str {
    match p {
        Phase::Closed => "closed",
        Phase::Open => "open",
        Phase::HalfOpen => "half-open",
    }
}

fn report(lines: &Mutex<Vec<String>>, b: &RedisBreaker, calls: &AtomicU32, refused: &AtomicU32, late_bad: &AtomicU32) {
    for line in lines.lock().unwrap().iter() {
        println!("{line}");
    }
    let c = b.counters();
    println!(
        "summary shared={} phase={} late_bad={} calls={} refused={} trips={} probes={}",
        b.is_shared(),
        name(b.phase()),
        late_bad.load(Ordering::Relaxed),
        calls.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
        c.trips,
        c.probes
    );
}
