//! Label coverage over a corpus: per trace, kernel time and the shares of it that no rule matched.
//!
//! ```text
//! cargo run --release -p kineto-trace --example label_coverage -- ../shared/traces [--names N] [--rules FILE]
//! ```
//! Reads every trace listed in the `INVENTORY.csv` files under the directory (each file's paths are
//! relative to its own directory), classifies its kernels with the built-in rules and prints one row
//! per trace with kernels: its kernel time (Σ dur, µs) and the shares of it that no rule matched (unmatched,
//! not even by the fallback words) and that the fallback words placed. `--names N` also lists, per
//! trace, the N unmatched or fallback-placed names with the most time, each with how it was placed.
//! `--rules FILE` classifies with another table (an older `default.toml`, to measure a change);
//! `--changed OLD.toml` also lists every kernel name whose family differs between OLD and the table in use.
//! `--names-from FILE` classifies the kernel names of a file of `ns<TAB>name` lines instead (names and times
//! taken from another profiler's output: rocprofv3, nsys) and prints its shares and top names the same way.
use kineto_trace::family::{MatchKind, Rules};
use kineto_trace::{Options, parse_file};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

fn inventories(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let inv = dir.join("INVENTORY.csv");
    if inv.is_file() {
        let text = std::fs::read_to_string(&inv)?;
        for line in text.lines().skip(1) {
            if let Some(p) = line.split(',').next().filter(|p| !p.is_empty()) {
                out.push(dir.join(p));
            }
        }
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    for s in subs {
        inventories(&s, out)?;
    }
    Ok(())
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// (was, is, name) → kernel time, ns: the names whose family `--changed` finds different.
type Changed = std::collections::BTreeMap<(String, String, String), i128>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(args.first().map_or("../shared/traces", String::as_str));
    let names: usize = match args.iter().position(|a| a == "--names") {
        Some(i) => args.get(i + 1).ok_or("--names N")?.parse()?,
        None => 0,
    };
    let mut paths = Vec::new();
    if let Some(i) = args.iter().position(|a| a == "--names-from") {
        let file = args.get(i + 1).ok_or("--names-from FILE")?;
        let rules = rules_arg(&args)?;
        return names_from(file, &rules, names);
    }
    inventories(&root, &mut paths)?;
    let rules = rules_arg(&args)?;
    let old = match args.iter().position(|a| a == "--changed") {
        Some(i) => Some(Rules::load(Path::new(
            args.get(i + 1).ok_or("--changed OLD.toml")?,
        ))?),
        None => None,
    };
    let mut changed = Changed::default();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>14} {:>9} {:>9}  trace",
        "kernel_us", "unm_%", "fallb_%"
    )?;
    let (mut all, mut all_unm, mut all_fb) = (0i128, 0i128, 0i128);
    for p in &paths {
        let rel = p.strip_prefix(&root).unwrap_or(p);
        let classes = (&rules, old.as_ref());
        let Some((total, unm, fb)) = trace_row(p, rel, classes, names, &mut out, &mut changed)?
        else {
            continue;
        };
        all += total;
        all_unm += unm;
        all_fb += fb;
    }
    writeln!(
        out,
        "{:>14.3} {:>9.3} {:>9.3}  ALL ({} files)",
        all as f64 / 1e3,
        pct(all_unm, all),
        pct(all_fb, all),
        paths.len()
    )?;
    if old.is_some() {
        writeln!(out, "{} names whose family changed:", changed.len())?;
        for ((was, is, name), ns) in &changed {
            let short: String = name.chars().take(140).collect();
            writeln!(out, "  {was} -> {is}  {:.3} us  {short}", *ns as f64 / 1e3)?;
        }
    }
    Ok(())
}

/// The table `--rules FILE` names, else the built-in one.
fn rules_arg(args: &[String]) -> Result<Rules> {
    Ok(match args.iter().position(|a| a == "--rules") {
        Some(i) => Rules::load(Path::new(args.get(i + 1).ok_or("--rules FILE")?))?,
        None => Rules::builtin(),
    })
}

/// `x` as a share of `total`, %; 0 for no total.
fn pct(x: i128, total: i128) -> f64 {
    if total > 0 {
        x as f64 * 100.0 / total as f64
    } else {
        0.0
    }
}

/// A kernel name's family under `r`, or `unmatched`.
fn family_name(r: &Rules, name: &str) -> String {
    r.classify(name)
        .map_or_else(|| "unmatched".to_owned(), |f| r.family(f).name.clone())
}

/// `--names-from FILE`: the shares and top `names` names of a file of `ns<TAB>name` lines.
fn names_from(file: &str, rules: &Rules, names: usize) -> Result<()> {
    let text = std::fs::read_to_string(file)?;
    let (mut total, mut unm, mut fb) = (0i128, 0i128, 0i128);
    let mut listed = Vec::new();
    for line in text.lines() {
        let Some((ns, name)) = line.split_once('\t') else {
            continue;
        };
        let ns: i128 = ns.trim().parse()?;
        total += ns;
        let label = rules.family_of(name);
        match label.kind() {
            MatchKind::Unmatched => unm += ns,
            MatchKind::Fallback => fb += ns,
            MatchKind::Rule => continue,
        }
        listed.push((ns, name.to_owned(), rules.how(label)));
    }
    listed.sort_by_key(|x| std::cmp::Reverse(x.0));
    println!(
        "{:>14.3} {:>9.3} {:>9.3}  {file}",
        total as f64 / 1e3,
        pct(unm, total),
        pct(fb, total)
    );
    for (ns, name, how) in listed.iter().take(names) {
        let short: String = name.chars().take(140).collect();
        println!(
            "{:>14} {:>9.3} {:>9}    {short}  [{how}]",
            "",
            pct(*ns, total),
            ""
        );
    }
    Ok(())
}

/// One trace's row (shown as `rel`) and its top `names` unmatched or fallback-placed names, classified
/// by `rules` (names whose family differs under `old` added to `changed`); its (kernel time, unmatched,
/// fallback) ns, or `None` for a trace without kernels.
fn trace_row(
    p: &Path,
    rel: &Path,
    (rules, old): (&Rules, Option<&Rules>),
    names: usize,
    out: &mut impl Write,
    changed: &mut Changed,
) -> Result<Option<(i128, i128, i128)>> {
    let parsed = parse_file(p, &Options::default())?;
    let t = &parsed.trace;
    if t.kernels.is_empty() {
        return Ok(None);
    }
    let (mut total, mut unm, mut fb) = (0i128, 0i128, 0i128);
    let mut by_name: HashMap<(&str, String), i128> = HashMap::new();
    for k in &t.kernels {
        let name = t.name(k.name);
        if let Some(old) = old {
            let (was, is) = (family_name(old, name), family_name(rules, name));
            if was != is {
                *changed.entry((was, is, name.to_owned())).or_default() += i128::from(k.dur_ns);
            }
        }
        let label = rules.family_of(name);
        total += i128::from(k.dur_ns);
        match label.kind() {
            MatchKind::Unmatched => unm += i128::from(k.dur_ns),
            MatchKind::Fallback => fb += i128::from(k.dur_ns),
            MatchKind::Rule => continue,
        }
        let how = match label.family() {
            Some(f) => format!("{} by {}", rules.family(f).name, rules.how(label)),
            None => rules.how(label),
        };
        *by_name.entry((name, how)).or_default() += i128::from(k.dur_ns);
    }
    writeln!(
        out,
        "{:>14.3} {:>9.3} {:>9.3}  {}",
        total as f64 / 1e3,
        pct(unm, total),
        pct(fb, total),
        rel.display()
    )?;
    let mut v: Vec<_> = by_name.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for ((n, how), d) in v.into_iter().take(names) {
        let short: String = n.chars().take(140).collect();
        writeln!(
            out,
            "{:>14} {:>9.3} {:>9}    {short}  [{how}]",
            "",
            pct(d, total),
            ""
        )?;
    }
    Ok(Some((total, unm, fb)))
}
