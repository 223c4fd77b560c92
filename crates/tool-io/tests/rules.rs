//! One test per rule of `docs/result-files.md`, on real special files: /dev/null, /dev/zero, FIFOs made with
//! `mkfifo`, a Unix socket.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use tool_io::{Claim, Error, Written, caps, read_input, read_input_string};

type R = Result<(), Box<dyn std::error::Error>>;

/// A result written where it was claimed (not beside it).
#[track_caller]
fn here(w: Written) {
    assert!(w.taken().is_none() && w.notice().is_none(), "{w:?}");
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "mkfifo {} failed", p.display());
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// The mode a plain `File::create` gets here (0666 less the umask), without reading the umask.
#[cfg(unix)]
fn default_mode(dir: &Path) -> u32 {
    let reference = dir.join("reference");
    fs::File::create(&reference).unwrap();
    let m = mode(&reference);
    fs::remove_file(&reference).unwrap();
    m
}

/// Names in `dir`, sorted (to prove no temporary or claim file is left).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

// ---- result files -------------------------------------------------------------------------------

#[test]
fn a_new_result_is_written_whole_and_nothing_else_is_left() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    let c = Claim::new(&p, false)?;
    assert!(!p.exists(), "the claim must not create the result itself");
    here(c.write_json(&json!({"x": [1.5, 2]}))?);
    drop(c);
    assert_eq!(
        fs::read_to_string(&p)?,
        "{\n  \"x\": [\n    1.5,\n    2\n  ]\n}\n"
    );
    assert_eq!(names(d.path()), ["r.json"]);
    Ok(())
}

#[test]
fn missing_directories_are_created() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("a/b/r.json");
    here(Claim::new(&p, false)?.write_bytes(b"hi")?);
    assert_eq!(fs::read(&p)?, b"hi");
    Ok(())
}

#[test]
fn an_existing_file_is_refused_without_overwrite_and_left_alone() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    fs::write(&p, "precious")?;
    match Claim::new(&p, false) {
        Err(Error::Exists { path }) => assert_eq!(path, p),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(fs::read_to_string(&p)?, "precious");
    assert_eq!(names(d.path()), ["r.json"]);
    here(Claim::new(&p, true)?.write_bytes(b"new")?);
    assert_eq!(fs::read_to_string(&p)?, "new");
    Ok(())
}

#[test]
fn a_file_that_appears_after_the_claim_is_kept_and_the_result_goes_beside_it() -> R {
    // The wrapped command wrote the result's name during the run (`gpu-monitor --output s.csv -- sh -c
    // "… > s.csv"`): its file is kept, and the result is not lost either.
    for overwrite in [false, true] {
        let d = tempfile::tempdir()?;
        let p = d.path().join("s.csv");
        let c = Claim::new(&p, overwrite)?;
        fs::write(&p, "someone else's")?;
        fs::write(d.path().join("s.1.csv"), "taken too")?;
        let w = c.write_bytes(b"mine")?;
        assert_eq!(fs::read_to_string(&p)?, "someone else's");
        assert_eq!(w.path(), d.path().join("s.2.csv"));
        assert_eq!(w.taken(), Some(p.as_path()));
        assert_eq!(fs::read_to_string(w.path())?, "mine");
        let notice = w.notice().unwrap();
        assert!(
            notice.contains("s.csv was created by someone else during the run and is kept")
                && notice.ends_with("s.2.csv"),
            "{notice}"
        );
        drop(c);
        assert_eq!(
            names(d.path()),
            ["s.1.csv", "s.2.csv", "s.csv"],
            "no temporary file left"
        );
    }
    Ok(())
}

#[test]
fn a_second_write_of_one_claim_replaces_its_own_first() -> R {
    for overwrite in [false, true] {
        let d = tempfile::tempdir()?;
        let p = d.path().join("r.json");
        let c = Claim::new(&p, overwrite)?;
        here(c.write_bytes(b"first")?);
        here(c.write_bytes(b"second")?);
        assert_eq!(fs::read_to_string(&p)?, "second");
        drop(c);
        assert_eq!(names(d.path()), ["r.json"]);
    }
    Ok(())
}

#[test]
fn with_overwrite_only_the_file_found_at_claim_time_is_replaced() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("rec.json");
    fs::write(&p, "earlier result")?;
    let c = Claim::new(&p, true)?;
    // Replaced during the run by a new file (rename over it): that one is someone else's.
    let other = d.path().join("other");
    fs::write(&other, "written during the run")?;
    fs::rename(&other, &p)?;
    let w = c.write_bytes(b"mine")?;
    assert_eq!(fs::read_to_string(&p)?, "written during the run");
    assert_eq!(w.path(), d.path().join("rec.1.json"));
    // Untouched: the earlier result is what --overwrite replaces.
    let d2 = tempfile::tempdir()?;
    let q = d2.path().join("rec.json");
    fs::write(&q, "earlier result")?;
    here(Claim::new(&q, true)?.write_bytes(b"mine")?);
    assert_eq!(fs::read_to_string(&q)?, "mine");
    Ok(())
}

#[test]
fn dev_null_is_never_replaced_even_with_overwrite() {
    let e = Claim::new("/dev/null", true).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotRegular {
                kind: "a character device",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("/dev/null is a character device"),
        "{e}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        assert!(
            fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
}

#[test]
fn a_fifo_is_never_replaced_even_with_overwrite() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("fifo");
    mkfifo(&p);
    let e = Claim::new(&p, true).unwrap_err();
    assert!(
        matches!(e, Error::NotRegular { kind: "a FIFO", .. }),
        "{e:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::symlink_metadata(&p)?.file_type().is_fifo());
    }
    assert_eq!(names(d.path()), ["fifo"]);
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_socket_is_never_replaced_even_with_overwrite() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&p)?;
    let e = Claim::new(&p, true).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotRegular {
                kind: "a socket",
                ..
            }
        ),
        "{e:?}"
    );
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_fifo_made_after_the_claim_is_not_replaced_either() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    fs::write(&p, "old")?;
    let c = Claim::new(&p, true)?;
    fs::remove_file(&p)?;
    mkfifo(&p);
    let e = c.write_bytes(b"new").unwrap_err();
    assert!(
        matches!(e, Error::NotRegular { kind: "a FIFO", .. }),
        "{e:?}"
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::symlink_metadata(&p)?.file_type().is_fifo());
    Ok(())
}

#[test]
fn a_directory_is_refused() -> R {
    let d = tempfile::tempdir()?;
    assert!(matches!(
        Claim::new(d.path(), true),
        Err(Error::IsDirectory { .. })
    ));
    let slash = format!("{}/", d.path().join("new").display());
    assert!(matches!(
        Claim::new(&slash, true),
        Err(Error::IsDirectory { .. })
    ));
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_regular_file_is_written_through_and_stays_a_link() -> R {
    let d = tempfile::tempdir()?;
    let real = d.path().join("run3.json");
    let link = d.path().join("latest.json");
    fs::write(&real, "old")?;
    std::os::unix::fs::symlink("run3.json", &link)?;
    assert!(matches!(
        Claim::new(&link, false),
        Err(Error::Exists { .. })
    ));
    here(Claim::new(&link, true)?.write_bytes(b"new")?);
    assert!(fs::symlink_metadata(&link)?.file_type().is_symlink());
    assert_eq!(fs::read_to_string(&real)?, "new");
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_device_or_nowhere_is_refused() -> R {
    let d = tempfile::tempdir()?;
    let to_null = d.path().join("null.json");
    std::os::unix::fs::symlink("/dev/null", &to_null)?;
    assert!(matches!(
        Claim::new(&to_null, true),
        Err(Error::NotRegular {
            kind: "a character device",
            ..
        })
    ));
    let dangling = d.path().join("dangling.json");
    std::os::unix::fs::symlink(d.path().join("nowhere"), &dangling)?;
    for overwrite in [false, true] {
        // Said as what it is: "exists; pass --overwrite" would send the user round in a circle.
        match Claim::new(&dangling, overwrite) {
            Err(e @ Error::DanglingLink { .. }) => {
                let m = e.to_string();
                assert!(
                    m.contains("is a symbolic link to")
                        && m.contains("nowhere, which does not exist"),
                    "{m}"
                );
            }
            other => panic!("expected DanglingLink, got {other:?}"),
        }
    }
    assert!(!d.path().join("nowhere").exists());
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_new_result_gets_the_umask_mode_not_0600() -> R {
    let d = tempfile::tempdir()?;
    let expected = default_mode(d.path());
    let p = d.path().join("r.json");
    here(Claim::new(&p, false)?.write_json(&json!({}))?);
    assert_eq!(mode(&p), expected, "{:o} vs {expected:o}", mode(&p));
    if expected & 0o044 != 0 {
        assert_ne!(mode(&p), 0o600);
    }
    Ok(())
}

#[cfg(unix)]
#[test]
fn an_overwritten_result_keeps_its_mode() -> R {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    for m in [0o644, 0o640, 0o600] {
        fs::write(&p, "old")?;
        fs::set_permissions(&p, fs::Permissions::from_mode(m))?;
        here(Claim::new(&p, true)?.write_bytes(b"new")?);
        assert_eq!(mode(&p), m, "{:o} became {:o}", m, mode(&p));
        assert_eq!(fs::read_to_string(&p)?, "new");
    }
    Ok(())
}

#[test]
fn a_second_claim_on_the_same_name_is_refused_while_the_first_is_held() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    let first = Claim::new(&p, false)?;
    // The same process: the same file named for two results (`--output F --html F`), said as such.
    for overwrite in [false, true] {
        match Claim::new(&p, overwrite) {
            Err(e @ Error::ClaimedTwice { .. }) => {
                let m = e.to_string();
                assert!(
                    m.contains("already claimed by this run for another result")
                        && !m.contains("another run"),
                    "{m}"
                );
            }
            other => panic!("expected ClaimedTwice, got {other:?}"),
        }
    }
    here(first.write_bytes(b"first")?);
    drop(first);
    // Released: the next claim sees the result and refuses it for what it is.
    assert!(matches!(Claim::new(&p, false), Err(Error::Exists { .. })));
    here(Claim::new(&p, true)?.write_bytes(b"second")?);
    assert_eq!(fs::read_to_string(&p)?, "second");
    assert_eq!(names(d.path()), ["r.json"]);
    // An existing file claimed for replacing is held under its other names too.
    #[cfg(unix)]
    {
        let held = Claim::new(&p, true)?;
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink("r.json", &link)?;
        let hard = d.path().join("hard.json");
        fs::hard_link(&p, &hard)?;
        for other in [&link, &hard] {
            assert!(
                matches!(Claim::new(other, true), Err(Error::ClaimedTwice { .. })),
                "{}",
                other.display()
            );
        }
        drop(held);
    }
    Ok(())
}

#[test]
fn a_claim_held_by_another_process_is_refused() -> R {
    // flock(1) holds the same kind of lock on the claim file from outside this process (one process: the
    // shell becomes `sleep`, so killing it releases the lock).
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    let lock = d.path().join(".r.json.claim");
    fs::write(&lock, "")?;
    let Ok(mut child) = std::process::Command::new("sh")
        .args([
            "-c",
            "exec 9>>\"$0\"; flock 9 && : >\"$0.held\" && exec sleep 5",
        ])
        .arg(&lock)
        .spawn()
    else {
        eprintln!("flock(1) not available; skipped");
        return Ok(());
    };
    // Only once the other process holds the lock: a claim taken before would remove the claim file.
    let held = d.path().join(".r.json.claim.held");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !held.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut busy = false;
    while std::time::Instant::now() < deadline {
        if matches!(Claim::new(&p, false), Err(Error::Busy { .. })) {
            busy = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill()?;
    child.wait()?;
    assert!(busy, "the other process's lock was never seen");
    here(Claim::new(&p, false)?.write_bytes(b"x")?);
    assert_eq!(fs::read(&p)?, b"x");
    Ok(())
}

#[test]
fn concurrent_claims_let_exactly_one_run_proceed() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let p = p.clone();
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                match Claim::new(&p, false) {
                    Ok(c) => {
                        // The "work", during which the others try and fail.
                        std::thread::sleep(Duration::from_millis(200));
                        c.write_bytes(format!("{i}").as_bytes()).map(|w| {
                            here(w);
                            1
                        })
                    }
                    // Threads of one process: the others see this process's claim.
                    Err(Error::ClaimedTwice { .. } | Error::Exists { .. }) => Ok(0),
                    Err(e) => Err(e),
                }
            })
        })
        .collect();
    let mut proceeded = 0;
    for h in handles {
        proceeded += h.join().unwrap()?;
    }
    assert_eq!(proceeded, 1);
    assert_eq!(names(d.path()), ["r.json"]);
    Ok(())
}

#[test]
fn nan_is_refused_with_its_json_path_and_nothing_is_written() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("r.json");
    let c = Claim::new(&p, false)?;
    let value =
        std::collections::BTreeMap::from([("ok", vec![1.0]), ("rows", vec![1.0, f64::NAN])]);
    let e = c.write_json(&value).unwrap_err();
    match &e {
        Error::NonFinite {
            json_path, value, ..
        } => {
            assert_eq!(json_path, "rows[1]");
            assert!(value.is_nan());
        }
        other => panic!("expected NonFinite, got {other:?}"),
    }
    assert!(e.to_string().contains("`rows[1]` is NaN"), "{e}");
    drop(c);
    assert!(names(d.path()).is_empty());
    Ok(())
}

#[test]
fn a_relative_path_is_fixed_at_claim_time() -> R {
    let c = Claim::new("some-result.json", false)?;
    assert!(c.path().is_absolute());
    assert!(c.path().ends_with("some-result.json"));
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_stream_is_invisible_until_finished_then_renamed_into_place() -> R {
    use std::io::Write;
    let d = tempfile::tempdir()?;
    let p = d.path().join("samples.csv");
    let mut s = Claim::new(&p, false)?.stream()?;
    writeln!(s, "t,gpu,mhz")?;
    writeln!(s, "0,0,1800")?;
    s.flush_to_file()?;
    assert!(!p.exists());
    assert_eq!(
        fs::read_to_string(s.in_progress())?,
        "t,gpu,mhz\n0,0,1800\n"
    );
    // The claim is held for the stream's life.
    assert!(matches!(
        Claim::new(&p, true),
        Err(Error::ClaimedTwice { .. })
    ));
    writeln!(s, "1,0,1790")?;
    here(s.finish()?);
    assert_eq!(fs::read_to_string(&p)?, "t,gpu,mhz\n0,0,1800\n1,0,1790\n");
    assert_eq!(mode(&p), default_mode(d.path()));
    assert_eq!(names(d.path()), ["samples.csv"]);
    Ok(())
}

#[test]
fn an_abandoned_stream_leaves_nothing() -> R {
    use std::io::Write;
    let d = tempfile::tempdir()?;
    let p = d.path().join("samples.csv");
    let mut s = Claim::new(&p, false)?.stream()?;
    writeln!(s, "partial")?;
    drop(s);
    assert!(names(d.path()).is_empty());
    Ok(())
}

// ---- inputs -------------------------------------------------------------------------------------

/// Runs `f` on a thread and fails the test if it has not returned within 10 s (a FIFO read would hang).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("reading the input hung")
}

#[test]
fn a_regular_file_and_a_symlink_to_one_are_read() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("m.json");
    fs::write(&p, "[]")?;
    assert_eq!(read_input(&p, "manifest", caps::MANIFEST)?, b"[]");
    #[cfg(unix)]
    {
        let l = d.path().join("link.json");
        std::os::unix::fs::symlink(&p, &l)?;
        assert_eq!(read_input_string(&l, "manifest", caps::MANIFEST)?, "[]");
    }
    Ok(())
}

#[test]
fn a_fifo_input_is_refused_at_once() -> R {
    let d = tempfile::tempdir()?;
    let p: PathBuf = d.path().join("manifest.json");
    mkfifo(&p);
    let q = p.clone();
    let e = within_10s(move || read_input(&q, "manifest", caps::MANIFEST)).unwrap_err();
    assert!(
        matches!(e, Error::InputNotRegular { kind: "a FIFO", .. }),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("manifest {}: is a FIFO, not a regular file", p.display())
    );
    Ok(())
}

#[test]
fn dev_zero_is_refused_without_reading_it() {
    let e =
        within_10s(|| read_input(Path::new("/dev/zero"), "rule file", caps::CONFIG)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InputNotRegular {
                kind: "a character device",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_directory_input_is_refused() -> R {
    let d = tempfile::tempdir()?;
    let e = read_input(d.path(), "spec", caps::CONFIG).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InputNotRegular {
                kind: "a directory",
                ..
            }
        ),
        "{e:?}"
    );
    Ok(())
}

#[test]
fn an_input_over_its_cap_is_refused_and_one_at_the_cap_is_read() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("spec.toml");
    fs::write(&p, [b'#'; 11])?;
    let e = read_input(&p, "spec", 10).unwrap_err();
    assert!(
        matches!(
            e,
            Error::TooLarge {
                size: 11,
                cap: 10,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("over the 10-byte limit for a spec"),
        "{e}"
    );
    assert_eq!(read_input(&p, "spec", 11)?.len(), 11);
    Ok(())
}

#[test]
fn a_missing_input_names_its_role_and_path() {
    let e = read_input(Path::new("/nonexistent/m.json"), "manifest", caps::MANIFEST).unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("manifest /nonexistent/m.json: "), "{s}");
}

#[test]
fn bytes_that_are_not_utf8_are_named() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("rules.toml");
    fs::write(&p, b"ab\xffc")?;
    let e = read_input_string(&p, "rule file", caps::CONFIG).unwrap_err();
    assert!(matches!(e, Error::NotUtf8 { offset: 2, .. }), "{e:?}");
    Ok(())
}

// ---- a result never replaces an input of the same run ---------------------------------------------

/// The names one file has: itself, `./`-relative through its directory, a symlink, a hard link.
#[cfg(unix)]
fn names_of(d: &Path, file: &Path) -> Vec<PathBuf> {
    let link = d.join("link-to-input.json");
    std::os::unix::fs::symlink(file, &link).unwrap();
    let hard = d.join("hard-link-to-input.json");
    fs::hard_link(file, &hard).unwrap();
    let dotted = d.join(".").join(file.file_name().unwrap());
    vec![file.to_owned(), dotted, link, hard]
}

#[cfg(unix)]
#[test]
fn a_claim_on_a_file_already_read_is_refused_by_any_name() -> R {
    let d = tempfile::tempdir()?;
    let input = d.path().join("trace.json");
    fs::write(&input, "{}")?;
    read_input(&input, "trace", caps::RECORD)?;
    for name in names_of(d.path(), &input) {
        match Claim::new(&name, true) {
            Err(e @ Error::ResultIsInput { .. }) => {
                let m = e.to_string();
                assert!(
                    m.contains("is this run's trace") && m.contains("even when told to overwrite"),
                    "{m}"
                );
            }
            other => panic!("{}: expected ResultIsInput, got {other:?}", name.display()),
        }
    }
    assert_eq!(fs::read_to_string(&input)?, "{}");
    // Nothing was created by the refusals: no claim file, no directory.
    assert_eq!(
        names(d.path()),
        [
            "hard-link-to-input.json",
            "link-to-input.json",
            "trace.json"
        ]
    );
    Ok(())
}

#[cfg(unix)]
#[test]
fn an_input_opened_after_a_claim_on_it_is_refused_before_it_is_read() -> R {
    for which in 0..4 {
        let d = tempfile::tempdir()?;
        let input = d.path().join("manifest.json");
        fs::write(&input, "[]")?;
        let name = names_of(d.path(), &input).swap_remove(which);
        let claim = Claim::new(&name, true)?;
        for given in [&input, &name] {
            match tool_io::open_input(given, "manifest") {
                Err(e @ Error::InputIsResult { .. }) => {
                    let m = e.to_string();
                    assert!(m.contains("is also this run's result file"), "{m}");
                }
                other => panic!("{}: expected InputIsResult, got {other:?}", given.display()),
            }
        }
        drop(claim);
        // Refused, it still counts as what the run reads: no later claim may replace it either.
        assert!(matches!(
            Claim::new(&input, true),
            Err(Error::ResultIsInput { .. })
        ));
        assert_eq!(fs::read_to_string(&input)?, "[]");
    }
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_rename_onto_an_input_that_took_the_name_during_the_run_is_refused() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("out.json");
    let c = Claim::new(&p, true)?;
    // Read during the run from elsewhere, then moved onto the result's name.
    let input = d.path().join("spec.toml");
    fs::write(&input, "x = 1")?;
    read_input(&input, "model spec", caps::CONFIG)?;
    fs::rename(&input, &p)?;
    assert!(matches!(
        c.write_bytes(b"result"),
        Err(Error::ResultIsInput { .. })
    ));
    assert_eq!(fs::read_to_string(&p)?, "x = 1");
    Ok(())
}

#[test]
fn other_files_are_not_confused_with_inputs() -> R {
    let d = tempfile::tempdir()?;
    let input = d.path().join("in.json");
    fs::write(&input, "1")?;
    read_input(&input, "record", caps::RECORD)?;
    let out = d.path().join("out.json");
    fs::write(&out, "2")?;
    here(Claim::new(&out, true)?.write_bytes(b"3")?);
    assert_eq!(fs::read_to_string(&out)?, "3");
    // A copy has its own identity.
    let copy = d.path().join("copy.json");
    fs::copy(&input, &copy)?;
    here(Claim::new(&copy, true)?.write_bytes(b"4")?);
    Ok(())
}

// ---- names that are not UTF-8 ---------------------------------------------------------------------

/// A name of `dir` from its bytes (Unix file names are bytes; these are not UTF-8).
#[cfg(unix)]
fn byte_name(dir: &Path, name: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    dir.join(std::ffi::OsStr::from_bytes(name))
}

/// Names in `dir` as bytes, sorted: the exact names, not a lossy rendering of them.
#[cfg(unix)]
fn byte_names(dir: &Path) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut v: Vec<Vec<u8>> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    v.sort();
    v
}

#[cfg(unix)]
#[test]
fn two_names_that_differ_only_in_bytes_that_are_not_utf8_are_two_claims() -> R {
    // `out\xff.json` and `out\xfe.json` both render as `out\u{FFFD}.json`: a claim file, temporary file or
    // beside-name made from that rendering would make them one name.
    let d = tempfile::tempdir()?;
    let a = byte_name(d.path(), b"out\xff.json");
    let b = byte_name(d.path(), b"out\xfe.json");
    let ca = Claim::new(&a, false)?;
    let cb = Claim::new(&b, false)?;
    assert_eq!(
        byte_names(d.path()),
        [
            b".out\xfe.json.claim".to_vec(),
            b".out\xff.json.claim".to_vec()
        ]
    );
    here(cb.write_bytes(b"b")?);
    // A file that appears at the name during the run: the result goes beside it, under the name's bytes.
    fs::write(&a, "someone else's")?;
    let w = ca.write_bytes(b"a")?;
    assert_eq!(w.path(), byte_name(d.path(), b"out\xff.1.json"));
    assert_eq!(w.taken(), Some(a.as_path()));
    drop((ca, cb));
    assert_eq!(fs::read(&a)?, b"someone else's");
    assert_eq!(fs::read(&b)?, b"b");
    assert_eq!(fs::read(w.path())?, b"a");
    assert_eq!(
        byte_names(d.path()),
        [
            b"out\xfe.json".to_vec(),
            b"out\xff.1.json".to_vec(),
            b"out\xff.json".to_vec()
        ],
        "no claim or temporary file left"
    );
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_stream_to_a_name_that_is_not_utf8_is_in_progress_under_its_own_bytes() -> R {
    let d = tempfile::tempdir()?;
    let p = byte_name(d.path(), b"s\xff.csv");
    let other = byte_name(d.path(), b"s\xfe.csv");
    let _held = Claim::new(&other, false)?;
    let stream = Claim::new(&p, false)?.stream()?;
    use std::os::unix::ffi::OsStrExt;
    let tmp = stream
        .in_progress()
        .file_name()
        .unwrap()
        .as_bytes()
        .to_vec();
    assert!(tmp.starts_with(b".s\xff.csv."), "{tmp:?}");
    drop(stream);
    assert_eq!(byte_names(d.path()), [b".s\xfe.csv.claim".to_vec()]);
    Ok(())
}
