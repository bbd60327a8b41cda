#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod args;
mod duration;
mod errors;
mod expand;
mod validate;
mod window;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenTree};

use crate::errors::Errors;

/// Wraps a function returning `Result<T, E>` in its own circuit breaker: a `static`
/// [`SharedBreaker`] (its [`Policy`] in flash), listed in the static [`registry`].
///
/// ```
/// use breaker_core::{circuit_breaker, Classify, Refused, Verdict};
///
/// #[derive(Debug)]
/// enum RadioError {
///     Nack,
///     Refused(Refused),
/// }
/// impl From<Refused> for RadioError {
///     fn from(r: Refused) -> Self {
///         RadioError::Refused(r)
///     }
/// }
/// impl Classify for RadioError {} // every error is a strike
///
/// #[circuit_breaker(trip = 3, cooldown = "30s", probe_lease = "30s")]
/// fn send_frame(frame: &[u8]) -> Result<usize, RadioError> {
///     if frame.is_empty() { Err(RadioError::Nack) } else { Ok(frame.len()) }
/// }
///
/// for _ in 0..3 {
///     assert!(matches!(send_frame(&[]), Err(RadioError::Nack)));
/// }
/// // Open: the body is not run, the call returns `E::from(refused)`.
/// assert!(matches!(send_frame(b"hi"), Err(RadioError::Refused(_))));
/// ```
///
/// # What it generates
///
/// One breaker per function, shared by every caller (every thread, task and, for
/// methods, every receiver): the `static`s live inside the function. The signature is
/// kept exactly: attributes, doc comments, visibility, `async`, `unsafe`, generics,
/// `where` clauses, receivers (`&self`, `&mut self`, `self`).
///
/// - A sync function runs its body through [`SharedBreaker::call_classified`]; an
///   `async fn` takes a permit with [`SharedBreaker::try_acquire`], holds it across the
///   body's `.await`, and reports with `success()` / `failure(verdict)`, so a future
///   dropped mid-call follows the permit's rule (a dropped probe counts as failed).
/// - A refused call does not run the body and returns `Err(E::from(refused))`: the error
///   type must implement `From<`[`Refused`]`>`.
/// - A failed call's verdict ([`Verdict`]) comes from `E`'s [`Classify`] impl, or from the
///   `classify` function.
/// - The clock is read only when the breaker needs the time: never on the closed-state
///   happy path.
/// - The breaker has no observer (`SharedBreaker<()>`: nothing stored, nothing called)
///   unless `log` is given: then it is a `SharedBreaker<Log>` built with
///   [`SharedBreaker::with_observer`], `Log::new(name)` telling the runtime crate's logger
///   of every transition (see [Logging transitions](#logging-transitions)).
/// - With `window`, the policy is [`Policy::failure_rate`] and the breaker a
///   `SharedBreaker<Windowed<CallWindow, O>>` (`window = N`) or
///   `SharedBreaker<Windowed<TimeWindow, O>>` (`window = "10s"`) built with
///   [`SharedBreaker::windowed`], `O` being `()` or `Log`. See
///   [Failure-rate windows](#failure-rate-windows).
///
/// # Arguments
///
/// All optional, in any order, each at most once: `#[circuit_breaker(trip = 5, cooldown = "1m")]`.
///
/// | argument | value | default |
/// |---|---|---|
/// | `trip` | integer literal, 1 to 255: consecutive strikes that open the breaker | `3` |
/// | `cooldown` | duration string: how long the breaker stays open before a probe | `"30s"` |
/// | `probe_lease` | duration string: how long a probe may stay unanswered before it counts as failed | the cooldown |
/// | `probes` | integer literal, 1 to 15: consecutive probe successes that close it | `1` |
/// | `backoff` | integer literal, 1 to 255: each re-open without a close multiplies the cooldown by it | `1` (constant) |
/// | `max_cooldown` | duration string: the cap of the growing cooldown | the cooldown |
/// | `window` | integer literal, 1 to 51: trip on the failure rate of the last N calls instead of on `trip` consecutive strikes; or a duration string, at least `"1s"` and a whole number of 10 ms: on the failure rate of that span of time (ten buckets) | none: consecutive strikes |
/// | `failure_rate` | integer literal, 1 to 100: the percentage of failed calls in the window that opens the breaker | `50` |
/// | `min_calls` | integer literal, 1 to the window's size (1 to 10230 for a time window): the fewest calls in the window before a rate can open it | the window's size; `10` for a time window |
/// | `slow_call` | duration string: a successful call that takes longer is slow | none: no slow-call rule |
/// | `slow_rate` | integer literal, 1 to 100: the percentage of slow calls in the window that opens the breaker | none: no slow-call rule |
/// | `name` | string literal: the registry name | `concat!(module_path!(), "::", "<fn name>")` |
/// | `log` | flag: `log`, or `log = true` / `log = false`: log every transition, under the registry name | off |
/// | `classify` | path to a `fn(&E) -> Verdict` | `E`'s [`Classify`] impl |
/// | `clock` | path to a `static` implementing [`Clock`] + `Sync` | `__private::DefaultClock`: [`GlobalClock`] in breaker-core, embassy-time in breaker-embedded |
/// | `crate` | path to the runtime crate, when it is re-exported | `::breaker_embedded` if a dependency, else `::breaker_core` (under its name in `Cargo.toml`) |
///
/// Durations are string literals of one or more `<number><unit>` groups, units `ms`,
/// `s`, `m`, `h`, largest first, no spaces: `"250ms"`, `"30s"`, `"2m"`, `"1h"`,
/// `"1m30s"`. They are parsed at compile time into `Duration::from_millis(N)` constant
/// calls; nothing is parsed at run time.
///
/// `log` is the one argument that needs no value: `#[circuit_breaker(trip = 3, log)]`.
///
/// # Failure-rate windows
///
/// `window` replaces `trip`: the breaker trips when `failure_rate` percent of the calls in
/// its window failed (or `slow_rate` percent were slower than `slow_call`), once the window
/// holds `min_calls` calls. Trip verdicts still trip at once, neutral outcomes are not
/// counted, and the window is cleared on every transition; the rest (cooldown, probes,
/// backoff, lease) is as without a window. The rules are `breaker_core::window`'s.
///
/// ```
/// use breaker_core::{circuit_breaker, Classify, Refused};
///
/// #[derive(Debug)]
/// enum ModemError { Timeout, Refused(Refused) }
/// impl From<Refused> for ModemError {
///     fn from(r: Refused) -> Self {
///         ModemError::Refused(r)
///     }
/// }
/// impl Classify for ModemError {}
///
/// /// Trips when half of the last 20 calls failed (judged from 10 calls on), or when
/// /// 80 % of them took more than 2 s: a modem that answers, but too late.
/// #[circuit_breaker(window = 20, failure_rate = 50, min_calls = 10, slow_call = "2s", slow_rate = 80)]
/// fn dial(number: &str) -> Result<(), ModemError> {
///     if number.is_empty() { Err(ModemError::Timeout) } else { Ok(()) }
/// }
///
/// /// The same over the last 10 seconds (ten 1 s buckets).
/// #[circuit_breaker(window = "10s", min_calls = 20)]
/// fn hang_up() -> Result<(), ModemError> {
///     Ok(())
/// }
/// # dial("112").unwrap();
/// # hang_up().unwrap();
/// ```
///
/// Only a slow-call rule times calls (a clock read when each starts and ends); a count
/// window needs no clock at all, a time window reads it once per call.
///
/// A method's default `name` has no `Self` type in it (an attribute cannot see the
/// `impl` it sits in): give methods a `name` when two types in one module share a method
/// name. Duplicate names are never merged; the [`registry`] reports them.
///
/// # Logging transitions
///
/// With `log`, each change of phase is one line naming the breaker by its registry name.
/// What writes it depends on the runtime crate (the `crate` argument's, or the default):
///
/// - `breaker-embedded`: [`DefmtLog`], through defmt (`WARN` for an opening, `INFO` for the
///   rest), in the firmware's defmt log;
/// - `breaker-core` with its `std` feature (the default): [`StderrLog`], one line on
///   stderr;
/// - `breaker-core` without `std`: nothing (there is nowhere to write; the observer is a
///   zero-sized type that does nothing). Use `breaker-embedded` for defmt logs.
///
/// ```text
/// breaker radio: opened (strikes), cooling down 30s
/// breaker radio: half-open: probing
/// breaker radio: closed (recovered)
/// ```
///
/// A line is written by the caller (thread or task) whose call made the transition, and
/// only then: the closed-state happy path is unchanged. [`StderrLog`] reads no clock: its
/// "cooling down" is the cooldown that started at the transition. [`DefmtLog`] says how
/// much of it is left by embassy time: right with the default clock, not with a `clock`
/// on another time base.
///
/// `SharedBreaker`'s code is generic over its observer, so a program with both logged
/// and silent breakers compiles it twice (about 1.4 KB more on a Cortex-M3); when flash
/// is tight, log all of them or none.
///
/// # Restrictions
///
/// Each is a compile error pointing at the offending token (and the function is still
/// emitted unchanged, so there is no flood of follow-on errors); all are reported at once.
///
/// - an argument not in the table above: `unknown argument`, listing the valid ones;
/// - an argument given twice: `duplicate argument`;
/// - an argument other than `log` without `= value`, or two without a comma between them;
/// - `log` with a value other than `true` or `false` (`log = "yes"`, `log = 1`), or
///   followed by anything but `= true`, `= false` or a comma (`log(true)`);
/// - `trip = 0`; `trip` above 255; `probes` outside 1 to 15; `backoff` outside 1 to 255;
///   any of them not an integer literal;
/// - `window = 0`, or above 51; a `window` that is neither an integer literal nor a
///   duration string; a time window shorter than `"1s"`, or not a whole number of 10 ms;
/// - `failure_rate` or `slow_rate` outside 1 to 100; `min_calls` outside 1 to 10230, or
///   more than a count window holds; any of them not an integer literal;
/// - `failure_rate`, `min_calls`, `slow_call` or `slow_rate` without `window`; `slow_call`
///   without `slow_rate`, or `slow_rate` without `slow_call`; `trip` together with `window`;
/// - a duration that is not a string literal (a number without quotes, a constant, an
///   expression), that is empty, contains spaces, has a number without a unit or a unit
///   without a number, an unknown unit, units repeated or out of order, is zero, or
///   exceeds `Duration::MAX` (2^30 - 1 ms, about 12.4 days);
/// - `max_cooldown` shorter than `cooldown`; `max_cooldown` without `backoff` above 1;
///   `backoff` above 1 without `max_cooldown`;
/// - `name` that is not a string literal, or is empty;
/// - `classify`, `clock` or `crate` that is not a path;
/// - applied to something that is not a function, or to a function without a body;
/// - a `const fn`;
/// - no return type, or one that is not written as `Result<..>` (aliases such as
///   `io::Result<T>` are fine);
/// - (type-checked) an error type without `From<Refused>`, or without [`Classify`] when
///   no `classify` is given, reported at the error type with what to add; a `classify`
///   function whose signature is not `fn(&E) -> Verdict`, reported at the path.
///
/// [`SharedBreaker`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html
/// [`SharedBreaker::call_classified`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.call_classified
/// [`SharedBreaker::with_observer`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.with_observer
/// [`StderrLog`]: https://docs.rs/breaker-core/latest/breaker_core/struct.StderrLog.html
/// [`DefmtLog`]: https://docs.rs/breaker-embedded/latest/breaker_embedded/struct.DefmtLog.html
/// [`SharedBreaker::try_acquire`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.try_acquire
/// [`Policy`]: https://docs.rs/breaker-core/latest/breaker_core/struct.Policy.html
/// [`Policy::failure_rate`]: https://docs.rs/breaker-core/latest/breaker_core/struct.Policy.html#method.failure_rate
/// [`SharedBreaker::windowed`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.windowed
/// [`registry`]: https://docs.rs/breaker-core/latest/breaker_core/registry/index.html
/// [`Refused`]: https://docs.rs/breaker-core/latest/breaker_core/struct.Refused.html
/// [`Verdict`]: https://docs.rs/breaker-core/latest/breaker_core/enum.Verdict.html
/// [`Classify`]: https://docs.rs/breaker-core/latest/breaker_core/trait.Classify.html
/// [`Clock`]: https://docs.rs/breaker-core/latest/breaker_core/trait.Clock.html
/// [`GlobalClock`]: https://docs.rs/breaker-core/latest/breaker_core/struct.GlobalClock.html
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
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

    match (func, shape) {
        (Some(func), Some(shape)) if errors.is_empty() => expand::expand(config, shape, func).into(),
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
