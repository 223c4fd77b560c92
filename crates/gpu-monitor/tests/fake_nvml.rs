//! The NVML backend end to end against a fake `libnvidia-ml.so.1` (tests/fixtures/fake_nvml.c, compiled here
//! with the C compiler that links Rust programs): unit conversions, fields missing from an "old driver",
//! NOT_SUPPORTED answers, unknown clock-event bits, violation counters, processes, identity.

// Helpers outside #[test] functions fail the test that calls them, as the tests themselves do.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gpu_monitor::{
    BackendChoice, BackendKind, Monitor, MonitorConfig, SourceEnd, Timestamps, gpu_identity,
    sample_once,
};

fn build_fake(dir: &Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_nvml.c");
    let lib = dir.join("libnvidia-ml.so.1");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?} (set CC): {e}"));
    assert!(status.success(), "compiling the fake NVML failed");
    lib
}

fn config(lib: &Path) -> MonitorConfig {
    MonitorConfig {
        interval_ms: 20,
        backend: BackendChoice::Nvml,
        nvml_library: Some(lib.to_path_buf()),
        ..MonitorConfig::default()
    }
}

#[test]
fn nvml_backend_against_a_fake_old_driver() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = build_fake(dir.path());

    // The newest sample time seen, in µs, so the test can wait for a span long enough for the energy check:
    // 3 s, so that a thread descheduled for up to 300 ms between stamping and reading stays inside 10 %.
    let newest = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&newest);
    let m = Monitor::start_with_observer(
        config(&lib),
        Box::new(move |s| {
            seen.fetch_max((s.t_s * 1e6) as u64, Ordering::SeqCst);
        }),
    );
    assert_eq!(m.backend(), Some(BackendKind::Nvml));
    let deadline = Instant::now() + Duration::from_secs(60);
    while newest.load(Ordering::SeqCst) < 3_000_000 {
        assert!(Instant::now() < deadline, "samples never covered 3 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = m.stop();
    assert_eq!(c.end, SourceEnd::Stopped);
    assert_eq!(c.timestamps, Some(Timestamps::HostSampled));
    assert_eq!(
        c.gpus.iter().map(|g| g.uuid.as_deref()).collect::<Vec<_>>(),
        vec![Some("GPU-fakenvml-0000"), Some("GPU-fakenvml-0001")]
    );
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);

    let s0 = c.samples.iter().find(|s| s.index == 0).expect("gpu 0");
    assert_eq!(s0.pstate.as_deref(), Some("P0"));
    assert_eq!(
        (s0.clocks_sm, s0.clocks_mem, s0.temperature_gpu),
        (Some(1980.0), Some(2619.0), Some(55.0))
    );
    assert_eq!(
        (s0.power_draw, s0.power_limit, s0.utilization_gpu),
        (Some(350.0), Some(700.0), Some(87.0))
    );
    assert_eq!(
        s0.memory_used, None,
        "nvmlDeviceGetMemoryInfo_v2 is missing from this driver"
    );
    assert_eq!(s0.throttle_mask, Some(0x1004));
    assert!(s0.energy_mj.is_some());
    let v = s0.violation_ns.as_ref().expect("violation counters");
    assert!(v.power.is_some() && v.thermal.is_none() && v.board_limit == Some(0));
    let procs = s0.processes.as_ref().expect("processes");
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0].pid, std::process::id());
    assert_eq!(
        (procs[0].kind.as_str(), procs[0].used_memory_mib),
        ("compute", Some(1024.0))
    );
    assert!(
        procs[0].name.is_some(),
        "our own /proc/<pid>/comm is readable"
    );
    let s1 = c.samples.iter().find(|s| s.index == 1).expect("gpu 1");
    assert_eq!((s1.pstate.as_deref(), s1.energy_mj), (Some("P2"), None));

    let note = |gpu: u32, field: &str| {
        c.unavailable_fields
            .iter()
            .find(|n| n.index == gpu && n.field == field)
            .map(|n| n.reason.clone())
    };
    assert!(
        note(0, "memory.used").is_some_and(|r| r.contains("lacks this function")),
        "{:?}",
        c.unavailable_fields
    );
    assert!(note(1, "energy_mj").is_some(), "{:?}", c.unavailable_fields);
    assert!(note(0, "violation_ns.thermal").is_some());
    assert_eq!(note(0, "energy_mj"), None);
    // Each reason once per GPU and field, not once per sample.
    assert_eq!(
        c.unavailable_fields
            .iter()
            .filter(|n| n.field == "memory.used")
            .count(),
        2
    );

    let s = c.summary();
    let g0 = &s.gpus[0];
    assert_eq!(
        g0.stats.throttle_reasons_seen,
        vec!["sw_power_cap", "unknown_0x1000"]
    );
    let t = g0.throttle_time_s.as_ref().expect("throttle time");
    let power = t.power.expect("power-cap time");
    // The fake caps a quarter of the time; host and fake clocks differ by scheduling only.
    assert!(
        (power / t.span_s - 0.25).abs() < 0.05,
        "{power} over {}",
        t.span_s
    );
    assert_eq!(t.thermal, None);
    assert_eq!(g0.energy.agrees, Some(true), "{:?}", g0.energy);
    assert_eq!(s.gpus[1].energy.counter_j, None);
    assert_eq!(g0.processes_seen.len(), 1);
    assert!(s.monitor_cpu.sampling_thread_s.is_some());

    let once = sample_once(&config(&lib)).expect("one-shot");
    assert_eq!(once.len(), 2);
    assert_eq!(once[1].clocks_sm, Some(1980.0));

    let id = gpu_identity(&config(&lib)).expect("identity");
    assert_eq!(id.backend, BackendKind::Nvml);
    let g = &id.gpus[0];
    assert_eq!(g.name.as_deref(), Some("NVIDIA Fake"));
    assert_eq!(g.driver_version.as_deref(), Some("535.00.fake"));
    assert_eq!(g.cuda_driver_version.as_deref(), Some("12.2"));
    assert_eq!(g.vbios_version.as_deref(), Some("96.00.fake"));
    assert_eq!(
        (g.power_limit_w, g.persistence_mode),
        (Some(700.0), Some(true))
    );
    assert_eq!(g.pci_bus_id, None);
    assert!(
        g.unavailable
            .get("pci_bus_id")
            .is_some_and(|r| r.contains("lacks this function")),
        "{:?}",
        g.unavailable
    );
    assert_eq!(g.unavailable.len(), 1, "{:?}", g.unavailable);

    // A selection by UUID prefix reaches NVML too.
    let mut one = config(&lib);
    one.gpus = "GPU-fakenvml-0001".parse().expect("selection");
    assert_eq!(
        sample_once(&one)
            .expect("selected")
            .iter()
            .map(|s| s.index)
            .collect::<Vec<_>>(),
        vec![1]
    );
}
