//! Steps from a serving engine's own markers (SGLang-style `step[DECODE bs=32 reqs=4]`), on a small
//! synthetic trace (`testdata/synthetic/sglang_steps.json`) whose every expected value is worked out
//! by hand in the comments below.
//!
//! The trace: process 10 marks three steps on thread 10 — S0 [100, 200) µs, S1 [200, 300), S2
//! [300, 350) — also recorded once as a cpu_op (same name, thread, times) and mirrored once as a
//! gpu_user_annotation. Launches (µs) and their GPU work:
//!   90  thread 10  cudaLaunchKernel  → gemm   stream 8 [900, 910)     before every step
//!   120 thread 10  cudaLaunchKernel  → gemm   stream 7 [1000, 1100)   S0
//!   130 thread 11  cudaLaunchKernel  → nccl   stream 8 [1050, 1150)   S0 (another thread, same process)
//!   150 thread 10  cudaGraphLaunch   → fill   stream 7 [1100, 1120)   S0, three kernels of one replay
//!                                    → my_custom_kernel [1120, 1150)  (no rule matches it)
//!                                    → add    stream 7 [1200, 1210)
//!   160 process 20 cudaLaunchKernel  → gemm   stream 9 [1060, 1070)   another process: no step
//!   210 thread 10  cudaLaunchKernel  → gemm   stream 7 [1300, 1350)   S1
//!   220 thread 10  cudaLaunchKernel  → add    stream 7 [1340.001, 1360.001)  S1, starts before the gemm ends
//!   230 thread 10  cudaMemcpyAsync   → copy   stream 7 [1400, 1410)   S1
//!   240 thread 10  cudaLaunchKernel  → nothing
//!   250 thread 10  cudaStreamSynchronize (not a launch)
//!   (none)                           → orphan_kernel stream 8 [1500, 1505), correlation 99

// Helpers outside `#[test]` functions panic on purpose too: a failed parse is a failed test.
#![allow(clippy::unwrap_used)]

use kineto_trace::analysis::Analysis;
use kineto_trace::budget::{BucketTime, FamilyTime};
use kineto_trace::family::Rules;
use kineto_trace::step::{PhaseTokens, StepPattern, StepTokens};
use kineto_trace::{Options, parse_file};
use std::path::{Path, PathBuf};

const PATTERN: &str = r"step\[(?P<phase>[A-Z]+) bs=(?P<rows>\d+) reqs=(?P<requests>\d+)\]";

fn trace_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/synthetic/sglang_steps.json")
}

const US: i64 = 1000;

#[test]
fn steps_fields_and_bounds() {
    let p = parse_file(&trace_path(), &Options::default()).unwrap();
    let t = &p.trace;
    let a = Analysis::new(t, &StepPattern::new(PATTERN).unwrap(), &Rules::builtin());
    let s = &a.steps.steps;
    assert_eq!(
        s.len(),
        3,
        "the cpu_op copy and the GPU mirror are not extra steps"
    );

    assert_eq!(s[0].name, "step[DECODE bs=32 reqs=4]");
    assert_eq!(
        (s[0].phase.as_deref(), s[0].rows, s[0].requests, s[0].number),
        (Some("DECODE"), Some(32), Some(4), None)
    );
    assert_eq!(
        (s[1].phase.as_deref(), s[1].rows, s[1].requests),
        (Some("PREFILL"), Some(2048), Some(2))
    );
    assert_eq!((s[0].cpu_lo_ns, s[0].cpu_hi_ns), (100 * US, 200 * US));

    // S0: gemm, nccl (thread 11) and the three graph kernels. lo = 1000, hi = 1210.
    assert_eq!(s[0].kernels.len(), 5);
    assert_eq!((s[0].lo_ns, s[0].hi_ns), (Some(1000 * US), Some(1210 * US)));
    // Σ = 100 + 100 + 20 + 30 + 10; union = [1000, 1150) ∪ [1200, 1210).
    assert_eq!(s[0].kernel_sum_ns, 260 * US);
    assert_eq!(s[0].kernel_union_ns, 160 * US);
    // Period: S1's lo (1300) − 1000.
    assert_eq!(s[0].period_ns, Some(300 * US));

    // S1: gemm [1300, 1350) and add [1340.001, 1360.001); one copy; one same-stream overlap.
    assert_eq!(s[1].kernels.len(), 2);
    assert_eq!(
        (s[1].lo_ns, s[1].hi_ns),
        (Some(1300 * US), Some(1360 * US + 1))
    );
    assert_eq!(s[1].kernel_sum_ns, 70 * US);
    assert_eq!(s[1].kernel_union_ns, 60 * US + 1);
    assert_eq!(s[1].memcpys.len(), 1);
    assert_eq!(s[1].same_stream_overlaps, 1);
    assert_eq!(s[1].period_ns, None, "S2 has no kernels");

    // S2: nothing launched inside.
    assert!(s[2].kernels.is_empty());
    assert_eq!((s[2].lo_ns, s[2].hi_ns, s[2].period_ns), (None, None, None));

    // Outside: the early gemm and the other process's; unlinked: the orphan.
    assert_eq!(a.steps.kernels_outside, 2);
    assert_eq!(a.steps.kernels_unlinked, 1);
    assert_eq!(a.steps.same_stream_overlaps, 1);
}

#[test]
fn links_and_annotations() {
    let p = parse_file(&trace_path(), &Options::default()).unwrap();
    let t = &p.trace;
    let a = Analysis::new(t, &StepPattern::new(PATTERN).unwrap(), &Rules::builtin());
    let r = &a.links.report;
    assert_eq!((r.graph_launches, r.graph_kernels), (1, 3));
    assert_eq!(r.kernels_without_launch.count, 1);
    assert_eq!(r.kernels_without_launch.sum_ns, 5 * US);
    assert_eq!(
        r.kernels_without_launch.examples,
        [("orphan_kernel".to_string(), 1)]
    );
    assert_eq!(
        r.launches_without_gpu_op.iter().collect::<Vec<_>>(),
        [(&"cudaLaunchKernel".to_string(), &1)],
        "the sync is not a launch"
    );
    // Annotations around each launch, innermost first, on its own thread.
    let names = |kernel: usize| -> Vec<&str> {
        let l = a.links.kernel_launch[kernel].unwrap() as usize;
        a.links.annotations(t, l).map(|s| t.name(s.name)).collect()
    };
    let by_name = |n: &str, ts_us: i64| {
        t.kernels
            .iter()
            .position(|k| t.name(k.name) == n && k.ts_ns == ts_us * US)
            .unwrap()
    };
    let gemm = by_name("volta_sgemm_128x64_nn", 1000);
    assert_eq!(names(gemm), ["forward", "step[DECODE bs=32 reqs=4]"]);
    // The graph launch at 150 is at the end of "forward" [110, 150): outside it (half-open).
    let fill = t.kernels.iter().position(|k| k.ts_ns == 1100 * US).unwrap();
    assert_eq!(names(fill), ["step[DECODE bs=32 reqs=4]"]);
    // Thread 11 has no annotations, though its launch is in S0.
    let nccl = t.kernels.iter().position(|k| k.ts_ns == 1050 * US).unwrap();
    assert!(names(nccl).is_empty());
    // cpu_ops: the step marker recorded as an op.
    let l = a.links.kernel_launch[gemm].unwrap() as usize;
    let ops: Vec<&str> = a.links.cpu_ops(t, l).map(|s| t.name(s.name)).collect();
    assert_eq!(ops, ["step[DECODE bs=32 reqs=4]"]);
}

#[test]
fn budgets_split_exactly() {
    let p = parse_file(&trace_path(), &Options::default()).unwrap();
    let t = &p.trace;
    let rules = Rules::builtin();
    let a = Analysis::new(t, &StepPattern::new(PATTERN).unwrap(), &rules);
    let b = a.budgets(t, &rules);
    let bt = |e: i64, i: i64| BucketTime {
        exclusive_ns: e,
        inclusive_ns: i,
    };
    // S0 over [1000, 1210): [1000,1050) gemm; [1050,1100) gemm+comm 25/25; [1100,1120) comm+memory
    // 10/10; [1120,1150) comm+unmatched 15/15; [1150,1200) idle; [1200,1210) elementwise.
    assert_eq!(b[0].span_ns, 210 * US);
    assert_eq!(b[0].idle_ns, 50 * US);
    assert_eq!(b[0].gaps, [(1150 * US, 1200 * US)]);
    let want: Vec<(&str, BucketTime)> = vec![
        ("comm", bt(50 * US, 100 * US)),
        ("elementwise", bt(10 * US, 10 * US)),
        ("gemm", bt(75 * US, 100 * US)),
        ("memory", bt(10 * US, 20 * US)),
        ("unmatched", bt(15 * US, 30 * US)),
    ];
    let got: Vec<(&str, BucketTime)> = b[0].buckets.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, want);
    let ft = |count, sum_ns, union_ns| FamilyTime {
        count,
        sum_ns,
        union_ns,
    };
    let fams: Vec<(&str, FamilyTime)> = b[0]
        .families
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        fams,
        [
            ("elementwise", ft(1, 10 * US, 10 * US)),
            ("fill", ft(1, 20 * US, 20 * US)),
            ("gemm_cublas", ft(1, 100 * US, 100 * US)),
            ("nccl", ft(1, 100 * US, 100 * US)),
        ]
    );
    assert_eq!(b[0].unmatched, ft(1, 30 * US, 30 * US));

    // S1's GPU work runs over [1300, 1410): its kernels to 1360.001, then its copy [1400, 1410).
    // [1300, 1360.001): the shared 9999 ns split 4999/4999 with the spare ns going to
    // "elementwise" (first in bucket order); gemm 40001 + 4999, elementwise 5000 + 10001.
    // [1360.001, 1400) idle: 39.999 µs; [1400, 1410) memcpy: 10 µs.
    assert_eq!(b[1].span_ns, 110 * US);
    assert_eq!(b[1].window, Some((1300 * US, 1410 * US)));
    assert_eq!(b[1].idle_ns, 40 * US - 1);
    assert_eq!(b[1].gaps, [(1360 * US + 1, 1400 * US)]);
    assert_eq!(b[1].buckets["memcpy"], bt(10 * US, 10 * US));
    assert_eq!(b[1].buckets["gemm"], bt(45_000, 50 * US));
    assert_eq!(b[1].buckets["elementwise"], bt(15_001, 20 * US));
    assert_eq!(b[1].same_stream_overlaps, 1);

    // S2: nothing.
    assert_eq!(b[2].span_ns, 0);
    assert!(b[2].buckets.is_empty() && b[2].families.is_empty());

    // The identity, every step.
    for x in &b {
        let excl: i64 = x.buckets.values().map(|v| v.exclusive_ns).sum();
        assert_eq!(excl + x.idle_ns, x.span_ns);
    }
}

#[test]
fn profiler_steps_are_not_found_in_this_trace() {
    let p = parse_file(&trace_path(), &Options::default()).unwrap();
    let a = Analysis::new(&p.trace, &StepPattern::default(), &Rules::builtin());
    assert!(a.steps.steps.is_empty());
    // Without steps every linked kernel is outside.
    assert_eq!(a.steps.kernels_outside, 9);
}

#[test]
fn a_group_that_is_not_an_integer_is_reported() {
    let p = parse_file(&trace_path(), &Options::default()).unwrap();
    let pat = StepPattern::new(r"step\[(?P<rows>[A-Z]+) bs=\d+ reqs=\d+\]").unwrap();
    let a = Analysis::new(&p.trace, &pat, &Rules::builtin());
    assert_eq!(a.steps.steps.len(), 3);
    assert!(a.steps.steps.iter().all(|s| s.rows.is_none()));
    assert_eq!(a.steps.warnings.len(), 3);
    assert!(
        a.steps.warnings[0].contains("group `rows` = `DECODE` is not an integer"),
        "{:?}",
        a.steps.warnings
    );
}

/// A bucket whose kernels all have zero duration still has an entry (of zeros) in the step's
/// buckets, next to its family: `families` and `buckets` never disagree about what ran.
///
/// Step 1 [10, 20) µs launches one NCCL kernel of zero duration at 100 µs; step 2 [20, 30) launches
/// a gemm [200, 210) and a zero-duration NCCL kernel at 205.
#[test]
fn a_bucket_of_zero_duration_kernels_is_listed() {
    let json = r#"{"schemaVersion": 1, "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 10, "dur": 10},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 1, "args": {"correlation": 1}},
      {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 0, "tid": 7, "ts": 100, "dur": 0, "args": {"device": 0, "stream": 7, "correlation": 1}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 22, "dur": 1, "args": {"correlation": 2}},
      {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 200, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 2}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 23, "dur": 1, "args": {"correlation": 3}},
      {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 0, "tid": 8, "ts": 205, "dur": 0, "args": {"device": 0, "stream": 8, "correlation": 3}}
    ]}"#;
    let (t, _) =
        kineto_trace::parse_reader(Path::new("zero.json"), &mut json.as_bytes(), false, false)
            .unwrap();
    let rules = Rules::builtin();
    let a = Analysis::new(&t, &StepPattern::default(), &rules);
    assert_eq!(a.steps.steps.len(), 2);
    let b = a.budgets(&t, &rules);
    let zero = BucketTime::default();

    // Step 1: only the zero-duration NCCL kernel; lo = hi = 100 µs.
    assert_eq!(b[0].span_ns, 0);
    assert_eq!(b[0].families["nccl"].count, 1);
    let got: Vec<(&str, BucketTime)> = b[0].buckets.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, [("comm", zero)]);

    // Step 2: the gemm takes the whole window; comm is listed with zeros.
    assert_eq!(b[1].span_ns, 10 * US);
    assert_eq!(b[1].families["nccl"].count, 1);
    assert_eq!(b[1].families["gemm_cublas"].count, 1);
    let got: Vec<(&str, BucketTime)> = b[1].buckets.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        got,
        [
            ("comm", zero),
            (
                "gemm",
                BucketTime {
                    exclusive_ns: 10 * US,
                    inclusive_ns: 10 * US
                }
            )
        ]
    );

    // Every family's bucket has an entry, and the identity holds.
    for x in &b {
        for f in x.families.keys() {
            let id = rules.find_family(f).unwrap();
            assert!(x.buckets.contains_key(&rules.family(id).bucket), "{f}");
        }
        let excl: i64 = x.buckets.values().map(|v| v.exclusive_ns).sum();
        assert_eq!(excl + x.idle_ns, x.span_ns);
    }
}

/// A trace of one process: each annotation `[i·100, i·100 + 100)` µs on thread 1 launches one
/// kernel at `i·100 + 10` that runs `[1000 + i·100, 1000 + i·100 + 5)`; plus one kernel with no
/// launch at all.
fn marked(names: &[&str]) -> kineto_trace::Trace {
    let mut ev = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let t = i as u64 * 100;
        let c = i + 1;
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":{},"pid":1,"tid":1,"ts":{t},"dur":100}}"#,
            serde_json::to_string(n).unwrap()
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":1,"args":{{"correlation":{c}}}}}"#,
            t + 10
        ));
        ev.push(format!(
            r#"{{"ph":"X","cat":"kernel","name":"k{i}","pid":0,"tid":7,"ts":{},"dur":5,"args":{{"device":0,"stream":7,"correlation":{c}}}}}"#,
            1000 + t
        ));
    }
    ev.push(r#"{"ph":"X","cat":"kernel","name":"orphan","pid":0,"tid":7,"ts":5000,"dur":5,"args":{"device":0,"stream":7,"correlation":999}}"#.to_string());
    let text = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
    kineto_trace::parse_reader(Path::new("marked.json"), &mut text.as_bytes(), false, false)
        .unwrap()
        .0
}

fn steps_of(names: &[&str], pattern: &StepPattern) -> kineto_trace::step::Steps {
    let t = marked(names);
    Analysis::new(&t, pattern, &Rules::builtin()).steps
}

fn phase(
    requests: Option<u64>,
    query_tokens: Option<u64>,
    context_tokens: Option<u64>,
    query_sq_sum: Option<u64>,
    query_context_sum: Option<u64>,
) -> Option<PhaseTokens> {
    Some(PhaseTokens {
        requests,
        query_tokens,
        context_tokens,
        query_sq_sum,
        query_context_sum,
    })
}

#[test]
fn kl1_markers_with_and_without_requests() {
    let s = steps_of(
        &[
            "kl1.step#1 phase=decode rows=8 requests=8",
            "kl1.step#2 phase=prefill rows=512",
        ],
        &StepPattern::builtin(),
    );
    assert_eq!(s.steps.len(), 2);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(s.notes[0].contains("`kl1`"), "{:?}", s.notes);
    let (a, b) = (&s.steps[0], &s.steps[1]);
    assert_eq!(
        (a.number, a.phase.as_deref(), a.rows, a.requests),
        (Some(1), Some("decode"), Some(8), Some(8))
    );
    assert_eq!(
        a.tokens,
        Some(StepTokens {
            prefill: None,
            decode: phase(Some(8), Some(8), None, None, None),
            unphased: None
        })
    );
    // A prefill marker without `requests`: the step is kept, its requests unknown.
    assert_eq!(
        (b.phase.as_deref(), b.rows, b.requests),
        (Some("prefill"), Some(512), None)
    );
    assert_eq!(
        b.tokens,
        Some(StepTokens {
            prefill: phase(None, Some(512), None, None, None),
            decode: None,
            unphased: None
        })
    );
    assert_eq!((a.kernels.len(), b.kernels.len()), (1, 1));
}

#[test]
fn an_optional_requests_group_in_a_user_pattern() {
    let p = StepPattern::new(
        r"kl1\.step#(?P<step>\d+) phase=(?P<phase>\w+) rows=(?P<rows>\d+)(?: requests=(?P<requests>\d+))?",
    )
    .unwrap();
    let s = steps_of(
        &[
            "kl1.step#1 phase=decode rows=8 requests=8",
            "kl1.step#2 phase=prefill rows=512",
        ],
        &p,
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        s.steps.iter().map(|s| s.requests).collect::<Vec<_>>(),
        [Some(8), None]
    );
}

#[test]
fn tracelens_markers_give_tokens_per_phase() {
    // 2 prefill requests (Σ query 8, Σ KV 8, Σ q² 40, Σ q·kv 40) and 32 decode requests (Σ query 32,
    // Σ KV 1000, Σ q² 32, Σ q·kv 1000) in one step of 40 scheduled tokens.
    let s = steps_of(
        &["execute_40_context_2(sq8sk8sqsq40sqsk40)_generation_32(sq32sk1000sqsq32sqsk1000)"],
        &StepPattern::builtin(),
    );
    let st = &s.steps[0];
    assert_eq!(
        (st.phase.as_deref(), st.rows, st.requests),
        (Some("mixed"), Some(40), Some(2 + 32))
    );
    assert_eq!(
        st.tokens,
        Some(StepTokens {
            prefill: phase(Some(2), Some(8), Some(8), Some(40), Some(40)),
            decode: phase(Some(32), Some(32), Some(1000), Some(32), Some(1000)),
            unphased: None
        })
    );
}

#[test]
fn sglang_markers_and_their_priority_over_profiler_steps() {
    // ProfilerStep#7 wraps both SGLang steps; the serving markers are the steps.
    let s = steps_of(
        &[
            "ProfilerStep#7",
            "step[DECODE bs=16]",
            "step[EXTEND bs=2 toks=300]",
        ],
        &StepPattern::builtin(),
    );
    assert!(s.notes[0].contains("`sglang`"), "{:?}", s.notes);
    assert_eq!(s.steps.len(), 2);
    let (d, e) = (&s.steps[0], &s.steps[1]);
    assert_eq!(
        (d.phase.as_deref(), d.rows, d.requests),
        (Some("DECODE"), Some(16), Some(16))
    );
    // SGLang's DECODE forward mode runs one token per request (speculative verification is
    // TARGET_VERIFY, a draft model's decode a `draft step[…]`), so bs is also the query tokens.
    assert_eq!(
        d.tokens,
        Some(StepTokens {
            prefill: None,
            decode: phase(Some(16), Some(16), None, None, None),
            unphased: None
        })
    );
    assert_eq!(
        e.tokens,
        Some(StepTokens {
            prefill: phase(Some(2), Some(300), None, None, None),
            decode: None,
            unphased: None
        })
    );
    // The ProfilerStep marker is not a step: its kernel is outside every step.
    assert_eq!(s.kernels_outside, 1);
}

#[test]
fn no_marker_means_one_whole_window_step_or_a_note() {
    let s = steps_of(&["forward", "forward", "backward"], &StepPattern::builtin());
    assert_eq!(s.steps.len(), 1);
    let w = &s.steps[0];
    assert_eq!(w.name, kineto_trace::step::WHOLE_WINDOW);
    // All four kernels, the one without a launch included: [1000, 1005) … [5000, 5005).
    assert_eq!(w.kernels.len(), 4);
    assert_eq!((w.lo_ns, w.hi_ns), (Some(1000 * US), Some(5005 * US)));
    assert_eq!(w.kernel_sum_ns, 4 * 5 * US);
    assert!(
        s.notes.iter().any(|n| n.contains("whole GPU window")),
        "{:?}",
        s.notes
    );
    assert!(
        s.notes[0].contains("`forward` ×2, `backward` ×1"),
        "{:?}",
        s.notes
    );

    // A pattern of the user's that matches nothing says so and names what is there.
    let p = StepPattern::new(r"iteration#(?P<step>\d+)").unwrap();
    let s = steps_of(&["forward", "forward", "backward"], &p);
    assert!(s.steps.is_empty());
    assert!(
        s.notes[0].starts_with("step pattern `iteration#(?P<step>\\d+)` matched no annotation; most frequent annotations: `forward` ×2"),
        "{:?}",
        s.notes
    );
    let s = steps_of(&["forward"], &p.or_whole_window());
    assert_eq!(s.steps.len(), 1);
}

/// A step's phase from its attention kernels (step::phase): vLLM's ROCm backend
/// (`chunked_prefill_paged_decode`) runs the prefills through the Triton prefix-prefill `_fwd_kernel`
/// and then `paged_attention_ll4mi…` over every sequence, so a step with both is not a decode step —
/// it stays unknown — while a step of `paged_attention_ll4mi…` alone is decode. `_fwd_kernel` is
/// attention by the built-in kernel rules, not by its name's words.
#[test]
fn a_rocm_prefill_beside_paged_decode_attention_is_not_decode() {
    let launch = |corr: u32, ts: u32| {
        format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 2, "args": {{"correlation": {corr}}}}}"#
        )
    };
    let kernel = |corr: u32, ts: u32, name: &str| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 10, "args": {{"device": 0, "stream": 7, "correlation": {corr}}}}}"#
        )
    };
    let forward = |ts: u32| {
        format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "nn.Module: LlamaForCausalLM", "pid": 1, "tid": 1, "ts": {ts}, "dur": 100}}"#
        )
    };
    let decode = "paged_attention_ll4mi_QKV_mfma16_kernel";
    let events = [
        forward(0),
        launch(1, 10),
        kernel(1, 20, decode),
        forward(200),
        launch(2, 210),
        kernel(2, 220, "_fwd_kernel"),
        launch(3, 230),
        kernel(3, 240, decode),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("rocm_vllm.json");
    std::fs::write(
        &path,
        format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n")),
    )
    .unwrap();
    let parsed = parse_file(&path, &Options::default()).unwrap();
    let a = Analysis::new(&parsed.trace, &StepPattern::builtin(), &Rules::builtin());
    assert_eq!(a.steps.profile.as_deref(), Some("model_forward"));
    let phases: Vec<Option<&str>> = a.steps.steps.iter().map(|s| s.phase.as_deref()).collect();
    assert_eq!(phases, [Some("decode"), None]);
}
