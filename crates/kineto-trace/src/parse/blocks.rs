//! The parallel parse's input: the JSON text cut into fixed-size blocks, read (and inflated) on one
//! thread, hashed on another, handed to the range parsers and, in order, to the serial parser's window.
//!
//! Every block comes from one pool of at most `cap` buffers, recycled as the last holder lets go, so
//! memory is `cap` × the block size whatever the file size, and nothing waits on anything but a
//! free buffer (the reader) or the next block (everyone else).
//!
//! What it is not: the serial feed (`crate::stored::feed`) or the gzip and hash rules (`crate::stored`),
//! which it uses.

use crate::stored::{Content, fill, is_cut};
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

/// One block of the JSON text.
pub(super) struct Block {
    /// Its number: block `k` starts at `k` × the block size.
    pub(super) index: usize,
    /// Stream offset of `bytes[0]`.
    pub(super) offset: u64,
    pub(super) bytes: Vec<u8>,
    pool: Arc<Pool>,
}

impl Drop for Block {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.bytes));
    }
}

/// The buffers blocks are read into; `cap` at most exist at once.
pub(super) struct Pool {
    state: Mutex<PoolState>,
    freed: Condvar,
    cap: usize,
    size: usize,
}

struct PoolState {
    free: Vec<Vec<u8>>,
    live: usize,
    /// Set when the parse is over: the reader stops instead of waiting for a buffer.
    closed: bool,
}

impl Pool {
    pub(super) fn new(cap: usize, size: usize) -> Arc<Pool> {
        Arc::new(Pool {
            state: Mutex::new(PoolState {
                free: Vec::new(),
                live: 0,
                closed: false,
            }),
            freed: Condvar::new(),
            cap: cap.max(2),
            size: size.max(1),
        })
    }

    /// A buffer, once fewer than `cap` are in use; `None` once closed.
    fn take(&self) -> Option<Vec<u8>> {
        let mut s = self.state.lock().ok()?;
        loop {
            if s.closed {
                return None;
            }
            if let Some(b) = s.free.pop() {
                s.live += 1;
                return Some(b);
            }
            if s.live < self.cap {
                s.live += 1;
                return Some(Vec::with_capacity(self.size));
            }
            s = self.freed.wait(s).ok()?;
        }
    }

    fn give_back(&self, b: Vec<u8>) {
        if let Ok(mut s) = self.state.lock() {
            s.live = s.live.saturating_sub(1);
            // Kept at its length, not cleared: the reader reads over the old bytes, and zeroing
            // a block again (`resize`) cost the reader thread a twentieth of its time.
            if b.capacity() >= self.size {
                s.free.push(b);
            }
            self.freed.notify_all();
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.state.lock().map_or(true, |s| s.closed)
    }

    /// Ends the parse for the reader: it stops at its next buffer.
    pub(super) fn close(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.closed = true;
            self.freed.notify_all();
        }
    }
}

/// What the serial parser's window receives, in stream order.
pub(super) enum Delivery {
    Block(Arc<Block>),
    /// The stream failed after the blocks before it (a cut or corrupt gzip stream, an I/O error).
    Failed(io::Error),
}

/// Where the reader sends what it reads.
pub(super) struct Outlets {
    /// The range parsers' queue.
    pub(super) jobs: Sender<Arc<Block>>,
    /// The serial parser.
    pub(super) serial: Sender<Delivery>,
    /// The hasher (plain input with a hash asked for).
    pub(super) hash: Option<Sender<Arc<Block>>>,
}

/// The reader thread: raw bytes → (inflate, hashing the gzip bytes inline) → blocks. `None` when the
/// parse hung up before the end; else the sha256 of gzip input when asked for (plain input is hashed
/// by [`hasher`]).
pub(super) fn reader(
    raw: impl Read,
    gzip: bool,
    hash_gzip: bool,
    pool: &Arc<Pool>,
    out: Outlets,
) -> Option<Option<[u8; 32]>> {
    let mut r = Content::new(raw, gzip, gzip && hash_gzip);
    let mut offset = 0u64;
    for index in 0.. {
        let mut bytes = pool.take()?;
        // Zeroed once per buffer (a recycled one keeps its length; only a short last block's tail
        // is zeroed again).
        bytes.resize(pool.size, 0);
        let (n, failure) = fill(&mut r, &mut bytes);
        bytes.truncate(n);
        let full = n == pool.size;
        if n > 0 {
            let block = Arc::new(Block {
                index,
                offset,
                bytes,
                pool: pool.clone(),
            });
            offset += n as u64;
            // Jobs first: once the serial parser holds a block, a range parser has it queued.
            let _ = out.jobs.send(block.clone());
            if let Some(h) = &out.hash {
                // A hasher that is gone only costs the digest (its join then fails), not the parse.
                let _ = h.send(block.clone());
            }
            out.serial.send(Delivery::Block(block)).ok()?;
        } else {
            pool.give_back(bytes);
        }
        if let Some(e) = failure {
            // As the feed's: a cut gzip file is still hashed to its end (as stored).
            let cut = is_cut(&e);
            out.serial.send(Delivery::Failed(e)).ok()?;
            if !cut {
                return None;
            }
            return r.digest_to_end().ok();
        }
        if !full {
            break;
        }
    }
    Some(r.digest())
}

/// The hasher thread: the plain input's blocks in order, hashed as they arrive, over the buffers the
/// parsers read (the digest counts only if the reader reached the end).
pub(super) fn hasher(blocks: Receiver<Arc<Block>>) -> [u8; 32] {
    let mut h = Sha256::new();
    for b in blocks {
        h.update(&b.bytes);
    }
    h.finalize().into()
}

/// The most the serial parser's window takes per refill: enough for the events a block boundary cuts,
/// little enough that the bytes a range then lets it skip are not copied first.
const SEAM_READ: usize = 64 << 10;

/// The serial parser's reader over the delivered blocks, skipping what a range's parse already read.
pub(super) struct BlockReader {
    rx: Receiver<Delivery>,
    cur: Option<Arc<Block>>,
    /// Stream offset of the next byte to hand out.
    next: u64,
    failed: bool,
}

impl BlockReader {
    pub(super) fn new(rx: Receiver<Delivery>) -> Self {
        BlockReader {
            rx,
            cur: None,
            next: 0,
            failed: false,
        }
    }
}

impl Read for BlockReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(b) = &self.cur {
                let end = b.offset + b.bytes.len() as u64;
                if self.next < end {
                    let from = (self.next - b.offset) as usize;
                    let n = buf.len().min(b.bytes.len() - from).min(SEAM_READ);
                    buf[..n].copy_from_slice(&b.bytes[from..from + n]);
                    self.next += n as u64;
                    return Ok(n);
                }
                self.cur = None;
            }
            if self.failed {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Delivery::Block(b)) => {
                    if b.offset + (b.bytes.len() as u64) > self.next {
                        self.cur = Some(b);
                    }
                }
                Ok(Delivery::Failed(e)) => {
                    self.failed = true;
                    return Err(e);
                }
                Err(_) => return Ok(0),
            }
        }
    }
}

impl super::window::Source for BlockReader {
    fn skip_to(&mut self, offset: u64) {
        self.next = self.next.max(offset);
    }

    fn read_once(&self) -> bool {
        true
    }
}
