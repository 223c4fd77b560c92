//! Replay backend: the three recorded forms, selection, bad lines, and the summary of a recording.

// Helpers outside #[test] functions fail the test that calls them, as the tests themselves do.
#![allow(clippy::expect_used)]

use std::path::PathBuf;

use gpu_monitor::{
    BackendChoice, BackendKind, GpuId, GpuSelection, Monitor, MonitorConfig, SourceEnd, Timestamps,
    sample_once,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn replay(name: &str, interval_ms: u64, gpus: GpuSelection) -> gpu_monitor::Recording {
    let monitor = Monitor::start(MonitorConfig {
        interval_ms,
        backend: BackendChoice::Replay(fixture(name)),
        gpus,
        ..MonitorConfig::default()
    });
    monitor.wait();
    monitor.stop()
}

#[test]
fn raw_nvidia_smi_csv_gets_synthesised_ticks() {
    let c = replay("replay-raw-smi.csv", 250, GpuSelection::All);
    assert_eq!(c.backend, Some(BackendKind::Replay));
    assert_eq!(c.end, SourceEnd::Exhausted);
    assert_eq!(c.timestamps, Some(Timestamps::Synthesised));
    assert_eq!(c.samples.len(), 6);
    let times: Vec<(u32, f64)> = c.samples.iter().map(|s| (s.index, s.t_s)).collect();
    assert_eq!(
        times,
        vec![(0, 0.0), (1, 0.0), (0, 0.25), (1, 0.25), (0, 0.5), (1, 0.5)]
    );
    assert_eq!(c.counters.get("replay_bad_lines"), Some(&1));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("line 6") && w.contains("Unknown Error")),
        "{:?}",
        c.warnings
    );
    let s = c.summary();
    assert_eq!(s.gpus.len(), 2);
    let g1 = &s.gpus[1];
    assert_eq!(
        g1.stats.throttle_reasons_seen,
        vec!["gpu_idle", "sw_thermal_slowdown"]
    );
    assert_eq!(g1.stats.pstates_seen, vec!["P0", "P8"]);
    // Synthesised times say nothing about sampling quality, so none is claimed.
    assert_eq!(g1.interval.achieved_ms, None);
    assert!(
        g1.interval
            .note
            .as_deref()
            .is_some_and(|n| n.contains("synthesised"))
    );
}

#[test]
fn our_csv_keeps_recorded_times_and_energy() {
    let c = replay("replay-ours.csv", 1000, GpuSelection::All);
    assert_eq!(c.timestamps, Some(Timestamps::Recorded));
    assert_eq!(c.samples.len(), 5);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let g = &c.summary().gpus[0];
    let e = &g.energy;
    assert_eq!(e.counter_j, Some(800.0));
    assert_eq!(e.integrated_power_j, Some(800.0));
    assert_eq!(e.relative_difference, Some(0.0));
    assert_eq!(e.agrees, Some(true));
    let busy = g.stats.clocks_sm_busy.expect("busy");
    assert_eq!((busy.n, busy.min, busy.median), (4, 1980.0, 1980.0));
    assert_eq!(g.interval.gaps.n, 0);
    assert_eq!(g.interval.achieved_ms.map(|a| a.median), Some(1000.0));
}

#[test]
fn jsonl_with_nvml_fields() {
    let c = replay("replay.jsonl", 1000, GpuSelection::All);
    assert_eq!(c.timestamps, Some(Timestamps::Recorded));
    assert_eq!(c.samples.len(), 5);
    assert_eq!(c.counters.get("replay_bad_lines"), Some(&1));
    let g = &c.summary().gpus[0];
    assert_eq!(g.index, 1);
    assert_eq!(g.uuid.as_deref(), Some("GPU-rec-0001"));
    // 1980 1900 1800 1850 1410: odd count, median 1850.
    let sm = g.stats.clocks_sm.expect("clocks");
    assert_eq!((sm.min, sm.median, sm.max), (1410.0, 1850.0, 1980.0));
    // Busy: the first four (utilisation 90 95 99 80); even count, median (1850 + 1900) / 2.
    let busy = g.stats.clocks_sm_busy.expect("busy");
    assert_eq!((busy.n, busy.median), (4, 1875.0));
    assert_eq!(
        g.stats.throttle_reasons_seen,
        vec!["gpu_idle", "sw_power_cap", "sw_thermal_slowdown"]
    );
    assert_eq!(g.throttle_reason_samples.get("sw_power_cap"), Some(&4));
    let t = g.throttle_time_s.as_ref().expect("violation counters");
    assert_eq!(t.span_s, 4.0);
    assert_eq!(t.power, Some(2.5));
    assert_eq!(t.thermal, Some(0.1));
    assert_eq!(t.sync_boost, None);
    assert_eq!(t.low_utilization, Some(0.5));
    // Counter: 1000 J over 4 s = 250 W; samples: 800 J = 200 W; −20 % is outside the 10 % tolerance.
    let e = &g.energy;
    assert_eq!(e.counter_avg_power_w, Some(250.0));
    assert_eq!(e.integrated_avg_power_w, Some(200.0));
    assert_eq!(e.relative_difference, Some(-0.2));
    assert_eq!(e.agrees, Some(false));
    assert!(
        e.note.as_deref().is_some_and(|n| n.contains("-20.0 %")),
        "{:?}",
        e.note
    );
    assert_eq!(g.processes_seen.len(), 1);
    assert_eq!(g.processes_seen[0].used_memory_mib, Some(1000.0));
    assert_eq!(g.processes_seen[0].name.as_deref(), Some("python3"));
    assert_eq!(g.power_limit.map(|p| p.median), Some(700.0));
}

#[test]
fn selection_filters_by_index_and_uuid_prefix() {
    let c = replay(
        "replay-raw-smi.csv",
        100,
        GpuSelection::Only(vec![GpuId::Uuid("GPU-rec-0001".into())]),
    );
    assert!(c.samples.iter().all(|s| s.index == 1));
    assert_eq!(c.samples.len(), 3);
    let c = replay(
        "replay-raw-smi.csv",
        100,
        GpuSelection::Only(vec![GpuId::Index(0), GpuId::Index(7)]),
    );
    assert!(c.samples.iter().all(|s| s.index == 0));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("Index(7)") && w.contains("never appears")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn our_csv_output_replays_to_the_same_samples() {
    let original = replay("replay.jsonl", 1000, GpuSelection::All);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rec.csv");
    let mut text = gpu_monitor::Sample::csv_header() + "\n";
    for s in &original.samples {
        text += &s.to_csv_row();
        text.push('\n');
    }
    std::fs::write(&path, text).expect("write");
    let back = Monitor::start(MonitorConfig {
        backend: BackendChoice::Replay(path),
        ..MonitorConfig::default()
    });
    back.wait();
    let back = back.stop();
    assert_eq!(back.samples.len(), original.samples.len());
    for (a, b) in back.samples.iter().zip(&original.samples) {
        assert_eq!(
            (a.t_s, a.clocks_sm, a.energy_mj, a.throttle_mask),
            (b.t_s, b.clocks_sm, b.energy_mj, b.throttle_mask)
        );
    }
}

#[test]
fn missing_file_is_unavailable_not_a_panic() {
    let c = replay("no-such-file.jsonl", 100, GpuSelection::All);
    assert_eq!(c.backend, None);
    assert_eq!(c.end, SourceEnd::NoBackend);
    assert_eq!(c.rejected.len(), 1);
    assert!(
        c.rejected[0].reason.contains("no-such-file.jsonl"),
        "{}",
        c.rejected[0].reason
    );
    let s = c.summary();
    assert_eq!(s.n_samples, 0);
    assert!(s.gpus.is_empty());
}

#[test]
fn sample_once_reads_the_first_tick() {
    let config = MonitorConfig {
        backend: BackendChoice::Replay(fixture("replay-raw-smi.csv")),
        ..MonitorConfig::default()
    };
    let first = sample_once(&config).expect("samples");
    assert_eq!(
        first.iter().map(|s| s.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(first[0].clocks_sm, Some(1980.0));
}

#[test]
fn empty_recording_gives_null_fields_not_nan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("empty.jsonl");
    std::fs::write(&path, "").expect("write");
    let m = Monitor::start(MonitorConfig {
        backend: BackendChoice::Replay(path),
        ..MonitorConfig::default()
    });
    m.wait();
    let s = m.stop().summary();
    assert_eq!(s.n_samples, 0);
    let json = serde_json::to_string(&s).expect("json");
    assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
}

fn replay_text(text: &str, interval_ms: u64) -> gpu_monitor::Recording {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rec.jsonl");
    std::fs::write(&path, text).expect("write");
    let monitor = Monitor::start(MonitorConfig {
        interval_ms,
        backend: BackendChoice::Replay(path),
        gpus: GpuSelection::All,
        ..MonitorConfig::default()
    });
    monitor.wait();
    monitor.stop()
}

#[test]
fn impossible_readings_are_marked_invalid_counted_and_kept_out_of_the_statistics() {
    let line = |t: f64, sm: &str, util: &str, mem: &str, pstate: &str| {
        format!(
            "{{\"t_s\":{t},\"index\":0,\"pstate\":\"{pstate}\",\"clocks.sm\":{sm},\"utilization.gpu\":{util},\"memory.used\":{mem}}}\n"
        )
    };
    let text = [
        line(0.0, "1000", "50", "100", "P0"),
        line(0.1, "-5", "150", "-1", "P99"),
        line(0.2, "1e23", "60", "200", "P2"),
        line(0.3, "2000", "70", "300", "P0"),
    ]
    .concat();
    let r = replay_text(&text, 100);
    assert_eq!(r.samples.len(), 4);
    assert_eq!(r.counters.get("invalid_values"), Some(&5));
    let s = r.summary();
    let g = &s.gpus[0];
    // Only 1000 and 2000 MHz are possible SM clocks: median (1000 + 2000) / 2.
    let sm = g.stats.clocks_sm.expect("sm");
    assert_eq!((sm.min, sm.median, sm.max), (1000.0, 1500.0, 2000.0));
    let util = g.stats.utilization_gpu.expect("util");
    assert_eq!((util.min, util.max), (50.0, 70.0));
    assert_eq!(g.stats.pstates_seen, vec!["P0", "P2"]);
    let counts: Vec<(&str, usize)> = g
        .invalid_values
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        counts,
        vec![
            ("clocks.sm", 2),
            ("memory.used", 1),
            ("pstate", 1),
            ("utilization.gpu", 1)
        ]
    );
    // Not counted twice as null.
    assert_eq!(g.null_values.get("clocks.sm"), None);
    assert_eq!(r.samples[1].invalid[0].value, "-5");
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(json["gpus"][0]["invalid_values"]["clocks.sm"], 2);
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("GPU 0 clocks.sm = -5 is impossible")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn replayed_times_going_backwards_are_warned_about_with_the_line() {
    let line = |t: f64| format!("{{\"t_s\":{t},\"index\":0,\"clocks.sm\":1000}}\n");
    let text = [line(0.0), line(0.5), line(0.2), line(1.0)].concat();
    let r = replay_text(&text, 100);
    assert_eq!(r.counters.get("replay_time_backwards"), Some(&1));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("line 3: GPU 0 at t_s 0.2 goes back from 0.5 on line 2")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn readings_kept_in_memory_are_bounded_by_thinning_evenly() {
    // 10 000 readings of one GPU, 0.1 s apart, with room for 1 000. Worked by hand: the bound is met at 1 000
    // kept (stride 1 → 2, 500 left), again after readings 1 000…1 998 (→ 4), 2 000…3 996 (→ 8) and
    // 4 000…7 992 (→ 16); readings 8 000…9 984 that are multiples of 16 add 125 to the 500: 625 kept, every
    // 16th reading, 1.6 s apart.
    let text: String = (0..10_000)
        .map(|k| {
            format!(
                "{{\"t_s\":{},\"index\":0,\"clocks.sm\":{}}}\n",
                k as f64 / 10.0,
                k
            )
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("long.jsonl");
    std::fs::write(&path, text).expect("write");
    let monitor = Monitor::start(MonitorConfig {
        interval_ms: 100,
        backend: BackendChoice::Replay(path),
        gpus: GpuSelection::All,
        max_samples_kept: 1000,
        ..MonitorConfig::default()
    });
    monitor.wait();
    let r = monitor.stop();
    assert_eq!(r.kept_every, 16);
    assert_eq!(r.samples.len(), 625);
    assert_eq!(r.counters.get("samples_thinned"), Some(&(10_000 - 625)));
    for (j, s) in r.samples.iter().enumerate() {
        assert_eq!(s.clocks_sm, Some((16 * j) as f64));
    }
    let s = r.summary();
    assert_eq!(s.kept_every, 16);
    // Evenly thinned: no gap against 16 × the interval, full coverage of the recording's span.
    assert_eq!(s.gpus[0].interval.gaps.n, 0);
    assert_eq!(s.coverage.covered_fraction, Some(1.0));
    assert!(
        s.gpus[0]
            .interval
            .note
            .as_deref()
            .unwrap_or("")
            .contains("every 16th")
    );
}

#[test]
fn a_recording_that_is_not_a_regular_file_is_refused_and_an_endless_line_is_cut() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("c string");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    for path in [fifo, PathBuf::from("/dev/zero")] {
        let err = sample_once(&MonitorConfig {
            backend: BackendChoice::Replay(path.clone()),
            ..MonitorConfig::default()
        })
        .expect_err("refused");
        assert!(err.to_string().contains("regular file"), "{path:?}: {err}");
    }
    // 1 MiB without a newline, then a good reading: the long line is a bad line, not 1 MiB held.
    let mut text = "x".repeat(1 << 20);
    text.push_str("\n{\"t_s\":0.5,\"index\":0,\"clocks.sm\":1000}\n");
    let r = replay_text(&text, 100);
    assert_eq!(r.samples.len(), 1);
    assert_eq!(r.counters.get("replay_bad_lines"), Some(&1));
    assert!(
        r.warnings[0].contains("longer than 65536 bytes"),
        "{:?}",
        r.warnings
    );
}

#[test]
fn a_csv_column_gpu_monitor_does_not_read_is_named_and_the_rows_are_still_read() {
    // Before: the header was not recognised, and every row was "fewer fields than columns".
    let text = "# t_s,index,uuid,fan.speed,clocks.sm\n0.0,0,GPU-x,40,1980\n0.5,0,GPU-x,41,1950\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rec.csv");
    std::fs::write(&path, text).expect("write");
    let monitor = Monitor::start(MonitorConfig {
        interval_ms: 500,
        backend: BackendChoice::Replay(path),
        gpus: GpuSelection::All,
        ..MonitorConfig::default()
    });
    monitor.wait();
    let r = monitor.stop();
    assert_eq!(r.samples.len(), 2);
    assert_eq!(r.samples[1].clocks_sm, Some(1950.0));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("a column, `fan.speed`") && w.contains("line 1")),
        "{:?}",
        r.warnings
    );
    assert!(
        !r.warnings.iter().any(|w| w.contains("fewer fields")),
        "{:?}",
        r.warnings
    );
}
