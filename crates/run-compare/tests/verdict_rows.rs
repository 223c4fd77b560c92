//! `kineto diff`'s verdict rows on hand-made budgets and kernel launches: phases never pooled, one window a
//! side judged by its kernels, kernel names paired across a library upgrade, and the gate over the rows.

#![allow(clippy::unwrap_used)]

use run_compare::budget::BudgetStep;
use run_compare::verdict::{Call, Method};
use run_compare::verdict_rows::{
    Comparability, GateOptions, GateRow, Gated, KernelLaunch, budget_verdicts, kernel_verdicts,
};

fn step(phase: Option<&str>, name: &str, span: f64) -> BudgetStep {
    BudgetStep {
        file: "t.json".into(),
        rank: Some(0),
        name: Some(name.into()),
        phase: phase.map(str::to_owned),
        span_us: Some(span),
        idle_us: Some(0.0),
        buckets: vec![("gemm".into(), span)],
    }
}

/// Steps of a phase, spans `base` + 0, 1, 2, …, k − 1 (a small, known spread), named `p#i`.
fn steps(phase: &str, k: usize, base: f64) -> Vec<BudgetStep> {
    (0..k)
        .map(|i| step(Some(phase), &format!("{phase}#{i}"), base + i as f64))
        .collect()
}

fn gate(pct: f64) -> GateOptions {
    GateOptions {
        fail_above: step_stats::Threshold::new(pct).unwrap(),
        allow_missing: false,
        allow_incomparable: false,
    }
}

#[test]
fn phases_are_compared_like_with_like_never_pooled() {
    // Old: 4 prefill steps of 1000–1003 µs and 4 decode steps of 100–103 µs; new: the same per phase but
    // 2 prefill and 12 decode steps. Pooled, the mean span falls from (4006 + 406) / 8 = 551.5 to
    // (2001 + 12 · 101.5 + …) / 14 ≈ 230: "faster" for nothing. Per phase, each mean moves by < 0.2 %.
    let mut old = steps("prefill", 4, 1000.0);
    old.extend(steps("decode", 4, 100.0));
    let mut new = steps("prefill", 2, 1000.0);
    new.extend((0..3).flat_map(|_| steps("decode", 4, 100.0)));
    // Step names repeat in new's decode: labelled by position, they are still 12 samples.
    let d = budget_verdicts(&old, &new, Method::default()).unwrap();
    let span: Vec<_> = d.rows.iter().filter(|r| r.metric == "step_time").collect();
    assert_eq!(span.len(), 2);
    assert_eq!(
        (span[0].phase.as_str(), span[1].phase.as_str()),
        ("prefill", "decode")
    );
    // prefill: old mean 1001.5 (n 4), new 1000.5 (n 2: too few for an interval).
    assert_eq!((span[0].judged.n_old, span[0].judged.n_new), (4, 2));
    assert_eq!(span[0].judged.verdict, Call::Inconclusive);
    // decode: 4 against 12 samples of 100–103, mean 101.5 both: Δ 0, interval inside ±2 %.
    assert_eq!((span[1].judged.n_old, span[1].judged.n_new), (4, 12));
    assert!(span[1].judged.delta_pct.unwrap().abs() < 1e-9);
    assert_eq!(span[1].judged.verdict, Call::Unchanged);
    // Step time first, then idle, then buckets.
    let metrics: Vec<&str> = d.rows.iter().map(|r| r.metric).collect();
    assert_eq!(
        metrics,
        ["step_time", "step_time", "idle", "idle", "bucket", "bucket"]
    );
    assert!(d.only_in_old.is_empty() && d.only_in_new.is_empty());
    assert_eq!(d.phases.len(), 2);
}

#[test]
fn one_window_a_side_is_judged_by_its_kernels() {
    // No step markers: one "(whole trace)" step a side; the new capture holds half the iterations
    // (span 500 against 1000): the step time must not read "faster".
    let whole = |span| vec![step(None, "(whole trace)", span)];
    let d = budget_verdicts(&whole(1000.0), &whole(500.0), Method::default()).unwrap();
    let span = &d.rows[0];
    assert_eq!(
        (span.metric, span.phase.as_str()),
        ("step_time", "unphased")
    );
    assert_eq!(span.judged.verdict, Call::Inconclusive);
    // Not gated: the window's time follows how much work it held, so no threshold fails it.
    assert!(!span.gated && !span.fails_above(0.0));
    assert!(
        d.rows
            .iter()
            .all(|r| !r.gated && r.judged.verdict == Call::Inconclusive)
    );
    assert!(
        span.judged
            .reasons
            .iter()
            .any(|r| r.contains("without step markers")),
        "{:?}",
        span.judged.reasons
    );
    // Kernels: a GEMM renamed by a cuBLAS upgrade (tile 128x64 → 64x64) taking 10, 10.1, 10.2 µs per launch
    // in both (10 rounds old, 5 new: the interval, ±0.5 %, lies inside ±2 %: unchanged); a softmax going from 20, 21, 22 to 30, 31.5, 33 (×1.5).
    let launches = |gemm: &str, soft: [f64; 3], times: usize| {
        let mut v = Vec::new();
        for _ in 0..times {
            for (i, d) in [10.0, 10.1, 10.2].into_iter().enumerate() {
                v.push(KernelLaunch {
                    phase: None,
                    name: gemm.into(),
                    dur_us: d,
                });
                v.push(KernelLaunch {
                    phase: None,
                    name: "softmax_kernel<float>".into(),
                    dur_us: soft[i],
                });
            }
        }
        v
    };
    let old = launches("volta_sgemm_128x64_nn", [20.0, 21.0, 22.0], 10);
    let new = launches("volta_sgemm_64x64_nn", [30.0, 31.5, 33.0], 5);
    let (rows, only_old, only_new) = kernel_verdicts(&old, &new, Method::default());
    assert!(
        only_old.is_empty() && only_new.is_empty(),
        "{only_old:?} {only_new:?}"
    );
    // Most time first: softmax (30 · 21 + 15 · 31.5 = 1102.5) before the GEMM (45 · 10.1 = 454.5).
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_deref().unwrap()).collect();
    assert_eq!(names, ["softmax_kernel", "volta_sgemm_#_nn"]);
    assert_eq!(rows[0].judged.verdict, Call::Slower);
    assert!((rows[0].judged.delta_pct.unwrap() - 50.0).abs() < 1e-9);
    assert_eq!((rows[0].judged.n_old, rows[0].judged.n_new), (30, 15));
    assert_eq!(rows[1].judged.verdict, Call::Unchanged);
}

#[test]
fn the_gate_fails_a_significant_slowdown_an_incomparable_run_and_nothing() {
    // Decode 100–103 → 120–123 µs (+19.7 %, 6 steps a side): slower, significant.
    let d = budget_verdicts(
        &steps("decode", 6, 100.0),
        &steps("decode", 6, 120.0),
        Method::default(),
    )
    .unwrap();
    let span = &d.rows[0];
    assert_eq!(span.judged.verdict, Call::Slower);
    let ok = Comparability {
        comparable: true,
        reasons: vec![],
    };
    // Δ = 20 / 102.5 = +19.51 %: fails at 19, passes at 20.
    assert!((span.judged.delta_pct.unwrap() - 2000.0 / 102.5).abs() < 1e-9);
    let at = |pct| Gated::judge(gate(pct), &d.rows, &d.only_in_old, &d.only_in_new, &ok);
    assert!(!at(19.0).passed() && at(19.0).line().contains("decode step_time"));
    assert!(at(20.0).passed(), "{}", at(20.0).line());
    // Faster never fails the gate.
    let f = budget_verdicts(
        &steps("decode", 6, 120.0),
        &steps("decode", 6, 100.0),
        Method::default(),
    )
    .unwrap();
    assert!(Gated::judge(gate(1.0), &f.rows, &[], &[], &ok).passed());
    // Not comparable: fails unless allowed, saying why.
    let throttled = Comparability {
        comparable: false,
        reasons: vec!["NEW: thermal slowdown during the run".into()],
    };
    let g = Gated::judge(gate(50.0), &f.rows, &[], &[], &throttled);
    assert!(
        !g.passed() && g.line().contains("thermal slowdown"),
        "{}",
        g.line()
    );
    // Its row of `--json`: the one reason as a list, and the line built from it.
    let why = "the runs are not comparable: NEW: thermal slowdown during the run (unless that is allowed)";
    assert_eq!(
        g.row(),
        GateRow {
            kind: "gate",
            passed: false,
            line: format!("FAIL: {why}"),
            reasons: vec![why.to_owned()],
        }
    );
    let allow = GateOptions {
        allow_incomparable: true,
        ..gate(50.0)
    };
    assert!(Gated::judge(allow, &f.rows, &[], &[], &throttled).passed());
    // Passing: no reason, the PASS line (the one step time compared).
    assert_eq!(
        Gated::judge(allow, &f.rows, &[], &[], &throttled).row(),
        GateRow {
            kind: "gate",
            passed: true,
            line: "PASS: 1 step time(s) compared, no row significantly slower by more than 50 %"
                .into(),
            reasons: vec![],
        }
    );
    // Nothing compared: fails, whatever is allowed.
    let none = GateOptions {
        allow_missing: true,
        allow_incomparable: true,
        ..gate(50.0)
    };
    // Rows but no step time (only kernels or buckets matched): the runs share no rank; nothing at all: alike.
    let no_step: Vec<_> = f
        .rows
        .iter()
        .filter(|r| r.metric == "bucket")
        .cloned()
        .collect();
    assert!(!no_step.is_empty());
    let g = Gated::judge(none, &no_step, &["rank 1".into()], &[], &ok);
    assert!(
        !g.passed() && g.line().contains("nothing in common"),
        "{}",
        g.line()
    );
    let g = Gated::judge(none, &[], &["rank 1".into()], &[], &ok);
    assert!(
        !g.passed() && g.line().contains("nothing in common"),
        "{}",
        g.line()
    );
}
