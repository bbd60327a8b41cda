use breaker_core::{circuit_breaker, Refused, Verdict};

fn verdict(_: &String) -> Verdict {
    Verdict::Strike
}

// Takes the refusal by reference: `refused` wants `fn(Refused) -> E`.
fn refusal_text(r: &Refused) -> String {
    r.to_string()
}

#[circuit_breaker(classify = verdict, refused = refusal_text)]
fn call() -> Result<(), String> {
    Ok(())
}

fn main() {}
