#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod args;
mod duration;
mod errors;
mod expand;
mod fallback;
mod retry;
mod validate;
mod window;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenTree};

use crate::errors::Errors;

/// The `breaker-macros` crate defines this attribute: depend on `breaker-core` or
/// `breaker-embedded`, which re-export it. Its full documentation (the arguments, what
/// it generates, every compile error) is on `breaker_core::circuit_breaker`, where its
/// links resolve.
///
/// The code it generates names `::breaker_core` unless `crate = ...` says otherwise.
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    attribute(args, item, "breaker_core")
}

/// The same attribute as `breaker-embedded` re-exports it (as `circuit_breaker`): the
/// code it generates names `::breaker_embedded` unless `crate = ...` says otherwise, so
/// that its defaults are embassy's clock, defmt logs and embassy's timer.
#[proc_macro_attribute]
pub fn circuit_breaker_embedded(args: TokenStream, item: TokenStream) -> TokenStream {
    attribute(args, item, "breaker_embedded")
}

/// The attribute, generating code that names the runtime crate `::{runtime}` when the
/// arguments give no `crate = ...`.
fn attribute(args: TokenStream, item: TokenStream, runtime: &str) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut errors = Errors::default();
    let args = args::parse(args.into(), &mut errors);
    let config = validate::config(args, &mut errors);

    let func = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => Some(func),
        Err(e) => {
            errors.push(not_a_function(&item, e));
            None
        }
    };
    let shape = func.as_ref().and_then(|f| validate::check_fn(&f.sig, &mut errors));
    if let (Some(func), Some(retry)) = (&func, &config.retry) {
        retry::check_fn(&func.sig, &mut errors);
        // breaker-core has no async timer; another runtime crate (breaker-embedded, or
        // one named by `crate = ...`) may have one, which the ladder's bound checks.
        if runtime == "breaker_core" && config.krate.is_none() {
            retry::check_async_sleep(&func.sig, retry, &mut errors);
        }
    }
    if let (Some(f), Some(path)) = (&func, &config.fallback) {
        fallback::check(&f.sig, path, &mut errors);
    }

    match (func, shape) {
        (Some(func), Some(shape)) if errors.is_empty() => expand::expand(config, shape, func, runtime).into(),
        // On any error: our messages, and the item exactly as written, so the rest of
        // the crate still sees the function and reports nothing more.
        _ => {
            let mut out = errors.into_compile_errors();
            out.extend(item);
            out.into()
        }
    }
}

/// The error for an item that is not a function with a body, at its keyword.
fn not_a_function(item: &proc_macro2::TokenStream, parse_error: syn::Error) -> syn::Error {
    // A function without a body (in a trait, or `extern` block) parses as a trait item.
    if let Ok(f) = syn::parse2::<syn::TraitItemFn>(item.clone()) {
        if f.default.is_none() {
            let at = f.semi_token.map_or(f.sig.ident.span(), |s| s.spans[0]);
            return syn::Error::new(
                at,
                "`#[circuit_breaker]` needs a function with a body to wrap; write the body here, or put the attribute on the implementation",
            );
        }
    }
    let (span, what) = keyword(item);
    if ["fn", "async", "const", "unsafe", "extern", "default"].contains(&what.as_str()) {
        // A function syn could not read: its own error says where.
        return parse_error;
    }
    syn::Error::new(
        span,
        format!("`#[circuit_breaker]` goes on a `fn` returning `Result<T, E>`, not on {what}; wrap the function that makes the guarded call instead"),
    )
}

/// The first token after outer attributes and visibility, and what it makes the item.
fn keyword(item: &proc_macro2::TokenStream) -> (Span, String) {
    let mut tokens = item.clone().into_iter().peekable();
    while let Some(token) = tokens.next() {
        match &token {
            // `#[...]`: skip the bracket group that follows.
            TokenTree::Punct(p) if p.as_char() == '#' => {
                tokens.next();
            }
            TokenTree::Ident(i) if i == "pub" => {
                if matches!(tokens.peek(), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
                {
                    tokens.next();
                }
            }
            TokenTree::Ident(i) => {
                let word = i.to_string();
                if ["fn", "async", "const", "unsafe", "extern", "default"].contains(&word.as_str()) {
                    return (i.span(), word);
                }
                let what = match word.as_str() {
                    "struct" => "a struct".to_owned(),
                    "enum" => "an enum".to_owned(),
                    "impl" => "an `impl` block (put it on a method inside)".to_owned(),
                    "trait" => "a trait (put it on a method with a body)".to_owned(),
                    "mod" => "a module".to_owned(),
                    other => format!("`{other}` item"),
                };
                let what = if what.ends_with("item") {
                    format!("a {what}")
                } else {
                    what
                };
                return (i.span(), what);
            }
            other => return (other.span(), "this item".to_owned()),
        }
    }
    (Span::call_site(), "an empty item".to_owned())
}

#[cfg(test)]
mod tests {
    use super::keyword;

    fn what(src: &str) -> String {
        keyword(&src.parse().unwrap()).1
    }

    #[test]
    fn the_item_is_named_by_its_keyword_after_attributes_and_visibility() {
        assert_eq!(what("struct Radio;"), "a struct");
        assert_eq!(what("#[derive(Debug)] pub(crate) struct Radio;"), "a struct");
        assert_eq!(
            what("#[doc = \"x\"] #[allow(dead_code)] pub enum Channel {}"),
            "an enum"
        );
        assert_eq!(what("pub mod radio {}"), "a module");
        assert_eq!(
            what("#[cfg(test)] impl Radio {}"),
            "an `impl` block (put it on a method inside)"
        );
        assert_eq!(what("pub(super) static CHANNEL: u8 = 0;"), "a `static` item");
        // A function's keyword is handed back as written, for syn's own error.
        assert_eq!(what("#[inline] pub async fn send() {}"), "async");
        assert_eq!(what("pub fn send() {}"), "fn");
        // Anything else is "this item", or an empty one.
        assert_eq!(what("&radio"), "this item");
        assert_eq!(what("#[doc = \"x\"]"), "an empty item");
    }
}
