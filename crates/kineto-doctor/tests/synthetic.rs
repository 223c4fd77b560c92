//! Traces written here with one known problem each; the time at stake of every finding is worked out by
//! hand from the events (times in µs in the trace, ns in the findings), as the arithmetic below.

use kineto_doctor::{
    Diagnosis, FindingId, Mark, NO_FIX, Thresholds, TraceInput, TrustId, diagnose, marks,
};
use kineto_trace::analysis::Analysis;
use kineto_trace::family::Rules;
use kineto_trace::step::StepPattern;
use std::path::Path;

/// A tensor-core GEMM (bf16): the kernel of every pattern but the SIMT one.
const GEMM: &str = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32";
/// An fp32 GEMM on the SIMT cores (cuBLAS's `sgemm`, Ampere).
const SGEMM: &str = "ampere_sgemm_128x64_nn";
const NCCL: &str = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)";

/// Events of a trace, written as JSON objects.
#[derive(Default)]
struct T {
    ev: Vec<String>,
    corr: u64,
    /// The GPU's name in `deviceProperties` (none written when `None`).
    device: Option<&'static str>,
}

impl T {
    /// A step marker on the CPU thread 1, `[lo, hi)` µs.
    fn step(&mut self, n: u64, lo: f64, hi: f64) -> &mut T {
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":1,"ts":{lo},"dur":{}}}"#,
            hi - lo
        ));
        self
    }
    /// An SGLang step marker stating its mode (`step[MODE bs=4]`: `DECODE`, `EXTEND`, `MIXED`) on the
    /// CPU thread 1, `[lo, hi)` µs.
    fn phased(&mut self, mode: &str, lo: f64, hi: f64) -> &mut T {
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"step[{mode} bs=4]","pid":1,"tid":1,"ts":{lo},"dur":{}}}"#,
            hi - lo
        ));
        self
    }
    /// A `record_function` annotation (`user_annotation`) on the CPU thread 1, `[ts, ts + dur)` µs.
    fn annotation(&mut self, name: &str, ts: f64, dur: f64) -> &mut T {
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
        ));
        self
    }
    /// A runtime call on thread 1 with the next correlation id; returns the id.
    fn call(&mut self, name: &str, ts: f64, dur: f64) -> u64 {
        self.corr += 1;
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur},"args":{{"correlation":{}}}}}"#,
            self.corr
        ));
        self.corr
    }
    /// A GPU op of `cat` on stream `stream` linked to correlation `corr`.
    fn gpu(&mut self, cat: &str, name: &str, ts: f64, dur: f64, stream: u64, corr: u64) -> &mut T {
        self.ev.push(format!(
            r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":{stream},"ts":{ts},"dur":{dur},"args":{{"device":0,"stream":{stream},"correlation":{corr}}}}}"#
        ));
        self
    }
    /// A kernel launched by `cudaLaunchKernel` at `launch` (1 µs long), running `[ts, ts + dur)`.
    fn kernel(&mut self, name: &str, launch: f64, ts: f64, dur: f64) -> &mut T {
        let c = self.call("cudaLaunchKernel", launch, 1.0);
        self.gpu("kernel", name, ts, dur, 7, c)
    }
    fn json(&self, rank: Option<u64>) -> String {
        let dist = rank.map_or(String::new(), |r| {
            format!(r#","distributedInfo":{{"rank":{r},"world_size":3}}"#)
        });
        let props = self.device.map_or(String::new(), |name| {
            format!(r#","deviceProperties":[{{"id":0,"name":"{name}"}}]"#)
        });
        format!(r#"{{"traceEvents":[{}]{dist}{props}}}"#, self.ev.join(","))
    }
}

struct Run {
    traces: Vec<(String, kineto_trace::Trace)>,
}

impl Run {
    fn new(texts: &[(String, String)]) -> Run {
        let traces = texts
            .iter()
            .map(|(name, text)| {
                // Parsed as `kineto doctor` parses: every Python frame kept.
                let opts = kineto_trace::Options {
                    salvage: true,
                    sha256: false,
                    threads: 1,
                    python_frames: true,
                    ..kineto_trace::Options::default()
                };
                let p = kineto_trace::parse_raw(
                    Path::new(name),
                    std::io::Cursor::new(text.clone().into_bytes()),
                    &opts,
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                (name.clone(), p.trace)
            })
            .collect();
        Run { traces }
    }

    fn diagnose(&self) -> Diagnosis {
        self.diagnose_and_mark().0
    }

    /// The diagnosis and, per trace, the marks of every step (in step order), after checking that every
    /// interval finding's marks sum to its time at stake over its steps, and that no other finding has
    /// marks outside its steps.
    fn diagnose_and_mark(&self) -> (Diagnosis, Vec<Vec<Mark>>) {
        let rules = Rules::builtin();
        let pattern = StepPattern::builtin();
        let analyses: Vec<Analysis> = self
            .traces
            .iter()
            .map(|(_, t)| Analysis::new(t, &pattern, &rules))
            .collect();
        let budgets: Vec<_> = self
            .traces
            .iter()
            .zip(&analyses)
            .map(|((_, t), a)| a.budgets(t, &rules))
            .collect();
        let inputs: Vec<TraceInput<'_>> = self
            .traces
            .iter()
            .zip(&analyses)
            .zip(&budgets)
            .map(|(((file, trace), analysis), budgets)| TraceInput {
                file,
                trace,
                analysis,
                budgets,
                rules: &rules,
                roofline: None,
            })
            .collect();
        let th = Thresholds::DEFAULT;
        let d = diagnose(&inputs, &th);
        let all: Vec<Vec<Mark>> = inputs
            .iter()
            .map(|t| {
                (0..t.budgets.len())
                    .flat_map(|s| marks(t, s, &d.findings, &th))
                    .collect()
            })
            .collect();
        for f in &d.findings {
            let r = inputs.iter().position(|t| t.file == f.file);
            let of: Vec<&Mark> = r
                .map_or(&[][..], |r| &all[r][..])
                .iter()
                .filter(|m| m.id == f.id)
                .collect();
            if f.id.marks_are_its_time() {
                let sum: i64 = of.iter().map(|m| m.dur_ns()).sum();
                assert_eq!(sum, f.time_at_stake_ns, "{:?} marks {of:?}", f.id);
            } else {
                assert_eq!(of.len(), f.steps.len(), "{:?}: one band per step", f.id);
            }
        }
        (d, all)
    }
}

fn one(t: &T) -> Diagnosis {
    Run::new(&[("t.json".to_string(), t.json(None))]).diagnose()
}

/// The marks of every step of a one-trace run, as (finding, start, end) in ns.
fn one_marked(t: &T) -> Vec<(FindingId, i64, i64)> {
    let (_, m) = Run::new(&[("t.json".to_string(), t.json(None))]).diagnose_and_mark();
    m[0].iter().map(|m| (m.id, m.lo_ns, m.hi_ns)).collect()
}

/// (finding, time at stake ns, steps) of every finding, in rank order.
fn found(d: &Diagnosis) -> Vec<(FindingId, i64, Vec<usize>)> {
    d.findings
        .iter()
        .map(|f| (f.id, f.time_at_stake_ns, f.steps.clone()))
        .collect()
}

const US: i64 = 1000;

#[test]
fn a_clean_trace_has_no_finding_and_no_warning() {
    // Four steps of three 30 µs kernels each, launched well ahead, back to back across steps:
    // step s runs [90s + 10, 90s + 100) and the next starts where it ends.
    let mut t = T::default();
    for s in 0..4u32 {
        let b = 90.0 * f64::from(s);
        t.step(u64::from(s) + 1, b, b + 90.0);
        for (i, off) in [10.0, 40.0, 70.0].into_iter().enumerate() {
            t.kernel(GEMM, b + 1.0 + i as f64, b + off, 30.0);
        }
    }
    let d = one(&t);
    assert!(d.is_clean(), "{:?}", d.findings);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.traces[0].analysed_span_ns, (370 - 10) * US);
}

#[test]
fn launch_bound_idle_is_the_gap_before_a_late_launch() {
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0); // [10, 40)
    t.kernel(GEMM, 60.0, 65.0, 30.0); // launched at 60, after the GPU went idle at 40
    t.kernel(GEMM, 2.0, 100.0, 30.0); // launched at 2, long before the gap [95, 100): not the CPU's
    let d = one(&t);
    // The gap [40, 65) only; span 130 − 10 = 120 µs.
    assert_eq!(
        found(&d),
        [(FindingId::LaunchBoundIdle, (65 - 40) * US, vec![0])]
    );
    let f = &d.findings[0];
    assert!((f.share_pct - 100.0 * 25.0 / 120.0).abs() < 1e-9);
    assert_eq!(f.origin.as_str(), "MEASURED");
    assert!(f.evidence.contains("1 gaps"), "{}", f.evidence);
    // Its mark is the gap itself: no blocking call spans any of it.
    assert_eq!(
        one_marked(&t),
        [(FindingId::LaunchBoundIdle, 40 * US, 65 * US)]
    );
}

/// A `with_stack` trace: the Python frames on the launching thread say where the host was during a
/// launch-bound gap, each instant to the innermost source frame (`file.py(N): fn`); a built-in's time
/// (`<built-in method …>`, `<frozen …>`) is its caller's line, which is what the user can change.
#[test]
fn the_python_line_that_held_the_host_is_named_with_its_share() {
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0); // [10, 40)
    t.kernel(GEMM, 110.0, 115.0, 30.0); // launched at 110, after the GPU went idle at 40
    for (name, ts, dur) in [
        ("serve.py(10): step", 0.5, 198.5),
        ("tokenizer.py(88): decode", 45.0, 60.0), // [45, 105)
        (
            "<built-in method encode of str object at 0x7f0>",
            50.0,
            50.0,
        ), // [50, 100), in decode
        ("<frozen os>(717): getenv", 102.0, 2.0), // [102, 104), in decode
    ] {
        t.ev.push(format!(
            r#"{{"ph":"X","cat":"python_function","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#
        ));
    }
    let d = one(&t);
    assert_eq!(
        found(&d),
        [(FindingId::LaunchBoundIdle, (115 - 40) * US, vec![0])]
    );
    // The gap [40, 115), 75 µs: decode holds [45, 105) = 60 µs (its built-ins' 50 + 2 µs included),
    // 60 / 75 = 80.0 %; step the rest, [40, 45) and [105, 115) = 15 µs, 15 / 75 = 20.0 %.
    let e = &d.findings[0].evidence;
    assert!(
        e.contains(
            "the host during them (launching thread): `tokenizer.py(88): decode` 80.0 %, \
             `serve.py(10): step` 20.0 %"
        ),
        "{e}"
    );
}

#[test]
fn blocking_calls_split_gaps_from_launch_bound_ones_and_copies_are_named() {
    let mut t = T::default();
    t.step(1, 0.0, 300.0);
    t.kernel(GEMM, 1.0, 10.0, 40.0); // [10, 50)
    t.call("cudaStreamSynchronize", 12.0, 43.0); // [12, 55): waits for the kernel
    t.kernel(GEMM, 56.0, 60.0, 30.0); // [60, 90)
    let c = t.call("cudaMemcpy", 95.0, 35.0); // [95, 130): a blocking copy
    t.gpu(
        "gpu_memcpy",
        "Memcpy DtoH (Device -> Pageable)",
        100.0,
        10.0,
        7,
        c,
    ); // [100, 110)
    t.kernel(GEMM, 131.0, 135.0, 30.0); // [135, 165)
    let d = one(&t);
    // Gaps [50, 60), [90, 100), [110, 135). The host was blocked when the GPU went idle at 50 (the
    // synchronize [12, 55)) and at 110 (the copy [95, 130)), and launched the next op only after the
    // call returned (56, 131): sync-then-launch, the whole gap is the sync's. At 90 it was not (the
    // copy began at 95): [90, 95) is launch-bound (launch 95 > 90), [95, 100) under the copy.
    //   sync: [50, 60) + [95, 100) + [110, 135) = 10 + 5 + 25 = 40 µs; launch-bound: [90, 95) = 5 µs.
    // The copy [100, 110) runs with no kernel beside it: 10 µs. Span 165 − 10 = 155 µs.
    assert_eq!(
        found(&d),
        [
            (FindingId::SyncBlockedIdle, (10 + 5 + 25) * US, vec![0]),
            (FindingId::CopiesInStep, 10 * US, vec![0]),
            (FindingId::LaunchBoundIdle, 5 * US, vec![0]),
        ]
    );
    assert!((d.findings[0].share_pct - 100.0 * 40.0 / 155.0).abs() < 1e-9);
    let sync = &d.findings[0].evidence;
    assert!(
        sync.contains("(2 gaps where the host launched only after"),
        "{sync}"
    );
    assert!(sync.contains("`cudaMemcpy` ×2 25.000 µs"), "{sync}");
    assert!(
        sync.contains("`cudaStreamSynchronize` ×1 5.000 µs"),
        "{sync}"
    );
    let copies = &d.findings[1].evidence;
    assert!(copies.contains("1 pageable"), "{copies}");
    assert!(
        copies.contains("Memcpy DtoH (Device -> Pageable)"),
        "{copies}"
    );
    // The marks are the pieces summed above, by finding then start.
    use FindingId::{CopiesInStep as C, LaunchBoundIdle as L, SyncBlockedIdle as S};
    let want: Vec<(FindingId, i64, i64)> = [
        (L, 90, 95),
        (S, 50, 60),
        (S, 95, 100),
        (S, 110, 135),
        (C, 100, 110),
    ]
    .into_iter()
    .map(|(f, a, b)| (f, a * US, b * US))
    .collect();
    assert_eq!(one_marked(&t), want);
}

#[test]
fn between_steps_is_the_gpu_idle_from_one_step_to_the_next() {
    let mut t = T::default();
    t.step(1, 0.0, 90.0).kernel(GEMM, 1.0, 10.0, 50.0); // [10, 60)
    t.step(2, 100.0, 190.0).kernel(GEMM, 101.0, 130.0, 50.0); // [130, 180)
    t.step(3, 200.0, 290.0).kernel(GEMM, 201.0, 200.0, 50.0); // [200, 250)
    t.kernel(GEMM, 95.0, 70.0, 10.0); // launched between markers: in no step, runs [70, 80)
    let d = one(&t);
    // (60, 130) less the outside kernel's [70, 80) = 60 µs, and (180, 200) = 20 µs.
    assert_eq!(
        found(&d),
        [(FindingId::BetweenSteps, (70 - 10 + 20) * US, vec![1, 2])]
    );
    let ids: Vec<TrustId> = d.warnings.iter().map(|w| w.id).collect();
    assert_eq!(ids, [TrustId::KernelsOutsideSteps]);
    // Step 1's mark is the idle before it less the outside kernel: [60, 70) and [80, 130); step 2's is
    // [180, 200).
    let b = FindingId::BetweenSteps;
    assert_eq!(
        one_marked(&t),
        [
            (b, 60 * US, 70 * US),
            (b, 80 * US, 130 * US),
            (b, 180 * US, 200 * US)
        ]
    );
}

#[test]
fn exposed_comm_is_comm_with_no_compute_beside_it() {
    let mut t = T::default();
    t.step(1, 0.0, 100.0);
    t.kernel(GEMM, 1.0, 10.0, 40.0); // [10, 50) on stream 7
    let c = t.call("cudaLaunchKernel", 2.0, 1.0);
    t.gpu("kernel", NCCL, 30.0, 50.0, 8, c); // [30, 80) on stream 8
    let d = one(&t);
    // comm 50 µs, overlapped [30, 50) = 20 µs, exposed 30 µs; span 80 − 10 = 70 µs.
    assert_eq!(
        found(&d),
        [(FindingId::ExposedComm, (50 - 20) * US, vec![0])]
    );
    assert!((d.findings[0].share_pct - 100.0 * 30.0 / 70.0).abs() < 1e-9);
    // The nccl kernel past the gemm's end.
    assert_eq!(one_marked(&t), [(FindingId::ExposedComm, 50 * US, 80 * US)]);
}

fn rank(spans: [f64; 2]) -> T {
    let mut t = T::default();
    t.step(1, 0.0, 100.0).kernel(GEMM, 1.0, 10.0, spans[0]);
    t.step(2, 100.0, 200.0)
        .kernel(GEMM, 101.0, 10.0 + spans[0], spans[1]);
    t
}

#[test]
fn stragglers_are_spans_over_the_median_rank() {
    let texts: Vec<(String, String)> = [[100.0, 100.0], [130.0, 100.0], [100.0, 160.0]]
        .iter()
        .enumerate()
        .map(|(r, s)| (format!("rank{r}.json"), rank(*s).json(Some(r as u64))))
        .collect();
    let d = Run::new(&texts).diagnose();
    // Step 1: spans 100, 130, 100, median 100: rank 1 is 30 µs over. Step 2: 100, 100, 160, median
    // 100: rank 2 is 60 µs over. Rank 1's analysed span 230 µs, rank 2's 260 µs.
    let s: Vec<(Option<u64>, i64, Vec<usize>)> = d
        .findings
        .iter()
        .map(|f| (f.rank, f.time_at_stake_ns, f.steps.clone()))
        .collect();
    assert_eq!(
        s,
        [(Some(2), 60 * US, vec![1]), (Some(1), 30 * US, vec![0])]
    );
    assert!(d.findings.iter().all(|f| f.id == FindingId::Straggler));
    assert!((d.findings[0].share_pct - 100.0 * 60.0 / 260.0).abs() < 1e-9);
    // The worst step named as every listing numbers it (index 1, the second step, `ProfilerStep#2`),
    // its span 160 µs against the median 100 µs.
    assert_eq!(
        d.findings[0].evidence,
        "rank 2 is slower than the median rank in 1 of 2 paired steps, Σ 60.000 µs over; \
         worst step 1 `ProfilerStep#2`: 160.000 µs vs median 100.000 µs (+60.000 µs)"
    );

    // Two ranks: the median is their mean, so the slower is half the difference over.
    let texts: Vec<(String, String)> = [[100.0, 100.0], [130.0, 100.0]]
        .iter()
        .enumerate()
        .map(|(r, s)| (format!("rank{r}.json"), rank(*s).json(Some(r as u64))))
        .collect();
    let d = Run::new(&texts).diagnose();
    assert_eq!(
        found(&d),
        [(FindingId::Straggler, (130 - 100) * US / 2, vec![0])]
    );
}

#[test]
fn short_eager_kernels_count_and_total() {
    let mut t = T::default();
    t.step(1, 0.0, 100.0);
    for i in 0..10 {
        let i = f64::from(i);
        t.kernel("vectorized_elementwise_kernel", i, 20.0 + 2.0 * i, 2.0); // [20, 40) in 2 µs kernels
    }
    t.kernel(GEMM, 10.0, 40.0, 40.0); // [40, 80)
    let d = one(&t);
    // Ten kernels of 2 µs < 5 µs: 20 µs of a 60 µs span.
    assert_eq!(found(&d), [(FindingId::ShortKernels, 10 * 2 * US, vec![0])]);
    assert!(
        d.findings[0]
            .evidence
            .starts_with("10 of 11 eagerly launched kernels")
    );
    // One mark per short kernel, [20 + 2i, 22 + 2i).
    let want: Vec<(FindingId, i64, i64)> = (0..10)
        .map(|i| {
            (
                FindingId::ShortKernels,
                (20 + 2 * i) * US,
                (22 + 2 * i) * US,
            )
        })
        .collect();
    assert_eq!(one_marked(&t), want);
}

/// A decode step replaying a graph, then a step of `second` phase (none: a `ProfilerStep`) run eagerly.
fn graph_then_eager(second: Option<&str>) -> T {
    let mut t = T::default();
    match second {
        Some(_) => t.phased("DECODE", 0.0, 90.0),
        None => t.step(1, 0.0, 90.0),
    };
    let g = t.call("cudaGraphLaunch", 1.0, 5.0);
    t.gpu("kernel", GEMM, 10.0, 30.0, 7, g); // [10, 40)
    t.gpu("kernel", GEMM, 40.0, 30.0, 7, g); // [40, 70)
    match second {
        Some(p) => t.phased(p, 90.0, 190.0),
        None => t.step(2, 90.0, 190.0),
    };
    t.kernel(GEMM, 91.0, 70.0, 30.0); // [70, 100)
    t.kernel(GEMM, 92.0, 110.0, 30.0); // [110, 140): launched at 92, before the gap
    t
}

#[test]
fn eager_steps_beside_graph_steps() {
    let t = graph_then_eager(Some("DECODE"));
    let d = one(&t);
    // Decode step 2 runs eagerly while step 1 replays a graph: its idle [100, 110) = 10 µs.
    assert_eq!(found(&d), [(FindingId::EagerSteps, 10 * US, vec![1])]);
    // A step-level finding: the step's window [70, 140) as one band.
    assert_eq!(one_marked(&t), [(FindingId::EagerSteps, 70 * US, 140 * US)]);
}

#[test]
fn prefill_and_unknown_steps_are_not_eager_steps() {
    // The same trace with step 2 a prefill, a mixed batch, or of unknown phase and tokens: servers run
    // prefills eagerly by design, and nothing says the unknown one is a decode. Its 10 µs idle is then
    // 10 / 130 = 7.7 % of the span: were it judged, it would be reported.
    for second in [Some("EXTEND"), Some("MIXED"), None] {
        let d = one(&graph_then_eager(second));
        assert!(d.is_clean(), "{second:?}: {:?}", d.findings);
    }
}

#[test]
fn unsteady_steps_are_outliers_over_the_median_and_name_the_bucket() {
    let mut t = T::default();
    // Spans 100, 102, 98, 101, 150 µs, back to back. Sorted 98, 100, 101, 102, 150: median 101;
    // deviations 3, 1, 0, 1, 49 → MAD 1; only 150 is more than 3 × MAD from the median.
    let mut at = 10.0;
    for (s, span) in [100.0, 102.0, 98.0, 101.0, 150.0].into_iter().enumerate() {
        let b = 100.0 * s as f64;
        t.step(s as u64 + 1, b, b + 100.0)
            .kernel(GEMM, b + 1.0, at, span);
        at += span;
    }
    let d = one(&t);
    assert_eq!(
        found(&d),
        [(FindingId::UnsteadySteps, (150 - 101) * US, vec![4])]
    );
    let e = &d.findings[0].evidence;
    assert!(e.contains("`gemm` +49.000 µs"), "{e}");
}

#[test]
fn small_findings_are_not_reported() {
    // One launch-bound gap of 1 µs in a 201 µs span: 0.5 % < 1 %.
    let mut t = T::default();
    t.step(1, 0.0, 300.0);
    t.kernel(GEMM, 1.0, 10.0, 100.0); // [10, 110)
    t.kernel(GEMM, 110.5, 111.0, 100.0); // [111, 211)
    assert!(one(&t).is_clean());
}

#[test]
fn trust_warnings_salvage_overlap_unlinked() {
    let mut t = T::default();
    t.step(1, 0.0, 100.0);
    t.kernel(GEMM, 1.0, 10.0, 40.0); // [10, 50)
    t.kernel(GEMM, 2.0, 30.0, 40.0); // [30, 70) on the same stream: overlaps
    t.ev.push(format!(
        r#"{{"ph":"X","cat":"kernel","name":"{GEMM}","pid":0,"tid":7,"ts":70,"dur":10,"args":{{"stream":7}}}}"#
    ));
    // Cut mid-event: salvaged.
    let mut text = t.json(None);
    text.truncate(text.len() - 20);
    let d = Run::new(&[("cut.json".to_string(), text)]).diagnose();
    let ids: Vec<TrustId> = d.warnings.iter().map(|w| w.id).collect();
    assert!(ids.contains(&TrustId::Salvaged), "{ids:?}");
    assert!(ids.contains(&TrustId::SameStreamOverlap), "{ids:?}");
}

#[test]
fn a_prefill_among_decodes_is_not_unsteady() {
    // Five decode steps of 100, 102, 98, 101, 101 µs and one prefill of 900 µs, back to back: the
    // decode spans sorted 98, 100, 101, 101, 102 have median 101, deviations 3, 1, 0, 0, 1 → MAD 1:
    // none is over 3 µs from the median. The prefill is not compared with them (a decode would be:
    // 900 − 101 = 799 µs over). As `ProfilerStep`s of unknown phase, the 900 µs step is an outlier.
    let spans = [900.0, 100.0, 102.0, 98.0, 101.0, 101.0];
    for (phased, want) in [
        (true, vec![]),
        (
            false,
            vec![(FindingId::UnsteadySteps, (900 - 101) * US, vec![0])],
        ),
    ] {
        let mut t = T::default();
        let mut at = 10.0;
        for (s, span) in spans.into_iter().enumerate() {
            let b = 1000.0 * s as f64;
            if phased {
                t.phased(if s == 0 { "EXTEND" } else { "DECODE" }, b, b + 1000.0);
            } else {
                t.step(s as u64 + 1, b, b + 1000.0);
            }
            t.kernel(GEMM, b + 1.0, at, span);
            at += span;
        }
        assert_eq!(found(&one(&t)), want, "phased {phased}");
    }
}

#[test]
fn stock_vllm_v1_prefill_is_neither_eager_nor_unsteady() {
    // testdata/synthetic/server_traces/vllm_v1_graphs: a 1,000-token prompt run eagerly, then five
    // decode steps replaying one graph each, no marker stating a phase (issue 43's first class). The
    // decode steps are decode by their graph replays; the prompt's step, of unknown phase, is judged by
    // neither rule (it has more tokens than anything; nothing says it is a decode).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/synthetic/server_traces");
    let path = root.join("vllm_v1_graphs/vllm_v1_graphs.json");
    let text = std::fs::read_to_string(&path).expect("vllm_v1_graphs.json");
    let d = Run::new(&[("vllm_v1_graphs.json".to_string(), text)]).diagnose();
    for f in &d.findings {
        let judged = matches!(f.id, FindingId::EagerSteps | FindingId::UnsteadySteps);
        assert!(!(judged && f.steps.contains(&0)), "{f:?}");
    }
}

#[test]
fn fp32_simt_gemms_are_found_with_the_tf32_fix() {
    // One step: a 60 µs sgemm [10, 70), a 40 µs bf16 GEMM [70, 110), a 20 µs sgemm [110, 130), all
    // launched ahead. The SIMT GEMMs: 60 + 20 = 80 µs of 120 µs of kernel time (66.7 %).
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(SGEMM, 1.0, 10.0, 60.0);
    t.kernel(GEMM, 2.0, 70.0, 40.0);
    t.kernel(SGEMM, 3.0, 110.0, 20.0);
    let d = one(&t);
    assert_eq!(found(&d), [(FindingId::SimtGemm, 80 * US, vec![0])]);
    let f = &d.findings[0];
    assert!(f.evidence.contains("66.7 %"), "{}", f.evidence);
    // `ampere_` kernels: an Ampere GPU, TF32 and bf16 tensor cores.
    let fix = f.fix.expect("a catalogued fix");
    assert!(fix.change.contains("allow_tf32"), "{}", fix.change);
    assert!(
        fix.source.starts_with("https://pytorch.org/"),
        "{}",
        fix.source
    );
    assert_eq!(
        one_marked(&t),
        [
            (FindingId::SimtGemm, 10 * US, 70 * US),
            (FindingId::SimtGemm, 110 * US, 130 * US)
        ]
    );
    // On a Volta GPU the fix is fp16 autocast, never TF32 (which Volta lacks).
    let mut v = T::default();
    v.step(1, 0.0, 200.0);
    v.kernel("volta_sgemm_128x64_nn", 1.0, 10.0, 60.0);
    let f = one(&v).findings[0].fix.expect("a catalogued fix");
    assert!(
        f.change.contains("float16") && !f.change.contains("tf32"),
        "{}",
        f.change
    );
}

#[test]
fn the_tensor_cores_are_the_device_s_then_the_newest_kernel_arch_s() {
    // One SIMT GEMM per trace: which fix it gets says which tensor cores the doctor believes in.
    let fix_of = |device: Option<&'static str>, kernels: &[&str]| {
        let mut t = T {
            device,
            ..T::default()
        };
        t.step(1, 0.0, 200.0);
        for (i, k) in kernels.iter().enumerate() {
            let at = 10.0 + 30.0 * i as f64;
            t.kernel(k, at - 5.0, at, 20.0);
        }
        let d = one(&t);
        let f = d
            .findings
            .iter()
            .find(|f| f.id == FindingId::SimtGemm)
            .expect("a SIMT GEMM finding");
        f.fix.expect("a catalogued fix").change
    };
    let tf32 = |c: &str| c.contains("allow_tf32");
    let fp16 = |c: &str| c.contains("float16") && !c.contains("tf32");
    // A kernel built for Volta on an A100 (a GPU runs kernels built for older architectures): the
    // device's name decides (before: the kernel's prefix did, and the A100 was told fp16 autocast).
    assert!(tf32(fix_of(
        Some("NVIDIA A100-SXM4-80GB"),
        &["volta_sgemm_128x64_nn"]
    )));
    // The user's own GPU (Blackwell, sm_121): TF32 and bf16.
    assert!(tf32(fix_of(
        Some("NVIDIA GB10"),
        &["volta_sgemm_128x64_nn"]
    )));
    assert!(fp16(fix_of(
        Some("Tesla V100-SXM2-32GB"),
        &["volta_sgemm_128x64_nn"]
    )));
    // No device named: the newest arch any kernel is built for, not the first kernel's (before: the
    // first, `volta_`, gave fp16). The bf16 GEMM is a tensor-core one, so the only SIMT GEMM is the sgemm.
    let hopper = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64";
    assert!(tf32(fix_of(None, &["volta_sgemm_128x64_nn", hopper])));
    assert!(tf32(fix_of(
        None,
        &["sm121_xmma_gemm_f32f32_f32f32_f32_nn_n_ffma"]
    )));
    assert!(fp16(fix_of(
        None,
        &["sm75_xmma_gemm_f32f32_f32f32_f32_nn_n_ffma"]
    )));
}

#[test]
fn fixes_follow_the_trace_and_none_is_said_so() {
    // The launch-bound gap of `launch_bound_idle_is_the_gap_before_a_late_launch` in a script (no
    // server): torch.compile; `unsteady_steps` has no catalogued fix.
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0);
    t.kernel(GEMM, 60.0, 65.0, 30.0);
    let d = one(&t);
    let fix = d.findings[0].fix.expect("a catalogued fix");
    assert!(fix.change.contains("torch.compile"), "{}", fix.change);
    assert_eq!(
        kineto_doctor::rule(FindingId::UnsteadySteps).id,
        "unsteady_steps"
    );
    assert!(kineto_doctor::select(FindingId::UnsteadySteps, &Default::default()).is_none());
    assert_eq!(NO_FIX, "no catalogued fix");
    // Every catalogue entry names its source.
    for f in kineto_doctor::FIXES {
        assert!(f.source.starts_with("https://"), "{f:?}");
    }
}

/// Steps 1‥3 of the clean trace's shape after a first step: step s at `[5000 + 90s, 5090 + 90s)`, three
/// 30 µs kernels each, launched well ahead, at +10, +40, +70 µs.
fn steady_after(t: &mut T) {
    for s in 1..4u32 {
        let b = 5000.0 + 90.0 * f64::from(s);
        t.step(u64::from(s) + 1, b, b + 90.0);
        for (i, off) in [10.0, 40.0, 70.0].into_iter().enumerate() {
            t.kernel(GEMM, b + 1.0 + i as f64, b + off, 30.0);
        }
    }
}

#[test]
fn a_wait_opening_the_window_is_an_artefact_not_a_finding() {
    // Step 1: a kernel [10, 40), then the host blocks in cudaStreamSynchronize [0, 5000) — begun before
    // any GPU op, waiting on work queued before the profiler — and launches the next kernel at 5001,
    // run [5005, 5035). Idle [40, 5005): 4965 µs, of it [40, 5000) = 4960 µs under the wait, over half
    // the step's 5025 µs span. Ranked, it would be sync_blocked_idle of 4960 µs.
    let mut t = T::default();
    t.step(1, 0.0, 5090.0);
    t.call("cudaStreamSynchronize", 0.0, 5000.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0);
    t.kernel(GEMM, 5001.0, 5005.0, 30.0);
    steady_after(&mut t);
    let d = one(&t);
    assert!(d.is_clean(), "{:?}", d.findings);
    let w: Vec<(TrustId, Vec<usize>)> =
        d.warnings.iter().map(|w| (w.id, w.steps.clone())).collect();
    assert!(w.contains(&(TrustId::WindowOpensOnWait, vec![0])), "{w:?}");
    // The analysed span is the steady steps' only: step s (1‥3) starts at 5000 + 90s, its kernels
    // at +10, +40, +70 for 30 µs: from 5090 + 10 = 5100 to 5270 + 70 + 30 = 5370.
    assert_eq!(d.traces[0].analysed_span_ns, (5370 - 5100) * US);
}

#[test]
fn a_cold_first_step_is_an_artefact_not_a_finding() {
    // Step 1: kernels [10, 40) and, launched only at 2000, [2005, 2035): 1965 µs idle, launch-bound,
    // where the later steps idle 0 (median 0). Ranked, it would be launch_bound_idle of 1965 µs.
    let mut t = T::default();
    t.step(1, 0.0, 5090.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0);
    t.kernel(GEMM, 2000.0, 2005.0, 30.0);
    steady_after(&mut t);
    let d = one(&t);
    assert!(d.is_clean(), "{:?}", d.findings);
    let ids: Vec<TrustId> = d.warnings.iter().map(|w| w.id).collect();
    assert_eq!(ids, [TrustId::ColdFirstStep]);
    assert!(
        d.warnings[0].evidence.contains("1965.000 µs"),
        "{}",
        d.warnings[0].evidence
    );
}

#[test]
fn a_last_step_cut_by_the_window_is_an_artefact() {
    // Three steps of 20 kernels (1 µs each, back to back, launched ahead), then a last step with one
    // kernel launched late: 1 < 10 % of 20. Its boundary idle and its lone kernel are not findings.
    let mut t = T::default();
    let mut at = 10.0;
    for s in 0..3u32 {
        let b = 100.0 * f64::from(s);
        t.step(u64::from(s) + 1, b, b + 100.0);
        for i in 0..20 {
            t.kernel(GEMM, b + 1.0 + 0.1 * f64::from(i), at, 1.0);
            at += 1.0;
        }
    }
    t.step(4, 300.0, 400.0);
    t.kernel(GEMM, 301.0, 400.0, 1.0); // [400, 401): the GPU idled 340 µs before it
    let d = one(&t);
    let w: Vec<(TrustId, Vec<usize>)> =
        d.warnings.iter().map(|w| (w.id, w.steps.clone())).collect();
    assert_eq!(w, [(TrustId::CutLastStep, vec![3])]);
    assert!(
        d.findings.iter().all(|f| !f.steps.contains(&3)),
        "{:?}",
        d.findings
    );
}

/// A `collective_wait` finding's time at stake (ns), steps, and marks as (start ns, end ns).
type PeerWaits = (i64, Vec<usize>, Vec<(i64, i64)>);

/// A trace of one step per all-reduce duration (µs), each a 20 µs compute kernel then the all-reduce
/// launched ahead, back to back from 10 µs; its `collective_wait` finding, if any, as (time at stake ns,
/// steps, marks as (start ns, end ns)), its evidence checked to count one collective.
fn one_collective_wait(all_reduces: &[f64]) -> Option<PeerWaits> {
    let mut t = T::default();
    let mut at = 10.0;
    for (s, &ar) in all_reduces.iter().enumerate() {
        let b = 10_000.0 * s as f64;
        t.step(s as u64 + 1, b, b + 10_000.0);
        t.kernel(GEMM, b + 1.0, at, 20.0);
        t.kernel(NCCL, b + 2.0, at + 20.0, ar);
        at += 20.0 + ar;
    }
    let f = one(&t)
        .findings
        .into_iter()
        .find(|f| f.id == FindingId::CollectiveWait)?;
    assert!(f.evidence.contains("1 collectives"), "{}", f.evidence);
    let marks = one_marked(&t)
        .into_iter()
        .filter(|m| m.0 == FindingId::CollectiveWait)
        .map(|m| (m.1, m.2))
        .collect();
    Some((f.time_at_stake_ns, f.steps, marks))
}

#[test]
fn a_collective_far_over_its_median_is_waiting_for_peers() {
    // All-reduces of 10, 10, 10 µs and, in the first step, 5000 µs. Median of the four: sorted 10, 10,
    // 10, 5000 → (10 + 10) / 2 = 10 µs; 5000 > 10 × 10: waiting for peers 5000 − 10 = 4990 µs, marked
    // from its start, 10 + 20 = 30 µs, to end − median = 30 + 5000 − 10 = 5020 µs.
    assert_eq!(
        one_collective_wait(&[5000.0, 10.0, 10.0, 10.0]),
        Some((4990 * US, vec![0], vec![(30 * US, (30 + 4990) * US)]))
    );
}

#[test]
fn a_collectives_median_is_the_middle_one_for_an_odd_count() {
    // Sorted 10, 20, 30, 40, 5000 µs: the third, 30 µs; 5000 > 10 × 30 (40 is not): waiting
    // 5000 − 30 = 4970 µs, marked [30, 30 + 5000 − 30) µs.
    assert_eq!(
        one_collective_wait(&[5000.0, 10.0, 20.0, 30.0, 40.0]),
        Some((4970 * US, vec![0], vec![(30 * US, (30 + 4970) * US)]))
    );
}

#[test]
fn a_collectives_median_is_the_middle_twos_mean_rounded_down_for_an_even_count() {
    // Sorted 10_000, 20_001, 40_000, 5_000_000 ns: the median is the middle two's mean,
    // (20_001 + 40_000) / 2 = 30_000.5 ns, rounded down: 30_000 ns (not the upper middle 40_000 ns).
    // 5_000_000 > 10 × 30_000 (40_000 is not): waiting 5_000_000 − 30_000 = 4_970_000 ns, marked
    // from 30 µs to 30_000 + 5_000_000 − 30_000 = 5_000_000 ns.
    assert_eq!(
        one_collective_wait(&[5000.0, 10.0, 20.001, 40.0]),
        Some((4_970_000, vec![0], vec![(30_000, 5_000_000)]))
    );
}

#[test]
fn launch_bound_gaps_name_what_held_the_host() {
    // The gap of `launch_bound_idle_is_the_gap_before_a_late_launch` [40, 65) with, on the launching
    // thread, the model's forward frame [30, 70) and inside it `aten::nonzero` [45, 55). Each instant
    // goes to the innermost span: nonzero 10 µs = 40 % of 25 µs, the forward's own [40, 45) + [55, 65)
    // = 15 µs = 60 %.
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0); // [10, 40)
    t.ev.push(
        r#"{"ph":"X","cat":"python_function","name":"nn.Module: LlamaForCausalLM_0","pid":1,"tid":1,"ts":30,"dur":40,"args":{"Python id":1,"Python parent id":0}}"#
            .to_string(),
    );
    t.ev.push(
        r#"{"ph":"X","cat":"cpu_op","name":"aten::nonzero","pid":1,"tid":1,"ts":45,"dur":10}"#
            .to_string(),
    );
    t.kernel(GEMM, 60.0, 65.0, 30.0); // launched at 60: [65, 95)
    let d = one(&t);
    let f = d
        .findings
        .iter()
        .find(|f| f.id == FindingId::LaunchBoundIdle)
        .expect("launch_bound_idle");
    assert_eq!(f.time_at_stake_ns, 25 * US);
    assert!(
        f.evidence
            .contains("`nn.Module: LlamaForCausalLM_0` 60.0 %, `aten::nonzero` 40.0 %"),
        "{}",
        f.evidence
    );
}

/// The fix of the one finding `id` of `t`'s diagnosis (panics if `t` has no such finding).
fn fix_of(t: &T, id: FindingId) -> Option<&'static str> {
    let d = one(t);
    let f = d.findings.iter().find(|f| f.id == id);
    f.unwrap_or_else(|| panic!("no {id:?} in {:?}", found(&d)))
        .fix
        .map(|x| x.change)
}

#[test]
fn no_fix_where_its_evidence_says_it_is_done_already() {
    // issue 43's "a wrong fix is not allowed": the stock vLLM V1 trace replays graphs for its decode
    // steps; its short kernels are the eager prompt's, so "replay CUDA graphs" is no fix for them.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/synthetic/server_traces");
    let text = std::fs::read_to_string(root.join("vllm_v1_graphs/vllm_v1_graphs.json")).unwrap();
    let d = Run::new(&[("vllm_v1_graphs.json".to_string(), text)]).diagnose();
    let short = d.findings.iter().find(|f| f.id == FindingId::ShortKernels);
    assert_eq!(short.expect("short_kernels").fix, None);

    // A script's short kernels (the trace of `short_eager_kernels_count_and_total`): compile when
    // nothing is compiled; graph the compiled kernels when Inductor's are there; nothing once a graph
    // is replayed.
    let short_kernels = |extra: &dyn Fn(&mut T)| {
        let mut t = T::default();
        t.step(1, 0.0, 100.0);
        for i in 0..10 {
            let i = f64::from(i);
            t.kernel("vectorized_elementwise_kernel", i, 20.0 + 2.0 * i, 2.0);
        }
        t.kernel(GEMM, 10.0, 40.0, 40.0);
        extra(&mut t);
        fix_of(&t, FindingId::ShortKernels)
    };
    let plain = short_kernels(&|_| {}).expect("a catalogued fix");
    assert!(plain.starts_with("fuse the short kernels"), "{plain}");
    let compiled = short_kernels(&|t| {
        t.kernel("triton_poi_fused_add_mul_0", 11.0, 80.0, 10.0);
    })
    .expect("a catalogued fix");
    assert!(compiled.contains("reduce-overhead") && compiled.contains("is compiled"));
    let graphed = short_kernels(&|t| {
        let g = t.call("cudaGraphLaunch", 12.0, 2.0);
        t.gpu("kernel", GEMM, 80.0, 10.0, 7, g);
    });
    assert_eq!(graphed, None);

    // A launch-bound gap in a script replaying graphs elsewhere: no "reduce-overhead" (graphs run).
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0);
    t.kernel(GEMM, 60.0, 65.0, 30.0);
    let g = t.call("cudaGraphLaunch", 96.0, 2.0);
    t.gpu("kernel", GEMM, 95.0, 10.0, 7, g);
    assert_eq!(fix_of(&t, FindingId::LaunchBoundIdle), None);

    // SIMT GEMMs beside a TF32 GEMM: TF32 is on already, so "allow_tf32" is no fix.
    let mut t = T::default();
    t.step(1, 0.0, 200.0);
    t.kernel(SGEMM, 1.0, 10.0, 60.0);
    t.kernel("ampere_tf32_s1688gemm_tf32_128x128_tn", 2.0, 70.0, 40.0);
    assert_eq!(fix_of(&t, FindingId::SimtGemm), None);
}

#[test]
fn exposed_comm_gets_the_data_parallel_wrappers_fix() {
    // The trace of `exposed_comm_is_comm_with_no_compute_beside_it`, under DDP's and FSDP's forward
    // annotations (the names `torch/nn/parallel/distributed.py` and
    // `torch/distributed/fsdp/fully_sharded_data_parallel.py` record), and under none.
    let exposed = |wrapper: Option<&str>| {
        let mut t = T::default();
        t.step(1, 0.0, 100.0);
        if let Some(w) = wrapper {
            t.annotation(w, 0.5, 5.0);
        }
        t.kernel(GEMM, 1.0, 10.0, 40.0);
        let c = t.call("cudaLaunchKernel", 2.0, 1.0);
        t.gpu("kernel", NCCL, 30.0, 50.0, 8, c);
        fix_of(&t, FindingId::ExposedComm)
    };
    let ddp = exposed(Some("DistributedDataParallel.forward")).expect("DDP's fix");
    assert!(ddp.contains("bucket_cap_mb"), "{ddp}");
    let fsdp = exposed(Some("FullyShardedDataParallel.forward")).expect("FSDP's fix");
    assert!(fsdp.contains("BACKWARD_PRE"), "{fsdp}");
    // No wrapper named: tensor parallelism or an all-to-all look the same in kernel names.
    assert_eq!(exposed(None), None);
}

#[test]
fn between_steps_gets_the_loader_fix_only_where_the_loader_has_no_workers() {
    // The trace of `between_steps_is_the_gpu_idle_from_one_step_to_the_next`, with each step's batch
    // fetched by a worker-less DataLoader (the annotation `torch/utils/data/dataloader.py` records),
    // then by one with workers, then with no loader in the trace.
    let between = |loader: Option<&str>| {
        let mut t = T::default();
        for (n, lo) in [(1, 0.0), (2, 100.0), (3, 200.0)] {
            t.step(n, lo, lo + 90.0);
            if let Some(l) = loader {
                t.annotation(
                    &format!("enumerate(DataLoader)#{l}.__next__"),
                    lo + 0.5,
                    0.4,
                );
            }
            t.kernel(GEMM, lo + 1.0, lo + 30.0, 50.0);
        }
        fix_of(&t, FindingId::BetweenSteps)
    };
    let fix = between(Some("_SingleProcessDataLoaderIter")).expect("the loader's fix");
    assert!(fix.contains("num_workers>0"), "{fix}");
    assert_eq!(between(Some("_MultiProcessingDataLoaderIter")), None);
    assert_eq!(between(None), None);
}

/// A first step (marker `[0, 5090)`) copying `copies` × 100 µs host→device (`[100 + 100i, 200 + 100i)`,
/// 1 MB each, pageable, launched ahead) before its kernel `[3000, 3030)`, then the steady steps, each
/// also with `later` 100 µs copies of its own at +0.
fn setup_first(copies: u32, later: u32) -> T {
    let mut t = T::default();
    t.step(1, 0.0, 5090.0);
    let copy = |t: &mut T, launch: f64, at: f64| {
        let c = t.call("cudaMemcpyAsync", launch, 1.0);
        t.ev.push(format!(
            r#"{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":{at},"dur":100,"args":{{"device":0,"stream":7,"correlation":{c},"bytes":1000000}}}}"#
        ));
    };
    for i in 0..copies {
        copy(&mut t, 1.0 + f64::from(i), 100.0 + 100.0 * f64::from(i));
    }
    t.kernel(GEMM, 50.0, 3000.0, 30.0);
    steady_after(&mut t);
    for s in 1..4u32 {
        let b = 5000.0 + 90.0 * f64::from(s);
        for _ in 0..later {
            copy(&mut t, b + 0.5, b);
        }
    }
    t
}

#[test]
fn setup_code_inside_the_window_is_an_artefact_not_a_finding() {
    // 20 copies of 100 µs: 2000 µs host→device in the first step where the later steps copy nothing
    // (median 0): over 10 × 0 and by ≥ 1 ms. Ranked, they would be copies_in_step of 2000 µs (no kernel
    // beside them) and the first step's idle; left out, the trace is clean.
    let t = setup_first(20, 0);
    let d = one(&t);
    assert!(d.is_clean(), "{:?}", found(&d));
    let w: Vec<(TrustId, Vec<usize>)> =
        d.warnings.iter().map(|w| (w.id, w.steps.clone())).collect();
    assert_eq!(w, [(TrustId::SetupInWindow, vec![0])]);
    let e = &d.warnings[0].evidence;
    assert!(
        e.contains("copies 20 host→device (20000000 B) over 2000.000 µs")
            && e.contains("re-capture"),
        "{e}"
    );
    // The later steps' span only: step 2 [5100, …) to step 4's last kernel end 5270 + 100 = 5370.
    assert_eq!(d.traces[0].analysed_span_ns, (5370 - 5100) * US);

    // Copies every step makes (each later step copies one 100 µs batch at +0, the first step 20):
    // 2000 µs > 10 × 100 µs, still setup. With 5 in the first step, 500 µs ≤ 10 × 100: the step's own
    // batch copies, no artefact — and copies_in_step is reported where it stands.
    let d = one(&setup_first(20, 1));
    let ids: Vec<TrustId> = d.warnings.iter().map(|w| w.id).collect();
    assert_eq!(ids, [TrustId::SetupInWindow]);
    let d = one(&setup_first(5, 1));
    assert!(d.warnings.iter().all(|w| w.id != TrustId::SetupInWindow));
    assert!(
        d.findings.iter().any(|f| f.id == FindingId::CopiesInStep),
        "{:?}",
        found(&d)
    );

    // The CUDA context created inside the first step (a 150 ms `cuDevicePrimaryCtxRetain`), no copies.
    let mut t = T::default();
    t.step(1, 0.0, 5090.0);
    t.call("cuDevicePrimaryCtxRetain", 2.0, 150_000.0);
    t.kernel(GEMM, 1.0, 10.0, 30.0);
    steady_after(&mut t);
    let d = one(&t);
    let w: Vec<&str> = d.warnings.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(w, ["setup_in_window"], "{:?}", d.warnings);
    assert!(
        d.warnings[0]
            .evidence
            .contains("creates the device context (`cuDevicePrimaryCtxRetain`, 150000.000 µs)"),
        "{}",
        d.warnings[0].evidence
    );
}

/// TraceLens-style markers (`execute_N_context_…_generation_…`) are written by vLLM and by TraceLens's
/// patched SGLang alike (kineto_trace::step::pattern::TRACELENS_STEP), so they name no server: the
/// eager decode step of `graph_then_eager` under them gets no server's fix, until a frame of the
/// server's own code (vLLM's `execute_model`) says which.
#[test]
fn tracelens_markers_alone_name_no_server_for_its_fix() {
    let decode = "execute_4_context_0(sq0sk0sqsq0sqsk0)_generation_4(sq4sk400sqsq4sqsk400)";
    let build = |vllm_frame: bool| {
        let mut t = T::default();
        t.annotation(decode, 0.0, 90.0);
        let g = t.call("cudaGraphLaunch", 1.0, 5.0);
        t.gpu("kernel", GEMM, 10.0, 30.0, 7, g);
        t.gpu("kernel", GEMM, 40.0, 30.0, 7, g);
        t.annotation(decode, 90.0, 100.0);
        t.kernel(GEMM, 91.0, 70.0, 30.0);
        t.kernel(GEMM, 92.0, 110.0, 30.0);
        if vllm_frame {
            t.ev.push(
                r#"{"ph":"X","cat":"python_function","name":"vllm/v1/worker/gpu_model_runner.py(1234): execute_model","pid":1,"tid":1,"ts":0.5,"dur":189}"#
                    .to_string(),
            );
        }
        t
    };
    assert_eq!(fix_of(&build(false), FindingId::EagerSteps), None);
    let vllm = fix_of(&build(true), FindingId::EagerSteps).expect("vLLM's fix");
    assert!(vllm.contains("compilation_config"), "{vllm}");
}
