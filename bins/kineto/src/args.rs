//! The options the `kineto` commands share, and the session each command reads its traces through.

use crate::render::Format;
use clap::Args;
use kineto_trace::{Session, SessionConfig};
use std::path::PathBuf;

/// `kineto summary`'s options.
#[derive(Args)]
pub struct SummaryArgs {
    /// One JSON object per line instead of a readable block.
    #[arg(long)]
    pub json: bool,
    /// On a truncated file, keep the complete events before the cut (marked "salvaged").
    #[arg(long)]
    pub salvage: bool,
    /// Read, inflate, hash and parse each file on one thread (default: reading, inflating and
    /// hashing run on a helper thread beside the parser).
    #[arg(long)]
    pub single_thread: bool,
    /// Threads parsing one file's events (default: every core, shared among the files read at
    /// once; 1: the serial parse). The result is the same whatever the count.
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    pub threads: usize,
    /// Skip the sha256 of each file (it is then null): saves a pass over the stored bytes.
    #[arg(long)]
    pub no_sha256: bool,
    #[arg(help = kineto_trace::native::TRACES_HELP, required = true)]
    pub traces: Vec<PathBuf>,
}

impl SummaryArgs {
    /// The session: no rules or steps are read, only the parse options.
    pub fn session(&self) -> kineto_trace::Result<Session> {
        Session::new(SessionConfig {
            parse: kineto_trace::Options {
                salvage: self.salvage,
                sha256: !self.no_sha256,
                feed: if self.single_thread {
                    kineto_trace::Feed::Inline
                } else {
                    kineto_trace::Feed::Threaded
                },
                threads: self.threads,
                ..kineto_trace::Options::default()
            },
            ..SessionConfig::default()
        })
    }
}

/// `kineto top`'s options.
#[derive(Args)]
pub struct Top {
    /// What to group kernels by.
    #[arg(long, value_enum, default_value = "name")]
    pub by: By,
    /// Rows per table (0: all).
    #[arg(short = 'n', long = "limit", default_value_t = 20)]
    pub n: usize,
    /// One table per step (kernels launched in it); default: one per trace, every kernel.
    #[arg(long)]
    pub per_step: bool,
    #[command(flatten)]
    pub listing: Listing,
}

/// What `kineto top` groups kernels by.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum By {
    /// The kernel's name.
    Name,
    /// Its family.
    Family,
    /// Its bucket.
    Bucket,
}

/// The options of listings that need no rules or steps.
#[derive(Args)]
pub struct Plain {
    /// One JSON object per line.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV with a header line.
    #[arg(long)]
    pub csv: bool,
    /// On a truncated file, keep the complete events before the cut.
    #[arg(long)]
    pub salvage: bool,
    #[arg(help = kineto_trace::native::TRACES_HELP, required = true)]
    pub traces: Vec<PathBuf>,
}

impl Plain {
    /// The session: parse options only, no hash (a listing prints none).
    pub fn session(&self) -> kineto_trace::Result<Session> {
        Session::new(SessionConfig {
            parse: listing_parse(self.salvage),
            ..SessionConfig::default()
        })
    }

    /// Text, JSON lines or CSV.
    pub fn format(&self) -> Format {
        format_of(self.json, self.csv)
    }
}

/// The options the listings and analyses share.
#[derive(Args)]
pub struct Listing {
    /// One JSON object per line.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV with a header line.
    #[arg(long)]
    pub csv: bool,
    /// Kernel rule table (TOML: `[families]` and `[[rule]]`); default: the built-in table.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Step markers: a regex matched against the whole annotation name, with optional named groups
    /// `phase`, `rows`, `requests`, `step`, `tokens` and per-phase token groups
    /// (docs/steps-and-budgets.md); default: the built-in profiles (KL1, TraceLens `execute_…`,
    /// SGLang `step[…]`, `ProfilerStep#N`). With no marker, the whole GPU window is one step.
    #[arg(long, value_name = "RE")]
    pub step_pattern: Option<String>,
    /// Ignore step markers: each trace is one step over its whole GPU window (first to last
    /// kernel, copy or fill), as HTA's temporal breakdown sees it.
    #[arg(long, conflicts_with = "step_pattern")]
    pub whole_trace: bool,
    /// On a truncated file, keep the complete events before the cut.
    #[arg(long)]
    pub salvage: bool,
    #[arg(help = kineto_trace::native::TRACES_HELP, required = true)]
    pub traces: Vec<PathBuf>,
}

impl Listing {
    /// The session of these options (and of `captures`, a graph-capture directory for every trace: the
    /// model options' `--graph-captures`) and the trace files the arguments name; an error names the rule
    /// file, the pattern or the path. For the doctor and the report, which name the Python frame that
    /// held the host: every Python frame of a `with_stack` trace is kept.
    pub fn open(&self, captures: Option<PathBuf>) -> kineto_trace::Result<(Session, Vec<PathBuf>)> {
        let session = Session::new(SessionConfig {
            rules: self.rules.clone(),
            step_pattern: self.step_pattern.clone(),
            whole_trace: self.whole_trace,
            captures,
            parse: kineto_trace::Options {
                python_frames: true,
                ..listing_parse(self.salvage)
            },
        })?;
        let paths = session.expand(&self.traces)?;
        Ok((session, paths))
    }

    /// Text, JSON lines or CSV.
    pub fn format(&self) -> Format {
        format_of(self.json, self.csv)
    }
}

/// How a listing parses: no sha256 (it prints none, so the pass over the stored bytes is skipped).
fn listing_parse(salvage: bool) -> kineto_trace::Options {
    kineto_trace::Options {
        salvage,
        sha256: false,
        ..kineto_trace::Options::default()
    }
}

/// The output format the `--json` and `--csv` flags choose.
pub fn format_of(json: bool, csv: bool) -> Format {
    if json {
        Format::Json
    } else if csv {
        Format::Csv
    } else {
        Format::Table
    }
}
