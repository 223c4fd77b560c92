//! Replay: samples recorded earlier, read back as if they were arriving now (but as fast as they can be read).
//!
//! Three forms are read, told apart by the first line that is not blank: a `{` starts our JSON lines; one of
//! our `# t_s,index,…` headers names the CSV columns (and a later header may change them, so concatenated
//! recordings work); anything else is taken as raw `nvidia-smi --query-gpu=… ,noheader,nounits` output in our
//! query's column order. Raw output has no times: tick *k* (a new tick starts when a GPU index repeats) is put
//! at *k* × interval, and the capture says the times were synthesised.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::backend::{Backend, BackendKind, Session, SourceEnd, Timestamps};
use crate::csv::{self, Column, LineFault, SMI_QUERY, ValueStats};
use crate::sample::{GpuRef, Sample};
use crate::select::{self, GpuId};
use crate::{MonitorConfig, Unavailable};

/// Bad lines kept verbatim in warnings.
const VERBATIM_LINES: usize = 5;

#[derive(Clone)]
pub(crate) struct ReplayBackend {
    path: PathBuf,
    timestamps: Timestamps,
    interval_s: f64,
    wanted: Option<Vec<GpuId>>,
}

#[derive(Clone)]
enum Form {
    Jsonl,
    Csv(Vec<Column>),
}

/// The longest line a recording may have (ours are ~150 bytes; JSON lines with NVML processes a few KiB): a
/// file without newlines (`/dev/zero`, a binary) must not be read into memory whole.
const MAX_LINE: usize = 64 * 1024;

/// Opens a recording: regular files (or symlinks to one) only, so that a FIFO cannot block and a device
/// cannot be read forever.
fn open(path: &Path) -> Result<File, Unavailable> {
    tool_io::open_input(path, "replay recording").map_err(|e| Unavailable::Replay {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Reads one line (without its newline) into `buf`, keeping at most [`MAX_LINE`] bytes of it; the rest of a
/// longer line is read and dropped. `None` at the end of the file; `Some(true)` for a line that was cut.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = MAX_LINE.saturating_sub(buf.len());
        cut |= part.len() > room;
        buf.extend_from_slice(&part[..part.len().min(room)]);
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            return Ok(Some(cut));
        }
    }
}

fn sniff(path: &Path) -> Result<Form, Unavailable> {
    let err = |e: std::io::Error| Unavailable::Replay {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let mut r = BufReader::new(open(path)?);
    let mut raw = Vec::new();
    loop {
        match read_line(&mut r, &mut raw).map_err(err)? {
            // An empty recording is a recording of nothing, not an error: it replays as zero samples.
            None => return Ok(Form::Csv(SMI_QUERY.to_vec())),
            // Too long to be a sample or a header: it says nothing about the form (reading counts it).
            Some(true) => continue,
            Some(false) => {}
        }
        let line = String::from_utf8_lossy(&raw);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with('{') {
            return Ok(Form::Jsonl);
        }
        if let Some(h) = csv::parse_header(t) {
            return Ok(Form::Csv(h.columns));
        }
        if t.starts_with('#') {
            continue;
        }
        return Ok(Form::Csv(SMI_QUERY.to_vec()));
    }
}

/// Reads a recording one sample at a time.
struct Reader {
    lines: BufReader<File>,
    buf: Vec<u8>,
    form: Form,
    stats: ValueStats,
    synth_tick: u64,
    synth_seen: BTreeSet<u32>,
    interval_s: f64,
    line_no: u64,
}

enum Item {
    Sample(Box<Sample>),
    Bad {
        line_no: u64,
        why: String,
        text: String,
    },
    Skip,
}

impl Reader {
    fn next(&mut self) -> Option<Result<Item, std::io::Error>> {
        let cut = match read_line(&mut self.lines, &mut self.buf) {
            Ok(c) => c?,
            Err(e) => return Some(Err(e)),
        };
        self.line_no += 1;
        if cut {
            return Some(Ok(Item::Bad {
                line_no: self.line_no,
                why: format!("longer than {MAX_LINE} bytes"),
                text: String::from_utf8_lossy(&self.buf[..200.min(self.buf.len())]).into_owned(),
            }));
        }
        let text = String::from_utf8_lossy(&self.buf);
        let line = text.trim();
        if line.is_empty() {
            return Some(Ok(Item::Skip));
        }
        if let Some(h) = csv::parse_header(line) {
            self.form = Form::Csv(h.columns);
            // Named, not met as every row "having fewer fields than columns": the rows are still read.
            if !h.unknown.is_empty() {
                let names: Vec<String> = h.unknown.iter().map(|n| format!("`{n}`")).collect();
                return Some(Ok(Item::Bad {
                    line_no: self.line_no,
                    why: format!(
                        "the header names {} that gpu-monitor does not read; {} values are skipped",
                        if names.len() == 1 {
                            format!("a column, {}", names[0])
                        } else {
                            format!("columns {}", names.join(", "))
                        },
                        if names.len() == 1 { "its" } else { "their" }
                    ),
                    text: line.chars().take(200).collect(),
                }));
            }
            return Some(Ok(Item::Skip));
        }
        if line.starts_with('#') {
            return Some(Ok(Item::Skip));
        }
        let bad = |why: String, line_no| Item::Bad {
            line_no,
            why,
            text: line.chars().take(200).collect(),
        };
        let item = match &self.form {
            Form::Jsonl => match serde_json::from_str::<Sample>(line) {
                Ok(s) => Item::Sample(Box::new(s)),
                Err(e) => bad(e.to_string(), self.line_no),
            },
            Form::Csv(cols) => match csv::parse_line(line, cols, &mut self.stats) {
                Ok(mut s) => {
                    if !cols.contains(&Column::TS) {
                        if !self.synth_seen.insert(s.index) {
                            self.synth_tick += 1;
                            self.synth_seen.clear();
                            self.synth_seen.insert(s.index);
                        }
                        s.t_s = self.synth_tick as f64 * self.interval_s;
                    }
                    Item::Sample(Box::new(s))
                }
                Err(LineFault::Empty) => Item::Skip,
                Err(LineFault::Short) => bad("fewer fields than columns".into(), self.line_no),
                Err(LineFault::Garbage) => bad("not a sample line".into(), self.line_no),
            },
        };
        Some(Ok(item))
    }
}

impl ReplayBackend {
    pub(crate) fn open(
        path: &Path,
        config: &MonitorConfig,
        notes: &mut Vec<String>,
    ) -> Result<Self, Unavailable> {
        let form = sniff(path)?;
        let timestamps = match &form {
            Form::Jsonl => Timestamps::Recorded,
            Form::Csv(cols) if cols.contains(&Column::TS) => Timestamps::Recorded,
            Form::Csv(_) => Timestamps::Synthesised,
        };
        let cvd = select::cuda_visible_devices_env();
        let wanted = select::wanted_ids(&config.gpus, cvd.as_deref());
        if matches!(config.gpus, crate::GpuSelection::CudaVisibleDevices) && cvd.is_none() {
            notes.push("CUDA_VISIBLE_DEVICES is not set: replaying every GPU".into());
        }
        Ok(ReplayBackend {
            path: path.to_path_buf(),
            timestamps,
            interval_s: config.interval_ms as f64 / 1000.0,
            wanted,
        })
    }

    fn reader(&self) -> Result<Reader, Unavailable> {
        let file = open(&self.path)?;
        let form = sniff(&self.path)?;
        Ok(Reader {
            lines: BufReader::new(file),
            buf: Vec::new(),
            form,
            stats: ValueStats::default(),
            synth_tick: 0,
            synth_seen: BTreeSet::new(),
            interval_s: self.interval_s,
            line_no: 0,
        })
    }

    fn selected(&self, s: &Sample) -> bool {
        self.wanted.as_ref().is_none_or(|ids| {
            ids.iter()
                .any(|id| select::id_matches(id, s.index, s.uuid.as_deref()))
        })
    }
}

impl Backend for ReplayBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Replay
    }

    fn gpus(&self) -> Vec<GpuRef> {
        Vec::new()
    }

    fn timestamps(&self) -> Timestamps {
        self.timestamps
    }

    fn run(&mut self, session: &mut Session<'_>) -> SourceEnd {
        let mut reader = match self.reader() {
            Ok(r) => r,
            Err(e) => {
                return SourceEnd::Died {
                    detail: e.to_string(),
                };
            }
        };
        let mut shown = 0;
        let mut seen_ids: Vec<(u32, Option<String>)> = Vec::new();
        let mut end = SourceEnd::Exhausted;
        let mut n: u64 = 0;
        // Per GPU: the latest time read so far and its line, to catch a clock going backwards.
        let mut latest: std::collections::BTreeMap<u32, (f64, u64)> = Default::default();
        let mut backwards_shown = 0;
        while let Some(item) = reader.next() {
            n += 1;
            // Checking the stop flag takes a lock; every 256 lines keeps that out of the per-line cost.
            if n.is_multiple_of(256) && session.stop_requested() {
                end = SourceEnd::Stopped;
                break;
            }
            match item {
                Ok(Item::Sample(s)) => {
                    if !self.selected(&s) {
                        session.count("unselected_lines", 1);
                        continue;
                    }
                    if self.timestamps == Timestamps::Recorded {
                        let line_no = reader.line_no;
                        match latest.get(&s.index) {
                            Some(&(t0, line0)) if s.t_s < t0 => {
                                session.count("replay_time_backwards", 1);
                                if backwards_shown < VERBATIM_LINES {
                                    backwards_shown += 1;
                                    session.warn(format!(
                                        "{} line {line_no}: GPU {} at t_s {} goes back from {} on line {line0}; \
                                         readings are summarised in time order",
                                        self.path.display(),
                                        s.index,
                                        s.t_s,
                                        t0
                                    ));
                                }
                            }
                            _ => {
                                latest.insert(s.index, (s.t_s, line_no));
                            }
                        }
                    }
                    if !seen_ids.iter().any(|(i, _)| *i == s.index) {
                        seen_ids.push((s.index, s.uuid.clone()));
                    }
                    session.record(*s);
                }
                Ok(Item::Bad { line_no, why, text }) => {
                    session.count("replay_bad_lines", 1);
                    if shown < VERBATIM_LINES {
                        shown += 1;
                        session.warn(format!(
                            "{} line {line_no}: {why}: {text:?}",
                            self.path.display()
                        ));
                    }
                }
                Ok(Item::Skip) => {}
                Err(e) => {
                    end = SourceEnd::Died {
                        detail: format!("reading {}: {e}", self.path.display()),
                    };
                    break;
                }
            }
        }
        session.count("lines", reader.line_no);
        session.count("na_values", reader.stats.na);
        session.count("not_supported_values", reader.stats.not_supported);
        session.count("bad_values", reader.stats.bad);
        session.count("other_marker_values", reader.stats.other_marker);
        if let Some(ids) = &self.wanted {
            for id in ids {
                if !seen_ids
                    .iter()
                    .any(|(i, u)| select::id_matches(id, *i, u.as_deref()))
                {
                    session.warn(format!(
                        "selected GPU {id:?} never appears in {}",
                        self.path.display()
                    ));
                }
            }
        }
        end
    }

    fn try_clone(&self) -> Option<Box<dyn Backend>> {
        Some(Box::new(self.clone()))
    }

    fn sample_once(&mut self) -> Result<Vec<Sample>, Unavailable> {
        let mut reader = self.reader()?;
        let mut out: Vec<Sample> = Vec::new();
        while let Some(item) = reader.next() {
            let item = item.map_err(|e| Unavailable::Replay {
                path: self.path.display().to_string(),
                reason: e.to_string(),
            })?;
            if let Item::Sample(s) = item {
                if !self.selected(&s) {
                    continue;
                }
                if out.iter().any(|o| o.index == s.index) {
                    break;
                }
                out.push(*s);
            }
        }
        for s in &mut out {
            s.sanitize();
        }
        Ok(out)
    }
}
