//! A counting global allocator: every allocation of the process passes through it, so a test binary
//! (or the fuzz target) that includes this module can measure the heap a call uses. Included with
//! `#[path]` by `tests/memory.rs`, `fuzz/fuzz_targets/parse.rs` and model-shapes' `tests/memory.rs`; it
//! declares the `#[global_allocator]`, so each binary includes it once.
#![allow(dead_code)] // Each includer uses its own subset.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counters are
// bookkeeping only and never affect what is returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded as received; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded as received; `p` was allocated by `System` with layout `l`.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded as received; `p` was allocated by `System` with layout `l`.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f`; returns its result, the peak heap above the start (over all threads), and what it
/// left allocated. Measurements must not overlap: callers serialise them.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, isize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let kept = LIVE.load(Ordering::Relaxed) as isize - before as isize;
    (out, peak, kept)
}

/// The stated bound on the heap a parse may use above what was live before it: [`MULTIPLE`] × the
/// JSON bytes + [`FIXED`]. `FIXED` covers the 4 MiB window (which may double once while an event
/// straddles its end) and the helper thread's 1 MiB chunks in flight (4 + 2 returned). The multiple
/// covers the model: a `GpuOp` is 176 bytes for a kernel event of ≥ 40 bytes of JSON, and a `Vec`
/// that doubles may hold twice its length for a moment (2 × 176 / 40 ≈ 9), plus interned names and
/// tracks. Real traces, whose events carry tens to hundreds of bytes the model does not keep, use far
/// less (`tests/memory.rs` prints what it measures).
pub const MULTIPLE: usize = 12;
/// See [`MULTIPLE`].
pub const FIXED: usize = 16 << 20;

/// [`MULTIPLE`] × `json_bytes` + [`FIXED`].
pub fn bound(json_bytes: usize) -> usize {
    MULTIPLE * json_bytes + FIXED
}
