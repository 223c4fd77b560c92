//! One record per benchmark in a benchmark harness (criterion, divan, or a loop of one's own).
//!
//! A harness runs many benchmarks in one process; one record for all of them would describe none. Wrap each
//! benchmark in [`record_benchmark`] and its record lands in that benchmark's own directory, beside the
//! harness's results for it: `target/criterion/<id>/provenance.json` for criterion ([`criterion_dir`]),
//! `target/divan/<id>/provenance.json` for divan ([`divan_dir`]), which keeps no files of its own. The record is
//! replaced on every run, as the harness replaces its own results; the claim still keeps two harness runs
//! from writing it at the same time.
//!
//! The crate does not depend on either harness: the examples `criterion_bench` and `divan_bench` show the
//! few lines each needs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Claim, Error, Provenance};

/// The record's file name inside a benchmark's directory.
pub const RECORD_FILE: &str = "provenance.json";

/// Runs `work` (one benchmark, measured by the harness) under a record written to `dir/provenance.json`,
/// replacing the previous run's. Returns what `work` returns.
///
/// ```no_run
/// use provenance::{Provenance, bench};
/// let dir = bench::criterion_dir(&["sum_1k"]);
/// bench::record_benchmark(Provenance::new().program(provenance::program!()), &dir, || {
///     // c.bench_function("sum_1k", |b| b.iter(|| (0..1000u64).sum::<u64>()));
/// })?;
/// # Ok::<(), provenance::Error>(())
/// ```
pub fn record_benchmark<R>(
    prov: Provenance,
    dir: &Path,
    work: impl FnOnce() -> R,
) -> Result<R, Error> {
    let claim = Claim::new(dir.join(RECORD_FILE), true)?;
    let running = prov.start();
    let result = work();
    let record = running.finish();
    crate::say_where(&record.write(&claim)?);
    Ok(result)
}

/// The target directory of the running harness: `CARGO_TARGET_DIR` when set, else the `target` directory the
/// benchmark executable was built in (`target/<profile>/deps/<bench>` or `target/<profile>/examples/<name>`),
/// else `target` in the current directory.
///
/// ```
/// let t = provenance::bench::target_dir();
/// assert!(t.ends_with("target") || std::env::var_os("CARGO_TARGET_DIR").is_some());
/// ```
pub fn target_dir() -> PathBuf {
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(t);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == "target"))
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// Where criterion keeps a benchmark's results: `$CRITERION_HOME/<parts…>` or `<target>/criterion/<parts…>`.
/// `parts` are the benchmark's id as criterion splits it into directories: `["sum_1k"]` for
/// `bench_function("sum_1k")`, `["group", "function", "param"]` for a benchmark in a group. Each part is made
/// safe as criterion 0.8 does it (`? " / \ * < > : | ^` become `_`, at most 64 bytes).
///
/// ```
/// let d = provenance::bench::criterion_dir(&["fib", "20"]);
/// assert!(d.ends_with("criterion/fib/20"));
/// ```
pub fn criterion_dir(parts: &[&str]) -> PathBuf {
    let home = std::env::var_os("CRITERION_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("criterion"));
    parts.iter().fold(home, |p, part| p.join(safe_name(part)))
}

/// criterion's `make_filename_safe` (Unix behaviour).
fn safe_name(s: &str) -> OsString {
    let mut out: String = s
        .chars()
        .map(|c| match c {
            '?' | '"' | '/' | '\\' | '*' | '<' | '>' | ':' | '|' | '^' => '_',
            c => c,
        })
        .collect();
    let mut end = out.len().min(64);
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out.into()
}

/// Where a divan benchmark's record goes: `<target>/divan/<name>` (divan writes no files; this gives its
/// benchmarks a directory as criterion's have), the name made safe as for criterion.
///
/// ```
/// assert!(provenance::bench::divan_dir("sum").ends_with("divan/sum"));
/// ```
pub fn divan_dir(name: &str) -> PathBuf {
    target_dir().join("divan").join(safe_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_names_lose_the_characters_it_replaces() {
        assert_eq!(safe_name("a:b|c?/d^"), OsString::from("a_b_c__d_"));
        let d = criterion_dir(&["group", "fn: x", "8"]);
        let tail: Vec<_> = d.iter().rev().take(3).collect();
        assert_eq!(tail, ["8", "fn_ x", "group"]);
        // 64 bytes at most, cut at a character boundary: 63 ASCII bytes and a 2-byte 'é' → 63 bytes.
        let long = format!("{}é", "a".repeat(63));
        assert_eq!(safe_name(&long).len(), 63);
    }
}
