//! `nvidia-smi` streaming: one `nvidia-smi --query-gpu=… -lms=N` child for the whole run.
//!
//! Opening runs the same query once (no `-lms`) to learn that nvidia-smi works at all and which GPUs it sees;
//! without a driver, nvidia-smi exists but fails, and that failure — in its own words — is the reason recorded.
//! Running reads the child's lines as they come, stamps each with the host clock on arrival, and turns every
//! oddity (a short line, an error message, `[N/A]`, silence, an early exit) into a counter or a warning.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::backend::{Backend, BackendKind, Session, SourceEnd, Timestamps};
use crate::csv::{self, LineFault, MASK_FIELD, MASK_FIELD_NEW, SMI_QUERY, ValueStats};
use crate::identity::GpuIdentity;
use crate::sample::{GpuRef, Sample};
use crate::{GpuSelection, MonitorConfig, NVIDIA_SMI_ENV, Unavailable, select};
use child_run::captured::{self, Child, Event};

/// The `nvidia-smi` executables that timed out in this process, with the timeout they ran past: not asked
/// again, so that a hung driver costs one timeout per process rather than one per query (a `provenance run`
/// makes several: identity, before, monitor, after).
static HUNG: Mutex<BTreeMap<PathBuf, f64>> = Mutex::new(BTreeMap::new());

/// Forgets every remembered timeout; see [`crate::forget_failures`].
pub(crate) fn forget_hung() {
    HUNG.lock().unwrap_or_else(|p| p.into_inner()).clear();
}
/// After a stop, how long the child gets to exit on SIGTERM before the group is killed.
const STOP_GRACE: Duration = Duration::from_millis(500);
/// A child silent for max(this many intervals, [`SILENCE_MIN`]) is reported as silent.
const SILENCE_INTERVALS: u32 = 10;
const SILENCE_MIN: Duration = Duration::from_secs(2);
/// Lines kept verbatim in warnings (garbage, short lines); the rest are only counted.
const VERBATIM_LINES: usize = 5;
/// A "line" longer than this without a newline is not nvidia-smi output; it is dropped as garbage.
const MAX_LINE: usize = 64 * 1024;

#[derive(Clone)]
pub(crate) struct SmiBackend {
    path: PathBuf,
    timeout: Duration,
    mask_field: &'static str,
    gpus: Vec<GpuRef>,
    /// `--id=` argument when only some GPUs are selected.
    id_arg: Option<String>,
    probe: Option<Vec<Sample>>,
}

/// The executable to run: the config's, else `$KL1_NVIDIA_SMI`, else `nvidia-smi` on `PATH`.
pub(crate) fn locate(config_path: Option<&Path>) -> Result<PathBuf, Unavailable> {
    if let Some(p) = config_path {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(Unavailable::NvidiaSmiNotFound {
                searched: format!("{} (from the configuration)", p.display()),
            })
        };
    }
    if let Some(p) = std::env::var_os(NVIDIA_SMI_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Unavailable::NvidiaSmiNotFound {
                searched: format!("{} (from ${NVIDIA_SMI_ENV})", p.display()),
            })
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("nvidia-smi"))
        .find(|c| c.is_file())
        .ok_or_else(|| Unavailable::NvidiaSmiNotFound {
            searched: format!("PATH={}", path.to_string_lossy()),
        })
}

fn query_args(mask_field: &str, id_arg: Option<&str>) -> Vec<String> {
    let fields: Vec<&str> = SMI_QUERY
        .iter()
        .map(|c| {
            if c.name() == MASK_FIELD {
                mask_field
            } else {
                c.name()
            }
        })
        .collect();
    let mut args = vec![
        format!("--query-gpu={}", fields.join(",")),
        "--format=csv,noheader,nounits".to_owned(),
    ];
    if let Some(ids) = id_arg {
        args.push(format!("--id={ids}"));
    }
    args
}

fn first_chars(s: &str, n: usize) -> String {
    let t = s.trim();
    match t.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

/// Runs a one-shot `nvidia-smi` and returns its output, or why it could not be had.
fn one_shot(path: &Path, args: &[String], timeout: Duration) -> Result<String, Unavailable> {
    let shown = path.display().to_string();
    if let Some(&after_s) = HUNG.lock().unwrap_or_else(|p| p.into_inner()).get(path) {
        return Err(Unavailable::NvidiaSmiHungEarlier {
            path: shown,
            after_s,
        });
    }
    match captured::run_once(path, args, timeout) {
        Ok(f) if f.exit.success => Ok(f.output),
        Ok(f) => Err(Unavailable::NvidiaSmiFailed {
            path: shown,
            status: f.exit.status,
            output: first_chars(&f.output, 400),
        }),
        Err(None) => {
            HUNG.lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(path.to_path_buf(), timeout.as_secs_f64());
            Err(Unavailable::NvidiaSmiTimeout {
                path: shown,
                after_s: timeout.as_secs_f64(),
            })
        }
        Err(Some(e)) => Err(Unavailable::Spawn {
            path: shown,
            reason: e.to_string(),
        }),
    }
}

fn parse_samples(output: &str) -> Vec<Sample> {
    let mut stats = ValueStats::default();
    output
        .lines()
        .filter_map(|l| csv::parse_line(l, &SMI_QUERY, &mut stats).ok())
        .collect()
}

impl SmiBackend {
    pub(crate) fn open(
        config: &MonitorConfig,
        notes: &mut Vec<String>,
    ) -> Result<Self, Unavailable> {
        let path = locate(config.nvidia_smi.as_deref())?;
        let timeout = Duration::from_millis(config.query_timeout_ms.max(1));
        let mut mask_field = MASK_FIELD;
        let output = match one_shot(&path, &query_args(mask_field, None), timeout) {
            Ok(o) => o,
            // Drivers that renamed the field may one day stop accepting the old name.
            Err(Unavailable::NvidiaSmiFailed { output, .. })
                if output.contains(MASK_FIELD) || output.contains("valid field") =>
            {
                mask_field = MASK_FIELD_NEW;
                one_shot(&path, &query_args(mask_field, None), timeout)?
            }
            Err(e) => return Err(e),
        };
        let probe = parse_samples(&output);
        if probe.is_empty() {
            return Err(if output.trim().is_empty() {
                Unavailable::NoGpus {
                    backend: format!("nvidia-smi ({})", path.display()),
                }
            } else {
                Unavailable::NvidiaSmiFailed {
                    path: path.display().to_string(),
                    status: "exit status 0 but no GPU line".into(),
                    output: first_chars(&output, 400),
                }
            });
        }
        let mut visible: Vec<GpuRef> = probe
            .iter()
            .map(|s| GpuRef {
                index: s.index,
                uuid: s.uuid.clone(),
            })
            .collect();
        visible.dedup_by(|a, b| a.index == b.index);
        let cvd = select::cuda_visible_devices_env();
        let order = std::env::var("CUDA_DEVICE_ORDER").ok();
        let (gpus, more) =
            select::resolve(&config.gpus, &visible, cvd.as_deref(), order.as_deref())?;
        notes.extend(more);
        let id_arg = match config.gpus {
            GpuSelection::All => None,
            _ => Some(
                gpus.iter()
                    .map(|g| g.index.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        };
        let wanted: BTreeSet<u32> = gpus.iter().map(|g| g.index).collect();
        let probe = probe
            .into_iter()
            .filter(|s| wanted.contains(&s.index))
            .collect();
        Ok(SmiBackend {
            path,
            timeout,
            mask_field,
            gpus,
            id_arg,
            probe: Some(probe),
        })
    }
}

/// Line handling for one run.
struct Reader<'s, 'a> {
    session: &'s mut Session<'a>,
    wanted: BTreeSet<u32>,
    gpus: Vec<GpuRef>,
    stats: ValueStats,
    verbatim: usize,
    lines: u64,
    samples: u64,
    last_other: Vec<String>,
}

impl Reader<'_, '_> {
    fn line(&mut self, raw: &[u8], at: Instant) {
        let text = String::from_utf8_lossy(raw);
        let line = text.trim_end_matches(['\r', '\n']);
        self.lines += 1;
        match csv::parse_line(line, &SMI_QUERY, &mut self.stats) {
            Ok(mut s) => {
                if !self.wanted.contains(&s.index) {
                    self.session.count("unselected_lines", 1);
                    return;
                }
                if s.uuid.is_none() {
                    s.uuid = self
                        .gpus
                        .iter()
                        .find(|g| g.index == s.index)
                        .and_then(|g| g.uuid.clone());
                }
                s.t_s = self.session.t_s(at);
                self.samples += 1;
                self.session.record(s);
            }
            Err(LineFault::Empty) => self.session.count("empty_lines", 1),
            Err(fault) => {
                let counter = if fault == LineFault::Short {
                    "short_lines"
                } else {
                    "garbage_lines"
                };
                self.session.count(counter, 1);
                let shown = first_chars(line, 200);
                if self.verbatim < VERBATIM_LINES {
                    self.verbatim += 1;
                    self.session.warn(format!(
                        "nvidia-smi printed a non-sample line ({counter}): {shown:?}"
                    ));
                }
                if self.last_other.len() == 3 {
                    self.last_other.remove(0);
                }
                self.last_other.push(shown);
            }
        }
    }

    fn split(&mut self, buf: &mut Vec<u8>, at: Instant, final_flush: bool) {
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + nl;
            self.line(&buf[start..end], at);
            start = end + 1;
        }
        buf.drain(..start);
        if buf.len() > MAX_LINE {
            self.session.count("garbage_lines", 1);
            self.session.warn(format!(
                "nvidia-smi printed {} bytes without a newline; dropped",
                buf.len()
            ));
            buf.clear();
        }
        if final_flush && !buf.is_empty() {
            // A line cut off by the child's exit.
            let rest = std::mem::take(buf);
            self.line(&rest, at);
        }
    }

    fn finish(&mut self) {
        self.session.count("lines", self.lines);
        self.session.count("na_values", self.stats.na);
        self.session
            .count("not_supported_values", self.stats.not_supported);
        self.session.count("bad_values", self.stats.bad);
        self.session
            .count("other_marker_values", self.stats.other_marker);
        for t in std::mem::take(&mut self.stats.other_marker_texts) {
            self.session
                .warn(format!("nvidia-smi reported {t} for a value"));
        }
    }
}

impl Backend for SmiBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::NvidiaSmi
    }

    fn gpus(&self) -> Vec<GpuRef> {
        self.gpus.clone()
    }

    fn timestamps(&self) -> Timestamps {
        Timestamps::HostReceived
    }

    fn run(&mut self, session: &mut Session<'_>) -> SourceEnd {
        let interval = session.interval();
        let mut args = query_args(self.mask_field, self.id_arg.as_deref());
        args.push(format!("-lms={}", interval.as_millis()));
        let (wake_r, mut wake_w) = match std::io::pipe() {
            Ok(p) => p,
            Err(e) => {
                return SourceEnd::Died {
                    detail: format!("could not create a pipe: {e}"),
                };
            }
        };
        let mut child = match Child::spawn(&self.path, &args) {
            Ok(c) => c,
            Err(e) => {
                return SourceEnd::Died {
                    detail: format!("could not start {}: {e}", self.path.display()),
                };
            }
        };
        // The hook keeps a read end of its own: a stop requested after this run has returned (the child died
        // first) must write into a pipe that still has a reader, not raise SIGPIPE in the stopping thread.
        let keep_open = wake_r.try_clone().ok();
        session.on_stop(Box::new(move || {
            // One byte makes the wake descriptor readable; the sampling thread does the rest.
            let _ = wake_w.write_all(&[1]);
            drop(keep_open);
        }));
        let silence = (interval * SILENCE_INTERVALS).max(SILENCE_MIN);
        let mut reader = Reader {
            wanted: self.gpus.iter().map(|g| g.index).collect(),
            gpus: self.gpus.clone(),
            session,
            stats: ValueStats::default(),
            verbatim: 0,
            lines: 0,
            samples: 0,
            last_other: Vec::new(),
        };
        let mut buf = Vec::new();
        // `last_output` is when the child last printed; `next_check` when silence is next worth reporting.
        let mut last_output = Instant::now();
        let mut next_check = last_output + silence;
        let mut stop_deadline: Option<Instant> = None;
        let end = loop {
            let now = Instant::now();
            let (wake, timeout) = match stop_deadline {
                // Once stopping, the wake descriptor stays readable; it is no longer polled.
                Some(d) => (None, d.saturating_duration_since(now)),
                None => (
                    Some(wake_r.as_raw_fd()),
                    next_check.saturating_duration_since(now),
                ),
            };
            match child.wait_output(&mut buf, wake, Some(timeout)) {
                Event::Data => {
                    let at = Instant::now();
                    last_output = at;
                    next_check = at + silence;
                    reader.split(&mut buf, at, false);
                    // A child that ignores SIGTERM and keeps printing never lets the poll time out.
                    if stop_deadline.is_some_and(|d| at >= d) {
                        reader.session.count("stop_grace_expired", 1);
                        break SourceEnd::Stopped;
                    }
                }
                Event::Eof => {
                    reader.split(&mut buf, Instant::now(), true);
                    if stop_deadline.is_some() {
                        break SourceEnd::Stopped;
                    }
                    let exit = child.terminate(Duration::ZERO);
                    let mut detail = format!(
                        "nvidia-smi ended by itself ({}) after {} lines",
                        exit.status, reader.lines
                    );
                    if !reader.last_other.is_empty() {
                        detail.push_str(&format!(
                            "; its last non-sample output: {}",
                            reader.last_other.join(" | ")
                        ));
                    }
                    reader.session.warn(detail.clone());
                    break SourceEnd::Died { detail };
                }
                Event::Woken => {
                    child.signal_group(libc::SIGTERM);
                    stop_deadline = Some(Instant::now() + STOP_GRACE);
                }
                Event::Timeout => {
                    if stop_deadline.is_some_and(|d| Instant::now() >= d) {
                        reader.session.count("stop_grace_expired", 1);
                        break SourceEnd::Stopped;
                    }
                    let now = Instant::now();
                    if stop_deadline.is_none() && now >= next_check {
                        next_check = now + silence;
                        reader.session.count("silent_periods", 1);
                        reader.session.warn(format!(
                            "nvidia-smi (pid {}) printed nothing for {:.1} s (interval {} ms): hung or stalled",
                            child.pid(),
                            now.duration_since(last_output).as_secs_f64(),
                            interval.as_millis()
                        ));
                    }
                }
            }
        };
        reader.finish();
        let exit = child.terminate(Duration::ZERO);
        reader.session.child_cpu(exit.cpu_s);
        if reader.samples == 0 && matches!(end, SourceEnd::Stopped) && reader.lines > 0 {
            reader
                .session
                .warn("nvidia-smi printed lines but none was a sample".to_owned());
        }
        end
    }

    fn try_clone(&self) -> Option<Box<dyn Backend>> {
        // The same executable and GPUs; the opening reading stays with this handle.
        Some(Box::new(SmiBackend {
            probe: None,
            ..self.clone()
        }))
    }

    fn sample_once(&mut self) -> Result<Vec<Sample>, Unavailable> {
        if let Some(p) = self.probe.take() {
            return Ok(p);
        }
        let out = one_shot(
            &self.path,
            &query_args(self.mask_field, self.id_arg.as_deref()),
            self.timeout,
        )?;
        Ok(parse_samples(&out))
    }

    fn identity(&mut self) -> Vec<GpuIdentity> {
        const FIELDS: [&str; 8] = [
            "index",
            "uuid",
            "name",
            "pci.bus_id",
            "driver_version",
            "vbios_version",
            "enforced.power.limit",
            "persistence_mode",
        ];
        let mut args = vec![
            format!("--query-gpu={}", FIELDS.join(",")),
            "--format=csv,noheader,nounits".to_owned(),
        ];
        if let Some(ids) = &self.id_arg {
            args.push(format!("--id={ids}"));
        }
        let listing = one_shot(&self.path, &args, self.timeout).map_err(|e| e.to_string());
        // The CUDA version is only in the plain report's banner ("CUDA Version: 12.4").
        let cuda: Result<String, String> = one_shot(&self.path, &[], self.timeout)
            .map_err(|e| e.to_string())
            .and_then(|o| {
                o.split("CUDA Version:")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .map(|v| v.trim_end_matches('|').to_owned())
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| "nvidia-smi's report has no \"CUDA Version:\"".to_owned())
            });
        self.gpus
            .iter()
            .map(|g| {
                let mut id =
                    GpuIdentity::unknown(g.index, g.uuid.clone(), "not in nvidia-smi's answer");
                id.unavailable.remove("uuid");
                let row: Result<Vec<String>, String> = listing.clone().and_then(|l| {
                    l.lines()
                        .map(|line| {
                            line.split(',')
                                .map(|c| c.trim().to_owned())
                                .collect::<Vec<_>>()
                        })
                        .find(|c| {
                            c.len() == FIELDS.len() && c[0].parse::<u32>().ok() == Some(g.index)
                        })
                        .ok_or_else(|| format!("nvidia-smi listed no GPU {}", g.index))
                });
                let cell = |i: usize| -> Result<String, String> {
                    let row = row.clone()?;
                    let v = row[i].clone();
                    if v.starts_with('[') || v.is_empty() || v == "N/A" {
                        Err(format!("nvidia-smi reported {v:?}"))
                    } else {
                        Ok(v)
                    }
                };
                let name = cell(2);
                let pci = cell(3);
                let driver = cell(4);
                let vbios = cell(5);
                let limit = cell(6).and_then(|v| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| format!("not a number: {v:?}"))
                });
                let persistence = cell(7).and_then(|v| match v.as_str() {
                    "Enabled" => Ok(true),
                    "Disabled" => Ok(false),
                    other => Err(format!("unexpected {other:?}")),
                });
                id.note("name", &name);
                id.note("pci_bus_id", &pci);
                id.note("driver_version", &driver);
                id.note("cuda_driver_version", &cuda);
                id.note("vbios_version", &vbios);
                id.note("power_limit_w", &limit);
                id.note("persistence_mode", &persistence);
                id.name = name.ok();
                id.pci_bus_id = pci.ok();
                id.driver_version = driver.ok();
                id.cuda_driver_version = cuda.clone().ok();
                id.vbios_version = vbios.ok();
                id.power_limit_w = limit.ok();
                id.persistence_mode = persistence.ok();
                if id.uuid.is_none() {
                    id.uuid = cell(1).ok();
                }
                id
            })
            .collect()
    }
}
