//! The few operating-system calls the crate makes, each wrapped once.

/// CPU time (user + system) of the calling thread, s: `getrusage(RUSAGE_THREAD)`.
#[cfg(target_os = "linux")]
pub(crate) fn thread_cpu_s() -> Option<f64> {
    // SAFETY: `rusage` is plain data for which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a `rusage` the call fills in; RUSAGE_THREAD is a valid selector on Linux.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (rc == 0).then(|| child_run::rusage_cpu_s(&ru))
}

/// Without `RUSAGE_THREAD` there is no per-thread figure; `None` rather than a process-wide one mislabelled.
#[cfg(not(target_os = "linux"))]
pub(crate) fn thread_cpu_s() -> Option<f64> {
    None
}

/// `/proc/<pid>/comm`, when that pid is visible from here.
pub(crate) fn process_name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
        .filter(|s| !s.is_empty())
}
