//! Parsing the attribute's arguments: `key = value` pairs, separated by commas.
//!
//! Keys are custom keywords dispatched with `lookahead1`. A bad pair is recorded and
//! skipped up to the next comma, so that every mistake in one attribute is reported in
//! one build. Values are checked one by one here; checks that involve several arguments
//! live in `validate.rs`.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Path, Token};

use crate::duration;
use crate::errors::Errors;
use crate::window::{self, WindowArgs};

mod kw {
    syn::custom_keyword!(trip);
    syn::custom_keyword!(cooldown);
    syn::custom_keyword!(probe_lease);
    syn::custom_keyword!(probes);
    syn::custom_keyword!(half_open_calls);
    syn::custom_keyword!(half_open_rate);
    syn::custom_keyword!(backoff);
    syn::custom_keyword!(max_cooldown);
    syn::custom_keyword!(name);
    syn::custom_keyword!(log);
    syn::custom_keyword!(shadow);
    syn::custom_keyword!(count_calls);
    syn::custom_keyword!(history);
    syn::custom_keyword!(classify);
    syn::custom_keyword!(refused);
    syn::custom_keyword!(clock);
    syn::custom_keyword!(fallback);
    // The failure-rate window (`window.rs`).
    syn::custom_keyword!(window);
    syn::custom_keyword!(failure_rate);
    syn::custom_keyword!(min_calls);
    syn::custom_keyword!(slow_call);
    syn::custom_keyword!(slow_rate);
    syn::custom_keyword!(slow_failures);
    syn::custom_keyword!(in_flight);
    syn::custom_keyword!(buckets);
}

/// Every argument, in the order the documentation lists them.
pub const KEYS: &str = "trip, cooldown, probe_lease, probes, half_open_calls, half_open_rate, backoff, max_cooldown, window, buckets, failure_rate, min_calls, slow_call, slow_rate, slow_failures, in_flight, name, log, shadow, count_calls, history, classify, refused, clock, fallback, crate, retry, retry_delay, retry_backoff, retry_max_delay, retry_jitter, retry_budget, retry_sleep";

/// The largest `trip` (`breaker_core::MAX_TRIP`).
pub const MAX_TRIP: u32 = 255;
/// The largest `probes` (`breaker_core::MAX_PROBES`).
pub const MAX_PROBES: u32 = 15;
/// The largest `backoff` multiplier.
pub const MAX_BACKOFF: u32 = 255;
/// The largest `history` (`breaker_core::MAX_HISTORY`).
pub const MAX_HISTORY: u32 = 1024;

/// One argument's value and where it was written.
#[derive(Clone, Copy)]
pub struct Setting<T> {
    pub value: T,
    /// The key, for errors about the argument as a whole.
    pub key: Span,
    /// The value, for errors about the value.
    pub at: Span,
}

/// The arguments as written; `None` where absent or invalid (already reported).
#[derive(Default)]
pub struct Args {
    pub trip: Option<Setting<u32>>,
    pub cooldown: Option<Setting<u32>>,
    pub probe_lease: Option<Setting<u32>>,
    pub probes: Option<Setting<u32>>,
    /// `half_open_calls = N, half_open_rate = P`: half-open judged by the failure rate of
    /// up to `N` probes (`Policy::with_half_open_rate`).
    pub half_open_calls: Option<Setting<u32>>,
    pub half_open_rate: Option<Setting<u32>>,
    pub backoff: Option<Setting<u32>>,
    pub max_cooldown: Option<Setting<u32>>,
    pub name: Option<LitStr>,
    /// `log`, `log = true` or `log = false`.
    pub log: Option<bool>,
    /// `shadow`, `shadow = true` or `shadow = false`: the breaker starts in shadow mode.
    pub shadow: Option<bool>,
    /// `count_calls`, `count_calls = true` or `count_calls = false`: the policy counts
    /// every call (`Policy::counting_calls`).
    pub count_calls: Option<bool>,
    /// `history = N`: the breaker keeps its last `N` transitions.
    pub history: Option<Setting<u32>>,
    pub classify: Option<Path>,
    /// `refused = path`: the function that turns a refusal into the error type.
    pub refused: Option<Path>,
    pub clock: Option<Path>,
    /// `fallback = path`: called with the same arguments when the breaker refuses.
    pub fallback: Option<Path>,
    pub krate: Option<Path>,
    /// The retry arguments (`retry.rs`).
    pub retry: crate::retry::RetryArgs,
    /// `window`, `buckets`, `failure_rate`, `min_calls`, `slow_call`, `slow_rate`,
    /// `slow_failures`, `in_flight`.
    pub window: WindowArgs,
    /// Keys seen so far, valid or not, to reject duplicates.
    seen: Vec<&'static str>,
}

impl Args {
    /// Whether `key` was written but its value rejected (already reported): checks that
    /// involve it are skipped, so one mistake gives one error.
    pub fn invalid(&self, key: &str) -> bool {
        let value_ok = match key {
            "cooldown" => self.cooldown.is_some(),
            "backoff" => self.backoff.is_some(),
            "max_cooldown" => self.max_cooldown.is_some(),
            "window" => self.window.window.is_some(),
            "slow_call" => self.window.slow_call.is_some(),
            "slow_rate" => self.window.slow_rate.is_some(),
            "buckets" => self.window.buckets.is_some(),
            "min_calls" => self.window.min_calls.is_some(),
            "probes" => self.probes.is_some(),
            "half_open_calls" => self.half_open_calls.is_some(),
            "half_open_rate" => self.half_open_rate.is_some(),
            _ => true,
        };
        self.seen.contains(&key) && !value_ok
    }
}

#[derive(Clone, Copy)]
enum Key {
    Trip,
    Cooldown,
    ProbeLease,
    Probes,
    HalfOpenCalls,
    HalfOpenRate,
    Backoff,
    MaxCooldown,
    Name,
    Log,
    Shadow,
    CountCalls,
    History,
    Classify,
    Refused,
    Clock,
    Fallback,
    Crate,
    Window,
    FailureRate,
    MinCalls,
    SlowCall,
    SlowRate,
    SlowFailures,
    InFlight,
    Buckets,
}

impl Key {
    fn as_str(self) -> &'static str {
        match self {
            Key::Trip => "trip",
            Key::Cooldown => "cooldown",
            Key::ProbeLease => "probe_lease",
            Key::Probes => "probes",
            Key::HalfOpenCalls => "half_open_calls",
            Key::HalfOpenRate => "half_open_rate",
            Key::Backoff => "backoff",
            Key::MaxCooldown => "max_cooldown",
            Key::Name => "name",
            Key::Log => "log",
            Key::Shadow => "shadow",
            Key::CountCalls => "count_calls",
            Key::History => "history",
            Key::Classify => "classify",
            Key::Refused => "refused",
            Key::Clock => "clock",
            Key::Fallback => "fallback",
            Key::Crate => "crate",
            Key::Window => "window",
            Key::FailureRate => "failure_rate",
            Key::MinCalls => "min_calls",
            Key::SlowCall => "slow_call",
            Key::SlowRate => "slow_rate",
            Key::SlowFailures => "slow_failures",
            Key::InFlight => "in_flight",
            Key::Buckets => "buckets",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Key::Trip => "trip = 3",
            Key::Cooldown => "cooldown = \"30s\"",
            Key::ProbeLease => "probe_lease = \"10s\"",
            Key::Probes => "probes = 2",
            Key::HalfOpenCalls => "half_open_calls = 10",
            Key::HalfOpenRate => "half_open_rate = 50",
            Key::Backoff => "backoff = 2",
            Key::MaxCooldown => "max_cooldown = \"30m\"",
            Key::Name => "name = \"radio::send\"",
            Key::Log => "log",
            Key::Shadow => "shadow",
            Key::CountCalls => "count_calls",
            Key::History => "history = 16",
            Key::Classify => "classify = my_verdict",
            Key::Refused => "refused = my_refusal",
            Key::Clock => "clock = CLOCK",
            Key::Fallback => "fallback = send_cached",
            Key::Crate => "crate = ::breaker_core",
            Key::Window => "window = 20",
            Key::FailureRate => "failure_rate = 50",
            Key::MinCalls => "min_calls = 10",
            Key::SlowCall => "slow_call = \"2s\"",
            Key::SlowRate => "slow_rate = 80",
            Key::SlowFailures => "slow_failures = true",
            Key::InFlight => "in_flight = 16",
            Key::Buckets => "buckets = 60",
        }
    }
}

/// Parses the attribute's arguments, recording every problem in `errors`.
pub fn parse(tokens: TokenStream, errors: &mut Errors) -> Args {
    let mut args = Args::default();
    let parser = |input: ParseStream| {
        parse_all(input, &mut args, errors);
        Ok(())
    };
    // `parse_all` consumes everything and never fails; this is only defensive.
    if let Err(e) = parser.parse2(tokens) {
        errors.push(e);
    }
    args
}

fn parse_all(input: ParseStream, args: &mut Args, errors: &mut Errors) {
    while !input.is_empty() {
        if let Err(e) = parse_one(input, args, errors) {
            errors.push(e);
            skip_to_comma(input);
        }
        if input.is_empty() {
            break;
        }
        if input.parse::<Token![,]>().is_err() {
            errors.push(syn::Error::new(input.span(), "expected `,` between arguments"));
            skip_to_comma(input);
            let _ = input.parse::<Option<Token![,]>>();
        }
    }
}

/// Skips the rest of a bad `key = value` pair.
fn skip_to_comma(input: ParseStream) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<TokenTree>().is_err() {
            break;
        }
    }
}

fn parse_one(input: ParseStream, args: &mut Args, errors: &mut Errors) -> syn::Result<()> {
    if let Some(parsed) = crate::retry::parse(input, &mut args.retry, errors) {
        return parsed;
    }
    let (key, key_span) = parse_key(input)?;
    if let Key::Log | Key::Shadow | Key::CountCalls = key {
        return parse_flag(input, key, key_span, args, errors);
    }
    if !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key_span,
            format!("`{}` needs a value: write `{}`", key.as_str(), key.example()),
        ));
    }
    input.parse::<Token![=]>()?;
    let value: Expr = input.parse()?;

    if args.seen.contains(&key.as_str()) {
        errors.push(syn::Error::new(
            key_span,
            format!("duplicate argument `{}`; give each argument once", key.as_str()),
        ));
        return Ok(());
    }
    args.seen.push(key.as_str());

    let at = value.span();
    let set = |value| Setting {
        value,
        key: key_span,
        at,
    };
    match key {
        Key::Trip => args.trip = range(&value, "trip", 1, MAX_TRIP, errors).map(set),
        Key::Probes => args.probes = range(&value, "probes", 1, MAX_PROBES, errors).map(set),
        Key::HalfOpenCalls => {
            args.half_open_calls = range(&value, "half_open_calls", 1, MAX_PROBES, errors).map(set)
        }
        Key::HalfOpenRate => args.half_open_rate = range(&value, "half_open_rate", 1, 100, errors).map(set),
        Key::Backoff => args.backoff = range(&value, "backoff", 1, MAX_BACKOFF, errors).map(set),
        Key::History => args.history = range(&value, "history", 1, MAX_HISTORY, errors).map(set),
        Key::Cooldown => args.cooldown = duration_value(&value, "cooldown", errors).map(set),
        Key::ProbeLease => args.probe_lease = duration_value(&value, "probe_lease", errors).map(set),
        Key::MaxCooldown => args.max_cooldown = duration_value(&value, "max_cooldown", errors).map(set),
        Key::Name => args.name = name_value(&value, errors),
        Key::Window => {
            args.window.window = window::size_value(&value, errors).map(|value| Setting {
                value,
                key: key_span,
                at,
            })
        }
        Key::FailureRate => args.window.failure_rate = range(&value, "failure_rate", 1, 100, errors).map(set),
        Key::MinCalls => {
            args.window.min_calls = range(&value, "min_calls", 1, window::MAX_MIN_CALLS, errors).map(set)
        }
        Key::SlowCall => args.window.slow_call = duration_value(&value, "slow_call", errors).map(set),
        Key::SlowRate => args.window.slow_rate = range(&value, "slow_rate", 1, 100, errors).map(set),
        Key::SlowFailures => {
            args.window.slow_failures = window::slow_failures_value(&value, errors).map(|value| Setting {
                value,
                key: key_span,
                at,
            })
        }
        Key::Buckets => {
            args.window.buckets = range(&value, "buckets", 1, window::MAX_WINDOW_BUCKETS, errors).map(set)
        }
        Key::InFlight => {
            args.window.in_flight = range(&value, "in_flight", 1, window::MAX_IN_FLIGHT, errors).map(set)
        }
        // Handled by `parse_flag`, which returned above.
        Key::Log | Key::Shadow | Key::CountCalls => {}
        Key::Classify => {
            args.classify = path_value(
                &value,
                errors,
                "`classify` takes a path to a function `fn(&E) -> breaker_core::Verdict`, such as `classify = http_verdict`; write a closure as a named `fn`",
            )
        }
        Key::Refused => {
            args.refused = path_value(
                &value,
                errors,
                "`refused` takes a path to a function `fn(breaker_core::Refused) -> E`, such as `refused = my_refusal`; write a closure as a named `fn`",
            )
        }
        Key::Clock => {
            args.clock = path_value(
                &value,
                errors,
                "`clock` takes a path to a `static` implementing `breaker_core::Clock`, such as `clock = CLOCK`",
            )
        }
        Key::Fallback => {
            args.fallback = path_value(
                &value,
                errors,
                "`fallback` takes a path to a function with the same arguments and return type, called when the breaker refuses, such as `fallback = send_cached` or `fallback = Self::send_cached`; write a closure as a named `fn`",
            )
        }
        Key::Crate => {
            args.krate = path_value(
                &value,
                errors,
                "`crate` takes a path to the crate that re-exports breaker-core, such as `crate = ::my_crate::breaker`",
            )
        }
    }
    Ok(())
}

/// What `log` may be written as, for its errors.
const LOG_FORMS: &str = "`log` is a flag: write `log` (or `log = true`) to log each transition of this breaker, or leave it out (or `log = false`) to keep it silent";

/// What `shadow` may be written as, for its errors.
const SHADOW_FORMS: &str = "`shadow` is a flag: write `shadow` (or `shadow = true`) to start this breaker in shadow mode (it decides and counts, and refuses nothing but a forced opening), or leave it out (or `shadow = false`) for a live breaker";

/// What `count_calls` may be written as, for its errors.
const COUNT_CALLS_FORMS: &str = "`count_calls` is a flag: write `count_calls` (or `count_calls = true`) to count every call and outcome of this breaker (its successes too, at the price of two atomic adds per call), or leave it out (or `count_calls = false`) to count failures, refusals, trips and probes only";

/// A flag (`log`, `shadow`, `count_calls`) as a bare key (followed by a comma or the end), or
/// `key = true` / `key = false`.
fn parse_flag(input: ParseStream, key: Key, key_span: Span, args: &mut Args, errors: &mut Errors) -> syn::Result<()> {
    let name = key.as_str();
    let forms = match key {
        Key::Shadow => SHADOW_FORMS,
        Key::CountCalls => COUNT_CALLS_FORMS,
        _ => LOG_FORMS,
    };
    let value = if input.is_empty() || input.peek(Token![,]) {
        None
    } else if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Some(input.parse::<Expr>()?)
    } else {
        // `log(true)`, `log: true`, `log true`: point at what follows the key.
        let next: TokenTree = input.parse()?;
        return Err(syn::Error::new(next.span(), forms));
    };
    if args.seen.contains(&name) {
        errors.push(syn::Error::new(
            key_span,
            format!("duplicate argument `{name}`; give each argument once"),
        ));
        return Ok(());
    }
    args.seen.push(name);
    let flag = match value {
        None => Some(true),
        Some(value) => match bare_literal(&value) {
            Some(Lit::Bool(b)) => Some(b.value),
            _ => {
                errors.push(syn::Error::new_spanned(value, forms));
                None
            }
        },
    };
    match key {
        Key::Shadow => args.shadow = flag,
        Key::CountCalls => args.count_calls = flag,
        _ => args.log = flag,
    }
    Ok(())
}

fn parse_key(input: ParseStream) -> syn::Result<(Key, Span)> {
    let lookahead = input.lookahead1();
    macro_rules! keys {
        ($($kw:path => $key:expr,)*) => {
            $(
                if lookahead.peek($kw) {
                    let token = input.parse::<$kw>()?;
                    return Ok(($key, token.span()));
                }
            )*
        };
    }
    keys! {
        kw::trip => Key::Trip,
        kw::cooldown => Key::Cooldown,
        kw::probe_lease => Key::ProbeLease,
        kw::probes => Key::Probes,
        kw::half_open_calls => Key::HalfOpenCalls,
        kw::half_open_rate => Key::HalfOpenRate,
        kw::backoff => Key::Backoff,
        kw::max_cooldown => Key::MaxCooldown,
        kw::name => Key::Name,
        kw::log => Key::Log,
        kw::shadow => Key::Shadow,
        kw::count_calls => Key::CountCalls,
        kw::history => Key::History,
        kw::classify => Key::Classify,
        kw::refused => Key::Refused,
        kw::clock => Key::Clock,
        kw::fallback => Key::Fallback,
        syn::token::Crate => Key::Crate,
        kw::window => Key::Window,
        kw::failure_rate => Key::FailureRate,
        kw::min_calls => Key::MinCalls,
        kw::slow_call => Key::SlowCall,
        kw::slow_rate => Key::SlowRate,
        kw::slow_failures => Key::SlowFailures,
        kw::in_flight => Key::InFlight,
        kw::buckets => Key::Buckets,
    }
    if input.peek(syn::Ident::peek_any) {
        let ident = input.call(syn::Ident::parse_any)?;
        return Err(syn::Error::new(
            ident.span(),
            format!("unknown argument `{ident}`; expected one of: {KEYS}"),
        ));
    }
    Err(lookahead.error())
}

/// The literal a value is, if it is written as a bare literal: not one with an attribute
/// (`#[cfg(x)] 3`, which would silently drop the attribute), nor a string with a suffix
/// (`"30s"ms`), nor an integer with a suffix other than its type (`3u8` is fine, `3ms`
/// is not); the compiler accepts such suffixes in attribute arguments but nowhere else.
pub(crate) fn bare_literal(value: &Expr) -> Option<&Lit> {
    const INTEGER_TYPES: [&str; 12] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
    ];
    match value {
        Expr::Lit(ExprLit { attrs, lit }) if attrs.is_empty() => match lit {
            Lit::Str(s) if !s.suffix().is_empty() => None,
            Lit::Int(i) if !i.suffix().is_empty() && !INTEGER_TYPES.contains(&i.suffix()) => None,
            lit => Some(lit),
        },
        _ => None,
    }
}

/// An integer literal in `min..=max`.
fn range(value: &Expr, key: &str, min: u32, max: u32, errors: &mut Errors) -> Option<u32> {
    let hint = match key {
        "trip" => "consecutive strikes that open the breaker",
        "probes" => "consecutive probe successes that close it again",
        "half_open_calls" => "the probes half-open permits, one at a time, judged by `half_open_rate`",
        "half_open_rate" => "the percentage of failed probes among `half_open_calls` that opens the breaker again",
        "failure_rate" => "the percentage of failed calls in the window that opens the breaker",
        "slow_rate" => "the percentage of slow calls in the window that opens the breaker",
        "min_calls" => "the fewest calls in the window before a rate can open the breaker",
        "history" => "the last transitions its breaker keeps for the registry's report",
        "buckets" => "the buckets a time window is counted in",
        "in_flight" => "the calls out watched at once, each slow from the moment it passes `slow_call`",
        _ => "the factor each re-open multiplies the cooldown by, 1 for a constant cooldown",
    };
    let Some(Lit::Int(int)) = bare_literal(value) else {
        errors.push(syn::Error::new_spanned(
            value,
            format!("`{key}` takes an integer literal from {min} to {max} ({hint}), such as `{key} = {min}`"),
        ));
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(0) if key == "trip" => errors.push(syn::Error::new(
            int.span(),
            "`trip` must be at least 1: it counts the consecutive strikes that open the breaker; write `trip = 1` to open on the first failure",
        )),
        Ok(n) if (min..=max).contains(&n) => return Some(n),
        _ => errors.push(syn::Error::new(
            int.span(),
            format!("`{key}` must be between {min} and {max} ({hint}); found {}", int.base10_digits()),
        )),
    }
    None
}

/// A duration string literal, parsed.
pub(crate) fn duration_value(value: &Expr, key: &str, errors: &mut Errors) -> Option<u32> {
    match bare_literal(value) {
        Some(Lit::Str(s)) => match duration::parse(&s.value()) {
            Ok(ms) => Some(ms),
            Err(e) => {
                errors.push(syn::Error::new(s.span(), e));
                None
            }
        },
        Some(Lit::Int(int)) => {
            let n = int.base10_digits();
            errors.push(syn::Error::new(
                int.span(),
                format!("`{key}` needs a unit: write `{key} = \"{n}s\"` for seconds or `{key} = \"{n}ms\"` for milliseconds"),
            ));
            None
        }
        _ => {
            errors.push(syn::Error::new_spanned(
                value,
                format!(
                    "`{key}` takes a string literal such as `{key} = \"30s\"` (units ms, s, m, h; \"1m30s\"); it is read at compile time, so constants and expressions cannot be used"
                ),
            ));
            None
        }
    }
}

fn name_value(value: &Expr, errors: &mut Errors) -> Option<LitStr> {
    match bare_literal(value) {
        Some(Lit::Str(s)) if !s.value().is_empty() => Some(s.clone()),
        Some(Lit::Str(s)) => {
            errors.push(syn::Error::new(
                s.span(),
                "the registry name must not be empty; write one such as `name = \"radio::send\"`, or leave `name` out for the function's path",
            ));
            None
        }
        _ => {
            errors.push(syn::Error::new_spanned(
                value,
                "`name` takes a string literal, such as `name = \"radio::send\"`",
            ));
            None
        }
    }
}

pub(crate) fn path_value(value: &Expr, errors: &mut Errors, message: &str) -> Option<Path> {
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => {
            // syn takes `try::x` for a path (for the old `try!` macro), but `try` is a
            // reserved word since the 2018 edition: rustc would refuse the expansion with
            // an error about a keyword the user never saw as one.
            if let Some(segment) = p.path.segments.iter().find(|s| s.ident == "try") {
                errors.push(syn::Error::new_spanned(
                    &segment.ident,
                    "`try` is a reserved word and cannot name a path's segment; write `r#try` for an item named `try`",
                ));
                return None;
            }
            Some(p.path.clone())
        }
        other => {
            errors.push(syn::Error::new_spanned(other, message));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `log` as parsed from `src`, and whether `src` was accepted.
    fn log(src: &str) -> (Option<bool>, bool) {
        let mut errors = Errors::default();
        let args = parse(src.parse().unwrap(), &mut errors);
        (args.log, errors.is_empty())
    }

    #[test]
    fn log_is_a_flag_or_a_bool() {
        assert_eq!(log(""), (None, true));
        assert_eq!(log("log"), (Some(true), true));
        assert_eq!(log("log,"), (Some(true), true));
        assert_eq!(log("trip = 3, log, name = \"radio\""), (Some(true), true));
        assert_eq!(log("log = true"), (Some(true), true));
        assert_eq!(log("log = false"), (Some(false), true));
        for bad in [
            "log = \"yes\"",
            "log = 1",
            "log = yes",
            "log(true)",
            "log true",
            "log, log",
            "log = true, log = false",
        ] {
            assert!(!log(bad).1, "{bad}");
        }
        // A bad `log` does not hide the next argument's mistake.
        let mut errors = Errors::default();
        let _ = parse("log(true), trip = 0".parse().unwrap(), &mut errors);
        let reported = errors.into_compile_errors().to_string();
        assert_eq!(reported.matches("compile_error").count(), 2, "{reported}");
    }

    #[test]
    fn values_are_bare_literals() {
        let accepted = |src: &str| {
            let mut errors = Errors::default();
            let _ = parse(src.parse().unwrap(), &mut errors);
            errors.is_empty()
        };
        for bad in [
            "trip = #[cfg(any())] 3",
            "probes = #[doc = \"x\"] 2",
            "cooldown = #[a] \"30s\"",
            "cooldown = \"30s\"ms",
            "probe_lease = \"1s\"x",
            "name = \"radio\"x",
            "name = #[a] \"radio\"",
            "log = #[a] true",
            "trip = 3ms",
            "backoff = 2x, max_cooldown = \"1m\"",
        ] {
            assert!(!accepted(bad), "{bad}");
        }
        // A suffixed integer is an integer literal; a raw string is a string literal.
        for good in [
            "trip = 3u8",
            "probes = 2usize",
            "probes = 0x2",
            "cooldown = r\"30s\"",
            "name = r#\"radio\"#",
        ] {
            assert!(accepted(good), "{good}");
        }
    }
    /// The arguments parsed from `src`, and every message reported.
    fn parsed(src: &str) -> (Args, Vec<String>) {
        let mut errors = Errors::default();
        let args = parse(src.parse().unwrap(), &mut errors);
        (args, errors.messages())
    }

    #[test]
    fn every_key_is_read_into_its_own_setting() {
        let (args, errors) = parsed(
            "trip = 7, cooldown = \"2s\", probe_lease = \"3s\", probes = 4, backoff = 5, \
             max_cooldown = \"1m\", name = \"n\", log, classify = a::b, clock = C, crate = ::k",
        );
        assert_eq!(errors, Vec::<String>::new());
        let value = |s: Option<Setting<u32>>| s.map(|s| s.value);
        assert_eq!(
            [
                value(args.trip),
                value(args.cooldown),
                value(args.probe_lease),
                value(args.probes),
                value(args.backoff),
                value(args.max_cooldown)
            ],
            [Some(7), Some(2_000), Some(3_000), Some(4), Some(5), Some(60_000)]
        );
        assert_eq!(args.name.map(|n| n.value()).as_deref(), Some("n"));
        assert_eq!(args.log, Some(true));
        let path = |p: Option<Path>| p.map(|p| quote::ToTokens::to_token_stream(&p).to_string());
        assert_eq!(path(args.classify).as_deref(), Some("a :: b"));
        assert_eq!(path(args.clock).as_deref(), Some("C"));
        assert_eq!(path(args.krate).as_deref(), Some(":: k"));
    }

    #[test]
    fn every_key_without_a_value_shows_how_to_write_it() {
        for (key, example) in [
            ("trip", "trip = 3"),
            ("cooldown", "cooldown = \"30s\""),
            ("probe_lease", "probe_lease = \"10s\""),
            ("probes", "probes = 2"),
            ("half_open_calls", "half_open_calls = 10"),
            ("half_open_rate", "half_open_rate = 50"),
            ("backoff", "backoff = 2"),
            ("max_cooldown", "max_cooldown = \"30m\""),
            ("name", "name = \"radio::send\""),
            ("classify", "classify = my_verdict"),
            ("refused", "refused = my_refusal"),
            ("clock", "clock = CLOCK"),
            ("fallback", "fallback = send_cached"),
            ("crate", "crate = ::breaker_core"),
            ("window", "window = 20"),
            ("failure_rate", "failure_rate = 50"),
            ("min_calls", "min_calls = 10"),
            ("slow_call", "slow_call = \"2s\""),
            ("slow_rate", "slow_rate = 80"),
            ("slow_failures", "slow_failures = true"),
            ("in_flight", "in_flight = 16"),
            ("buckets", "buckets = 60"),
            ("retry", "retry = 3"),
            ("retry_delay", "retry_delay = \"100ms\""),
            ("retry_backoff", "retry_backoff = 2"),
            ("retry_max_delay", "retry_max_delay = \"2s\""),
            ("retry_jitter", "retry_jitter = \"full\""),
            ("retry_budget", "retry_budget = \"10s\""),
            ("retry_sleep", "retry_sleep = my_sleep"),
        ] {
            assert_eq!(
                parsed(key).1,
                [format!("`{key}` needs a value: write `{example}`")],
                "{key}"
            );
        }
    }

    #[test]
    fn integers_out_of_range_name_their_own_rule() {
        for (src, message) in [
            (
                "trip = 0",
                "`trip` must be at least 1: it counts the consecutive strikes that open the breaker; write `trip = 1` to open on the first failure",
            ),
            (
                "trip = 256",
                "`trip` must be between 1 and 255 (consecutive strikes that open the breaker); found 256",
            ),
            (
                "probes = 0",
                "`probes` must be between 1 and 15 (consecutive probe successes that close it again); found 0",
            ),
            (
                "backoff = 0",
                "`backoff` must be between 1 and 255 (the factor each re-open multiplies the cooldown by, 1 for a constant cooldown); found 0",
            ),
            (
                "backoff = 1_000_000_000_000",
                "`backoff` must be between 1 and 255 (the factor each re-open multiplies the cooldown by, 1 for a constant cooldown); found 1000000000000",
            ),
            (
                "probes = \"2\"",
                "`probes` takes an integer literal from 1 to 15 (consecutive probe successes that close it again), such as `probes = 1`",
            ),
        ] {
            let (args, errors) = parsed(src);
            assert_eq!(errors, [message], "{src}");
            assert!(args.trip.is_none() && args.probes.is_none() && args.backoff.is_none());
        }
        let (args, errors) = parsed("trip = 255, probes = 15, backoff = 255");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            [args.trip, args.probes, args.backoff].map(|s| s.map(|s| s.value)),
            [Some(255), Some(15), Some(255)]
        );
        let (args, errors) = parsed("trip = 1, probes = 1, backoff = 1");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            [args.trip, args.probes, args.backoff].map(|s| s.map(|s| s.value)),
            [Some(1), Some(1), Some(1)]
        );
    }

    #[test]
    fn only_a_plain_path_is_a_path() {
        for src in [
            "classify = <T as Classify>::verdict",
            "classify = #[allow(unused)] verdict",
            "clock = <C>::NOW",
            "crate = #[doc = \"x\"] krate",
            "clock = CLOCK.now",
        ] {
            let (args, errors) = parsed(src);
            assert_eq!(errors.len(), 1, "{src}: {errors:?}");
            assert!(args.classify.is_none() && args.clock.is_none() && args.krate.is_none());
        }
        for src in ["crate = try::k", "classify = http::try::verdict", "clock = ::try"] {
            let (args, errors) = parsed(src);
            assert_eq!(errors.len(), 1, "{src}: {errors:?}");
            assert!(errors[0].contains("write `r#try`"), "{src}: {errors:?}");
            assert!(args.classify.is_none() && args.clock.is_none() && args.krate.is_none());
        }
        let (args, errors) = parsed("crate = r#try::k");
        assert!(errors.is_empty() && args.krate.is_some(), "{errors:?}");
        let (args, errors) = parsed("classify = crate::http::verdict, clock = super::CLOCK, crate = ::k::b");
        assert!(errors.is_empty(), "{errors:?}");
        assert!(args.classify.is_some() && args.clock.is_some() && args.krate.is_some());
    }

    #[test]
    fn names_are_non_empty_string_literals() {
        let (args, errors) = parsed("name = \"radio\"");
        assert!(errors.is_empty());
        assert_eq!(args.name.map(|n| n.value()).as_deref(), Some("radio"));
        for src in ["name = \"\"", "name = radio", "name = 3"] {
            let (args, errors) = parsed(src);
            assert_eq!(errors.len(), 1, "{src}");
            assert!(args.name.is_none());
        }
    }

    #[test]
    fn a_bad_pair_is_skipped_to_the_next_comma() {
        // Each mistake once, and the arguments after it still read.
        let (args, errors) = parsed("colour = red green, trip = (1, 2) x, probes = 2 3, name = \"n\"");
        assert_eq!(
            errors,
            [
                "unknown argument `colour`; expected one of: trip, cooldown, probe_lease, probes, half_open_calls, half_open_rate, backoff, max_cooldown, window, buckets, failure_rate, min_calls, slow_call, slow_rate, slow_failures, in_flight, name, log, shadow, count_calls, history, classify, refused, clock, fallback, crate, retry, retry_delay, retry_backoff, retry_max_delay, retry_jitter, retry_budget, retry_sleep",
                "`trip` takes an integer literal from 1 to 255 (consecutive strikes that open the breaker), such as `trip = 1`",
                "expected `,` between arguments",
                "expected `,` between arguments",
            ]
        );
        assert_eq!(args.probes.map(|s| s.value), Some(2));
        assert_eq!(args.name.map(|n| n.value()).as_deref(), Some("n"));
        // A duplicate is reported at the second one, whose value is not read.
        let (args, errors) = parsed("trip = 2, trip = 5");
        assert_eq!(errors, ["duplicate argument `trip`; give each argument once"]);
        assert_eq!(args.trip.map(|s| s.value), Some(2));
    }

    #[test]
    fn a_rejected_value_is_remembered_as_invalid() {
        let (args, _) = parsed("cooldown = \"x\", backoff = 0, max_cooldown = 5");
        assert!(args.invalid("cooldown") && args.invalid("backoff") && args.invalid("max_cooldown"));
        let (args, errors) = parsed("cooldown = \"5s\", backoff = 2, max_cooldown = \"1m\"");
        assert!(errors.is_empty());
        assert!(!args.invalid("cooldown") && !args.invalid("backoff") && !args.invalid("max_cooldown"));
        // Not written at all is not invalid; other keys never are.
        let (args, _) = parsed("trip = 0");
        assert!(!args.invalid("cooldown") && !args.invalid("trip"));
    }
}
