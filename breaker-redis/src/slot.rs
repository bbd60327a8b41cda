//! A one-shot answer from the link to a call waiting on it: waited for with a timeout, or awaited with a deadline; a waiter that gives up takes no late answer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use breaker_core::{Refused, WordTicket};

/// What the link answers a call that waits on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The shared breaker admitted the call (as the probe, when the ticket says so).
    Admitted(WordTicket),
    /// The shared breaker refused it.
    Refused(Refused),
    /// The operation landed (trip, force open, reset, a refresh).
    Done,
    /// Redis could not decide: the replica's local breaker does.
    Local,
}

/// The slot one answer goes into.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct State {
    reply: Option<Reply>,
    waker: Option<Waker>,
    /// The waiter gave up: no answer is taken any more.
    closed: bool,
}

impl Slot {
    pub fn new() -> Arc<Slot> {
        Arc::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned slot still holds a consistent `State`: every update is one assignment.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answers. `Err` with the reply if the waiter already gave up: whatever the reply
    /// granted is the answerer's to hand back.
    pub fn put(&self, reply: Reply) -> Result<(), Reply> {
        let mut s = self.lock();
        if s.closed {
            return Err(reply);
        }
        s.reply = Some(reply);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        self.ready.notify_all();
        Ok(())
    }

    /// Whether the waiter gave up.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Gives up: the answer, if it came first; otherwise no answer will be taken.
    pub fn close(&self) -> Option<Reply> {
        let mut s = self.lock();
        s.closed = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        s.reply.take()
    }

    /// Blocks until the answer comes or `timeout` passes (then gives up: `None`).
    pub fn wait(&self, timeout: StdDuration) -> Option<Reply> {
        let deadline = StdInstant::now() + timeout;
        let mut s = self.lock();
        loop {
            if let Some(r) = s.reply.take() {
                return Some(r);
            }
            let left = deadline.saturating_duration_since(StdInstant::now());
            if left.is_zero() {
                s.closed = true;
                return None;
            }
            s = self.ready.wait_timeout(s, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// The answer within `timeout`, awaited: the future gives up at the deadline (closed by
    /// a shared timer thread) or when dropped.
    pub fn wait_async(self: &Arc<Slot>, timeout: StdDuration) -> Wait {
        watchdog().watch(StdInstant::now() + timeout, Arc::downgrade(self));
        Wait { slot: self.clone() }
    }
}

/// The future of [`Slot::wait_async`]: `None` when it gave up.
#[derive(Debug)]
pub(crate) struct Wait {
    slot: Arc<Slot>,
}

impl Future for Wait {
    type Output = Option<Reply>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Reply>> {
        let mut s = self.slot.lock();
        if let Some(r) = s.reply.take() {
            return Poll::Ready(Some(r));
        }
        if s.closed {
            return Poll::Ready(None);
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        // A cancelled wait takes no answer: the link hands back what it would have granted.
        self.slot.close();
    }
}

/// Closes slots at their deadlines, for waits that have no timer of their own (async ones:
/// no runtime is assumed). One thread for the process, started at the first async wait.
struct Watchdog {
    due: Mutex<BinaryHeap<Reverse<(StdInstant, u64)>>>,
    slots: Mutex<std::collections::HashMap<u64, Weak<Slot>>>,
    wake: Condvar,
    next_id: std::sync::atomic::AtomicU64,
}

fn watchdog() -> &'static Watchdog {
    static WATCHDOG: OnceLock<&'static Watchdog> = OnceLock::new();
    WATCHDOG.get_or_init(|| {
        let w: &'static Watchdog = Box::leak(Box::new(Watchdog {
            due: Mutex::default(),
            slots: Mutex::default(),
            wake: Condvar::new(),
            next_id: std::sync::atomic::AtomicU64::new(0),
        }));
        std::thread::Builder::new()
            .name("breaker-redis-deadlines".into())
            .spawn(move || w.run())
            .expect("breaker-redis: cannot start the deadline thread");
        w
    })
}

impl Watchdog {
    fn watch(&self, deadline: StdInstant, slot: Weak<Slot>) {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).insert(id, slot);
        self.due
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Reverse((deadline, id)));
        self.wake.notify_one();
    }

    fn run(&self) {
        let mut due = self.due.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = StdInstant::now();
            match due.peek() {
                Some(&Reverse((at, id))) if at <= now => {
                    due.pop();
                    let slot = self.slots.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                    if let Some(slot) = slot.and_then(|w| w.upgrade()) {
                        // An answer that came first stays for the future to take.
                        let mut s = slot.lock();
                        if s.reply.is_none() {
                            s.closed = true;
                            if let Some(w) = s.waker.take() {
                                w.wake();
                            }
                        }
                    }
                }
                Some(&Reverse((at, _))) => {
                    due = self
                        .wake
                        .wait_timeout(due, at - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                None => due = self.wake.wait(due).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::task::Wake;

    use super::*;

    struct Flag(std::sync::atomic::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    fn poll_once(w: &mut Wait, flag: &Arc<Flag>) -> Poll<Option<Reply>> {
        let waker = Waker::from(flag.clone());
        Pin::new(w).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_waiter_takes_an_answer_that_came_in_time() {
        let slot = Slot::new();
        let answerer = slot.clone();
        let t = std::thread::spawn(move || answerer.put(Reply::Done));
        assert_eq!(slot.wait(StdDuration::from_secs(5)), Some(Reply::Done));
        assert_eq!(t.join().unwrap(), Ok(()));
    }

    #[test]
    fn a_waiter_that_gave_up_takes_no_late_answer() {
        let slot = Slot::new();
        assert_eq!(slot.wait(StdDuration::from_millis(1)), None);
        assert!(slot.is_closed());
        assert_eq!(slot.put(Reply::Done), Err(Reply::Done));
    }

    #[test]
    fn an_async_wait_gives_up_at_its_deadline_and_on_drop() {
        let flag = Arc::new(Flag(false.into()));
        let slot = Slot::new();
        let mut w = slot.wait_async(StdDuration::from_millis(20));
        assert_eq!(poll_once(&mut w, &flag), Poll::Pending);
        while !flag.0.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(StdDuration::from_millis(1));
        }
        assert_eq!(poll_once(&mut w, &flag), Poll::Ready(None));
        assert_eq!(slot.put(Reply::Local), Err(Reply::Local));

        let slot = Slot::new();
        let mut w = slot.wait_async(StdDuration::from_secs(60));
        assert_eq!(poll_once(&mut w, &flag), Poll::Pending);
        slot.put(Reply::Done).unwrap();
        assert_eq!(poll_once(&mut w, &flag), Poll::Ready(Some(Reply::Done)));

        let slot = Slot::new();
        drop(slot.wait_async(StdDuration::from_secs(60)));
        assert!(slot.is_closed());
    }
}
