//! The clean-run verdict: what about this run could make its number unrepresentative, each with evidence.
//!
//! A flag is raised only on evidence; a check that could not be made (no GPU samples, no load average) is listed
//! under `unchecked` with the reason, so that "no flags" is never mistaken for "checked and fine".

use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;

use crate::environment::EnvClass;
use crate::git::GitInfo;
use crate::gpu::{self, ThrottleEvidence};
use crate::{Probe, Record};

/// GPU utilisation (%) at or above which a GPU counts as busy (the seed's `BUSY_UTIL`; the same threshold
/// gpu-monitor uses for the SM clock while busy).
pub const BUSY_UTIL_PERCENT: f64 = gpu_monitor::BUSY_UTIL_PERCENT;

/// Windows CPU load (%) at or above which, on WSL, Windows programs are taken to compete with the benchmark.
pub const WINDOWS_BUSY_PERCENT: f64 = 25.0;

/// Clock-event reasons that lower clocks because of power, heat or a hardware signal. The others NVML reports
/// (`gpu_idle`, `applications_clocks_setting`, `sync_boost`, `display_clock_setting`) describe an idle GPU or a
/// configuration and are not counted as throttling.
pub const THROTTLE_REASONS: [&str; 5] = [
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
];

/// One kind of verdict flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The run was interrupted (Ctrl-C or a termination signal) before the command ended by itself.
    Interrupted,
    /// The wrapped command exited with a non-zero status or was killed by a signal: its number may cover only
    /// part of the work, or none of it. Raised only for records made by [`crate::wrap`].
    CommandFailed,
    /// A GPU lowered its clocks for power, heat or a hardware signal during the timed region.
    Throttled,
    /// Processes other than this one (and its children) used a GPU in use.
    OtherGpuProcesses,
    /// A GPU was already busy (utilisation ≥ [`BUSY_UTIL_PERCENT`]) just before the timed region.
    GpuBusyBeforeStart,
    /// The host's one-minute load average exceeded its CPU count before or after the run.
    HostLoadAboveCores,
    /// On WSL, Windows' CPU load was at or above [`WINDOWS_BUSY_PERCENT`] before or after the run.
    WindowsCpuBusy,
    /// Tracked files differed from the recorded commit: the commit alone does not name the code that ran.
    DirtyTree,
    /// The benchmark program was built without optimisations (debug assertions on).
    DebugBuild,
}

impl Check {
    /// The snake_case name used in records.
    pub fn name(self) -> &'static str {
        match self {
            Check::Interrupted => "interrupted",
            Check::CommandFailed => "command_failed",
            Check::Throttled => "throttled",
            Check::OtherGpuProcesses => "other_gpu_processes",
            Check::GpuBusyBeforeStart => "gpu_busy_before_start",
            Check::HostLoadAboveCores => "host_load_above_cores",
            Check::WindowsCpuBusy => "windows_cpu_busy",
            Check::DirtyTree => "dirty_tree",
            Check::DebugBuild => "debug_build",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A raised flag and the evidence for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    /// Which check raised it.
    pub flag: Check,
    /// What was observed, in words with the numbers.
    pub evidence: String,
}

/// A check that could not be made, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unchecked {
    /// Which check.
    pub check: Check,
    /// Why it could not be made.
    pub reason: String,
}

/// The verdict on a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Verdict {
    /// No flag was raised. Read with `unchecked`: a check that could not be made raised nothing either.
    pub clean: bool,
    /// Every check was made (`unchecked` is empty).
    pub complete: bool,
    /// Raised flags, in the order of [`Check`].
    pub flags: Vec<Flag>,
    /// Checks that could not be made.
    pub unchecked: Vec<Unchecked>,
}

impl Verdict {
    /// Whether `check` raised a flag.
    ///
    /// ```
    /// use provenance::{Check, Verdict};
    /// assert!(!Verdict::default().has(Check::Throttled));
    /// assert_eq!(Check::DirtyTree.name(), "dirty_tree");
    /// ```
    pub fn has(&self, check: Check) -> bool {
        self.flags.iter().any(|f| f.flag == check)
    }

    /// Replaces the outcome of one check made after the others (the wrapped command's status, known only once
    /// the record is finished), keeping the order of [`Check`] and `clean`/`complete` in step.
    pub(crate) fn set(&mut self, check: Check, evidence: Option<String>) {
        self.flags.retain(|f| f.flag != check);
        self.unchecked.retain(|u| u.check != check);
        if let Some(evidence) = evidence {
            self.flags.push(Flag {
                flag: check,
                evidence,
            });
            self.flags.sort_by_key(|f| f.flag);
        }
        self.clean = self.flags.is_empty();
        self.complete = self.unchecked.is_empty();
    }
}

/// Builds a verdict from check outcomes. Each check contributes `Ok(None)` (made, nothing found),
/// `Ok(Some(evidence))` (flag) or `Err(reason)` (could not be made).
#[derive(Debug, Default)]
pub(crate) struct VerdictBuilder {
    flags: Vec<Flag>,
    unchecked: Vec<Unchecked>,
}

impl VerdictBuilder {
    pub fn check(&mut self, check: Check, outcome: Result<Option<String>, String>) {
        match outcome {
            Ok(None) => {}
            Ok(Some(evidence)) => self.flags.push(Flag {
                flag: check,
                evidence,
            }),
            Err(reason) => self.unchecked.push(Unchecked { check, reason }),
        }
    }

    pub fn build(mut self) -> Verdict {
        self.flags.sort_by_key(|f| f.flag);
        self.unchecked.sort_by_key(|u| u.check);
        Verdict {
            clean: self.flags.is_empty(),
            complete: self.unchecked.is_empty(),
            flags: self.flags,
            unchecked: self.unchecked,
        }
    }
}

/// Sampled reasons or counted time below this share of the region do not raise `throttled`: a blip of a
/// few milliseconds cannot move a mean over a run, and power-capping for one sample in a thousand is noise.
pub const THROTTLE_MIN_FRACTION: f64 = 0.01;

/// Violation-counter policies that lower clocks (the others count sync boost and low utilisation, which do not
/// slow a busy GPU).
pub const THROTTLE_POLICIES: [&str; 4] = ["power", "thermal", "board_limit", "reliability"];

/// Raises `throttled` when a clock-lowering reason was set in at least [`THROTTLE_MIN_FRACTION`] of
/// a GPU's samples, or a violation counter grew by at least that share of the region. Counters catch throttling
/// shorter than the sampling interval, which the sampled bits miss.
pub(crate) fn throttle_check(gpus: &[ThrottleEvidence]) -> Option<String> {
    let min = THROTTLE_MIN_FRACTION;
    let mut parts = Vec::new();
    for g in gpus {
        let mut reasons: Vec<String> = Vec::new();
        for (r, n) in &g.reason_samples {
            if THROTTLE_REASONS.contains(&r.as_str())
                && g.samples > 0
                && *n as f64 >= min * g.samples as f64
            {
                reasons.push(format!("{r} in {n} of {} samples", g.samples));
            }
        }
        if let Some(span) = g.span_s.filter(|s| *s > 0.0) {
            for (policy, t) in &g.policy_time_s {
                if THROTTLE_POLICIES.contains(&policy.as_str()) && *t >= min * span {
                    reasons.push(format!(
                        "{policy} limit held clocks down {t:.3} s of {span:.3} s"
                    ));
                }
            }
        }
        if !reasons.is_empty() {
            parts.push(format!("GPU {}: {}", g.gpu, reasons.join(", ")));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

pub(crate) fn busy_check(utils: &[(String, f64)]) -> Option<String> {
    let busy: Vec<String> = utils
        .iter()
        .filter(|(_, u)| *u >= BUSY_UTIL_PERCENT)
        .map(|(g, u)| format!("GPU {g} at {u} % utilisation"))
        .collect();
    (!busy.is_empty()).then(|| {
        format!(
            "{} before start (threshold {BUSY_UTIL_PERCENT} %)",
            busy.join(", ")
        )
    })
}

pub(crate) fn load_check(loads: &[(&str, f64)], cpus: usize) -> Option<String> {
    let over: Vec<String> = loads
        .iter()
        .filter(|(_, l)| *l > cpus as f64)
        .map(|(when, l)| format!("1-minute load {l:.2} {when}"))
        .collect();
    (!over.is_empty()).then(|| format!("{} > {cpus} CPUs", over.join(", ")))
}

pub(crate) fn windows_check(loads: &[(&str, f64)]) -> Option<String> {
    let busy: Vec<String> = loads
        .iter()
        .filter(|(_, p)| *p >= WINDOWS_BUSY_PERCENT)
        .map(|(when, p)| format!("Windows CPU {p:.0} % {when}"))
        .collect();
    (!busy.is_empty()).then(|| format!("{} (threshold {WINDOWS_BUSY_PERCENT} %)", busy.join(", ")))
}

/// Raises `command_failed` for a wrapped command that exited non-zero or was killed by a signal. A command that
/// was never started (a signal during the set-up) raises nothing here: `interrupted` says so.
pub(crate) fn command_check(c: &crate::CommandRun) -> Option<String> {
    let program = c.argv.first().map(String::as_str).unwrap_or("the command");
    match (c.exit_code, &c.signal, c.pid) {
        (Some(0), None, _) => None,
        (Some(code), _, _) => Some(format!("`{program}` exited with status {code}")),
        (None, Some(sig), _) => Some(format!("`{program}` was killed by {sig}")),
        (None, None, None) => None,
        (None, None, Some(_)) => Some(format!(
            "`{program}` ended with neither an exit code nor a signal (wrapper status {})",
            c.wrapper_exit_code
        )),
    }
}

/// Judges a finished record: every check, with its evidence or the reason it could not be made.
pub(crate) fn judge(r: &Record, interrupted: Option<&str>, own_pids: &BTreeSet<u32>) -> Verdict {
    let mut v = VerdictBuilder::default();

    v.check(
        Check::Interrupted,
        Ok(interrupted.map(|why| format!("interrupted by {why}"))),
    );

    // Known only to a wrapper, which attaches it after `finish` (see `Record::set_command`); judged here too so
    // that a record re-judged with its command keeps the flag.
    v.check(
        Check::CommandFailed,
        Ok(r.command.as_ref().and_then(command_check)),
    );

    v.check(
        Check::DirtyTree,
        match (&r.git.dirty, &r.git.modified) {
            (Probe::Value(true), modified) => {
                let files = modified.value().map(|m| m.join(", ")).unwrap_or_default();
                let hash = r
                    .git
                    .diff_sha256
                    .value()
                    .map(|h| format!(" (diff sha256 {h})"))
                    .unwrap_or_default();
                Ok(Some(format!(
                    "tracked files differ from {}: {files}{hash}",
                    short_commit(&r.git)
                )))
            }
            (Probe::Value(false), _) => Ok(None),
            (Probe::Unavailable(why), _) => Err(why.clone()),
        },
    );

    // Checks that read the monitor's samples: evidence in the watched part still raises the flag, but "nothing
    // found" in a region the monitor did not watch enough is no finding (see `coverage`).
    let gate = |outcome: Result<Option<String>, String>| match (outcome, r.coverage.insufficient())
    {
        (Ok(None), Some(why)) => Err(why.to_owned()),
        (outcome, _) => outcome,
    };
    v.check(
        Check::Throttled,
        gate(gpu::throttle_evidence(&r.during).map(|e| throttle_check(&e))),
    );

    let processes = gpu::other_processes(&r.before, &r.during, &r.after, own_pids, &r.environment);
    v.check(
        Check::OtherGpuProcesses,
        if r.during.backend == Some(gpu_monitor::BackendKind::Nvml) {
            gate(processes)
        } else {
            // Only NVML lists processes during the run; the others' lists come from before and after alone.
            processes
        },
    );

    v.check(
        Check::GpuBusyBeforeStart,
        match &r.before.gpus {
            Probe::Value(samples) => {
                // A GPU whose only contexts are ours is busy with our own warm-up (a library caller starts the
                // record after loading its model); only work that may be someone else's counts.
                let ours_only = |s: &gpu_monitor::Sample| {
                    s.processes.as_ref().is_some_and(|ps| {
                        !ps.is_empty() && ps.iter().all(|p| own_pids.contains(&p.pid))
                    })
                };
                let utils: Vec<(String, f64)> = samples
                    .iter()
                    .filter(|s| !ours_only(s))
                    .filter_map(|s| Some((gpu::label(s), s.utilization_gpu?)))
                    .collect();
                if utils.is_empty() && samples.iter().any(|s| !ours_only(s)) {
                    Err("the before sample has no utilisation reading".to_owned())
                } else {
                    Ok(busy_check(&utils))
                }
            }
            Probe::Unavailable(why) => Err(why.clone()),
        },
    );

    v.check(Check::HostLoadAboveCores, {
        let mut loads: Vec<(&str, f64)> =
            [("before", &r.before.loadavg), ("after", &r.after.loadavg)]
                .into_iter()
                .filter_map(|(when, l)| Some((when, l.value()?.one)))
                .collect();
        if let Some(d) = r.host_during.loadavg_1m.value() {
            loads.push(("at its highest during the run", d.max));
        }
        match (&r.cpu_count, loads.is_empty()) {
            (Probe::Value(n), false) => Ok(load_check(&loads, *n)),
            (Probe::Unavailable(why), _) => Err(format!("CPU count unknown: {why}")),
            (_, true) => Err(r
                .before
                .loadavg
                .reason()
                .unwrap_or("no load average")
                .to_owned()),
        }
    });

    if r.environment.class == EnvClass::Wsl {
        let loads: Vec<(&str, f64)> = [
            ("before", &r.before.windows_cpu_percent),
            ("after", &r.after.windows_cpu_percent),
        ]
        .into_iter()
        .filter_map(|(when, l)| Some((when, *l.value()?)))
        .collect();
        v.check(
            Check::WindowsCpuBusy,
            if loads.is_empty() {
                Err(r
                    .before
                    .windows_cpu_percent
                    .reason()
                    .unwrap_or("no reading")
                    .to_owned())
            } else {
                Ok(windows_check(&loads))
            },
        );
    }

    v.check(
        Check::DebugBuild,
        match &r.build.program {
            Probe::Value(p) if p.debug_assertions => Ok(Some(format!(
                "{} {} was built with debug assertions (not --release)",
                p.name, p.version
            ))),
            Probe::Value(_) => Ok(None),
            Probe::Unavailable(why) => Err(why.clone()),
        },
    );

    v.build()
}

fn short_commit(g: &GitInfo) -> String {
    match g.commit.value() {
        Some(c) => c.chars().take(12).collect(),
        None => "HEAD".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(reasons: &[(&str, usize)], span: Option<f64>, time: &[(&str, f64)]) -> ThrottleEvidence {
        ThrottleEvidence {
            gpu: "0".to_owned(),
            samples: 100,
            reason_samples: reasons.iter().map(|(r, n)| ((*r).to_owned(), *n)).collect(),
            span_s: span,
            policy_time_s: time.iter().map(|(r, t)| ((*r).to_owned(), *t)).collect(),
        }
    }

    #[test]
    fn idle_and_clock_settings_are_not_throttling() {
        let e = ev(
            &[
                ("gpu_idle", 100),
                ("applications_clocks_setting", 50),
                ("sync_boost", 3),
            ],
            None,
            &[],
        );
        assert_eq!(throttle_check(&[e]), None);
    }

    #[test]
    fn power_cap_in_enough_samples_is_throttling() {
        let e = throttle_check(&[ev(&[("sw_power_cap", 5)], None, &[])]).expect("flag");
        assert_eq!(e, "GPU 0: sw_power_cap in 5 of 100 samples");
        // One sample in a hundred is exactly the threshold; none below it.
        assert!(throttle_check(&[ev(&[("hw_slowdown", 1)], None, &[])]).is_some());
        assert!(throttle_check(&[ev(&[("hw_slowdown", 0)], None, &[])]).is_none());
    }

    #[test]
    fn counters_catch_what_samples_missed_above_the_threshold() {
        let e = throttle_check(&[ev(&[], Some(10.0), &[("thermal", 0.5), ("power", 0.01)])])
            .expect("flag");
        assert!(
            e.contains("thermal limit held clocks down 0.500 s of 10.000 s")
                && !e.contains("power"),
            "{e}"
        );
        // Sync boost and low utilisation are counted by the driver but do not slow a busy GPU.
        assert!(
            throttle_check(&[ev(
                &[],
                Some(10.0),
                &[("sync_boost", 5.0), ("low_utilization", 9.0)]
            )])
            .is_none()
        );
    }

    #[test]
    fn busy_threshold_is_inclusive() {
        assert!(busy_check(&[("0".to_owned(), 10.0)]).is_some());
        assert!(busy_check(&[("0".to_owned(), 9.0)]).is_none());
    }

    #[test]
    fn load_must_exceed_the_cpu_count() {
        assert!(load_check(&[("before", 2.0)], 2).is_none());
        let e = load_check(&[("before", 1.0), ("after", 2.5)], 2).expect("flag");
        assert!(e.contains("2.50 after") && e.contains("> 2 CPUs"), "{e}");
    }

    fn run(exit_code: Option<i32>, signal: Option<&str>, pid: Option<u32>) -> crate::CommandRun {
        crate::CommandRun {
            argv: vec!["bench".to_owned(), "--n".to_owned(), "3".to_owned()],
            pid,
            exit_code,
            signal: signal.map(str::to_owned),
            signals_received: Vec::new(),
            wrapper_exit_code: exit_code.unwrap_or(1),

            left_running: None,
        }
    }

    #[test]
    fn a_failed_or_killed_command_is_flagged_with_its_status() {
        assert_eq!(command_check(&run(Some(0), None, Some(7))), None);
        assert_eq!(
            command_check(&run(Some(3), None, Some(7))).as_deref(),
            Some("`bench` exited with status 3")
        );
        assert_eq!(
            command_check(&run(None, Some("SIGKILL"), Some(7))).as_deref(),
            Some("`bench` was killed by SIGKILL")
        );
        // Never started: `interrupted` covers it.
        assert_eq!(command_check(&run(None, None, None)), None);
    }

    #[test]
    fn setting_a_late_check_keeps_order_and_clean_in_step() {
        let mut b = VerdictBuilder::default();
        b.check(Check::DirtyTree, Ok(Some("a.rs".to_owned())));
        let mut v = b.build();
        v.set(Check::CommandFailed, Some("exit 3".to_owned()));
        assert_eq!(
            v.flags.iter().map(|f| f.flag).collect::<Vec<_>>(),
            [Check::CommandFailed, Check::DirtyTree]
        );
        v.set(Check::DirtyTree, None);
        v.set(Check::CommandFailed, None);
        assert!(v.clean && v.complete && v.flags.is_empty());
    }

    #[test]
    fn builder_sorts_and_sets_clean_and_complete() {
        let mut b = VerdictBuilder::default();
        b.check(Check::DirtyTree, Ok(Some("a.rs".to_owned())));
        b.check(Check::Interrupted, Ok(Some("SIGINT".to_owned())));
        b.check(Check::Throttled, Err("no samples".to_owned()));
        b.check(Check::HostLoadAboveCores, Ok(None));
        let v = b.build();
        assert!(!v.clean && !v.complete);
        assert_eq!(
            v.flags.iter().map(|f| f.flag).collect::<Vec<_>>(),
            [Check::Interrupted, Check::DirtyTree]
        );
        assert!(v.has(Check::DirtyTree) && !v.has(Check::Throttled));
        let clean = VerdictBuilder::default().build();
        assert!(clean.clean && clean.complete);
    }
}
