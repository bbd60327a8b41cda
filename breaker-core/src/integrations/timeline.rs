//! A breaker's recent transitions drawn as an SVG timeline (feature `svg`): the phases as a
//! coloured band, each opening's cooldown as a bracket above it (so that exponential backoff
//! shows as windows growing 2m, 4m, 8m), failures and recoveries marked below it.
//!
//! [`Timeline`] is `Display`: it writes one self-contained `<svg>` element (no scripts, no
//! external styles or fonts) into any `fmt::Write`, with no allocation, so a status page,
//! a report written at the end of a run or a firmware's web server can all draw the same
//! picture. The example service's status page shows it for every registered breaker
//! ([`Report::timeline`]); the demos write it to a file.
//!
//! ```
//! use breaker_core::{Duration, Instant, Phase, Reason, Timeline, Transition};
//!
//! let opened = Transition {
//!     from: Phase::Closed,
//!     to: Phase::Open,
//!     why: Reason::Strikes,
//!     at: Instant::from_millis(1_000),
//!     cooldown: Duration::from_secs(30),
//! };
//! let svg = Timeline::new([opened], Instant::from_millis(11_000)).titled("uplink").to_string();
//! assert!(svg.starts_with("<svg "));
//! assert!(svg.contains(r#"data-phase="open""#));
//! assert!(svg.contains(">30s</text>")); // the cooldown's bracket
//! assert!(svg.ends_with("</svg>"));
//! ```

use core::fmt::{self, Write};

use crate::registry::Report;
use crate::{Instant, Phase, Reason, Recent, State, Transition};

const WIDTH: u32 = 720;
const HEIGHT: u32 = 112;
const X0: u32 = 10;
const PLOT: u32 = WIDTH - 2 * X0;
const BAND_Y: u32 = 38;
const BAND_H: u32 = 24;

const CLOSED: &str = "#2e7d32";
const OPEN: &str = "#c62828";
const HALF_OPEN: &str = "#f9a825";
const FORCED: &str = "#6d1b1b";
const PENDING: &str = "#ef9a9a";
const INK: &str = "#333";

/// A breaker's transitions as an SVG timeline, from a little before the oldest to now
/// (and, for an open breaker whose state is given, on to the end of its cooldown). See
/// [`crate::timeline`].
///
/// `transitions` is anything that iterates [`Transition`]s oldest first and can be
/// iterated more than once: a [`Recent`] reading of a [`History`](crate::History), or
/// `slice.iter().copied()`. Instants are placed by their distance before `now`, so the
/// counter's wrap does not matter.
#[derive(Clone, Debug)]
pub struct Timeline<'a, I> {
    transitions: I,
    now: Instant,
    state: Option<State>,
    shadow: bool,
    title: &'a str,
}

impl<I: IntoIterator<Item = Transition> + Clone> Timeline<'static, I> {
    /// The timeline of `transitions` (oldest first), ending at `now`.
    pub fn new(transitions: I, now: Instant) -> Timeline<'static, I> {
        Timeline {
            transitions,
            now,
            state: None,
            shadow: false,
            title: "",
        }
    }
}

impl<'a, I: IntoIterator<Item = Transition> + Clone> Timeline<'a, I> {
    /// The state at `now`: the band's last stretch shows its phase, and an open breaker's
    /// remaining cooldown is drawn ahead of now, up to the next probe.
    pub fn with_state(self, state: State) -> Timeline<'a, I> {
        Timeline {
            state: Some(state),
            ..self
        }
    }

    /// Whether the breaker runs in [shadow mode](crate::SharedBreaker#shadow-mode): the
    /// drawing says so (`data-shadow="true"` on the `svg` element, and `shadow mode`
    /// after the title), since an open stretch then refused nothing.
    pub fn with_shadow(self, shadow: bool) -> Timeline<'a, I> {
        Timeline { shadow, ..self }
    }

    /// A title printed above the band (a breaker's name, say), escaped for XML.
    pub fn titled<'b>(self, title: &'b str) -> Timeline<'b, I> {
        Timeline {
            transitions: self.transitions,
            now: self.now,
            state: self.state,
            shadow: self.shadow,
            title,
        }
    }

    fn transitions(&self) -> I::IntoIter {
        self.transitions.clone().into_iter()
    }
}

impl Report {
    /// This report's history as a [`Timeline`] at its `now`, with its state, its shadow
    /// mode and its name (feature `svg`); a breaker that keeps no history draws as one
    /// stretch of its phase.
    pub fn timeline(&self) -> Timeline<'static, Recent<'static>> {
        Timeline {
            transitions: self.history.unwrap_or_default(),
            now: self.now,
            state: Some(self.state),
            shadow: self.shadow,
            title: self.name,
        }
    }
}

/// Milliseconds on the timeline's axis, from its left edge.
struct Axis {
    /// From the left edge to the right edge.
    span: u64,
}

impl Axis {
    fn x(&self, ms: u64) -> u64 {
        u64::from(X0) + ms.min(self.span) * u64::from(PLOT) / self.span
    }
}

fn colour(phase: Phase, forced: bool) -> &'static str {
    match phase {
        Phase::Closed => CLOSED,
        Phase::Open if forced => FORCED,
        Phase::Open => OPEN,
        Phase::HalfOpen => HALF_OPEN,
    }
}

/// A stretch of time in at most two units: `348ms`, `12s`, `4m 10s`, `2h 5m`.
struct Span(u64);

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        let s = ms / 1000;
        match s {
            0 => write!(f, "{ms}ms"),
            1..60 => write!(f, "{s}s"),
            60..3600 if s.is_multiple_of(60) => write!(f, "{}m", s / 60),
            60..3600 => write!(f, "{}m {}s", s / 60, s % 60),
            _ if s % 3600 / 60 == 0 => write!(f, "{}h", s / 3600),
            _ => write!(f, "{}h {}m", s / 3600, s % 3600 / 60),
        }
    }
}

/// Text with `&`, `<`, `>`, `"` and `'` escaped, for an SVG's text and attributes.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&#39;")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

impl<I: IntoIterator<Item = Transition> + Clone> fmt::Display for Timeline<'_, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let now = self.now;
        let ago = |t: &Transition| u64::from(now.since(t.at).as_millis());
        let oldest = self.transitions().map(|t| ago(&t)).max();
        let last = self.transitions().last();
        let phase = self.state.map_or(last.map_or(Phase::Closed, |t| t.to), |s| s.phase());
        // Read only when nothing is recorded: then only a state can say forced.
        let forced_now = matches!(self.state, Some(State::Open { forced: true, .. }));
        let ahead = match self.state {
            Some(State::Open {
                remaining,
                forced: false,
            }) => u64::from(remaining.as_millis()),
            _ => 0,
        };
        // A little room left of the oldest transition, and at least a second before now.
        let recorded = oldest.unwrap_or(0);
        let past = (recorded + (recorded + ahead) / 20).max(1000);
        let axis = Axis { span: past + ahead };
        let count = self.transitions().count();

        write!(
            f,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="breaker-timeline" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11" data-phase="{}" data-transitions="{count}"{} role="img" aria-label="transitions of {}">"#,
            phase.key(),
            if self.shadow { r#" data-shadow="true""# } else { "" },
            Escaped(self.title)
        )?;
        write!(f, r##"<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>"##)?;
        if !self.title.is_empty() {
            write!(
                f,
                r#"<text x="{X0}" y="13" font-weight="bold" fill="{INK}">{}{}</text>"#,
                Escaped(self.title),
                if self.shadow { " (shadow mode)" } else { "" }
            )?;
        } else if self.shadow {
            write!(f, r#"<text x="{X0}" y="13" fill="{INK}">shadow mode</text>"#)?;
        }
        write!(
            f,
            r#"<text x="{}" y="13" text-anchor="end" fill="{INK}">{count} transition{} over the last {}</text>"#,
            WIDTH - X0,
            if count == 1 { "" } else { "s" },
            Span(past)
        )?;

        // The band: one stretch per phase, from the phase before the oldest transition.
        let mut from_x = u64::from(X0);
        let mut current = self.transitions().next().map_or(phase, |t| t.from);
        let mut forced = false;
        for t in self.transitions() {
            let x = axis.x(past - ago(&t).min(past)).max(from_x);
            band(f, from_x, x, colour(current, forced), current)?;
            from_x = x;
            current = t.to;
            forced = t.why == Reason::ForcedOpen;
        }
        let now_x = axis.x(past);
        if last.is_none() {
            current = phase;
            forced = forced_now;
        }
        band(f, from_x, now_x.max(from_x), colour(current, forced), current)?;
        if ahead > 0 {
            let end = axis.x(axis.span);
            write!(
                f,
                r#"<rect class="pending" x="{now_x}" y="{BAND_Y}" width="{}" height="{BAND_H}" fill="{PENDING}"><title>cooling down: the next call probes in {}</title></rect>"#,
                end - now_x,
                Span(ahead)
            )?;
        }

        // Above the band, each opening's cooldown: the backoff windows.
        for t in self
            .transitions()
            .filter(|t| t.to == Phase::Open && t.cooldown.as_millis() > 0)
        {
            let start = axis.x(past - ago(&t).min(past));
            let end = axis.x(past - ago(&t).min(past) + u64::from(t.cooldown.as_millis()));
            write!(
                f,
                r#"<g class="cooldown"><title>cooldown {}</title><path d="M{start} 34V30H{end}V34" fill="none" stroke="{OPEN}" stroke-width="1.5"/>"#,
                Span(u64::from(t.cooldown.as_millis()))
            )?;
            if end - start >= 28 {
                write!(
                    f,
                    r#"<text x="{}" y="27" text-anchor="middle" fill="{OPEN}">{}</text>"#,
                    (start + end) / 2,
                    Span(u64::from(t.cooldown.as_millis()))
                )?;
            }
            f.write_str("</g>")?;
        }

        // Below it, what happened: a cross for each opening, a ring for each closing.
        for t in self.transitions() {
            let x = axis.x(past - ago(&t).min(past));
            let (class, mark) = match (t.to, t.why) {
                (Phase::Open, Reason::ForcedOpen) => ("forced", MarkShape::Square(FORCED)),
                (Phase::Open, _) => ("failure", MarkShape::Cross),
                (Phase::Closed, Reason::Recovered) => ("recovery", MarkShape::Ring(CLOSED)),
                (Phase::Closed, _) => ("reset", MarkShape::Ring("#777")),
                (Phase::HalfOpen, _) => ("probe", MarkShape::Tick),
            };
            write!(
                f,
                r#"<g class="{class}"><title>{} → {}: {}, {} ago</title>"#,
                t.from,
                t.to,
                t.why,
                Span(ago(&t))
            )?;
            mark.draw(f, x)?;
            f.write_str("</g>")?;
        }

        // The axis: where the picture starts, now, and the next probe.
        write!(
            f,
            r#"<text x="{X0}" y="90" fill="{INK}">{} ago</text><path d="M{now_x} 32V78" stroke="{INK}" stroke-dasharray="3 2"/>"#,
            Span(past)
        )?;
        let label_x = if ahead > 0 { now_x - 3 } else { now_x };
        write!(
            f,
            r#"<text x="{label_x}" y="90" text-anchor="end" fill="{INK}">now</text>"#
        )?;
        if ahead > 0 {
            write!(
                f,
                r#"<text x="{}" y="90" text-anchor="end" fill="{OPEN}">next probe in {}</text>"#,
                WIDTH - X0,
                Span(ahead)
            )?;
        }

        // The legend.
        let mut x = X0;
        for (label, fill) in [
            ("closed", CLOSED),
            ("open", OPEN),
            ("half-open", HALF_OPEN),
            ("forced open", FORCED),
        ] {
            write!(
                f,
                r#"<rect x="{x}" y="99" width="10" height="10" fill="{fill}"/><text x="{}" y="108" fill="{INK}">{label}</text>"#,
                x + 14
            )?;
            x += 24 + 7 * label.len() as u32;
        }
        write!(
            f,
            r#"<path d="M{x} 108V102H{} V108" fill="none" stroke="{OPEN}" stroke-width="1.5"/><text x="{}" y="108" fill="{INK}">cooldown (backoff window)</text>"#,
            x + 14,
            x + 20
        )?;
        x += 190;
        write!(
            f,
            r#"<path d="M{x} 100l8 8m0 -8l-8 8" stroke="{OPEN}" stroke-width="2"/><text x="{}" y="108" fill="{INK}">opened</text>"#,
            x + 13
        )?;
        x += 62;
        write!(
            f,
            r#"<circle cx="{}" cy="104" r="4" fill="none" stroke="{CLOSED}" stroke-width="2"/><text x="{}" y="108" fill="{INK}">recovered</text>"#,
            x + 4,
            x + 13
        )?;
        f.write_str("</svg>")
    }
}

fn band(f: &mut fmt::Formatter<'_>, from: u64, to: u64, fill: &str, phase: Phase) -> fmt::Result {
    if to <= from {
        return Ok(());
    }
    write!(
        f,
        r#"<rect class="{}" x="{from}" y="{BAND_Y}" width="{}" height="{BAND_H}" fill="{fill}"/>"#,
        phase.key(),
        to - from
    )
}

enum MarkShape {
    Cross,
    Ring(&'static str),
    Square(&'static str),
    Tick,
}

impl MarkShape {
    fn draw(&self, f: &mut fmt::Formatter<'_>, x: u64) -> fmt::Result {
        match self {
            MarkShape::Cross => write!(
                f,
                r#"<path d="M{} 66l8 8m0 -8l-8 8" stroke="{OPEN}" stroke-width="2"/>"#,
                x.saturating_sub(4)
            ),
            MarkShape::Ring(stroke) => write!(
                f,
                r#"<circle cx="{x}" cy="70" r="4" fill="none" stroke="{stroke}" stroke-width="2"/>"#
            ),
            MarkShape::Square(fill) => write!(
                f,
                r#"<rect x="{}" y="66" width="8" height="8" fill="{fill}"/>"#,
                x.saturating_sub(4)
            ),
            MarkShape::Tick => write!(f, r#"<path d="M{x} 64V76" stroke="{HALF_OPEN}" stroke-width="2"/>"#),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Duration;
    use std::string::{String, ToString};
    use std::vec::Vec;

    fn at(ms: u32) -> Instant {
        Instant::from_millis(ms)
    }

    /// A transition at `at_s` seconds with its cooldown.
    fn transition(from: Phase, to: Phase, why: Reason, at_s: u32, cooldown: Duration) -> Transition {
        Transition {
            from,
            to,
            why,
            at: at(at_s * 1000),
            cooldown,
        }
    }

    /// The Squad run's shape: opened with a 2m cooldown, probed, failed (4m), probed,
    /// failed (8m), probed, recovered.
    fn backoff_run() -> Vec<Transition> {
        let t = |from, to, why, at_s, cooldown_m| transition(from, to, why, at_s, Duration::from_mins(cooldown_m));
        use Phase::*;
        std::vec![
            t(Closed, Open, Reason::Strikes, 60, 2),
            t(Open, HalfOpen, Reason::CooldownElapsed, 180, 0),
            t(HalfOpen, Open, Reason::ProbeFailed, 180, 4),
            t(Open, HalfOpen, Reason::CooldownElapsed, 420, 0),
            t(HalfOpen, Open, Reason::ProbeFailed, 420, 8),
            t(Open, HalfOpen, Reason::CooldownElapsed, 900, 0),
            t(HalfOpen, Closed, Reason::Recovered, 900, 0),
        ]
    }

    fn count(svg: &str, needle: &str) -> usize {
        svg.matches(needle).count()
    }

    #[test]
    fn the_backoff_windows_grow_and_failures_and_the_recovery_are_marked() {
        let run = backoff_run();
        let svg = Timeline::new(run.iter().copied(), at(1_000_000))
            .titled("squad")
            .to_string();
        assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" class="breaker-timeline""#));
        assert!(svg.ends_with("</svg>"));
        assert!(svg.contains(r#"data-phase="closed" data-transitions="7""#), "{svg}");
        assert_eq!(count(&svg, r#"<g class="cooldown">"#), 3);
        for label in [">2m</text>", ">4m</text>", ">8m</text>"] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
        assert_eq!(count(&svg, r#"<g class="failure">"#), 3);
        assert_eq!(count(&svg, r#"<g class="recovery">"#), 1);
        assert_eq!(count(&svg, r#"<g class="probe">"#), 3);
        assert!(svg.contains("half-open → closed: recovered, 1m 40s ago"), "{svg}");
        // Band stretches: closed, then open and half-open in turn, closed again.
        let stretches: Vec<&str> = svg
            .split(r#"<rect class=""#)
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect();
        // (Each probe here answered in the instant it was let through: no half-open stretch.)
        assert_eq!(stretches, ["closed", "open", "open", "open", "closed"]);
    }

    /// The three reviewed drawings: the backoff run, closed again; a shadowed breaker
    /// open a second time, waiting for its next probe; a short opening (its bracket too
    /// narrow for a label), then a forced one, over an hour.
    fn drawings() -> [(&'static str, String, &'static str); 3] {
        let run = backoff_run();
        let waiting = State::Open {
            remaining: Duration::from_secs(120),
            forced: false,
        };
        let t = |from, to, why, at_s, cooldown_s| transition(from, to, why, at_s, Duration::from_secs(cooldown_s));
        use Phase::*;
        let forced = [
            t(Closed, Open, Reason::Strikes, 600, 5),
            t(Open, HalfOpen, Reason::CooldownElapsed, 605, 0),
            t(HalfOpen, Closed, Reason::Recovered, 606, 0),
            t(Closed, Open, Reason::ForcedOpen, 2_400, 0),
        ];
        let forced_state = State::Open {
            remaining: Duration::ZERO,
            forced: true,
        };
        [
            (
                "backoff.svg",
                Timeline::new(run.iter().copied(), at(1_000_000))
                    .titled("squad")
                    .to_string(),
                include_str!("timeline/backoff.svg"),
            ),
            (
                "waiting.svg",
                Timeline::new(run[..3].iter().copied(), at(300_000))
                    .with_state(waiting)
                    .with_shadow(true)
                    .titled("uplink <eu>")
                    .to_string(),
                include_str!("timeline/waiting.svg"),
            ),
            (
                "forced.svg",
                Timeline::new(forced.iter().copied(), at(4_230_000))
                    .with_state(forced_state)
                    .titled("radio")
                    .to_string(),
                include_str!("timeline/forced.svg"),
            ),
        ]
    }

    /// Every coordinate, width and label of three drawings, against copies reviewed in a
    /// browser (the tests around this one check what each part means; this one, where it
    /// is drawn). After a deliberate change to the drawing, `BREAKER_BLESS_SVG=1 cargo test
    /// -p breaker-core --features svg --lib timeline` writes the new drawings over the
    /// copies: open them, review them, commit them.
    #[test]
    fn the_drawings_are_the_reviewed_ones() {
        for (file, svg, reviewed) in drawings() {
            if std::env::var_os("BREAKER_BLESS_SVG").is_some() {
                let path = std::format!("{}/src/integrations/timeline/{file}", env!("CARGO_MANIFEST_DIR"));
                std::fs::write(path, &svg).unwrap();
            } else {
                assert_eq!(
                    svg, reviewed,
                    "{file} differs from the reviewed drawing (see this test's doc)"
                );
            }
        }
    }

    #[test]
    fn a_shadowed_breaker_says_so() {
        let run = &backoff_run()[..1];
        let live = Timeline::new(run.iter().copied(), at(90_000))
            .titled("squad")
            .to_string();
        assert!(!live.contains("shadow"), "{live}");
        let shadowed = Timeline::new(run.iter().copied(), at(90_000))
            .with_shadow(true)
            .titled("squad")
            .to_string();
        assert!(
            shadowed.contains(r#"data-transitions="1" data-shadow="true""#),
            "{shadowed}"
        );
        assert!(shadowed.contains(">squad (shadow mode)</text>"), "{shadowed}");
    }

    #[test]
    fn an_open_breaker_draws_its_wait_up_to_the_next_probe() {
        let run = &backoff_run()[..1];
        let state = State::Open {
            remaining: Duration::from_secs(90),
            forced: false,
        };
        let svg = Timeline::new(run.iter().copied(), at(90_000))
            .with_state(state)
            .to_string();
        assert!(svg.contains(r#"data-phase="open""#));
        assert!(svg.contains(r#"<rect class="pending""#));
        assert!(svg.contains("next probe in 1m 30s"), "{svg}");
    }

    #[test]
    fn nothing_recorded_draws_the_phase_alone_and_titles_are_escaped() {
        let state = State::Open {
            remaining: Duration::ZERO,
            forced: true,
        };
        let svg = Timeline::new([], at(5))
            .with_state(state)
            .titled("a<b & \"c\"")
            .to_string();
        assert!(svg.contains(r#"data-phase="open" data-transitions="0""#));
        assert!(svg.contains(&std::format!(r#"<rect class="open" x="{X0}""#)), "{svg}");
        assert!(svg.contains(FORCED));
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(!svg.contains("a<b"));
    }

    #[test]
    fn a_forced_open_breaker_with_nothing_recorded_is_drawn_forced_across_the_axis() {
        let state = State::Open {
            remaining: Duration::ZERO,
            forced: true,
        };
        let svg = Timeline::new([], at(5)).with_state(state).to_string();
        // A second at least, all of it the forced phase: from X0 over the whole plot.
        let band = std::format!(
            r#"<rect class="open" x="{X0}" y="{BAND_Y}" width="{PLOT}" height="{BAND_H}" fill="{FORCED}"/>"#
        );
        assert!(svg.contains(&band), "{svg}");
    }

    #[test]
    fn stretches_are_as_wide_as_their_share_of_the_axis() {
        // Opened 30 s ago: the axis covers 31.5 s (a twentieth more than the oldest
        // transition), the closed stretch its first 1.5 s (33 of 700 units, rounded
        // down), the open one the rest.
        let run = &backoff_run()[..1];
        let svg = Timeline::new(run.iter().copied(), at(90_000)).to_string();
        let closed = std::format!(
            r#"<rect class="closed" x="{X0}" y="{BAND_Y}" width="33" height="{BAND_H}" fill="{CLOSED}"/>"#
        );
        let open = std::format!(
            r#"<rect class="open" x="{}" y="{BAND_Y}" width="{}" height="{BAND_H}" fill="{OPEN}"/>"#,
            X0 + 33,
            PLOT - 33
        );
        assert!(svg.contains(&closed), "{svg}");
        assert!(svg.contains(&open), "{svg}");
    }

    #[test]
    fn the_legend_sets_each_entry_after_the_last_ones_label() {
        // A swatch and 14 units to its label, then 10 more and 7 a character.
        let svg = Timeline::new([], at(5)).to_string();
        for (x, fill, label) in [
            (10, CLOSED, "closed"),
            (76, OPEN, "open"),
            (128, HALF_OPEN, "half-open"),
            (215, FORCED, "forced open"),
        ] {
            let entry = std::format!(
                r#"<rect x="{x}" y="99" width="10" height="10" fill="{fill}"/><text x="{}" y="108" fill="{INK}">{label}</text>"#,
                x + 14
            );
            assert!(svg.contains(&entry), "{entry} in {svg}");
        }
    }

    #[test]
    fn spans_print_in_two_units_at_most() {
        let cases = [
            (0, "0ms"),
            (348, "348ms"),
            (12_000, "12s"),
            (120_000, "2m"),
            (250_000, "4m 10s"),
            (3_600_000, "1h"),
            (3_630_000, "1h"),
            (7_500_000, "2h 5m"),
        ];
        for (ms, text) in cases {
            assert_eq!(Span(ms).to_string(), text);
        }
        let mut out = String::new();
        write!(out, "{}", Escaped("'")).unwrap();
        assert_eq!(out, "&#39;");
    }
}
