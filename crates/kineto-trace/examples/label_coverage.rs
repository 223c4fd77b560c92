//! Label coverage over a corpus: per trace, kernel time and the shares of it that no rule matched.
//!
//! ```text
//! cargo run --release -p kineto-trace --example label_coverage -- ../shared/traces [--names N]
//! ```
//! Reads every trace listed in the `INVENTORY.csv` files under the directory (each file's paths are
//! relative to its own directory), classifies its kernels with the built-in rules and prints one row
//! per trace with kernels: its kernel time (Σ dur, µs) and the shares of it that no rule matched (unmatched,
//! not even by the fallback words) and that the fallback words placed. `--names N` also lists, per
//! trace, the N unmatched or fallback-placed names with the most time, each with how it was placed.
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = PathBuf::from(args.first().map_or("../shared/traces", String::as_str));
    let names: usize = match args.iter().position(|a| a == "--names") {
        Some(i) => args.get(i + 1).ok_or("--names N")?.parse()?,
        None => 0,
    };
    let mut paths = Vec::new();
    inventories(&root, &mut paths)?;
    let rules = Rules::builtin();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>14} {:>9} {:>9}  trace",
        "kernel_us", "unm_%", "fallb_%"
    )?;
    let (mut all, mut all_unm, mut all_fb) = (0i128, 0i128, 0i128);
    for p in &paths {
        let parsed = parse_file(p, &Options::default())?;
        let t = &parsed.trace;
        if t.kernels.is_empty() {
            continue;
        }
        let (mut total, mut unm, mut fb) = (0i128, 0i128, 0i128);
        let mut by_name: HashMap<(&str, String), i128> = HashMap::new();
        for k in &t.kernels {
            let name = t.name(k.name);
            let label = rules.family_of(name);
            total += i128::from(k.dur_ns);
            match label.kind() {
                MatchKind::Unmatched => unm += i128::from(k.dur_ns),
                MatchKind::Fallback => fb += i128::from(k.dur_ns),
                MatchKind::Rule => continue,
            }
            let family = label.family().map_or("", |f| rules.family(f).name.as_str());
            let how = format!("{family} by {}", rules.how(label));
            *by_name.entry((name, how)).or_default() += i128::from(k.dur_ns);
        }
        let pct = |x: i128| {
            if total > 0 {
                x as f64 * 100.0 / total as f64
            } else {
                0.0
            }
        };
        let rel = p.strip_prefix(&root).unwrap_or(p);
        writeln!(
            out,
            "{:>14.3} {:>9.3} {:>9.3}  {}",
            total as f64 / 1e3,
            pct(unm),
            pct(fb),
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
                pct(d),
                ""
            )?;
        }
        all += total;
        all_unm += unm;
        all_fb += fb;
    }
    let pct = |x: i128| {
        if all > 0 {
            x as f64 * 100.0 / all as f64
        } else {
            0.0
        }
    };
    writeln!(
        out,
        "{:>14.3} {:>9.3} {:>9.3}  ALL ({} files)",
        all as f64 / 1e3,
        pct(all_unm),
        pct(all_fb),
        paths.len()
    )?;
    Ok(())
}
