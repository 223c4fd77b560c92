//! Renders a report from JSON files, for the browser test and for trying a page before the binaries grow
//! `--html`:
//!
//! ```text
//! render kl1 REPORT.json OUT.html
//! render kineto BUDGET.jsonl [TOP.json|-] [ROOFLINE.json|-] OUT.html
//! render monitor SAMPLES.jsonl SUMMARY.json OUT.html
//! render provenance RECORD.json OUT.html
//! render kl1-diff OLD.json NEW.json OUT.html
//! render kineto-diff OLD.jsonl NEW.jsonl OUT.html
//! ```

use std::error::Error;

use html_report as hr;
use serde_json::Value;

fn read(path: &str) -> Result<Vec<Value>, Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(hr::parse_json_or_lines(&text).map_err(|e| format!("{path}: {e}"))?)
}

fn one(path: &str) -> Result<Value, Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?)
}

fn optional(path: &str) -> Result<Option<Value>, Box<dyn Error>> {
    if path == "-" {
        Ok(None)
    } else {
        one(path).map(Some)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    // The diff pages show the verdict of a 5 % gate.
    let gate = step_stats::Gate {
        fail_above: step_stats::Threshold::new(5.0)?,
        allow_missing: false,
    };
    let (html, out) = match a.as_slice() {
        ["kl1", report, out] => (hr::kl1_bandwidth_html(&one(report)?), *out),
        ["kineto", budget, top, roof, out] => {
            let budget = read(budget)?;
            let (top, roof) = (optional(top)?, optional(roof)?);
            let inputs = hr::KinetoInputs {
                budget: &budget,
                top: top.as_ref(),
                roofline: roof.as_ref(),
                ..hr::KinetoInputs::default()
            };
            (hr::kineto_html(&inputs), *out)
        }
        ["monitor", samples, summary, out] => {
            let samples = read(samples)?;
            let summary = one(summary)?;
            let inputs = hr::MonitorInputs {
                samples: &samples,
                summary: Some(&summary),
                command: None,
            };
            (hr::gpu_monitor_html(&inputs), *out)
        }
        ["provenance", record, out] => (hr::provenance_html(&one(record)?), *out),
        ["kl1-diff", old, new, out] => {
            let (old, new) = (one(old)?, one(new)?);
            let d = kl1_bandwidth::diff::diff(&old, &new, kl1_bandwidth::spread::is_headline_key)?;
            (hr::kl1_diff_page(&old, &new, &d, Some(gate)), *out)
        }
        ["kineto-diff", old, new, out] => {
            let (old, new) = (read(old)?, read(new)?);
            let d = run_compare::budget::compare_json(&old, &new)?;
            (hr::kineto_diff_page(&old, &new, &d, Some(gate)), *out)
        }
        _ => return Err("usage: see the doc comment of examples/render.rs".into()),
    };
    std::fs::write(out, html).map_err(|e| format!("{out}: {e}"))?;
    Ok(())
}
