//! What changed between two records that could explain a changed number, most telling first.
//!
//! Works on the JSON, not on [`crate::Record`], so that it reads records of older schema versions and the
//! seed's Python records (whose keys this crate kept): a missing key is simply "unknown" on that side.
//!
//! The order is fixed and deliberate (see `docs/provenance.md`): first what makes the two numbers measure
//! different things (another GPU or machine, other benchmark settings, an interrupted run), then different
//! software (code, build, driver), then different conditions (power limit, throttling, clocks, temperature,
//! other users of the GPU or the CPUs), then the rest of the machine's description.

mod comparable;
mod differ;

pub use comparable::{Comparable, INCOMPARABLE_FLAGS, comparable};

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

use crate::record_json::{
    PYTHON_VERSION_KEYS, at, during_gpus, identity_gpus, num, text, user_fields,
};
use differ::{Differ, command_end, coverage_words, gpu_set, gpu_uuids, rel};

/// Relative change in a clock at which it is reported (1 %: a 1 % clock change is a 1 % change in a
/// compute-bound number).
pub const CLOCK_REL: f64 = 0.01;
/// Relative change in median power draw at which it is reported.
pub const POWER_REL: f64 = 0.05;
/// Change in maximum GPU temperature, °C, at which it is reported.
pub const TEMP_DELTA_C: f64 = 5.0;
/// Change in throttle (violation-counter) time, seconds, at which it is reported.
pub const THROTTLE_DELTA_S: f64 = 0.1;
/// Change in the one-minute load average, as a share of the CPU count, at which it is reported.
pub const LOAD_REL_CPUS: f64 = 0.25;
/// Relative change in mean CPU frequency at which it is reported.
pub const CPU_FREQ_REL: f64 = 0.02;

/// One difference between record A and record B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// What differs (`commit`, `GPU 0 SM clock while busy (median)`, …).
    pub what: String,
    /// Its value in A (`unknown` when A does not say).
    pub a: String,
    /// Its value in B.
    pub b: String,
    /// Why it could explain a changed number.
    pub why: String,
    /// Listed for information only: it does not count as a difference ([`telling`]), and it comes last. The
    /// command line is one: two runs that write their results to different files differ in it by necessity.
    pub informational: bool,
    /// Which part of the comparison found it (what decides whether two runs' numbers can be compared:
    /// [`comparable`]). Not written: the listing's order already says it.
    #[serde(skip)]
    pub section: Section,
}

/// The parts of a [`diff`], in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Section {
    /// The two numbers measure different things (GPUs, settings, the command).
    #[default]
    Measured,
    /// Different software (code, build, libraries, driver).
    Software,
    /// Different conditions (clocks, throttling, power, temperature, load).
    Conditions,
    /// The rest of the machine's description, and what is for information.
    Machine,
}

/// Whether any change is more than informational: what `provenance diff` exits 1 on.
pub fn telling(changes: &[Change]) -> bool {
    changes.iter().any(|c| !c.informational)
}

/// The differences between records `a` and `b` that could explain a changed number, most telling first.
///
/// ```
/// use serde_json::json;
/// let a = json!({"time_utc": "t", "git": {"commit": "abc"}, "batch": 8});
/// let b = json!({"time_utc": "t", "git": {"commit": "def"}, "batch": 8});
/// let changes = provenance::diff::diff(&a, &b);
/// assert_eq!(changes[0].what, "commit");
/// assert!(provenance::diff::telling(&changes));
/// ```
pub fn diff(a: &Value, b: &Value) -> Vec<Change> {
    let mut d = Differ {
        a,
        b,
        out: Vec::new(),
        section: Section::Measured,
    };
    different_things_measured(&mut d);
    d.section = Section::Software;
    different_software(&mut d);
    d.section = Section::Conditions;
    different_conditions(&mut d);
    d.section = Section::Machine;
    rest_of_the_machine(&mut d);
    for_information(&mut d);
    d.out
}

/// First: the two numbers measure different things (the GPUs, the machine, the settings, the command).
fn different_things_measured(d: &mut Differ<'_>) {
    gpus_in_use(d);
    d.value("hostname", &["host", "hostname"], "a different machine");
    let fields: BTreeSet<String> = user_fields(d.a).union(&user_fields(d.b)).cloned().collect();
    for f in &fields {
        d.value(
            &format!("field {f}"),
            &[f],
            "a benchmark setting recorded with the run",
        );
    }
    let wrapped = at(d.a, &["command"]).is_some() && at(d.b, &["command"]).is_some();
    if wrapped {
        // The arguments are compared last, for information (see below); the program itself is telling.
        d.value(
            "command program",
            &["command", "argv", "0"],
            "a different program was run",
        );
        let (ea, eb) = (command_end(d.a), command_end(d.b));
        if ea != eb {
            d.push(
                "command exit",
                ea,
                eb,
                "a command that failed or was killed may not have done the whole work",
            );
        }
    } else {
        d.flag(
            "command_failed",
            "a command that failed or was killed may not have done the whole work",
        );
    }
    d.flag(
        "interrupted",
        "an interrupted run measured only part of the work",
    );
}

/// The GPU model, else the set of GPUs of one model, else the boards (UUIDs).
fn gpus_in_use(d: &mut Differ<'_>) {
    let (a, b) = (d.a, d.b);
    match (gpu_set(a), gpu_set(b)) {
        (Some((la, ma)), Some((lb, mb))) if ma != mb => {
            d.push("GPU model", la, lb, "a different GPU model")
        }
        (Some((la, _)), Some((lb, _))) if la != lb => d.push(
            "GPUs in use",
            la,
            lb,
            "a different set of GPUs of the same model: more or fewer GPUs, or other boards",
        ),
        (Some(_), Some(_)) => {
            let (ua, ub) = (gpu_uuids(a), gpu_uuids(b));
            if ua != ub && ua.is_some() && ub.is_some() {
                d.push(
                    "GPU (UUID)",
                    ua.unwrap_or_default(),
                    ub.unwrap_or_default(),
                    "another board of the same model: boards differ by a few percent in clocks and power",
                );
            }
        }
        (Some((l, _)), None) => d.push("GPU model", l, "unknown".into(), "a different GPU model"),
        (None, Some((l, _))) => d.push("GPU model", "unknown".into(), l, "a different GPU model"),
        (None, None) => {}
    }
}

/// Second: different software (code, build, libraries, driver).
fn different_software(d: &mut Differ<'_>) {
    let (a, b) = (d.a, d.b);
    d.value("commit", &["git", "commit"], "different code");
    if !d.value(
        "dirty",
        &["git", "dirty"],
        "uncommitted changes to tracked files",
    ) {
        d.value(
            "uncommitted diff (sha256)",
            &["git", "diff_sha256"],
            "different uncommitted changes",
        );
    }
    d.value(
        "program built with debug assertions",
        &["build", "program", "debug_assertions"],
        "debug vs release build",
    );
    d.value(
        "program version",
        &["build", "program", "version"],
        "a different version of the benchmark",
    );
    d.value("rustc", &["build", "rustc"], "a different compiler");
    for (k, what) in [
        ("toolkit", "CUDA toolkit"),
        ("runtime", "CUDA runtime"),
        ("cudnn", "cuDNN"),
    ] {
        d.value(
            what,
            &["build", "cuda", k, "version"],
            "a different CUDA library: kernels and their selection change",
        );
    }
    for k in PYTHON_VERSION_KEYS {
        d.value(k, &[k], "a different library version");
    }
    if !identity_gpus(a).is_empty() && !identity_gpus(b).is_empty() {
        d.per_gpu_identity("driver_version", "driver", "a different driver");
        d.per_gpu_identity(
            "cuda_driver_version",
            "CUDA driver version",
            "a different driver",
        );
        d.per_gpu_identity("vbios_version", "VBIOS", "different board firmware");
    } else {
        d.value("driver", &["driver"], "a different driver");
    }
}

/// Third: different conditions (what the GPUs went through, then the host).
fn different_conditions(d: &mut Differ<'_>) {
    gpu_conditions(d);
    let (a, b) = (d.a, d.b);
    d.flag("other_gpu_processes", "another process shared the GPU");
    d.flag(
        "gpu_busy_before_start",
        "the GPU was busy when the run started",
    );
    d.flag("host_load_above_cores", "the CPUs were oversubscribed");
    let cpus = num(a, &["cpu_count"])
        .or_else(|| num(b, &["cpu_count"]))
        .unwrap_or(1.0);
    d.number(
        "1-minute load before start",
        &["before", "loadavg", "1m"],
        "",
        |x, y| (x - y).abs() >= LOAD_REL_CPUS * cpus,
        "CPU competition delays kernel launches and data loading",
    );
    d.flag("windows_cpu_busy", "Windows programs competed for the CPUs");
    d.number(
        "Windows CPU before start",
        &["before", "windows_cpu_percent"],
        " %",
        |x, y| (x - y).abs() >= 10.0,
        "Windows programs compete with WSL for the CPUs",
    );
    d.number(
        "CPU frequency before start (mean)",
        &["before", "cpu_freq", "mean_mhz"],
        " MHz",
        |x, y| rel(x, y, CPU_FREQ_REL),
        "host-side work runs at the CPU clock",
    );
    d.per_gpu_identity(
        "persistence_mode",
        "persistence mode",
        "without it the driver re-initialises the GPU",
    );
}

/// The GPUs' conditions: power limit, how well the run was watched, throttling, clocks, heat, power.
fn gpu_conditions(d: &mut Differ<'_>) {
    let (a, b) = (d.a, d.b);
    d.per_gpu_identity(
        "power_limit_w",
        "power limit (W)",
        "a different power limit caps clocks differently",
    );
    let (ca, cb) = (coverage_words(a), coverage_words(b));
    if ca != cb
        && [&ca, &cb]
            .iter()
            .any(|c| c.as_deref().is_some_and(|w| w != "sufficient"))
    {
        d.push(
            "GPU monitor coverage",
            ca.unwrap_or_else(|| "unknown".into()),
            cb.unwrap_or_else(|| "unknown".into()),
            "throttling, clocks and power describe only the watched part of a run the monitor did not cover",
        );
    }
    d.flag("throttled", "throttling lowers clocks");
    for (i, x) in during_gpus(a) {
        if let Some((_, y)) = during_gpus(b).into_iter().find(|(j, _)| *j == i) {
            let seen = |g: &Value| -> Vec<String> {
                match g.get("throttle_reasons_seen") {
                    Some(Value::Array(rs)) => rs.iter().map(|r| text(Some(r))).collect(),
                    _ => Vec::new(),
                }
            };
            let (sa, sb) = (seen(x), seen(y));
            if sa != sb
                && (x.get("throttle_reasons_seen").is_some()
                    && y.get("throttle_reasons_seen").is_some())
            {
                d.push(
                    format!("GPU {i} throttle reasons seen"),
                    if sa.is_empty() {
                        "none".into()
                    } else {
                        sa.join(", ")
                    },
                    if sb.is_empty() {
                        "none".into()
                    } else {
                        sb.join(", ")
                    },
                    "clock-event reasons differ",
                );
            }
        }
    }
    for policy in crate::THROTTLE_POLICIES {
        d.per_gpu_during(
            &["throttle_time_s", policy],
            &format!("time held down by the {policy} limit"),
            " s",
            |x, y| (x - y).abs() >= THROTTLE_DELTA_S,
            "throttle time lowers the average clock",
        );
    }
    let busy = |x: f64, y: f64| rel(x, y, CLOCK_REL);
    d.per_gpu_during(
        &["clocks.sm_busy", "median"],
        "SM clock while busy (median)",
        " MHz",
        busy,
        "compute runs at the SM clock",
    );
    d.per_gpu_during(
        &["clocks.mem", "median"],
        "memory clock (median)",
        " MHz",
        busy,
        "memory-bound work runs at the memory clock",
    );
    d.per_gpu_during(
        &["temperature.gpu", "max"],
        "temperature (max)",
        " °C",
        |x, y| (x - y).abs() >= TEMP_DELTA_C,
        "a hotter GPU boosts less",
    );
    d.per_gpu_during(
        &["power.draw", "median"],
        "power draw (median)",
        " W",
        |x, y| rel(x, y, POWER_REL),
        "power follows the work done and the clocks",
    );
}

/// Fourth: the rest of the machine.
fn rest_of_the_machine(d: &mut Differ<'_>) {
    d.value("CPU model", &["host", "cpu_model"], "a different CPU");
    d.value("CPU count", &["cpu_count"], "a different number of CPUs");
    d.value("kernel", &["host", "kernel"], "a different kernel");
    d.value("OS", &["host", "os"], "a different OS");
    d.value(
        "environment",
        &["environment", "class"],
        "virtualisation changes timings",
    );
    d.value(
        "GPU monitor backend",
        &["during", "backend"],
        "a different way of measuring the GPU",
    );
    d.value(
        "provenance version",
        &["build", "provenance", "version"],
        "a different recorder",
    );
}

/// Last: for information, not counted.
fn for_information(d: &mut Differ<'_>) {
    let (a, b) = (d.a, d.b);
    // For information only. Two runs of the same benchmark usually differ in their command lines by necessity:
    // `claim_output` refuses an existing result file, so each run names its own. Settings that matter belong
    // in fields, which are compared first.
    let why =
        "the arguments differ (often only the result file); not counted: record settings as fields";
    if at(a, &["command", "argv"]).is_some() && at(b, &["command", "argv"]).is_some() {
        d.info("command", &["command", "argv"], why);
    } else {
        d.info("command line", &["command_line"], why);
    }
}

/// How the wrapped command ended, in words: `exit 0`, `killed by SIGKILL`, `not started`.
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(commit: &str, dirty: bool, driver: &str, sm: f64, flags: Value) -> Value {
        json!({
            "schema_version": 1,
            "time_utc": "2026-01-01T00:00:00+00:00",
            "git": {"commit": commit, "dirty": dirty, "diff_sha256": "x"},
            "gpu_name": "NVIDIA H200",
            "cpu_count": 8,
            "gpus": [{
                "index": 0, "name": "NVIDIA H200", "uuid": "GPU-1",
                "driver_version": driver, "power_limit_w": 700.0
            }],
            "host": {"hostname": "node1"},
            "during": {"gpus": [{
                "index": 0, "n_samples": 10,
                "clocks.sm_busy": {"min": sm, "median": sm, "max": sm, "n": 10}
            }]},
            "verdict": {"clean": true, "flags": flags},
            "weights": "bf16"
        })
    }

    #[test]
    fn identical_records_have_no_changes() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn order_is_most_telling_first() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        let mut b = rec(
            "def",
            true,
            "560",
            1800.0,
            json!([{"flag": "throttled", "evidence": "GPU 0: sw_power_cap"}]),
        );
        b["weights"] = json!("fp8");
        let whats: Vec<String> = diff(&a, &b).into_iter().map(|c| c.what).collect();
        assert_eq!(
            whats,
            [
                "field weights",
                "commit",
                "dirty",
                "GPU 0 driver",
                "verdict: throttled",
                "GPU 0 SM clock while busy (median)"
            ]
        );
    }

    #[test]
    fn a_different_gpu_model_comes_first_and_hides_the_uuid_change() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        let mut b = a.clone();
        b["gpus"][0]["name"] = json!("NVIDIA H100 80GB HBM3");
        b["gpus"][0]["uuid"] = json!("GPU-2");
        b["host"]["hostname"] = json!("node2");
        let c = diff(&a, &b);
        assert_eq!(c[0].what, "GPU model");
        assert_eq!(c[0].b, "0: NVIDIA H100 80GB HBM3");
        assert_eq!(c[1].what, "hostname");
        assert!(!c.iter().any(|x| x.what == "GPU (UUID)"));
    }

    #[test]
    fn more_gpus_of_the_same_model_are_not_a_different_model() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        let mut b = a.clone();
        b["gpus"] = json!([
            {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "driver_version": "550", "power_limit_w": 700.0},
            {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-2", "driver_version": "550", "power_limit_w": 700.0}
        ]);
        let c = diff(&a, &b);
        assert_eq!(c[0].what, "GPUs in use", "{c:?}");
        assert_eq!(
            (c[0].a.as_str(), c[0].b.as_str()),
            ("0: NVIDIA H200", "0: NVIDIA H200, 1: NVIDIA H200")
        );
        assert!(!c.iter().any(|x| x.what == "GPU model"));
    }

    #[test]
    fn a_flag_not_checked_or_without_a_verdict_never_reads_not_flagged() {
        let raised =
            json!([{"flag": "throttled", "evidence": "GPU 0: sw_power_cap in 9 of 10 samples"}]);
        let a = rec("abc", false, "550", 1980.0, raised.clone());
        let mut b = rec("abc", false, "550", 1980.0, json!([]));
        b["verdict"]["unchecked"] =
            json!([{"check": "throttled", "reason": "the GPU monitor died before the end"}]);
        let c = diff(&a, &b);
        let t = c
            .iter()
            .find(|x| x.what == "verdict: throttled")
            .expect("listed");
        assert_eq!(t.b, "unchecked: the GPU monitor died before the end");
        assert!(!t.informational);

        // The Python tool's record has no verdict at all.
        let mut old = rec("abc", false, "550", 1980.0, json!([]));
        old.as_object_mut().expect("object").remove("verdict");
        let c = diff(&old, &a);
        let t = c
            .iter()
            .find(|x| x.what == "verdict: throttled")
            .expect("listed");
        assert_eq!(t.a, "unknown (no verdict recorded)");
        // Nothing raised on either side: no line for a record without a verdict …
        let quiet = rec("abc", false, "550", 1980.0, json!([]));
        assert!(
            diff(&old, &quiet)
                .iter()
                .all(|x| !x.what.starts_with("verdict"))
        );
        // … and an information-only line when one side made the check and the other could not.
        let c = diff(&quiet, &b);
        let t = c
            .iter()
            .find(|x| x.what == "verdict: throttled")
            .expect("listed");
        assert!(t.informational && t.a == "not flagged" && t.b.starts_with("unchecked"));
        // Unchecked on both sides, for reasons in other words (an older record's, say): no line.
        let mut b2 = rec("abc", false, "550", 1980.0, json!([]));
        b2["verdict"]["unchecked"] =
            json!([{"check": "throttled", "reason": "no GPU backend: nvml: no driver"}]);
        assert!(!diff(&b, &b2).iter().any(|x| x.what == "verdict: throttled"));
    }

    #[test]
    fn a_run_the_monitor_did_not_cover_is_named_before_its_clocks() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        let mut b = rec("abc", false, "550", 1700.0, json!([]));
        b["during"]["region_coverage"] = json!({
            "sufficient": false, "monitor_end": "died", "gpus": [{"index": 0, "fraction": 0.433}]
        });
        let whats: Vec<(String, String)> =
            diff(&a, &b).into_iter().map(|c| (c.what, c.b)).collect();
        assert_eq!(
            whats[0],
            (
                "GPU monitor coverage".to_owned(),
                "43 % of the region, monitor died".to_owned()
            )
        );
        assert_eq!(whats[1].0, "GPU 0 SM clock while busy (median)");
    }

    #[test]
    fn small_clock_changes_are_not_reported() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        let b = rec("abc", false, "550", 1975.0, json!([]));
        assert!(diff(&a, &b).is_empty(), "{:?}", diff(&a, &b));
    }

    #[test]
    fn a_command_line_that_differs_only_in_the_output_path_is_informational() {
        let mut a = rec("abc", false, "550", 1980.0, json!([]));
        let mut b = a.clone();
        a["command_line"] = json!(["bench", "--n", "3", "--out", "run1.json"]);
        b["command_line"] = json!(["bench", "--n", "3", "--out", "run2.json"]);
        let c = diff(&a, &b);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].what, "command line");
        assert!(c[0].informational);
        assert!(!telling(&c));
        // Informational changes come after every counted one.
        b["git"]["commit"] = json!("def");
        let c = diff(&a, &b);
        assert!(telling(&c));
        assert_eq!(
            c.iter().map(|x| x.what.as_str()).collect::<Vec<_>>(),
            ["commit", "command line"]
        );
    }

    fn wrapped(argv: Value, exit_code: Value, signal: Value) -> Value {
        let mut r = rec("abc", false, "550", 1980.0, json!([]));
        r["command"] = json!({"argv": argv, "pid": 42, "exit_code": exit_code, "signal": signal});
        r
    }

    #[test]
    fn a_wrapped_commands_exit_and_signal_are_compared_first() {
        let a = wrapped(json!(["bench", "--out", "a.json"]), json!(0), Value::Null);
        let b = wrapped(json!(["bench", "--out", "b.json"]), json!(0), Value::Null);
        let c = diff(&a, &b);
        assert!(
            !telling(&c),
            "other result paths alone are not a difference: {c:?}"
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].what, "command");

        let mut b = wrapped(json!(["bench", "--out", "b.json"]), json!(3), Value::Null);
        b["weights"] = json!("fp8");
        let c = diff(&a, &b);
        assert!(telling(&c));
        let whats: Vec<&str> = c.iter().map(|x| x.what.as_str()).collect();
        assert_eq!(whats, ["field weights", "command exit", "command"]);
        assert_eq!((c[1].a.as_str(), c[1].b.as_str()), ("exit 0", "exit 3"));

        let b = wrapped(
            json!(["bench", "--out", "a.json"]),
            Value::Null,
            json!("SIGKILL"),
        );
        let c = diff(&a, &b);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            (c[0].what.as_str(), c[0].b.as_str()),
            ("command exit", "killed by SIGKILL")
        );

        let b = wrapped(
            json!(["other-bench", "--out", "a.json"]),
            json!(0),
            Value::Null,
        );
        let c = diff(&a, &b);
        assert_eq!(c[0].what, "command program");
        assert!(telling(&c));
    }

    #[test]
    fn a_command_failed_flag_is_compared_when_only_one_record_wrapped_a_command() {
        let a = rec("abc", false, "550", 1980.0, json!([]));
        let mut b = wrapped(json!(["bench"]), json!(1), Value::Null);
        b["verdict"]["flags"] =
            json!([{"flag": "command_failed", "evidence": "`bench` exited with status 1"}]);
        let c = diff(&a, &b);
        assert_eq!(c[0].what, "verdict: command_failed");
        assert!(telling(&c));
    }

    #[test]
    fn seed_records_are_read_too() {
        let a = json!({
            "time_utc": "t", "git": {"commit": "a", "dirty": false}, "torch": "2.4", "gpu_name": "X",
            "during": {"n_samples": 3, "clocks.sm_busy": {"min": 1.0, "median": 1500.0, "max": 2.0, "n": 3}}
        });
        let mut b = a.clone();
        b["torch"] = json!("2.5");
        b["during"]["clocks.sm_busy"]["median"] = json!(1400.0);
        let whats: Vec<String> = diff(&a, &b).into_iter().map(|c| c.what).collect();
        assert_eq!(whats, ["torch", "GPU 0 SM clock while busy (median)"]);
    }
}
