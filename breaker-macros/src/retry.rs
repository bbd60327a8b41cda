//! The retry arguments (`retry`, `retry_delay`, `retry_backoff`, `retry_max_delay`,
//! `retry_jitter`, `retry_budget`, `retry_sleep`): parsing, checks, and the body that runs
//! the function's attempts through a retry ladder in front of its breaker.

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Lit, Pat, Path, Signature, Token, Type};

use crate::args::{duration_value, path_value};
use crate::duration;
use crate::errors::Errors;

mod kw {
    syn::custom_keyword!(retry);
    syn::custom_keyword!(retry_delay);
    syn::custom_keyword!(retry_backoff);
    syn::custom_keyword!(retry_max_delay);
    syn::custom_keyword!(retry_jitter);
    syn::custom_keyword!(retry_budget);
    syn::custom_keyword!(retry_sleep);
}

/// The largest `retry` (`breaker_core::MAX_RETRIES`).
pub const MAX_RETRIES: u32 = 255;
/// The largest `retry_backoff`.
pub const MAX_BACKOFF: u32 = 255;
/// `retry_delay` when not given: 100 ms.
pub const DEFAULT_DELAY_MS: u32 = 100;
/// `retry_backoff` when not given.
pub const DEFAULT_BACKOFF: u32 = 2;

/// The jitters, as `retry_jitter` spells them, and their `breaker_core::Jitter` variants.
const JITTERS: [(&str, &str); 4] = [
    ("none", "None"),
    ("full", "Full"),
    ("equal", "Equal"),
    ("decorrelated", "Decorrelated"),
];
const JITTER_NAMES: &str = "\"none\", \"full\", \"equal\" or \"decorrelated\"";

/// The retry arguments as written; `None` where absent or invalid (already reported).
#[derive(Default)]
pub struct RetryArgs {
    /// `retry = N`, and where its key was written.
    retries: Option<(u32, Span)>,
    delay: Option<(u32, Span)>,
    backoff: Option<u32>,
    max_delay: Option<(u32, Span)>,
    jitter: Option<&'static str>,
    budget: Option<u32>,
    sleep: Option<Path>,
    /// Keys seen (valid or not) with the span of each, to reject duplicates and to point at
    /// a retry argument given without `retry`.
    seen: Vec<(&'static str, Span)>,
}

/// The checked retry settings, defaults applied.
pub struct RetryConfig {
    /// `retry`: retries after the first attempt.
    pub retries: u32,
    /// `retry_delay` in ms.
    pub delay: u32,
    /// `retry_backoff`.
    pub backoff: u32,
    /// `retry_max_delay` in ms.
    pub max_delay: Option<u32>,
    /// `retry_jitter`, as the name of its `breaker_core::Jitter` variant.
    pub jitter: &'static str,
    /// `retry_budget` in ms.
    pub budget: Option<u32>,
    /// `retry_sleep`.
    pub sleep: Option<Path>,
    /// Where `retry` was written.
    pub at: Span,
}

/// Parses one retry argument if the input starts with one of their keys; `None` if it
/// does not (the caller parses the other arguments). Problems with the value are recorded
/// in `errors`; a malformed pair is returned as `Some(Err(..))` for the caller to skip.
pub fn parse(input: ParseStream, args: &mut RetryArgs, errors: &mut Errors) -> Option<syn::Result<()>> {
    macro_rules! key {
        ($($kw:ident),*) => {
            $(
                if input.peek(kw::$kw) {
                    return Some(parse_pair(input, stringify!($kw), args, errors));
                }
            )*
        };
    }
    key!(
        retry,
        retry_delay,
        retry_backoff,
        retry_max_delay,
        retry_jitter,
        retry_budget,
        retry_sleep
    );
    None
}

fn example(key: &str) -> &'static str {
    match key {
        "retry" => "retry = 3",
        "retry_delay" => "retry_delay = \"100ms\"",
        "retry_backoff" => "retry_backoff = 2",
        "retry_max_delay" => "retry_max_delay = \"2s\"",
        "retry_jitter" => "retry_jitter = \"full\"",
        "retry_budget" => "retry_budget = \"10s\"",
        _ => "retry_sleep = my_sleep",
    }
}

fn parse_pair(input: ParseStream, key: &'static str, args: &mut RetryArgs, errors: &mut Errors) -> syn::Result<()> {
    let ident: syn::Ident = input.parse()?;
    let key_span = ident.span();
    if !input.peek(Token![=]) {
        return Err(syn::Error::new(
            key_span,
            format!("`{key}` needs a value: write `{}`", example(key)),
        ));
    }
    input.parse::<Token![=]>()?;
    let value: Expr = input.parse()?;
    if args.seen.iter().any(|(k, _)| *k == key) {
        errors.push(syn::Error::new(
            key_span,
            format!("duplicate argument `{key}`; give each argument once"),
        ));
        return Ok(());
    }
    args.seen.push((key, key_span));
    match key {
        "retry" => {
            args.retries = count(
                &value,
                "retry",
                1,
                MAX_RETRIES,
                "retries after the first attempt",
                errors,
            )
            .map(|n| (n, key_span))
        }
        "retry_backoff" => {
            args.backoff = count(
                &value,
                "retry_backoff",
                1,
                MAX_BACKOFF,
                "the factor each retry multiplies the delay by, 1 for a constant delay",
                errors,
            )
        }
        "retry_delay" => args.delay = duration_value(&value, key, errors).map(|ms| (ms, value.span())),
        "retry_max_delay" => args.max_delay = duration_value(&value, key, errors).map(|ms| (ms, value.span())),
        "retry_budget" => args.budget = duration_value(&value, key, errors),
        "retry_jitter" => args.jitter = jitter(&value, errors),
        _ => {
            args.sleep = path_value(
                &value,
                errors,
                "`retry_sleep` takes a path to a function that sleeps for a `breaker_core::Duration`: `fn(Duration)` for a sync function, `fn(Duration) -> impl Future<Output = ()>` for an `async fn`, such as `retry_sleep = my_sleep`; write a closure as a named `fn`",
            )
        }
    }
    Ok(())
}

/// An integer literal in `min..=max`.
fn count(value: &Expr, key: &str, min: u32, max: u32, hint: &str, errors: &mut Errors) -> Option<u32> {
    let Some(Lit::Int(int)) = crate::args::bare_literal(value) else {
        errors.push(syn::Error::new_spanned(
            value,
            format!(
                "`{key}` takes an integer literal from {min} to {max} ({hint}), such as `{}`",
                example(key)
            ),
        ));
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(0) if key == "retry" => errors.push(syn::Error::new(
            int.span(),
            "`retry` must be at least 1: it counts the retries after the first attempt; leave `retry` out for a single attempt",
        )),
        Ok(n) if (min..=max).contains(&n) => return Some(n),
        _ => errors.push(syn::Error::new(
            int.span(),
            format!("`{key}` must be between {min} and {max} ({hint}); found {}", int.base10_digits()),
        )),
    }
    None
}

fn jitter(value: &Expr, errors: &mut Errors) -> Option<&'static str> {
    match crate::args::bare_literal(value) {
        Some(Lit::Str(s)) => {
            let name = s.value();
            match JITTERS.iter().find(|(n, _)| *n == name) {
                Some((_, variant)) => Some(variant),
                None => {
                    errors.push(syn::Error::new(
                        s.span(),
                        format!("unknown jitter \"{name}\"; `retry_jitter` is one of {JITTER_NAMES} (\"full\" spreads callers the most)"),
                    ));
                    None
                }
            }
        }
        _ => {
            errors.push(syn::Error::new_spanned(
                value,
                format!(
                    "`retry_jitter` takes a string literal, one of {JITTER_NAMES}, such as `retry_jitter = \"full\"`"
                ),
            ));
            None
        }
    }
}

/// Applies the defaults and checks the retry arguments against each other. `None` when
/// there is no `retry` (then every other retry argument is an error).
pub fn config(args: RetryArgs, errors: &mut Errors) -> Option<RetryConfig> {
    let Some((retries, at)) = args.retries else {
        let retry_written = args.seen.iter().any(|(k, _)| *k == "retry");
        if !retry_written {
            for (key, span) in args.seen.iter().filter(|(k, _)| *k != "retry") {
                errors.push(syn::Error::new(
                    *span,
                    format!("`{key}` configures retries, but there are none without `retry`; add `retry = 3` (the retries after the first attempt), or remove `{key}`"),
                ));
            }
        }
        return None;
    };
    let delay = args.delay.map_or(DEFAULT_DELAY_MS, |(ms, _)| ms);
    let delay_invalid = args.seen.iter().any(|(k, _)| *k == "retry_delay") && args.delay.is_none();
    if let Some((max, at)) = args.max_delay {
        if max < delay && !delay_invalid {
            let delay_text = match args.delay {
                Some(_) => format!("\"{}\"", duration::format(delay)),
                None => format!("\"{}\", the default", duration::format(delay)),
            };
            errors.push(syn::Error::new(
                at,
                format!(
                    "`retry_max_delay` (\"{}\") is shorter than `retry_delay` ({delay_text}); it caps a delay that only grows, so write `retry_max_delay = \"{}\"` or longer",
                    duration::format(max),
                    duration::format(delay),
                ),
            ));
        }
    }
    Some(RetryConfig {
        retries,
        delay,
        backoff: args.backoff.unwrap_or(DEFAULT_BACKOFF),
        max_delay: args.max_delay.map(|(ms, _)| ms),
        jitter: args.jitter.unwrap_or("None"),
        budget: args.budget,
        sleep: args.sleep,
        at,
    })
}

/// Checks that a retried function can run its body more than once: a receiver taken by
/// value (`self`, `mut self`, `self: Box<Self>`) would be consumed by the first attempt.
pub fn check_fn(sig: &Signature, errors: &mut Errors) {
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        if r.reference.is_none() && !matches!(&*r.ty, Type::Reference(_)) {
            errors.push(syn::Error::new_spanned(
                r,
                "`#[circuit_breaker(retry = ..)]` runs the body once per attempt, and a method taking `self` by value could consume it in the first one; take `&self` (or `&mut self`), or clone `self` into a helper function that you annotate instead",
            ));
        }
    }
}

/// Checks that a retried `async fn` through breaker-core names its sleep: breaker-core
/// has no async timer to wait between attempts on.
pub fn check_async_sleep(sig: &Signature, retry: &RetryConfig, errors: &mut Errors) {
    if sig.asyncness.is_some() && retry.sleep.is_none() {
        errors.push(syn::Error::new(
            retry.at,
            "a retried `async fn` needs `retry_sleep = path::to::sleep`: breaker-core has no async timer to wait on between attempts; name a `fn(Duration) -> impl Future<Output = ()>` on your runtime's timer, for example `async fn sleep(d: breaker_core::Duration) { tokio::time::sleep(d.into()).await }` (`breaker_embedded::circuit_breaker` sleeps on embassy's `Timer` without it)",
        ));
    }
}

/// The signature of a retried function as emitted: without `mut` on its parameters'
/// bindings, since each attempt makes its own (`mut` where it was) and the outer ones are
/// only read. `mut` on a binding is not part of a function's type: callers see no change.
pub fn outer_signature(sig: &mut Signature) {
    for arg in &mut sig.inputs {
        if let FnArg::Typed(typed) = arg {
            strip_mut(&mut typed.pat);
        }
    }
}

fn strip_mut(pat: &mut Pat) {
    match pat {
        Pat::Ident(p) => {
            p.mutability = None;
            if let Some((_, sub)) = &mut p.subpat {
                strip_mut(sub);
            }
        }
        Pat::Tuple(t) => t.elems.iter_mut().for_each(strip_mut),
        Pat::TupleStruct(t) => t.elems.iter_mut().for_each(strip_mut),
        Pat::Struct(s) => s.fields.iter_mut().for_each(|f| strip_mut(&mut f.pat)),
        Pat::Slice(s) => s.elems.iter_mut().for_each(strip_mut),
        Pat::Reference(r) => strip_mut(&mut r.pat),
        Pat::Paren(p) => strip_mut(&mut p.pat),
        _ => {}
    }
}

/// What the body of a retried function needs from the rest of the expansion.
pub struct Context<'a> {
    pub private: &'a TokenStream,
    pub breaker: &'a syn::Ident,
    pub clock: &'a TokenStream,
    pub classify: &'a TokenStream,
    pub fake_return: &'a Option<TokenStream>,
    pub stmts: &'a [syn::Stmt],
    pub call_result: &'a syn::Ident,
}

/// The statements that run the function's body as the attempts of a retry ladder and
/// leave its `Result<T, CallError<E>>` in `cx.call_result`.
pub fn attempts(retry: &RetryConfig, sig: &Signature, cx: &Context) -> TokenStream {
    let private = cx.private;
    let RetryConfig {
        retries,
        delay,
        backoff,
        max_delay,
        jitter,
        budget,
        sleep,
        ..
    } = retry;
    let ms = |ms: u32| quote!(#private::Duration::from_millis(#ms));
    let [retries, backoff] = [*retries, *backoff].map(Literal::u32_unsuffixed);
    let delay = ms(*delay);
    let max_delay = max_delay.map(|m| {
        let m = ms(m);
        quote!(.with_max_delay(#m))
    });
    let budget = budget.map(|b| {
        let b = ms(b);
        quote!(.with_budget(#b))
    });
    let jitter = format_ident!("{jitter}");
    let sleep = match sleep {
        Some(path) => quote!(#path),
        None => quote!(#private::DefaultSleep),
    };
    let again = per_attempt(sig, private);
    let (fake_return, stmts, breaker, clock, classify, call_result) = (
        cx.fake_return,
        cx.stmts,
        cx.breaker,
        cx.clock,
        cx.classify,
        cx.call_result,
    );
    let policy = quote! {
        static __BREAKER_CORE_RETRY: #private::RetryPolicy = #private::RetryPolicy::new(#retries, #delay)
            .with_multiplier(#backoff)
            #max_delay
            .with_jitter(#private::Jitter::#jitter)
            #budget;
    };
    let body = format_ident!("__breaker_core_attempt", span = Span::mixed_site());
    if sig.asyncness.is_some() {
        // An async closure: each attempt's future may borrow what the closure captured
        // (`&mut self`, the arguments), which a closure returning an `async move` block
        // could not lend.
        quote! {
            #policy
            let #body = async move || {
                #again
                #fake_return
                #(#stmts)*
            };
            let #call_result = __BREAKER_CORE_RETRY
                .ladder(#breaker, &#clock)
                .sleep(#sleep)
                .classify(#classify)
                .call_async(#body)
                .await
                .into_result();
        }
    } else {
        quote! {
            #policy
            let #body = move || {
                #again
                #fake_return
                #(#stmts)*
            };
            let #call_result = __BREAKER_CORE_RETRY
                .ladder(#breaker, &#clock)
                .sleep(#sleep)
                .classify(#classify)
                .call(#body)
                .into_result();
        }
    }
}

/// At the start of each attempt, fresh copies of the arguments: a reborrow of each
/// `&mut` argument, and a clone of each argument taken by value (free for `Copy` types;
/// a type that is not `Clone` is a compile error at the argument, saying what to do).
/// Shared references are `Copy` and need nothing.
fn per_attempt(sig: &Signature, private: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for arg in &sig.inputs {
        let FnArg::Typed(typed) = arg else { continue };
        match (&*typed.pat, &*typed.ty) {
            (_, Type::Reference(r)) if r.mutability.is_none() => {}
            (Pat::Ident(p), Type::Reference(_)) if p.by_ref.is_none() && p.subpat.is_none() => {
                let (name, mutability) = (&p.ident, &p.mutability);
                out.extend(quote!(let #mutability #name = &mut *#name;));
            }
            (pat, ty) => {
                for (name, mutable) in bindings(pat) {
                    // Spanned at the argument, so that a type that is not `Clone` is
                    // reported there.
                    let call = respan(quote!(#private::retried_argument), ty.span());
                    let arg = quote_spanned!(ty.span()=> #call(&#name));
                    let mutability = mutable.then(|| quote!(mut));
                    out.extend(quote!(let #mutability #name = #arg;));
                }
            }
        }
    }
    out
}

/// The names a parameter pattern binds by value, and whether each was `mut`.
fn bindings(pat: &Pat) -> Vec<(syn::Ident, bool)> {
    let mut names = Vec::new();
    collect(pat, &mut names);
    names
}

fn collect(pat: &Pat, names: &mut Vec<(syn::Ident, bool)>) {
    match pat {
        Pat::Ident(p) => {
            if p.by_ref.is_none() {
                names.push((p.ident.clone(), p.mutability.is_some()));
            }
            if let Some((_, sub)) = &p.subpat {
                collect(sub, names);
            }
        }
        Pat::Tuple(t) => t.elems.iter().for_each(|p| collect(p, names)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|p| collect(p, names)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| collect(&f.pat, names)),
        Pat::Slice(s) => s.elems.iter().for_each(|p| collect(p, names)),
        Pat::Reference(r) => collect(&r.pat, names),
        Pat::Paren(p) => collect(&p.pat, names),
        _ => {}
    }
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                TokenTree::Group(group)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect::<TokenStream>()
        .into_token_stream()
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse::Parser;

    /// The retry config parsed from `src`, and whether it was accepted.
    fn check(src: &str) -> (Option<RetryConfig>, bool) {
        let mut errors = Errors::default();
        let mut args = RetryArgs::default();
        let parser = |input: ParseStream| {
            while !input.is_empty() {
                match parse(input, &mut args, &mut errors) {
                    Some(Ok(())) => {}
                    Some(Err(e)) => return Err(e),
                    None => return Err(input.error("not a retry argument")),
                }
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
            }
            Ok(())
        };
        if let Err(e) = parser.parse_str(src) {
            errors.push(e);
        }
        let config = config(args, &mut errors);
        (config, errors.is_empty())
    }

    #[test]
    fn defaults_and_values() {
        let (c, ok) = check("retry = 3");
        let c = c.unwrap();
        assert!(ok);
        assert_eq!(
            (c.retries, c.delay, c.backoff, c.max_delay, c.jitter, c.budget),
            (3, 100, 2, None, "None", None)
        );
        let (c, ok) = check(
            "retry = 5, retry_delay = \"250ms\", retry_backoff = 3, retry_max_delay = \"2s\", retry_jitter = \"decorrelated\", retry_budget = \"10s\"",
        );
        let c = c.unwrap();
        assert!(ok);
        assert_eq!(
            (c.retries, c.delay, c.backoff, c.max_delay, c.jitter, c.budget),
            (5, 250, 3, Some(2000), "Decorrelated", Some(10_000))
        );
        assert!(check("").0.is_none() && check("").1);
    }

    #[test]
    fn nonsense_is_rejected() {
        for bad in [
            "retry = 0",
            "retry = 256",
            "retry = \"3\"",
            "retry = 3, retry = 4",
            "retry",
            "retry_delay = \"100ms\"",
            "retry_jitter = \"full\"",
            "retry = 3, retry_delay = 100",
            "retry = 3, retry_backoff = 0",
            "retry = 3, retry_max_delay = \"50ms\"",
            "retry = 3, retry_delay = \"1s\", retry_max_delay = \"500ms\"",
            "retry = 3, retry_jitter = \"random\"",
            "retry = 3, retry_jitter = full",
            "retry = 3, retry_budget = \"0s\"",
            "retry = 3, retry_sleep = \"sleep\"",
        ] {
            assert!(!check(bad).1, "{bad}");
        }
        // A bad delay is reported once, not again as "shorter than the cap".
        let mut errors = Errors::default();
        let mut args = RetryArgs::default();
        let _ = (|input: ParseStream| {
            while !input.is_empty() {
                let _ = parse(input, &mut args, &mut errors);
                let _ = input.parse::<Option<Token![,]>>();
            }
            Ok(())
        })
        .parse_str("retry = 3, retry_delay = \"5x\", retry_max_delay = \"50ms\"");
        let _ = config(args, &mut errors);
        assert_eq!(
            errors
                .into_compile_errors()
                .to_string()
                .matches("compile_error")
                .count(),
            1
        );
    }

    #[test]
    fn by_value_receivers_are_rejected() {
        for (src, ok) in [
            ("fn f(&self) -> Result<(), E>", true),
            ("fn f(&mut self) -> Result<(), E>", true),
            ("fn f(self: &Self) -> Result<(), E>", true),
            ("fn f(self) -> Result<(), E>", false),
            ("fn f(mut self) -> Result<(), E>", false),
            ("fn f(self: Box<Self>) -> Result<(), E>", false),
        ] {
            let sig: Signature = syn::parse_str(src).unwrap();
            let mut errors = Errors::default();
            check_fn(&sig, &mut errors);
            assert_eq!(errors.is_empty(), ok, "{src}");
        }
    }

    #[test]
    fn each_attempt_gets_fresh_arguments() {
        let sig: Signature =
            syn::parse_str("fn f(a: &[u8], b: &mut Vec<u8>, c: u32, (d, ref e): (String, u8), mut g: String) -> R")
                .unwrap();
        let code = per_attempt(&sig, &quote!(p)).to_string();
        assert!(!code.contains("let a"), "{code}");
        assert!(code.contains("let b = & mut * b"), "{code}");
        assert!(code.contains("let mut g = p :: retried_argument (& g)"), "{code}");
        for name in ["c", "d"] {
            assert!(
                code.contains(&format!("let {name} = p :: retried_argument (& {name})")),
                "{code}"
            );
        }
        assert!(!code.contains("let e"), "{code}");
        // A `&mut` argument bound by reference, or with a subpattern, is not reborrowed:
        // its binding is a shared reference to it (or none).
        let sig: Signature = syn::parse_str("fn f(ref h: &mut u8, k @ _: &mut u8) -> R").unwrap();
        let code = per_attempt(&sig, &quote!(p)).to_string();
        assert!(!code.contains("& mut *"), "{code}");
    }

    #[test]
    fn a_cap_equal_to_the_delay_is_accepted() {
        let (c, ok) = check("retry = 2, retry_delay = \"1s\", retry_max_delay = \"1s\"");
        assert!(ok);
        assert_eq!(c.unwrap().max_delay, Some(1_000));
        assert!(!check("retry = 2, retry_delay = \"1s\", retry_max_delay = \"999ms\"").1);
    }

    #[test]
    fn the_bindings_by_value_are_found_in_every_kind_of_pattern() {
        let sig: Signature = syn::parse_str(
            "fn f(mut a: u8, (b, mut c): (u8, u8), P(d): P, S { e: mut e }: S, [g, _]: [u8; 2], \
             &(h, _): &(u8, u8), (i): u8, ref j: u8, k @ (l, _): (u8, u8))",
        )
        .unwrap();
        let found: Vec<String> = sig
            .inputs
            .iter()
            .flat_map(|arg| match arg {
                FnArg::Typed(t) => bindings(&t.pat),
                FnArg::Receiver(_) => Vec::new(),
            })
            .map(|(name, mutable)| {
                if mutable {
                    format!("mut {name}")
                } else {
                    name.to_string()
                }
            })
            .collect();
        // `ref j` binds by reference: nothing to copy.
        assert_eq!(found, ["mut a", "b", "mut c", "d", "mut e", "g", "h", "i", "k", "l"]);
    }

    #[test]
    fn the_outer_signature_has_no_mut_binding_in_any_pattern() {
        let mut sig: Signature = syn::parse_str(
            "fn f(mut a: u8, (mut b, c): (u8, u8), P(mut d): P, S { e: mut e }: S, [mut g, _]: [u8; 2], \
             &mut h: &mut u8, &(mut r, _): &(u8, u8), (mut i): u8, mut j @ (mut k, _): (u8, u8))",
        )
        .unwrap();
        outer_signature(&mut sig);
        let text = sig.to_token_stream().to_string();
        // Only the `&mut` of the reference pattern and type stay: they are not bindings.
        assert_eq!(text.matches("mut").count(), 2, "{text}");
        assert!(text.contains("& mut h : & mut u8"), "{text}");
    }
}
