//! `cargo xtask bench-parse [--mb N] [--source TRACE] [--runs N] [--skip-python]`
//!
//! Builds a realistic trace of about N MB (default 500) by replicating the events of a real trace with
//! shifted times and ids (text-level, so the format — key order, 3-decimal µs, whitespace — is the
//! profiler's own), gzips it, then in one run times:
//!   * `kineto summary --json` on the plain and the gzip file (default: every core, read/inflate/hash
//!     on threads of their own) and with `--single-thread` (everything on one thread);
//!   * one file on every core: `--no-sha256` pinned to one core with the serial parse (`taskset -c 0
//!     --single-thread`), against `--threads 2` on two cores; the serial fraction that pair implies
//!     (Amdahl) and what it predicts for 16 cores; with the hash, against hashing the file alone
//!     (`openssl dgst -sha256`, else `sha256sum`);
//!   * `--threads 16` for its peak RSS: the memory bound on a 16-core workstation (16 workers'
//!     blocks and malloc arenas), whatever the cores here;
//!   * the baseline `python3 -c "import json; json.load(open(F))"` on the same files;
//!   * inflating the gzip file alone (flate2 with zlib-rs, the parser's own decoder), to a sink, and
//!     `gzip -dc` to /dev/null (the everyday tool);
//!
//! It prints MB/s (of JSON text), peak RSS and the ratios against the targets.

use regex::bytes::{Captures, Regex};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

struct Args {
    mb: u64,
    source: Option<PathBuf>,
    runs: usize,
    skip_python: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        mb: 500,
        source: None,
        runs: 3,
        skip_python: false,
    };
    let mut it = args.iter();
    while let Some(x) = it.next() {
        let mut val = || it.next().ok_or(format!("{x} needs a value"));
        match x.as_str() {
            "--mb" => a.mb = val()?.parse().map_err(|e| format!("--mb: {e}"))?,
            "--source" => a.source = Some(PathBuf::from(val()?)),
            "--runs" => a.runs = val()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--skip-python" => a.skip_python = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let a = parse_args(args)?;
    let root = crate::workspace_root();
    let source = match a.source {
        Some(s) => s,
        None => default_source(&root),
    };
    let kineto = crate::build_release_bin("kineto-cli", "kineto")?;
    let dir = root.join("target/bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let plain = dir.join(format!("trace-{}MB.json", a.mb));
    let gz = dir.join(format!("trace-{}MB.json.gz", a.mb));
    if !plain.exists() || !gz.exists() {
        generate_in_child(&source, &plain, &gz, a.mb)?;
    }
    let json_mb = file_len(&plain)? as f64 / 1e6;
    let gz_mb = file_len(&gz)? as f64 / 1e6;
    eprintln!("input: {json_mb:.1} MB JSON, {gz_mb:.1} MB gzip");

    let mut rows: Vec<Row> = Vec::new();
    let p = measure_plain(&kineto, &plain, a.runs, json_mb, &mut rows)?;
    let g = measure_gzip(&kineto, &gz, a.runs, json_mb, &mut rows)?;
    let py = if a.skip_python {
        Python::default()
    } else {
        measure_python(&plain, &gz, json_mb, &mut rows)?
    };
    print_table(&rows, json_mb, &g);
    print_ratios(json_mb, &p, &g, &py);
    Ok(())
}

/// A row of the table: (what, MB of JSON it reads, its measure).
type Row = (String, f64, Measure);

/// The shared corpus's HTA trace where it is beside the clone, else the repository's DLRM trace.
fn default_source(root: &Path) -> PathBuf {
    let shared = root.join(
        "../shared/traces/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    );
    // Without the shared corpus, a rank of the generated demo window.
    if shared.exists() {
        shared
    } else {
        root.join("testdata/windows/demo/prof-32k-b1.decode.rank0.pt.trace.json.gz")
    }
}

/// Writes the plain and gzip benchmark traces of about `mb` MB from `source`, in a child process: this
/// one forks the measured commands, and a child's peak RSS (wait4) counts the pages it inherited until
/// exec, so this process must stay small.
fn generate_in_child(source: &Path, plain: &Path, gz: &Path, mb: u64) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new(exe)
        .args(["bench-parse-generate", &source.display().to_string()])
        .args([
            &plain.display().to_string(),
            &gz.display().to_string(),
            &(mb * 1_000_000).to_string(),
        ])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("generating the benchmark trace failed".into());
    }
    Ok(())
}

/// `kineto summary --json EXTRA… FILE`.
fn summary_argv(file: &Path, extra: &[&str]) -> Vec<String> {
    let mut v = vec!["summary".to_string(), "--json".to_string()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v.push(file.display().to_string());
    v
}

/// The fastest of `runs` runs, with the largest peak RSS of them all.
fn best_of(cmd: &Path, argv: Vec<String>, runs: usize) -> Result<Measure, String> {
    let mut best: Option<Measure> = None;
    for _ in 0..runs {
        let m = measure(cmd, &argv)?;
        best = Some(match best {
            Some(b) if b.wall <= m.wall => Measure {
                rss_kb: b.rss_kb.max(m.rss_kb),
                ..b
            },
            Some(b) => Measure {
                rss_kb: b.rss_kb.max(m.rss_kb),
                ..m
            },
            None => m,
        });
    }
    best.ok_or_else(|| "no runs".to_string())
}

/// The runs on the plain file.
struct PlainRuns {
    /// Default: every core.
    default: Measure,
    /// `--single-thread --no-sha256`: the parser alone.
    single_no_hash: Measure,
    /// `--single-thread`.
    single: Measure,
    /// The serial parse pinned to one core.
    one_core: Measure,
    /// `--threads 2 --no-sha256`.
    two_cores: Measure,
    /// `--threads 16 --no-sha256`, for its RSS.
    sixteen: Measure,
    /// `--threads 2` with the hash.
    hashed: Measure,
    /// Hashing the file alone: (tool, measure).
    hash_alone: Option<(String, Measure)>,
}

/// Times `kineto summary` on the plain file: default, one thread, one core against two, sixteen workers,
/// with the hash against the hash alone; a row each.
fn measure_plain(
    kineto: &Path,
    plain: &Path,
    runs: usize,
    json_mb: f64,
    rows: &mut Vec<Row>,
) -> Result<PlainRuns, String> {
    let k = summary_argv;
    let kp = best_of(kineto, k(plain, &[]), runs)?;
    rows.push(("kineto summary, plain".into(), json_mb, kp));
    let kp1 = best_of(kineto, k(plain, &["--single-thread", "--no-sha256"]), runs)?;
    rows.push((
        "kineto summary --single-thread --no-sha256".into(),
        json_mb,
        kp1,
    ));
    let kph = best_of(kineto, k(plain, &["--single-thread"]), runs)?;
    rows.push(("kineto summary --single-thread, plain".into(), json_mb, kph));
    // One file on every core. The one-core baseline is the serial parse pinned to one core.
    let one_core = {
        let mut argv = vec![
            "-c".to_string(),
            "0".to_string(),
            kineto.display().to_string(),
        ];
        argv.extend(k(plain, &["--single-thread", "--no-sha256"]));
        best_of(Path::new("taskset"), argv, runs)?
    };
    rows.push((
        "taskset -c 0 … --single-thread --no-sha256".into(),
        json_mb,
        one_core,
    ));
    let two_cores = best_of(kineto, k(plain, &["--threads", "2", "--no-sha256"]), runs)?;
    rows.push((
        "kineto summary --threads 2 --no-sha256".into(),
        json_mb,
        two_cores,
    ));
    // The memory bound on a workstation's core count: 16 range workers (on fewer cores the time is
    // not a 16-core time, but what the workers, their blocks and their malloc arenas hold is).
    let sixteen = best_of(kineto, k(plain, &["--threads", "16", "--no-sha256"]), runs)?;
    rows.push((
        "--threads 16 --no-sha256 (for its RSS)".into(),
        json_mb,
        sixteen,
    ));
    let hashed = best_of(kineto, k(plain, &["--threads", "2"]), runs)?;
    rows.push((
        "kineto summary --threads 2 (sha256)".into(),
        json_mb,
        hashed,
    ));
    let hash_alone = hash_alone(plain, runs);
    if let Some((what, m)) = &hash_alone {
        rows.push((format!("{what} (hash alone)"), json_mb, *m));
    }
    Ok(PlainRuns {
        default: kp,
        single_no_hash: kp1,
        single: kph,
        one_core,
        two_cores,
        sixteen,
        hashed,
        hash_alone,
    })
}

/// The runs on the gzip file and its decompression baselines.
struct GzipRuns {
    /// Default: every core.
    default: Measure,
    /// `--single-thread`.
    single: Measure,
    /// Inflating alone (flate2 with zlib-rs), the best of the runs.
    inflate: Duration,
    /// `gzip -dc` to /dev/null, when it runs.
    gzip_dc: Option<Measure>,
}

/// Times `kineto summary` on the gzip file (a row each), inflating alone and `gzip -dc`.
fn measure_gzip(
    kineto: &Path,
    gz: &Path,
    runs: usize,
    json_mb: f64,
    rows: &mut Vec<Row>,
) -> Result<GzipRuns, String> {
    let kg = best_of(kineto, summary_argv(gz, &[]), runs)?;
    rows.push(("kineto summary, gzip".into(), json_mb, kg));
    let kg1 = best_of(kineto, summary_argv(gz, &["--single-thread"]), runs)?;
    rows.push(("kineto summary --single-thread, gzip".into(), json_mb, kg1));
    let inflate = {
        let mut t = Duration::MAX;
        for _ in 0..runs {
            t = t.min(inflate_only(gz)?);
        }
        t
    };
    // The everyday baseline too: `gzip -dc` to /dev/null, as a user would decompress before parsing.
    let gzip_dc = measure(
        Path::new("gzip"),
        &["-dc".to_string(), gz.display().to_string()],
    )
    .ok();
    Ok(GzipRuns {
        default: kg,
        single: kg1,
        inflate,
        gzip_dc,
    })
}

/// Python's `json.load` on the plain and the gzip file (`None` when skipped).
#[derive(Default)]
struct Python {
    plain: Option<Measure>,
    gz: Option<Measure>,
}

/// Times the Python baseline on both files, a row each.
fn measure_python(
    plain: &Path,
    gz: &Path,
    json_mb: f64,
    rows: &mut Vec<Row>,
) -> Result<Python, String> {
    let py = PathBuf::from("python3");
    let m = measure(
        &py,
        &[
            "-c".into(),
            "import json,sys; json.load(open(sys.argv[1]))".into(),
            plain.display().to_string(),
        ],
    )?;
    rows.push(("python3 json.load, plain".into(), json_mb, m));
    let py_plain = Some(m);
    let m = measure(
        &py,
        &[
            "-c".into(),
            "import gzip,json,sys; json.load(gzip.open(sys.argv[1]))".into(),
            gz.display().to_string(),
        ],
    )?;
    rows.push(("python3 json.load, gzip".into(), json_mb, m));
    Ok(Python {
        plain: py_plain,
        gz: Some(m),
    })
}

/// The table: each row's wall time, MB/s, peak RSS and RSS per file byte; then the decompression lines.
fn print_table(rows: &[Row], json_mb: f64, g: &GzipRuns) {
    println!(
        "\n{:<42} {:>9} {:>10} {:>11} {:>9}",
        "what", "wall s", "MB/s", "peak RSS", "RSS/file"
    );
    for (what, mb, m) in rows {
        println!(
            "{:<42} {:>9.3} {:>10.0} {:>8.1} MB {:>9.3}",
            what,
            m.wall.as_secs_f64(),
            mb / m.wall.as_secs_f64(),
            m.rss_kb as f64 / 1024.0,
            m.rss_kb as f64 * 1024.0 / (json_mb * 1e6),
        );
    }
    println!(
        "{:<42} {:>9.3} {:>10.0}",
        "inflate alone (flate2 zlib-rs)",
        g.inflate.as_secs_f64(),
        json_mb / g.inflate.as_secs_f64()
    );
    if let Some(d) = g.gzip_dc {
        println!(
            "{:<42} {:>9.3} {:>10.0}",
            "gzip -dc > /dev/null",
            d.wall.as_secs_f64(),
            json_mb / d.wall.as_secs_f64()
        );
    }
}

/// The ratios against the targets, each with its verdict.
fn print_ratios(json_mb: f64, p: &PlainRuns, g: &GzipRuns, py: &Python) {
    println!("\nratios and targets:");
    let mbps = |m: &Measure| json_mb / m.wall.as_secs_f64();
    println!(
        "  parser alone, 1 thread: {:.0} MB/s (target ≥ 1000)  {}",
        mbps(&p.single_no_hash),
        verdict(mbps(&p.single_no_hash) >= 1000.0)
    );
    println!("  default plain:        {:.0} MB/s", mbps(&p.default));
    print_core_scaling(p);
    if let Some((what, h)) = &p.hash_alone {
        print_hash_ratio(what, p.hashed, h.wall.as_secs_f64());
    }
    let rss_ratio = [
        p.default,
        p.single_no_hash,
        p.single,
        g.default,
        g.single,
        p.two_cores,
        p.sixteen,
        p.hashed,
    ]
    .iter()
    .map(|m| m.rss_kb)
    .max()
    .unwrap_or(0) as f64
        * 1024.0
        / (json_mb * 1e6);
    println!(
        "  peak RSS / file:      {rss_ratio:.3} (target ≤ 0.25)  {}",
        verdict(rss_ratio <= 0.25)
    );
    let gz_ratio = g.default.wall.as_secs_f64() / g.inflate.as_secs_f64();
    println!(
        "  gzip / inflate alone: {gz_ratio:.2}× (target ≤ 1.3×)  {}",
        verdict(gz_ratio <= 1.3)
    );
    if let Some(d) = g.gzip_dc {
        println!(
            "  gzip / `gzip -dc`:    {:.2}×",
            g.default.wall.as_secs_f64() / d.wall.as_secs_f64()
        );
    }
    if let Some(m) = py.plain {
        let faster = m.wall.as_secs_f64() / p.default.wall.as_secs_f64();
        println!(
            "  vs python json.load:  {faster:.1}× faster (target ≥ 50×)  {}, {:.1}× less memory (plain)",
            verdict(faster >= 50.0),
            m.rss_kb as f64 / p.default.rss_kb as f64
        );
    }
    if let Some(m) = py.gz {
        println!(
            "                        {:.1}× faster (gzip)",
            m.wall.as_secs_f64() / g.default.wall.as_secs_f64()
        );
    }
}

/// Two cores against one, and the serial fraction that pair implies with what it predicts for 16.
fn print_core_scaling(p: &PlainRuns) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t1 = p.one_core.wall.as_secs_f64();
    let t2 = p.two_cores.wall.as_secs_f64();
    let speedup = t1 / t2;
    println!(
        "  2 cores / 1 core (--no-sha256): {speedup:.2}× (target ≥ 1.7×, {cores} cores here)  {}",
        verdict(speedup >= 1.7)
    );
    // Amdahl: t2 / t1 = s + (1 − s) / 2, so s = 2·t2/t1 − 1; on n cores the speedup is
    // 1 / (s + (1 − s) / n).
    let serial = (2.0 * t2 / t1 - 1.0).clamp(0.0, 1.0);
    let at16 = 1.0 / (serial + (1.0 - serial) / 16.0);
    println!(
        "  serial fraction (Amdahl, MEASURED from the pair): {serial:.3}; predicted on 16 cores: \
         {at16:.1}× (ESTIMATED, = 1 / (s + (1 − s)/16))"
    );
}

/// The hashed parse against hashing alone (`h` seconds, by `what`), and the floor its CPU time puts on
/// that ratio on n cores.
fn print_hash_ratio(what: &str, hashed: Measure, h: f64) {
    let r = hashed.wall.as_secs_f64() / h;
    println!(
        "  with sha256 / {what} alone: {r:.2}× (target ≤ 1.15×)  {}",
        verdict(r <= 1.15)
    );
    // n cores give at most n CPU-seconds a second, and the hash is one sequential chain, so the
    // hashed parse takes at least max(its CPU-seconds / n, the hash alone) on n cores, whatever the
    // scheduling (the CPU-seconds taken as they are on this machine's run, with 2 workers).
    let cpu = hashed.cpu.as_secs_f64();
    println!(
        "    its CPU: {cpu:.3} s over {:.3} s wall ({:.2} cores busy, MEASURED); the ratio's floor \
         on n cores, max(CPU / n, hash) / hash (ESTIMATED; a floor, not a prediction): 2: {:.2}×, \
         4: {:.2}×, 16: {:.2}×; 1.15× on 2 cores needs CPU ≤ 2.3 × the hash alone = {:.3} s",
        hashed.wall.as_secs_f64(),
        cpu / hashed.wall.as_secs_f64(),
        (cpu / 2.0).max(h) / h,
        (cpu / 4.0).max(h) / h,
        (cpu / 16.0).max(h) / h,
        2.3 * h,
    );
}

/// Hashing the file alone, the best of `runs`: `openssl dgst -sha256` (SHA extensions where the CPU
/// has them), else `sha256sum`; `None` when neither runs.
fn hash_alone(file: &Path, runs: usize) -> Option<(String, Measure)> {
    let f = file.display().to_string();
    let tools: [(&str, Vec<String>); 2] = [
        ("openssl", vec!["dgst".into(), "-sha256".into(), f.clone()]),
        ("sha256sum", vec![f]),
    ];
    for (tool, argv) in tools {
        let mut best: Option<Measure> = None;
        for _ in 0..runs.max(1) {
            match measure(Path::new(tool), &argv) {
                Ok(m) if best.is_none_or(|b| m.wall < b.wall) => best = Some(m),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if let Some(m) = best {
            return Some((tool.to_string(), m));
        }
    }
    None
}

/// `cargo xtask bench-parse-generate SOURCE PLAIN GZ BYTES`: the generator step, run as a child.
pub fn generate_task(args: &[String]) -> Result<(), String> {
    let [source, plain, gz, bytes] = args else {
        return Err("usage: bench-parse-generate SOURCE PLAIN GZ BYTES".into());
    };
    let bytes: u64 = bytes.parse().map_err(|e| format!("BYTES: {e}"))?;
    eprintln!("generating {plain} from {source}");
    let copies = generate(Path::new(source), Path::new(plain), bytes)?;
    eprintln!("  {copies} copies of the source's events; gzipping");
    gzip_file(Path::new(plain), Path::new(gz))
}

pub(crate) fn verdict(ok: bool) -> &'static str {
    if ok { "MET" } else { "MISSED" }
}

fn file_len(p: &Path) -> Result<u64, String> {
    std::fs::metadata(p)
        .map(|m| m.len())
        .map_err(|e| format!("{}: {e}", p.display()))
}

#[derive(Clone, Copy)]
pub(crate) struct Measure {
    pub(crate) wall: Duration,
    pub(crate) rss_kb: i64,
    /// User + system CPU time of the child (wait4), every thread together.
    pub(crate) cpu: Duration,
}

/// Runs a command to completion; wall time and the child's own peak RSS (wait4, so one child's
/// figure is never mixed with another's).
pub(crate) fn measure(cmd: &Path, argv: &[String]) -> Result<Measure, String> {
    let t0 = Instant::now();
    let child = Command::new(cmd)
        .args(argv)
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", cmd.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for the child we just spawned and own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped; `status` and `ru` are valid, writable locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = t0.elapsed();
    if r != pid {
        return Err(format!(
            "wait4 on {}: {}",
            cmd.display(),
            std::io::Error::last_os_error()
        ));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!(
            "{} {:?} failed (status {status})",
            cmd.display(),
            argv
        ));
    }
    std::mem::forget(child);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(Measure {
        wall,
        rss_kb: ru.ru_maxrss,
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
    })
}

fn inflate_only(gz: &Path) -> Result<Duration, String> {
    let f = std::fs::File::open(gz).map_err(|e| format!("{}: {e}", gz.display()))?;
    let t0 = Instant::now();
    let mut d = flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 20, f));
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match d.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("{}: {e}", gz.display())),
        }
    }
    Ok(t0.elapsed())
}

fn gzip_file(src: &Path, dst: &Path) -> Result<(), String> {
    let input = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let tmp = dst.with_extension("gz.tmp");
    let f = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut enc =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(f), flate2::Compression::new(6));
    enc.write_all(&input).map_err(|e| e.to_string())?;
    enc.finish().map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, dst).map_err(|e| e.to_string())
}

/// Finds `"traceEvents": [` … `]` in the text: returns the byte range of the array's body.
fn events_body(text: &[u8]) -> Result<(usize, usize), String> {
    let key = b"\"traceEvents\"";
    let k = text
        .windows(key.len())
        .position(|w| w == key)
        .ok_or("source has no traceEvents")?;
    let open = k + text[k..].iter().position(|&b| b == b'[').ok_or("no '['")?;
    let mut depth = 0usize;
    let mut in_str = false;
    let mut i = open;
    while i < text.len() {
        let b = text[i];
        if in_str {
            match b {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_str = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((open + 1, i));
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    Err("unterminated traceEvents".into())
}

/// Writes `target` bytes or more of trace: the source's header and trailer around copies of its
/// events, copy r shifted by r × (source span + 1 ms) and its ids by r × (largest id + 1).
fn generate(source: &Path, out: &Path, target: u64) -> Result<u64, String> {
    let mut raw = Vec::new();
    let f = std::fs::File::open(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let mut r: Box<dyn Read> = if source.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else {
        Box::new(f)
    };
    r.read_to_end(&mut raw)
        .map_err(|e| format!("{}: {e}", source.display()))?;
    let (a, b) = events_body(&raw)?;
    let body = {
        let mut e = b;
        while e > a && raw[e - 1].is_ascii_whitespace() {
            e -= 1;
        }
        let mut s = a;
        while s < e && raw[s].is_ascii_whitespace() {
            s += 1;
        }
        &raw[s..e]
    };
    let re_ts = Regex::new(r#""ts": (-?[0-9]+)(\.[0-9]+)?"#).map_err(|e| e.to_string())?;
    let re_id =
        Regex::new(r#""(correlation|External id|id)": ([0-9]+)"#).map_err(|e| e.to_string())?;
    let mut min_ts = i128::MAX;
    let mut max_ts = i128::MIN;
    for c in re_ts.captures_iter(body) {
        let v = ts_ns(&c);
        min_ts = min_ts.min(v);
        max_ts = max_ts.max(v);
    }
    let mut max_id: u64 = 0;
    for c in re_id.captures_iter(body) {
        let v: u64 = std::str::from_utf8(&c[2])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        max_id = max_id.max(v);
    }
    let shift_ns = (max_ts - min_ts).max(0) + 1_000_000;
    let copies = target.div_ceil(body.len() as u64).max(1);
    let tmp = out.with_extension("json.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let io = |e: std::io::Error| e.to_string();
    w.write_all(&raw[..a]).map_err(io)?;
    w.write_all(b"\n").map_err(io)?;
    for r in 0..copies {
        if r > 0 {
            w.write_all(b",\n").map_err(io)?;
        }
        let dt = shift_ns * i128::from(r as u32);
        let did = (max_id + 1) * r;
        let shifted = re_ts.replace_all(body, |c: &Captures| {
            let v = ts_ns(c) + dt;
            let three = c.get(2).is_some();
            if three {
                format!("\"ts\": {}.{:03}", v.div_euclid(1000), v.rem_euclid(1000)).into_bytes()
            } else {
                format!("\"ts\": {}", v / 1000).into_bytes()
            }
        });
        let shifted = re_id.replace_all(&shifted, |c: &Captures| {
            let v: u64 = std::str::from_utf8(&c[2])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let mut s = b"\"".to_vec();
            s.extend_from_slice(&c[1]);
            s.extend_from_slice(format!("\": {}", v + did).as_bytes());
            s
        });
        w.write_all(&shifted).map_err(io)?;
    }
    w.write_all(b"\n").map_err(io)?;
    w.write_all(&raw[b..]).map_err(io)?;
    w.flush().map_err(io)?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(|e| e.to_string())?;
    Ok(copies)
}

/// A `"ts": N[.ddd]` capture in ns (integer µs sources are scaled; fractions beyond 3 digits dropped).
fn ts_ns(c: &Captures) -> i128 {
    let int: i128 = std::str::from_utf8(&c[1])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let frac = c.get(2).map_or(0, |m| {
        let d = &m.as_bytes()[1..];
        let mut v: i128 = 0;
        for i in 0..3 {
            v = v * 10 + d.get(i).map_or(0, |&b| i128::from(b - b'0'));
        }
        v
    });
    if int < 0 {
        int * 1000 - frac
    } else {
        int * 1000 + frac
    }
}
