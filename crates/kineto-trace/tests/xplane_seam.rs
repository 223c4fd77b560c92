//! The XPlane seam of the front door, in a binary that installs no XPlane reader (`kineto-xplane` is not
//! linked here): an XPlane file is told by content and refused naming what it is; its directory entry
//! is picked as a trace. What the reader makes of a file is tested in `kineto-xplane`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kineto_trace::{Error, Options, expand_paths, parse_file};
use std::path::PathBuf;

fn xplane_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/native/xplane")
}

#[test]
fn an_xplane_file_without_the_xplane_reader_is_named_as_such() {
    let path = xplane_dir().join("multi_gpu.xplane.pb");
    let e = parse_file(&path, &Options::default()).unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("multi_gpu.xplane.pb")
            && e.contains("XPlane protobuf")
            && e.contains("`xplane` feature"),
        "{e}"
    );
}

#[test]
fn a_profile_directory_lists_its_xplane_files() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["b.xplane.pb", "a.xplane.pb.gz", "notes.txt", "a.pb"] {
        std::fs::write(tmp.path().join(name), b"").unwrap();
    }
    let files = expand_paths(&[tmp.path().to_path_buf()]).unwrap();
    let names: Vec<_> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.xplane.pb.gz", "b.xplane.pb"]);
}
