//! The failure-rate window's arguments: `window`, `buckets`, `failure_rate`, `min_calls`,
//! `slow_call`, `slow_rate` and `slow_failures`: their values, their checks against each
//! other (and against `trip`), and the policy they build.
//!
//! `window = 20` is a count window (the last 20 calls; beyond 51 it is kept in a
//! `CallRing`), `window = "10s"` a time window (of ten buckets, or of `buckets = N`); the
//! others need a window, `slow_call` and `slow_rate` need each other, `slow_failures`
//! needs them, `buckets` needs a time window it divides, and `trip` (consecutive strikes)
//! makes no sense beside a window.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Lit};

use crate::args::{bare_literal, Args, Setting};
use crate::duration;
use crate::errors::Errors;

/// The most calls a count window holds (`breaker_core::MAX_RING_CALLS`).
pub const MAX_RING_CALLS: u32 = 1008;
/// The most calls the small count window holds (`breaker_core::MAX_WINDOW_CALLS`): beyond,
/// the breaker keeps its window in a `CallRing`.
pub const MAX_WINDOW_CALLS: u32 = 51;
/// The most calls out an `InFlight` window watches (its slot index is a byte, 255 marks none).
pub const MAX_IN_FLIGHT: u32 = 254;
/// The most buckets of a time window (`breaker_core::MAX_WINDOW_BUCKETS`).
pub const MAX_WINDOW_BUCKETS: u32 = 240;
/// The most calls a bucket counts (`breaker_core::MAX_BUCKET_CALLS`).
const MAX_BUCKET_CALLS: u32 = 1023;
/// The largest `min_calls`: what a time window's ten buckets can count
/// (`10 * breaker_core::MAX_BUCKET_CALLS`).
pub const MAX_MIN_CALLS: u32 = 10 * 1023;
/// The shortest time window, in ms (`breaker_core::MIN_WINDOW_TIME`).
const MIN_WINDOW_MS: u32 = 1000;
/// `failure_rate` when not given (resilience4j's default).
pub const DEFAULT_FAILURE_RATE: u32 = 50;

/// `window`'s value: a count of calls, or a span of time in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Calls(u32),
    Time(u32),
}

/// The window's arguments as written; `None` where absent or invalid (already reported).
#[derive(Default)]
pub struct WindowArgs {
    pub window: Option<Setting<Size>>,
    pub failure_rate: Option<Setting<u32>>,
    pub min_calls: Option<Setting<u32>>,
    pub slow_call: Option<Setting<u32>>,
    pub slow_rate: Option<Setting<u32>>,
    pub slow_failures: Option<Setting<bool>>,
    pub in_flight: Option<Setting<u32>>,
    pub buckets: Option<Setting<u32>>,
}

/// The window, checked, defaults applied.
pub struct Window {
    pub size: Size,
    pub failure_rate: u32,
    /// Given: else the policy's default (the whole count window, 10 for a time window).
    pub min_calls: Option<u32>,
    /// The slow-call duration in ms and the slow-call rate.
    pub slow: Option<(u32, u32)>,
    /// Slow failures count as slow calls.
    pub slow_failures: bool,
    /// A time window's buckets, if given (else ten).
    pub buckets: Option<u32>,
    /// How many calls out are watched for the slow-call rule while still out (`in_flight`).
    pub in_flight: Option<u32>,
}

/// `slow_failures = true` or `slow_failures = false`.
pub fn slow_failures_value(value: &Expr, errors: &mut Errors) -> Option<bool> {
    match bare_literal(value) {
        Some(Lit::Bool(b)) => Some(b.value),
        _ => {
            errors.push(syn::Error::new_spanned(
                value,
                "`slow_failures` takes `true` (a failure slower than `slow_call` counts as a slow call too, as in resilience4j) or `false` (the default: only slow successes are slow calls)",
            ));
            None
        }
    }
}

/// `window = N` (calls, 1 to 1008) or `window = "10s"` (at least 1 s, whole 10 ms).
/// Like every literal value, a plain literal: no attribute, no suffix but an integer's
/// type (`window = 20u8` is fine, `window = 20x` or `window = "10s"ms` is not).
pub fn size_value(value: &Expr, errors: &mut Errors) -> Option<Size> {
    match bare_literal(value) {
        Some(Lit::Int(int)) => match int.base10_parse::<u32>() {
            Ok(0) => {
                errors.push(syn::Error::new(
                    int.span(),
                    "`window` must hold at least 1 call: write the number of recent calls to judge, such as `window = 20`, or a time such as `window = \"10s\"`",
                ));
                None
            }
            Ok(n) if n <= MAX_RING_CALLS => Some(Size::Calls(n)),
            _ => {
                errors.push(syn::Error::new(
                    int.span(),
                    format!(
                        "`window` holds at most {MAX_RING_CALLS} calls (a count window's ring has 1024 places); found {}: write `window = {MAX_RING_CALLS}` or less, or judge a time window instead, such as `window = \"10s\"`",
                        int.base10_digits()
                    ),
                ));
                None
            }
        },
        Some(Lit::Str(s)) => match duration::parse(&s.value()) {
            Ok(ms) if ms < MIN_WINDOW_MS => {
                errors.push(syn::Error::new(
                    s.span(),
                    format!(
                        "a time window must be at least \"1s\" (it is counted in 10 buckets of a tenth of it each); found \"{}\"",
                        s.value()
                    ),
                ));
                None
            }
            Ok(ms) if ms % 10 != 0 => {
                errors.push(syn::Error::new(
                    s.span(),
                    format!(
                        "a time window is counted in 10 equal buckets, so it must be a whole number of 10 ms; found \"{}\": write \"{}\" or \"{}\"",
                        s.value(),
                        duration::format(ms / 10 * 10),
                        duration::format(ms / 10 * 10 + 10),
                    ),
                ));
                None
            }
            Ok(ms) => Some(Size::Time(ms)),
            Err(e) => {
                errors.push(syn::Error::new(s.span(), e));
                None
            }
        },
        _ => {
            errors.push(syn::Error::new_spanned(
                value,
                "`window` takes the number of recent calls to judge (`window = 20`) or a duration string for a time window (`window = \"10s\"`)",
            ));
            None
        }
    }
}

/// Checks the window's arguments against each other and against `trip`; the window, if
/// one was given and is valid.
pub fn check(args: &Args, errors: &mut Errors) -> Option<Window> {
    let w = &args.window;
    let settings = [
        ("failure_rate", w.failure_rate.map(|s| s.key)),
        ("min_calls", w.min_calls.map(|s| s.key)),
        ("slow_call", w.slow_call.map(|s| s.key)),
        ("slow_rate", w.slow_rate.map(|s| s.key)),
        ("slow_failures", w.slow_failures.map(|s| s.key)),
        ("in_flight", w.in_flight.map(|s| s.key)),
        ("buckets", w.buckets.map(|s| s.key)),
    ];
    if w.window.is_none() {
        if !args.invalid("window") {
            for (key, at) in settings {
                if let Some(at) = at {
                    errors.push(syn::Error::new(
                        at,
                        format!(
                            "`{key}` belongs to a failure-rate window, and there is none: add `window = 20` (the last 20 calls) or `window = \"10s\"` (a time window); without one the breaker trips on `trip` consecutive strikes"
                        ),
                    ));
                }
            }
        }
        return None;
    }
    if let Some(trip) = args.trip {
        errors.push(syn::Error::new(
            trip.key,
            "`trip` counts consecutive strikes, but `window` makes the breaker trip on a failure rate instead; remove `trip` (or `window`, to trip on strikes)",
        ));
    }
    let slow = match (w.slow_call, w.slow_rate) {
        (Some(call), Some(rate)) => Some((call.value, rate.value)),
        (Some(call), None) if !args.invalid("slow_rate") => {
            errors.push(syn::Error::new(
                call.key,
                "`slow_call` needs `slow_rate`: the share of slow calls, in percent, that trips the breaker, such as `slow_rate = 80`",
            ));
            None
        }
        (None, Some(rate)) if !args.invalid("slow_call") => {
            errors.push(syn::Error::new(
                rate.key,
                "`slow_rate` needs `slow_call`: the duration above which a successful call counts as slow, such as `slow_call = \"2s\"`",
            ));
            None
        }
        _ => None,
    };
    if let Some(sf) = w.slow_failures {
        if w.slow_call.is_none() && !args.invalid("slow_call") {
            errors.push(syn::Error::new(
                sf.key,
                "`slow_failures` counts failures slower than `slow_call` as slow calls, and there is no slow-call rule: add `slow_call = \"2s\", slow_rate = 80`, or remove `slow_failures`",
            ));
        }
    }
    if let Some(watched) = w.in_flight {
        if w.slow_call.is_none() && !args.invalid("slow_call") {
            errors.push(syn::Error::new(
                watched.key,
                "`in_flight` watches the calls out for the slow-call rule, and there is none: add `slow_call = \"2s\", slow_rate = 80` (a call out longer than 2 s then counts as slow while still out), or remove `in_flight`",
            ));
        }
    }
    let size = w.window?.value;
    let buckets = match (size, w.buckets) {
        (_, None) => None,
        (Size::Calls(n), Some(b)) => {
            errors.push(syn::Error::new(
                b.key,
                format!(
                    "`buckets` divides a time window, and `window = {n}` is a count window (the last {n} calls); write a time such as `window = \"60s\"`, or remove `buckets`"
                ),
            ));
            None
        }
        (Size::Time(ms), Some(b)) if ms % b.value != 0 => {
            errors.push(syn::Error::new(
                b.at,
                format!(
                    "`buckets = {}` does not divide the window into whole milliseconds ({} / {}): choose a number of buckets that divides it, such as `buckets = 10`",
                    b.value,
                    duration::format(ms),
                    b.value
                ),
            ));
            None
        }
        (Size::Time(_), Some(b)) => Some(b),
    };
    if let (Some(b), Some(min)) = (buckets, w.min_calls) {
        if min.value > b.value * MAX_BUCKET_CALLS {
            errors.push(syn::Error::new(
                min.at,
                format!(
                    "`min_calls = {}` is more than {} buckets can count (at most {} calls each), so it would never trip; write `min_calls = {}` or less, or more buckets",
                    min.value,
                    b.value,
                    MAX_BUCKET_CALLS,
                    b.value * MAX_BUCKET_CALLS
                ),
            ));
        }
    }
    if let (Size::Calls(n), Some(min)) = (size, w.min_calls) {
        if min.value > n {
            errors.push(syn::Error::new(
                min.at,
                format!(
                    "`min_calls = {}` is more than the window holds (`window = {n}`: the last {n} calls), so it would never trip; write `min_calls = {n}` or less",
                    min.value
                ),
            ));
        }
    }
    Some(Window {
        size,
        failure_rate: w.failure_rate.map_or(DEFAULT_FAILURE_RATE, |s| s.value),
        min_calls: w.min_calls.map(|s| s.value),
        slow_failures: slow.is_some() && w.slow_failures.is_some_and(|s| s.value),
        slow,
        buckets: buckets.map(|b| b.value),
        in_flight: w.in_flight.filter(|_| slow.is_some()).map(|s| s.value),
    })
}

/// The windowed policy: `Policy::failure_rate(..)` and its settings, before the settings
/// every policy has.
pub fn policy(window: &Window, private: &TokenStream, cooldown: &TokenStream) -> TokenStream {
    let rate = window.failure_rate;
    let size = match window.size {
        Size::Calls(n) => quote!(#private::WindowSize::Calls(#n)),
        Size::Time(ms) => quote!(#private::WindowSize::Time(#private::Duration::from_millis(#ms))),
    };
    let min_calls = window.min_calls.map(|n| quote!(.with_min_calls(#n)));
    let slow = window
        .slow
        .map(|(ms, rate)| quote!(.with_slow_calls(#private::Duration::from_millis(#ms), #rate)));
    let slow_failures = window.slow_failures.then(|| quote!(.with_slow_failures(true)));
    quote!(#private::Policy::failure_rate(#rate, #size, #cooldown) #min_calls #slow #slow_failures)
}

/// The breaker's type and initializer around an observer, for a windowed policy.
pub fn breaker(
    window: &Window,
    private: &TokenStream,
    observer_ty: TokenStream,
    observer: TokenStream,
) -> (TokenStream, TokenStream) {
    let (store, new) = match (window.size, window.buckets) {
        (Size::Calls(n), _) if n <= MAX_WINDOW_CALLS => (quote!(#private::CallWindow), quote!(calls)),
        (Size::Calls(_), _) => (quote!(#private::CallRing), quote!(ring)),
        (Size::Time(_), None) => (quote!(#private::TimeWindow), quote!(time)),
        (Size::Time(_), Some(b)) => {
            let b = b as usize;
            (quote!(#private::TimeWindow<#b>), quote!(time_buckets))
        }
    };
    let (store, windowed) = match window.in_flight {
        None => (store, quote!(#private::Windowed::#new(#observer))),
        Some(k) => {
            let k = k as usize;
            (
                quote!(#private::InFlight<#store, #k>),
                quote!(#private::Windowed::in_flight(<#store>::new(), #observer)),
            )
        }
    };
    (
        quote!(#private::SharedBreaker<#private::Windowed<#store, #observer_ty>>),
        quote!(#private::SharedBreaker::windowed(&__BREAKER_CORE_POLICY, #windowed)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_src(src: &str) -> (Option<Size>, Vec<String>) {
        let mut errors = Errors::default();
        let args = crate::args::parse(src.parse().unwrap(), &mut errors);
        let window = check(&args, &mut errors);
        let text = errors.into_compile_errors().to_string();
        let messages = text.split("compile_error").skip(1).map(|m| m.to_string()).collect();
        (window.map(|w| w.size), messages)
    }

    #[test]
    fn slow_failures_count_as_slow_only_when_asked_for() {
        let slow_failures = |src: &str| {
            let mut errors = Errors::default();
            let args = crate::args::parse(src.parse().unwrap(), &mut errors);
            check(&args, &mut errors).map(|w| w.slow_failures)
        };
        let rule = "window = 10, slow_call = \"1s\", slow_rate = 50";
        assert_eq!(slow_failures(rule), Some(false));
        assert_eq!(slow_failures(&format!("{rule}, slow_failures = true")), Some(true));
        assert_eq!(slow_failures(&format!("{rule}, slow_failures = false")), Some(false));
    }

    #[test]
    fn windows_of_both_kinds_are_read() {
        assert_eq!(check_src("window = 20").0, Some(Size::Calls(20)));
        assert_eq!(check_src("window = 51, min_calls = 51").0, Some(Size::Calls(51)));
        assert_eq!(check_src("window = 1008, min_calls = 1008").0, Some(Size::Calls(1008)));
        assert_eq!(check_src("window = \"60s\", buckets = 60").0, Some(Size::Time(60_000)));
        assert_eq!(
            check_src("window = \"10s\", buckets = 2, min_calls = 2046, slow_call = \"1s\", slow_rate = 5, slow_failures = true").1.len(),
            0
        );
        assert_eq!(
            check_src("window = \"10s\", min_calls = 10230").0,
            Some(Size::Time(10_000))
        );
        assert_eq!(check_src("window = \"1500ms\"").0, Some(Size::Time(1500)));
        let (size, errors) =
            check_src("window = 20, failure_rate = 50, min_calls = 10, slow_call = \"2s\", slow_rate = 80");
        assert_eq!((size, errors.len()), (Some(Size::Calls(20)), 0));
    }

    #[test]
    fn each_mistake_is_one_error() {
        for (src, needle) in [
            ("window = 0", "at least 1 call"),
            ("window = 1009", "at most 1008 calls"),
            ("window = 20, buckets = 10", "is a count window"),
            ("window = \"1s\", buckets = 60", "does not divide"),
            ("window = \"1s\", buckets = 0", "between 1 and 240"),
            (
                "window = \"10s\", buckets = 2, min_calls = 2047",
                "more than 2 buckets can count",
            ),
            ("window = 10, slow_failures = true", "no slow-call rule"),
            (
                "window = 10, in_flight = 8",
                "watches the calls out for the slow-call rule",
            ),
            (
                "window = 10, slow_call = \"1s\", slow_rate = 5, in_flight = 0",
                "between 1 and 254",
            ),
            (
                "window = 10, slow_call = \"1s\", slow_rate = 5, in_flight = 255",
                "between 1 and 254",
            ),
            ("in_flight = 8", "there is none"),
            (
                "window = 10, slow_call = \"1s\", slow_rate = 5, slow_failures = 1",
                "takes `true`",
            ),
            ("buckets = 10", "there is none"),
            ("window = \"999ms\"", "at least \\\"1s\\\""),
            ("window = \"1005ms\"", "whole number of 10 ms"),
            ("window = CALLS", "number of recent calls"),
            ("window = 10, failure_rate = 0", "between 1 and 100"),
            ("window = 10, failure_rate = 101", "between 1 and 100"),
            ("window = 10, slow_call = \"1s\", slow_rate = 0", "between 1 and 100"),
            ("window = 10, min_calls = 11", "more than the window holds"),
            ("window = 10, slow_call = \"1s\"", "needs `slow_rate`"),
            ("window = 10, slow_rate = 50", "needs `slow_call`"),
            ("window = 10, trip = 3", "remove `trip`"),
            ("failure_rate = 50", "there is none"),
            ("min_calls = 5", "there is none"),
            // A rejected `slow_call` is not also reported missing by the settings that need it.
            (
                "window = 10, slow_call = \"x\", slow_rate = 50",
                "unknown duration unit",
            ),
            (
                "window = 10, slow_call = \"x\", slow_rate = 50, slow_failures = true",
                "unknown duration unit",
            ),
            (
                "window = 10, slow_call = \"x\", slow_rate = 50, in_flight = 8",
                "unknown duration unit",
            ),
        ] {
            let (_, errors) = check_src(src);
            assert_eq!(errors.len(), 1, "{src}: {errors:?}");
            assert!(errors[0].contains(needle), "{src}: {errors:?}");
        }
        // A bad window reports itself only, not every setting that needed it.
        assert_eq!(check_src("window = 0, failure_rate = 50, min_calls = 3").1.len(), 1);
    }

    #[test]
    fn a_window_is_a_bare_literal() {
        // An attribute or a suffix would be dropped silently: like every other literal
        // value, the window is refused with one error at the value.
        for src in [
            "window = 20x",
            "window = 20ms",
            "window = #[cfg(any())] 20",
            "window = \"10s\"ms",
            "window = #[a] \"10s\"",
        ] {
            let (size, errors) = check_src(src);
            assert_eq!((size, errors.len()), (None, 1), "{src}: {errors:?}");
            assert!(errors[0].contains("number of recent calls"), "{src}: {errors:?}");
        }
        // A suffix naming an integer type is the integer's type, not a unit.
        assert_eq!(check_src("window = 20u8").0, Some(Size::Calls(20)));
        assert_eq!(check_src("window = r\"10s\"").0, Some(Size::Time(10_000)));
    }
}
