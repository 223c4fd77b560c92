//! The processes a benchmark command left running when it exited: found, then reported, waited for or ended.
//!
//! A command that starts background workers (`worker &`, a data loader, a compile server) and exits without
//! waiting for them leaves them running: they may still use the GPU, the CPU and the disk after the wrapper has
//! returned and written its record, and nothing said so. So the [`runner`](crate::runner) marks each command's
//! environment with [`MARK_VAR`] (`KL1_RUN_MARK=<our pid>.<ns>.<n>`, one mark per command, appended with `:` to a mark already there, so
//! a nested run keeps the outer one's), which every process it starts inherits, wherever it is reparented
//! and whatever process group or session it moves to (`setsid`, a double fork). When the command has exited,
//! every process of this user whose `/proc/<pid>/environ` holds the mark and that has not ended (a zombie
//! has) is one it left running ([`LeftRunning`]). Then, by [`LeftPolicy`]:
//!
//! * `report` (the default): nothing is done to them; the caller says how many, and which;
//! * `wait`: wait until none is left (they may be the work being measured), or until a signal arrives;
//! * `end`: SIGTERM to each, then SIGKILL to those still there after [`END_GRACE`]. Each is signalled by pid,
//!   found again just before; never by process group: the command shares ours.
//!
//! Linux only (`/proc`); elsewhere, or without a readable `/proc`, nothing is checked and the caller gets
//! `None`. A process that cleared its environment (`env -i`) or changed user is not found.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// The environment variable that marks the command and everything it starts.
pub const MARK_VAR: &str = "KL1_RUN_MARK";

/// How many of the processes left running are listed by pid and name ([`LeftRunning::processes`]); the count
/// covers all, so that a command that left 100 000 workers cannot grow a record without bound.
pub const LISTED: usize = 100;

/// How long `end` waits after SIGTERM before it sends SIGKILL.
pub const END_GRACE: Duration = Duration::from_secs(3);

/// How often the processes left running are looked for again while waiting.
const POLL: Duration = Duration::from_millis(100);

/// What to do with the processes the command left running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LeftPolicy {
    /// Say so, do nothing to them.
    #[default]
    Report,
    /// Wait until none is left (a signal stops the wait).
    Wait,
    /// SIGTERM, then SIGKILL after [`END_GRACE`].
    End,
}

impl LeftPolicy {
    /// The policies' names, as the tools' flags take them.
    pub const NAMES: [&'static str; 3] = ["report", "wait", "end"];
}

impl std::str::FromStr for LeftPolicy {
    type Err = String;

    /// The policy of a flag's word ([`LeftPolicy::NAMES`]); the error lists them.
    fn from_str(name: &str) -> Result<LeftPolicy, String> {
        match name {
            "report" => Ok(LeftPolicy::Report),
            "wait" => Ok(LeftPolicy::Wait),
            "end" => Ok(LeftPolicy::End),
            _ => Err(format!("one of {}", LeftPolicy::NAMES.join(", "))),
        }
    }
}

/// One process the command left running.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeftProcess {
    /// Its pid.
    pub pid: u32,
    /// Its name (`/proc/<pid>/stat`'s `comm`: at most 15 bytes).
    pub name: String,
    /// Its start time in clock ticks after boot: a pid reused by another process has another.
    #[serde(skip)]
    start: u64,
}

/// The processes the command left running when it exited, and what became of them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeftRunning {
    /// How many were running when the command exited.
    pub count: usize,
    /// The first [`LISTED`] of them, by pid.
    pub processes: Vec<LeftProcess>,
    /// What was done about them.
    pub policy: LeftPolicy,
    /// How many were still running when the caller went on: `count` for `report`; 0 for `wait` unless a
    /// signal stopped it; those that survived SIGKILL's wait for `end`. With `wait`, those started
    /// meanwhile count too.
    pub still_running: usize,
    /// Seconds spent waiting for them or ending them (0 for `report`).
    pub settle_s: f64,
}

impl LeftRunning {
    /// One line for a person about them; `None` when there were none. (The tool adds how to change what is
    /// done: its options are its own.)
    ///
    /// ```
    /// # use child_run::left::{LeftPolicy, LeftRunning};
    /// let left = LeftRunning { count: 2, processes: vec![], policy: LeftPolicy::Report, still_running: 2, settle_s: 0.0 };
    /// assert_eq!(
    ///     left.sentence().unwrap(),
    ///     "the command left 2 processes running; they still run"
    /// );
    /// ```
    pub fn sentence(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let names: Vec<String> = self
            .processes
            .iter()
            .take(5)
            .map(|p| format!("{} {}", p.name, p.pid))
            .collect();
        let listed = if names.is_empty() {
            String::new()
        } else {
            let more = if self.count > names.len() {
                ", …"
            } else {
                ""
            };
            format!(" ({}{more})", names.join(", "))
        };
        let what = match self.policy {
            LeftPolicy::Report => "they still run".to_owned(),
            LeftPolicy::Wait if self.still_running == 0 => {
                format!("waited {:.1} s until all had exited", self.settle_s)
            }
            LeftPolicy::Wait => format!(
                "stopped waiting after {:.1} s (a signal); {} still run",
                self.settle_s, self.still_running
            ),
            LeftPolicy::End => format!(
                "ended them ({} still run after SIGTERM and SIGKILL)",
                self.still_running
            ),
        };
        Some(format!(
            "the command left {} process{} running{listed}; {what}",
            self.count,
            if self.count == 1 { "" } else { "es" }
        ))
    }
}

/// A fresh mark for one command: our pid, the time and a count of the marks made, unique on this machine.
pub(crate) fn new_mark() -> String {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}.{ns}.{n}", std::process::id())
}

/// The value of [`MARK_VAR`] for the command: `mark`, after the one this process inherited.
pub(crate) fn mark_value(mark: &str) -> std::ffi::OsString {
    match std::env::var_os(MARK_VAR) {
        Some(mut outer) if !outer.is_empty() => {
            outer.push(":");
            outer.push(mark);
            outer
        }
        _ => mark.into(),
    }
}

/// Finds what the command marked with `mark` left running and applies `policy`; `interrupted` says whether a
/// signal has arrived since the command ended (it stops a wait). `None` where `/proc` cannot be read.
pub(crate) fn settle(
    mark: &str,
    policy: LeftPolicy,
    interrupted: impl Fn() -> bool,
) -> Option<LeftRunning> {
    let proc_root = Path::new("/proc");
    if !cfg!(target_os = "linux") || !proc_root.join("self/environ").exists() {
        return None;
    }
    let found = marked(mark, proc_root);
    let start = Instant::now();
    let still_running = match policy {
        _ if found.is_empty() => 0,
        LeftPolicy::Report => found.len(),
        LeftPolicy::Wait => wait_gone(mark, proc_root, None, &interrupted),
        LeftPolicy::End => end(mark, proc_root, &interrupted),
    };
    Some(LeftRunning {
        count: found.len(),
        processes: found.into_iter().take(LISTED).collect(),
        policy,
        still_running,
        settle_s: if policy == LeftPolicy::Report {
            0.0
        } else {
            start.elapsed().as_secs_f64()
        },
    })
}

/// Waits until no process holds the mark, `limit` passes or `interrupted`; how many are left.
fn wait_gone(
    mark: &str,
    proc_root: &Path,
    limit: Option<Duration>,
    interrupted: &impl Fn() -> bool,
) -> usize {
    let start = Instant::now();
    loop {
        let left = marked(mark, proc_root).len();
        if left == 0 || interrupted() || limit.is_some_and(|l| start.elapsed() >= l) {
            return left;
        }
        std::thread::sleep(POLL);
    }
}

/// SIGTERM to every marked process, SIGKILL to those left after [`END_GRACE`]; how many survived both.
fn end(mark: &str, proc_root: &Path, interrupted: &impl Fn() -> bool) -> usize {
    for (sig, grace) in [
        (libc::SIGTERM, END_GRACE),
        (libc::SIGKILL, Duration::from_secs(1)),
    ] {
        for p in marked(mark, proc_root) {
            signal_if_same(&p, sig, proc_root);
        }
        if wait_gone(mark, proc_root, Some(grace), interrupted) == 0 {
            return 0;
        }
    }
    marked(mark, proc_root).len()
}

/// Sends `sig` to `p` unless its pid now names another process (its start time changed).
fn signal_if_same(p: &LeftProcess, sig: libc::c_int, proc_root: &Path) {
    let now = fs::read_to_string(proc_root.join(p.pid.to_string()).join("stat"))
        .ok()
        .as_deref()
        .and_then(parse_stat);
    if now.is_some_and(|(_, _, start)| start == p.start)
        && let Ok(pid) = libc::pid_t::try_from(p.pid)
    {
        // SAFETY: kill has no memory preconditions; the pid was checked to be the same process just now.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Every process but this one whose environment holds `mark` and that has not ended, by pid.
fn marked(mark: &str, proc_root: &Path) -> Vec<LeftProcess> {
    let me = std::process::id();
    let mut out: Vec<LeftProcess> = crate::proc_pids(proc_root)
        .into_iter()
        .filter_map(|(pid, dir)| {
            if pid == me || !has_mark(&fs::read(dir.join("environ")).ok()?, mark) {
                return None;
            }
            let (name, state, start) = parse_stat(&fs::read_to_string(dir.join("stat")).ok()?)?;
            // A zombie (or a dying process) has exited: it is not running, only not yet reaped.
            (state != 'Z' && state != 'X').then_some(LeftProcess { pid, name, start })
        })
        .collect();
    out.sort_by_key(|p| p.pid);
    out
}

/// Whether a `/proc/<pid>/environ` (NUL-separated `KEY=VALUE`) has [`MARK_VAR`] with `mark` among its
/// `:`-separated marks.
fn has_mark(environ: &[u8], mark: &str) -> bool {
    let key = format!("{MARK_VAR}=");
    environ
        .split(|b| *b == 0)
        .filter_map(|kv| kv.strip_prefix(key.as_bytes()))
        .any(|v| v.split(|b| *b == b':').any(|m| m == mark.as_bytes()))
}

/// `pid (comm) state ppid … starttime …` → (comm, state, starttime) ([`crate::proc_stat_fields`]);
/// starttime is field 22, the 20th after comm.
fn parse_stat(stat: &str) -> Option<(String, char, u64)> {
    let (name, mut rest) = crate::proc_stat_fields(stat)?;
    let state = rest.next()?.chars().next()?;
    let start = rest.nth(18)?.parse().ok()?;
    Some((name.to_owned(), state, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_name_state_and_start_time() {
        // Fields after `)`: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt, cmajflt,
        // utime, stime, cutime, cstime, priority, nice, threads, itrealvalue, starttime (the 20th: 4242).
        let stat = "77 (a (b) c) S 1 77 77 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 4242 1000 10";
        assert_eq!(parse_stat(stat), Some(("a (b) c".to_owned(), 'S', 4242)));
        assert_eq!(parse_stat("77 (x) S 1"), None);
    }

    #[test]
    fn the_mark_is_found_among_others_and_only_whole() {
        let env = b"PATH=/bin\0KL1_RUN_MARK=1.2:30.40\0HOME=/h\0";
        assert!(has_mark(env, "1.2") && has_mark(env, "30.40"));
        assert!(
            !has_mark(env, "30.4")
                && !has_mark(env, "1")
                && !has_mark(b"X_KL1_RUN_MARK=1.2\0", "1.2")
        );
    }

    #[test]
    fn policies_are_named_as_the_flags_take_them() {
        for name in LeftPolicy::NAMES {
            let p: LeftPolicy = name.parse().expect("a policy");
            assert_eq!(serde_json::to_value(p).expect("json"), name);
        }
        assert_eq!(
            "kill".parse::<LeftPolicy>(),
            Err("one of report, wait, end".to_owned())
        );
    }
}
