//! Code generation: the function, re-emitted with its signature untouched and its body
//! run through its own static breaker.

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::{AttrStyle, ItemFn};

use crate::validate::{Config, Shape};

/// The wrapped function; its code names the runtime crate `::{runtime}` unless the
/// arguments give `crate = ...`.
pub fn expand(config: Config, shape: Shape, mut func: ItemFn, runtime: &str) -> TokenStream {
    // With `fallback`, parameters written as patterns are named, to be passed on.
    let fallback_args = config.fallback.as_ref().map(|_| crate::fallback::rebind(&mut func));
    let krate = config.krate.clone().unwrap_or_else(|| {
        let name = format_ident!("{runtime}");
        syn::parse_quote!(::#name)
    });
    let private = quote!(#krate::__private);
    let ItemFn {
        attrs,
        vis,
        mut sig,
        block,
    } = func;
    let (inner_attrs, outer_attrs): (Vec<_>, Vec<_>) =
        attrs.into_iter().partition(|a| matches!(a.style, AttrStyle::Inner(_)));
    let stmts = &block.stmts;

    // Locals the user's code cannot see or clash with.
    let breaker = format_ident!("__breaker_core_breaker", span = Span::mixed_site());
    let permit = format_ident!("__breaker_core_permit", span = Span::mixed_site());
    let result = format_ident!("__breaker_core_result", span = Span::mixed_site());
    let fake = format_ident!("__breaker_core_fake_return", span = Span::mixed_site());

    let Config {
        trip,
        cooldown,
        probe_lease,
        probes,
        backoff,
        max_cooldown,
        ..
    } = config;
    let [trip, probes, backoff] = [trip, probes, backoff].map(Literal::u32_unsuffixed);
    let [cooldown, probe_lease, max_cooldown] =
        [cooldown, probe_lease, max_cooldown].map(|ms| quote!(#private::Duration::from_millis(#ms)));
    // Consecutive strikes, or a failure-rate window (`window.rs`).
    let base = match &config.window {
        Some(window) => crate::window::policy(window, &private, &cooldown),
        None => quote!(#private::Policy::new(#trip, #cooldown)),
    };
    let policy = quote! {
        #base
            .with_probe_lease(#probe_lease)
            .with_probes_to_close(#probes)
            .with_backoff(#backoff, #max_cooldown)
    };
    // `half_open_calls`, `half_open_rate`: half-open judged by a failure rate.
    let policy = match config.half_open {
        Some((calls, rate)) => {
            let [calls, rate] = [calls, rate].map(Literal::u32_unsuffixed);
            quote!(#policy.with_half_open_rate(#calls, #rate))
        }
        None => policy,
    };
    // `count_calls`: the policy counts every call and outcome.
    let policy = if config.count_calls {
        quote!(#policy.counting_calls())
    } else {
        policy
    };

    let ident = &sig.ident;
    let name = match &config.name {
        Some(lit) => quote!(#lit),
        None => {
            let fn_name = Literal::string(&ident.to_string());
            quote!(::core::concat!(::core::module_path!(), "::", #fn_name))
        }
    };
    let line = quote_spanned!(ident.span()=> ::core::line!());
    let clock = match &config.clock {
        Some(path) => quote!(#path),
        None => quote!(#private::DefaultClock),
    };
    // Errors about the error type (no `From<Refused>`, no `Classify`) point at it.
    let error_span = shape.error_span;
    // The whole call carries the span (its parentheses too), so that rustc reports an
    // unmet bound there rather than at the attribute.
    let at_error = |path: &str| {
        let name = format_ident!("{path}");
        respan(quote!(#private::#name), error_span)
    };
    // A `classify` function is called through `classify_with`, which takes it as a
    // `fn(&E) -> Verdict` once `E` is known: a wrong signature is then a plain type
    // mismatch naming the expected `fn(&E) -> Verdict` (as a bound on a closure type it
    // was E0631, suggesting a closure the attribute does not accept).
    // anyhow's error is classified by breaker-core's `anyhow` feature: without it, the
    // check below says so (and `anyhow_verdict` keeps its error the only one).
    let verdict_of = |error: &TokenStream| match &config.classify {
        Some(path) => quote!(#private::classify_with(#error, #path)),
        None => {
            let verdict = at_error(if shape.anyhow { "anyhow_verdict" } else { "verdict" });
            quote_spanned!(error_span=> #verdict(#error))
        }
    };
    let anyhow_check = (shape.anyhow && config.classify.is_none()).then(|| {
        let check = at_error("anyhow_feature");
        quote_spanned!(error_span=> #check!();)
    });

    // Gives the closure (or async block) the function's return type before its body is
    // type-checked, so `?` and `.into()` in the body infer exactly as they did in the
    // function (tracing-attributes does the same). Impossible with `impl Trait` in the
    // return type; inference from the surrounding call does the work then.
    let ret = &shape.ret;
    let fake_return = shape.nameable.then(|| {
        quote! {
            #[allow(
                unknown_lints,
                unreachable_code,
                clippy::diverging_sub_expression,
                clippy::empty_loop,
                clippy::let_unit_value,
                clippy::let_with_type_underscore,
                clippy::needless_return,
                clippy::unreachable
            )]
            if false {
                let #fake: #ret = loop {};
                return #fake;
            }
        }
    });

    // Without `log`, the observer is `()`: nothing to call, nothing stored. With it, the
    // runtime crate's `Log` (stderr, defmt, or nothing) is told of every transition. With
    // `history = N`, a `History<N, _>` keeps the last `N` in front of it.
    let (observer_ty, observer) = if config.log {
        (quote!(#private::Log), quote!(#private::Log::new(#name)))
    } else {
        (quote!(()), quote!(()))
    };
    let (observer_ty, observer) = match config.history {
        Some(n) => {
            let n = Literal::usize_unsuffixed(n as usize);
            (
                quote!(#private::History<#n, #observer_ty>),
                quote!(#private::History::new(#observer)),
            )
        }
        None => (observer_ty, observer),
    };
    let (breaker_ty, breaker_init) = match &config.window {
        // A windowed breaker keeps its window beside the observer (`window.rs`).
        Some(window) => crate::window::breaker(window, &private, observer_ty, observer),
        None if !config.log && config.history.is_none() => (
            quote!(#private::SharedBreaker),
            quote!(#private::SharedBreaker::new(&__BREAKER_CORE_POLICY)),
        ),
        None => (
            quote!(#private::SharedBreaker<#observer_ty>),
            quote!(#private::SharedBreaker::with_observer(&__BREAKER_CORE_POLICY, #observer)),
        ),
    };

    // `shadow`: the same breaker, in shadow mode from the start.
    let breaker_init = if config.shadow {
        quote!(#breaker_init.shadowed())
    } else {
        breaker_init
    };

    let statics = quote! {
        let #breaker: &'static #breaker_ty = {
            static __BREAKER_CORE_POLICY: #private::Policy = #policy;
            static __BREAKER_CORE_BREAKER: #breaker_ty = #breaker_init;
            #[#private::linkme::distributed_slice(#private::BREAKERS)]
            #[linkme(crate = #private::linkme)]
            static __BREAKER_CORE_ENTRY: #private::Entry = #private::Entry::new(
                #name,
                &__BREAKER_CORE_BREAKER,
                &#clock,
                ::core::file!(),
                #line,
            )
            .gating_itself();
            &__BREAKER_CORE_BREAKER
        };
    };

    // Locals spanned at the error type: rustc blames an unmet bound on the argument
    // that carries the type, so the argument must point there too. (A hygienic span
    // would be shown at the attribute; these names are only in scope in generated code.)
    let at_error_span = error_span;
    let error_var = format_ident!("error", span = at_error_span);
    let refused_var = format_ident!("refused", span = at_error_span);
    let call_result = format_ident!("__breaker_core_result", span = at_error_span);
    let body_var = format_ident!("__breaker_core_body", span = Span::mixed_site());
    let error = quote!(#error_var);
    let verdict_of_error = verdict_of(&error);
    let refused_call = match &config.refused {
        // `refused = path`: the user's function makes the error (for a type the orphan
        // rule keeps from having `From<Refused>`).
        Some(path) => quote!(#private::refused_with(#refused_var, #path)),
        None => {
            let refused = at_error("refused");
            quote_spanned!(error_span=> #refused(#refused_var))
        }
    };
    let call = {
        let classify = quote!(|#error_var| #verdict_of_error);
        // The body is bound first, so its type (and so `E`) is known before the
        // `classify` closure is checked, and an error type without `Classify` is reported
        // at the error type.
        // `call_mapped` answers with the function's own error type (a refusal made into it
        // by `refused`), and keeps everything but the closed-state path out of line: the
        // function needs no stack frame there when it is not inlined.
        quote! {
            let #body_var = move || {
                #fake_return
                #(#stmts)*
            };
            #breaker.call_mapped(&#clock, #body_var, #classify, |#refused_var| #refused_call)
        }
    };
    let body = if let Some(retry) = &config.retry {
        // Each attempt runs the body through the retry ladder, in front of the breaker.
        let classify = match &config.classify {
            Some(path) => quote!(#path),
            None => quote!(|#error_var| #verdict_of_error),
        };
        let attempts = crate::retry::attempts(
            retry,
            &sig,
            &crate::retry::Context {
                private: &private,
                breaker: &breaker,
                clock: &clock,
                classify: &classify,
                fake_return: &fake_return,
                stmts,
                call_result: &call_result,
            },
        );
        crate::retry::outer_signature(&mut sig);
        // The same answer as the single call's (below): the value, the body's error, or
        // `E::from(refused)`.
        quote! {
            #statics
            #attempts
            match #call_result {
                ::core::result::Result::Ok(value) => ::core::result::Result::Ok(value),
                ::core::result::Result::Err(#private::CallError::Inner(#error_var)) => {
                    ::core::result::Result::Err(#error_var)
                }
                ::core::result::Result::Err(#private::CallError::Refused(#refused_var)) => {
                    ::core::result::Result::Err(#refused_call)
                }
            }
        }
    } else if let (Some(path), Some(args)) = (&config.fallback, &fallback_args) {
        crate::fallback::body(&crate::fallback::Parts {
            private: &private,
            sig: &sig,
            path,
            args,
            ret: shape.nameable.then_some(&shape.ret),
            statics: &statics,
            breaker: &breaker,
            clock: &clock,
            body: &quote!(#fake_return #(#stmts)*),
            error: &error_var,
            verdict: &verdict_of_error,
        })
    } else if sig.asyncness.is_some() {
        // A slow-call rule times the call: the clock is read when it starts and ends.
        let started = format_ident!("__breaker_core_started", span = Span::mixed_site());
        let times_calls = config.window.as_ref().is_some_and(|w| w.slow.is_some());
        let (start, report) = if times_calls {
            (
                quote!(let #started = #private::Clock::now(&#clock);),
                quote! {
                    match &#result {
                        ::core::result::Result::Ok(_) => #permit.record_timed(#private::Outcome::Success, #started),
                        ::core::result::Result::Err(#error_var) => {
                            #permit.record_timed(#private::Outcome::Error(#verdict_of_error), #started)
                        }
                    }
                },
            )
        } else {
            (
                quote!(),
                quote! {
                    match &#result {
                        ::core::result::Result::Ok(_) => #permit.success(),
                        ::core::result::Result::Err(#error_var) => #permit.failure(#verdict_of_error),
                    }
                },
            )
        };
        // The permit lives across the `.await`: a future dropped mid-call drops it
        // unanswered, which counts a probe as failed (the shared breaker's rule).
        quote! {
            #statics
            let #permit = match #breaker.try_acquire(&#clock) {
                ::core::result::Result::Ok(permit) => permit,
                ::core::result::Result::Err(#refused_var) => {
                    return ::core::result::Result::Err(#refused_call);
                }
            };
            #start
            let #result = async move {
                #fake_return
                #(#stmts)*
            }
            .await;
            #report
            #result
        }
    } else {
        quote! {
            #statics
            #call
        }
    };

    quote! {
        #(#outer_attrs)*
        #vis #sig {
            #(#inner_attrs)*
            #anyhow_check
            #body
        }
    }
}

/// `tokens` with every span set to `span`, so that an expression built from them is
/// reported at `span` (a path mixing spans is reported at the attribute instead).
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
        .collect()
}
