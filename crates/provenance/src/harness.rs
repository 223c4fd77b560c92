//! One call for a harness: claim the result file, record around the work, write the work's result and the
//! record side by side, and still write the record (marked interrupted) when Ctrl-C ends the work.
//!
//! Ctrl-C: the closure cannot be stopped from outside, so on SIGINT the record of every region in progress is
//! finished and written (result `null`, `interrupted: true`, flag `interrupted`), and the process exits with
//! 130 as a shell expects of a program killed by SIGINT. The handler is installed once per process (with the
//! `ctrlc` crate); a program that installed its own first keeps it, and its records then say that Ctrl-C was
//! not watched (`interrupt_watch` in the output file).

use serde::Serialize;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::{Claim, Error, Provenance, Record, Running};

/// What [`record`] writes: the work's own result beside the record of how it was obtained.
#[derive(Debug, Serialize)]
pub struct Recorded<'a, T: Serialize> {
    /// The closure's return value; `null` when Ctrl-C ended the work.
    pub result: Option<&'a T>,
    /// The provenance record.
    pub provenance: &'a Record,
    /// Whether a Ctrl-C during the work would still have written this file, and if not why.
    pub interrupt_watch: &'a str,
}

/// Runs `work` under a provenance record and writes `{"result": …, "provenance": …}` to `path`; returns the
/// work's result. The file is claimed before the work starts (an existing file is refused, see
/// [`crate::claim_output`]). A Ctrl-C during the work writes the record with a `null` result, marked
/// interrupted, and exits the process with status 130.
///
/// This names no program; to record the harness's name, version, build profile and its own repository's git
/// state, use [`Provenance::record`] with [`crate::program!`].
///
/// ```no_run
/// let tokens_per_s = provenance::record("result.json", || {
///     // ... the timed work ...
///     1234.5
/// })?;
/// # Ok::<(), provenance::Error>(())
/// ```
pub fn record<T: Serialize>(path: impl AsRef<Path>, work: impl FnOnce() -> T) -> Result<T, Error> {
    Provenance::new().record(path, work)
}

impl Provenance {
    /// [`record`] with this configuration: claims `path`, runs [`Provenance::start`], the work and
    /// [`Running::finish`], and writes the work's result beside the record.
    ///
    /// ```no_run
    /// let p = provenance::Provenance::new()
    ///     .program(provenance::program!())
    ///     .field("batch", 8)?;
    /// let latency_ms = p.record("result.json", || 12.5)?;
    /// # Ok::<(), provenance::Error>(())
    /// ```
    pub fn record<T: Serialize>(
        self,
        path: impl AsRef<Path>,
        work: impl FnOnce() -> T,
    ) -> Result<T, Error> {
        let claim = Arc::new(Claim::new(path, false)?);
        let watch = watch_interrupts();
        let slot = Arc::new(Mutex::new(Some(self.start())));
        let id = register(Arc::clone(&slot), Arc::clone(&claim), watch.clone());
        let result = work();
        unregister(id);
        let running = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(running) = running else {
            // Ctrl-C arrived as the work ended: the handler has written the record and is exiting.
            return Ok(result);
        };
        let record = running.finish();
        record.check()?;
        let written = claim.write_json(&Recorded {
            result: Some(&result),
            provenance: &record,
            interrupt_watch: watch_text(&watch),
        })?;
        crate::say_where(&written);
        Ok(result)
    }
}

type Watch = Result<(), String>;

fn watch_text(w: &Watch) -> &str {
    match w {
        Ok(()) => "watched",
        Err(why) => why,
    }
}

struct Pending {
    id: u64,
    running: Arc<Mutex<Option<Running>>>,
    claim: Arc<Claim>,
    watch: Watch,
}

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());
static NEXT_ID: Mutex<u64> = Mutex::new(0);

fn register(running: Arc<Mutex<Option<Running>>>, claim: Arc<Claim>, watch: Watch) -> u64 {
    let mut next = NEXT_ID.lock().unwrap_or_else(PoisonError::into_inner);
    *next += 1;
    let id = *next;
    PENDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Pending {
            id,
            running,
            claim,
            watch,
        });
    id
}

fn unregister(id: u64) {
    PENDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|p| p.id != id);
}

/// Installs the process's Ctrl-C handler once; the outcome is remembered for every later call.
fn watch_interrupts() -> Watch {
    static INSTALLED: OnceLock<Watch> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            if sigint_ignored() {
                // A background job's SIGINT is ignored (POSIX `&` without job control); Ctrl-C then ends
                // nothing, so no record can be lost to it, and taking the signal over would let a Ctrl-C
                // meant for the foreground end this run.
                return Err(
                    "not watched: SIGINT is ignored in this process (a background job), so \
                            Ctrl-C cannot end the run"
                        .to_owned(),
                );
            }
            ctrlc::try_set_handler(on_interrupt).map_err(|e| {
                format!("not watched: Ctrl-C would end the run without a record ({e})")
            })
        })
        .clone()
}

/// Whether this process was started with SIGINT ignored.
fn sigint_ignored() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: `current` is a valid sigaction to write into; a null new action only reads.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let read = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current) };
        read == 0 && current.sa_sigaction == libc::SIG_IGN
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Finishes and writes every record in progress, marked interrupted, then exits with 130.
fn on_interrupt() {
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(PoisonError::into_inner));
    for p in pending {
        let running = p
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut running) = running {
            running.mark_interrupted("SIGINT (Ctrl-C) during the work");
            let record = running.finish();
            // Nothing to report a failure to: the process is ending on the user's request.
            if let Ok(w) = p.claim.write_json(&Recorded::<()> {
                result: None,
                provenance: &record,
                interrupt_watch: watch_text(&p.watch),
            }) {
                crate::say_where(&w);
            }
        }
    }
    std::process::exit(130);
}
