//! `fallback = path`: on a refusal, call `path` with the same arguments and return its result.
//!
//! Three pieces, kept apart from the rest of the expansion: [`check`] (a function cannot be
//! its own fallback), [`rebind`] (parameters written as patterns get a name, so the
//! arguments can be passed on before the body has run), and [`body`] (the wrapped body:
//! the gate decides between the body and the fallback).
//!
//! The fallback's signature is checked by the compiler, at `path`, with a message of our
//! own: the call goes through a trait defined locally in the function, whose
//! `#[diagnostic::on_unimplemented]` names the expected signature, and whose one impl (for
//! any `FnOnce` of the function's arity with the function's return type, or returning a
//! future of it for an `async fn`) is marked `#[diagnostic::do_not_recommend]`, so a
//! mismatch is reported as that trait not being implemented. A fallback of the wrong
//! arity is reported by the compiler's own arity check, also at `path`.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Pat, PatIdent, Path, Signature, Type};

use crate::errors::Errors;
use crate::validate::type_text;

/// Rejects a fallback that names the function itself: a refused call would call the
/// function again, be refused again, and never return.
pub fn check(sig: &Signature, path: &Path, errors: &mut Errors) {
    let is_method = matches!(sig.inputs.first(), Some(FnArg::Receiver(_)));
    let segments: Vec<_> = path.segments.iter().map(|s| &s.ident).collect();
    let itself = match segments.as_slice() {
        [name] => !is_method && **name == sig.ident,
        [ty, name] => is_method && *ty == "Self" && **name == sig.ident,
        _ => false,
    };
    if itself {
        errors.push(syn::Error::new_spanned(
            path,
            format!(
                "`{}` cannot be its own fallback: a refused call would call it again and be refused again; name another function with the same signature, such as `fallback = {}_cached`",
                sig.ident, sig.ident
            ),
        ));
    }
}

/// Gives every parameter written as a pattern (`(a, b): (u8, u8)`, `_: u8`, `ref x: u8`)
/// a name, destructured at the top of the body instead, and returns the expressions that
/// pass the arguments on: `self` first for a method, then each parameter's name.
pub fn rebind(func: &mut ItemFn) -> Vec<TokenStream> {
    let mut args = Vec::new();
    let mut lets = Vec::new();
    for (i, input) in func.sig.inputs.iter_mut().enumerate() {
        match input {
            FnArg::Receiver(r) => args.push(r.self_token.to_token_stream()),
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(PatIdent {
                    by_ref: None,
                    subpat: None,
                    ident,
                    ..
                }) => args.push(ident.to_token_stream()),
                pat => {
                    let name = format_ident!("__breaker_core_arg{}", i, span = Span::mixed_site());
                    let pat = pat.clone();
                    lets.push(syn::parse_quote!(let #pat = #name;));
                    *typed.pat = syn::parse_quote!(#name);
                    args.push(name.to_token_stream());
                }
            },
        }
    }
    if !lets.is_empty() {
        lets.append(&mut func.block.stmts);
        func.block.stmts = lets;
    }
    args
}

/// What [`body`] needs from the rest of the expansion.
pub struct Parts<'a> {
    /// The runtime crate's `__private`.
    pub private: &'a TokenStream,
    pub sig: &'a Signature,
    /// The fallback's path, as written.
    pub path: &'a Path,
    /// The arguments to pass on ([`rebind`]).
    pub args: &'a [TokenStream],
    /// The return type, if it can be written down (no `impl Trait`).
    pub ret: Option<&'a Type>,
    /// The statics and the `let` binding the breaker.
    pub statics: &'a TokenStream,
    pub breaker: &'a syn::Ident,
    pub clock: &'a TokenStream,
    /// The function's body statements, with the fake return that fixes their type.
    pub body: &'a TokenStream,
    /// The error binding and the verdict expression over it.
    pub error: &'a syn::Ident,
    pub verdict: &'a TokenStream,
}

/// The wrapped body. Sync: one closure, owning the arguments, given to
/// `SharedBreaker::call_or_else`: admitted, it runs the body (whose outcome is reported);
/// refused, it returns the fallback's result. The happy path is `call_classified`'s.
/// Async: take a permit first (a refusal returns the fallback's result), then run the
/// body, its outcome reported through the permit, which lives across the `.await`.
pub fn body(p: &Parts) -> TokenStream {
    let Parts {
        private,
        statics,
        breaker,
        clock,
        body,
        error,
        verdict,
        ..
    } = p;
    let call = call_fallback(p);
    if p.sig.asyncness.is_none() {
        let admitted = format_ident!("__breaker_core_admitted", span = Span::mixed_site());
        return quote! {
            #statics
            #breaker.call_or_else(
                &#clock,
                move |#admitted| match #admitted {
                    // The body as a closure: its `return`s and `?`s end the body only.
                    ::core::result::Result::Ok(_) => #private::run(move || { #body }),
                    ::core::result::Result::Err(_) => {
                        #call
                    }
                },
                |#error| #verdict,
            )
        };
    }
    let permit = format_ident!("__breaker_core_permit", span = Span::mixed_site());
    let result = format_ident!("__breaker_core_result", span = Span::mixed_site());
    quote! {
        #statics
        let #permit = match #breaker.try_acquire(&#clock) {
            ::core::result::Result::Ok(permit) => permit,
            ::core::result::Result::Err(_) => {
                #call
            }
        };
        // A future dropped mid-call drops the permit unanswered: a probe counts as failed.
        let #result = async move { #body }.await;
        match &#result {
            ::core::result::Result::Ok(_) => #permit.success(),
            ::core::result::Result::Err(#error) => #permit.failure(#verdict),
        }
        #result
    }
}

/// `return` the fallback's result, through the local trait that checks its signature.
fn call_fallback(p: &Parts) -> TokenStream {
    let path = p.path;
    // Every error about the fallback points at its name (the last segment of the path).
    let at = path.segments.last().map_or_else(|| path.span(), |s| s.ident.span());
    let is_async = p.sig.asyncness.is_some();
    let arity = p.sig.inputs.len();
    let tys: Vec<TokenStream> = p.sig.inputs.iter().map(argument_type).collect();
    let ret = p.ret.map_or_else(|| quote!(_), ToTokens::to_token_stream);
    let generics: Vec<_> = (0..arity).map(|i| format_ident!("A{}", i)).collect();
    let values: Vec<_> = (0..arity).map(|i| format_ident!("a{}", i)).collect();
    let args = p.args;

    let expected = expected_signature(p.sig, p.ret);
    let path_text = text(&path.to_token_stream());
    let message = escape(&format!(
        "`{path_text}` cannot be the fallback of `{}`: expected `{expected}`",
        p.sig.ident
    ));
    let label = escape(&format!("expected `{expected}`, found `")) + "{Self}`";
    let note = escape(&format!(
        "when its breaker refuses a call, `{}` returns `{path_text}({}){}`: a fallback takes the same arguments{} and returns the same type{}",
        p.sig.ident,
        arguments_text(p.sig),
        if is_async { ".await" } else { "" },
        if matches!(p.sig.inputs.first(), Some(FnArg::Receiver(_))) {
            " (the receiver first, as `self`: a method with the same receiver, such as `Self::other`)"
        } else {
            ""
        },
        if is_async { ", as an `async fn`" } else { "" },
    ));

    let trait_name = format_ident!("__BreakerCoreFallback");
    let items = if is_async {
        // The call goes through a generic `async fn`, whose future's type does not depend
        // on the trait being implemented: a mismatch is one error, not one per use.
        quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #trait_name<Args, R> {
                fn __call(self, args: Args) -> impl ::core::future::Future<Output = R>;
            }
            #[diagnostic::do_not_recommend]
            impl<F, R, Fut, #(#generics),*> #trait_name<(#(#generics,)*), R> for F
            where
                F: ::core::ops::FnOnce(#(#generics),*) -> Fut,
                Fut: ::core::future::Future<Output = R>,
            {
                #[inline(always)]
                fn __call(self, (#(#values,)*): (#(#generics,)*)) -> impl ::core::future::Future<Output = R> {
                    self(#(#values),*)
                }
            }
            async fn __breaker_core_fallback<F: #trait_name<Args, R>, Args, R>(f: F, args: Args) -> R {
                #trait_name::__call(f, args).await
            }
            return __breaker_core_fallback::<_, (#(#tys,)*), #ret>(#path, (#(#args,)*)).await;
        }
    } else {
        quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #trait_name<Args, R> {
                fn __call(self, args: Args) -> R;
            }
            #[diagnostic::do_not_recommend]
            impl<F, R, #(#generics),*> #trait_name<(#(#generics,)*), R> for F
            where
                F: ::core::ops::FnOnce(#(#generics),*) -> R,
            {
                #[inline(always)]
                fn __call(self, (#(#values,)*): (#(#generics,)*)) -> R {
                    self(#(#values),*)
                }
            }
            return <_ as #trait_name<(#(#tys,)*), #ret>>::__call(#path, (#(#args,)*));
        }
    };
    located_at(items, at)
}

/// `tokens`, every one shown at `at` (each keeps its own hygiene), so that the
/// compiler reports anything about them there, once.
fn located_at(tokens: TokenStream, at: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), located_at(g.stream(), at));
                group.set_span(g.span().located_at(at));
                TokenTree::Group(group)
            }
            mut other => {
                other.set_span(other.span().located_at(at));
                other
            }
        })
        .collect()
}

/// The type a parameter has inside the body, as the trait's argument tuple names it: `_`
/// where it cannot be written (`impl Trait`).
fn argument_type(input: &FnArg) -> TokenStream {
    let ty: &Type = match input {
        FnArg::Receiver(r) => &r.ty,
        FnArg::Typed(t) => &t.ty,
    };
    if crate::validate::mentions_impl(ty.to_token_stream()) {
        quote!(_)
    } else {
        ty.to_token_stream()
    }
}

/// `fn(&[u8], u8) -> Result<usize, E>` (or `async fn(..)`), the receiver as its type.
fn expected_signature(sig: &Signature, ret: Option<&Type>) -> String {
    let params: Vec<String> = sig
        .inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(r) => type_text(&r.ty),
            FnArg::Typed(t) => type_text(&t.ty),
        })
        .collect();
    let ret = match (ret, &sig.output) {
        (Some(ty), _) => type_text(ty),
        (None, syn::ReturnType::Type(_, ty)) => type_text(ty),
        (None, syn::ReturnType::Default) => "()".to_owned(),
    };
    let asyncness = if sig.asyncness.is_some() { "async " } else { "" };
    format!("{asyncness}fn({}) -> {ret}", params.join(", "))
}

/// `self, frame, tick`: the arguments as the note shows the call.
fn arguments_text(sig: &Signature) -> String {
    let names: Vec<String> = sig
        .inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(_) => "self".to_owned(),
            FnArg::Typed(t) => match &*t.pat {
                Pat::Ident(p) => p.ident.to_string(),
                other => text(&other.to_token_stream()),
            },
        })
        .collect();
    names.join(", ")
}

/// Tokens as written: `Self::cached`, not `Self :: cached`.
fn text(tokens: &TokenStream) -> String {
    tokens
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" ::", "::")
}

/// `{` and `}` are placeholders in diagnostic messages: double them.
fn escape(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(src: &str) -> Signature {
        syn::parse_str(src).unwrap()
    }

    #[test]
    fn the_expected_signature_reads_as_written() {
        let s = sig("fn send(frame: &[u8], tick: u32) -> Result<usize, RadioError>");
        let ret = match &s.output {
            syn::ReturnType::Type(_, ty) => Some(&**ty),
            _ => None,
        };
        assert_eq!(
            expected_signature(&s, ret),
            "fn(&[u8], u32) -> Result<usize, RadioError>"
        );
        let m = sig("async fn get(&mut self, key: &str) -> io::Result<u8>");
        let ret = match &m.output {
            syn::ReturnType::Type(_, ty) => Some(&**ty),
            _ => None,
        };
        assert_eq!(
            expected_signature(&m, ret),
            "async fn(&mut Self, &str) -> io::Result<u8>"
        );
        assert_eq!(arguments_text(&m), "self, key");
    }

    #[test]
    fn a_function_cannot_be_its_own_fallback() {
        let own = |s: &str, p: &str| {
            let mut errors = Errors::default();
            check(&sig(s), &syn::parse_str(p).unwrap(), &mut errors);
            !errors.is_empty()
        };
        assert!(own("fn send() -> Result<(), E>", "send"));
        assert!(own("fn send(&self) -> Result<(), E>", "Self::send"));
        assert!(!own("fn send() -> Result<(), E>", "send_cached"));
        assert!(!own("fn send() -> Result<(), E>", "other::send"));
        assert!(!own("fn send(&self) -> Result<(), E>", "send"));
    }

    #[test]
    fn patterns_are_rebound_and_names_passed_on() {
        let mut f: ItemFn =
            syn::parse_str("fn f(&self, mut a: u8, (b, c): (u8, u8), _: u8) -> Result<(), E> { Ok(()) }").unwrap();
        let args: Vec<String> = rebind(&mut f).iter().map(ToString::to_string).collect();
        assert_eq!(args, ["self", "a", "__breaker_core_arg2", "__breaker_core_arg3"]);
        assert_eq!(f.block.stmts.len(), 3, "two lets, then the body");
        assert_eq!(escape("a{b}"), "a{{b}}");
    }
}
