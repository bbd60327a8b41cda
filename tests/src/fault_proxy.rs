//! A fault-injecting TCP forwarder on loopback, between a replica's link and
//! `redis-server`: the tests put a bad network in the way and take it out again.
//!
//! Every accepted connection gets its own connection to the server and two pumps, one per
//! direction, that forward what they read according to the proxy's [`Fault`] at that
//! moment (it can change mid-connection):
//!
//! | fault | requests (to Redis) | replies (to the client) | new connections |
//! |---|---|---|---|
//! | [`Fault::None`] | forwarded | forwarded | forwarded |
//! | [`Fault::Latency`] | forwarded | each read held this long first | forwarded |
//! | [`Fault::Blackhole`] | swallowed | (none come) | accepted, never answered |
//! | [`Fault::LoseReplies`] | forwarded (Redis runs them) | swallowed | forwarded |
//! | [`Fault::CutReplies`] | forwarded | the first half of the next read, then nothing | forwarded |
//! | [`Fault::Reset`] | every connection closed at once | | accepted and closed |
//!
//! Dropped, the proxy closes every connection and stops accepting.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the proxy does to the traffic (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A clean network.
    None,
    /// Every read of a reply is held this long before it is forwarded.
    Latency(Duration),
    /// Connections are accepted; nothing sent on them reaches Redis, nothing comes back.
    Blackhole,
    /// Requests reach Redis and run; their replies never come back.
    LoseReplies,
    /// The next read of each connection's replies is cut in half: the first half is
    /// forwarded, the rest (and everything after it) is not. A reply stops mid-frame.
    CutReplies,
    /// Every open connection is closed, and new ones are closed as soon as accepted.
    Reset,
}

struct Shared {
    fault: Mutex<Fault>,
    /// Bumped by `Fault::Reset`: pumps of an older generation close their connection.
    generation: AtomicU64,
    stop: AtomicBool,
    /// Connections accepted so far.
    accepted: AtomicU64,
}

impl Shared {
    fn fault(&self) -> Fault {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A forwarder from a loopback port of its own to `upstream`.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .field("fault", &self.shared.fault())
            .finish()
    }
}

/// How often a pump or the acceptor looks at the fault and the stop flag while idle.
const POLL: Duration = Duration::from_millis(5);

impl FaultProxy {
    /// A proxy on a free loopback port, forwarding to `upstream` with no fault.
    pub fn start(upstream: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            fault: Mutex::new(Fault::None),
            generation: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("fault-proxy".into())
                .spawn(move || accept(listener, upstream, shared))
                .expect("the proxy's thread")
        };
        FaultProxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `redis://127.0.0.1:PORT/` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// Changes the fault, for open connections and new ones alike.
    pub fn set(&self, fault: Fault) {
        if fault == Fault::Reset {
            self.shared.generation.fetch_add(1, Ordering::SeqCst);
        }
        *self.shared.fault.lock().unwrap_or_else(|e| e.into_inner()) = fault;
    }

    /// The connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    let mut pumps = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                if shared.fault() == Fault::Reset {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let server = match shared.fault() {
                    // A blackhole never even reaches the server.
                    Fault::Blackhole => None,
                    _ => TcpStream::connect(upstream).ok(),
                };
                pumps.extend(connect(client, server, &shared));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
        pumps.retain(|p: &JoinHandle<()>| !p.is_finished());
    }
    for p in pumps {
        let _ = p.join();
    }
}

/// Starts the two pumps of one connection (the server side absent for a blackhole, or a
/// server that refused: then the client's requests go nowhere).
fn connect(client: TcpStream, server: Option<TcpStream>, shared: &Arc<Shared>) -> Vec<JoinHandle<()>> {
    let generation = shared.generation.load(Ordering::SeqCst);
    let _ = client.set_nodelay(true);
    let Some(server) = server else {
        let shared = shared.clone();
        return vec![std::thread::spawn(move || swallow(client, generation, &shared))];
    };
    let _ = server.set_nodelay(true);
    let up = (client.try_clone(), server.try_clone());
    let (Ok(client2), Ok(server2)) = up else {
        return Vec::new();
    };
    let s1 = shared.clone();
    let s2 = shared.clone();
    vec![
        std::thread::spawn(move || pump(client, server, Direction::Requests, generation, &s1)),
        std::thread::spawn(move || pump(server2, client2, Direction::Replies, generation, &s2)),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Requests,
    Replies,
}

/// Reads a blackholed connection until it closes, answering nothing.
fn swallow(mut client: TcpStream, generation: u64, shared: &Shared) {
    let _ = client.set_read_timeout(Some(POLL));
    let mut buf = [0u8; 4096];
    while !closed(generation, shared) {
        match client.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = client.shutdown(Shutdown::Both);
}

fn closed(generation: u64, shared: &Shared) -> bool {
    shared.stop.load(Ordering::SeqCst) || shared.generation.load(Ordering::SeqCst) != generation
}

/// Forwards `from` to `to` in one direction, as the fault says, until either side closes,
/// the proxy is reset or dropped.
fn pump(mut from: TcpStream, mut to: TcpStream, direction: Direction, generation: u64, shared: &Shared) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buf = [0u8; 16 * 1024];
    // A reply cut on this connection: nothing more of this direction gets through.
    let mut cut = false;
    while !closed(generation, shared) {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        let fault = shared.fault();
        let forward: &[u8] = match (direction, fault) {
            (_, Fault::Reset) => break,
            (Direction::Requests, Fault::Blackhole) => &[],
            (Direction::Requests, _) => &buf[..n],
            (Direction::Replies, _) if cut => &[],
            (Direction::Replies, Fault::Blackhole | Fault::LoseReplies) => &[],
            (Direction::Replies, Fault::CutReplies) => {
                cut = true;
                &buf[..n / 2]
            }
            (Direction::Replies, Fault::Latency(d)) => {
                std::thread::sleep(d);
                &buf[..n]
            }
            (Direction::Replies, Fault::None) => &buf[..n],
        };
        if !forward.is_empty() && to.write_all(forward).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
