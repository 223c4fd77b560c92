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
//! A process in the middle of `execve` reads an empty environment: Linux gives nothing from
//! `/proc/<pid>/environ` while the new program's memory is in place but its environment is not yet copied
//! in. A command that backgrounds a process and exits at once is looked at in just that window often
//! enough to matter, so a process started since the command whose environment reads empty is read again
//! until it reads otherwise or [`EXEC_SETTLE`] has passed. (One started before the command cannot be its
//! descendant: it is not read again, so an `env -i` daemon costs nothing.)
//!
//! A process that is exiting has not ended either: once it begins to release its memory, Linux gives no
//! environment for it (6.18 refuses the read with ESRCH), yet it still runs its exit (the release itself,
//! then its open files, a GPU's device among them) until it is a zombie. So a process once found with the
//! mark stays found, by pid and start time, whatever its environment reads, until its stat says it has
//! ended: a zombie (or dead) and, for a zombie, no threads of its group still running (a leader that
//! exited before its threads is a zombie while they run, and its environment is read from one of
//! theirs, as its own cannot be). One already exiting when first looked at was never found, and is not.
//!
//! Linux only (`/proc`); elsewhere, or without a readable `/proc`, nothing is checked and the caller gets
//! `None`. A process that cleared its environment (`env -i`) or changed user is not found, unless it was
//! found with the mark before it did.

use std::collections::{HashMap, HashSet};
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

/// How long a process whose environment reads empty is read again before it counts as having none (module
/// doc: a process in `execve` reads empty for the time it takes to load the new program).
pub const EXEC_SETTLE: Duration = Duration::from_millis(250);

/// Where the processes are read: the one `/proc` of [`settle`] and [`start_time`].
const PROC: &str = "/proc";

/// `PF_KTHREAD` in `/proc/<pid>/stat`'s flags: a kernel thread, which has no environment to read.
const PF_KTHREAD: u64 = 0x0020_0000;

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

/// Finds what the command marked with `mark`, started at `since` (its [`start_time`]), left running and
/// applies `policy`; `interrupted` says whether a signal has arrived since the command ended (it stops a
/// wait). `None` where `/proc` cannot be read.
pub(crate) fn settle(
    mark: &str,
    since: Option<u64>,
    policy: LeftPolicy,
    interrupted: impl Fn() -> bool,
) -> Option<LeftRunning> {
    let proc_root = Path::new(PROC);
    if !cfg!(target_os = "linux") || !proc_root.join("self/environ").exists() {
        return None;
    }
    let mut finder = Finder::new(mark, proc_root, since);
    let found = finder.marked();
    let start = Instant::now();
    let still_running = match policy {
        _ if found.is_empty() => 0,
        LeftPolicy::Report => found.len(),
        LeftPolicy::Wait => finder.wait_gone(None, &interrupted),
        LeftPolicy::End => finder.end(&interrupted),
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

/// What one reading of a process's `/proc` files says about it.
enum Look {
    /// Running, with the mark, or found with it before (exiting, or exec'd with another environment).
    Marked(LeftProcess),
    /// Running, and its environment read empty: perhaps in `execve` (module doc). Its start time.
    Empty(u64),
    /// Anything else: no mark, gone, ended, a kernel thread, not ours to read.
    Not,
}

/// Finds the processes that hold one command's mark, under one `/proc`. It remembers the processes whose
/// environment stayed empty for [`EXEC_SETTLE`], so that a wait's next poll does not wait on them again.
struct Finder<'a> {
    mark: &'a str,
    proc_root: &'a Path,
    /// The command's start time (clock ticks after boot): a process started before it is not its
    /// descendant, so its empty environment is not waited on. `None`: every process's is.
    since: Option<u64>,
    /// How long an empty environment is read again: [`EXEC_SETTLE`] (tests set their own).
    settle: Duration,
    /// (pid, start time) of the processes found to have no environment.
    no_environment: HashSet<(u32, u64)>,
    /// pid → start time of the processes found with the mark: still found while they exit (module doc).
    found: HashMap<u32, u64>,
}

impl<'a> Finder<'a> {
    fn new(mark: &'a str, proc_root: &'a Path, since: Option<u64>) -> Finder<'a> {
        Finder {
            mark,
            proc_root,
            since,
            settle: EXEC_SETTLE,
            no_environment: HashSet::new(),
            found: HashMap::new(),
        }
    }

    /// Every process but this one that holds the mark, or was found with it before, and has not ended, by
    /// pid. Those started since the command whose environment reads empty are read again, at growing
    /// pauses, until it reads otherwise or [`EXEC_SETTLE`] passes.
    fn marked(&mut self) -> Vec<LeftProcess> {
        let me = std::process::id();
        let mut found = Vec::new();
        let mut unsettled = Vec::new();
        for (pid, dir) in crate::proc_pids(self.proc_root) {
            if pid == me {
                continue;
            }
            match self.look(pid, &dir) {
                Look::Marked(p) => found.push(p),
                Look::Empty(start) if !self.no_environment.contains(&(pid, start)) => {
                    unsettled.push((pid, dir, start));
                }
                Look::Empty(_) | Look::Not => {}
            }
        }
        let deadline = Instant::now() + self.settle;
        let mut pause = Duration::from_millis(1);
        while !unsettled.is_empty() {
            if Instant::now() >= deadline {
                self.no_environment
                    .extend(unsettled.iter().map(|(pid, _, start)| (*pid, *start)));
                break;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(25));
            unsettled.retain_mut(|(pid, dir, start)| match self.look(*pid, dir) {
                Look::Marked(p) => {
                    found.push(p);
                    false
                }
                // Still empty: the same process, or another that took its pid (a new start time), itself
                // perhaps in its exec.
                Look::Empty(now) => {
                    *start = now;
                    true
                }
                Look::Not => false,
            });
        }
        found.sort_by_key(|p| p.pid);
        self.found.extend(found.iter().map(|p| (p.pid, p.start)));
        found
    }

    /// One reading of process `pid`'s environment, and of its stat when the environment is empty,
    /// marked or unreadable (not refused) or the process was found before (most processes are none of
    /// these, and cost one read).
    fn look(&self, pid: u32, dir: &Path) -> Look {
        let environ = fs::read(dir.join("environ"));
        let marked = environ.as_ref().is_ok_and(|e| has_mark(e, self.mark));
        let empty = environ.as_ref().is_ok_and(Vec::is_empty);
        // Not refused (another user's process) but unreadable: no memory (a kernel thread, an exiting
        // process), or a thread-group leader that exited before its threads.
        let unreadable = environ
            .as_ref()
            .is_err_and(|e| e.kind() != std::io::ErrorKind::PermissionDenied);
        let found_before = self.found.get(&pid);
        if !marked && !empty && !unreadable && found_before.is_none() {
            return Look::Not;
        }
        let Some(Stat {
            name,
            state,
            flags,
            threads,
            start,
        }) = stat_of(dir)
        else {
            return Look::Not;
        };
        // A zombie (Z) or a dead process (X) has ended: it is not running, only not yet reaped. But a
        // zombie that still counts threads is a thread-group leader that exited before its other
        // threads, which still run (or still run their exit): its environment is theirs to read.
        let leader_of_threads = state == 'Z' && threads > 1;
        if state == 'X' || (state == 'Z' && !leader_of_threads) || flags & PF_KTHREAD != 0 {
            Look::Not
        } else if marked
            || found_before == Some(&start)
            || (unreadable
                && leader_of_threads
                && threads_environ(pid, dir).is_some_and(|e| has_mark(&e, self.mark)))
        {
            // Found before and the same process (its start time): exiting, or in an exec, still ours.
            Look::Marked(LeftProcess { pid, name, start })
        } else if !empty || self.since.is_some_and(|since| start < since) {
            Look::Not
        } else {
            Look::Empty(start)
        }
    }

    /// Waits until no process holds the mark, `limit` passes or `interrupted`; how many are left.
    fn wait_gone(&mut self, limit: Option<Duration>, interrupted: &impl Fn() -> bool) -> usize {
        let start = Instant::now();
        loop {
            let left = self.marked().len();
            if left == 0 || interrupted() || limit.is_some_and(|l| start.elapsed() >= l) {
                return left;
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGTERM to every marked process, SIGKILL to those left after [`END_GRACE`]; how many survived both.
    fn end(&mut self, interrupted: &impl Fn() -> bool) -> usize {
        for (sig, grace) in [
            (libc::SIGTERM, END_GRACE),
            (libc::SIGKILL, Duration::from_secs(1)),
        ] {
            for p in self.marked() {
                signal_if_same(&p, sig, self.proc_root);
            }
            if self.wait_gone(Some(grace), interrupted) == 0 {
                return 0;
            }
        }
        self.marked().len()
    }
}

/// The environment of one of process `pid`'s other threads (`/proc/<pid>/task/<tid>/environ`), for a
/// leader whose own cannot be read; `None` when none can be read.
fn threads_environ(pid: u32, dir: &Path) -> Option<Vec<u8>> {
    crate::proc_pids(&dir.join("task"))
        .into_iter()
        .filter(|(tid, _)| *tid != pid)
        .find_map(|(_, task)| fs::read(task.join("environ")).ok())
}

/// Sends `sig` to `p` unless its pid now names another process (its start time changed).
fn signal_if_same(p: &LeftProcess, sig: libc::c_int, proc_root: &Path) {
    let now = stat_of(&proc_root.join(p.pid.to_string()));
    if now.is_some_and(|now| now.start == p.start)
        && let Ok(pid) = libc::pid_t::try_from(p.pid)
    {
        // SAFETY: kill has no memory preconditions; the pid was checked to be the same process just now.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Process `pid`'s start time in clock ticks after boot (`/proc/<pid>/stat`), for [`settle`]'s `since`:
/// read while the command is alive or unreaped.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    stat_of(&Path::new(PROC).join(pid.to_string())).map(|s| s.start)
}

/// The stat of the process whose `/proc` directory is `dir` ([`parse_stat`]); `None` when it is gone.
fn stat_of(dir: &Path) -> Option<Stat> {
    parse_stat(&fs::read_to_string(dir.join("stat")).ok()?)
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

/// What [`Finder`] reads of a process's `/proc/<pid>/stat`.
#[derive(Debug, PartialEq)]
struct Stat {
    /// `comm`.
    name: String,
    /// `R`, `S`, `D`, `Z`, `X`, …
    state: char,
    /// `PF_*` flags.
    flags: u64,
    /// Threads in its group not yet gone: above 1 in a zombie leader whose other threads still run.
    threads: u64,
    /// Clock ticks after boot: with the pid, what names one process.
    start: u64,
}

/// `pid (comm) state ppid … flags … num_threads itrealvalue starttime …` → [`Stat`]
/// ([`crate::proc_stat_fields`]); after comm, flags is the 7th field, num_threads the 18th and starttime
/// the 20th.
fn parse_stat(stat: &str) -> Option<Stat> {
    let (name, mut rest) = crate::proc_stat_fields(stat)?;
    let state = rest.next()?.chars().next()?;
    let flags = rest.nth(5)?.parse().ok()?;
    let threads = rest.nth(10)?.parse().ok()?;
    let start = rest.nth(1)?.parse().ok()?;
    Some(Stat {
        name: name.to_owned(),
        state,
        flags,
        threads,
        start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_name_state_and_start_time() {
        // Fields after `)`: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt, cmajflt,
        // utime, stime, cutime, cstime, priority, nice, threads, itrealvalue, starttime (the 20th: 4242).
        // flags (the 7th) is 4194304.
        // threads (the 18th) is 3.
        let stat = "77 (a (b) c) S 1 77 77 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 3 0 4242 1000 10";
        assert_eq!(
            parse_stat(stat),
            Some(Stat {
                name: "a (b) c".to_owned(),
                state: 'S',
                flags: 4_194_304,
                threads: 3,
                start: 4242
            })
        );
        assert_eq!(parse_stat("77 (x) S 1"), None);
    }

    /// A fake `/proc/<pid>` with this environment and a stat line of this state and flags (start time =
    /// pid).
    fn fake_process(root: &Path, pid: u32, environ: &[u8], state: char, flags: u64) {
        let dir = root.join(pid.to_string());
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("environ"), environ).expect("environ");
        let stat =
            format!("{pid} (sleep) {state} 1 1 1 0 -1 {flags} 0 0 0 0 0 0 0 0 20 0 1 0 {pid} 1 1");
        fs::write(dir.join("stat"), stat).expect("stat");
    }

    /// Replaces a fake `/proc` file whole (a rename), so that a read never sees it half written.
    fn replace(path: &Path, bytes: &[u8]) {
        let new = path.with_extension("new");
        fs::write(&new, bytes).expect("write");
        fs::rename(&new, path).expect("rename");
    }

    #[test]
    fn a_process_in_exec_is_read_again_until_its_environment_is_there() {
        let root = std::env::temp_dir().join(format!("kl1-left-{}", new_mark()));
        let mark = "9.9.9";
        let with_mark = format!("A=1\0{MARK_VAR}={mark}\0");
        fake_process(&root, 4_000_001, with_mark.as_bytes(), 'S', 0);
        // In exec: empty now, its environment written a little later.
        fake_process(&root, 4_000_002, b"", 'R', 0);
        // A kernel thread reads empty and is not looked at again; nor is a zombie.
        fake_process(&root, 4_000_003, b"", 'S', PF_KTHREAD | 0x40);
        fake_process(&root, 4_000_004, with_mark.as_bytes(), 'Z', 0);
        // Another command's process.
        fake_process(&root, 4_000_005, b"A=1\0KL1_RUN_MARK=1.1.1\0", 'S', 0);
        let late = root.join("4000002/environ");
        let writer = {
            let with_mark = with_mark.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                replace(&late, with_mark.as_bytes());
            })
        };
        let with_mark = with_mark.into_bytes();
        let mut finder = Finder::new(mark, &root, None);
        // Long enough that only a writer stalled for a minute could miss; found as soon as it is there.
        finder.settle = Duration::from_secs(60);
        let pids: Vec<u32> = finder.marked().iter().map(|p| p.pid).collect();
        writer.join().expect("writer");
        assert_eq!(pids, [4_000_001, 4_000_002]);
        assert!(finder.no_environment.is_empty());

        // Its pid taken by another process, itself in exec, while it is read again: found too.
        fake_process(&root, 4_000_008, b"", 'R', 0);
        let dir = root.join("4000008");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            let stat = "4000008 (sleep) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4000009 1 1";
            replace(&dir.join("stat"), stat.as_bytes());
            std::thread::sleep(Duration::from_millis(10));
            replace(&dir.join("environ"), &with_mark);
        });
        let found = finder.marked();
        writer.join().expect("writer");
        let last = found.last().expect("found");
        assert_eq!(
            (found.len(), last.pid, last.start),
            (3, 4_000_008, 4_000_009)
        );

        // One whose environment stays empty (`env -i`) is not marked, and is remembered so that the next
        // look (a wait's poll) does not wait on it again. One started before the command (4 000 006,
        // before `since`) is not its descendant: not waited on at all.
        fake_process(&root, 4_000_006, b"", 'S', 0);
        fake_process(&root, 4_000_007, b"", 'S', 0);
        finder.since = Some(4_000_007);
        finder.settle = Duration::from_millis(30);
        assert_eq!(finder.marked().len(), 3);
        assert_eq!(
            finder.no_environment.iter().copied().collect::<Vec<_>>(),
            [(4_000_007, 4_000_007)]
        );
        fs::remove_dir_all(&root).expect("clean");
    }

    #[test]
    fn a_process_found_once_is_found_while_it_exits_until_it_has_ended() {
        let root = std::env::temp_dir().join(format!("kl1-left-{}", new_mark()));
        let mark = "9.9.9";
        let with_mark = format!("A=1\0{MARK_VAR}={mark}\0");
        fake_process(&root, 4_100_001, with_mark.as_bytes(), 'S', 0);
        fake_process(&root, 4_100_002, with_mark.as_bytes(), 'S', 0);
        let mut finder = Finder::new(mark, &root, None);
        finder.settle = Duration::from_millis(30);
        let pids = |f: &mut Finder| f.marked().iter().map(|p| p.pid).collect::<Vec<u32>>();
        assert_eq!(pids(&mut finder), [4_100_001, 4_100_002]);

        // Exiting, its memory released: its environment cannot be read (Linux 6.18: ESRCH), its stat says
        // running. Still found. The other has exec'd with an environment of its own: the same process.
        let dir = root.join("4100001");
        fs::remove_file(dir.join("environ")).expect("environ");
        replace(&root.join("4100002/environ"), b"B=2\0");
        assert_eq!(pids(&mut finder), [4_100_001, 4_100_002]);

        // A zombie that still counts 3 threads: its leader exited, two threads still run. Found.
        let zombie = |threads| {
            format!("4100001 (sleep) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 {threads} 0 4100001 1 1")
        };
        replace(&dir.join("stat"), zombie(3).as_bytes());
        assert_eq!(pids(&mut finder), [4_100_001, 4_100_002]);

        // A leader that exited before its threads, never seen before: its own environment cannot be read,
        // one of its threads' can. Found.
        let leader = root.join("4100003");
        fake_process(&root, 4_100_003, b"", 'Z', 0);
        fs::remove_file(leader.join("environ")).expect("environ");
        let stat = "4100003 (sleep) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 4100003 1 1";
        replace(&leader.join("stat"), stat.as_bytes());
        fs::create_dir_all(leader.join("task/4100003")).expect("task");
        fs::create_dir_all(leader.join("task/4100004")).expect("task");
        fs::write(leader.join("task/4100004/environ"), &with_mark).expect("environ");
        assert_eq!(pids(&mut finder), [4_100_001, 4_100_002, 4_100_003]);
        fs::remove_dir_all(&leader).expect("gone");

        // Ended (a zombie of one thread), and the other's pid taken by a process that is not ours
        // (another start time): neither is found.
        replace(&dir.join("stat"), zombie(1).as_bytes());
        let other = "4100002 (sleep) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4100009 1 1";
        replace(&root.join("4100002/stat"), other.as_bytes());
        assert_eq!(pids(&mut finder), [] as [u32; 0]);
        fs::remove_dir_all(&root).expect("clean");
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
