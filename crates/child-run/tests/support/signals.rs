//! Signal set-up for the tests that send signals to a tool run under `child_run::runner` (gpu-monitor's and
//! provenance's CLI tests, provenance's record test), included with `#[path]` by each. A test run started from a
//! script's background job inherits SIGINT ignored (POSIX: a non-interactive shell's `&` ignores it), and the
//! tools keep a signal they were started with ignored, by design; a signal test must not depend on how the test
//! run was started.

use std::process::Command;

/// Starts the child with SIGINT, SIGTERM and SIGHUP at their defaults, as an interactive shell would.
pub fn with_default_signals(c: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and calls only signal(2), which is async-signal-safe;
    // it allocates nothing.
    unsafe {
        c.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

/// Starts the child with SIGINT ignored, as a non-interactive shell's `&` does.
#[allow(dead_code)] // Only provenance's record test asks.
pub fn with_sigint_ignored(c: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: as in `with_default_signals`: only signal(2) between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        })
    }
}

/// Whether this process has SIGINT ignored (inherited from how the test run was started).
#[allow(dead_code)] // Only provenance's record test asks.
pub fn sigint_ignored() -> bool {
    // SAFETY: `current` is a valid sigaction to write into; a null new action only reads.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let read = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current) };
    read == 0 && current.sa_sigaction == libc::SIG_IGN
}
