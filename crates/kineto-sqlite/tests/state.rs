//! SQLite files read in the state SQLite would commit, without writing beside them, and the file's own
//! SQL and times held to account (issue 41's adversarial findings). The files are the built samples of
//! testdata/native, changed here through SQLite itself; the counts they are checked against are
//! `count_native.py`'s (counts.json: 9 kernels in nsys_node_3.17.sqlite, 4 in rpd_3.rpd).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_trace::{Options, Parsed, parse_file};
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/native")
        .join(name)
}

fn parse(path: &Path) -> kineto_trace::Result<Parsed> {
    kineto_sqlite::install();
    parse_file(path, &Options::default())
}

/// The names and the sha256 of every file in `dir`, sorted by name.
fn listing(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                kineto_trace::hex(&Sha256::digest(&bytes)),
            )
        })
        .collect();
    v.sort();
    v
}

/// The sha256 of the files `names` of `dir`, one after another.
fn hash_of(dir: &Path, names: &[&str]) -> Option<String> {
    let mut h = Sha256::new();
    for n in names {
        h.update(std::fs::read(dir.join(n)).unwrap());
    }
    Some(kineto_trace::hex(&h.finalize()))
}

/// Copies `from` and the sidecar named `from` + `suffix` (both as they are at this moment, the writer's
/// transaction still open) into `dir` as `name` and `name` + `suffix`: what a profiler killed mid-write
/// leaves behind.
fn snapshot(from: &Path, suffix: &str, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    let side = |p: &Path| PathBuf::from(format!("{}{suffix}", p.display()));
    std::fs::copy(side(from), side(&to)).unwrap();
    to
}

/// `INSERT`s `n` more copies of the kernel table's first row.
const COPY_FIRST_KERNEL: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
     INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT k.* FROM CUPTI_ACTIVITY_KIND_KERNEL k, n \
     WHERE k.rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)";

#[test]
fn a_hot_journal_is_rolled_back_not_read_and_nothing_is_written_beside_the_file() {
    let work = tempfile::tempdir().unwrap();
    let live = work.path().join("live.sqlite");
    std::fs::copy(sample("nsys_node_3.17.sqlite"), &live).unwrap();
    let c = Connection::open(&live).unwrap();
    // A small cache spills the uncommitted pages into the main file before the commit.
    c.execute_batch("PRAGMA cache_size = 10; BEGIN").unwrap();
    c.execute(COPY_FIRST_KERNEL, [20_000]).unwrap();
    let left = tempfile::tempdir().unwrap();
    let path = snapshot(&live, "-journal", left.path(), "killed.sqlite");
    drop(c);
    // The case is the one meant: the main file holds part of the uncommitted insert.
    assert_ne!(
        std::fs::read(&path).unwrap(),
        std::fs::read(sample("nsys_node_3.17.sqlite")).unwrap()
    );
    let before = listing(left.path());
    let p = parse(&path).unwrap_or_else(|e| panic!("{e}"));
    // What SQLite commits: the 9 kernels of the sample, none of the 20,000 uncommitted.
    assert_eq!(p.trace.kernels.len(), 9);
    assert_eq!(listing(left.path()), before);
    // The hash is of the bytes read: the main file, then its journal.
    let names = ["killed.sqlite", "killed.sqlite-journal"];
    assert_eq!(p.sha256, hash_of(left.path(), &names));
}

#[test]
fn a_write_ahead_log_is_read_and_hashed_and_no_index_is_left_beside_the_file() {
    let work = tempfile::tempdir().unwrap();
    let live = work.path().join("live.sqlite");
    std::fs::copy(sample("nsys_node_3.17.sqlite"), &live).unwrap();
    let c = Connection::open(&live).unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        .unwrap();
    c.execute(COPY_FIRST_KERNEL, [100]).unwrap();
    let left = tempfile::tempdir().unwrap();
    let path = snapshot(&live, "-wal", left.path(), "wal.sqlite");
    drop(c);
    let before = listing(left.path());
    let p = parse(&path).unwrap_or_else(|e| panic!("{e}"));
    // 9 kernels in the main file, 100 committed in the log: 109.
    assert_eq!(p.trace.kernels.len(), 109);
    // No `-shm` (nor anything else) was made beside the input.
    assert_eq!(listing(left.path()), before);
    assert_eq!(
        p.sha256,
        hash_of(left.path(), &["wal.sqlite", "wal.sqlite-wal"])
    );

    // The same file without its log is another trace, hashed apart.
    std::fs::remove_file(left.path().join("wal.sqlite-wal")).unwrap();
    let main_only = parse(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(main_only.trace.kernels.len(), 9);
    assert_eq!(main_only.sha256, hash_of(left.path(), &["wal.sqlite"]));
    assert_eq!(listing(left.path()), before[..1].to_vec());
}

/// Parses `path` on a thread of its own: its error, or a panic if it has not ended in `limit`.
fn parse_within(path: &Path, limit: Duration) -> String {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(parse(&p).map(|p| p.trace.kernels.len()));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(n)) => panic!("{}: read {n} kernels from an endless view", path.display()),
        Ok(Err(e)) => e.to_string(),
        Err(_) => panic!("{}: still reading after {limit:?}", path.display()),
    }
}

#[test]
fn a_view_that_never_ends_is_stopped_naming_the_file_and_the_table() {
    // Endless rows (each one a kernel the reader would keep), and endless work that yields no row.
    for (name, view) in [
        ("rows.sqlite", "SELECT k.* FROM k_real k, c"),
        (
            "spin.sqlite",
            "SELECT k.* FROM k_real k WHERE (SELECT max(n) FROM c) > 0",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::copy(sample("nsys_node_3.17.sqlite"), &path).unwrap();
        let c = Connection::open(&path).unwrap();
        c.execute_batch(&format!(
            "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO k_real;
             CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS
               WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) {view};"
        ))
        .unwrap();
        drop(c);
        let e = parse_within(&path, Duration::from_secs(120));
        assert!(
            e.contains(name)
                && e.contains("CUPTI_ACTIVITY_KIND_KERNEL")
                && e.contains("without end"),
            "{e}"
        );
    }
}

/// A copy of `sample` in `dir` whose `table` has lost its NOT NULL constraints and whose first row's
/// `column` is NULL.
fn with_null(dir: &Path, sample_name: &str, table: &str, column: &str) -> PathBuf {
    let path = dir.join(format!("null-{sample_name}"));
    std::fs::copy(sample(sample_name), &path).unwrap();
    let c = Connection::open(&path).unwrap();
    c.execute_batch(&format!(
        "PRAGMA legacy_alter_table = ON;
         CREATE TABLE loose AS SELECT * FROM {table};
         DROP TABLE {table};
         ALTER TABLE loose RENAME TO {table};
         UPDATE {table} SET \"{column}\" = NULL WHERE rowid = (SELECT min(rowid) FROM {table});"
    ))
    .unwrap();
    path
}

#[test]
fn a_null_time_is_refused_naming_the_table_row_and_column_never_read_as_zero() {
    let dir = tempfile::tempdir().unwrap();
    let rocpd_kernels = "rocpd_kernel_dispatch_0f3c9a1e_52d1_4c4e_9a1e_6b1d2c3a4f50";
    // The sample, the table changed, the table (or rocpd's view over it) the error names, the column.
    for (sample_name, table, read_as, column) in [
        (
            "nsys_node_3.17.sqlite",
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "start",
        ),
        (
            "nsys_node_3.17.sqlite",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "end",
        ),
        ("rpd_3.rpd", "rocpd_op", "rocpd_op", "start"),
        ("rpd_3.rpd", "rocpd_api", "rocpd_api", "end"),
        ("rocpd_3.db", rocpd_kernels, "kernels", "start"),
    ] {
        let path = with_null(dir.path(), sample_name, table, column);
        let e = parse(&path).map(|_| ()).unwrap_err().to_string();
        assert!(
            e.contains(&format!("null-{sample_name}"))
                && e.contains(&format!("table {read_as}, row "))
                && e.contains(&format!("`{column}` is NULL")),
            "{e}"
        );
    }
}
