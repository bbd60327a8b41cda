// A quota guard steers a breaker through its observer and saves and restores its state;
// a registry entry's observer and state are its function's.
use breaker_core::{circuit_breaker, registry, Classify, QuotaGuard, QuotaPolicy, Refused};

#[derive(Debug)]
pub struct Down;
impl Classify for Down {}
impl From<Refused> for Down {
    fn from(_: Refused) -> Self {
        Down
    }
}

#[circuit_breaker(name = "ui/quota", trip = 2)]
fn fetch() -> Result<(), Down> {
    Ok(())
}

fn main() {
    let entry = registry::get("ui/quota").unwrap();
    let _guard: QuotaGuard<_> = QuotaGuard::new(entry, QuotaPolicy::new());
    let _ = fetch();
}
