//! The on-GPU check of the NVML backend, for a machine with an NVIDIA driver (see docs/gpu-monitor.md):
//! samples every GPU through NVML at 10 ms for 10 s, checks what it got, and prints the summary as JSON.
//!
//! `cargo run --release -p gpu-monitor --example device_check [-- SECONDS INTERVAL_MS]`; exits 1 if a check
//! fails, 2 if NVML is unavailable.

use std::time::Duration;

use gpu_monitor::{BackendChoice, BackendKind, Monitor, MonitorConfig, SourceEnd};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let interval_ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let config = MonitorConfig {
        interval_ms,
        backend: BackendChoice::Nvml,
        ..MonitorConfig::default()
    };
    match gpu_monitor::gpu_identity(&config) {
        Ok(id) => println!("{}", serde_json::to_string_pretty(&id).unwrap_or_default()),
        Err(e) => {
            eprintln!("NVML unavailable: {e}");
            std::process::exit(2);
        }
    }
    let monitor = Monitor::start(config);
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let capture = monitor.stop();
    let summary = capture.summary();
    println!(
        "{}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );

    let mut failures = Vec::new();
    let mut check = |ok: bool, what: String| {
        println!("{} {what}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            failures.push(what);
        }
    };
    check(
        capture.backend == Some(BackendKind::Nvml),
        format!("backend {:?}", capture.backend),
    );
    check(
        capture.end == SourceEnd::Stopped,
        format!("end {:?}", capture.end),
    );
    check(
        !summary.gpus.is_empty(),
        format!("{} GPUs", summary.gpus.len()),
    );
    let expected = seconds * 1000.0 / interval_ms as f64;
    for g in &summary.gpus {
        let n = g.n_samples as f64;
        // Ticks the driver calls could not keep up with are skipped, not queued; half is a generous floor.
        check(
            n >= expected * 0.5,
            format!(
                "GPU {}: {} samples (requested ~{expected:.0})",
                g.index, g.n_samples
            ),
        );
        for (name, present) in [
            ("clocks.sm", g.stats.clocks_sm.is_some()),
            ("clocks.mem", g.stats.clocks_mem.is_some()),
            ("temperature.gpu", g.stats.temperature_gpu.is_some()),
            ("power.draw", g.stats.power_draw.is_some()),
            ("utilization.gpu", g.stats.utilization_gpu.is_some()),
            ("memory.used", g.stats.memory_used.is_some()),
            ("power.limit", g.power_limit.is_some()),
            ("pstate", !g.stats.pstates_seen.is_empty()),
            ("throttle_time_s", g.throttle_time_s.is_some()),
            ("energy counter", g.energy.counter_j.is_some()),
        ] {
            check(present, format!("GPU {}: {name} present", g.index));
        }
        if let Some(a) = g.interval.achieved_ms {
            check(
                a.median >= interval_ms as f64 * 0.9 && a.median <= interval_ms as f64 * 1.5,
                format!(
                    "GPU {}: median interval {:.2} ms for {interval_ms} ms requested",
                    g.index, a.median
                ),
            );
        }
        println!(
            "info GPU {}: energy check {:?} ({:?}), gaps {}, processes {}",
            g.index,
            g.energy.agrees,
            g.energy.relative_difference,
            g.interval.gaps.n,
            g.processes_seen.len()
        );
    }
    println!(
        "info monitor CPU: {:?} s, {:?} us/sample, {:?} of one core; counters {:?}; unavailable fields {:?}",
        summary.monitor_cpu.sampling_thread_s,
        summary.monitor_cpu.per_sample_us,
        summary.monitor_cpu.fraction_of_one_core,
        summary.counters,
        summary.unavailable_fields
    );
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
