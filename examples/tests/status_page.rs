//! The `service` example's status page in a real headless Chromium: served on loopback by
//! this test, loaded with no console message and no script error, showing the breaker
//! closed; then, after a scripted outage trips the breaker, showing it open with the time
//! to its next probe and its timeline; and a screenshot of it written to the test's
//! output directory (`target/tmp/status-page.png`), the picture in the README.
//!
//! Chromium is found as `BREAKER_CHROMIUM` or `chromium` / `chromium-browser` on `PATH`.
//! Without one the test prints why and passes, so `cargo test --workspace` passes on a host
//! without it; the test command installs it and sets `BREAKER_CHROMIUM_REQUIRED=1`, and then
//! a missing Chromium fails the test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{set_global_clock, Clock, Duration, Instant, ManualClock};

#[allow(dead_code)] // its `main` is the example's
#[path = "../examples/service.rs"]
mod service;

use service::UPSTREAM_DOWN;

static CLOCK: ManualClock = ManualClock::new(Instant::ZERO);

/// Only bounds a hang: a page load takes seconds even on a loaded machine.
const CHROMIUM_DEADLINE: StdDuration = StdDuration::from_secs(300);

fn required() -> bool {
    std::env::var("BREAKER_CHROMIUM_REQUIRED").is_ok_and(|v| v == "1")
}

/// The Chromium binary, or `None` after printing why the test is skipped.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("BREAKER_CHROMIUM")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
                .find(|candidate| candidate.is_file())
        });
    match found {
        Some(path) if path.is_file() => Some(path),
        other => {
            let why = match other {
                Some(path) => format!("BREAKER_CHROMIUM={} is not a file", path.display()),
                None => "no chromium on PATH and no BREAKER_CHROMIUM".to_string(),
            };
            assert!(!required(), "BREAKER_CHROMIUM_REQUIRED is set but {why}");
            eprintln!("status page test skipped: {why} (scripts/test.sh installs Debian's chromium)");
            None
        }
    }
}

/// Serves the example's app on a loopback port of its own, on a thread with its own
/// runtime, for as long as the test runs.
fn serve() -> SocketAddr {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, service::app()).await.unwrap();
        });
    });
    addr
}

/// One HTTP/1.1 GET: the status code.
fn get(addr: SocketAddr, path: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    raw.split(' ').nth(1).unwrap().parse().unwrap()
}

/// Runs headless Chromium on `url` with `action` (`--dump-dom`, or `--screenshot=..`):
/// its stdout, and every console message it logged (the page logs none of its own).
fn chromium_run(binary: &Path, profile: &Path, action: &str, url: &str) -> (String, Vec<String>) {
    let mut child = Command::new(binary)
        .args([
            "--headless",
            // Root (a container, a CI runner) cannot use Chromium's sandbox; the page
            // loaded is this test's own, on loopback.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--hide-scrollbars",
            "--window-size=820,330",
            "--enable-logging=stderr",
            "--v=0",
            // Timers run on virtual time, which waits for pending fetches: the page polls
            // a few times, however slow the machine.
            "--virtual-time-budget=7000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(action)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).map(|_| s)
    });
    let started = StdInstant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("chromium {action} {url} did not finish in {CHROMIUM_DEADLINE:?}");
        }
        std::thread::sleep(StdDuration::from_millis(100));
    };
    let out = out.join().unwrap().unwrap();
    let err = err.join().unwrap().unwrap();
    assert!(status.success(), "chromium {action} failed: {status}\n{err}");
    let console = err
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (out, console)
}

/// The opening tag of the page's section for breaker `name`, and the section itself.
fn section<'a>(dom: &'a str, name: &str) -> (&'a str, &'a str) {
    let needle = format!(r#"data-name="{name}""#);
    let start = dom
        .match_indices("<section")
        .map(|(i, _)| i)
        .find(|&i| dom[i..].split('>').next().unwrap().contains(&needle))
        .unwrap_or_else(|| panic!("no section for {name} in the page:\n{dom}"));
    let rest = &dom[start..];
    let tag = rest.split('>').next().unwrap();
    let end = rest.find("</section>").expect("the section ends");
    (tag, &rest[..end])
}

/// The page loaded, rendered from `/status.json`, with no script error.
fn assert_rendered_cleanly(dom: &str, console: &[String]) {
    assert!(console.is_empty(), "console messages: {console:#?}");
    let body = dom.split("<body").nth(1).unwrap().split('>').next().unwrap();
    assert!(body.contains(r#"data-errors="0""#), "script errors: {dom}");
    assert!(body.contains(r#"data-ready="1""#), "never rendered /status.json: {dom}");
}

#[test]
fn the_status_page_shows_a_tripped_breaker_open_in_a_real_chromium() {
    let Some(binary) = chromium() else { return };
    set_global_clock(|| CLOCK.now());
    let addr = serve();
    let url = format!("http://{addr}/");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    // Before the outage: closed, nothing refused.
    let (dom, console) = chromium_run(&binary, &work.join("profile-1"), "--dump-dom", &url);
    assert_rendered_cleanly(&dom, &console);
    let (tag, body) = section(&dom, "forecast::upstream");
    assert!(tag.contains(r#"data-phase="closed""#), "{tag}");
    assert!(body.contains(r#"class="breaker-timeline""#), "{body}");

    // The scripted outage: three 5xx answers in a row trip the breaker; after the 30 s
    // cooldown the probe fails too and it opens again; 10 s later a call is refused.
    UPSTREAM_DOWN.store(true, Ordering::Relaxed);
    for _ in 0..3 {
        assert_eq!(get(addr, "/forecast"), 500);
    }
    CLOCK.advance(Duration::from_secs(30));
    assert_eq!(get(addr, "/forecast"), 500);
    CLOCK.advance(Duration::from_secs(10));
    assert_eq!(get(addr, "/forecast"), 503);

    let (dom, console) = chromium_run(&binary, &work.join("profile-2"), "--dump-dom", &url);
    assert_rendered_cleanly(&dom, &console);
    let (tag, body) = section(&dom, "forecast::upstream");
    assert!(tag.contains(r#"data-phase="open""#), "{tag}");
    assert!(body.contains("open, cooling down"), "{body}");
    assert!(body.contains("in 20 s"), "the next probe: {body}");
    assert!(
        body.contains(r#"<span data-fact="skips">refused <b>1</b></span>"#),
        "{body}"
    );
    assert!(
        body.contains(r#"<span data-fact="trips">trips <b>2</b></span>"#),
        "{body}"
    );
    assert!(
        body.contains(r#"<span data-fact="probes">probes <b>1</b></span>"#),
        "{body}"
    );
    assert!(
        body.contains(r#"<span data-fact="probe-failures">failed probes <b>1</b></span>"#),
        "{body}"
    );
    // It counts every call: four let through, none succeeded.
    assert!(
        body.contains(r#"<span data-fact="calls">calls <b>4</b></span>"#),
        "{body}"
    );
    assert!(
        body.contains(r#"<span data-fact="successes">successes <b>0</b></span>"#),
        "{body}"
    );
    // The timeline: the trip, the probe and its failure, open now, the wait drawn up to
    // the next probe.
    assert!(body.contains(r#"data-phase="open" data-transitions="3""#), "{body}");
    assert_eq!(body.matches(r#"<g class="failure">"#).count(), 2, "{body}");
    assert_eq!(body.matches(r#"<g class="probe">"#).count(), 1, "{body}");
    assert!(body.contains("next probe in 20s"), "{body}");
    assert!(
        dom.contains(r#"<span id="overall" class="pill degraded">degraded</span>"#),
        "{dom}"
    );

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    let (_, console) = chromium_run(
        &binary,
        &work.join("profile-3"),
        &format!("--screenshot={}", shot.display()),
        &url,
    );
    assert!(console.is_empty(), "console messages: {console:#?}");
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    eprintln!("status page screenshot: {}", shot.display());
    let _ = std::fs::remove_dir_all(&work);
}
