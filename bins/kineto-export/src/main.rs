//! `kineto-export`: Kineto traces to Hive-partitioned Parquet tables (`DIR/<table>/rank=N/<trace>.parquet`)
//! for DuckDB, Spark, pandas and polars. Parses arguments, calls `kineto-trace` and `kineto-parquet`,
//! claims the files; nothing else lives here. A binary of its own so that `kineto` does not build Arrow.

mod rank_numbers;

use clap::Parser;
use kineto_parquet::{Analysed, Limits, Table, write_table};
use kineto_trace::{Parsed, Session, SessionConfig};
use rank_numbers::RankCounts;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

#[derive(Parser)]
#[command(
    name = "kineto-export",
    version,
    about = "Write Kineto traces as Parquet tables: DIR/<table>/rank=N/<trace>.parquet \
             (tables gpu_ops, steps, budget, families, annotations; schema in docs/parquet.md)"
)]
struct Cli {
    /// The dataset directory (created if missing); each rank's files go under `<table>/rank=N/`.
    #[arg(long, value_name = "DIR", required = true)]
    parquet: PathBuf,
    /// Replace files of an earlier export of the same traces.
    #[arg(long)]
    overwrite: bool,
    /// Kernel rule table (TOML); default: the built-in table.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Step markers: a regex matched against the whole annotation name (as `kineto budget`);
    /// default: the built-in profiles.
    #[arg(long, value_name = "RE")]
    step_pattern: Option<String>,
    /// Ignore step markers: each trace is one step over its whole GPU window.
    #[arg(long, conflicts_with = "step_pattern")]
    whole_trace: bool,
    /// On a truncated file, keep the complete events before the cut.
    #[arg(long)]
    salvage: bool,
    /// The rank of a trace without `distributedInfo.rank` (only with one trace of one rank); default:
    /// its position among the ranks of all inputs (files in input order, then each file's ranks), with
    /// a note.
    #[arg(long, value_name = "N")]
    rank: Option<u64>,
    /// Rows per Parquet row group.
    #[arg(long, value_name = "N", default_value_t = Limits::default().row_group_rows)]
    row_group_rows: usize,
    #[arg(help = kineto_trace::native::TRACES_HELP, required = true)]
    traces: Vec<PathBuf>,
}

fn main() -> ExitCode {
    // Few malloc arenas for many parse threads, freed blocks handed back: the memory bound of a parse.
    kineto_trace::tune_malloc();
    #[cfg(feature = "sqlite")]
    kineto_sqlite::install();
    #[cfg(feature = "xplane")]
    kineto_xplane::install();
    #[cfg(feature = "perfetto")]
    kineto_perfetto::install();
    let cli: Cli = match tool_io::cli::parse("kineto-export") {
        Ok(c) => c,
        Err(code) => return code,
    };
    let setup = || -> kineto_trace::Result<_> {
        let session = Session::new(SessionConfig {
            rules: cli.rules.clone(),
            step_pattern: cli.step_pattern.clone(),
            whole_trace: cli.whole_trace,
            parse: kineto_trace::Options {
                salvage: cli.salvage,
                sha256: false,
                ..kineto_trace::Options::default()
            },
            ..SessionConfig::default()
        })?;
        let paths = session.expand(&cli.traces)?;
        Ok((paths, session))
    };
    let (paths, session) = match setup() {
        Ok(v) => v,
        Err(e) => {
            note(&format!("kineto-export: {e}"));
            return ExitCode::from(2);
        }
    };
    if cli.rank.is_some() && paths.len() != 1 {
        note("kineto-export: --rank names the rank of one trace; give exactly one");
        return ExitCode::from(2);
    }
    // One file is one set of ranks: given twice, its ranks would be exported twice (a rankless one under
    // two numbers), and its position among the inputs would not be one.
    if let Some(twice) = given_twice(&paths) {
        note(&format!(
            "kineto-export: {} is given twice; give each trace once",
            twice.display()
        ));
        return ExitCode::from(2);
    }
    let limits = Limits {
        row_group_rows: cli.row_group_rows.max(1),
        ..Limits::default()
    };
    let position: HashMap<&Path, usize> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_path(), i))
        .collect();
    // Rank → the file exporting it: two files of one rank would be merged silently in `rank=N/`.
    let taken: Mutex<HashMap<u64, PathBuf>> = Mutex::new(HashMap::new());
    let claims: Mutex<Vec<Claim>> = Mutex::new(Vec::new());
    let counts = RankCounts::new(paths.len());
    let job = Job {
        dir: &cli.parquet,
        overwrite: cli.overwrite,
        rank: cli.rank,
        session: &session,
        limits,
        taken: &taken,
        claims: &claims,
        paths: &paths,
        counts: &counts,
    };
    let work = |path: &Path| job.export(path, position.get(path).copied().unwrap_or(0));
    let mut failed = false;
    session.each(&paths, work, |(lines, error)| {
        lines.iter().for_each(|l| note(l));
        if let Some(e) = error {
            note(&format!("kineto-export: {e}"));
            failed = true;
        }
    });
    // Ranks that look like different runs (a rank past its world size, world sizes that differ).
    let mut claims = claims.into_inner().unwrap_or_default();
    claims.sort_by_key(|c| c.0);
    let warnings = kineto_trace::ranks::check_ranks(claims.iter().map(|(_, file, rank, world)| {
        kineto_trace::ranks::RankClaim {
            file,
            rank: *rank,
            world_size: *world,
        }
    }));
    for w in warnings.unwrap_or_default() {
        note(&format!("kineto-export: note: {w}"));
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// What every trace's export shares.
struct Job<'a> {
    dir: &'a Path,
    overwrite: bool,
    rank: Option<u64>,
    session: &'a Session,
    limits: Limits,
    taken: &'a Mutex<HashMap<u64, PathBuf>>,
    /// (position, file, rank, world size) of each trace exported, for the rank rule's warnings.
    claims: &'a Mutex<Vec<Claim>>,
    /// The inputs, as expanded (to name one in an error).
    paths: &'a [PathBuf],
    /// Each input's rank count, for the numbers of ranks without `distributedInfo.rank`.
    counts: &'a RankCounts,
}

/// A trace's position (its file's among the inputs, its own among the file's ranks), file, rank and
/// world size.
type Claim = ((usize, usize), PathBuf, Option<u64>, Option<u64>);

impl Job<'_> {
    /// Parses one trace file (the `position`th input) and writes the tables of each rank it holds (one,
    /// or one per process and GPU of a file of several: [`Session::read_ranks`]); returns the lines to
    /// report, those of the ranks written before an error too, and the error.
    fn export(&self, file: &Path, position: usize) -> (Vec<String>, Option<String>) {
        let mut lines = Vec::new();
        let error = self.export_ranks(file, position, &mut lines).err();
        (lines, error)
    }

    /// [`Job::export`], each written rank's lines added to `lines`.
    fn export_ranks(
        &self,
        file: &Path,
        position: usize,
        lines: &mut Vec<String>,
    ) -> Result<(), String> {
        let slot = self.counts.slot(position);
        let ranks = self.session.read_ranks(file).map_err(|e| e.to_string())?;
        slot.fill(ranks.len());
        if ranks.len() > 1 && self.rank.is_some() {
            return Err(format!(
                "{}: holds {} ranks; --rank names one (leave it out: each rank is exported under its own)",
                file.display(),
                ranks.len()
            ));
        }
        let numbered = self.rank_numbers(file, position, &ranks)?;
        for (i, (parsed, (rank, why))) in ranks.into_iter().zip(numbered).enumerate() {
            lines.extend(self.export_rank(file, parsed, (position, i), rank, why)?);
        }
        Ok(())
    }

    /// The rank each of `ranks` (the ranks of `file`, the `position`th input) is exported as, with the
    /// note saying where the number came from when the trace names none: `distributedInfo.rank`, else
    /// `--rank`, else its position among the ranks of all inputs (`rank_numbers.rs`).
    fn rank_numbers(
        &self,
        file: &Path,
        position: usize,
        ranks: &[Parsed],
    ) -> Result<Vec<(u64, Option<String>)>, String> {
        let of = ranks.len();
        // Known once a rankless rank needs it: only such a file waits for the counts of those before it.
        let mut file_first: Option<u64> = None;
        let mut out = Vec::with_capacity(of);
        for (i, p) in ranks.iter().enumerate() {
            let numbered = match (p.trace.header.rank, self.rank) {
                (Some(r), Some(given)) if r != given => {
                    return Err(format!(
                        "{}: the trace says rank {r}, --rank says {given}",
                        p.path.display()
                    ));
                }
                (Some(r), _) => (r, None),
                (None, Some(given)) => (given, None),
                (None, None) => {
                    let first = match file_first {
                        Some(f) => f,
                        None => *file_first.insert(self.first_number(file, position)?),
                    };
                    let n = first + i as u64;
                    let why = if of == 1 {
                        "its position among the ranks of the inputs; --rank sets it".to_string()
                    } else {
                        format!(
                            "its position among the ranks of the inputs: rank {} of this file's {of}, \
                             after the {first} ranks of the files before it",
                            i + 1
                        )
                    };
                    let note = format!("no distributedInfo.rank; exported as rank={n} ({why})");
                    (n, Some(note))
                }
            };
            out.push(numbered);
        }
        Ok(out)
    }

    /// The number of the first rank of `file` (the `position`th input): the count of the ranks of the
    /// inputs before it, once they are read; an error naming the first of them that could not be.
    fn first_number(&self, file: &Path, position: usize) -> Result<u64, String> {
        self.counts.first_of(position).map_err(|j| {
            format!(
                "{}: not exported: it names no distributedInfo.rank, so its ranks are numbered by their \
                 position among the ranks of all inputs, unknown since {} before it could not be read",
                file.display(),
                self.paths.get(j).map_or(Path::new("?"), |p| p.as_path()).display()
            )
        })
    }

    /// Analyses and writes one rank's tables (`file` the file it was read from, `parsed.path` the rank's
    /// name, `position` its file's among the inputs and its own among the file's ranks) as `rank`, with
    /// the note `why` when the trace did not name it; returns the lines to report.
    fn export_rank(
        &self,
        file: &Path,
        parsed: Parsed,
        position: (usize, usize),
        rank: u64,
        why: Option<String>,
    ) -> Result<Vec<String>, String> {
        let path = parsed.path.clone();
        let path = path.as_path();
        let t = &parsed.trace;
        let mut notes: Vec<String> = why.into_iter().collect();
        {
            let mut taken = self
                .taken
                .lock()
                .map_err(|_| "a worker failed while holding the rank table".to_string())?;
            if let Some(other) = taken.get(&rank) {
                // The rank rule every tool follows (`kineto_trace::ranks`), in its words.
                let e = kineto_trace::Error::SameRank {
                    rank,
                    first: other.clone(),
                    second: path.to_path_buf(),
                };
                return Err(format!(
                    "{e}; rank={rank} is already exported in this run: export them to separate directories"
                ));
            }
            taken.insert(rank, path.to_path_buf());
            if let Ok(mut c) = self.claims.lock() {
                c.push((
                    position,
                    path.to_path_buf(),
                    t.header.rank,
                    t.header.world_size,
                ));
            }
        }
        let stem = file_stem(file);
        // Claim every table's file before the work, so a refusal (an existing file without
        // --overwrite) leaves nothing half-written.
        let mut claims = Vec::new();
        for table in Table::EXPORTED {
            let target = self
                .dir
                .join(table.name())
                .join(format!("rank={rank}"))
                .join(format!("{stem}.parquet"));
            let claim = tool_io::Claim::new(&target, self.overwrite).map_err(|e| match e {
                tool_io::Error::Exists { .. } => format!("{e} (--overwrite replaces it)"),
                e => e.to_string(),
            })?;
            claims.push((table, claim));
        }
        let done = self.session.analyse(parsed).map_err(|e| e.to_string())?;
        let t = done.trace();
        let file = done.file();
        let a = Analysed::of(&file, &done);
        let meta = [
            ("kineto.rank", rank.to_string()),
            ("kineto.rules", done.rules().origin().display().to_string()),
            (
                "kineto.step_pattern",
                self.session.pattern().as_str().to_string(),
            ),
            ("kineto.salvaged", t.salvaged.is_some().to_string()),
            ("kineto.format", t.header.format.key().to_string()),
            (
                "kineto.format_version",
                t.header.format_version.clone().unwrap_or_default(),
            ),
            (
                "kineto.kernels_complete",
                t.capture.kernels_complete().to_string(),
            ),
        ];
        let mut counts = Vec::new();
        for (table, claim) in claims {
            let target = claim.path().to_path_buf();
            let stream = claim.stream().map_err(|e| e.to_string())?;
            let (stream, rows) = write_table(table, &a, stream, &meta, self.limits)
                .map_err(|e| format!("{}: {e}", target.display()))?;
            let written = stream.finish().map_err(|e| e.to_string())?;
            if let Some(n) = written.notice() {
                notes.push(n);
            }
            counts.push(format!("{} {rows}", table.name()));
        }
        if let Some(s) = &t.salvaged {
            notes.push(format!(
                "salvaged: cut at byte {} ({})",
                s.cut_offset, s.reason
            ));
        }
        let mut lines = vec![format!(
            "kineto-export: {} → rank={rank}: {}",
            path.display(),
            counts.join(", ")
        )];
        for n in notes {
            lines.push(format!("kineto-export: note: {}: {n}", path.display()));
        }
        Ok(lines)
    }
}

/// The first path that `paths` holds twice.
fn given_twice(paths: &[PathBuf]) -> Option<&Path> {
    let mut seen = std::collections::HashSet::new();
    paths
        .iter()
        .map(PathBuf::as_path)
        .find(|p| !seen.insert(*p))
}

/// The trace's file name without `.json`/`.json.gz`, reduced to characters every file system and
/// Hive reader takes.
fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let cut = [".json.gz", ".json"]
        .iter()
        .find(|s| lower.ends_with(*s))
        .map_or(name.len(), |s| name.len() - s.len());
    let stem: String = name[..cut]
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // A leading dot or underscore hides the file from Spark and DuckDB's Hive readers.
    let stem = stem.trim_start_matches(['.', '_']);
    if stem.is_empty() {
        "trace".to_string()
    } else {
        stem.to_string()
    }
}

/// One line on stderr, control characters escaped; a failure to write it is ignored (there is nowhere
/// left to report it).
use tool_io::terminal::note;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_drop_the_extension_and_hidden_prefixes() {
        assert_eq!(
            file_stem(Path::new("/x/worker0_step_12.1694.pt.trace.json.gz")),
            "worker0_step_12.1694.pt.trace"
        );
        assert_eq!(file_stem(Path::new("a b.JSON")), "a_b");
        assert_eq!(file_stem(Path::new("_hidden.json")), "hidden");
        assert_eq!(file_stem(Path::new(".json")), "trace");
    }
}
