//! One trace taken through every layer: links, steps, kernel families, budgets.

use crate::budget::{StepBudget, budget};
use crate::correlate::Links;
use crate::family::{Classes, Rules};
use crate::model::{GpuOp, Trace};
use crate::step::{StepPattern, Steps, find_steps};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// The analysis of one trace. Holds indices into the trace, not copies of it.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// GPU op → launch → annotations.
    pub links: Links,
    /// The steps.
    pub steps: Steps,
    /// The family of each kernel.
    pub classes: Classes,
}

/// Kernels of one name that no rule matched, over the whole trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnmatchedName {
    /// The kernel name.
    pub name: String,
    /// How many.
    pub count: u64,
    /// Σ dur, ns.
    pub sum_ns: i64,
}

impl Analysis {
    /// Links, finds steps and classifies kernels.
    pub fn new(trace: &Trace, pattern: &StepPattern, rules: &Rules) -> Analysis {
        let links = Links::build(trace);
        let steps = find_steps(trace, &links, pattern);
        let classes = rules.classify_kernels(trace);
        Analysis {
            links,
            steps,
            classes,
        }
    }

    /// As [`Analysis::new`] for a trace read from a file, and when a graph-capture directory lies
    /// beside the file ([`crate::capture::beside`]) its captured sizes give the graph replays' tokens.
    /// A capture trace that cannot be read is an error naming it.
    pub fn at(
        parsed: &crate::Parsed,
        pattern: &StepPattern,
        rules: &Rules,
    ) -> crate::Result<Analysis> {
        let mut a = Analysis::new(&parsed.trace, pattern, rules);
        if let Some(dir) = crate::capture::beside(&parsed.path) {
            let c = crate::capture::GraphCaptures::read_dir(&dir)?;
            c.apply(&parsed.trace, &a.links, &mut a.steps);
        }
        Ok(a)
    }

    /// The budget of every step, in step order.
    pub fn budgets(&self, trace: &Trace, rules: &Rules) -> Vec<StepBudget> {
        self.steps
            .steps
            .iter()
            .map(|s| budget(trace, s, &self.classes, rules))
            .collect()
    }

    /// The step of each kernel (index into `steps.steps`), by kernel index.
    pub fn kernel_steps(&self, trace: &Trace) -> Vec<Option<u32>> {
        let mut out = vec![None; trace.kernels.len()];
        for s in &self.steps.steps {
            for &k in &s.kernels {
                out[k as usize] = Some(s.index as u32);
            }
        }
        out
    }

    /// Unmatched kernel names over the whole trace, most time first.
    pub fn unmatched_names(&self, trace: &Trace) -> Vec<UnmatchedName> {
        let mut by: FxHashMap<crate::model::Sym, (u64, i64)> = FxHashMap::default();
        for (i, k) in trace.kernels.iter().enumerate() {
            if self.classes.of(i).is_none() {
                let e = by.entry(k.name).or_default();
                e.0 += 1;
                e.1 = e.1.saturating_add(k.dur_ns);
            }
        }
        let mut v: Vec<UnmatchedName> = by
            .into_iter()
            .map(|(s, (count, sum_ns))| UnmatchedName {
                name: trace.name(s).to_string(),
                count,
                sum_ns,
            })
            .collect();
        v.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then_with(|| a.name.cmp(&b.name)));
        v
    }
}

/// One annotation name's CPU ranges and their GPU mirrors, over a whole trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnotationStats {
    /// The annotation's name.
    pub name: String,
    /// `user_annotation` ranges of this name (a range recorded twice with the same thread, start and
    /// duration counts once).
    pub count: u64,
    /// Σ their durations, ns (CPU time, nested ranges each counted whole).
    pub total_ns: i64,
    /// `gpu_user_annotation` ranges of the same name (the profiler's mirror of the range on a GPU
    /// stream).
    pub gpu_count: u64,
    /// Σ the mirrors' durations, ns.
    pub gpu_total_ns: i64,
}

impl AnnotationStats {
    /// Mean CPU duration, ns, rounded half up (`None` without CPU ranges).
    pub fn mean_ns(&self) -> Option<i64> {
        (self.count > 0).then(|| {
            let c = self.count as i128;
            ((self.total_ns as i128 * 2 + c) / (2 * c)) as i64
        })
    }
}

/// Every annotation name of a trace with its counts and times, most CPU time first (then name).
/// Names only mirrored on the GPU are listed too, with `count` 0.
pub fn annotation_stats(trace: &Trace) -> Vec<AnnotationStats> {
    use crate::model::Sym;
    let mut by: FxHashMap<Sym, (u64, i64, u64, i64)> = FxHashMap::default();
    let mut seen = rustc_hash::FxHashSet::default();
    for s in &trace.user_annotations {
        if seen.insert((s.name, s.track, s.ts_ns, s.dur_ns)) {
            let e = by.entry(s.name).or_default();
            e.0 += 1;
            e.1 = e.1.saturating_add(s.dur_ns);
        }
    }
    for s in &trace.gpu_user_annotations {
        let e = by.entry(s.name).or_default();
        e.2 += 1;
        e.3 = e.3.saturating_add(s.dur_ns);
    }
    let mut v: Vec<AnnotationStats> = by
        .into_iter()
        .map(
            |(s, (count, total_ns, gpu_count, gpu_total_ns))| AnnotationStats {
                name: trace.name(s).to_string(),
                count,
                total_ns,
                gpu_count,
                gpu_total_ns,
            },
        )
        .collect();
    v.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    v
}

/// What `top` groups kernels by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// The kernel's name.
    Name,
    /// Its family (`unmatched` when no rule matched).
    Family,
    /// Its family's bucket (`unmatched` when no rule matched).
    Bucket,
}

/// One group of kernels' durations: the row of a top-N table (HTA's kernel breakdown, `nsys stats`
/// `cuda_gpu_kern_sum`). MEASURED: kernel durations as the profiler recorded them.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelGroup {
    /// The name, family or bucket.
    pub key: String,
    /// How many kernels.
    pub count: u64,
    /// Σ dur, ns.
    pub total_ns: i64,
    /// Shortest, ns.
    pub min_ns: i64,
    /// Longest, ns.
    pub max_ns: i64,
    /// Mean, ns (Σ / count).
    pub mean_ns: f64,
    /// Median, ns: the middle duration, or the mean of the two middle ones.
    pub median_ns: f64,
    /// Sample standard deviation (n − 1 in the denominator), ns; 0 for a single kernel.
    pub stddev_ns: f64,
    /// `total` as a percentage of the Σ dur of all kernels considered.
    pub pct: f64,
    /// How the group's kernels got their family (rule, fallback word, unmatched), when they all got
    /// it the same way; `None` for a family or bucket reached both ways.
    pub matched: Option<crate::family::MatchKind>,
    /// The family of every kernel of the group (`unmatched` for kernels no rule matched); `None` when
    /// the group's kernels have different families (a bucket's group, or a name two rules split).
    pub family: Option<String>,
    /// The bucket of every kernel of the group (`unmatched` as for `family`); `None` when they differ.
    pub bucket: Option<String>,
}

/// Groups `kernels` (indices into `trace.kernels`) and returns the groups, most total time first
/// (then key).
pub fn kernel_groups(
    trace: &Trace,
    classes: &Classes,
    rules: &Rules,
    kernels: impl IntoIterator<Item = u32>,
    by: GroupBy,
) -> Vec<KernelGroup> {
    let key_of = |i: usize, k: &GpuOp| -> String {
        let fam = classes.of(i).map(|f| rules.family(f));
        match by {
            GroupBy::Name => trace.name(k.name).to_string(),
            GroupBy::Family => fam
                .map_or(crate::family::UNMATCHED, |f| f.name.as_str())
                .to_string(),
            GroupBy::Bucket => fam
                .map_or(crate::family::UNMATCHED, |f| f.bucket.as_str())
                .to_string(),
        }
    };
    // Durations, and for each of the match kind, the family and the bucket: the one every kernel so far
    // shares (`Some(Some(_))`), none yet (`None`), or more than one (`Some(None)`).
    type Same<T> = Option<Option<T>>;
    type Group<'r> = (
        Vec<i64>,
        Same<crate::family::MatchKind>,
        Same<Option<crate::family::FamilyId>>,
        Same<&'r str>,
    );
    fn same<T: PartialEq>(seen: Same<T>, v: T) -> Same<T> {
        match seen {
            None => Some(Some(v)),
            Some(Some(k)) if k == v => Some(Some(k)),
            Some(_) => Some(None),
        }
    }
    let bucket_of = |f: Option<crate::family::FamilyId>| -> &str {
        f.map_or(crate::family::UNMATCHED, |f| {
            rules.family(f).bucket.as_str()
        })
    };
    let mut by_key: std::collections::BTreeMap<String, Group> = Default::default();
    let mut all: i128 = 0;
    let mut rows = trace.kernels.reader();
    for i in kernels {
        let k = rows.row(i as usize);
        let d = k.dur_ns;
        all += i128::from(d);
        let kind = classes.label(i as usize).kind();
        let fam = classes.of(i as usize);
        let e = by_key.entry(key_of(i as usize, &k)).or_default();
        e.0.push(d);
        e.1 = same(e.1.take(), kind);
        e.2 = same(e.2.take(), fam);
        // Families that differ may share a bucket: the bucket is followed on its own.
        e.3 = same(e.3.take(), bucket_of(fam));
    }
    let mut out: Vec<KernelGroup> = by_key
        .into_iter()
        .map(|(key, (mut d, matched, family, bucket))| {
            let median = median_f64(&mut d); // sorts `d`: its ends are the min and max below
            let n = d.len();
            let total: i128 = d.iter().map(|&x| i128::from(x)).sum();
            let mean = total as f64 / n as f64;
            // Σ (x − mean)² from exact integer sums: n·Σx² − (Σx)², over n(n − 1).
            let stddev = if n > 1 {
                let sq: i128 = d.iter().map(|&x| i128::from(x) * i128::from(x)).sum();
                let num = (n as i128) * sq - total * total;
                (num as f64 / (n as f64 * (n as f64 - 1.0))).max(0.0).sqrt()
            } else {
                0.0
            };
            KernelGroup {
                key,
                count: n as u64,
                total_ns: i64::try_from(total).unwrap_or(i64::MAX),
                min_ns: d[0],
                max_ns: d[n - 1],
                mean_ns: mean,
                median_ns: median,
                stddev_ns: stddev,
                pct: if all > 0 {
                    100.0 * total as f64 / all as f64
                } else {
                    0.0
                },
                matched: matched.flatten(),
                family: family.flatten().map(|f| {
                    f.map_or(crate::family::UNMATCHED, |f| rules.family(f).name.as_str())
                        .to_owned()
                }),
                bucket: bucket.flatten().map(str::to_owned),
            }
        })
        .collect();
    out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.key.cmp(&b.key)));
    out
}

/// Kernel groups per step (index into the analysis's steps), or of the whole trace (`None`).
pub type TopTables = Vec<(Option<usize>, Vec<KernelGroup>)>;

/// The groups of `kineto top`: over every kernel of the trace (one table, step `None`), or with
/// `per_step` one table per step over that step's kernels (step `Some(index)`), in step order.
pub fn top_tables(
    trace: &Trace,
    analysis: &Analysis,
    rules: &Rules,
    by: GroupBy,
    per_step: bool,
) -> TopTables {
    let classes = &analysis.classes;
    if per_step {
        analysis
            .steps
            .steps
            .iter()
            .map(|s| {
                let g = kernel_groups(trace, classes, rules, s.kernels.iter().copied(), by);
                (Some(s.index), g)
            })
            .collect()
    } else {
        let all = 0..trace.kernels.len() as u32;
        vec![(None, kernel_groups(trace, classes, rules, all, by))]
    }
}

/// The two middle values of `v`, sorting it: the middle one twice for an odd count; `None` when empty.
/// The one home of the median rule of integer series: the median is the mean of these two (numpy's and
/// Python's `statistics.median`), each reader rounding it its way — exact as f64 here ([`median_f64`]),
/// rounded down to the ns by the doctor (`kineto_doctor`'s `median_ns`).
pub fn middle_pair(v: &mut [i64]) -> Option<(i64, i64)> {
    v.sort_unstable();
    let n = v.len();
    (n > 0).then(|| (v[(n - 1) / 2], v[n / 2]))
}

/// The median of `v` as f64, sorting it: the middle value, or the mean of the two middle ones, exact
/// (their sum is taken in i128, and halving an f64 is exact); 0 when empty.
pub fn median_f64(v: &mut [i64]) -> f64 {
    middle_pair(v).map_or(0.0, |(a, b)| (i128::from(a) + i128::from(b)) as f64 / 2.0)
}

/// One quantity of one step across ranks: its spread and which ranks sit at the ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// Smallest value, ns.
    pub min_ns: i64,
    /// Median, ns (the mean of the two middle values for an even number of ranks).
    pub median_ns: f64,
    /// Largest value, ns.
    pub max_ns: i64,
    /// The rank with the smallest value (the first such, in the order given).
    pub min_rank: String,
    /// The rank with the largest value (the first such): for the span, the straggler.
    pub max_rank: String,
}

impl Spread {
    fn of(values: &[(String, i64)]) -> Option<Spread> {
        let (min_rank, min_ns) = values.iter().min_by_key(|(_, v)| *v)?.clone();
        let (max_rank, max_ns) = values.iter().rev().max_by_key(|(_, v)| *v)?.clone();
        let mut v: Vec<i64> = values.iter().map(|(_, v)| *v).collect();
        let median_ns = median_f64(&mut v);
        Some(Spread {
            min_ns,
            median_ns,
            max_ns,
            min_rank,
            max_rank,
        })
    }

    /// How far the largest value is above the median, ns.
    pub fn max_over_median_ns(&self) -> f64 {
        self.max_ns as f64 - self.median_ns
    }
}

/// One step seen across the ranks of a run: the straggler view.
#[derive(Debug, Clone, PartialEq)]
pub struct StepAcrossRanks {
    /// What pairs the steps of different ranks: the marker's step number (`ProfilerStep#N`'s N)
    /// when it has one, else its position among the rank's steps.
    pub key: String,
    /// The step's index (the `step` column of `kineto steps`) on the first rank that has it: the number
    /// every listing calls it by.
    pub index: usize,
    /// The step's name on the first rank that has it.
    pub name: String,
    /// Ranks that have this step.
    pub ranks: usize,
    /// The step's GPU span.
    pub span: Spread,
    /// Its idle time.
    pub idle: Spread,
    /// Exclusive time per bucket (a rank without the bucket counts 0).
    pub buckets: std::collections::BTreeMap<String, Spread>,
}

/// One rank's steps, as [`compare_ranks`] takes them.
#[derive(Debug, Clone)]
pub struct RankSteps {
    /// The rank's label (`distributedInfo.rank`, else the file).
    pub rank: String,
    /// Its steps, in step order.
    pub steps: Vec<RankStep>,
}

/// What [`compare_ranks`] reads of one rank's step: a few numbers, not the whole [`StepBudget`]. A
/// budget keeps the step's idle gaps and families (hundreds of KB for a step of thousands of kernels),
/// and `kineto ranks` holds one of these per step of every rank until all ranks are read.
#[derive(Debug, Clone, PartialEq)]
pub struct RankStep {
    /// The step's name.
    pub name: String,
    /// Its step number (`ProfilerStep#N`'s N), if it has one.
    pub number: Option<u64>,
    /// [`StepBudget::span_ns`].
    pub span_ns: i64,
    /// [`StepBudget::idle_ns`].
    pub idle_ns: i64,
    /// Each bucket's [`BucketTime::exclusive_ns`](crate::budget::BucketTime::exclusive_ns).
    pub exclusive_ns: BTreeMap<String, i64>,
}

impl RankStep {
    /// The numbers of `budget` that the rank comparison reads.
    pub fn of(name: String, number: Option<u64>, budget: &StepBudget) -> RankStep {
        RankStep {
            name,
            number,
            span_ns: budget.span_ns,
            idle_ns: budget.idle_ns,
            exclusive_ns: budget
                .buckets
                .iter()
                .map(|(n, t)| (n.clone(), t.exclusive_ns))
                .collect(),
        }
    }
}

/// What pairs a step across ranks: the marker's step number when it has one, else `#` and the step's
/// position among its rank's steps ([`StepAcrossRanks::key`]).
pub fn step_key(number: Option<u64>, position: usize) -> String {
    number.map_or_else(|| format!("#{position}"), |n| n.to_string())
}

/// Lines the ranks' steps up (by step number, else by position) and gives each step's spread
/// across ranks, in the order steps first appear.
pub fn compare_ranks(ranks: &[RankSteps]) -> Vec<StepAcrossRanks> {
    let mut order: Vec<String> = Vec::new();
    // Step key → (index and name on the first rank, each rank's budget of it).
    type Seen<'b> = (usize, String, Vec<(&'b str, &'b RankStep)>);
    let mut by_key: FxHashMap<String, Seen<'_>> = FxHashMap::default();
    for r in ranks {
        for (pos, step) in r.steps.iter().enumerate() {
            let key = step_key(step.number, pos);
            let e = by_key.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                (pos, step.name.clone(), Vec::new())
            });
            e.2.push((r.rank.as_str(), step));
        }
    }
    let mut out = Vec::new();
    for key in order {
        let Some((index, name, v)) = by_key.remove(&key) else {
            continue;
        };
        let pick = |f: &dyn Fn(&RankStep) -> i64| -> Vec<(String, i64)> {
            v.iter().map(|(r, b)| ((*r).to_string(), f(b))).collect()
        };
        let (Some(span), Some(idle)) = (
            Spread::of(&pick(&|b| b.span_ns)),
            Spread::of(&pick(&|b| b.idle_ns)),
        ) else {
            continue;
        };
        let names: std::collections::BTreeSet<&String> =
            v.iter().flat_map(|(_, b)| b.exclusive_ns.keys()).collect();
        let buckets = names
            .into_iter()
            .filter_map(|n| {
                let vals = pick(&|b| b.exclusive_ns.get(n).copied().unwrap_or(0));
                Spread::of(&vals).map(|s| (n.clone(), s))
            })
            .collect();
        out.push(StepAcrossRanks {
            key,
            index,
            name,
            ranks: v.len(),
            span,
            idle,
            buckets,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BucketTime;

    fn budget(span_ns: i64, idle_ns: i64, gemm_ns: Option<i64>) -> StepBudget {
        let mut b = StepBudget {
            span_ns,
            idle_ns,
            ..StepBudget::default()
        };
        if let Some(g) = gemm_ns {
            b.buckets.insert(
                "gemm".to_string(),
                BucketTime {
                    exclusive_ns: g,
                    inclusive_ns: g,
                },
            );
        }
        b
    }

    #[test]
    fn ranks_line_up_by_step_number_else_position() {
        let ranks = [
            RankSteps {
                rank: "0".into(),
                steps: vec![
                    RankStep::of("ProfilerStep#5".into(), Some(5), &budget(100, 10, Some(90))),
                    RankStep::of("ProfilerStep#6".into(), Some(6), &budget(200, 0, None)),
                ],
            },
            RankSteps {
                rank: "1".into(),
                // Step 6 only: step 5 is missing on this rank.
                steps: vec![RankStep::of(
                    "ProfilerStep#6".into(),
                    Some(6),
                    &budget(260, 60, Some(200)),
                )],
            },
            RankSteps {
                rank: "2".into(),
                steps: vec![RankStep::of(
                    "ProfilerStep#6".into(),
                    Some(6),
                    &budget(230, 30, Some(200)),
                )],
            },
        ];
        let s = compare_ranks(&ranks);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].key.as_str(), s[0].ranks), ("5", 1));
        let six = &s[1];
        assert_eq!((six.key.as_str(), six.ranks), ("6", 3));
        // Spans 200, 260, 230: median 230, the straggler rank 1 is 30 ns over it.
        assert_eq!(
            (six.span.min_ns, six.span.median_ns, six.span.max_ns),
            (200, 230.0, 260)
        );
        assert_eq!(
            (six.span.min_rank.as_str(), six.span.max_rank.as_str()),
            ("0", "1")
        );
        assert_eq!(six.span.max_over_median_ns(), 30.0);
        // Rank 0 has no gemm in step 6: it counts 0. Values 0, 200, 200: the first max is rank 1.
        let g = &six.buckets["gemm"];
        assert_eq!((g.min_ns, g.median_ns, g.max_ns), (0, 200.0, 200));
        assert_eq!((g.min_rank.as_str(), g.max_rank.as_str()), ("0", "1"));

        // Without step numbers, steps pair by position.
        let pos = [
            RankSteps {
                rank: "a".into(),
                steps: vec![RankStep::of("x".into(), None, &budget(10, 0, None))],
            },
            RankSteps {
                rank: "b".into(),
                steps: vec![RankStep::of("y".into(), None, &budget(20, 0, None))],
            },
        ];
        let s = compare_ranks(&pos);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].key.as_str(), s[0].name.as_str(), s[0].ranks),
            ("#0", "x", 2)
        );
        assert_eq!(s[0].span.median_ns, 15.0);
    }

    #[test]
    fn kernel_group_statistics_by_hand() {
        // Durations 1, 2, 3, 10 ns: mean 4, median (2 + 3) / 2 = 2.5, sample variance
        // ((−3)² + (−2)² + (−1)² + 6²) / 3 = 50 / 3.
        let text = r#"{"traceEvents":[
            {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":0.001,"dur":0.001},
            {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":0.002},
            {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":2,"dur":0.003},
            {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":3,"dur":0.010}]}"#;
        let (t, _) = crate::parse_reader(
            std::path::Path::new("t.json"),
            &mut text.as_bytes(),
            false,
            false,
        )
        .unwrap();
        let rules = Rules::builtin();
        let classes = rules.classify_kernels(&t);
        let g = kernel_groups(&t, &classes, &rules, 0..4, GroupBy::Name);
        assert_eq!(g.len(), 1);
        let g = &g[0];
        assert_eq!((g.count, g.total_ns, g.min_ns, g.max_ns), (4, 16, 1, 10));
        assert_eq!((g.mean_ns, g.median_ns), (4.0, 2.5));
        assert!((g.stddev_ns - (50.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(g.pct, 100.0);
    }

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        // 9, 1, 5 sorted: 1, 5, 9 → the middle one, twice.
        assert_eq!(middle_pair(&mut [9, 1, 5]), Some((5, 5)));
        // 40, 10, 30, 20 sorted: 10, 20, 30, 40 → 20 and 30, median (20 + 30) / 2 = 25.
        assert_eq!(middle_pair(&mut [40, 10, 30, 20]), Some((20, 30)));
        assert_eq!(median_f64(&mut [40, 10, 30, 20]), 25.0);
        // 3, 4 → 3.5: the half is kept; 2^63 − 1 twice → its sum overflows i64, not the i128 median.
        assert_eq!(median_f64(&mut [4, 3]), 3.5);
        assert_eq!(median_f64(&mut [i64::MAX, i64::MAX]), i64::MAX as f64);
        assert_eq!(middle_pair(&mut []), None);
        assert_eq!(median_f64(&mut []), 0.0);
    }
}
