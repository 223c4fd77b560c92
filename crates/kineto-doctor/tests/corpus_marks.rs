//! The marks against the findings on real traces of the shared corpus: for every reported finding whose
//! marks are its time (`FindingId::marks_are_its_time`), Σ over its steps of its marks' durations equals
//! its time at stake, exactly; a step-level finding has one band per step, the step's window; marks lie
//! in or (between_steps) just before their step's window; no step outside a finding's steps has its
//! marks. A drift between a rule's total and its marks fails here.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use kineto_doctor::{FindingId, Mark, Thresholds, TraceInput, diagnose, marks};
use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use std::collections::BTreeSet;
use std::path::PathBuf;

#[path = "../../../tests/corpus/mod.rs"]
mod corpus;

/// A file or folder of the shared corpus (for tests ignored without it: `tests/corpus/build.rs`).
fn shared(rel: &str) -> PathBuf {
    corpus::corpus_file(rel)
}

/// Reads, analyses and budgets the traces of `rel` (a directory: its ranks) and hands them to `f` as
/// the doctor's inputs.
fn with_inputs<R>(rel: &str, f: impl FnOnce(&[TraceInput<'_>]) -> R) -> R {
    let p = shared(rel);
    let rules = Rules::builtin();
    let pattern = StepPattern::builtin();
    let opts = kineto_trace::Options::default();
    let parsed: Vec<kineto_trace::Parsed> = kineto_trace::expand_paths(&[p])
        .unwrap()
        .iter()
        .map(|f| kineto_trace::parse_file(f, &opts).unwrap())
        .collect();
    let analyses: Vec<Analysis> = parsed
        .iter()
        .map(|p| Analysis::at(p, &pattern, &rules).unwrap())
        .collect();
    let budgets: Vec<_> = parsed
        .iter()
        .zip(&analyses)
        .map(|(p, a)| a.budgets(&p.trace, &rules))
        .collect();
    let files: Vec<String> = parsed
        .iter()
        .map(|p| p.path.display().to_string())
        .collect();
    let inputs: Vec<TraceInput<'_>> = (0..parsed.len())
        .map(|i| TraceInput {
            file: &files[i],
            trace: &parsed[i].trace,
            analysis: &analyses[i],
            budgets: &budgets[i],
            rules: &rules,
            roofline: None,
        })
        .collect();
    f(&inputs)
}

/// Diagnoses the traces of `rel` together (a directory: its ranks) and checks every finding's marks;
/// returns the ids of the interval findings checked.
fn check(rel: &str) -> BTreeSet<FindingId> {
    with_inputs(rel, |inputs| check_marks(rel, inputs))
}

fn check_marks(rel: &str, inputs: &[TraceInput<'_>]) -> BTreeSet<FindingId> {
    let th = Thresholds::DEFAULT;
    let d = diagnose(inputs, &th);
    let mut checked = BTreeSet::new();
    for t in inputs {
        let per_step: Vec<Vec<Mark>> = (0..t.budgets.len())
            .map(|s| marks(t, s, &d.findings, &th))
            .collect();
        if !d.findings.iter().any(|f| f.file == t.file) {
            // Nothing reported (the vLLM graph replay): nothing marked.
            assert!(
                per_step.iter().all(Vec::is_empty),
                "{rel}: marks without a finding"
            );
        }
        for f in d.findings.iter().filter(|f| f.file == t.file) {
            let mut sum = 0i64;
            for (s, ms) in per_step.iter().enumerate() {
                let of: Vec<&Mark> = ms.iter().filter(|m| m.id == f.id).collect();
                if !f.steps.contains(&s) {
                    assert!(
                        of.is_empty(),
                        "{rel}: {:?} marks step {s}, not its own",
                        f.id
                    );
                    continue;
                }
                let w = t.budgets[s].window.unwrap();
                for m in &of {
                    assert!(m.hi_ns > m.lo_ns, "{rel}: an empty mark {m:?}");
                    if f.id == FindingId::BetweenSteps {
                        assert!(
                            m.hi_ns <= w.0,
                            "{rel}: between_steps {m:?} not before {w:?}"
                        );
                    } else {
                        assert!(
                            m.lo_ns >= w.0 && m.hi_ns <= w.1,
                            "{rel}: {m:?} outside step {s}'s window {w:?}"
                        );
                    }
                }
                if f.id.marks_are_its_time() {
                    sum += of.iter().map(|m| m.dur_ns()).sum::<i64>();
                } else {
                    assert_eq!(of.len(), 1, "{rel}: {:?} step {s}", f.id);
                    assert_eq!((of[0].lo_ns, of[0].hi_ns), w, "{rel}: {:?} step {s}", f.id);
                }
            }
            if f.id.marks_are_its_time() {
                assert_eq!(
                    sum, f.time_at_stake_ns,
                    "{rel}: {} {:?}: Σ marks vs time at stake",
                    f.file, f.id
                );
                checked.insert(f.id);
            }
        }
    }
    checked
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn marks_sum_to_the_time_at_stake_on_the_corpus() {
    let mut seen = BTreeSet::new();
    for rel in [
        "hta/nccl_parser_config/nccl_data.json.gz",
        "hta/negative_queue_length_values_check/rank0.json.gz",
        "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        "hta/trace_diff/test/test.json.gz",
        "param/dlrm_kineto",
        "serving/vllm_decode_full/graph_execution.json.gz",
    ] {
        let ids = check(rel);
        eprintln!("{rel}: {ids:?}");
        seen.extend(ids);
    }
    // The corpus exercises every interval rule but the ones named here as absent from it: a rule
    // that stops firing there, or starts, is noticed.
    let all: BTreeSet<FindingId> = FindingId::ALL
        .into_iter()
        .filter(|f| f.marks_are_its_time())
        .collect();
    eprintln!("interval findings checked: {seen:?}");
    assert_eq!(seen, all, "interval findings the corpus exercises");
}

/// Every trace the corpus checks read: the marks' traces, the serving trace and the other real ones.
const READ: [&str; 11] = [
    "hta/nccl_parser_config/nccl_data.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/trace_diff/test/test.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/df_index_resolver/df_index_resolver.json.gz",
    "kineto-tb-plugin/worker0.pt.trace.json.gz",
    "param/dlrm_kineto",
    "serving/vllm_decode_full/graph_execution.json.gz",
];

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn the_corpus_reads_like_with_like_with_no_artefact_ranked_and_fixes() {
    use kineto_doctor::{TrustId, facts, select};
    let artefact = [
        TrustId::WindowOpensOnWait,
        TrustId::SetupInWindow,
        TrustId::ColdFirstStep,
        TrustId::CutLastStep,
    ];
    let mut fixed = 0;
    for rel in READ {
        with_inputs(rel, |inputs| {
            let d = diagnose(inputs, &Thresholds::DEFAULT);
            for t in inputs {
                let steps = &t.analysis.steps.steps;
                let left_out: BTreeSet<usize> = d
                    .warnings
                    .iter()
                    .filter(|w| w.file == t.file && artefact.contains(&w.id))
                    .flat_map(|w| w.steps.iter().copied())
                    .collect();
                let facts = facts(t);
                for f in d.findings.iter().filter(|f| f.file == t.file) {
                    eprintln!(
                        "{rel}: {} {:?} fix {:?}",
                        f.id.as_str(),
                        f.steps,
                        f.fix.map(|x| x.change)
                    );
                    // No prefill or mixed step is judged unsteady or eager.
                    if matches!(f.id, FindingId::EagerSteps | FindingId::UnsteadySteps) {
                        for &s in &f.steps {
                            let kind = steps[s]
                                .phase
                                .as_deref()
                                .and_then(kineto_trace::step::phase_kind);
                            let mixed = steps[s]
                                .phase
                                .as_deref()
                                .is_some_and(|p| p.eq_ignore_ascii_case("mixed"));
                            assert!(
                                kind != Some(true) && !mixed,
                                "{rel}: {f:?} judges step {s} ({:?})",
                                steps[s].phase
                            );
                        }
                    }
                    // No artefact step is in a finding.
                    assert!(
                        f.steps.iter().all(|s| !left_out.contains(s)),
                        "{rel}: {f:?} holds an artefact step {left_out:?}"
                    );
                    // The fix is the catalogue's for this trace, and the rules a script's trace
                    // always has one for have it.
                    assert_eq!(f.fix, select(f.id, &facts), "{rel}: {f:?}");
                    let always =
                        matches!(f.id, FindingId::SyncBlockedIdle | FindingId::CopiesInStep);
                    assert!(!always || f.fix.is_some(), "{rel}: {f:?} without a fix");
                    fixed += usize::from(f.fix.is_some());
                }
            }
        });
    }
    assert!(fixed > 0, "no finding of the corpus got a fix");
}
