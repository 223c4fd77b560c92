//! The nvidia-smi backend against fake nvidia-smi scripts: normal output, `[N/A]`, garbage, a child that dies,
//! one that hangs, one that fails, a driver with the renamed field. No timing is asserted: waits are for
//! events, with deadlines generous enough for a loaded two-core machine, and a deadline passing is a failure
//! only because the event never came.

// Helpers outside #[test] functions fail the test that calls them, as the tests themselves do.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gpu_monitor::{
    BackendChoice, BackendKind, GpuId, GpuSelection, GpuSource, Monitor, MonitorConfig, Recording,
    SourceEnd, Timestamps, Unavailable, gpu_identity, sample_once,
};

const PATIENCE: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn config(script: &Path, interval_ms: u64) -> MonitorConfig {
    MonitorConfig {
        interval_ms,
        backend: BackendChoice::NvidiaSmi,
        nvidia_smi: Some(script.to_path_buf()),
        ..MonitorConfig::default()
    }
}

/// Starts a monitor and returns it with a counter of samples seen so far.
fn start(config: MonitorConfig) -> (Monitor, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let m = Monitor::start_with_observer(
        config,
        Box::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
    );
    (m, seen)
}

fn wait_for(seen: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + PATIENCE;
    while seen.load(Ordering::SeqCst) < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} samples arrived",
            seen.load(Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `stop` on another thread so that a hang fails the test instead of hanging it.
fn stop_within_patience(m: Monitor) -> Recording {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(m.stop());
    });
    rx.recv_timeout(PATIENCE).expect("stop did not return")
}

/// A copy of a fixture (and the shared part) in a fresh directory, for scripts that write next to themselves.
fn private_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    for f in [name, "fake-common.sh"] {
        std::fs::copy(fixture(f), dir.path().join(f)).expect("copy");
    }
    let script = dir.path().join(name);
    (dir, script)
}

fn process_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie is dead; only its parent (init, here) has yet to collect it.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits until the hanging fake has started its `sleep` and written its pid; returns the pid.
fn wait_for_pid(pid_file: &Path) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(p) = std::fs::read_to_string(pid_file)
            && p.ends_with('\n')
        {
            return p.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the fake never wrote {}",
            pid_file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_killed(pid: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !process_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "process {pid} left running by the fake nvidia-smi survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn normal_output_from_two_gpus() {
    let (m, seen) = start(config(&fixture("nvidia-smi-normal.sh"), 50));
    assert_eq!(m.backend(), Some(BackendKind::NvidiaSmi));
    wait_for(&seen, 8);
    let c = stop_within_patience(m);
    assert_eq!(c.end, SourceEnd::Stopped);
    assert_eq!(c.timestamps, Some(Timestamps::HostReceived));
    assert!(c.rejected.is_empty());
    assert_eq!(
        c.gpus.iter().map(|g| g.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert!(c.samples.len() >= 8);
    assert!(c.samples.windows(2).all(|w| w[0].t_s <= w[1].t_s));
    let s0 = c.samples.iter().find(|s| s.index == 0).expect("gpu 0");
    assert_eq!(s0.uuid.as_deref(), Some("GPU-fake-0000"));
    assert_eq!(c.counters.get("garbage_lines"), None);
    // A fake starved for seconds on a loaded machine may be reported silent; nothing else may be said.
    assert!(
        c.warnings.iter().all(|w| w.contains("printed nothing")),
        "{:?}",
        c.warnings
    );
    assert!(c.monitor_cpu.child_process_s.is_some());
    assert!(c.monitor_cpu.sampling_thread_s.is_some());
    let s = c.summary();
    let g = &s.gpus[1];
    assert_eq!(g.stats.pstates_seen, vec!["P0", "P8"]);
    assert_eq!(
        g.stats.throttle_reasons_seen,
        vec!["gpu_idle", "sw_power_cap"]
    );
    let busy = g.stats.clocks_sm_busy.expect("busy");
    assert_eq!((busy.min, busy.max), (1980.0, 1980.0));
    assert_eq!(g.stats.clocks_sm.map(|x| x.min), Some(345.0));
    assert_eq!(g.stats.power_draw.map(|x| x.max), Some(650.51));
    assert!(g.interval.achieved_ms.is_some());
    assert!(s.monitor_cpu.per_sample_us.is_some());
}

#[test]
fn selection_is_passed_to_the_child() {
    let mut cfg = config(&fixture("nvidia-smi-normal.sh"), 50);
    cfg.gpus = GpuSelection::Only(vec![GpuId::Uuid("GPU-fake-0001".into())]);
    let (m, seen) = start(cfg);
    wait_for(&seen, 3);
    let c = stop_within_patience(m);
    assert!(c.samples.iter().all(|s| s.index == 1));
    // The fake honours --id, so nothing had to be filtered out here.
    assert_eq!(c.counters.get("unselected_lines"), None);
}

#[test]
fn missing_values_are_none_and_counted() {
    let (m, seen) = start(config(&fixture("nvidia-smi-na.sh"), 50));
    wait_for(&seen, 2);
    let c = stop_within_patience(m);
    let s = &c.samples[0];
    assert_eq!(
        (
            s.pstate.as_ref(),
            s.clocks_sm,
            s.clocks_mem,
            s.power_draw,
            s.throttle_mask
        ),
        (None, Some(1410.0), None, None, None)
    );
    assert!(c.counters.get("na_values").is_some_and(|n| *n >= 4));
    assert!(
        c.counters
            .get("not_supported_values")
            .is_some_and(|n| *n >= 4)
    );
    let g = &c.summary().gpus[0];
    assert_eq!(g.stats.power_draw, None);
    assert!(g.stats.throttle_reasons_seen.is_empty());
    assert_eq!(g.null_values.get("power.draw"), Some(&g.n_samples));
}

#[test]
fn garbage_lines_are_counted_and_shown_never_fatal() {
    let (m, seen) = start(config(&fixture("nvidia-smi-garbage.sh"), 50));
    wait_for(&seen, 6);
    let c = stop_within_patience(m);
    assert_eq!(c.end, SourceEnd::Stopped);
    for counter in ["short_lines", "garbage_lines", "bad_values", "empty_lines"] {
        assert!(
            c.counters.get(counter).is_some_and(|n| *n > 0),
            "{counter}: {:?}",
            c.counters
        );
    }
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("Unable to determine the device handle")),
        "{:?}",
        c.warnings
    );
    // The line with nan/inf/hot parses (its bad values counted above, and None: csv.rs's unit tests), but it
    // comes right after the tick's good line for the same GPU: over the requested rate, so dropped and counted.
    assert!(
        c.counters.get("samples_over_rate").is_some_and(|n| *n > 0),
        "{:?}",
        c.counters
    );
    assert!(
        c.samples
            .iter()
            .all(|s| s.clocks_sm.is_none_or(f64::is_finite))
    );
    let json = serde_json::to_string(&c.summary()).expect("json");
    assert!(!json.contains("NaN"));
}

#[test]
fn a_child_that_exits_early_ends_the_source_and_keeps_what_it_printed() {
    let (m, _) = start(config(&fixture("nvidia-smi-exits-early.sh"), 20));
    assert!(
        m.wait_timeout(PATIENCE),
        "the monitor did not notice the child's exit"
    );
    let c = stop_within_patience(m);
    assert_eq!(
        c.samples.len(),
        6,
        "three ticks of two GPUs were printed before the exit"
    );
    let SourceEnd::Died { detail } = &c.end else {
        panic!("end: {:?}", c.end)
    };
    assert!(detail.contains("exit status 3"), "{detail}");
    assert!(detail.contains("GPU is lost"), "{detail}");
    assert!(c.monitor_cpu.child_process_s.is_some());
    // The death is a coverage fact: when the source ended, and a stretch from the last reading to the stop.
    let ended = c.source_ended_s.expect("the source ended before the stop");
    let last = c.samples.iter().map(|s| s.t_s).fold(0.0, f64::max);
    assert!(
        ended >= last && ended <= c.duration_s,
        "{ended} {last} {}",
        c.duration_s
    );
    let cov = c.summary().coverage;
    assert!(
        cov.problem.as_deref().unwrap_or("").contains("died"),
        "{cov:?}"
    );
    assert_eq!(cov.source_ended_s, Some(ended));
    // The summary's figure is the worst GPU's: the earliest last reading.
    let last_of = |i: u32| {
        c.samples
            .iter()
            .filter(|s| s.index == i)
            .map(|s| s.t_s)
            .fold(0.0, f64::max)
    };
    assert_eq!(cov.last_sample_s, Some(last_of(0).min(last_of(1))));
}

#[test]
fn a_hung_child_is_reported_and_killed_with_its_group_on_stop() {
    let (dir, script) = private_copy("nvidia-smi-hangs.sh");
    let (m, seen) = start(config(&script, 50));
    wait_for(&seen, 1);
    let pid = wait_for_pid(&dir.path().join("sleep.pid"));
    // Silence is reported after max(10 intervals, 2 s) without output; three times that leaves room for a
    // sampling thread starved by a loaded machine.
    std::thread::sleep(Duration::from_secs(6));
    let c = stop_within_patience(m);
    assert_eq!(c.end, SourceEnd::Stopped);
    assert_eq!(c.samples.len(), 1);
    assert_eq!(
        c.counters.get("stop_grace_expired"),
        Some(&1),
        "the fake ignores SIGTERM: {:?}",
        c.counters
    );
    assert!(
        c.counters.get("silent_periods").is_some_and(|n| *n >= 1),
        "{:?}",
        c.counters
    );
    assert!(
        c.warnings.iter().any(|w| w.contains("printed nothing")),
        "{:?}",
        c.warnings
    );
    assert_killed(&pid);
}

#[test]
fn dropping_the_monitor_kills_the_child() {
    let (dir, script) = private_copy("nvidia-smi-hangs.sh");
    let (m, seen) = start(config(&script, 50));
    wait_for(&seen, 1);
    let pid = wait_for_pid(&dir.path().join("sleep.pid"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(m);
        let _ = tx.send(());
    });
    rx.recv_timeout(PATIENCE).expect("drop did not return");
    assert_killed(&pid);
}

#[test]
fn a_stop_handle_from_another_thread_ends_wait() {
    let (m, seen) = start(config(&fixture("nvidia-smi-normal.sh"), 50));
    wait_for(&seen, 1);
    let handle = m.stop_handle();
    std::thread::spawn(move || handle.stop());
    assert!(m.wait_timeout(PATIENCE));
    assert_eq!(stop_within_patience(m).end, SourceEnd::Stopped);
}

#[test]
fn a_failing_nvidia_smi_is_unavailable_with_its_own_words() {
    let cfg = config(&fixture("nvidia-smi-fails.sh"), 50);
    let c = stop_within_patience(Monitor::start(cfg.clone()));
    assert_eq!(c.backend, None);
    assert_eq!(c.end, SourceEnd::NoBackend);
    assert_eq!(c.rejected.len(), 1);
    let why = &c.rejected[0].reason;
    assert!(
        why.contains("exit status 9")
            && why.contains("couldn't communicate with the NVIDIA driver"),
        "{why}"
    );
    let err = sample_once(&cfg).expect_err("no backend");
    assert!(
        matches!(&err, Unavailable::NoBackend { reasons } if reasons.len() == 1),
        "{err:?}"
    );
    assert!(gpu_identity(&cfg).is_err());
}

#[test]
fn a_missing_nvidia_smi_is_unavailable() {
    let cfg = config(Path::new("/nonexistent/nvidia-smi"), 50);
    let c = Monitor::start(cfg).stop();
    assert!(
        c.rejected[0]
            .reason
            .contains("nvidia-smi not found: /nonexistent/nvidia-smi"),
        "{:?}",
        c.rejected
    );
}

#[test]
fn the_renamed_mask_field_is_used_when_the_old_one_is_refused() {
    let (m, seen) = start(config(&fixture("nvidia-smi-new-field.sh"), 50));
    wait_for(&seen, 2);
    let c = stop_within_patience(m);
    assert_eq!(c.backend, Some(BackendKind::NvidiaSmi));
    assert_eq!(
        c.summary().gpus[0].stats.throttle_reasons_seen,
        vec!["sw_thermal_slowdown"]
    );
}

#[test]
fn one_shot_sample_and_identity() {
    let cfg = config(&fixture("nvidia-smi-normal.sh"), 500);
    let samples = sample_once(&cfg).expect("samples");
    assert_eq!(
        samples.iter().map(|s| s.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(samples[0].clocks_sm, Some(1980.0));
    let id = gpu_identity(&cfg).expect("identity");
    assert_eq!(id.backend, BackendKind::NvidiaSmi);
    assert_eq!(id.gpus.len(), 2);
    let g = &id.gpus[1];
    assert_eq!(g.name.as_deref(), Some("NVIDIA H200"));
    assert_eq!(g.uuid.as_deref(), Some("GPU-fake-0001"));
    assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:11:00.0"));
    assert_eq!(g.driver_version.as_deref(), Some("550.54.15"));
    assert_eq!(g.cuda_driver_version.as_deref(), Some("12.4"));
    assert_eq!(g.vbios_version.as_deref(), Some("96.00.99.00.01"));
    assert_eq!(g.power_limit_w, Some(700.0));
    assert_eq!(g.persistence_mode, Some(true));
    assert!(g.unavailable.is_empty(), "{:?}", g.unavailable);
}

#[test]
fn auto_falls_back_to_nvidia_smi_and_says_why() {
    let mut cfg = config(&fixture("nvidia-smi-normal.sh"), 50);
    cfg.backend = BackendChoice::Auto;
    let (m, seen) = start(cfg);
    match m.backend() {
        // A machine with a working driver: NVML wins and nothing is rejected.
        Some(BackendKind::Nvml) => {
            drop(m);
        }
        other => {
            assert_eq!(other, Some(BackendKind::NvidiaSmi));
            wait_for(&seen, 1);
            let c = stop_within_patience(m);
            assert_eq!(c.rejected.len(), 1);
            assert_eq!(c.rejected[0].backend, BackendKind::Nvml);
            assert!(
                c.rejected[0]
                    .reason
                    .starts_with("NVML could not be initialised"),
                "{}",
                c.rejected[0].reason
            );
        }
    }
}

/// A script that logs each invocation's arguments to `log`, then runs `body`.
fn logging_script(dir: &Path, log: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("nvidia-smi");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$*\" >> {}\n{body}\n", log.display()),
    )
    .expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

fn logged(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_hung_nvidia_smi_costs_one_timeout_per_process_not_one_per_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("calls");
    let script = logging_script(dir.path(), &log, "exec sleep 30");
    let cfg = MonitorConfig {
        query_timeout_ms: 300,
        ..config(&script, 100)
    };
    let first = gpu_monitor::gpu_identity(&cfg).expect_err("hung");
    assert!(
        first.to_string().contains("did not answer within 0.3 s"),
        "{first}"
    );
    // Every later question to the same nvidia-smi is answered from memory, at once.
    let again = gpu_monitor::sample_once(&cfg).expect_err("remembered");
    assert!(again.to_string().contains("not asked again"), "{again}");
    let m = Monitor::start(cfg.clone());
    assert_eq!(m.backend(), None);
    let r = m.stop();
    assert!(
        r.rejected[0].reason.contains("not asked again"),
        "{:?}",
        r.rejected
    );
    assert_eq!(logged(&log).len(), 1, "{:?}", logged(&log));
    // A process that wants to retry can.
    gpu_monitor::forget_failures();
    assert!(gpu_monitor::sample_once(&cfg).is_err());
    assert_eq!(logged(&log).len(), 2);
}

#[test]
fn a_gpu_source_opens_nvidia_smi_once_for_identity_before_and_the_monitor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("calls");
    let script = logging_script(
        dir.path(),
        &log,
        &format!("exec {} \"$@\"", fixture("nvidia-smi-normal.sh").display()),
    );
    let cfg = config(&script, 50);
    let mut source = GpuSource::open(&cfg).expect("open");
    let identity = source.identity();
    assert_eq!(
        identity.gpus[0].cuda_driver_version.as_deref(),
        Some("12.4")
    );
    let before = source.sample_once().expect("before");
    assert_eq!(before.len(), 2);
    let m = source.monitor(None);
    std::thread::sleep(Duration::from_millis(300));
    let r = stop_within_patience(m);
    assert!(!r.samples.is_empty());
    let one_shots = |calls: &[String]| calls.iter().filter(|c| !c.contains("-lms")).count();
    // Opening (whose answer is the reading before), the identity listing and the banner for the CUDA version:
    // three one-shot queries where opening for each question made five.
    assert_eq!(one_shots(&logged(&log)), 3, "{:?}", logged(&log));
    let after = source.sample_once().expect("after");
    assert_eq!(after.len(), 2);
    assert_eq!(one_shots(&logged(&log)), 4);
    let queries: Vec<&str> = source.query_times().iter().map(|q| q.query).collect();
    assert_eq!(queries, vec!["open", "identity", "sample", "sample"]);
    assert!(source.query_s() > 0.0);
}

/// A fake whose `-lms` run floods its pipe with one valid line (`yes` prints it as fast as the pipe takes
/// it: hundreds of thousands per second), `prelude` run first; stopped after 1.5 s. Returns the recording
/// and the pid of the flooding process.
///
/// The Backend contract: `run` returns about a second after a stop is requested. A sampling thread that
/// has not returned 10 s after the stop is left behind and the recording ends `lost`, so `end: stopped`
/// is what says the stop was seen while the child kept the pipe full.
fn flood(prelude: &str) -> (Recording, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("calls");
    let pid_file = dir.path().join("yes.pid");
    let line = "0, GPU-fake-0000, P0, 1980, 2619, 60, 600.00, 90, 4096, 0x0000000000000000";
    let script = logging_script(
        dir.path(),
        &log,
        &format!(
            "case \"$*\" in *-lms*) {prelude}\n echo $$ > {}\n exec yes \"{line}\" ;; esac\necho \"{line}\"",
            pid_file.display()
        ),
    );
    let (m, _) = start(config(&script, 100));
    let pid = wait_for_pid(&pid_file);
    std::thread::sleep(Duration::from_millis(1500));
    (stop_within_patience(m), pid)
}

#[test]
fn a_flooding_nvidia_smi_is_held_to_the_requested_rate() {
    let (r, pid) = flood("");
    assert_killed(&pid);
    let over = r.counters.get("samples_over_rate").copied().unwrap_or(0);
    // At most one reading per half interval (50 ms) is kept: duration / 0.05 + 1.
    let most = (r.duration_s / 0.05).floor() as usize + 1;
    assert!(r.samples.len() <= most, "{} > {most}", r.samples.len());
    assert!(!r.samples.is_empty());
    assert!(over > 10 * r.samples.len() as u64, "only {over} dropped");
    for w in r.samples.windows(2) {
        assert!(w[1].t_s - w[0].t_s >= 0.05, "{} {}", w[0].t_s, w[1].t_s);
    }
    assert_eq!(r.end, SourceEnd::Stopped, "{:?}", r.warnings);
    assert_eq!(
        r.counters.get("stop_grace_expired"),
        None,
        "{:?}",
        r.counters
    );
}

/// The output never pauses, so the poll never times out: the grace must also end while data keeps coming.
#[test]
fn a_flooding_nvidia_smi_that_ignores_sigterm_is_killed_after_the_grace() {
    let (r, pid) = flood("trap '' TERM");
    assert_killed(&pid);
    assert_eq!(r.end, SourceEnd::Stopped, "{:?}", r.warnings);
    assert_eq!(
        r.counters.get("stop_grace_expired"),
        Some(&1),
        "{:?}",
        r.counters
    );
    assert!(!r.samples.is_empty());
}
