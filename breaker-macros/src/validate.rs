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
    pub backoff: u32,
    pub max_cooldown: u32,
    pub name: Option<LitStr>,
    /// Log each transition through the runtime crate's `__private::Log`.
    pub log: bool,
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

    Config {
        trip: args.trip.map_or(DEFAULT_TRIP, |s| s.value),
        cooldown,
        probe_lease: args.probe_lease.map_or(cooldown, |s| s.value),
        probes: args.probes.map_or(1, |s| s.value),
        backoff,
        max_cooldown: args.max_cooldown.map_or(cooldown, |s| s.value),
        name: args.name,
        log: args.log.unwrap_or(false),
        classify: args.classify,
        refused: args.refused,
        clock: args.clock,
        fallback: args.fallback,
        krate: args.krate,
        retry: crate::retry::config(args.retry, errors),
        window,
    }
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
        }),
        None => {
            errors.push(syn::Error::new_spanned(
                ty,
                format!(
                    "`#[circuit_breaker]` needs a function that returns `Result<T, E>`, found `{}`: the breaker counts `Err` as a failure and returns `Err(E::from(Refused))` when it refuses; return `Result<{}, E>` instead",
                    type_text(ty),
                    type_text(ty),
                ),
            ));
            None
        }
    }
}

/// `Some(span of E)` if `ty` is written as a path ending in `Result` (`Result<T, E>`,
/// `core::result::Result<T, E>`, or an alias such as `io::Result<T>`).
fn result_error_span(ty: &Type) -> Option<Span> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
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

fn mentions_impl(tokens: TokenStream) -> bool {
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
