//! The writer process of `tests/state_file_crash.rs`: saves state after state to one state
//! file as fast as it can, until it is killed. State `i` of the sequence is
//! [`tests::state_file::nth`]`(i)`; the writer starts at `FIRST`, prints `saved FIRST` on
//! stdout once that state is on disk, then goes on with `FIRST + 1`, `FIRST + 2`, ...
//!
//! Usage: `state_file_writer PATH FIRST`.

use std::io::Write as _;

use breaker_core::StateFile;
use tests::state_file::nth;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, first] = &args[..] else {
        eprintln!("usage: state_file_writer PATH FIRST");
        std::process::exit(2);
    };
    let Ok(first) = first.parse::<u32>() else {
        eprintln!("FIRST must be a number, not {first:?}");
        std::process::exit(2);
    };
    let file = StateFile::new(path);
    if let Err(e) = file.save(&nth(first)) {
        eprintln!("cannot save {path}: {e}");
        std::process::exit(1);
    }
    println!("saved {first}");
    let _ = std::io::stdout().flush();
    for i in first.wrapping_add(1).. {
        if let Err(e) = file.save(&nth(i)) {
            eprintln!("cannot save {path}: {e}");
            std::process::exit(1);
        }
    }
}
