//! MonitorSummary arithmetic, checked by hand on small inputs.

// Helpers outside #[test] functions fail the test that calls them, as the tests themselves do.
#![allow(clippy::expect_used)]

use gpu_monitor::{GAP_FACTOR, Recording, Sample, Timestamps, ViolationTimes};
use proptest::prelude::*;

fn sample(t_s: f64, index: u32, sm: Option<f64>, util: Option<f64>) -> Sample {
    let mut s = Sample::empty(t_s, index);
    s.clocks_sm = sm;
    s.utilization_gpu = util;
    s
}

#[test]
fn median_of_odd_and_even_counts() {
    let odd: Vec<Sample> = [300.0, 100.0, 200.0]
        .iter()
        .enumerate()
        .map(|(i, v)| sample(i as f64, 0, Some(*v), None))
        .collect();
    let g = &Recording::from_samples(1000, Timestamps::Recorded, odd)
        .summary()
        .gpus[0];
    let st = g.stats.clocks_sm.expect("stat");
    assert_eq!((st.min, st.median, st.max), (100.0, 200.0, 300.0));

    let even: Vec<Sample> = [400.0, 100.0, 300.0, 200.0]
        .iter()
        .enumerate()
        .map(|(i, v)| sample(i as f64, 0, Some(*v), None))
        .collect();
    let g = &Recording::from_samples(1000, Timestamps::Recorded, even)
        .summary()
        .gpus[0];
    let st = g.stats.clocks_sm.expect("stat");
    assert_eq!((st.min, st.median, st.max), (100.0, 250.0, 400.0));
}

#[test]
fn busy_filter_is_at_or_above_ten_percent() {
    let samples = vec![
        sample(0.0, 0, Some(300.0), Some(0.0)),
        sample(1.0, 0, Some(1000.0), Some(9.99)),
        sample(2.0, 0, Some(1900.0), Some(10.0)),
        sample(3.0, 0, Some(1800.0), Some(100.0)),
        sample(4.0, 0, Some(1700.0), None),
        sample(5.0, 0, None, Some(100.0)),
    ];
    let g = &Recording::from_samples(1000, Timestamps::Recorded, samples)
        .summary()
        .gpus[0];
    let busy = g.stats.clocks_sm_busy.expect("busy");
    assert_eq!(
        (busy.n, busy.min, busy.median, busy.max),
        (2, 1800.0, 1850.0, 1900.0)
    );
    assert_eq!(g.stats.clocks_sm.map(|s| s.min), Some(300.0));
    assert_eq!(g.null_values.get("clocks.sm"), Some(&1));
    assert_eq!(g.null_values.get("utilization.gpu"), Some(&1));
}

#[test]
fn empty_input_gives_nulls() {
    let s = Recording::from_samples(500, Timestamps::Recorded, Vec::new()).summary();
    assert_eq!(s.n_samples, 0);
    assert!(s.gpus.is_empty());
    let only_nulls = vec![Sample::empty(0.0, 3)];
    let s = Recording::from_samples(500, Timestamps::Recorded, only_nulls).summary();
    let g = &s.gpus[0];
    assert_eq!(g.n_samples, 1);
    assert_eq!(g.stats.clocks_sm, None);
    assert_eq!(g.stats.clocks_sm_busy, None);
    assert_eq!(g.energy.agrees, None);
    assert_eq!(g.interval.achieved_ms, None);
    assert!(g.stats.throttle_reasons_seen.is_empty() && g.stats.pstates_seen.is_empty());
    let v = serde_json::to_value(g).expect("json");
    assert!(
        v["clocks.sm"].is_null() && v["clocks.sm_busy"].is_null() && v["throttle_time_s"].is_null()
    );
}

#[test]
fn seed_key_names_are_kept() {
    let mut s = sample(0.0, 0, Some(1000.0), Some(50.0));
    s.pstate = Some("P0".into());
    s.throttle_mask = Some(0x4);
    let v =
        serde_json::to_value(Recording::from_samples(500, Timestamps::Recorded, vec![s]).summary())
            .expect("json");
    let g = &v["gpus"][0];
    for key in [
        "n_samples",
        "clocks.sm",
        "clocks.mem",
        "temperature.gpu",
        "power.draw",
        "utilization.gpu",
        "memory.used",
        "clocks.sm_busy",
        "throttle_reasons_seen",
        "pstates_seen",
    ] {
        assert!(g.get(key).is_some(), "missing {key}");
    }
    assert_eq!(g["clocks.sm"]["median"], 1000.0);
    assert_eq!(g["clocks.sm_busy"]["n"], 1);
    assert_eq!(g["throttle_reasons_seen"][0], "sw_power_cap");
    assert_eq!(v["n_samples"], 1);
}

#[test]
fn gaps_are_intervals_over_twice_the_request() {
    // Requested 100 ms; intervals 100, 100, 201 (gap), 200 (not a gap: not over 2×), 500 (gap).
    let times = [0.0, 0.1, 0.2, 0.401, 0.601, 1.101];
    let samples: Vec<Sample> = times
        .iter()
        .map(|t| sample(*t, 0, Some(1.0), None))
        .collect();
    let g = &Recording::from_samples(100, Timestamps::HostSampled, samples)
        .summary()
        .gpus[0];
    let i = &g.interval;
    assert_eq!(i.gaps.threshold_ms, GAP_FACTOR * 100.0);
    assert_eq!(i.gaps.n, 2);
    let longest = i.gaps.longest_ms.expect("longest");
    assert!((longest - 500.0).abs() < 1e-6, "{longest}");
    assert!((i.gaps.total_ms - 701.0).abs() < 1e-6);
    let a = i.achieved_ms.expect("achieved");
    assert!((a.median - 200.0).abs() < 1e-6 && (a.min - 100.0).abs() < 1e-6);
    assert!((i.mean_ms.expect("mean") - 220.2).abs() < 1e-6);
}

#[test]
fn energy_check_needs_enough_span() {
    let mut a = sample(0.0, 0, None, None);
    let mut b = sample(0.5, 0, None, None);
    a.energy_mj = Some(1000);
    b.energy_mj = Some(2000);
    a.power_draw = Some(2.0);
    b.power_draw = Some(2.0);
    let g = &Recording::from_samples(500, Timestamps::HostSampled, vec![a, b])
        .summary()
        .gpus[0];
    assert_eq!(g.energy.counter_j, Some(1.0));
    assert_eq!(g.energy.counter_avg_power_w, Some(2.0));
    assert_eq!(g.energy.agrees, None);
    assert!(
        g.energy
            .note
            .as_deref()
            .is_some_and(|n| n.contains("not compared"))
    );
}

#[test]
fn counters_that_go_backwards_are_not_differenced() {
    let mut a = sample(0.0, 0, None, None);
    let mut b = sample(2.0, 0, None, None);
    a.violation_ns = Some(ViolationTimes {
        power: Some(5_000_000_000),
        thermal: Some(0),
        ..Default::default()
    });
    b.violation_ns = Some(ViolationTimes {
        power: Some(1_000_000_000),
        thermal: Some(2_000_000_000),
        ..Default::default()
    });
    a.energy_mj = Some(10_000);
    b.energy_mj = Some(5_000);
    let g = &Recording::from_samples(500, Timestamps::HostSampled, vec![a, b])
        .summary()
        .gpus[0];
    let t = g.throttle_time_s.as_ref().expect("time");
    assert_eq!((t.power, t.thermal), (None, Some(2.0)));
    assert_eq!(g.energy.counter_j, None);
    assert!(
        g.energy
            .note
            .as_deref()
            .is_some_and(|n| n.contains("backwards"))
    );
}

/// 100 W for 2 s at 0.5 s readings: power 100 W each, the energy counter reset to 0 after 1 s.
fn reset_mid_run() -> Vec<Sample> {
    let mut v = Vec::new();
    for (i, e) in [1_000_000u64, 1_050_000, 1_100_000, 0, 50_000]
        .iter()
        .enumerate()
    {
        let mut s = sample(0.5 * i as f64, 0, None, None);
        s.power_draw = Some(100.0);
        s.energy_mj = Some(*e);
        v.push(s);
    }
    v
}

#[test]
fn an_energy_counter_reset_mid_run_gives_no_figure_and_does_not_blame_the_power_samples() {
    // Last − first (50 000 − 1 000 000) is negative; the same run from 1 000 000 to 1 000 005 after the
    // reset would be 0.005 J: neither is the energy, so there is none, with the reason.
    let mut samples = reset_mid_run();
    samples[4].energy_mj = Some(1_000_005);
    let g = &Recording::from_samples(500, Timestamps::HostSampled, samples)
        .summary()
        .gpus[0];
    assert_eq!(g.energy.counter_j, None);
    assert_eq!(g.energy.agrees, None);
    let note = g.energy.note.as_deref().expect("a reason");
    assert!(
        note.contains("went backwards from 1100000 at 1.000 s to 0 at 1.500 s")
            && !note.contains("power samples"),
        "{note}"
    );
    // The power samples are still integrated: 100 W over 2 s.
    assert_eq!(g.energy.integrated_power_j, Some(200.0));
}

#[test]
fn every_counter_follows_one_rule_backwards_is_null_with_a_reason_impossible_is_left_out_and_counted()
 {
    let t = [0.0, 0.5, 1.0];
    let mut samples: Vec<Sample> = t.iter().map(|&t| sample(t, 0, None, None)).collect();
    // Energy: 2^63 mJ half a second in is 1.8e19 W (impossible); the other readings are 100 W.
    for (s, e) in samples.iter_mut().zip([0u64, 1 << 63, 100_000]) {
        s.energy_mj = Some(e);
        s.power_draw = Some(100.0);
    }
    // Power-capping time: 1.8e19 ns (5.8e11 s) in half a second (impossible), then 0.5 s; thermal backwards.
    for (s, (p, th)) in samples.iter_mut().zip([
        (0u64, 3_000_000_000u64),
        (18_000_000_000_000_000_000, 2_000_000_000),
        (500_000_000, 1_000_000_000),
    ]) {
        s.violation_ns = Some(ViolationTimes {
            power: Some(p),
            thermal: Some(th),
            ..Default::default()
        });
    }
    let g = &Recording::from_samples(500, Timestamps::HostSampled, samples)
        .summary()
        .gpus[0];
    // Energy over the two possible readings: 100 J in 1 s.
    assert_eq!(g.energy.counter_j, Some(100.0));
    assert_eq!(g.energy.counter_avg_power_w, Some(100.0));
    assert_eq!(g.invalid_values.get("energy_mj"), Some(&1));
    let th = g.throttle_time_s.as_ref().expect("counters were read");
    assert_eq!(th.power, Some(0.5));
    assert_eq!(g.invalid_values.get("violation_ns.power"), Some(&1));
    assert_eq!(th.thermal, None);
    assert!(
        th.reasons
            .get("thermal")
            .is_some_and(|r| r.contains("went backwards from 3000000000 at 0.000 s")),
        "{:?}",
        th.reasons
    );
    // The summary's JSON says so too.
    let v = serde_json::to_value(g).expect("json");
    assert!(v["throttle_time_s"]["reasons"]["thermal"].is_string());
    assert_eq!(v["invalid_values"]["violation_ns.power"], 1);
}

#[test]
fn pstates_sort_numerically() {
    let samples: Vec<Sample> = ["P12", "P0", "P2", "P8", "P0"]
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut s = sample(i as f64, 0, None, None);
            s.pstate = Some((*p).into());
            s
        })
        .collect();
    let g = &Recording::from_samples(500, Timestamps::Recorded, samples)
        .summary()
        .gpus[0];
    assert_eq!(g.stats.pstates_seen, vec!["P0", "P2", "P8", "P12"]);
}

fn finite_stat(v: &serde_json::Value) -> bool {
    v.is_null() || ["min", "median", "max"].iter().all(|k| v[k].is_number())
}

proptest! {
    // serde_json writes a non-finite f64 as null, so NaN would hide as a null where a number belongs: check
    // that every present statistic is a number and ordered.
    #[test]
    fn summaries_of_arbitrary_finite_samples_are_finite_and_ordered(
        values in proptest::collection::vec((0.0f64..1e4, proptest::option::of(0.0f64..100.0), proptest::option::of(0u64..1_000_000)), 0..40)
    ) {
        let samples: Vec<Sample> = values
            .iter()
            .enumerate()
            .map(|(i, (sm, util, e))| {
                let mut s = sample(i as f64 * 0.1, (i % 2) as u32, Some(*sm), *util);
                s.power_draw = Some(*sm / 10.0);
                s.energy_mj = e.map(|e| e * i as u64);
                s
            })
            .collect();
        let summary = Recording::from_samples(100, Timestamps::HostSampled, samples).summary();
        let v = serde_json::to_value(&summary).expect("json");
        for g in v["gpus"].as_array().expect("gpus") {
            for key in ["clocks.sm", "power.draw", "utilization.gpu", "clocks.sm_busy"] {
                prop_assert!(finite_stat(&g[key]), "{key}: {}", g[key]);
                if !g[key].is_null() {
                    let (lo, mid, hi) = (g[key]["min"].as_f64(), g[key]["median"].as_f64(), g[key]["max"].as_f64());
                    prop_assert!(lo <= mid && mid <= hi);
                }
            }
            prop_assert!(finite_stat(&g["interval"]["achieved_ms"]));
            if !g["energy"]["agrees"].is_null() {
                prop_assert!(g["energy"]["relative_difference"].is_number());
            }
        }
    }
}

#[test]
fn seed_keys_at_the_top_level_pool_every_gpu() {
    // Two GPUs, as the seed's single nvidia-smi stream saw them: a line per GPU per tick, pooled.
    let mut a = sample(0.0, 0, Some(1000.0), Some(50.0));
    a.pstate = Some("P2".into());
    a.throttle_mask = Some(0x4);
    let mut b = sample(0.0, 1, Some(2000.0), Some(5.0));
    b.pstate = Some("P0".into());
    b.throttle_mask = Some(0x1);
    let c = sample(1.0, 1, Some(1500.0), Some(90.0));
    let v = serde_json::to_value(
        Recording::from_samples(500, Timestamps::Recorded, vec![a, b, c]).summary(),
    )
    .expect("json");
    assert_eq!(v["n_samples"], 3);
    // Pooled SM clocks 1000, 2000, 1500: median 1500.
    assert_eq!(v["clocks.sm"]["median"], 1500.0);
    // Busy (≥ 10 %): 1000 and 1500.
    assert_eq!(v["clocks.sm_busy"]["n"], 2);
    assert_eq!(v["clocks.sm_busy"]["median"], 1250.0);
    assert_eq!(
        v["throttle_reasons_seen"],
        serde_json::json!(["gpu_idle", "sw_power_cap"])
    );
    assert_eq!(v["pstates_seen"], serde_json::json!(["P0", "P2"]));
    // Per GPU as well.
    assert_eq!(v["gpus"][1]["clocks.sm"]["median"], 1750.0);
}
