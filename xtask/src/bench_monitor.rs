//! `cargo xtask bench-monitor`: the CPU cost of the GPU monitor per sample, with the fake-`nvidia-smi` and
//! replay backends, each against a baseline measured in the same run.
//!
//! * nvidia-smi: the monitor streaming a fake 8-GPU `nvidia-smi` (crates/gpu-monitor/tests/fixtures) at the
//!   requested interval, against a baseline thread that reads the same fake's output and only counts lines —
//!   the least any reader of nvidia-smi pays. Cost = the sampling thread's CPU (getrusage RUSAGE_THREAD), so
//!   the fake's own CPU (a shell forking `sleep`) is reported apart and is not the monitor's.
//! * replay: a generated recording read by the monitor, against a baseline that reads the same file line by
//!   line, per format.
//!
//! The target is ≤ 0.1 % of one core at 100 ms: for the streaming run that is measured directly (thread CPU
//! over wall time); for replay it is per-sample cost × 8 GPUs × 10 readings per second.
//!
//! Options: `--seconds N` (streaming run length, default 10), `--interval-ms N` (default 100),
//! `--replay-samples N` (default 200000).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gpu_monitor::{BackendChoice, Monitor, MonitorConfig, Recording, Sample, SourceEnd};

const TARGET_FRACTION: f64 = 0.001;
const GPUS: u32 = 8;

struct Options {
    seconds: f64,
    interval_ms: u64,
    replay_samples: usize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        seconds: 10.0,
        interval_ms: 100,
        replay_samples: 200_000,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--seconds" => o.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--interval-ms" => {
                o.interval_ms = value()?
                    .parse()
                    .map_err(|e| format!("--interval-ms: {e}"))?
            }
            "--replay-samples" => {
                o.replay_samples = value()?
                    .parse()
                    .map_err(|e| format!("--replay-samples: {e}"))?
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.seconds.is_nan() || o.seconds <= 0.0 || o.interval_ms == 0 || o.replay_samples == 0 {
        return Err("--seconds, --interval-ms and --replay-samples must be positive".into());
    }
    Ok(o)
}

/// CPU seconds (user + system) of the calling thread.
fn thread_cpu_s() -> f64 {
    // SAFETY: zeroed `rusage` is valid plain data; getrusage fills it for the calling thread.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn fake_smi() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/gpu-monitor/tests/fixtures/nvidia-smi-eight.sh")
}

/// Reads the fake's streamed output on a thread for `seconds`, counting lines: the floor for any reader.
fn baseline_stream(smi: &Path, interval_ms: u64, seconds: f64) -> Result<(u64, f64, f64), String> {
    let mut child = Command::new(smi)
        .args([
            "--query-gpu=index,uuid,pstate,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu,memory.used,clocks_throttle_reasons.active",
            "--format=csv,noheader,nounits",
            &format!("-lms={interval_ms}"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{}: {e}", smi.display()))?;
    let out = child.stdout.take().ok_or("no stdout")?;
    let started = Instant::now();
    let reader = std::thread::spawn(move || {
        let c0 = thread_cpu_s();
        let mut lines = 0u64;
        for line in BufReader::new(out).lines() {
            if line.is_err() {
                break;
            }
            lines += 1;
        }
        (lines, thread_cpu_s() - c0)
    });
    std::thread::sleep(Duration::from_secs_f64(seconds));
    // The fake's `sleep` children share its group; killing the group closes the pipe for the reader.
    let pid = i32::try_from(child.id()).map_err(|e| e.to_string())?;
    // SAFETY: signalling the group of our own, not yet reaped, child.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = child.wait();
    let wall = started.elapsed().as_secs_f64();
    let (lines, cpu) = reader.join().map_err(|_| "baseline reader panicked")?;
    Ok((lines, cpu, wall))
}

fn monitor_stream(smi: &Path, interval_ms: u64, seconds: f64) -> Result<Recording, String> {
    let m = Monitor::start(MonitorConfig {
        interval_ms,
        backend: BackendChoice::NvidiaSmi,
        nvidia_smi: Some(smi.to_path_buf()),
        ..MonitorConfig::default()
    });
    if m.backend().is_none() {
        return Err(format!("monitor has no backend: {:?}", m.stop().rejected));
    }
    std::thread::sleep(Duration::from_secs_f64(seconds));
    Ok(m.stop())
}

fn write_recording(dir: &Path, n: usize) -> Result<(PathBuf, PathBuf), String> {
    let csv = dir.join("rec.csv");
    let jsonl = dir.join("rec.jsonl");
    let mut c = std::io::BufWriter::new(std::fs::File::create(&csv).map_err(|e| e.to_string())?);
    let mut j = std::io::BufWriter::new(std::fs::File::create(&jsonl).map_err(|e| e.to_string())?);
    writeln!(c, "{}", Sample::csv_header()).map_err(|e| e.to_string())?;
    for i in 0..n {
        let mut s = Sample::empty((i as u32 / GPUS) as f64 * 0.1, i as u32 % GPUS);
        s.uuid = Some(format!("GPU-bench-{:04}", i as u32 % GPUS));
        s.pstate = Some("P0".into());
        s.clocks_sm = Some(1980.0 - (i % 7) as f64 * 15.0);
        s.clocks_mem = Some(2619.0);
        s.temperature_gpu = Some(60.0 + (i % 5) as f64);
        s.power_draw = Some(650.0 + (i % 11) as f64);
        s.utilization_gpu = Some(97.0);
        s.memory_used = Some(70123.0);
        s.throttle_mask = Some(4);
        s.power_limit = Some(700.0);
        s.energy_mj = Some(i as u64 * 65_000);
        writeln!(c, "{}", s.to_csv_row()).map_err(|e| e.to_string())?;
        writeln!(
            j,
            "{}",
            serde_json::to_string(&s).map_err(|e| e.to_string())?
        )
        .map_err(|e| e.to_string())?;
    }
    c.flush().map_err(|e| e.to_string())?;
    j.flush().map_err(|e| e.to_string())?;
    Ok((csv, jsonl))
}

/// CPU of reading `path` line by line on this thread.
fn baseline_read(path: &Path) -> Result<(u64, f64), String> {
    let c0 = thread_cpu_s();
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut lines = 0u64;
    for line in BufReader::new(f).split(b'\n') {
        line.map_err(|e| e.to_string())?;
        lines += 1;
    }
    Ok((lines, thread_cpu_s() - c0))
}

fn monitor_replay(path: &Path) -> Result<Recording, String> {
    let m = Monitor::start(MonitorConfig {
        backend: BackendChoice::Replay(path.to_path_buf()),
        ..MonitorConfig::default()
    });
    m.wait();
    let c = m.stop();
    if c.end != SourceEnd::Exhausted {
        return Err(format!("replay ended {:?}", c.end));
    }
    Ok(c)
}

/// Readings the monitor recorded: those kept plus those thinned away by the memory bound (the cost is per
/// reading recorded either way).
fn recorded(r: &Recording) -> usize {
    r.samples.len() + r.counters.get("samples_thinned").copied().unwrap_or(0) as usize
}

fn verdict(fraction: f64) -> &'static str {
    if fraction <= TARGET_FRACTION {
        "within"
    } else {
        "OVER"
    }
}

/// Runs the benchmark.
pub fn run(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let smi = fake_smi();
    println!(
        "bench-monitor: CPU cost of gpu-monitor per sample; target <= {:.1} % of one core at 100 ms",
        TARGET_FRACTION * 100.0
    );
    println!();
    println!(
        "nvidia-smi backend, fake {GPUS}-GPU nvidia-smi at {} ms, {} s per run",
        o.interval_ms, o.seconds
    );
    let (base_lines, base_cpu, base_wall) = baseline_stream(&smi, o.interval_ms, o.seconds)?;
    let cap = monitor_stream(&smi, o.interval_ms, o.seconds)?;
    let n = recorded(&cap);
    let cpu = cap
        .monitor_cpu
        .sampling_thread_s
        .ok_or("no thread CPU figure on this platform")?;
    let per_base = base_cpu * 1e6 / base_lines.max(1) as f64;
    let per_mon = cpu * 1e6 / n.max(1) as f64;
    let frac = cpu / cap.duration_s;
    println!(
        "  baseline (read + count lines): {base_lines} lines, {:.2} ms CPU, {per_base:.2} us/line, {:.4} % of one core",
        base_cpu * 1e3,
        base_cpu / base_wall * 100.0
    );
    println!(
        "  monitor:                       {n} samples, {:.2} ms CPU, {per_mon:.2} us/sample, {:.4} % of one core ({} the target)",
        cpu * 1e3,
        frac * 100.0,
        verdict(frac)
    );
    println!(
        "  ratio monitor/baseline per line: {:.2}",
        per_mon / per_base.max(1e-9)
    );
    if let Some(child) = cap.monitor_cpu.child_process_s {
        println!(
            "  (the fake nvidia-smi itself, a shell forking sleep: {:.1} ms CPU — not the monitor's, not the real tool's)",
            child * 1e3
        );
    }
    let s = cap.summary();
    if let Some((g, a)) = s
        .gpus
        .first()
        .and_then(|g| g.interval.achieved_ms.map(|a| (g, a)))
    {
        println!(
            "  achieved interval GPU 0: median {:.1} ms (min {:.1}, max {:.1}), gaps {}",
            a.median, a.min, a.max, g.interval.gaps.n
        );
    }
    println!();
    let dir = std::env::temp_dir().join(format!("kl1-bench-monitor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = (|| -> Result<(), String> {
        let (csv, jsonl) = write_recording(&dir, o.replay_samples)?;
        println!(
            "replay backend, {} samples of {GPUS} GPUs",
            o.replay_samples
        );
        for (name, path) in [("csv", &csv), ("jsonl", &jsonl)] {
            // Warm the page cache so both sides read from memory.
            baseline_read(path)?;
            let (lines, base) = baseline_read(path)?;
            let cap = monitor_replay(path)?;
            let cpu = cap
                .monitor_cpu
                .sampling_thread_s
                .ok_or("no thread CPU figure")?;
            let n = recorded(&cap);
            let per_base = base * 1e6 / lines.max(1) as f64;
            let per_mon = cpu * 1e6 / n.max(1) as f64;
            // 8 GPUs at 100 ms: 80 samples a second.
            let at_100ms = per_mon * 1e-6 * f64::from(GPUS) * 10.0;
            println!(
                "  {name:<5}: baseline {per_base:.3} us/line; monitor {per_mon:.3} us/sample ({n} samples, {:.1} ms CPU); ratio {:.1}; \
                 at 100 ms x {GPUS} GPUs: {:.5} % of one core ({} the target)",
                cpu * 1e3,
                per_mon / per_base.max(1e-9),
                at_100ms * 100.0,
                verdict(at_100ms)
            );
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
