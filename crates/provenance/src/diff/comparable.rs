//! Whether two runs' numbers can be compared at all, from their records: each record's own clean-run
//! verdict ([`crate::verdict`]) and what differs between them ([`super::diff`]). What the comparison of a
//! change (`kineto diff`, `provenance diff` of benchmark results) prints beside its verdict.
//!
//! Not comparable: a flag in [`INCOMPARABLE_FLAGS`] raised by either run (throttling, another process on the
//! GPU, an oversubscribed host, an interrupted or failed command, a debug build), or a difference in what was
//! measured (another GPU model or set, a benchmark setting, the program), in the software below the code
//! (driver, CUDA, cuDNN, torch, the compiler, a debug build) or in the conditions (clocks, power limit,
//! throttle time, temperature, host load). Noted, still comparable: a different commit or uncommitted
//! changes (the change being compared), a dirty tree, another machine of the same description, the rest of
//! the machine, and what is for information.

use serde::Serialize;
use serde_json::Value;

use super::{Section, diff};
use crate::record_json::flags;
use crate::verdict::Check;

/// The clean-run flags that make a run's number unfit to compare with another's.
pub const INCOMPARABLE_FLAGS: [Check; 8] = [
    Check::Interrupted,
    Check::CommandFailed,
    Check::Throttled,
    Check::OtherGpuProcesses,
    Check::GpuBusyBeforeStart,
    Check::HostLoadAboveCores,
    Check::WindowsCpuBusy,
    Check::DebugBuild,
];

/// The differences that are the change being compared, or that do not move a GPU number: noted only.
const NOTED: [&str; 4] = ["commit", "dirty", "uncommitted diff (sha256)", "hostname"];

/// Whether two runs can be compared, and every reason, each a sentence naming the side or the difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparable {
    /// False when a reason below is one that makes the runs' numbers unfit to compare.
    pub comparable: bool,
    /// Why not (first), then what is noted.
    pub reasons: Vec<String>,
}

/// Judges records `old` and `new` (see the module's doc).
///
/// ```
/// use serde_json::json;
/// let a = json!({"time_utc": "t", "git": {"commit": "abc"}, "driver": "550"});
/// let b = json!({"time_utc": "t", "git": {"commit": "def"}, "driver": "560"});
/// let c = provenance::diff::comparable(&a, &b);
/// assert!(!c.comparable);
/// assert!(c.reasons[0].starts_with("driver: 550 → 560"));
/// assert!(c.reasons[1].starts_with("noted: commit"));
/// ```
pub fn comparable(old: &Value, new: &Value) -> Comparable {
    let mut against = Vec::new();
    let mut noted = Vec::new();
    for (side, r) in [("OLD", old), ("NEW", new)] {
        for (flag, evidence) in flags(r) {
            let line = format!("{side} run flagged {flag}: {evidence}");
            if INCOMPARABLE_FLAGS.iter().any(|c| c.name() == flag) {
                against.push(line);
            } else {
                noted.push(format!("noted: {line}"));
            }
        }
    }
    for c in diff(old, new) {
        // A flag one side raised is named above, with its evidence.
        if c.informational || c.what.starts_with("verdict: ") {
            continue;
        }
        let line = format!("{}: {} → {} ({})", c.what, c.a, c.b, c.why);
        let decides = c.section != Section::Machine && !NOTED.contains(&c.what.as_str());
        if decides {
            against.push(line);
        } else {
            noted.push(format!("noted: {line}"));
        }
    }
    Comparable {
        comparable: against.is_empty(),
        reasons: against.into_iter().chain(noted).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(driver: &str, flags: Value) -> Value {
        json!({"time_utc": "t", "git": {"commit": "abc", "dirty": false},
               "gpus": [{"index": 0, "name": "NVIDIA H100", "driver_version": driver}],
               "verdict": {"clean": false, "flags": flags}})
    }

    #[test]
    fn the_same_setup_is_comparable_and_says_nothing() {
        let a = record("550.54", json!([]));
        let c = comparable(&a, &a);
        assert!(c.comparable && c.reasons.is_empty(), "{c:?}");
    }

    #[test]
    fn throttling_in_either_run_makes_them_not_comparable() {
        let clean = record("550.54", json!([]));
        let hot = record(
            "550.54",
            json!([{"flag": "throttled", "evidence": "GPU 0: hw_thermal_slowdown seen"}]),
        );
        for (a, b, side) in [(&clean, &hot, "NEW"), (&hot, &clean, "OLD")] {
            let c = comparable(a, b);
            assert!(!c.comparable);
            assert_eq!(
                c.reasons[0],
                format!("{side} run flagged throttled: GPU 0: hw_thermal_slowdown seen")
            );
        }
        // A dirty tree is noted, not disqualifying.
        let dirty = record(
            "550.54",
            json!([{"flag": "dirty_tree", "evidence": "2 files"}]),
        );
        let c = comparable(&clean, &dirty);
        assert!(c.comparable, "{c:?}");
        assert!(
            c.reasons
                .iter()
                .any(|r| r.starts_with("noted: NEW run flagged dirty_tree"))
        );
    }

    #[test]
    fn a_different_driver_makes_them_not_comparable_and_a_commit_is_noted() {
        let a = record("550.54", json!([]));
        let mut b = record("560.28", json!([]));
        b["git"]["commit"] = json!("def");
        let c = comparable(&a, &b);
        assert!(!c.comparable);
        assert!(
            c.reasons.iter().any(|r| r.contains("550.54 → 560.28")),
            "{c:?}"
        );
        assert!(
            c.reasons
                .iter()
                .any(|r| r.starts_with("noted: commit: abc → def"))
        );
    }
}
