//! The attribute's argument parser (`args.rs` + `validate.rs`, with `window.rs` and
//! `retry.rs`) on arbitrary token text.
//!
//! Bytes that are UTF-8 and lex as Rust tokens are the argument list of
//! `#[circuit_breaker(...)]`. The parser must not panic, and must either accept them
//! with the settings the documentation gives them, or report errors, each pointing at
//! tokens of the input (only a missing value at the very end may point at the attribute
//! itself). Which of the two is decided independently, from the argument table and the
//! restrictions in the documentation of `#[circuit_breaker]`
//! (`breaker-core/src/attribute.md`): a comma-separated list of known keys, each at most
//! once, the flags `log`, `shadow` and `count_calls` alone or `= true`/`= false`, the others `= value` with the value one
//! literal of the documented kind and range (durations by [`duration_spec`]) or a path;
//! and the rules between arguments: `backoff` and `max_cooldown`; `window` (a count or a
//! time), what needs it, what it excludes (`trip`) and what bounds it (`min_calls`;
//! `buckets`, which a time window needs dividing it); `slow_call` and `slow_rate`
//! together, `slow_failures` after them; `retry` and the `retry_*` arguments that need
//! it, `retry_max_delay` against `retry_delay` (or its default); `fallback` without
//! `retry`. A `fallback` naming the function itself needs the function, which the
//! argument list does not have: that rule is not decided here.

#![no_main]

use std::str::FromStr;

use breaker_fuzz::args;
use breaker_fuzz::duration_spec::{self, Expect};
use breaker_fuzz::errors::Errors;
use breaker_fuzz::validate::{self, Config};
use breaker_fuzz::window;
use libfuzzer_sys::fuzz_target;
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(tokens) = TokenStream::from_str(text) {
            check(text, tokens);
        }
    }
    // Every span of this input is gone: forget the text they pointed into, or the
    // fallback source map grows with every input.
    proc_macro2::extra::invalidate_current_thread_spans();
});

fn check(text: &str, tokens: TokenStream) {
    let mut errors = Errors::default();
    let parsed = args::parse(tokens.clone(), &mut errors);
    let config = validate::config(parsed, &mut errors);
    let reported = reported(errors.into_compile_errors());
    let places = Places::of(&tokens);
    for e in &reported {
        places.check(text, e);
    }
    // A path with generic arguments (`clock = a::<B, C>`) has commas outside any group,
    // which a plain split cannot tell from the list's: such inputs are checked for panics
    // and spans only.
    let generics = tokens
        .clone()
        .into_iter()
        .any(|t| matches!(&t, TokenTree::Punct(p) if p.as_char() == '<'));
    if generics {
        return;
    }
    match (expected(&tokens), reported.is_empty()) {
        (Ok(want), true) => {
            let got = Settings::of(&config);
            assert_eq!(got, want, "{text:?}: accepted with the wrong settings");
        }
        (Err(_), false) => {}
        (Ok(want), false) => panic!("{text:?}: refused with {reported:#?}, but it is valid: {want:?}"),
        (Err(why), true) => panic!("{text:?}: accepted, but {why}"),
    }
}

/// One `compile_error!` of the parser's output.
#[derive(Debug)]
struct Reported {
    start: Span,
    end: Span,
    message: String,
}

/// Splits the output back into its errors: `:: core :: compile_error ! { "message" }`,
/// the path at the error's first token, the message at its last.
fn reported(output: TokenStream) -> Vec<Reported> {
    let tokens: Vec<TokenTree> = output.into_iter().collect();
    assert_eq!(
        tokens.len() % 8,
        0,
        "not a list of compile_error! invocations: {tokens:?}"
    );
    tokens
        .chunks_exact(8)
        .map(|call| {
            assert_eq!(
                call[..7].iter().map(ToString::to_string).collect::<String>(),
                "::core::compile_error!"
            );
            let TokenTree::Group(body) = &call[7] else {
                panic!("compile_error! without its body: {call:?}")
            };
            assert_eq!(body.delimiter(), Delimiter::Brace);
            let message: syn::LitStr = syn::parse2(body.stream()).expect("the message is a string literal");
            let literal = body.stream().into_iter().next().expect("one literal");
            Reported {
                start: call[0].span(),
                end: literal.span(),
                message: message.value(),
            }
        })
        .collect()
}

fn is_call_site(span: Span) -> bool {
    format!("{span:?}") == format!("{:?}", Span::call_site())
}

/// Where the tokens of the input start and end (byte offsets), groups and their
/// delimiters included.
struct Places {
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Places {
    fn of(tokens: &TokenStream) -> Places {
        let mut places = Places {
            starts: Vec::new(),
            ends: Vec::new(),
        };
        places.add(tokens);
        places
    }

    fn add(&mut self, tokens: &TokenStream) {
        for token in tokens.clone() {
            let mut spans = vec![token.span()];
            if let TokenTree::Group(g) = &token {
                spans.extend([g.span_open(), g.span_close()]);
                self.add(&g.stream());
            }
            for s in spans {
                self.starts.push(s.byte_range().start);
                self.ends.push(s.byte_range().end);
            }
        }
    }

    /// The error points at tokens of the input: it starts where one starts and ends where
    /// one ends. Only syn's complaint about the end of the input ("unexpected end of
    /// input, ...", or "expected `,`" as a closure's parameter list runs out) may point at
    /// the attribute (the call site), since there is no token to point at; every message
    /// of the macro's own points at a token.
    fn check(&self, text: &str, e: &Reported) {
        assert!(!e.message.is_empty(), "{text:?}: an error without a message");
        if is_call_site(e.start) || is_call_site(e.end) {
            let at_the_end = e.message.starts_with("unexpected end of input")
                || (e.message.starts_with("expected `") && e.message.ends_with('`') && e.message.len() <= 16);
            assert!(
                is_call_site(e.start) && is_call_site(e.end) && at_the_end,
                "{text:?}: {e:?} points at no token"
            );
            return;
        }
        let (start, end) = (e.start.byte_range().start, e.end.byte_range().end);
        assert!(
            self.starts.contains(&start) && self.ends.contains(&end) && start < end,
            "{text:?}: {e:?} points at {start}..{end}, which is not a token's place"
        );
        // An error naming an argument points at that argument.
        for prefix in ["unknown argument `", "duplicate argument `"] {
            if let Some(rest) = e.message.strip_prefix(prefix) {
                let key = rest.split('`').next().unwrap_or_default();
                assert_eq!(text.get(start..end), Some(key), "{text:?}: {e:?}");
            }
        }
    }
}

/// The settings a configuration stands for, in plain values.
#[derive(Debug, PartialEq, Eq)]
struct Settings {
    trip: u32,
    cooldown: u32,
    probe_lease: u32,
    probes: u32,
    backoff: u32,
    max_cooldown: u32,
    name: Option<String>,
    log: bool,
    shadow: bool,
    count_calls: bool,
    history: Option<u32>,
    classify: Option<String>,
    refused: Option<String>,
    clock: Option<String>,
    fallback: Option<String>,
    krate: Option<String>,
    window: Option<Window>,
    retry: Option<Retry>,
}

/// A failure-rate window: `window` and its six settings.
#[derive(Debug, PartialEq, Eq)]
struct Window {
    size: Size,
    failure_rate: u32,
    /// As given: without it the policy's own default applies.
    min_calls: Option<u32>,
    /// `slow_call` (ms) and `slow_rate`, which come together.
    slow: Option<(u32, u32)>,
    /// `slow_failures = true` (with a slow-call rule).
    slow_failures: bool,
    /// A time window's `buckets`, as given.
    buckets: Option<u32>,
}

/// `window = N` or `window = "duration"`.
#[derive(Debug, PartialEq, Eq)]
enum Size {
    Calls(u32),
    /// In ms.
    Time(u32),
}

/// The retry ladder: `retry` and the `retry_*` settings, defaults applied.
#[derive(Debug, PartialEq, Eq)]
struct Retry {
    retries: u32,
    delay: u32,
    backoff: u32,
    max_delay: Option<u32>,
    /// The `Jitter` variant: `"full"` is `Full`.
    jitter: String,
    budget: Option<u32>,
    sleep: Option<String>,
}

impl Settings {
    fn of(c: &Config) -> Settings {
        let path = |p: &Option<syn::Path>| p.as_ref().map(|p| p.to_token_stream().to_string());
        Settings {
            trip: c.trip,
            cooldown: c.cooldown,
            probe_lease: c.probe_lease,
            probes: c.probes,
            backoff: c.backoff,
            max_cooldown: c.max_cooldown,
            name: c.name.as_ref().map(syn::LitStr::value),
            log: c.log,
            shadow: c.shadow,
            count_calls: c.count_calls,
            history: c.history,
            classify: path(&c.classify),
            refused: path(&c.refused),
            clock: path(&c.clock),
            fallback: path(&c.fallback),
            krate: path(&c.krate),
            window: c.window.as_ref().map(|w| Window {
                size: match w.size {
                    window::Size::Calls(n) => Size::Calls(n),
                    window::Size::Time(ms) => Size::Time(ms),
                },
                failure_rate: w.failure_rate,
                min_calls: w.min_calls,
                slow: w.slow,
                slow_failures: w.slow_failures,
                buckets: w.buckets,
            }),
            retry: c.retry.as_ref().map(|r| Retry {
                retries: r.retries,
                delay: r.delay,
                backoff: r.backoff,
                max_delay: r.max_delay,
                jitter: r.jitter.to_owned(),
                budget: r.budget,
                sleep: path(&r.sleep),
            }),
        }
    }
}

/// Every argument of the table.
const KEYS: [&str; 30] = [
    "trip",
    "cooldown",
    "probe_lease",
    "probes",
    "backoff",
    "max_cooldown",
    "window",
    "buckets",
    "failure_rate",
    "min_calls",
    "slow_call",
    "slow_rate",
    "slow_failures",
    "name",
    "log",
    "shadow",
    "count_calls",
    "history",
    "classify",
    "refused",
    "clock",
    "fallback",
    "crate",
    "retry",
    "retry_delay",
    "retry_backoff",
    "retry_max_delay",
    "retry_jitter",
    "retry_budget",
    "retry_sleep",
];

/// The settings the documentation gives these arguments, or why it refuses them.
fn expected(tokens: &TokenStream) -> Result<Settings, String> {
    let mut arguments: Vec<Vec<TokenTree>> = vec![Vec::new()];
    for token in tokens.clone() {
        match &token {
            TokenTree::Punct(p) if p.as_char() == ',' => arguments.push(Vec::new()),
            _ => arguments.last_mut().expect("never empty").push(token),
        }
    }
    // The empty list is fine, and so is one comma after the last argument.
    if arguments.len() == 1 && arguments[0].is_empty() {
        arguments.clear();
    } else if arguments.len() > 1 && arguments.last().is_some_and(Vec::is_empty) {
        arguments.pop();
    }

    let mut given: Vec<(String, Vec<TokenTree>)> = Vec::new();
    for argument in arguments {
        let Some((TokenTree::Ident(key), rest)) = argument.split_first() else {
            return Err(format!("an argument does not start with a key: {argument:?}"));
        };
        let key = key.to_string();
        if !KEYS.contains(&key.as_str()) {
            return Err(format!("`{key}` is not an argument"));
        }
        if given.iter().any(|(k, _)| *k == key) {
            return Err(format!("`{key}` is given twice"));
        }
        given.push((key, rest.to_vec()));
    }
    let value = |key: &str| given.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_slice());

    let mut s = Settings {
        trip: integer(value("trip"), "trip", 1..=255)?.unwrap_or(3),
        cooldown: duration(value("cooldown"), "cooldown")?.unwrap_or(30_000),
        probe_lease: 0,
        probes: integer(value("probes"), "probes", 1..=15)?.unwrap_or(1),
        backoff: integer(value("backoff"), "backoff", 1..=255)?.unwrap_or(1),
        max_cooldown: 0,
        name: None,
        log: flag(value("log"), "log")?,
        shadow: flag(value("shadow"), "shadow")?,
        count_calls: flag(value("count_calls"), "count_calls")?,
        history: integer(value("history"), "history", 1..=1024)?,
        classify: path(value("classify"), "classify")?,
        refused: path(value("refused"), "refused")?,
        clock: path(value("clock"), "clock")?,
        fallback: path(value("fallback"), "fallback")?,
        krate: path(value("crate"), "crate")?,
        window: None,
        retry: None,
    };
    s.probe_lease = duration(value("probe_lease"), "probe_lease")?.unwrap_or(s.cooldown);
    let max_cooldown = duration(value("max_cooldown"), "max_cooldown")?;
    s.max_cooldown = max_cooldown.unwrap_or(s.cooldown);
    if let Some(v) = value("name") {
        let name = string(v).ok_or("`name` is not a string literal")?;
        if name.is_empty() {
            return Err("`name` is empty".into());
        }
        s.name = Some(name);
    }
    match (max_cooldown, s.backoff) {
        (Some(max), _) if max < s.cooldown => return Err("`max_cooldown` is shorter than `cooldown`".into()),
        (Some(_), 1) => return Err("`max_cooldown` without `backoff` above 1".into()),
        (None, b) if b > 1 => return Err("`backoff` above 1 without `max_cooldown`".into()),
        _ => {}
    }
    s.window = failure_rate_window(&value)?;
    s.retry = retry_ladder(&value)?;
    if s.fallback.is_some() && s.retry.is_some() {
        return Err("`fallback` together with `retry`".into());
    }
    Ok(s)
}

/// A flag (`log`, `shadow`, `count_calls`): absent is off; alone, `= true` or `= false`.
fn flag(v: Option<&[TokenTree]>, key: &str) -> Result<bool, String> {
    match v {
        None => Ok(false),
        Some([]) => Ok(true),
        Some([TokenTree::Punct(eq), TokenTree::Ident(b)]) if eq.as_char() == '=' && (b == "true" || b == "false") => {
            Ok(b == "true")
        }
        Some(_) => Err(format!("`{key}` is neither a flag nor `= true` / `= false`")),
    }
}

/// `window` and the settings that belong to it, as the table and the restrictions say.
fn failure_rate_window<'a>(value: &impl Fn(&str) -> Option<&'a [TokenTree]>) -> Result<Option<Window>, String> {
    let size = match value("window") {
        None => None,
        Some(v) => Some(match literal(v) {
            Some(syn::Lit::Int(_)) => Size::Calls(integer(Some(v), "window", 1..=1008)?.expect("given")),
            Some(syn::Lit::Str(_)) => {
                let ms = duration(Some(v), "window")?.expect("given");
                if ms < 1_000 {
                    return Err(format!("`window` = {ms} ms is shorter than \"1s\""));
                }
                if ms % 10 != 0 {
                    return Err(format!("`window` = {ms} ms is not a whole number of 10 ms"));
                }
                Size::Time(ms)
            }
            _ => return Err("`window` is neither an integer literal nor a duration string".into()),
        }),
    };
    let failure_rate = integer(value("failure_rate"), "failure_rate", 1..=100)?;
    let min_calls = integer(value("min_calls"), "min_calls", 1..=10_230)?;
    let slow_call = duration(value("slow_call"), "slow_call")?;
    let slow_rate = integer(value("slow_rate"), "slow_rate", 1..=100)?;
    let buckets = integer(value("buckets"), "buckets", 1..=240)?;
    let slow_failures = match value("slow_failures") {
        None => None,
        Some([TokenTree::Punct(eq), TokenTree::Ident(b)]) if eq.as_char() == '=' && (b == "true" || b == "false") => {
            Some(b == "true")
        }
        Some(_) => return Err("`slow_failures` is neither `= true` nor `= false`".into()),
    };
    let Some(size) = size else {
        for key in [
            "failure_rate",
            "min_calls",
            "slow_call",
            "slow_rate",
            "slow_failures",
            "buckets",
        ] {
            if value(key).is_some() {
                return Err(format!("`{key}` without `window`"));
            }
        }
        return Ok(None);
    };
    if value("trip").is_some() {
        return Err("`trip` together with `window`".into());
    }
    let slow = match (slow_call, slow_rate) {
        (Some(call), Some(rate)) => Some((call, rate)),
        (None, None) => None,
        (Some(_), None) => return Err("`slow_call` without `slow_rate`".into()),
        (None, Some(_)) => return Err("`slow_rate` without `slow_call`".into()),
    };
    if slow_failures.is_some() && slow_call.is_none() {
        return Err("`slow_failures` without `slow_call`".into());
    }
    if let (Size::Calls(n), Some(min)) = (&size, min_calls) {
        if min > *n {
            return Err(format!("`min_calls` = {min} is more than `window` = {n} holds"));
        }
    }
    match (&size, buckets) {
        (Size::Calls(_), Some(_)) => return Err("`buckets` beside a count window".into()),
        (Size::Time(ms), Some(b)) if ms % b != 0 => return Err(format!("`buckets` = {b} does not divide {ms} ms")),
        (Size::Time(_), Some(b)) if min_calls.is_some_and(|min| min > b * 1023) => {
            return Err(format!("`min_calls` is more than {b} buckets count"))
        }
        _ => {}
    }
    Ok(Some(Window {
        size,
        failure_rate: failure_rate.unwrap_or(50),
        min_calls,
        slow_failures: slow.is_some() && slow_failures == Some(true),
        slow,
        buckets,
    }))
}

/// `retry` and the `retry_*` settings, as the table and the restrictions say.
fn retry_ladder<'a>(value: &impl Fn(&str) -> Option<&'a [TokenTree]>) -> Result<Option<Retry>, String> {
    let retries = integer(value("retry"), "retry", 1..=255)?;
    let delay = duration(value("retry_delay"), "retry_delay")?;
    let backoff = integer(value("retry_backoff"), "retry_backoff", 1..=255)?;
    let max_delay = duration(value("retry_max_delay"), "retry_max_delay")?;
    let jitter = match value("retry_jitter") {
        None => None,
        Some(v) => Some(match string(v).as_deref() {
            Some("none") => "None",
            Some("full") => "Full",
            Some("equal") => "Equal",
            Some("decorrelated") => "Decorrelated",
            _ => return Err("`retry_jitter` is not one of the four strings".into()),
        }),
    };
    let budget = duration(value("retry_budget"), "retry_budget")?;
    let sleep = path(value("retry_sleep"), "retry_sleep")?;
    let Some(retries) = retries else {
        for key in KEYS.iter().filter(|k| k.starts_with("retry_")) {
            if value(key).is_some() {
                return Err(format!("`{key}` without `retry`"));
            }
        }
        return Ok(None);
    };
    // `retry_max_delay` caps `retry_delay` as given, or its default.
    let delay = delay.unwrap_or(100);
    if max_delay.is_some_and(|max| max < delay) {
        return Err("`retry_max_delay` is shorter than `retry_delay`".into());
    }
    Ok(Some(Retry {
        retries,
        delay,
        backoff: backoff.unwrap_or(2),
        max_delay,
        jitter: jitter.unwrap_or("None").to_owned(),
        budget,
        sleep,
    }))
}

/// `= <one literal>`: that literal.
fn literal(value: &[TokenTree]) -> Option<syn::Lit> {
    match value {
        [TokenTree::Punct(eq), TokenTree::Literal(lit)] if eq.as_char() == '=' => Some(syn::Lit::new(lit.clone())),
        _ => None,
    }
}

/// A string literal's value.
fn string(value: &[TokenTree]) -> Option<String> {
    match literal(value)? {
        syn::Lit::Str(s) if s.suffix().is_empty() => Some(s.value()),
        _ => None,
    }
}

/// The suffixes an integer literal may have in Rust: its type.
const INTEGER_TYPES: [&str; 12] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
];

fn integer(
    value: Option<&[TokenTree]>,
    key: &str,
    range: std::ops::RangeInclusive<u32>,
) -> Result<Option<u32>, String> {
    let Some(value) = value else { return Ok(None) };
    let Some(syn::Lit::Int(int)) = literal(value) else {
        return Err(format!("`{key}` is not an integer literal"));
    };
    if !int.suffix().is_empty() && !INTEGER_TYPES.contains(&int.suffix()) {
        return Err(format!("`{key}` = {int} has a suffix that is not an integer type"));
    }
    match int.base10_parse::<u32>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(format!("`{key}` = {int} is out of range")),
    }
}

fn duration(value: Option<&[TokenTree]>, key: &str) -> Result<Option<u32>, String> {
    let Some(value) = value else { return Ok(None) };
    let text = string(value).ok_or_else(|| format!("`{key}` is not a string literal"))?;
    match duration_spec::decide(&text) {
        Expect::Millis(ms) => Ok(Some(ms)),
        other => Err(format!("`{key}` = {text:?} is {other:?}")),
    }
}

/// `= <path>`, as an expression path without attributes or a `<T as Trait>` part.
fn path(value: Option<&[TokenTree]>, key: &str) -> Result<Option<String>, String> {
    let Some(value) = value else { return Ok(None) };
    let not_a_path = || format!("`{key}` is not a path");
    let [TokenTree::Punct(eq), path @ ..] = value else {
        return Err(not_a_path());
    };
    if eq.as_char() != '=' {
        return Err(not_a_path());
    }
    let path: TokenStream = path.iter().cloned().collect();
    match syn::parse2::<syn::ExprPath>(path) {
        // `try` is a reserved word: a path with a `try` segment is refused, as the
        // restrictions say (syn alone would take `try::x` for one, for the old `try!`).
        Ok(p) if p.path.segments.iter().any(|s| s.ident == "try") => Err(not_a_path()),
        Ok(p) if p.attrs.is_empty() && p.qself.is_none() => Ok(Some(p.path.to_token_stream().to_string())),
        _ => Err(not_a_path()),
    }
}
