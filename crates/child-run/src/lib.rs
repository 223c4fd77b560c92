//! child-run: the child processes of the tools, started, watched and ended in one place.
//!
//! Two kinds of child, with opposite needs:
//!
//! * [`runner`] — the **benchmark command** of `gpu-monitor -- CMD` and `provenance run -- CMD`: it inherits
//!   stdin, stdout and stderr, stays in our process group (a terminal's Ctrl-C reaches it), and SIGINT, SIGTERM
//!   and SIGHUP sent to us are forwarded to it, so that the caller outlives it, finishes its own work and exits
//!   with the command's status (128 + N for signal N). What it left running when it exited is found, and
//!   reported, waited for or ended ([`left`]).
//! * [`captured`] — a **helper program** whose output the caller reads (`nvidia-smi`): its own process group
//!   (one `kill` takes whatever it started), a death signal tied to this process, stdout and stderr on one
//!   pipe read with `poll(2)` so a stop can interrupt a read, and reaping with `wait4` so its CPU time is known.
//!
//! It is **not** a general process library: no shell, no pipelines between children, no pseudo-terminal, no
//! Windows (Unix process groups and signals are the point). It installs a signal handler only inside
//! [`runner::Runner::install`], and only for as long as the runner lives.
#![deny(missing_docs)]

pub mod captured;
pub mod left;
pub mod runner;

/// User plus system CPU seconds of a `rusage`: the one conversion, for a reaped child here and for a thread
/// in `gpu-monitor`.
pub fn rusage_cpu_s(ru: &libc::rusage) -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The processes visible under `proc_root` (`/proc`): each pid with its directory, in no order. One reading
/// of the process table, for the processes a command left running ([`left`]) and for `provenance`'s tree
/// of the processes it started.
pub fn proc_pids(proc_root: &std::path::Path) -> Vec<(u32, std::path::PathBuf)> {
    let Ok(dir) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path())))
        .collect()
}

/// A `/proc/<pid>/stat` line (`pid (comm) state ppid …`) as its `comm` and the fields after it, from `state`
/// (field 3) on. comm may hold spaces and parentheses, so it ends at the last `)`: the one rule for reading
/// that line, here and in `provenance`.
///
/// ```
/// let (comm, mut rest) = child_run::proc_stat_fields("42 (my (odd) prog) S 7 42").unwrap();
/// assert_eq!((comm, rest.next(), rest.next()), ("my (odd) prog", Some("S"), Some("7")));
/// ```
pub fn proc_stat_fields(stat: &str) -> Option<(&str, std::str::SplitWhitespace<'_>)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    Some((
        stat.get(open + 1..close)?,
        stat.get(close + 1..)?.split_whitespace(),
    ))
}
