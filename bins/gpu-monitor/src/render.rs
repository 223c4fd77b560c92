//! The readable summary: `#`-prefixed lines, like `nvidia-smi dmon`'s headers.

use std::fmt::Write;

use gpu_monitor::{Coverage, GpuSummary, MonitorSummary, SourceEnd, Stat};
// Values from the GPUs, their tools or a recording (names, UUIDs, reasons) go through `esc`: a control
// character in one must not reach the terminal (the caller escapes the whole text again as a last guard).
use tool_io::terminal::escape as esc;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
}

fn stat_line(out: &mut String, name: &str, unit: &str, st: Option<Stat>) {
    let _ = match st {
        Some(s) => writeln!(
            out,
            "#   {name:<16}{unit:>4}  min {:>9.1}  median {:>9.1}  max {:>9.1}",
            s.min, s.median, s.max
        ),
        None => writeln!(out, "#   {name:<16}{unit:>4}  -"),
    };
}

pub(crate) fn readable(s: &MonitorSummary) -> String {
    let mut out = String::new();
    let backend = s
        .backend
        .map_or_else(|| "none".to_owned(), |b| b.to_string());
    let end = match &s.end {
        SourceEnd::Stopped => "stopped".to_owned(),
        SourceEnd::Exhausted => "replay finished".to_owned(),
        SourceEnd::Died { detail } => format!("source died: {}", esc(detail)),
        SourceEnd::NoBackend => "no backend".to_owned(),
        SourceEnd::Lost { detail } => format!("lost: {}", esc(detail)),
    };
    let _ = writeln!(
        out,
        "# gpu-monitor summary: backend {backend}, {:.1} s, {} samples, {end}",
        s.duration_s, s.n_samples
    );
    for r in &s.rejected {
        let _ = writeln!(out, "#   {} unavailable: {}", r.backend, esc(&r.reason));
    }
    coverage(&mut out, "", &s.coverage);
    for g in &s.gpus {
        gpu(&mut out, g);
    }
    let c = &s.monitor_cpu;
    let pct = |f: Option<f64>| f.map_or_else(|| "-".to_owned(), |f| format!("{:.3} %", f * 100.0));
    let _ = writeln!(
        out,
        "# monitor CPU: sampling thread {} s ({} µs/sample, {} of one core); nvidia-smi child {} s ({} of one core)",
        opt(c.sampling_thread_s, 4),
        opt(c.per_sample_us, 1),
        pct(c.fraction_of_one_core),
        opt(c.child_process_s, 3),
        pct(c.child_fraction_of_one_core),
    );
    if !s.counters.is_empty() {
        let list: Vec<String> = s.counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "# counters: {}", list.join(" "));
    }
    for n in &s.unavailable_fields {
        let _ = writeln!(
            out,
            "# gpu {} {} unavailable: {}",
            n.index,
            n.field,
            esc(&n.reason)
        );
    }
    for w in &s.warnings {
        let _ = writeln!(out, "# warning: {}", esc(w));
    }
    out
}

fn gpu(out: &mut String, g: &GpuSummary) {
    let _ = writeln!(
        out,
        "# gpu {} {}: {} samples",
        g.index,
        esc(g.uuid.as_deref().unwrap_or("?")),
        g.n_samples
    );
    stat_line(out, "clocks.sm", "MHz", g.stats.clocks_sm);
    if let Some(b) = g.stats.clocks_sm_busy {
        let _ = writeln!(
            out,
            "#   {:<16}{:>4}  min {:>9.1}  median {:>9.1}  max {:>9.1}  (n={}, utilization >= 10 %)",
            "clocks.sm_busy", "MHz", b.min, b.median, b.max, b.n
        );
    }
    stat_line(out, "clocks.mem", "MHz", g.stats.clocks_mem);
    stat_line(out, "temperature.gpu", "C", g.stats.temperature_gpu);
    stat_line(out, "power.draw", "W", g.stats.power_draw);
    stat_line(out, "power.limit", "W", g.power_limit);
    stat_line(out, "utilization.gpu", "%", g.stats.utilization_gpu);
    stat_line(out, "memory.used", "MiB", g.stats.memory_used);
    let reasons: Vec<String> = g
        .stats
        .throttle_reasons_seen
        .iter()
        .map(|r| {
            format!(
                "{r} ({}/{})",
                g.throttle_reason_samples.get(r).copied().unwrap_or(0),
                g.n_samples
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "#   throttle reasons seen: {}",
        if reasons.is_empty() {
            "none".into()
        } else {
            reasons.join(", ")
        }
    );
    if let Some(t) = &g.throttle_time_s {
        let _ = writeln!(
            out,
            "#   throttle time over {:.1} s: power {} s, thermal {} s, sync_boost {} s, board_limit {} s, low_utilization {} s, reliability {} s",
            t.span_s,
            opt(t.power, 3),
            opt(t.thermal, 3),
            opt(t.sync_boost, 3),
            opt(t.board_limit, 3),
            opt(t.low_utilization, 3),
            opt(t.reliability, 3)
        );
    }
    let _ = writeln!(
        out,
        "#   pstates seen: {}",
        if g.stats.pstates_seen.is_empty() {
            "none".into()
        } else {
            esc(&g.stats.pstates_seen.join(" ")).into_owned()
        }
    );
    let e = &g.energy;
    let verdict = match e.agrees {
        Some(true) => "agree".to_owned(),
        Some(false) => "DISAGREE".to_owned(),
        None => "not compared".to_owned(),
    };
    let _ = writeln!(
        out,
        "#   energy: counter {} J ({} W avg), integrated power.draw {} J ({} W avg): {verdict}{}",
        opt(e.counter_j, 1),
        opt(e.counter_avg_power_w, 1),
        opt(e.integrated_power_j, 1),
        opt(e.integrated_avg_power_w, 1),
        e.note
            .as_ref()
            .map(|n| format!(" ({})", esc(n)))
            .unwrap_or_default()
    );
    let i = &g.interval;
    let achieved = i.achieved_ms.map_or_else(
        || "-".to_owned(),
        |a| {
            format!(
                "median {:.1} (min {:.1}, max {:.1})",
                a.median, a.min, a.max
            )
        },
    );
    let _ = writeln!(
        out,
        "#   interval: requested {} ms, achieved {achieved} ms; gaps (> {:.0} ms): {}{}",
        i.requested_ms,
        i.gaps.threshold_ms,
        i.gaps.n,
        i.gaps
            .longest_ms
            .map(|l| format!(", longest {l:.0} ms"))
            .unwrap_or_default()
    );
    if !g.invalid_values.is_empty() {
        let list: Vec<String> = g
            .invalid_values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            out,
            "#   impossible readings (left out of the statistics): {}",
            list.join(" ")
        );
    }
    coverage(out, "  ", &g.coverage);
    for p in &g.processes_seen {
        let _ = writeln!(
            out,
            "#   process {} {} {} ({} MiB max)",
            p.pid,
            p.kind,
            esc(p.name.as_deref().unwrap_or("?")),
            opt(p.used_memory_mib, 0)
        );
    }
}

fn coverage(out: &mut String, indent: &str, c: &Coverage) {
    let pct = c
        .covered_fraction
        .map_or_else(|| "-".to_owned(), |f| format!("{:.1} %", f * 100.0));
    let _ = writeln!(
        out,
        "# {indent}coverage: {pct} of {:.1} s; readings {} … {} s; longest gap {} s{}",
        c.region_s,
        opt(c.first_sample_s, 2),
        opt(c.last_sample_s, 2),
        opt(c.longest_gap_s, 2),
        c.problem
            .as_ref()
            .map(|p| format!("; {p}"))
            .unwrap_or_default()
    );
}
