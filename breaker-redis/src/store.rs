//! The link's two Redis round trips: read every key with the server's `TIME`, and the compare-and-swap script.
//!
//! Both carry `TIME`, which keeps each replica's [`SharedClock`] on the server's. Any error
//! drops the connection: a reply that arrives after its timeout must never be read as the
//! answer to the next command.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use redis::{Client, Connection, RedisResult, Script};

use crate::clock::{SharedClock, TimeSample};

/// Swaps `KEYS[1]` from `ARGV[2]` (or from absent, when `ARGV[1]` is `0`) to `ARGV[3]`, all
/// in one step of the server. Answers `{code, seconds, microseconds, found}`: code 1 swapped,
/// 0 the key was absent, 2 it held `found`.
const CAS: &str = r"
local found = redis.call('GET', KEYS[1])
local t = redis.call('TIME')
local matches
if ARGV[1] == '0' then matches = (found == false) else matches = (found == ARGV[2]) end
if matches then
  redis.call('SET', KEYS[1], ARGV[3])
  return {1, t[1], t[2], ''}
end
if found == false then return {0, t[1], t[2], ''} end
return {2, t[1], t[2], found}
";

/// What a compare-and-swap found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cas {
    /// The key held the expected value (or was absent, as expected) and now holds the new one.
    Swapped,
    /// The key held this instead (`None`: it was absent).
    Found(Option<Vec<u8>>),
}

/// One Redis connection, opened on demand.
pub(crate) struct Store {
    client: Client,
    con: Option<Connection>,
    timeout: StdDuration,
    cas: Script,
    /// Round trips attempted (connections not counted), for reports and tests.
    round_trips: Arc<AtomicU64>,
}

impl Store {
    pub fn new(client: Client, timeout: StdDuration, round_trips: Arc<AtomicU64>) -> Store {
        Store {
            client,
            con: None,
            timeout,
            cas: Script::new(CAS),
            round_trips,
        }
    }

    pub fn is_connected(&self) -> bool {
        self.con.is_some()
    }

    pub fn disconnect(&mut self) {
        self.con = None;
    }

    fn connection(&mut self) -> RedisResult<&mut Connection> {
        if self.con.is_none() {
            let con = self.client.get_connection_with_timeout(self.timeout)?;
            con.set_read_timeout(Some(self.timeout))?;
            con.set_write_timeout(Some(self.timeout))?;
            self.con = Some(con);
        }
        match self.con.as_mut() {
            Some(con) => Ok(con),
            None => unreachable!("connected just above"),
        }
    }

    /// Runs `f` on the connection, timing it for the clock; any error drops the connection.
    fn round_trip<T>(
        &mut self,
        clock: &SharedClock,
        f: impl FnOnce(&mut Connection) -> RedisResult<(T, (String, String))>,
    ) -> RedisResult<T> {
        let round_trips = self.round_trips.clone();
        let result = self.connection().and_then(|con| {
            round_trips.fetch_add(1, Ordering::Relaxed);
            let sent = clock.local_now();
            let (value, time) = f(con)?;
            let arrived = clock.local_now();
            Ok((
                value,
                TimeSample {
                    sent,
                    arrived,
                    server_ms: server_millis(&time)?,
                },
            ))
        });
        match result {
            Ok((value, sample)) => {
                clock.observe(sample);
                Ok(value)
            }
            Err(e) => {
                self.disconnect();
                Err(e)
            }
        }
    }

    /// The values of `keys` (`None` where absent), in one round trip with `TIME`.
    pub fn read(&mut self, keys: &[&str], clock: &SharedClock) -> RedisResult<Vec<Option<Vec<u8>>>> {
        self.round_trip(clock, |con| {
            let (time, values): ((String, String), Vec<Option<Vec<u8>>>) =
                redis::pipe().cmd("TIME").cmd("MGET").arg(keys).query(con)?;
            Ok((values, time))
        })
    }

    /// Swaps `key` from `expected` (`None`: absent) to `new`.
    pub fn cas(&mut self, key: &str, expected: Option<&[u8]>, new: &[u8], clock: &SharedClock) -> RedisResult<Cas> {
        let cas = &self.cas.clone();
        self.round_trip(clock, |con| {
            let (code, secs, micros, found): (i64, String, String, Vec<u8>) = cas
                .key(key)
                .arg(if expected.is_some() { "1" } else { "0" })
                .arg(expected.unwrap_or_default())
                .arg(new)
                .invoke(con)?;
            let outcome = match code {
                1 => Cas::Swapped,
                0 => Cas::Found(None),
                _ => Cas::Found(Some(found)),
            };
            Ok((outcome, (secs, micros)))
        })
    }
}

/// `TIME`'s seconds and microseconds as wrapping milliseconds since the Unix epoch.
fn server_millis((secs, micros): &(String, String)) -> RedisResult<u32> {
    let parse = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| redis::RedisError::from((redis::ErrorKind::Parse, "TIME is not a number", s.to_owned())))
    };
    Ok(parse(secs)?.wrapping_mul(1000).wrapping_add(parse(micros)? / 1000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_time_becomes_wrapping_milliseconds() {
        let t = (String::from("1700000000"), String::from("123999"));
        assert_eq!(server_millis(&t).unwrap(), (1_700_000_000_123u64 % (1 << 32)) as u32);
        assert!(server_millis(&(String::from("x"), String::from("1"))).is_err());
    }
}
