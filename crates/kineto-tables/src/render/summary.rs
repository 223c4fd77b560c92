//! `kineto summary`: a readable block per trace, or one JSON object per line.

use kineto_trace::summary::Summary;
use std::io::{self, Write};
use tool_io::terminal::escape;

/// Writes one summary.
pub fn write(w: &mut impl Write, s: &Summary, json: bool) -> io::Result<()> {
    if json {
        serde_json::to_writer(&mut *w, s).map_err(io::Error::from)?;
        return writeln!(w);
    }
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    writeln!(w, "{}", escape(&s.file))?;
    writeln!(
        w,
        "  sha256          {}",
        s.sha256.as_deref().unwrap_or("-")
    )?;
    writeln!(
        w,
        "  format          {}{}{}",
        s.format.title(),
        s.format_version
            .as_deref()
            .map_or(String::new(), |v| format!(" {}", escape(v))),
        s.producer
            .as_deref()
            .map_or(String::new(), |p| format!(" (written by {})", escape(p)))
    )?;
    writeln!(
        w,
        "  schema {}  rank {}  world_size {}",
        s.schema_version.map_or("-".to_string(), |v| v.to_string()),
        opt(s.rank),
        opt(s.world_size)
    )?;
    writeln!(
        w,
        "  events          {}   span {:.3} µs",
        s.events, s.span_us
    )?;
    writeln!(
        w,
        "  kernels         {}   sum {:.3} µs   union {:.3} µs   streams {}",
        s.kernels.count, s.kernels.sum_us, s.kernels.union_us, s.kernels.streams
    )?;
    writeln!(
        w,
        "  memcpy          {}   {} B   {:.3} µs     memset {}   {} B   {:.3} µs",
        s.memcpy.count,
        s.memcpy.bytes,
        s.memcpy.sum_us,
        s.memset.count,
        s.memset.bytes,
        s.memset.sum_us
    )?;
    for (kind, k) in &s.memcpy.by_kind {
        writeln!(
            w,
            "    {:<6} {:>8}   {:>14} B   {:>14.3} µs   {} GB/s",
            escape(kind),
            k.count,
            k.bytes,
            k.sum_us,
            k.gbps.map_or("-".to_string(), |g| format!("{g:.3}"))
        )?;
    }
    writeln!(
        w,
        "  runtime         {}   driver {}   graph launches {}   flows {}",
        s.runtime.count, s.driver.count, s.graph_launches, s.flows
    )?;
    writeln!(
        w,
        "  cpu_ops         {}   user annotations {}   gpu user annotations {}",
        s.cpu_ops, s.user_annotations, s.gpu_user_annotations
    )?;
    writeln!(w, "  profiler steps  {}", s.profiler_steps)?;
    let c = &s.capture;
    if let Some(m) = &c.graph_trace_mode {
        writeln!(
            w,
            "  cuda graphs     trace mode {}   whole-graph replays {} ({:.3} µs){}",
            escape(m),
            c.graph_replays,
            kineto_trace::ns_to_us(c.graph_replays_ns),
            if s.kernels_complete {
                ""
            } else {
                "   KERNELS INCOMPLETE: the replays' kernels were not recorded"
            }
        )?;
    }
    if let Some(o) = &c.queue_overruns {
        writeln!(
            w,
            "  queue overruns  {}   max {:.3} µs   Σ {:.3} µs (counted once in union and busy time)",
            o.count,
            kineto_trace::ns_to_us(o.max_ns),
            kineto_trace::ns_to_us(o.sum_ns)
        )?;
    }
    for n in &c.notes {
        writeln!(w, "  note            {}", escape(n))?;
    }
    if let Some(sv) = &s.salvage {
        writeln!(
            w,
            "  SALVAGED        cut at byte {}: {}",
            sv.cut_offset,
            escape(&sv.reason)
        )?;
    }
    if s.warnings_total > 0 {
        writeln!(w, "  warnings        {}", s.warnings_total)?;
        for x in s.warnings.iter().take(5) {
            if s.format.has_byte_offsets() {
                writeln!(w, "    byte {}: {}", x.offset, escape(&x.message))?;
            } else {
                writeln!(w, "    {}", escape(&x.message))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::ClosedPipe;

    /// The summary of a trace of one kernel.
    fn one_kernel() -> Summary {
        let text = br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]}"#;
        let opts = kineto_trace::Options {
            sha256: false,
            ..kineto_trace::Options::default()
        };
        let p = kineto_trace::parse_raw(std::path::Path::new("t.json"), &text[..], &opts).unwrap();
        Summary::of(&p)
    }

    #[test]
    fn a_closed_pipe_stays_a_closed_pipe() {
        let e = write(&mut ClosedPipe, &one_kernel(), true).unwrap_err();
        assert!(tool_io::stdout::is_closed_pipe(&e), "{e:?}");
    }

    #[test]
    fn a_warning_names_its_byte_only_where_the_format_has_bytes() {
        let mut s = one_kernel();
        s.warnings_total = 1;
        s.warnings = vec![kineto_trace::Warning {
            offset: 0,
            message: "nsys diagnostic: events dropped".into(),
        }];
        let shown = |s: &Summary| {
            let mut out = Vec::new();
            write(&mut out, s, false).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(shown(&s).contains("    byte 0: nsys diagnostic"));
        s.format = kineto_trace::TraceFormat::NsysSqlite;
        let text = shown(&s);
        assert!(
            text.contains("    nsys diagnostic: events dropped"),
            "{text}"
        );
        assert!(!text.contains("byte 0"), "{text}");
        // rocprofv3's JSON names the process its warning is about, not a byte.
        s.format = kineto_trace::TraceFormat::Rocprofv3Json;
        assert!(!shown(&s).contains("byte 0"));
    }
}
