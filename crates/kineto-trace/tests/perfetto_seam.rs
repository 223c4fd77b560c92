//! The Perfetto seam of the front door, in a binary that installs no Perfetto reader
//! (`kineto-perfetto` is not linked here): a Perfetto trace is told by content and refused naming what
//! it is; its directory entries are picked as traces. What the reader makes of a file is tested in
//! `kineto-perfetto`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kineto_trace::{Error, Options, expand_paths, parse_file};
use std::path::PathBuf;

#[test]
fn a_perfetto_file_without_the_perfetto_reader_is_named_as_such() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/native/perfetto/rocprofv3_layout.pftrace");
    let e = parse_file(&path, &Options::default()).unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("rocprofv3_layout.pftrace")
            && e.contains("Perfetto protobuf trace")
            && e.contains("`perfetto` feature"),
        "{e}"
    );
}

#[test]
fn a_directory_lists_its_perfetto_files() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["b.pftrace", "a.perfetto-trace.gz", "notes.txt", "c.trace"] {
        std::fs::write(tmp.path().join(name), b"").unwrap();
    }
    let files = expand_paths(&[tmp.path().to_path_buf()]).unwrap();
    let names: Vec<_> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.perfetto-trace.gz", "b.pftrace"]);
}
