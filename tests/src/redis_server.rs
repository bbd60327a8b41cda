//! A private `redis-server` for the tests that need a real Redis: a loopback port of its
//! own, a temporary directory, no persistence, stopped when dropped.
//!
//! Tests that need Redis run only when the test command says where things are:
//! `BREAKER_REDIS_URL` (a server they share, each test on keys of its own) and
//! `BREAKER_REDIS_SERVER` (the `redis-server` binary, for tests that stop and restart their
//! own server). Without them they print why and pass, so `cargo test --workspace` passes on
//! a host without Redis; `scripts/test.sh` installs Redis and sets both, and sets
//! `BREAKER_REDIS_REQUIRED=1` too: then a test that finds no server (a variable missing,
//! a server that does not answer `PING`, a binary that is not there) fails instead of
//! passing as skipped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shared server's URL, or `None` after printing why the calling test is skipped.
pub fn shared_url(test: &str) -> Option<String> {
    match std::env::var("BREAKER_REDIS_URL") {
        Ok(url) if !url.is_empty() => {
            if required() {
                let port = url_port(&url);
                assert!(
                    port.is_some_and(ping),
                    "{test}: BREAKER_REDIS_REQUIRED is set but no Redis answers PING at BREAKER_REDIS_URL={url}"
                );
            }
            Some(url)
        }
        _ => {
            assert!(
                !required(),
                "{test}: BREAKER_REDIS_REQUIRED is set but BREAKER_REDIS_URL is not"
            );
            eprintln!(
                "{test}: skipped: no Redis (set BREAKER_REDIS_URL=redis://127.0.0.1:PORT/, as scripts/test.sh does)"
            );
            None
        }
    }
}

/// The `redis-server` binary, or `None` after printing why the calling test is skipped.
pub fn server_binary(test: &str) -> Option<PathBuf> {
    match std::env::var_os("BREAKER_REDIS_SERVER") {
        Some(path) if !path.is_empty() => {
            let path = PathBuf::from(path);
            assert!(
                !required() || path.is_file(),
                "{test}: BREAKER_REDIS_REQUIRED is set but BREAKER_REDIS_SERVER={} is not a file",
                path.display()
            );
            Some(path)
        }
        _ => {
            assert!(
                !required(),
                "{test}: BREAKER_REDIS_REQUIRED is set but BREAKER_REDIS_SERVER is not"
            );
            eprintln!(
                "{test}: skipped: no redis-server to start (set BREAKER_REDIS_SERVER=/path/to/redis-server, as scripts/test.sh does)"
            );
            None
        }
    }
}

/// Whether the test command asks for the Redis tests to run (`BREAKER_REDIS_REQUIRED=1`):
/// then a missing or silent server fails the test instead of skipping it.
pub fn required() -> bool {
    std::env::var("BREAKER_REDIS_REQUIRED").is_ok_and(|v| v == "1")
}

/// The port of a loopback `redis://host:port/db` URL (for the `PING` of [`shared_url`],
/// and to put a proxy in front of the server).
pub fn url_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("redis://")?;
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit('@').next()?;
    host_port.rsplit_once(':')?.1.parse().ok()
}

/// A unique key prefix for one test run (tests share the server).
pub fn unique_key(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("breaker-test:{name}:{}:{nanos}", std::process::id())
}

/// One private server.
#[derive(Debug)]
pub struct RedisServer {
    binary: PathBuf,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts `binary` on a free loopback port, in a fresh temporary directory, with no
    /// persistence, and waits until it answers.
    pub fn start(binary: PathBuf) -> RedisServer {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("breaker-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let mut server = RedisServer {
            binary,
            port,
            dir,
            child: None,
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        let child = Command::new(&self.binary)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.binary.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Ours only while our process lives (a port taken meanwhile makes it exit).
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!(
                    "redis-server on port {} exited: {status} (see {})",
                    self.port,
                    self.dir.display()
                );
            }
            if ping(self.port) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (as a crash would: nothing saved).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (`SIGSTOP`): connections stay open and requests are taken in
    /// by the kernel, but nothing is answered until [`RedisServer::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server run again (`SIGCONT`): it answers what it was sent meanwhile.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the server is running");
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill {signal}: {e}"));
        assert!(status.success(), "kill {signal} {} failed: {status}", child.id());
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().expect("its address").port()
}

/// Whether a server answers `PING` on `port`.
pub fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}
