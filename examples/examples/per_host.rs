//! Per-host breakers in a tower stack: one `KeyedLayer` in front of three simulated hosts,
//! a breaker per host (the request's host, created on first use, in a table of bounded
//! size), and one host down. The dead host is refused without a request reaching it,
//! while the two others are served as if nothing happened; when it comes back, one probe
//! closes its breaker.
//!
//! `cargo run -p examples --example per_host` prints the script below, one line per
//! request, then each host's breaker and counts. Time is a manual clock: the run is the
//! same on every machine (`examples/tests/per_host.rs` checks it line by line).

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use breaker_core::keyed::KeyedBreakerMap;
use breaker_core::tower::{BoxError, KeyedLayer};
use breaker_core::{Clock, Duration, Instant, ManualClock, Policy, Refusal};
use tower::{service_fn, Layer, Service, ServiceExt};

/// The three hosts, in the order the script asks them.
pub const HOSTS: [&str; 3] = ["eu.api.example", "us.api.example", "ap.api.example"];
/// The host that is down until the script brings it back.
pub const DEAD: &str = "us.api.example";

/// A request: the host it goes to.
#[derive(Clone, Debug)]
pub struct Fetch {
    /// The host (the breaker's key).
    pub host: &'static str,
}

/// Three trips of a host's breaker open it for 10 s.
pub fn policy() -> Policy {
    Policy::new(3, Duration::from_secs(10))
}

/// Runs the script at `clock` and returns what it prints.
pub async fn run(clock: &'static ManualClock) -> Vec<String> {
    // At most 64 hosts get a breaker; more would go through unguarded (see
    // `KeyedBreakerMap`): bounded memory whatever the traffic.
    let table = Arc::new(KeyedBreakerMap::new(NonZeroUsize::new(64).expect("not zero"), policy()).expect("valid"));
    let down = Arc::new(AtomicBool::new(true));
    let reached: Arc<Mutex<BTreeMap<&'static str, u32>>> = Arc::default();
    let upstream = {
        let (down, reached) = (down.clone(), reached.clone());
        service_fn(move |f: Fetch| {
            *reached.lock().expect("not poisoned").entry(f.host).or_default() += 1;
            let dead = f.host == DEAD && down.load(Ordering::Relaxed);
            async move {
                if dead {
                    Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
                } else {
                    Ok(format!("200 from {}", f.host))
                }
            }
        })
    };
    let mut svc = KeyedLayer::new(table.clone(), |f: &Fetch| f.host.to_owned(), clock).layer(upstream);

    let mut lines = vec!["time    host             answer                             its breaker".to_owned()];
    for (t, rounds) in [(0u32, 4), (2_000, 1), (10_000, 1)] {
        clock.set(Instant::from_millis(t));
        if t == 10_000 {
            down.store(false, Ordering::Relaxed);
            lines.push(format!("        ({DEAD} is back)"));
        }
        for _ in 0..rounds {
            for host in HOSTS {
                let answer = match svc.ready().await.expect("always ready").call(Fetch { host }).await {
                    Ok(body) => body,
                    Err(e) => describe(&e),
                };
                let phase = table.get(host).map_or("none", |b| b.phase(clock.now()).key());
                lines.push(format!(
                    "{:>5}s  {host:<15}  {answer:<33}  {phase}",
                    f64::from(t) / 1000.0
                ));
            }
        }
    }

    lines.push(String::new());
    lines.push("host             failures  refused  trips  reached the host".to_owned());
    let reached = reached.lock().expect("not poisoned");
    for host in HOSTS {
        let c = table.get(host).map(|b| b.counters()).unwrap_or_default();
        let n = reached.get(host).copied().unwrap_or(0);
        lines.push(format!(
            "{host:<15}  {:>8}  {:>7}  {:>5}  {n:>16}",
            c.failures, c.skips, c.trips
        ));
    }
    lines.push(format!("breakers in the table: {} of at most 64", table.len()));
    lines
}

/// An error as the script prints it: a refusal with its wait, or the host's own error.
fn describe(e: &BoxError) -> String {
    match e.retry_in() {
        Some(wait) if e.is_refused() => format!("refused, retry in {} ms", wait.as_millis()),
        _ if e.is_refused() => "refused".to_owned(),
        _ => format!("error: {e}"),
    }
}

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for line in run(&CLOCK).await {
        println!("{line}");
    }
}
