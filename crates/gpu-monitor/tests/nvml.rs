//! NVML on whatever machine runs the tests: without a driver it must say why, never panic; with one it must
//! sample. (The H200 check is a separate script, docs/gpu-monitor.md.)

// Helpers outside #[test] functions fail the test that calls them, as the tests themselves do.
#![allow(clippy::expect_used)]

use gpu_monitor::{
    BackendChoice, BackendKind, Monitor, MonitorConfig, SourceEnd, Unavailable, gpu_identity,
    sample_once,
};

fn nvml() -> MonitorConfig {
    MonitorConfig {
        interval_ms: 20,
        backend: BackendChoice::Nvml,
        ..MonitorConfig::default()
    }
}

#[test]
fn nvml_is_used_or_its_absence_is_explained() {
    let m = Monitor::start(nvml());
    match m.backend() {
        Some(kind) => {
            assert_eq!(kind, BackendKind::Nvml);
            std::thread::sleep(std::time::Duration::from_millis(300));
            let c = m.stop();
            assert!(!c.samples.is_empty());
        }
        None => {
            let c = m.stop();
            assert_eq!(c.end, SourceEnd::NoBackend);
            assert_eq!(c.rejected.len(), 1);
            assert_eq!(c.rejected[0].backend, BackendKind::Nvml);
            let why = &c.rejected[0].reason;
            assert!(
                why.contains("libnvidia-ml.so.1") || why.contains("driver"),
                "{why}"
            );
            let json = serde_json::to_value(c.summary()).expect("json");
            assert_eq!(json["backend"], serde_json::Value::Null);
            assert_eq!(json["rejected"][0]["backend"], "nvml");
        }
    }
}

#[test]
fn one_shot_calls_return_the_reason() {
    match sample_once(&nvml()) {
        Ok(samples) => assert!(!samples.is_empty()),
        Err(Unavailable::NoBackend { reasons }) => {
            assert_eq!(reasons.len(), 1);
            assert!(
                reasons[0]
                    .reason
                    .starts_with("NVML could not be initialised")
            );
        }
        Err(other) => panic!("unexpected {other:?}"),
    }
    if let Err(e) = gpu_identity(&nvml()) {
        assert!(
            e.to_string()
                .contains("no GPU backend available: nvml: NVML could not be initialised"),
            "{e}"
        );
    }
}

#[test]
fn a_zero_interval_is_refused_with_a_reason() {
    let c = Monitor::start(MonitorConfig {
        interval_ms: 0,
        ..nvml()
    })
    .stop();
    assert_eq!(c.backend, None);
    assert!(
        c.rejected[0]
            .reason
            .contains("interval_ms must be at least 1")
    );
}
