//! Checks that involve more than one argument, the defaults, and the function's shape.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{GenericArgument, LitStr, Path, PathArguments, ReturnType, Signature, Type};

use crate::args::Args;
use crate::duration;
use crate::errors::Errors;

/// `trip` when not given.
pub const DEFAULT_TRIP: u32 = 3;
/// `cooldown` when not given: 30 s.
pub const DEFAULT_COOLDOWN_MS: u32 = 30_000;

/// The breaker's settings, defaults applied.
pub struct Config {
    pub trip: u32,
    pub cooldown: u32,
    pub probe_lease: u32,
    pub probes: u32,
    /// `half_open_calls` and `half_open_rate`: half-open judged by a failure rate.
    pub half_open: Option<(u32, u32)>,
    pub backoff: u32,
    pub max_cooldown: u32,
    pub name: Option<LitStr>,
    /// Log each transition through the runtime crate's `__private::Log`.
    pub log: bool,
    /// Start the breaker in shadow mode (`SharedBreaker::shadowed`).
    pub shadow: bool,
    /// The policy counts every call (`Policy::counting_calls`).
    pub count_calls: bool,
    /// Keep the last `N` transitions (`History<N, _>`), for the registry's report.
    pub history: Option<u32>,
    pub classify: Option<Path>,
    /// The function that turns a refusal into the error type, instead of `E::from`.
    pub refused: Option<Path>,
    pub clock: Option<Path>,
    pub fallback: Option<Path>,
    pub krate: Option<Path>,
    /// Retries (`retry.rs`), when `retry` is given.
    pub retry: Option<crate::retry::RetryConfig>,
    /// A failure-rate window instead of `trip` (`window.rs`).
    pub window: Option<crate::window::Window>,
}

/// Applies the defaults and checks the arguments against each other.
pub fn config(args: Args, errors: &mut Errors) -> Config {
    let window = crate::window::check(&args, errors);
    let cooldown = args.cooldown.map_or(DEFAULT_COOLDOWN_MS, |s| s.value);
    let backoff = args.backoff.map_or(1, |s| s.value);
    let cooldown_text = match args.cooldown {
        Some(_) => format!("\"{}\"", duration::format(cooldown)),
        None => format!("\"{}\", the default", duration::format(cooldown)),
    };

    if args.invalid("cooldown") || args.invalid("backoff") || args.invalid("max_cooldown") {
        // One of them is already reported; comparing the others would only add noise.
    } else if let Some(max) = args.max_cooldown {
        if max.value < cooldown {
            errors.push(syn::Error::new(
                max.at,
                format!(
                    "`max_cooldown` (\"{}\") is shorter than `cooldown` ({cooldown_text}); the backoff only grows the cooldown, so write `max_cooldown = \"{}\"` or longer",
                    duration::format(max.value),
                    duration::format(cooldown),
                ),
            ));
        } else if backoff == 1 {
            errors.push(syn::Error::new(
                max.key,
                "`max_cooldown` caps a growing cooldown, but without `backoff` (or with `backoff = 1`) the cooldown never grows; add `backoff = 2`, or remove `max_cooldown`",
            ));
        }
    } else if let Some(b) = args.backoff.filter(|b| b.value > 1) {
        errors.push(syn::Error::new(
            b.at,
            format!(
                "`backoff = {}` needs room to grow: `max_cooldown` defaults to the cooldown ({cooldown_text}), which keeps it constant; add `max_cooldown = \"{}\"` (or another cap)",
                b.value,
                duration::format(suggested_cap(cooldown, b.value)),
            ),
        ));
    }

    let half_open = half_open(&args, errors);

    let retry = crate::retry::config(args.retry, errors);
    if let (Some(path), Some(_)) = (&args.fallback, &retry) {
        errors.push(syn::Error::new_spanned(
            path,
            "`fallback` and `retry` cannot be combined yet: each retried attempt takes the arguments, so none are left to pass to the fallback; drop `retry`, or call the retried function from another annotated with `fallback`",
        ));
    }

    Config {
        trip: args.trip.map_or(DEFAULT_TRIP, |s| s.value),
        cooldown,
        probe_lease: args.probe_lease.map_or(cooldown, |s| s.value),
        probes: args.probes.map_or(1, |s| s.value),
        half_open,
        backoff,
        max_cooldown: args.max_cooldown.map_or(cooldown, |s| s.value),
        name: args.name,
        log: args.log.unwrap_or(false),
        shadow: args.shadow.unwrap_or(false),
        count_calls: args.count_calls.unwrap_or(false),
        history: args.history.map(|s| s.value),
        classify: args.classify,
        refused: args.refused,
        clock: args.clock,
        fallback: args.fallback,
        krate: args.krate,
        retry,
        window,
    }
}

/// `half_open_calls` and `half_open_rate`, which go together and exclude `probes` above 1
/// (a policy judges half-open one way).
fn half_open(args: &Args, errors: &mut Errors) -> Option<(u32, u32)> {
    if args.invalid("half_open_calls") || args.invalid("half_open_rate") {
        // Already reported.
        return None;
    }
    let (calls, rate) = match (args.half_open_calls, args.half_open_rate) {
        (None, None) => return None,
        (Some(calls), Some(rate)) => (calls, rate),
        (Some(calls), None) => {
            errors.push(syn::Error::new(
                calls.key,
                "`half_open_calls` needs `half_open_rate`: the percentage of failed probes that opens the breaker again; add `half_open_rate = 50` (or another rate)",
            ));
            return None;
        }
        (None, Some(rate)) => {
            errors.push(syn::Error::new(
                rate.key,
                "`half_open_rate` needs `half_open_calls`: the probes half-open permits, one at a time, that the rate is judged over; add `half_open_calls = 10` (or another count, 1 to 15)",
            ));
            return None;
        }
    };
    if let Some(probes) = args.probes.filter(|p| p.value > 1) {
        errors.push(syn::Error::new(
            probes.key,
            format!(
                "`probes = {}` and `half_open_calls`/`half_open_rate` are two ways to judge half-open, and a breaker has one: keep `probes` (consecutive probe successes close it) or the half-open rate (the failure rate of up to `half_open_calls` probes decides), not both",
                probes.value
            ),
        ));
        return None;
    }
    Some((calls.value, rate.value))
}

/// Four doublings (or multiplications) of the cooldown, within `Duration::MAX`.
fn suggested_cap(cooldown: u32, multiplier: u32) -> u32 {
    let grown = u64::from(cooldown) * u64::from(multiplier).pow(4);
    u32::try_from(grown).unwrap_or(u32::MAX).min(duration::MAX_MILLIS)
}

/// What the expansion needs to know about the function's return type.
pub struct Shape {
    /// The return type, as written.
    pub ret: Type,
    /// Where errors about the error type point: the `E` of `Result<T, E>`, or the whole
    /// return type when it is an alias such as `io::Result<T>`.
    pub error_span: Span,
    /// Whether the return type can be written as a `let` type (no `impl Trait`).
    pub nameable: bool,
    /// Whether the error type is written as anyhow's: `anyhow::Result<T>` or
    /// `Result<T, anyhow::Error>`, which breaker-core classifies with its `anyhow` feature.
    pub anyhow: bool,
}

/// Checks that the function can be wrapped.
pub fn check_fn(sig: &Signature, errors: &mut Errors) -> Option<Shape> {
    if let Some(constness) = &sig.constness {
        errors.push(syn::Error::new(
            constness.span,
            "`#[circuit_breaker]` cannot wrap a `const fn`: the breaker's state changes at run time; remove `const`",
        ));
    }
    let ty = match &sig.output {
        ReturnType::Default => {
            errors.push(syn::Error::new(
                sig.paren_token.span.close(),
                format!(
                    "`#[circuit_breaker]` needs a function that returns `Result<T, E>`, so that a refused call can return an error; add `-> Result<(), E>` after `{}(..)`, with `E: From<breaker_core::Refused>`",
                    sig.ident
                ),
            ));
            return None;
        }
        ReturnType::Type(_, ty) => ty,
    };
    match result_error_span(ty) {
        Some(error_span) => Some(Shape {
            ret: (**ty).clone(),
            error_span,
            nameable: !mentions_impl(ty.to_token_stream()),
            anyhow: names_anyhow(ty),
        }),
        None => {
            let message = match &**ty {
                // A path with generic arguments may be an alias the attribute cannot see through.
                Type::Path(p)
                    if p.path.segments.last().is_some_and(|s| {
                        !s.arguments.is_empty() && !WELL_KNOWN.iter().any(|known| s.ident == known)
                    }) =>
                {
                    format!(
                    "`#[circuit_breaker]` needs a function that returns `Result<T, E>`, found `{}`: if it is a type alias of a `Result`, write the `Result<T, E>` out, or give the alias a name ending in `Result` (such as `AppResult<T>`), which the attribute takes as one",
                        type_text(ty),
                    )
                }
                _ => format!(
                    "`#[circuit_breaker]` needs a function that returns `Result<T, E>`, found `{}`: the breaker counts `Err` as a failure and returns `Err(E::from(Refused))` when it refuses; return `Result<{}, E>` instead",
                    type_text(ty),
                    type_text(ty),
                ),
            };
            errors.push(syn::Error::new_spanned(ty, message));
            None
        }
    }
}

/// Generic types of the standard library that are never an alias of a `Result`.
const WELL_KNOWN: [&str; 10] = [
    "Option", "Vec", "Box", "Rc", "Arc", "Cow", "HashMap", "BTreeMap", "Pin", "Poll",
];

/// `Some(span of E)` if `ty` is written as a path ending in `Result` (`Result<T, E>`,
/// `core::result::Result<T, E>`, or an alias such as `io::Result<T>`).
fn result_error_span(ty: &Type) -> Option<Span> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    // `Result`, or an alias named like one (`io::Result<T>`, `AppResult<T>`): the
    // attribute cannot see through an alias, so it goes by the name.
    if !last.ident.to_string().ends_with("Result") {
        return None;
    }
    let error = match &last.arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter(|a| matches!(a, GenericArgument::Type(_)))
            .nth(1)
            .map(Spanned::span),
        _ => None,
    };
    Some(error.unwrap_or_else(|| ty.span()))
}

/// Whether a `Result` type names anyhow's error: `anyhow::Result<T>` (no second
/// argument) or `..Result<T, anyhow::Error>`.
fn names_anyhow(ty: &Type) -> bool {
    let is_path = |ty: &Type, names: &[&str]| {
        matches!(ty, Type::Path(p) if p.qself.is_none()
            && p.path.segments.len() == names.len()
            && p.path.segments.iter().zip(names).all(|(s, n)| s.ident == n))
    };
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    match types[..] {
        [_] => path.path.segments.len() == 2 && path.path.segments[0].ident == "anyhow" && last.ident == "Result",
        [_, error] => is_path(error, &["anyhow", "Error"]),
        _ => false,
    }
}

/// A type as users write it: `Option<u32>`, not `Option < u32 >`.
pub(crate) fn type_text(ty: &Type) -> String {
    let mut text = ty.to_token_stream().to_string();
    for (from, to) in [
        (" < ", "<"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        (" ,", ","),
        (" :: ", "::"),
        (":: ", "::"),
        ("& ", "&"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// Whether `tokens` say `impl` anywhere, inside groups too (`(impl Copy, u8)`): a type
/// that cannot be named.
pub(crate) fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "impl",
        TokenTree::Group(g) => mentions_impl(g.stream()),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(src: &str) -> (Option<Shape>, bool) {
        let sig: Signature = syn::parse_str(src).unwrap();
        let mut errors = Errors::default();
        let shape = check_fn(&sig, &mut errors);
        (shape, errors.is_empty())
    }

    #[test]
    fn anyhow_error_is_told_by_how_it_is_written() {
        for (ret, anyhow) in [
            ("anyhow::Result<u32>", true),
            ("Result<u32, anyhow::Error>", true),
            ("std::result::Result<(), anyhow::Error>", true),
            // A second argument replaces anyhow's error.
            ("anyhow::Result<u32, MyError>", false),
            ("Result<u32, MyError>", false),
            ("io::Result<u32>", false),
            ("Result<u32, my::anyhow::Error>", false),
        ] {
            let (s, ok) = shape(&format!("fn f() -> {ret}"));
            assert!(ok, "{ret}");
            assert_eq!(s.unwrap().anyhow, anyhow, "{ret}");
        }
    }

    #[test]
    fn result_forms_are_accepted() {
        for src in [
            "fn f() -> Result<(), E>",
            "fn f() -> core::result::Result<u8, E>",
            "fn f() -> io::Result<u8>",
            "async fn f(&self) -> Result<&str, E>",
        ] {
            let (shape, ok) = shape(src);
            assert!(shape.is_some() && ok, "{src}");
        }
    }

    #[test]
    fn other_forms_are_rejected() {
        for src in [
            "fn f()",
            "fn f() -> u8",
            "fn f() -> Option<u8>",
            "fn f() -> (Result<u8, E>,)",
            "fn f() -> !",
        ] {
            let (shape, ok) = shape(src);
            assert!(shape.is_none() && !ok, "{src}");
        }
        assert!(!shape("const fn f() -> Result<u8, E>").1);
    }

    #[test]
    fn types_print_as_written() {
        for src in [
            "Option<u32>",
            "Vec<(u8, &'static str)>",
            "std::io::Error",
            "[u8; 4]",
            "Box<dyn Iterator<Item = u8>>",
        ] {
            let ty: Type = syn::parse_str(src).unwrap();
            assert_eq!(type_text(&ty), src);
        }
    }

    #[test]
    fn impl_trait_is_noticed() {
        assert!(
            !shape("fn f() -> Result<impl Iterator<Item = u8>, E>")
                .0
                .unwrap()
                .nameable
        );
        assert!(shape("fn f() -> Result<Vec<u8>, E>").0.unwrap().nameable);
    }

    /// The configuration from `src`, and every message reported.
    fn configured(src: &str) -> (Config, Vec<String>) {
        let mut errors = Errors::default();
        let args = crate::args::parse(src.parse().unwrap(), &mut errors);
        let config = config(args, &mut errors);
        (config, errors.messages())
    }

    /// The breaker settings of `c`: trip, cooldown, probe lease, probes, backoff, max
    /// cooldown, log.
    fn settings(c: &Config) -> (u32, u32, u32, u32, u32, u32, bool) {
        (
            c.trip,
            c.cooldown,
            c.probe_lease,
            c.probes,
            c.backoff,
            c.max_cooldown,
            c.log,
        )
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let (c, errors) = configured("");
        assert!(errors.is_empty());
        assert_eq!(settings(&c), (3, 30_000, 30_000, 1, 1, 30_000, false));
        assert!(c.name.is_none() && c.classify.is_none() && c.clock.is_none() && c.krate.is_none());
        // The lease and the cap follow the cooldown given.
        let (c, _) = configured("cooldown = \"5s\"");
        assert_eq!((c.cooldown, c.probe_lease, c.max_cooldown), (5_000, 5_000, 5_000));
        let (c, _) = configured("trip = 9, cooldown = \"5s\", probe_lease = \"1s\", probes = 2, backoff = 3, max_cooldown = \"1m\", log = true");
        assert_eq!(settings(&c), (9, 5_000, 1_000, 2, 3, 60_000, true));
    }

    #[test]
    fn one_mistake_gives_one_error() {
        // A rejected cooldown, backoff or cap is not compared with the others as well.
        for (src, error) in [
            (
                "cooldown = \"x\", backoff = 2, max_cooldown = \"10s\"",
                "unknown duration unit `x`",
            ),
            (
                "backoff = 0, max_cooldown = \"1h\"",
                "`backoff` must be between 1 and 255",
            ),
            (
                "cooldown = \"1m\", backoff = 2, max_cooldown = \"5\"",
                "duration `5` has no unit",
            ),
            ("cooldown = 5, max_cooldown = \"10s\"", "`cooldown` needs a unit"),
        ] {
            let (_, errors) = configured(src);
            assert_eq!(errors.len(), 1, "{src}: {errors:?}");
            assert!(errors[0].starts_with(error), "{src}: {errors:?}");
        }
    }

    #[test]
    fn a_constant_cooldown_needs_no_cap() {
        assert!(configured("backoff = 1").1.is_empty());
        assert!(configured("cooldown = \"1m\", backoff = 1").1.is_empty());
    }

    #[test]
    fn a_growing_cooldown_without_a_cap_suggests_one() {
        let (_, errors) = configured("cooldown = \"10s\", backoff = 3");
        assert_eq!(
            errors,
            ["`backoff = 3` needs room to grow: `max_cooldown` defaults to the cooldown (\"10s\"), which keeps it constant; add `max_cooldown = \"13m30s\"` (or another cap)"]
        );
        // The default cooldown, and a suggestion clamped to the longest duration.
        let (_, errors) = configured("backoff = 2");
        assert!(
            errors[0].contains("(\"30s\", the default)") && errors[0].contains("\"8m\""),
            "{errors:?}"
        );
        let (_, errors) = configured("cooldown = \"100h\", backoff = 255");
        assert!(errors[0].contains("`max_cooldown = \"298h15m41s823ms\"`"), "{errors:?}");
        assert_eq!(suggested_cap(7, 2), 112);
        assert_eq!(suggested_cap(1000, 10), 10_000_000);
    }

    #[test]
    fn a_cap_below_the_cooldown_or_without_backoff_is_rejected() {
        let (_, errors) = configured("cooldown = \"1m\", backoff = 2, max_cooldown = \"59s\"");
        assert_eq!(
            errors,
            ["`max_cooldown` (\"59s\") is shorter than `cooldown` (\"1m\"); the backoff only grows the cooldown, so write `max_cooldown = \"1m\"` or longer"]
        );
        let (_, errors) = configured("max_cooldown = \"1m\"");
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("`max_cooldown` caps a growing cooldown"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_half_open_rate_takes_both_arguments_and_excludes_probes() {
        let (c, errors) = configured("half_open_calls = 10, half_open_rate = 50");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((c.half_open, c.probes), (Some((10, 50)), 1));
        assert_eq!(configured("").0.half_open, None);
        // `probes = 1` is the default, and no second rule.
        assert!(configured("probes = 1, half_open_calls = 4, half_open_rate = 25")
            .1
            .is_empty());
        for (src, error) in [
            ("half_open_calls = 10", "`half_open_calls` needs `half_open_rate`"),
            ("half_open_rate = 50", "`half_open_rate` needs `half_open_calls`"),
            (
                "probes = 2, half_open_calls = 10, half_open_rate = 50",
                "`probes = 2` and `half_open_calls`/`half_open_rate` are two ways",
            ),
            (
                "half_open_calls = 16, half_open_rate = 50",
                "`half_open_calls` must be between 1 and 15",
            ),
            (
                "half_open_calls = 10, half_open_rate = 0",
                "`half_open_rate` must be between 1 and 100",
            ),
            // A rejected value is reported once, not as a missing partner as well.
            ("half_open_calls = \"10\"", "`half_open_calls` takes an integer literal"),
        ] {
            let (c, errors) = configured(src);
            assert_eq!(errors.len(), 1, "{src}: {errors:?}");
            assert!(errors[0].starts_with(error), "{src}: {errors:?}");
            assert_eq!(c.half_open, None);
        }
    }

    #[test]
    fn fallback_and_retry_do_not_combine() {
        let (c, errors) = configured("retry = 2, fallback = send_cached");
        assert_eq!(
            errors,
            ["`fallback` and `retry` cannot be combined yet: each retried attempt takes the arguments, so none are left to pass to the fallback; drop `retry`, or call the retried function from another annotated with `fallback`"]
        );
        assert!(c.retry.is_some() && c.fallback.is_some());
        // Each alone is fine; a rejected `retry` is reported once, as itself.
        assert!(configured("fallback = send_cached").1.is_empty());
        assert!(configured("retry = 2").1.is_empty());
        assert_eq!(configured("retry = 0, fallback = send_cached").1.len(), 1);
    }

    #[test]
    fn impl_trait_is_noticed_inside_tuples_and_arrays() {
        for src in [
            "fn f() -> Result<(impl Iterator<Item = u8>, u8), E>",
            "fn f() -> Result<[impl Copy; 2], E>",
            "fn f() -> Result<Vec<(u8, (impl Copy,))>, E>",
        ] {
            assert!(!shape(src).0.unwrap().nameable, "{src}");
        }
        assert!(shape("fn f() -> Result<(Vec<u8>, [u8; 2]), E>").0.unwrap().nameable);
    }

    #[test]
    fn backoff_and_cap_go_together() {
        let check = |src: &str| {
            let mut errors = Errors::default();
            let args = crate::args::parse(src.parse().unwrap(), &mut errors);
            let _ = config(args, &mut errors);
            errors.is_empty()
        };
        assert!(check("backoff = 2, max_cooldown = \"30m\""));
        assert!(check("cooldown = \"1m\", backoff = 2, max_cooldown = \"1m\""));
        assert!(!check("backoff = 2"));
        assert!(!check("max_cooldown = \"30m\""));
        assert!(!check("backoff = 2, max_cooldown = \"10s\""));
        assert!(check(""));
    }
}
