//! Helpers the integration tests share: where the test data is, and the corpus rule.
#![allow(dead_code)] // Each test binary uses its own subset.
#![allow(clippy::expect_used)] // Test helpers: a missing fixture should fail the test loudly.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shared corpus beside the clone, or `None` (with a note) when it is absent. CI sets
/// KL1_REQUIRE_CORPUS=1 so that there it must be present: then absence fails the test.
pub fn shared_corpus() -> Option<PathBuf> {
    let root = workspace().join("../shared/traces");
    if root.join("INVENTORY.csv").exists() {
        return Some(root);
    }
    assert!(
        std::env::var_os("KL1_REQUIRE_CORPUS").is_none(),
        "KL1_REQUIRE_CORPUS is set but {} is missing",
        root.display()
    );
    eprintln!(
        "note: {} not found; shared corpus not checked",
        root.display()
    );
    None
}

/// The decompressed JSON of a small real trace (92 events, CUDA event syncs) bundled in testdata.
pub fn event_sync_trace() -> Vec<u8> {
    let p = workspace()
        .join("testdata/traces/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&p).expect("open"))
        .read_to_end(&mut out)
        .expect("read");
    out
}
