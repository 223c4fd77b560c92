//! The front door: a [`Session`] holds a run's options once — the kernel rule table, the step
//! pattern, whole-trace, salvage, threads, hashing, an explicit graph-capture directory — and turns the
//! paths a user gives into analysed traces: directories expanded into rank files, each file's format told
//! by content, the capture traces beside a trace applied to its steps, the rank rule checked across a
//! run, and the notes worth telling the user.
//!
//! What it is: the one way in for every reader of traces — the `kineto` commands, `kineto-export`, the
//! Python module and its Spark source — so that a table is the same whichever way a user reads it (two
//! hand-assembled pipelines had drifted: one applied the capture traces beside a file, the other did not).
//! What it is not: the parser or the analyses themselves ([`crate::parse_file`], [`Analysis`]), nor any
//! output format (tables live in `kineto-tables`).

use crate::analysis::Analysis;
use crate::budget::StepBudget;
use crate::capture::GraphCaptures;
use crate::error::Error;
use crate::family::Rules;
use crate::ranks::{RankClaim, RankWarning};
use crate::step::StepPattern;
use crate::{Options, Parsed, Result, Trace};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// What a session is opened with: the command line's options, or the Python call's arguments.
#[derive(Debug, Clone, Default)]
pub struct SessionConfig {
    /// A kernel rule table (TOML); `None`: the built-in table.
    pub rules: Option<PathBuf>,
    /// Step markers (a regex over the whole annotation name); `None`: the built-in profiles.
    pub step_pattern: Option<String>,
    /// Each trace is one step over its whole GPU window, markers ignored.
    pub whole_trace: bool,
    /// A graph-capture directory for every trace; `None`: the one beside each trace, if any
    /// ([`crate::capture::beside`]).
    pub captures: Option<PathBuf>,
    /// How files are parsed (salvage, hash, threads, feed, stop flag).
    pub parse: Options,
}

/// A run's options, loaded once; every trace of the run is read and analysed through it.
#[derive(Debug, Clone)]
pub struct Session {
    parse: Options,
    /// The rule table: a rule file's, loaded by [`Session::new`]; the built-in one on first use.
    rules: OnceLock<Arc<Rules>>,
    /// The step pattern: a given one, compiled by [`Session::new`]; the built-in profiles on first use.
    pattern: OnceLock<StepPattern>,
    captures: Option<PathBuf>,
}

impl Session {
    /// Loads the rule file and compiles the step pattern given, if any; an error names the rule file
    /// or the pattern. The built-in table and profiles, which cannot fail, are compiled when first
    /// used: a command that reads traces without analysing them (`kineto summary`) never pays for
    /// them, and one that does pays after its parse, not before (5.6–7.0 ms of one core on this
    /// machine; `docs/parse-costs.md`).
    pub fn new(config: SessionConfig) -> Result<Session> {
        let rules = match config.rules.as_deref() {
            Some(path) => OnceLock::from(Arc::new(Rules::load(path)?)),
            None => OnceLock::new(),
        };
        let pattern =
            match StepPattern::from_options(config.step_pattern.as_deref(), config.whole_trace)? {
                Some(asked) => OnceLock::from(asked),
                None => OnceLock::new(),
            };
        Ok(Session {
            parse: config.parse,
            rules,
            pattern,
            captures: config.captures,
        })
    }

    /// A session over a rule table and step pattern already loaded (a caller that holds them for other
    /// uses too, as the roofline's setup does).
    pub fn from_parts(
        rules: Rules,
        pattern: StepPattern,
        captures: Option<PathBuf>,
        parse: Options,
    ) -> Session {
        Session {
            parse,
            rules: OnceLock::from(Arc::new(rules)),
            pattern: OnceLock::from(pattern),
            captures,
        }
    }

    /// The kernel rule table.
    pub fn rules(&self) -> &Rules {
        self.shared()
    }

    /// The rule table, shared (for what outlives the session, as a Python trace object does).
    pub fn shared_rules(&self) -> Arc<Rules> {
        self.shared().clone()
    }

    fn shared(&self) -> &Arc<Rules> {
        self.rules.get_or_init(|| Arc::new(Rules::builtin()))
    }

    /// The step pattern.
    pub fn pattern(&self) -> &StepPattern {
        self.pattern.get_or_init(StepPattern::builtin)
    }

    /// How files are parsed.
    pub fn parse_options(&self) -> &Options {
        &self.parse
    }

    /// The trace files the arguments name ([`crate::expand_paths`]: a directory → its rank files).
    pub fn expand(&self, args: &[PathBuf]) -> Result<Vec<PathBuf>> {
        crate::expand_paths(args)
    }

    /// Reads one trace file (any format, told by content) without analysing it.
    pub fn read(&self, path: &Path) -> Result<Parsed> {
        crate::parse_file(path, &self.parse)
    }

    /// Reads a trace from its bytes as stored (a pipe, an archive member: [`crate::parse_raw`]), `name`
    /// naming it in errors and rows, with this session's parse options.
    pub fn read_stored(
        &self,
        name: &Path,
        raw: impl std::io::Read + Send + 'static,
    ) -> Result<Parsed> {
        crate::parse_raw(name, raw, &self.parse)
    }

    /// [`Session::read_stored`] of a trace that must be one rank: a file of several is
    /// [`Error::SeveralRanks`] naming them, as [`Session::read_one`] says of a file.
    pub fn read_stored_one(
        &self,
        name: &Path,
        raw: impl std::io::Read + Send + 'static,
    ) -> Result<Parsed> {
        only_rank(name, split_parsed(self.read_stored(name, raw)?))
    }

    /// Reads and analyses the one trace a file holds ([`Session::read_one`]: a file of several ranks is
    /// [`Error::SeveralRanks`], never their union; [`Session::open_ranks`] gives each).
    pub fn open(&self, path: &Path) -> Result<AnalysedTrace> {
        self.analyse(self.read_one(path)?)
    }

    /// Reads one trace file once and returns one trace per rank it holds ([`crate::split`]): a file of
    /// several processes or GPUs gives one per process and GPU, each naming its rank, process and device
    /// in its header (`part`) and in its file name (`trace.sqlite#pid 4101 gpu 0`), so rows say which; a
    /// file of one rank gives itself, exactly as [`Session::read`] does.
    pub fn read_ranks(&self, path: &Path) -> Result<Vec<Parsed>> {
        Ok(split_parsed(self.read(path)?))
    }

    /// The one trace a file holds: [`Session::read_ranks`] when it gives one rank, else
    /// [`Error::SeveralRanks`] naming them (for callers that compare or return one trace per file).
    pub fn read_one(&self, path: &Path) -> Result<Parsed> {
        only_rank(path, self.read_ranks(path)?)
    }

    /// [`Session::read_ranks`], each rank analysed.
    pub fn open_ranks(&self, path: &Path) -> Result<Vec<AnalysedTrace>> {
        self.read_ranks(path)?
            .into_iter()
            .map(|p| self.analyse(p))
            .collect()
    }

    /// Analyses a trace already read: links, steps (with the graph captures' sizes), kernel families.
    /// A capture directory that cannot be read is an error naming it.
    pub fn analyse(&self, parsed: Parsed) -> Result<AnalysedTrace> {
        let mut analysis = Analysis::new(&parsed.trace, self.pattern(), self.rules());
        let dir = self
            .captures
            .clone()
            .or_else(|| crate::capture::beside(&parsed.path));
        if let Some(dir) = dir {
            let c = GraphCaptures::read_dir(&dir)?;
            c.apply(&parsed.trace, &analysis.links, &mut analysis.steps);
        }
        Ok(AnalysedTrace {
            parsed,
            analysis,
            budgets: OnceLock::new(),
            rules: self.shared_rules(),
        })
    }

    /// Runs `work` on every path on worker threads and hands each result to `emit` in the order of
    /// `paths` ([`crate::each_in_order`]).
    pub fn each<T: Send>(
        &self,
        paths: &[PathBuf],
        work: impl Fn(&Path) -> T + Sync,
        emit: impl FnMut(T),
    ) {
        crate::each_in_order(paths, work, emit)
    }

    /// The rank rule over the traces of one run ([`crate::ranks::check_ranks`]): two traces of one
    /// rank are an error naming both; ranks that look like other runs are warnings.
    pub fn check_ranks<'a>(
        traces: impl IntoIterator<Item = &'a Parsed>,
    ) -> Result<Vec<RankWarning>> {
        crate::ranks::check_ranks(traces.into_iter().map(|p| RankClaim {
            file: &p.path,
            rank: p.trace.header.rank,
            world_size: p.trace.header.world_size,
        }))
    }
}

/// The one rank of `ranks` (the parts of `path`), or [`Error::SeveralRanks`] naming them.
fn only_rank(path: &Path, mut ranks: Vec<Parsed>) -> Result<Parsed> {
    if ranks.len() == 1
        && let Some(p) = ranks.pop()
    {
        return Ok(p);
    }
    Err(Error::SeveralRanks {
        path: path.to_path_buf(),
        ranks: ranks.iter().map(|p| p.path.display().to_string()).collect(),
    })
}

/// One parsed file as one per rank it holds: the file's facts on each, its name followed by the rank's.
fn split_parsed(parsed: Parsed) -> Vec<Parsed> {
    let Parsed {
        path,
        sha256,
        gzip,
        json_bytes,
        trace,
    } = parsed;
    let parts = crate::split::split_ranks(trace);
    let one = parts.len() == 1;
    parts
        .into_iter()
        .map(|trace| {
            let path = match (&trace.header.part, one) {
                (Some(p), false) => PathBuf::from(format!("{}#{}", path.display(), p.label)),
                _ => path.clone(),
            };
            Parsed {
                path,
                sha256: sha256.clone(),
                gzip,
                json_bytes,
                trace,
            }
        })
        .collect()
}

/// One trace, read and analysed under a session's options.
#[derive(Debug)]
pub struct AnalysedTrace {
    /// The trace as read, with facts about its file.
    pub parsed: Parsed,
    /// Links, steps, kernel families.
    pub analysis: Analysis,
    /// Every step's budget, computed when first asked for (a kernel listing needs none).
    budgets: OnceLock<Vec<StepBudget>>,
    rules: Arc<Rules>,
}

impl AnalysedTrace {
    /// The model.
    pub fn trace(&self) -> &Trace {
        &self.parsed.trace
    }

    /// The file as given, as rows name it.
    pub fn file(&self) -> String {
        self.parsed.path.display().to_string()
    }

    /// The rule table the trace was classified with.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The budget of every step, in step order.
    pub fn budgets(&self) -> &[StepBudget] {
        self.budgets
            .get_or_init(|| self.analysis.budgets(&self.parsed.trace, &self.rules))
    }

    /// What the rows do not show, one line each naming the file ([`crate::notes::notes`]).
    pub fn notes(&self) -> Vec<String> {
        crate::notes::notes(&self.parsed, &self.analysis)
    }
}
