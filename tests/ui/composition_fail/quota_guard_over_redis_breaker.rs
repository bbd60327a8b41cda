// A Redis-shared breaker's state lives in Redis, not in a snapshot the guard could save.
use breaker_core::{Duration, Policy, QuotaGuard, QuotaPolicy};
use breaker_redis::{Config, RedisLink};

static POLICY: Policy = Policy::new(2, Duration::from_secs(30));

fn main() {
    let link = RedisLink::open("redis://127.0.0.1:1/", Config::new()).unwrap();
    let breaker = link.breaker("ui:quota", &POLICY);
    let _guard: QuotaGuard<_> = QuotaGuard::new(breaker, QuotaPolicy::new());
}
