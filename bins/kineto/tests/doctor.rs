//! `kineto doctor` end to end: the JSON keys, every finding on real traces cross-checked against the
//! listings that measure the same thing (`budget`, `ranks`, `steps`, `kernels`, `roofline`), a clean
//! synthetic trace, the HTML page, bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] functions

use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::{code_and_text, corpus};

/// A file or folder of the shared corpus (for tests ignored without it: `tests/corpus/build.rs`).
fn shared(rel: &str) -> PathBuf {
    corpus::corpus_file(rel)
}

/// `kineto ARGS PATHS`: its exit code, stdout and stderr.
fn kineto(args: &[&str], paths: &[&Path]) -> (i32, String, String) {
    code_and_text(common::kineto().args(args).args(paths))
}

/// The JSON lines of a listing that must succeed.
fn rows(args: &[&str], paths: &[&Path]) -> Vec<Value> {
    let (code, out, err) = kineto(args, paths);
    assert_eq!(code, 0, "kineto {args:?}: {err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn i(v: &Value, k: &str) -> i64 {
    v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn findings<'v>(rows: &'v [Value], id: &str) -> Vec<&'v Value> {
    rows.iter().filter(|r| r["finding"] == id).collect()
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn json_rows_carry_the_documented_keys_ranked_by_time_at_stake() {
    let p = shared("hta/nccl_parser_config/nccl_data.json.gz");
    let r = rows(&["doctor", "--json"], &[&p]);
    assert!(!r.is_empty());
    for row in &r {
        for k in [
            "kind",
            "finding",
            "file",
            "rank",
            "origin",
            "time_at_stake_us",
            "time_at_stake_ns",
            "share_pct",
            "steps",
            "step_list",
            "evidence",
            "rule",
            "next",
        ] {
            assert!(row.get(k).is_some(), "{k} missing in {row}");
        }
    }
    let ranked: Vec<i64> = r
        .iter()
        .filter(|x| x["kind"] == "finding")
        .map(|x| i(x, "time_at_stake_ns"))
        .collect();
    assert!(ranked.windows(2).all(|w| w[0] >= w[1]), "{ranked:?}");
    // Trust warnings come after every finding.
    let first_trust = r.iter().position(|x| x["kind"] == "trust");
    if let Some(t) = first_trust {
        assert!(r[t..].iter().all(|x| x["kind"] == "trust"));
    }
    for x in r.iter().filter(|x| x["kind"] == "finding") {
        let ns = i(x, "time_at_stake_ns");
        assert_eq!(x["time_at_stake_us"].as_f64().unwrap(), ns as f64 / 1000.0);
        assert!(x["next"].as_str().unwrap().starts_with("kineto "));
        assert!(x["share_pct"].as_f64().unwrap() >= 1.0);
    }
}

/// `exposed_comm` is Σ `comm_exposed_ns` of `kineto budget`, trace by trace.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn exposed_comm_equals_the_budgets_comm_exposed() {
    let p = shared("hta/nccl_parser_config/nccl_data.json.gz");
    let budget = rows(&["budget", "--json"], &[&p]);
    let want: i64 = budget.iter().map(|b| i(b, "comm_exposed_ns")).sum();
    assert!(want > 0, "the trace has exposed communication");
    let d = rows(&["doctor", "--json"], &[&p]);
    let f = findings(&d, "exposed_comm");
    assert_eq!(f.len(), 1, "{d:?}");
    assert_eq!(i(f[0], "time_at_stake_ns"), want);
    // Its steps are the budget's steps with exposed communication.
    let steps = budget
        .iter()
        .filter(|b| i(b, "comm_exposed_ns") > 0)
        .count();
    assert_eq!(i(f[0], "steps") as usize, steps);
}

/// Stragglers over the 8 DLRM ranks: each rank's Σ (span − median) from `kineto steps`' spans, worked
/// here, and the largest excess in each step is `kineto ranks`' `max_over_median_ns` of `span`.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn stragglers_match_steps_and_ranks() {
    let dir = "param/dlrm_kineto";
    let d = shared(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("worker"))
        .collect();
    files.sort();
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let steps = rows(&["steps", "--json"], &paths);
    // (step number or position) → [(rank, span)].
    let mut by: std::collections::BTreeMap<String, Vec<(u64, i64)>> = Default::default();
    let mut pos: std::collections::BTreeMap<u64, usize> = Default::default();
    for s in &steps {
        let rank = s["rank"].as_u64().unwrap();
        let p = pos.entry(rank).or_default();
        let key = s["step_number"]
            .as_u64()
            .map_or_else(|| format!("#{p}"), |n| n.to_string());
        *p += 1;
        by.entry(key).or_default().push((rank, i(s, "span_ns")));
    }
    let mut want: std::collections::BTreeMap<u64, i64> = Default::default();
    let mut worst_per_step = Vec::new();
    for v in by.values().filter(|v| v.len() >= 2) {
        let mut spans: Vec<i64> = v.iter().map(|x| x.1).collect();
        spans.sort_unstable();
        let n = spans.len();
        let twice = if n % 2 == 1 {
            2 * spans[n / 2]
        } else {
            spans[n / 2 - 1] + spans[n / 2]
        };
        let mut worst = 0.0f64;
        for &(rank, span) in v {
            let over = (2 * span - twice) / 2;
            if over > 0 {
                *want.entry(rank).or_default() += over;
            }
            worst = worst.max(span as f64 - twice as f64 / 2.0);
        }
        worst_per_step.push(worst);
    }
    let ranks = rows(&["ranks", "--json"], &paths);
    let mut from_ranks: Vec<f64> = ranks
        .iter()
        .filter(|r| r["quantity"] == "span" && r["ranks"].as_u64().unwrap() >= 2)
        .map(|r| r["max_over_median_ns"].as_f64().unwrap())
        .collect();
    from_ranks.sort_by(f64::total_cmp);
    worst_per_step.sort_by(f64::total_cmp);
    assert_eq!(from_ranks, worst_per_step);

    let d = rows(&["doctor", "--json"], &paths);
    let got: std::collections::BTreeMap<u64, i64> = findings(&d, "straggler")
        .iter()
        .map(|f| (f["rank"].as_u64().unwrap(), i(f, "time_at_stake_ns")))
        .collect();
    assert!(!got.is_empty(), "8 ranks of one run have a straggler");
    // Every reported straggler has the worked value; unreported ones are under the 1 % floor.
    for (rank, ns) in &got {
        assert_eq!(Some(ns), want.get(rank), "rank {rank}");
    }
    for (rank, ns) in &want {
        if !got.contains_key(rank) {
            let mine = || steps.iter().filter(|s| s["rank"].as_u64() == Some(*rank));
            let lo = mine().filter_map(|s| s["lo_ns"].as_i64()).min().unwrap();
            let hi = mine().filter_map(|s| s["hi_ns"].as_i64()).max().unwrap();
            assert!(
                100.0 * (*ns as f64) / ((hi - lo) as f64) < 1.0,
                "rank {rank}"
            );
        }
    }
}

/// `short_kernels` is Σ dur of the kernels `kineto kernels` lists in a step, launched by a call that is
/// not a graph launch, under 5 µs.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn short_kernels_match_the_kernel_listing() {
    let p = shared("hta/negative_queue_length_values_check/rank0.json.gz");
    let ks = rows(&["kernels", "--json"], &[&p]);
    let short: Vec<&Value> = ks
        .iter()
        .filter(|k| {
            !k["step"].is_null()
                && k["launch"]
                    .as_str()
                    .is_some_and(|l| !l.contains("GraphLaunch"))
                && i(k, "dur_ns") < 5000
        })
        .collect();
    let want: i64 = short.iter().map(|k| i(k, "dur_ns")).sum();
    assert!(want > 0);
    let d = rows(&["doctor", "--json"], &[&p]);
    let f = findings(&d, "short_kernels");
    assert_eq!(f.len(), 1, "{d:?}");
    assert_eq!(i(f[0], "time_at_stake_ns"), want);
    let e = f[0]["evidence"].as_str().unwrap();
    assert!(e.starts_with(&format!("{} of ", short.len())), "{e}");
}

/// The `` `name` ×count total µs `` items of an evidence line's list after `after`.
fn named_items(evidence: &str, after: &str) -> Vec<(String, i64, f64)> {
    let list = &evidence[evidence.find(after).expect("the list") + after.len()..];
    // `a` ×1 2.000 µs, `b` ×3 4.000 µs → ["", a, " ×1 2.000 µs, ", b, " ×3 4.000 µs"].
    let parts: Vec<&str> = list.split('`').collect();
    (1..parts.len())
        .step_by(2)
        .map(|k| {
            let tail = parts[k + 1].trim().trim_end_matches(',');
            let (count, total) = tail
                .trim_start_matches('×')
                .split_once(' ')
                .expect("×count total");
            let total = total.trim_end_matches(" µs").parse().expect("µs");
            (parts[k].to_string(), count.parse().expect("count"), total)
        })
        .collect()
}

/// `short_kernels` against `kineto top --per-step` on the 8 DLRM ranks (no graph launches, every kernel
/// linked to its launch: so every kernel of a step is eager, which the finding's "of M eagerly launched"
/// is checked to equal top's Σ count). Top groups kernels by name with count, total, min and max per step,
/// so it cannot give the finding's Σ exactly when a name has kernels on both sides of the 5 µs threshold;
/// what it gives is checked:
/// - a name whose every row in the finding's steps has max < 5 µs is all short: its evidence count and
///   total are top's Σ count and Σ total over those steps, exactly;
/// - a name with longer kernels too: evidence count < top's count and top's total ≥ evidence total +
///   5 µs × (top's count − evidence count) (each kernel not counted lasts 5 µs at least);
/// - over all names: Σ count and Σ total of names with max < 5 µs ≤ the finding's ≤ those of names with
///   min < 5 µs, and the latter's Σ total ≥ the finding's total + 5 µs × the kernels it leaves out.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn short_kernels_match_top_per_step() {
    let dir = shared("param/dlrm_kineto");
    let d = rows(&["doctor", "--json"], &[&dir]);
    let top = rows(&["top", "--per-step", "-n", "0", "--json"], &[&dir]);
    let f = findings(&d, "short_kernels");
    assert_eq!(f.len(), 8, "one per rank: {f:?}");
    const SHORT: i64 = 5000;
    let (mut exact, mut bounded) = (0, 0);
    for f in f {
        let file = f["file"].as_str().unwrap();
        let steps: Vec<i64> = f["step_list"]
            .as_str()
            .unwrap()
            .split(',')
            .map(|s| s.parse().unwrap())
            .collect();
        let rows: Vec<&Value> = top
            .iter()
            .filter(|r| r["file"] == file && steps.contains(&i(r, "step")))
            .collect();
        let e = f["evidence"].as_str().unwrap();
        // "{count} of {eager} eagerly launched kernels in steps run under 5.000 µs, Σ {total} µs …".
        let words: Vec<&str> = e.split(' ').collect();
        let count: i64 = words[0].parse().unwrap();
        let eager: i64 = words[2].parse().unwrap();
        let all: i64 = rows.iter().map(|r| i(r, "count")).sum();
        assert_eq!(eager, all, "{file}: every kernel of its steps is eager");
        let total = i(f, "time_at_stake_ns");
        let sum = |pick: &dyn Fn(&Value) -> bool, k: &str| -> i64 {
            rows.iter().filter(|r| pick(r)).map(|r| i(r, k)).sum()
        };
        let all_short = |r: &Value| i(r, "max_ns") < SHORT;
        let some_short = |r: &Value| i(r, "min_ns") < SHORT;
        let (lo_n, lo_t) = (sum(&all_short, "count"), sum(&all_short, "total_ns"));
        let (hi_n, hi_t) = (sum(&some_short, "count"), sum(&some_short, "total_ns"));
        assert!(
            lo_n <= count && count <= hi_n,
            "{file}: {lo_n} ≤ {count} ≤ {hi_n}"
        );
        assert!(
            lo_t <= total && total <= hi_t,
            "{file}: {lo_t} ≤ {total} ≤ {hi_t}"
        );
        assert!(hi_t >= total + SHORT * (hi_n - count), "{file}");
        let named = named_items(e, "most: ");
        assert_eq!(named.len(), 3, "{e}");
        for (name, c, us) in named {
            let of: Vec<&&Value> = rows.iter().filter(|r| r["name"] == name.as_str()).collect();
            let (n, t) = (
                of.iter().map(|r| i(r, "count")).sum::<i64>(),
                of.iter().map(|r| i(r, "total_ns")).sum::<i64>(),
            );
            let ns = (us * 1000.0).round() as i64;
            if of.iter().all(|r| all_short(r)) {
                assert_eq!((c, ns), (n, t), "{file}: {name}");
                exact += 1;
            } else {
                assert!(c < n && t >= ns + SHORT * (n - c), "{file}: {name}");
                bounded += 1;
            }
        }
    }
    // Both kinds of name occur, so neither check is vacuous.
    assert!(exact > 0 && bounded > 0, "{exact} exact, {bounded} bounded");
}

/// The idle rules are parts of the budgets' idle: launch-bound + sync-blocked ≤ Σ idle of the steps,
/// between-steps ≤ the analysed span − Σ step spans.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn idle_findings_fit_in_the_budgets_idle() {
    for rel in [
        "hta/negative_queue_length_values_check/rank0.json.gz",
        "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        "hta/trace_diff/test/test.json.gz",
    ] {
        let p = shared(rel);
        let budget = rows(&["budget", "--json"], &[&p]);
        let idle: i64 = budget.iter().map(|b| i(b, "idle_ns")).sum();
        let d = rows(&["doctor", "--json"], &[&p]);
        let inside: i64 = d
            .iter()
            .filter(|r| r["finding"] == "launch_bound_idle" || r["finding"] == "sync_blocked_idle")
            .map(|r| i(r, "time_at_stake_ns"))
            .sum();
        assert!(inside <= idle, "{rel}: {inside} > {idle}");
        let lo = budget
            .iter()
            .filter_map(|b| b["lo_ns"].as_i64())
            .min()
            .unwrap();
        let hi = budget
            .iter()
            .filter_map(|b| b["hi_ns"].as_i64())
            .max()
            .unwrap();
        let spans: i64 = budget.iter().map(|b| i(b, "span_ns")).sum();
        for f in findings(&d, "between_steps") {
            assert!(i(f, "time_at_stake_ns") <= (hi - lo) - spans, "{rel}");
        }
    }
}

/// With `--model`, `below_roofline`'s time at stake is span − the time the binding roof allows, from
/// `kineto roofline`'s own row (bytes at the peak bandwidth, FLOPs at the peak rate).
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn below_roofline_matches_the_roofline_row() {
    let trace = shared("serving/vllm_decode_full/graph_execution.json.gz");
    let model = ["--model", "testdata/models/gpt-oss-20b.json"];
    let roof = rows(&[&["roofline", "--json"][..], &model].concat(), &[&trace]);
    let d = rows(&[&["doctor", "--json"][..], &model].concat(), &[&trace]);
    let mut want = 0i64;
    for r in &roof {
        let span = i(r, "span_ns") as f64;
        let mem = r["bytes_total"].as_f64().unwrap() / r["peak_gbps"].as_f64().unwrap();
        let compute =
            r["flops_total"].as_f64().unwrap() / (r["peak_tflops"].as_f64().unwrap() * 1e3);
        let allowed = mem.max(compute);
        if 100.0 * allowed / span < 50.0 {
            want += (span - allowed).floor() as i64;
        }
    }
    let f = findings(&d, "below_roofline");
    if want == 0 {
        assert!(f.is_empty(), "{f:?}");
    } else {
        assert_eq!(f.len(), 1, "{d:?}");
        assert_eq!(i(f[0], "time_at_stake_ns"), want);
        assert_eq!(f[0]["origin"], "ESTIMATED");
    }
    // Without the model, no roofline finding.
    let plain = rows(&["doctor", "--json"], &[&trace]);
    assert!(findings(&plain, "below_roofline").is_empty());
}

#[test]
fn a_clean_trace_says_so_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("clean.json");
    // Two steps, each two 30 µs kernels launched ahead, back to back.
    let mut ev = Vec::new();
    for s in 0..2 {
        let b = 60 * s;
        ev.push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{s}","pid":1,"tid":1,"ts":{b},"dur":60}}"#
        ));
        for k in 0..2 {
            let c = 10 * s + k + 1;
            ev.push(format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":1,"args":{{"correlation":{c}}}}}"#,
                b + 1 + k
            ));
            ev.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n","pid":0,"tid":7,"ts":{},"dur":30,"args":{{"device":0,"stream":7,"correlation":{c}}}}}"#,
                b + 10 + 30 * k
            ));
        }
    }
    std::fs::write(&p, format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","))).unwrap();
    let (code, out, err) = kineto(&["doctor"], &[&p]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0 findings, 0 trust warnings"), "{out}");
    assert!(
        out.contains("no finding above the rules' thresholds"),
        "{out}"
    );
    let (code, out, err) = kineto(&["doctor", "--json"], &[&p]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("no finding"), "{err}");
    let (code, out, _) = kineto(&["doctor", "--csv"], &[&p]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("kind,finding,rank,origin,time_at_stake_us,share_pct,"));
}

#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn text_and_html_show_the_findings() {
    let p = shared("hta/nccl_parser_config/nccl_data.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("doctor.html");
    let (code, out, err) = kineto(&["doctor", "--html", html.to_str().unwrap()], &[&p]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("exposed_comm"), "{out}");
    assert!(out.contains("→ kineto budget"), "{out}");
    // The page's order per finding — headline, share bar, fix, evidence, next — within 120 columns,
    // kernel signatures shortened (the full ones are in --json).
    for l in out.lines() {
        assert!(
            l.chars().count() <= 120,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("no {s:?} in {out}"));
    let head = at("1. launch_bound_idle: ");
    assert!(
        head < at("   [#") && at("   [#") < at("   fix: ") && at("   fix: ") < at("   evidence: ")
    );
    assert!(at("   evidence: ") < at("   → kineto"));
    assert!(
        out.contains("`at::native::vectorized_elementwise_kernel<…>`"),
        "{out}"
    );
    assert!(!out.contains("void at::native"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("What to fix first"));
    assert!(page.contains("exposed_comm"));
    // Refused a second time without --overwrite.
    let (code, _, err) = kineto(&["doctor", "--html", html.to_str().unwrap()], &[&p]);
    assert_eq!(code, 2);
    assert!(err.contains("--overwrite"), "{err}");
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"traceEvents":[{"ph":"X","cat":"kernel","#).unwrap();
    let (code, _, err) = kineto(&["doctor"], &[&bad]);
    assert_eq!(code, 1);
    assert!(err.contains("bad.json"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let (code, _, err) = kineto(&["doctor", "--tp", "2"], &[&bad]);
    assert_eq!(code, 2);
    assert!(err.contains("--model"), "{err}");
    let missing = dir.path().join("none.json");
    let (code, _, err) = kineto(&["doctor"], &[&missing]);
    assert_ne!(code, 0);
    assert!(err.contains("none.json"), "{err}");
    let (code, _, err) = kineto(&["doctor", "--model", missing.to_str().unwrap()], &[&bad]);
    assert_eq!(code, 2);
    assert!(err.contains("none.json"), "{err}");
}

/// A real `with_stack` trace (vLLM's graph capture of gpt-oss, ROCm, Triton kernels): the launch-bound
/// gaps name the Python lines that held the host, not only the ops around them. Each named frame must
/// be a `python_function` event of the file (read here with serde_json, independently of the reader),
/// a line of source (`file.py(N): fn`), never CPython's own (`<built-in …>`), and the shares at most
/// 100 % in all.
#[test]
#[cfg_attr(corpus_absent, ignore = "needs ../shared/traces (the shared corpus)")]
fn launch_bound_gaps_name_the_python_lines_of_a_with_stack_trace() {
    use std::io::Read;
    let trace = shared(
        "serving/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&trace).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let frames: std::collections::HashSet<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "python_function")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(frames.len() > 100, "{}", frames.len());
    let d = rows(&["doctor", "--json"], &[&trace]);
    let f = findings(&d, "launch_bound_idle");
    assert_eq!(f.len(), 1, "{d:?}");
    let e = f[0]["evidence"].as_str().unwrap();
    let host = e
        .split("the host during them (launching thread): ")
        .nth(1)
        .unwrap_or_else(|| panic!("no host named: {e}"));
    let named: Vec<(&str, f64)> = host
        .split("%, ")
        .map(|item| {
            let (name, pct) = item.trim_end_matches(" %").rsplit_once("` ").unwrap();
            (name.trim_start_matches('`'), pct.trim().parse().unwrap())
        })
        .collect();
    assert!(!named.is_empty());
    let lines: Vec<&str> = named
        .iter()
        .map(|n| n.0)
        .filter(|n| frames.contains(n))
        .collect();
    assert!(!lines.is_empty(), "no Python frame named: {host}");
    for n in &lines {
        assert!(n.contains(".py(") && !n.starts_with('<'), "{n}");
    }
    assert!(named.iter().map(|n| n.1).sum::<f64>() <= 100.05, "{host}");
}
