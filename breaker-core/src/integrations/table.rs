//! The registry as an aligned text table: the host's counterpart of `breaker-embedded`'s
//! `log_registry`.

use core::fmt::{self, Write};

use crate::display::Buf;
use crate::registry::{entries, Entry, Report};

/// Every breaker of a registry as an aligned table, one row per breaker, each row taken at
/// one reading of that breaker's own clock with the pure oracle (printing never takes a
/// probe slot). It is `Display`; [`print_table`] prints the whole registry on stdout.
///
/// ```text
/// breaker      state                            allow  failures  skips  trips  probes  lease expiries
/// app::fetch   closed                           yes           0      0      0       0               0
/// radio        open, cooling down (202ms left)  no            3      1      1       0               0
/// ```
///
/// Rows follow the registry's order (link order: not sorted). A breaker whose state text
/// grows between the two passes (widths first, then rows) is printed in full, only out of
/// line.
///
/// ```
/// use breaker_core::registry;
///
/// let text = registry::table().to_string();
/// assert!(text.starts_with("breaker"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Table<'a> {
    entries: &'a [Entry],
}

/// The whole registry as a [`Table`].
pub fn table() -> Table<'static> {
    Table::new(entries())
}

/// Prints the whole registry as a [`Table`] on stdout (feature `std`).
#[cfg(feature = "std")]
pub fn print_table() {
    std::print!("{}", table());
}

const HEADERS: [&str; 8] = [
    "breaker",
    "state",
    "allow",
    "failures",
    "skips",
    "trips",
    "probes",
    "lease expiries",
];

impl<'a> Table<'a> {
    /// A table of these entries (the registry's are [`table`]'s).
    pub const fn new(entries: &'a [Entry]) -> Table<'a> {
        Table { entries }
    }

    /// The entries, one row each.
    pub const fn entries(&self) -> &'a [Entry] {
        self.entries
    }

    fn write_row(f: &mut fmt::Formatter<'_>, widths: &[usize; 2], r: &Report) -> fmt::Result {
        let c = &r.counters;
        let mut state = Buf::new();
        write!(state, "{}", r.state)?;
        writeln!(
            f,
            "{:<name$}  {:<state_w$}  {:<5}  {:>8}  {:>5}  {:>5}  {:>6}  {:>14}",
            r.name,
            state.as_str(),
            if r.would_allow { "yes" } else { "no" },
            c.failures,
            c.skips,
            c.trips,
            c.probes,
            c.lease_expiries,
            name = widths[0],
            state_w = widths[1],
        )
    }
}

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut widths = [HEADERS[0].len(), HEADERS[1].len()];
        for entry in self.entries {
            let r = entry.report();
            let mut state = Buf::new();
            write!(state, "{}", r.state)?;
            widths[0] = widths[0].max(r.name.chars().count());
            widths[1] = widths[1].max(state.as_str().len());
        }
        writeln!(
            f,
            "{:<name$}  {:<state_w$}  {}  {}  {}  {}  {}  {}",
            HEADERS[0],
            HEADERS[1],
            HEADERS[2],
            HEADERS[3],
            HEADERS[4],
            HEADERS[5],
            HEADERS[6],
            HEADERS[7],
            name = widths[0],
            state_w = widths[1],
        )?;
        for entry in self.entries {
            Table::write_row(f, &widths, &entry.report())?;
        }
        Ok(())
    }
}
