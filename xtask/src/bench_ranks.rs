//! `cargo xtask bench-ranks [N…] [--trace FILE] [--timeout S] [--hta-timeout S] [--max-rss-mib M]
//! [--skip-hta] [--skip-python] [--python PY] [--bins DIR] [--work DIR]`
//!
//! Many ranks from one real trace: for each N (default 8, 128, 1024) writes N copies of the trace, each
//! with its own `distributedInfo.rank` (and `world_size` = N, so the set is one consistent run), then in
//! the same run times, with peak RSS:
//!   * the baseline: inflating every file (flate2, the parser's own decoder, one thread, to a sink);
//!   * `kineto summary --json DIR`, `kineto ranks --json DIR`, `kineto-export --parquet OUT DIR`;
//!   * `kineto_trace.read_ranks(DIR)` (every rank held, as the call returns them all) and the same in
//!     chunks of 64 files (each chunk dropped before the next: what a script over many ranks does);
//!   * HTA's `TraceAnalysis(trace_dir=DIR)`, with its own time limit; once it stops (time, memory or an
//!     error) it is not run at larger N, and the table says where it stopped.
//!
//! The copies are gzip and share their compressed bytes: the trace's text is cut around the two numbers,
//! each constant piece is compressed once, and each copy is those pieces with its own two numbers as
//! small gzip members between them (a file of several members inflates to their concatenation, RFC 1952
//! §2.2; every reader here — flate2's `MultiGzDecoder`, Python's `gzip` — reads it so). Writing a copy is
//! then a file write, not a compression, and the copies take N × the gzip size on disk. Each N's
//! directory is deleted before the next is written.
//!
//! Peak RSS is MEASURED two ways: `wait4`'s `ru_maxrss` (the largest single process of the command's
//! tree) and the sum over the command's process group sampled every 100 ms (HTA forks workers; the
//! sum can miss a peak shorter than the period). A command over `--max-rss-mib` (sampled sum) or its
//! time limit is killed with its process group and reported as stopped there.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The default trace: a real multi-step training trace of the HTA corpus (5 `ProfilerStep`s, 19,370
/// kernels, 216,092 events; 54 MB of JSON, 3.0 MB gzip), so 1,024 copies take about 3 GB.
const DEFAULT_TRACE: &str = "../shared/traces/hta/df_index_resolver/df_index_resolver.json.gz";
const DEFAULT_NS: [usize; 3] = [8, 128, 1024];
/// Files per `read_ranks` call in the chunked Python run.
const CHUNK: usize = 64;

struct Args {
    ns: Vec<usize>,
    trace: Option<PathBuf>,
    timeout: Duration,
    hta_timeout: Duration,
    max_rss_kb: u64,
    skip_hta: bool,
    skip_python: bool,
    python: Option<PathBuf>,
    bins: Option<PathBuf>,
    work: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        ns: Vec::new(),
        trace: None,
        timeout: Duration::from_secs(1200),
        hta_timeout: Duration::from_secs(300),
        max_rss_kb: 8 << 20,
        skip_hta: false,
        skip_python: false,
        python: None,
        bins: None,
        work: None,
    };
    let mut it = args.iter();
    while let Some(x) = it.next() {
        let mut val = || it.next().ok_or(format!("{x} needs a value"));
        let secs = |v: &str| {
            v.parse::<u64>()
                .map(Duration::from_secs)
                .map_err(|e| format!("{x}: {e}"))
        };
        match x.as_str() {
            "--trace" => a.trace = Some(PathBuf::from(val()?)),
            "--timeout" => a.timeout = secs(val()?)?,
            "--hta-timeout" => a.hta_timeout = secs(val()?)?,
            "--max-rss-mib" => {
                a.max_rss_kb = val()?
                    .parse::<u64>()
                    .map_err(|e| format!("--max-rss-mib: {e}"))?
                    * 1024
            }
            "--skip-hta" => a.skip_hta = true,
            "--skip-python" => a.skip_python = true,
            "--python" => a.python = Some(PathBuf::from(val()?)),
            "--work" => a.work = Some(PathBuf::from(val()?)),
            "--bins" => a.bins = Some(PathBuf::from(val()?)),
            n if n.parse::<usize>().is_ok() => {
                let n: usize = n.parse().map_err(|e| format!("{n}: {e}"))?;
                if n == 0 {
                    return Err("N must be at least 1".into());
                }
                a.ns.push(n);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.ns.is_empty() {
        a.ns = DEFAULT_NS.to_vec();
    }
    Ok(a)
}

/// One command's result.
#[derive(Clone)]
enum Outcome {
    Done,
    Failed(String),
    TimedOut,
    OverRss,
}

struct Run {
    wall: Duration,
    /// `ru_maxrss` of the command (kB): its largest single process.
    max_proc_kb: i64,
    /// The process group's summed RSS, sampled (kB).
    tree_kb: u64,
    outcome: Outcome,
    stdout: String,
}

struct Row {
    n: usize,
    what: &'static str,
    run: Run,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let a = parse_args(args)?;
    let root = crate::workspace_root();
    let trace = a.trace.clone().unwrap_or_else(|| root.join(DEFAULT_TRACE));
    if !trace.is_file() {
        return Err(format!(
            "{}: no such trace (give one with --trace FILE; it needs distributedInfo)",
            trace.display()
        ));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), PathBuf::from);
    let work = a.work.clone().unwrap_or_else(|| target.join("bench-ranks"));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let tools = tools(&a, &root, &target)?;
    let gz_len = std::fs::metadata(&trace)
        .map_err(|e| format!("{}: {e}", trace.display()))?
        .len();
    let max_n = a.ns.iter().copied().max().unwrap_or(0) as u64;
    eprintln!(
        "bench-ranks: {} ({} bytes stored); the largest N takes about {:.2} GB in {}",
        trace.display(),
        gz_len,
        (gz_len * max_n) as f64 / 1e9,
        work.display()
    );
    eprintln!("bench-ranks: load before: {}", uptime());

    let mut rows: Vec<Row> = Vec::new();
    let mut hta_stopped: Option<(usize, String)> = None;
    for &n in &a.ns {
        let dir = work.join(format!("ranks-{n}"));
        let files = write_ranks(&trace, &dir, n)?;
        let t0 = Instant::now();
        let json_bytes = inflate_all(&files)?;
        rows.push(Row {
            n,
            what: "baseline: inflate every file",
            run: Run {
                wall: t0.elapsed(),
                max_proc_kb: 0,
                tree_kb: 0,
                outcome: Outcome::Done,
                stdout: format!("{json_bytes}"),
            },
        });
        measure_rust(&a, &tools, (n, &dir, &work), &mut rows)?;
        if let (Some(py), false) = (&tools.python, a.skip_python) {
            measure_read_ranks(&a, py, (n, &dir), &mut rows)?;
        }
        if let (Some(py), false) = (&tools.python, a.skip_hta)
            && hta_stopped.is_none()
        {
            hta_stopped = measure_hta(&a, py, (n, &dir), &mut rows)?;
        }
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        eprintln!("bench-ranks: N={n} done; load {}", uptime());
    }
    print_table(&rows, &a.ns);
    if let Some((n, why)) = hta_stopped {
        println!("HTA stopped at N={n} ({why}); not run at larger N.");
    }
    println!("load after: {}", uptime());
    Ok(())
}

/// The programs measured.
struct Tools {
    kineto: PathBuf,
    export: PathBuf,
    /// The Python with the modules (and HTA), unless both Python runs are skipped.
    python: Option<PathBuf>,
}

/// The binaries (release-built, or `--bins DIR`'s as built) and the Python environment.
fn tools(a: &Args, root: &Path, target: &Path) -> Result<Tools, String> {
    // `--bins DIR` takes `kineto` and `kineto-export` as built (a smoke run of the harness); the figures
    // that count are of the release build.
    let (kineto, export) = match &a.bins {
        Some(d) => (d.join("kineto"), d.join("kineto-export")),
        None => (
            crate::build_release_bin("kineto-cli", "kineto")?,
            crate::build_release_bin("kineto-export-cli", "kineto-export")?,
        ),
    };
    eprintln!(
        "bench-ranks: binaries {} and {}",
        kineto.display(),
        export.display()
    );
    let python = if a.skip_python && a.skip_hta {
        None
    } else {
        Some(match &a.python {
            Some(p) => p.clone(),
            None => python_env(root, target, !a.skip_python)?,
        })
    };
    Ok(Tools {
        kineto,
        export,
        python,
    })
}

/// Writes `n` rank copies of `trace` into `dir` (emptied first) and lists them. Generated in a child
/// process: a child's peak RSS (wait4) counts the pages this process holds when it forks, so the trace's
/// text is never held here.
fn write_ranks(trace: &Path, dir: &Path, n: usize) -> Result<Vec<PathBuf>, String> {
    let _ = std::fs::remove_dir_all(dir);
    let t0 = Instant::now();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new(exe)
        .arg("bench-ranks-generate")
        .arg(trace)
        .arg(dir)
        .arg(n.to_string())
        .status()
        .map_err(|e| format!("bench-ranks-generate: {e}"))?;
    if !status.success() {
        return Err(format!("writing {n} ranks into {} failed", dir.display()));
    }
    let files = rank_files(dir)?;
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    eprintln!(
        "bench-ranks: N={n}: wrote {} files, {:.1} MB, in {:.1} s; load {}",
        files.len(),
        bytes as f64 / 1e6,
        t0.elapsed().as_secs_f64(),
        uptime()
    );
    Ok(files)
}

/// `kineto summary`, `kineto ranks` and `kineto-export --parquet` on the `n` ranks in `dir` (the export
/// into a directory of `work`, removed after), each output checked; a row each.
fn measure_rust(
    a: &Args,
    tools: &Tools,
    (n, dir, work): (usize, &Path, &Path),
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let d = dir.display().to_string();
    let r = limited(
        &tools.kineto,
        &["summary", "--json", &d],
        a.timeout,
        a.max_rss_kb,
    )?;
    check_lines(&r, n, "kineto summary")?;
    rows.push(Row {
        n,
        what: "kineto summary",
        run: r,
    });
    let r = limited(
        &tools.kineto,
        &["ranks", "--json", &d],
        a.timeout,
        a.max_rss_kb,
    )?;
    check_ranks_output(&r, n)?;
    rows.push(Row {
        n,
        what: "kineto ranks",
        run: r,
    });
    let out = work.join(format!("parquet-{n}"));
    let _ = std::fs::remove_dir_all(&out);
    let o = out.display().to_string();
    let r = limited(
        &tools.export,
        &["--parquet", &o, &d],
        a.timeout,
        a.max_rss_kb,
    )?;
    if matches!(r.outcome, Outcome::Done) {
        let parts = std::fs::read_dir(out.join("gpu_ops"))
            .map_err(|e| format!("{}: {e}", out.display()))?
            .count();
        if parts != n {
            return Err(format!(
                "kineto-export wrote {parts} rank partitions, not {n}"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    rows.push(Row {
        n,
        what: "kineto-export --parquet",
        run: r,
    });
    Ok(())
}

/// Python `read_ranks` on the `n` ranks in `dir`, whole and 64 files a call; a row each.
fn measure_read_ranks(
    a: &Args,
    py: &Path,
    (n, dir): (usize, &Path),
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let d = dir.display().to_string();
    for (what, chunk) in [
        ("python read_ranks(DIR)", 0),
        ("python read_ranks, 64 files a call", CHUNK),
    ] {
        let script = PY_READ_RANKS.replace("CHUNK", &chunk.to_string());
        let r = limited(py, &["-c", &script, &d], a.timeout, a.max_rss_kb)?;
        check_python(&r, n, what)?;
        rows.push(Row { n, what, run: r });
    }
    Ok(())
}

/// HTA's `TraceAnalysis` on the `n` ranks in `dir`, a row; why it stopped (then it is not run at larger
/// N) when it did not finish.
fn measure_hta(
    a: &Args,
    py: &Path,
    (n, dir): (usize, &Path),
    rows: &mut Vec<Row>,
) -> Result<Option<(usize, String)>, String> {
    let d = dir.display().to_string();
    let r = limited(py, &["-c", PY_HTA, &d], a.hta_timeout, a.max_rss_kb)?;
    let stopped = match &r.outcome {
        Outcome::Done => None,
        Outcome::TimedOut => Some((n, format!("over {} s", a.hta_timeout.as_secs()))),
        Outcome::OverRss => Some((n, format!("over {} MiB", a.max_rss_kb / 1024))),
        Outcome::Failed(e) => Some((n, format!("failed: {e}"))),
    };
    rows.push(Row {
        n,
        what: "HTA TraceAnalysis",
        run: r,
    });
    Ok(stopped)
}

/// `bench-ranks-generate TRACE DIR N` (internal): writes the N copies.
pub fn generate_task(args: &[String]) -> Result<(), String> {
    let [trace, dir, n] = args else {
        return Err("usage: bench-ranks-generate TRACE DIR N".into());
    };
    let n: usize = n.parse().map_err(|e| format!("N: {e}"))?;
    let text = read_text(Path::new(trace))?;
    let t = Template::new(&text).map_err(|e| format!("{trace}: {e}"))?;
    drop(text);
    let dir = Path::new(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for rank in 0..n {
        let p = dir.join(format!("rank-{rank:05}.pt.trace.json.gz"));
        let f = std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        t.write(&mut w, rank as u64, n as u64)
            .and_then(|()| w.flush())
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// Which number a cut of the text stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    Rank,
    WorldSize,
}

/// The trace's text cut around its `distributedInfo.rank` and `world_size` numbers: the constant pieces
/// as gzip members, compressed once, and the slots between them.
struct Template {
    pieces: Vec<Vec<u8>>,
    slots: Vec<Slot>,
}

impl Template {
    fn new(text: &[u8]) -> Result<Template, String> {
        let mut cuts = distributed_numbers(text)?;
        cuts.sort_by_key(|c| c.1.start);
        let mut pieces = Vec::new();
        let mut at = 0;
        for (_, span) in &cuts {
            pieces.push(gzip(&text[at..span.start])?);
            at = span.end;
        }
        pieces.push(gzip(&text[at..])?);
        Ok(Template {
            pieces,
            slots: cuts.into_iter().map(|c| c.0).collect(),
        })
    }

    fn write(&self, w: &mut impl Write, rank: u64, world_size: u64) -> std::io::Result<()> {
        for (i, piece) in self.pieces.iter().enumerate() {
            w.write_all(piece)?;
            if let Some(slot) = self.slots.get(i) {
                let v = match slot {
                    Slot::Rank => rank,
                    Slot::WorldSize => world_size,
                };
                w.write_all(&gzip(v.to_string().as_bytes()).map_err(std::io::Error::other)?)?;
            }
        }
        Ok(())
    }
}

/// The byte ranges of the numbers of the top-level `distributedInfo`'s own `rank` and `world_size`
/// keys (not those of objects nested in it, such as `pg_config` entries).
fn distributed_numbers(text: &[u8]) -> Result<Vec<(Slot, std::ops::Range<usize>)>, String> {
    let key = b"\"distributedInfo\"";
    let k = text
        .windows(key.len())
        .position(|w| w == key)
        .ok_or("the trace has no distributedInfo (pick one that has, with --trace)")?;
    let mut i = k + key.len();
    while i < text.len() && text[i] != b'{' {
        if !(text[i] == b':' || text[i].is_ascii_whitespace()) {
            return Err(format!("distributedInfo at byte {k} is not an object"));
        }
        i += 1;
    }
    let mut depth = 0usize;
    let mut out = Vec::new();
    while i < text.len() {
        match text[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let name = &text[start..i.min(text.len())];
                let slot = match name {
                    b"rank" => Some(Slot::Rank),
                    b"world_size" => Some(Slot::WorldSize),
                    _ => None,
                };
                let mut j = i + 1;
                while j < text.len() && text[j].is_ascii_whitespace() {
                    j += 1;
                }
                if let (Some(slot), 1, Some(b':')) = (slot, depth, text.get(j)) {
                    j += 1;
                    while j < text.len() && text[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    let s = j;
                    while j < text.len() && text[j].is_ascii_digit() {
                        j += 1;
                    }
                    if j == s {
                        return Err(format!(
                            "distributedInfo's {slot:?} at byte {s} is not a number"
                        ));
                    }
                    out.push((slot, s..j));
                    i = j - 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !out.iter().any(|c| c.0 == Slot::Rank) {
        return Err(format!("distributedInfo at byte {k} has no rank"));
    }
    Ok(out)
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    enc.write_all(bytes).map_err(|e| e.to_string())?;
    enc.finish().map_err(|e| e.to_string())
}

/// The trace's JSON text, inflated when it is gzip (told by its magic bytes).
fn read_text(p: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

fn rank_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    Ok(v)
}

/// Inflates every file to a sink; returns the JSON bytes.
fn inflate_all(files: &[PathBuf]) -> Result<u64, String> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    for f in files {
        let file = std::fs::File::open(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let mut d =
            flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 20, file));
        loop {
            match d.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => total += k as u64,
                Err(e) => return Err(format!("{}: {e}", f.display())),
            }
        }
    }
    Ok(total)
}

/// Runs a command in its own process group, with a time limit and a cap on the group's summed RSS.
fn limited(cmd: &Path, argv: &[&str], timeout: Duration, max_rss_kb: u64) -> Result<Run, String> {
    let err = tempfile(".err")?;
    let out = tempfile(".out")?;
    let t0 = Instant::now();
    let child = Command::new(cmd)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(out.1.try_clone().map_err(|e| e.to_string())?)
        .stderr(err.1.try_clone().map_err(|e| e.to_string())?)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{}: {e}", cmd.display()))?;
    let pid = child.id() as libc::pid_t;
    // The child is reaped by wait4 below, never through `child`.
    std::mem::forget(child);
    let mut tree_kb = 0u64;
    let mut killed = None;
    let (status, ru) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain data, filled by wait4 for our own child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child, not yet reaped; `status` and `ru` are writable locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break (status, ru);
        }
        if r < 0 {
            return Err(format!(
                "wait4 on {}: {}",
                cmd.display(),
                std::io::Error::last_os_error()
            ));
        }
        tree_kb = tree_kb.max(group_rss_kb(pid));
        if killed.is_none() {
            if t0.elapsed() > timeout {
                killed = Some(Outcome::TimedOut);
            } else if tree_kb > max_rss_kb {
                killed = Some(Outcome::OverRss);
            }
            if killed.is_some() {
                // SAFETY: signals our own child's process group (it was made its leader at spawn).
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let wall = t0.elapsed();
    // Workers HTA forked may outlive their parent: the group goes with it.
    // SAFETY: as above; a group already empty makes this a no-op (ESRCH).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let stdout = std::fs::read_to_string(&out.0).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err.0).unwrap_or_default();
    let _ = std::fs::remove_file(&out.0);
    let _ = std::fs::remove_file(&err.0);
    let outcome = match killed {
        Some(k) => k,
        None if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 => Outcome::Done,
        None => {
            let tail: String = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            Outcome::Failed(format!("status {status}: {tail}"))
        }
    };
    Ok(Run {
        wall,
        max_proc_kb: ru.ru_maxrss,
        tree_kb,
        outcome,
        stdout,
    })
}

fn tempfile(suffix: &str) -> Result<(PathBuf, std::fs::File), String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!(
        "kl1-bench-ranks-{}-{k}{suffix}",
        std::process::id()
    ));
    let f = std::fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok((p, f))
}

/// Σ RSS (kB) of the processes in process group `pgid`, from /proc/*/stat.
fn group_rss_kb(pgid: libc::pid_t) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page_kb = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as u64 / 1024;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut kb = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces and parentheses): state is field 3,
        // pgrp field 5, rss (pages) field 24.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(2).and_then(|g| g.parse::<i64>().ok()) == Some(pgid as i64) {
            kb += f.get(21).and_then(|r| r.parse::<u64>().ok()).unwrap_or(0) * page_kb;
        }
    }
    kb
}

fn check_lines(r: &Run, n: usize, what: &str) -> Result<(), String> {
    if !matches!(r.outcome, Outcome::Done) {
        return Ok(());
    }
    let lines = r.stdout.lines().filter(|l| !l.trim().is_empty()).count();
    if lines != n {
        return Err(format!("{what} printed {lines} summaries for {n} ranks"));
    }
    Ok(())
}

/// `kineto ranks --json`: every step row must count all N ranks (a rank is never dropped).
fn check_ranks_output(r: &Run, n: usize) -> Result<(), String> {
    if !matches!(r.outcome, Outcome::Done) {
        return Ok(());
    }
    let mut rows = 0;
    for l in r.stdout.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| format!("kineto ranks --json: {e}"))?;
        if v["ranks"].as_u64() != Some(n as u64) {
            return Err(format!(
                "kineto ranks: a row counts {} ranks, not {n}: {l}",
                v["ranks"]
            ));
        }
        rows += 1;
    }
    if rows == 0 {
        return Err("kineto ranks printed no step".into());
    }
    Ok(())
}

fn check_python(r: &Run, n: usize, what: &str) -> Result<(), String> {
    if !matches!(r.outcome, Outcome::Done) {
        return Ok(());
    }
    let v: serde_json::Value =
        serde_json::from_str(r.stdout.trim()).map_err(|e| format!("{what}: {e}: {}", r.stdout))?;
    if v["ranks"].as_u64() != Some(n as u64) {
        return Err(format!("{what}: {} distinct ranks, not {n}", v["ranks"]));
    }
    Ok(())
}

/// Reads the ranks and builds every rank's `gpu_ops` table; prints the distinct ranks and rows.
const PY_READ_RANKS: &str = r#"
import json, os, sys, kineto_trace
d = sys.argv[1]
files = sorted(os.path.join(d, f) for f in os.listdir(d))
chunk = CHUNK or len(files)
ranks, rows = set(), 0
for i in range(0, len(files), chunk):
    ts = kineto_trace.read_ranks(files[i:i + chunk])
    for t in ts:
        ranks.add(t.rank)
        rows += t.gpu_ops().num_rows
    del ts
print(json.dumps({"ranks": len(ranks), "rows": rows}))
"#;

const PY_HTA: &str = r#"
import logging, sys
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
print(len(a.t.get_ranks()))
"#;

/// A venv with HTA, maturin and pyarrow (tests/venv.sh's pins), and (`wheel`) the release wheel built
/// into it.
fn python_env(root: &Path, target: &Path, wheel: bool) -> Result<PathBuf, String> {
    let venv = target.join("py-bench-ranks");
    let status = Command::new("bash")
        .current_dir(root)
        .arg("-c")
        .arg(format!(
            "source tests/venv.sh && ensure_venv bench-ranks '{}' HolisticTraceAnalysis==0.5.0 maturin==1.16.0 pyarrow==26.0.1",
            venv.display()
        ))
        .status()
        .map_err(|e| format!("bash: {e}"))?;
    if !status.success() {
        return Err(
            "cannot make the Python venv (see above); --skip-python --skip-hta runs without".into(),
        );
    }
    let py = venv.join("bin/python");
    if !wheel {
        return Ok(py);
    }
    let wheels = target.join("py-bench-ranks-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    let ok = Command::new(venv.join("bin/maturin"))
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "--release",
            "--manifest-path",
            "python/Cargo.toml",
        ])
        .arg("--interpreter")
        .arg(&py)
        .arg("--out")
        .arg(&wheels)
        .status()
        .map_err(|e| format!("maturin: {e}"))?
        .success();
    let wheel = rank_files(&wheels).ok().and_then(|v| {
        v.into_iter()
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
    });
    let Some(wheel) = wheel.filter(|_| ok) else {
        return Err("maturin build of python/ failed".into());
    };
    let ok = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
        ])
        .arg(&wheel)
        .status()
        .map_err(|e| format!("pip: {e}"))?
        .success();
    if !ok {
        return Err(format!("pip install {} failed", wheel.display()));
    }
    Ok(py)
}

fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| {
            let f: Vec<&str> = s.split_whitespace().take(3).collect();
            format!("load average {}", f.join(" "))
        })
        .unwrap_or_else(|_| "load unknown".into())
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn print_table(rows: &[Row], ns: &[usize]) {
    println!(
        "{:>5}  {:<36} {:>9} {:>11} {:>12} {:>12}  outcome",
        "N", "command", "wall s", "ms / rank", "proc MiB", "group MiB"
    );
    for r in rows {
        let run = &r.run;
        let outcome = match &run.outcome {
            Outcome::Done => "ok".to_string(),
            Outcome::TimedOut => "stopped: time limit".into(),
            Outcome::OverRss => "stopped: RSS cap".into(),
            Outcome::Failed(e) => format!("failed: {e}"),
        };
        let rss = |kb: u64| {
            if kb == 0 {
                "-".to_string()
            } else {
                format!("{:.1}", mib(kb))
            }
        };
        println!(
            "{:>5}  {:<36} {:>9.2} {:>11.2} {:>12} {:>12}  {outcome}",
            r.n,
            r.what,
            run.wall.as_secs_f64(),
            run.wall.as_secs_f64() * 1e3 / r.n as f64,
            rss(run.max_proc_kb.max(0) as u64),
            rss(run.tree_kb),
        );
    }
    // Linear cost: ms per rank at the largest N over the smallest; flat memory: RSS at the largest N
    // over the smallest (both 1.0 for a perfectly linear, flat command).
    let (Some(&lo), Some(&hi)) = (ns.iter().min(), ns.iter().max()) else {
        return;
    };
    if lo == hi {
        return;
    }
    println!("\nscaling from N={lo} to N={hi} (1.00 = linear time, flat memory):");
    let mut names: Vec<&str> = rows.iter().map(|r| r.what).collect();
    names.dedup();
    names.sort();
    names.dedup();
    for name in names {
        let at = |n: usize| {
            rows.iter()
                .find(|r| r.what == name && r.n == n && matches!(r.run.outcome, Outcome::Done))
        };
        if let (Some(a), Some(b)) = (at(lo), at(hi)) {
            let per = |r: &Row| r.run.wall.as_secs_f64() / r.n as f64;
            let rss = |r: &Row| r.run.max_proc_kb.max(0) as f64;
            let rss_ratio = if rss(a) > 0.0 {
                format!("{:.2}", rss(b) / rss(a))
            } else {
                "-".into()
            };
            println!(
                "  {name:<36} time per rank ×{:.2}, peak RSS ×{rss_ratio}",
                per(b) / per(a)
            );
        } else {
            println!("  {name:<36} did not finish at both N");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(text: &str, rank: u64, world_size: u64) -> String {
        let t = Template::new(text.as_bytes()).unwrap();
        let mut gz = Vec::new();
        t.write(&mut gz, rank, world_size).unwrap();
        let mut out = String::new();
        flate2::read::MultiGzDecoder::new(&gz[..])
            .read_to_string(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn only_the_two_numbers_change() {
        // The nested pg_config's own "rank" and a "rank" key elsewhere in the trace stay as they are.
        let text = r#"{"traceEvents": [{"name": "rank", "args": {"rank": 7}}],
 "distributedInfo": {"backend": "nccl", "pg_config": [{"rank": 5, "world_size": 9}],
   "world_size" : 16, "rank":3, "nccl_version": "2.18"}}"#;
        let want = text.replace(
            r#""world_size" : 16, "rank":3"#,
            r#""world_size" : 1024, "rank":1000"#,
        );
        assert_eq!(copy(text, 1000, 1024), want);
        assert_eq!(copy(text, 3, 16), text);
    }

    #[test]
    fn a_trace_without_a_rank_is_refused() {
        let e = distributed_numbers(br#"{"traceEvents": []}"#).unwrap_err();
        assert!(e.contains("no distributedInfo"), "{e}");
        let e = distributed_numbers(br#"{"distributedInfo": {"world_size": 2}}"#).unwrap_err();
        assert!(e.contains("has no rank"), "{e}");
        let e = distributed_numbers(br#"{"distributedInfo": {"rank": "x"}}"#).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
    }
}
