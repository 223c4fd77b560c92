//! Benchmark result files compared benchmark by benchmark: pytest-benchmark's JSON (`--benchmark-json`,
//! with `benchmarks[i].provenance` from our plugin, `python/provenance`) → one [`VerdictRow`] per
//! benchmark (`metric: "benchmark"`, `name`: its `fullname`, `phase`: its `group`), judged from its saved
//! per-round times (`stats.data`, written when pytest-benchmark is told to save its data) when present, else from the stated `rounds`,
//! `mean` and `stddev` ([`crate::verdict::judge_summary`]: the same interval); and a criterion harness's
//! results, each benchmark's `new/sample.json` beside the record `provenance::bench` writes
//! ([`criterion_benchmark`]), judged from its per-sample times. What `provenance diff` prints for two such
//! files or directories.

use serde_json::Value;

use crate::verdict::{Judged, Method, Summary, judge, judge_summary};
use crate::verdict_rows::{Comparability, UNPHASED, VerdictRow};

/// One benchmark of a result file.
#[derive(Debug, Clone, PartialEq)]
pub struct Benchmark {
    /// Its `fullname` (the test's node id), else its `name`.
    pub name: String,
    /// Its `group`, when it has one.
    pub group: Option<String>,
    /// The per-round times, when kept: pytest-benchmark's saved `stats.data` (s), or each criterion
    /// sample's time per iteration (ns). Only their ratio between runs is judged.
    pub rounds: Option<Vec<f64>>,
    /// The stated rounds, mean and variance (from `stddev`).
    pub stated: Summary,
    /// Its provenance record (`provenance`), when our plugin wrote one.
    pub record: Option<Value>,
}

/// Whether `v` is a pytest-benchmark result: an object with a `benchmarks` array and pytest-benchmark's
/// `machine_info` or `version`.
pub fn is_pytest_benchmark(v: &Value) -> bool {
    v.get("benchmarks").is_some_and(Value::is_array)
        && (v.get("machine_info").is_some() || v.get("version").is_some())
}

/// The benchmarks of a pytest-benchmark result; an error names the field that cannot be read
/// (`benchmarks[2].stats.mean is a string, not a number`).
pub fn benchmarks(v: &Value) -> Result<Vec<Benchmark>, String> {
    let list = v
        .get("benchmarks")
        .and_then(Value::as_array)
        .ok_or("no `benchmarks` array")?;
    list.iter()
        .enumerate()
        .map(|(i, b)| benchmark(b).map_err(|e| format!("benchmarks[{i}].{e}")))
        .collect()
}

fn benchmark(b: &Value) -> Result<Benchmark, String> {
    let name = ["fullname", "name"]
        .iter()
        .find_map(|k| b.get(*k).and_then(Value::as_str))
        .ok_or("fullname: absent (nor a name)")?
        .to_owned();
    let stats = b.get("stats").ok_or("stats: absent")?;
    let number = |k: &str| -> Result<f64, String> {
        stats
            .get(k)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("stats.{k}: absent or not a number"))
    };
    let rounds = number("rounds")?;
    if !(rounds >= 1.0 && rounds.fract() == 0.0) {
        return Err(format!("stats.rounds: {rounds} is not a count of rounds"));
    }
    let sd = number("stddev")?;
    let data = match stats.get("data") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .enumerate()
                .map(|(j, x)| {
                    x.as_f64()
                        .ok_or_else(|| format!("stats.data[{j}]: not a number"))
                })
                .collect::<Result<Vec<f64>, String>>()?,
        ),
        Some(_) => return Err("stats.data: not an array".to_owned()),
    };
    Ok(Benchmark {
        name,
        group: b.get("group").and_then(Value::as_str).map(str::to_owned),
        rounds: data,
        stated: Summary {
            n: rounds as usize,
            mean: number("mean")?,
            var: sd * sd,
        },
        record: b.get("provenance").filter(|r| r.is_object()).cloned(),
    })
}

/// One criterion benchmark, from the two files criterion keeps in the benchmark's directory: `id`, its
/// `new/benchmark.json` (`full_id`: `sum_1000`, `group/function/param`; `group_id` is the phase when the
/// benchmark is one of a group), and `sample`, its `new/sample.json`: sample `i` ran `iters[i]` iterations
/// in `times[i]` ns. The rounds are each sample's time per iteration, `times[i] / iters[i]` ns — the
/// per-sample means criterion's own comparison with its saved baseline tests. `record`: the provenance
/// record beside them (`provenance::bench::record_benchmark`), when there is one. An error names the file
/// and the field (`new/sample.json: iters[3]: 0 is not a count of iterations`).
pub fn criterion_benchmark(
    id: &Value,
    sample: &Value,
    record: Option<Value>,
) -> Result<Benchmark, String> {
    let text = |k: &str| id.get(k).and_then(Value::as_str);
    let name = text("full_id")
        .ok_or("new/benchmark.json: full_id: absent or not a string")?
        .to_owned();
    let in_group = ["function_id", "value_str"]
        .iter()
        .any(|k| id.get(*k).is_some_and(|v| !v.is_null()));
    let numbers = |k: &str| -> Result<Vec<f64>, String> {
        let list = sample
            .get(k)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("new/sample.json: {k}: absent or not an array"))?;
        list.iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .ok_or_else(|| format!("new/sample.json: {k}[{i}]: not a number"))
            })
            .collect()
    };
    let (iters, times) = (numbers("iters")?, numbers("times")?);
    if iters.len() != times.len() || iters.is_empty() {
        return Err(format!(
            "new/sample.json: {} iters against {} times: one count of iterations per sample's time",
            iters.len(),
            times.len()
        ));
    }
    let mut rounds = Vec::with_capacity(iters.len());
    for (i, (n, t)) in iters.iter().zip(&times).enumerate() {
        if !(n.is_finite() && *n > 0.0) {
            return Err(format!(
                "new/sample.json: iters[{i}]: {n} is not a count of iterations"
            ));
        }
        if !(t.is_finite() && *t >= 0.0) {
            return Err(format!("new/sample.json: times[{i}]: {t} is not a time"));
        }
        rounds.push(t / n);
    }
    let stated = Summary::of(&rounds).ok_or("new/sample.json: no samples")?;
    Ok(Benchmark {
        name,
        group: in_group
            .then(|| text("group_id").map(str::to_owned))
            .flatten(),
        rounds: Some(rounds),
        stated,
        record,
    })
}

/// One benchmark in both files: from the rounds when both kept them, else from the stated stats.
fn judged(old: &Benchmark, new: &Benchmark, method: Method) -> Judged {
    match (&old.rounds, &new.rounds) {
        (Some(o), Some(n)) => judge(o, n, method),
        _ => {
            let mut j = judge_summary(Some(old.stated), Some(new.stated), method);
            j.reasons.push(
                "from the stated rounds, mean and stddev (no per-round data saved: \
                 pytest-benchmark keeps it when told to save its data)"
                    .to_owned(),
            );
            j
        }
    }
}

/// Two result files' benchmarks, paired by name: a verdict row each (in the new file's order), each marked
/// with `comparable(old record, new record)`; names in one file only, listed.
pub fn bench_verdicts(
    old: &[Benchmark],
    new: &[Benchmark],
    method: Method,
    comparable: impl Fn(Option<&Value>, Option<&Value>) -> Comparability,
) -> (Vec<VerdictRow>, Vec<String>, Vec<String>) {
    let mut rows = Vec::new();
    let mut only_in_new = Vec::new();
    for n in new {
        let Some(o) = old.iter().find(|o| o.name == n.name) else {
            only_in_new.push(n.name.clone());
            continue;
        };
        let mut row = VerdictRow::new(
            "benchmark",
            Some(n.name.clone()),
            "all".to_owned(),
            n.group.clone().unwrap_or_else(|| UNPHASED.to_owned()),
            judged(o, n, method),
        );
        comparable(o.record.as_ref(), n.record.as_ref()).apply(std::slice::from_mut(&mut row));
        rows.push(row);
    }
    let only_in_old = old
        .iter()
        .filter(|o| !new.iter().any(|n| n.name == o.name))
        .map(|o| o.name.clone())
        .collect();
    (rows, only_in_old, only_in_new)
}
