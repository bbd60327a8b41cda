#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod args;
mod duration;
mod errors;
mod expand;
mod fallback;
mod retry;
mod validate;

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
///   type must implement `From<`[`Refused`]`>`. With `fallback = path` it returns
///   `path`'s result instead (see [Fallback](#fallback)).
/// - A failed call's verdict ([`Verdict`]) comes from `E`'s [`Classify`] impl, or from the
///   `classify` function.
/// - The clock is read only when the breaker needs the time: never on the closed-state
///   happy path.
/// - The breaker has no observer (`SharedBreaker<()>`: nothing stored, nothing called)
///   unless `log` is given: then it is a `SharedBreaker<Log>` built with
///   [`SharedBreaker::with_observer`], `Log::new(name)` telling the runtime crate's logger
///   of every transition (see [Logging transitions](#logging-transitions)).
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
/// | `name` | string literal: the registry name | `concat!(module_path!(), "::", "<fn name>")` |
/// | `log` | flag: `log`, or `log = true` / `log = false`: log every transition, under the registry name | off |
/// | `classify` | path to a `fn(&E) -> Verdict` | `E`'s [`Classify`] impl |
/// | `clock` | path to a `static` implementing [`Clock`] + `Sync` | `__private::DefaultClock`: [`GlobalClock`] in breaker-core, embassy-time in breaker-embedded |
/// | `fallback` | path to a function with the same arguments and return type (`async` if the function is), called instead when the breaker refuses | none: a refusal returns `Err(E::from(refused))` |
/// | `crate` | path to the runtime crate, when it is re-exported | `::breaker_embedded` if a dependency, else `::breaker_core` (under its name in `Cargo.toml`) |
/// | `retry` | integer literal, 1 to 255: retries after the first attempt, through a [retry ladder](#retries) in front of the breaker | none: one attempt |
/// | `retry_delay` | duration string: the delay before the first retry | `"100ms"` |
/// | `retry_backoff` | integer literal, 1 to 255: each retry waits this many times longer | `2` |
/// | `retry_max_delay` | duration string: the cap on one delay | none |
/// | `retry_jitter` | `"none"`, `"full"`, `"equal"` or `"decorrelated"` ([`Jitter`]) | `"none"` |
/// | `retry_budget` | duration string: no sleep ends and no retry starts later than this after the first attempt started | none |
/// | `retry_sleep` | path to a `fn(Duration)` (sync) or `fn(Duration) -> impl Future<Output = ()>` (`async fn`) | `__private::DefaultSleep`: `std::thread::sleep` in breaker-core (sync only), embassy's `Timer` (async) or `block_for` (sync) in breaker-embedded |
///
/// Durations are string literals of one or more `<number><unit>` groups, units `ms`,
/// `s`, `m`, `h`, largest first, no spaces: `"250ms"`, `"30s"`, `"2m"`, `"1h"`,
/// `"1m30s"`. They are parsed at compile time into `Duration::from_millis(N)` constant
/// calls; nothing is parsed at run time.
///
/// `log` is the one argument that needs no value: `#[circuit_breaker(trip = 3, log)]`.
///
/// A method's default `name` has no `Self` type in it (an attribute cannot see the
/// `impl` it sits in): give methods a `name` when two types in one module share a method
/// name. Duplicate names are never merged; the [`registry`] reports them.
///
/// # Retries
///
/// With `retry = N` the body runs as the attempts of a [`Ladder`] ([`RetryPolicy`] built
/// from the `retry_*` arguments, in a `static`) in front of the function's breaker:
///
/// ```
/// use breaker_core::{circuit_breaker, Classify, Duration, Refused};
///
/// #[derive(Debug, PartialEq)]
/// enum LinkError { Timeout, Refused }
/// impl From<Refused> for LinkError {
///     fn from(_: Refused) -> Self { LinkError::Refused }
/// }
/// impl Classify for LinkError {}
///
/// fn nap(_: Duration) {} // a test does not sleep; the default is `std::thread::sleep`
///
/// /// Up to 3 retries, 100 ms then 200 ms then 400 ms apart (at most 1 s), fully jittered.
/// #[circuit_breaker(trip = 5, retry = 3, retry_delay = "100ms", retry_max_delay = "1s", retry_jitter = "full", retry_sleep = nap)]
/// fn fetch(tries: &std::cell::Cell<u32>) -> Result<u32, LinkError> {
///     tries.set(tries.get() + 1);
///     if tries.get() < 3 { Err(LinkError::Timeout) } else { Ok(tries.get()) }
/// }
///
/// assert_eq!(fetch(&std::cell::Cell::new(0)), Ok(3));
/// ```
///
/// - Every attempt goes through the breaker's gate, so strikes accumulate and the breaker
///   can trip mid-ladder. Only strikes are retried: a trip verdict, a neutral outcome or a
///   refusal is returned at once, as without `retry`; so is the last strike when the
///   retries or the budget run out, or when the breaker is left open past the next delay.
/// - Each attempt gets its own copy of the arguments: arguments taken by value are cloned
///   (copied, for `Copy` types), `&mut` arguments reborrowed. An argument taken by value
///   whose type is not `Clone` is a compile error at the argument (take it by reference,
///   or make it `Clone`), and so is a method taking `self` by value.
/// - An `async fn`'s attempts are an async closure, so each attempt may borrow `&mut self`
///   and the arguments; dropping the future mid-attempt drops the attempt's permit
///   unanswered (a probe counts as failed), mid-sleep it holds nothing.
/// - Without `retry_sleep`, a sync function sleeps with `std::thread::sleep` (feature
///   `std`) and an `async fn` through breaker-embedded on embassy's `Timer`; an `async fn`
///   through breaker-core needs `retry_sleep` (a compile error says so).
/// - The clock of the budget is the breaker's (`clock`).
///
/// # Fallback
///
/// `fallback = path` is what resilience4j's `fallbackMethod` does: when the breaker
/// refuses a call, the body is not run, and the function returns `path(arguments..)`
/// (`path(arguments..).await` for an `async fn`) instead of a refusal. The body never
/// ran, so the arguments are all still there to pass on.
///
/// ```
/// use breaker_core::{circuit_breaker, Classify};
///
/// #[derive(Debug, PartialEq)]
/// struct Nack;
/// impl Classify for Nack {}
///
/// /// Sends over LoRa; while LoRa's breaker is open, over NB-IoT.
/// #[circuit_breaker(trip = 2, cooldown = "30s", fallback = send_nb_iot)]
/// fn send_lora(frame: &[u8], fail: bool) -> Result<&'static str, Nack> {
///     if fail { Err(Nack) } else { Ok("lora") }
/// }
///
/// fn send_nb_iot(_frame: &[u8], _fail: bool) -> Result<&'static str, Nack> {
///     Ok("nb-iot")
/// }
///
/// assert_eq!(send_lora(b"hi", true), Err(Nack)); // the body's own errors are returned
/// assert_eq!(send_lora(b"hi", true), Err(Nack));
/// assert_eq!(send_lora(b"hi", false), Ok("nb-iot")); // refused: the fallback answers
/// ```
///
/// - Only a refusal calls the fallback: the body's own errors are returned as they are
///   (they are what trips the breaker). The refusal still counts as a skip; what the
///   fallback does is not reported to this breaker (give it its own `#[circuit_breaker]`
///   if it should have one).
/// - The error type need not implement `From<`[`Refused`]`>`: no refusal becomes an error.
/// - **Methods**: the receiver is passed first, as `self`, exactly as the method received
///   it (`&Self`, `&mut Self`, `Self`, `Box<Self>`..), so the fallback is a method with the
///   same receiver, `fallback = Self::send_cached`, or a function taking the receiver's
///   type first.
/// - Parameters written as patterns (`(a, b): (u8, u8)`, `_: u8`) are given a name in the
///   expanded signature and destructured at the top of the body, so they can be passed on.
/// - The fallback is checked by the compiler against the function's signature, and a
///   mismatch is reported at the fallback's name: a wrong return type, or a sync fallback
///   for an `async fn` (or the other way round), says which signature is expected
///   (``expected `async fn(&[u8]) -> Result<usize, Nack>` ``); a wrong number of
///   arguments is the compiler's own "function is expected to take 2 arguments".
/// - A function cannot be its own fallback (it would be refused again, for ever).
/// - `fallback` and `retry` do not combine yet: the retried attempts take the arguments, so
///   none are left to pass to a fallback (a compile error says so).
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
/// - a duration that is not a string literal (a number without quotes, a constant, an
///   expression), that is empty, contains spaces, has a number without a unit or a unit
///   without a number, an unknown unit, units repeated or out of order, is zero, or
///   exceeds `Duration::MAX` (2^30 - 1 ms, about 12.4 days);
/// - `max_cooldown` shorter than `cooldown`; `max_cooldown` without `backoff` above 1;
///   `backoff` above 1 without `max_cooldown`;
/// - `name` that is not a string literal, or is empty;
/// - `classify`, `clock`, `fallback`, `crate` or `retry_sleep` that is not a path;
/// - `retry = 0`, `retry` above 255, `retry_backoff` outside 1 to 255, either not an
///   integer literal; `retry_jitter` that is not one of the four strings; any `retry_*`
///   argument without `retry`; `retry_max_delay` shorter than `retry_delay`;
/// - with `retry`: an argument taken by value whose type is not `Clone`, reported at the
///   argument; a method taking `self` by value; an `async fn` through breaker-core without
///   `retry_sleep`;
/// - a `fallback` that is the function itself (`fallback = send` on `send`, or
///   `fallback = Self::send` on a method `send`); `fallback` together with `retry`;
/// - applied to something that is not a function, or to a function without a body;
/// - a `const fn`;
/// - no return type, or one that is not written as `Result<..>` (aliases such as
///   `io::Result<T>` are fine);
/// - (type-checked) an error type without `From<Refused>`, or without [`Classify`] when
///   no `classify` is given, reported at the error type with what to add; a `classify`
///   function whose signature is not `fn(&E) -> Verdict`, reported at the path; a
///   `fallback` whose arguments, return type or `async` differ from the function's,
///   reported at its name with the signature expected.
///
/// [`SharedBreaker`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html
/// [`SharedBreaker::call_classified`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.call_classified
/// [`SharedBreaker::with_observer`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.with_observer
/// [`StderrLog`]: https://docs.rs/breaker-core/latest/breaker_core/struct.StderrLog.html
/// [`DefmtLog`]: https://docs.rs/breaker-embedded/latest/breaker_embedded/struct.DefmtLog.html
/// [`SharedBreaker::try_acquire`]: https://docs.rs/breaker-core/latest/breaker_core/struct.SharedBreaker.html#method.try_acquire
/// [`Policy`]: https://docs.rs/breaker-core/latest/breaker_core/struct.Policy.html
/// [`registry`]: https://docs.rs/breaker-core/latest/breaker_core/registry/index.html
/// [`Refused`]: https://docs.rs/breaker-core/latest/breaker_core/struct.Refused.html
/// [`Verdict`]: https://docs.rs/breaker-core/latest/breaker_core/enum.Verdict.html
/// [`Classify`]: https://docs.rs/breaker-core/latest/breaker_core/trait.Classify.html
/// [`Clock`]: https://docs.rs/breaker-core/latest/breaker_core/trait.Clock.html
/// [`GlobalClock`]: https://docs.rs/breaker-core/latest/breaker_core/struct.GlobalClock.html
/// [`Ladder`]: https://docs.rs/breaker-core/latest/breaker_core/struct.Ladder.html
/// [`RetryPolicy`]: https://docs.rs/breaker-core/latest/breaker_core/struct.RetryPolicy.html
/// [`Jitter`]: https://docs.rs/breaker-core/latest/breaker_core/enum.Jitter.html
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
    if let (Some(func), Some(_)) = (&func, &config.retry) {
        retry::check_fn(&func.sig, &mut errors);
    }
    if let (Some(f), Some(path)) = (&func, &config.fallback) {
        fallback::check(&f.sig, path, &mut errors);
        if config.retry.is_some() {
            errors.push(syn::Error::new_spanned(
                path,
                "`fallback` and `retry` cannot be combined yet: each retried attempt takes the arguments, so none are left to pass to the fallback; drop `retry`, or call the retried function from another annotated with `fallback`",
            ));
        }
    }

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
