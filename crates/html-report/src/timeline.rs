//! The timeline of one chosen step: one lane per stream, each GPU op a bar coloured by its bucket, the
//! step's idle gaps (the budget's: no op of the step running on any stream) shaded across the lanes, the
//! findings' time ranges marked above them, hover for name, bucket, stream, start and duration.
//!
//! The input is the binary's: per trace the step's ops as `gpu_ops` rows ([`crate::view::TIMELINE_OPS`]),
//! its window and its idle gaps, embedded with the tool's JSON, and the [`Mark`]s of its findings. This
//! module lays them out (lanes, ops relative to the window's start, in integer ns; one mark lane per
//! finding above the stream lanes) into the derived block, and the page's script draws the SVG from
//! there. A step with more ops than [`DRAW_CAP`] is drawn with neighbouring ops merged — never dropped —
//! and the page says how many were merged into how many bars, and under what rule; more than
//! [`DRAW_CAP`] marks, and the narrowest are left undrawn, which the page counts. A page holds at most
//! [`OPS_CAP`](crate::timeline_cap::OPS_CAP) ops of a step, the longest ([`crate::timeline_cap`]); it says how many of how many, and
//! what the ones left off add up to.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use crate::page::{Section, esc, fmt_num};
use crate::timeline_cap::{OpsCut, cut_note, held, held_ops, ops_to_draw};

/// At most this many bars per timeline (ops, or runs of merged ops), and this many idle gaps: beyond it
/// a browser slows and a bar is narrower than a pixel on any screen.
pub const DRAW_CAP: usize = 4000;

/// A time range to mark on a trace's timeline: what a finding points at (the doctor's), with its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mark {
    /// The trace file as given (the `file` of the listings' rows): which timeline it belongs to.
    pub file: String,
    /// The finding (its id): marks of one finding share a lane, a colour and a legend entry.
    pub finding: String,
    /// Start on the trace's clock, ns.
    pub lo_ns: i64,
    /// End on the trace's clock, ns.
    pub hi_ns: i64,
    /// What is there (shown on hover and beside the mark).
    pub label: String,
}

/// One op as the layout reads it.
#[derive(Debug, Clone)]
struct Op {
    lane: usize,
    start: i64,
    end: i64,
    bucket: usize,
    name: String,
}

/// A bar: one op, or a run of ops merged.
#[derive(Debug, Clone, PartialEq)]
struct Bar {
    lane: usize,
    start: i64,
    end: i64,
    /// `None`: the run holds ops of more than one bucket.
    bucket: Option<usize>,
    /// The ops in it, in time order (indices into the lane's ops).
    count: usize,
    first: usize,
    last: usize,
}

/// How the ops were merged to fit [`DRAW_CAP`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Merge {
    /// Consecutive ops of one lane at most this far apart (ns) were merged.
    gap_ns: i64,
    /// Whether only ops of one bucket were merged.
    same_bucket: bool,
}

/// Merges consecutive ops of a lane (sorted by start) whose gap is at most `m.gap_ns` (and, with
/// `same_bucket`, of one bucket).
fn merged(lanes: &[Vec<Op>], m: Merge) -> Vec<Bar> {
    let mut out = Vec::new();
    for ops in lanes {
        let mut cur: Option<Bar> = None;
        for (i, op) in ops.iter().enumerate() {
            if let Some(b) = cur.as_mut() {
                let joins = op.start.saturating_sub(b.end) <= m.gap_ns
                    && (!m.same_bucket || b.bucket == Some(op.bucket));
                if joins {
                    b.end = b.end.max(op.end);
                    b.count += 1;
                    b.last = i;
                    if b.bucket != Some(op.bucket) {
                        b.bucket = None;
                    }
                    continue;
                }
                out.push(b.clone());
            }
            cur = Some(Bar {
                lane: op.lane,
                start: op.start,
                end: op.end,
                bucket: Some(op.bucket),
                count: 1,
                first: i,
                last: i,
            });
        }
        out.extend(cur);
    }
    out
}

/// The bars for `lanes`: every op its own bar when they fit `cap`; else the smallest merge (gap doubling
/// from span / 4·cap, ops of one bucket first, then of any) that fits. Every op is in exactly one bar.
fn bars(lanes: &[Vec<Op>], span: i64, cap: usize) -> (Vec<Bar>, Option<Merge>) {
    let n: usize = lanes.iter().map(Vec::len).sum();
    if n <= cap {
        let mut out = Vec::with_capacity(n);
        for ops in lanes {
            for (i, op) in ops.iter().enumerate() {
                out.push(Bar {
                    lane: op.lane,
                    start: op.start,
                    end: op.end,
                    bucket: Some(op.bucket),
                    count: 1,
                    first: i,
                    last: i,
                });
            }
        }
        return (out, None);
    }
    let start = (span / (4 * cap as i64)).max(1);
    for same_bucket in [true, false] {
        let mut gap = start;
        loop {
            let m = Merge {
                gap_ns: gap,
                same_bucket,
            };
            let b = merged(lanes, m);
            if b.len() <= cap {
                return (b, Some(m));
            }
            if gap > span {
                break;
            }
            gap = gap.saturating_mul(2);
        }
    }
    // More lanes than the cap: one bar per lane, which the page says.
    let m = Merge {
        gap_ns: i64::MAX,
        same_bucket: false,
    };
    (merged(lanes, m), Some(m))
}

fn int(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(Value::as_i64)
}

fn us(ns: f64) -> String {
    fmt_num(ns / 1000.0)
}

/// The marks' colours, by mark lane: apart from the buckets' pastel palette, strong enough to read on
/// the lanes' grey.
const MARK_COLORS: [&str; 8] = [
    "#e65100", "#c62828", "#6a1b9a", "#00838f", "#2e7d32", "#ad1457", "#4e342e", "#283593",
];

/// How far the drawn range may reach past the step's window on either side to show a mark there (the
/// idle before the step): at most the step's span, so the step keeps a third of the width at least.
fn reach(span: i64) -> i64 {
    span
}

/// The marks laid out: the drawn range (relative to the window's start), the mark lanes (finding ids, in
/// the page's order, [`finding_order`]), each drawn mark `[lane, start, duration, label]` relative to the window's
/// start, and the page's statement about them.
struct MarkLayout {
    view_lo: i64,
    view_hi: i64,
    lanes: Vec<String>,
    /// Per lane: how many marks near the step (drawn or not) and their whole time, ns.
    per_lane: Vec<(usize, i64)>,
    drawn: Vec<Value>,
    note: String,
}

/// The findings of `marks` in order of first appearance: the page's order of mark lanes, and the index
/// of each finding's colour, so that a finding has one lane position and one colour on every timeline.
pub fn finding_order(marks: &[Mark]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in marks {
        if !out.contains(&m.finding) {
            out.push(m.finding.clone());
        }
    }
    out
}

/// The colour of finding `f` in the page's `order`.
fn mark_color(order: &[String], f: &str) -> &'static str {
    let i = order.iter().position(|x| x == f).unwrap_or(order.len());
    MARK_COLORS[i % MARK_COLORS.len()]
}

fn lay_out_marks(marks: &[&Mark], lo: i64, hi: i64, order: &[String]) -> MarkLayout {
    let span = hi.saturating_sub(lo);
    let empty = marks.iter().filter(|m| m.hi_ns <= m.lo_ns).count();
    let marks: Vec<&Mark> = marks
        .iter()
        .copied()
        .filter(|m| m.hi_ns > m.lo_ns)
        .collect();
    let (near, far): (Vec<&Mark>, Vec<&Mark>) = marks.iter().partition(|m| {
        m.hi_ns > lo.saturating_sub(reach(span)) && m.lo_ns < hi.saturating_add(reach(span))
    });
    let view_lo = near
        .iter()
        .map(|m| m.lo_ns)
        .min()
        .map_or(lo, |a| a.max(lo.saturating_sub(reach(span))).min(lo));
    let view_hi = near
        .iter()
        .map(|m| m.hi_ns)
        .max()
        .map_or(hi, |b| b.min(hi.saturating_add(reach(span))).max(hi));
    let mut lanes: Vec<String> = Vec::new();
    for m in &near {
        if !lanes.contains(&m.finding) {
            lanes.push(m.finding.clone());
        }
    }
    // The page's order: a finding keeps its place on every trace's timeline.
    lanes.sort_by_key(|l| order.iter().position(|x| x == l).unwrap_or(usize::MAX));
    let per_lane = lanes
        .iter()
        .map(|l| {
            near.iter()
                .filter(|m| m.finding == *l)
                .fold((0, 0i64), |(c, d), m| {
                    (c + 1, d.saturating_add(m.hi_ns - m.lo_ns))
                })
        })
        .collect();
    let clipped = near
        .iter()
        .filter(|m| m.lo_ns < view_lo || m.hi_ns > view_hi)
        .count();
    let mut note = String::new();
    // The widest DRAW_CAP, chosen once by the cap's rule (of equal ones, the earlier), then in time order.
    let widths: Vec<i64> = near.iter().map(|m| m.hi_ns - m.lo_ns).collect();
    let (keep, cut) = ops_to_draw(&widths, DRAW_CAP);
    let mut shown: Vec<&Mark> = held(&near, keep).into_iter().copied().collect();
    if let Some(cut) = cut {
        let _ = write!(
            note,
            " More than {DRAW_CAP} finding marks: the {} narrowest (each at most {} µs, {} µs in all) are not drawn, only the widest {DRAW_CAP}.",
            cut.count,
            us(cut.longest_ns as f64),
            us(cut.total_ns as f64)
        );
        shown.sort_by_key(|m| (m.lo_ns, m.hi_ns));
    }
    let drawn = shown
        .iter()
        .map(|m| {
            let a = m.lo_ns.max(view_lo);
            let lane = lanes.iter().position(|l| *l == m.finding).unwrap_or(0);
            json!([lane, a - lo, m.hi_ns.min(view_hi) - a, m.label])
        })
        .collect();
    if view_lo < lo || view_hi > hi {
        let _ = write!(
            note,
            " Drawn from {} before the step's first op to {} after its last, to show the marks there (at most the step's span either side).",
            time((lo - view_lo) as f64),
            time((view_hi - hi) as f64)
        );
    }
    if clipped > 0 {
        let _ = write!(
            note,
            " {clipped} mark{} reach{} past the drawn range and {} cut at its edge (its hover gives the whole duration).",
            if clipped == 1 { "" } else { "s" },
            if clipped == 1 { "es" } else { "" },
            if clipped == 1 { "is" } else { "are" },
        );
    }
    if empty > 0 {
        let _ = write!(
            note,
            " {empty} empty finding mark{} (no duration) {} not drawn.",
            if empty == 1 { "" } else { "s" },
            if empty == 1 { "is" } else { "are" }
        );
    }
    if !far.is_empty() {
        let _ = write!(
            note,
            " {} finding mark{} of this trace {} outside this step.",
            far.len(),
            if far.len() == 1 { "" } else { "s" },
            if far.len() == 1 { "lies" } else { "lie" }
        );
    }
    MarkLayout {
        view_lo: view_lo - lo,
        view_hi: view_hi - lo,
        lanes,
        per_lane,
        drawn,
        note,
    }
}

/// A duration with its unit, µs or ms as a table column would show it.
fn time(ns: f64) -> String {
    let u = crate::view::TimeUnit::for_max_ns(ns.abs());
    format!("{} {}", fmt_num(ns / u.ns()), u.symbol())
}

/// The ops' lanes: one per stream (streams in number order, ops without a stream last).
fn lanes_of(
    ops: Vec<&Value>,
    lo: i64,
    bucket_index: &mut Vec<String>,
) -> (Vec<String>, Vec<Vec<Op>>) {
    let mut by_stream: BTreeMap<(bool, i64), Vec<Op>> = BTreeMap::new();
    for o in ops {
        let (Some(ts), Some(dur)) = (int(o, "ts_ns"), int(o, "dur_ns")) else {
            continue;
        };
        let stream = int(o, "stream");
        let bucket = o.get("bucket").and_then(Value::as_str).unwrap_or("?");
        let b = match bucket_index.iter().position(|x| x == bucket) {
            Some(i) => i,
            None => {
                bucket_index.push(bucket.to_owned());
                bucket_index.len() - 1
            }
        };
        by_stream
            .entry((stream.is_none(), stream.unwrap_or(0)))
            .or_default()
            .push(Op {
                lane: 0,
                start: ts.saturating_sub(lo),
                end: ts.saturating_add(dur.max(0)).saturating_sub(lo),
                bucket: b,
                name: o
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            });
    }
    let mut names = Vec::new();
    let mut lanes = Vec::new();
    for (i, ((none, s), mut ops)) in by_stream.into_iter().enumerate() {
        names.push(if none {
            "no stream".to_owned()
        } else {
            format!("stream {s}")
        });
        ops.sort_by_key(|o| (o.start, o.end));
        for o in &mut ops {
            o.lane = i;
        }
        lanes.push(ops);
    }
    (names, lanes)
}

/// A merged bar's hover text: how many ops, the names most of them have.
fn merged_label(ops: &[Op], b: &Bar) -> String {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for o in &ops[b.first..=b.last] {
        *count.entry(o.name.as_str()).or_default() += 1;
    }
    let mut v: Vec<(&str, usize)> = count.into_iter().collect();
    v.sort_by(|a, z| z.1.cmp(&a.1).then(a.0.cmp(z.0)));
    let mut s = format!("{} ops merged: ", b.count);
    for (i, (n, c)) in v.iter().take(3).enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{c}× {n}");
    }
    if v.len() > 3 {
        let _ = write!(s, ", {} more names", v.len() - 3);
    }
    s
}

/// The bars as the script draws them (`[lane, start, width, bucket, count, name index]`), and the hover
/// names they index, each name once.
fn drawn_bars(bars: &[Bar], lanes: &[Vec<Op>]) -> (Vec<Value>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut name_ix: HashMap<String, usize> = HashMap::new();
    let mut intern = |s: String| -> usize {
        if let Some(&i) = name_ix.get(&s) {
            return i;
        }
        names.push(s.clone());
        name_ix.insert(s, names.len() - 1);
        names.len() - 1
    };
    let drawn: Vec<Value> = bars
        .iter()
        .map(|b| {
            let lane = &lanes[b.lane];
            let label = if b.count == 1 {
                lane[b.first].name.clone()
            } else {
                merged_label(lane, b)
            };
            let bucket = b.bucket.map_or(-1, |x| x as i64);
            json!([
                b.lane,
                b.start,
                b.end - b.start,
                bucket,
                b.count,
                intern(label)
            ])
        })
        .collect();
    (drawn, names)
}

/// The step's idle gaps: the shaded ones (`[start from lo, width]`, the widest `DRAW_CAP` past the cap),
/// the total and count of all of them, and the statement's note on those left unshaded.
struct Gaps {
    shaded: Vec<Value>,
    total_ns: i64,
    count: usize,
    note: String,
}

fn idle_gaps(t: &Value, lo: i64) -> Gaps {
    let gaps: Vec<(i64, i64)> = t
        .get("idle_gaps_ns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|g| Some((g.get(0)?.as_i64()?, g.get(1)?.as_i64()?)))
        .collect();
    // The narrowest gaps the tool left off the page (`crate::timeline_cap`): counted, never shaded.
    let by_tool = t
        .get("idle_gaps_cut")
        .and_then(OpsCut::from_json)
        .unwrap_or_default();
    let total_ns: i64 = gaps.iter().map(|(a, b)| b - a).sum::<i64>() + by_tool.total_ns;
    let count = gaps.len() + by_tool.count;
    let mut note = String::new();
    // The widest DRAW_CAP, chosen once by the cap's rule (of equal ones, the earlier), then in time order.
    let widths: Vec<i64> = gaps.iter().map(|(a, b)| b - a).collect();
    let (keep, here) = ops_to_draw(&widths, DRAW_CAP);
    let mut shaded: Vec<(i64, i64)> = held(&gaps, keep).into_iter().copied().collect();
    if count > DRAW_CAP {
        let left = by_tool.and(here.unwrap_or_default());
        note = format!(
            " The {} narrowest gaps (each at most {} µs, {} µs in all) are not shaded: only the widest {} are.",
            left.count,
            us(left.longest_ns as f64),
            us(left.total_ns as f64),
            shaded.len()
        );
        shaded.sort_unstable();
    }
    Gaps {
        shaded: shaded.iter().map(|(a, b)| json!([a - lo, b - a])).collect(),
        total_ns,
        count,
        note,
    }
}

/// The statement's sentence on how the `n` ops are drawn: every one, or merged under `merge`'s rule.
fn drawing_note(merge: Option<&Merge>, bars: &[Bar], n: usize) -> String {
    let Some(m) = merge else {
        return format!(" Every op is drawn ({n} bars).");
    };
    let merged_ops: usize = bars.iter().filter(|b| b.count > 1).map(|b| b.count).sum();
    let runs = bars.iter().filter(|b| b.count > 1).count();
    let rule = match (m.same_bucket, m.gap_ns) {
        (_, i64::MAX) => "every op of a stream".to_owned(),
        (true, g) => format!(
            "consecutive ops of one stream and one bucket at most {} µs apart",
            us(g as f64)
        ),
        (false, g) => format!(
            "consecutive ops of one stream at most {} µs apart, of any bucket (grey when mixed)",
            us(g as f64)
        ),
    };
    format!(
        " More than {DRAW_CAP} ops: drawn as {} bars, {merged_ops} of the {n} ops merged into {runs} bars ({rule}); no op is left out — hover a merged bar for its count and names.",
        bars.len()
    )
}

/// The legend: the buckets in this step, idle, merged bars, findings.
fn legend(
    buckets: &[String],
    colors: &dyn Fn(&str) -> String,
    merged: bool,
    ml: &MarkLayout,
    order: &[String],
) -> String {
    let mut legend = String::from("<div class=\"tl-legend\">");
    for b in buckets {
        let _ = write!(
            legend,
            "<span><i style=\"background:{}\"></i>{}</span>",
            esc(&colors(b)),
            esc(b)
        );
    }
    legend.push_str("<span><i class=\"tl-idle\"></i>idle gap</span>");
    if merged {
        legend.push_str("<span><i class=\"tl-merged-key\"></i>merged ops (outlined)</span>");
    }
    legend.push_str("</div>");
    if !ml.lanes.is_empty() {
        legend.push_str("<div class=\"tl-legend tl-mark-legend\">findings marked (one lane each):");
        for (l, (count, ns)) in ml.lanes.iter().zip(&ml.per_lane) {
            let _ = write!(
                legend,
                " <span data-finding=\"{}\"><i style=\"background:{}\"></i>{} ({count} mark{}, {})</span>",
                esc(l),
                mark_color(order, l),
                esc(l),
                if *count == 1 { "" } else { "s" },
                time(*ns as f64)
            );
        }
        legend.push_str("</div>");
    }
    legend
}

/// One trace's timeline: its statement and drawing slot in `page`, its layout (for the script) returned.
/// `colors` gives each bucket's colour (the budget charts'); `marks` are this trace's.
pub fn section(
    page: &mut Section,
    t: &Value,
    slot: usize,
    colors: &dyn Fn(&str) -> String,
    marks: &[&Mark],
    order: &[String],
) -> Option<Value> {
    let file = t.get("file").and_then(Value::as_str).unwrap_or("");
    let short = file.rsplit('/').next().unwrap_or(file);
    let rank = crate::kineto::rank_name(t);
    page.h3(&format!("{rank} — {short}"));
    if let Some(why) = t.get("absent").and_then(Value::as_str) {
        page.absent(&format!("the timeline ({why})"));
        return None;
    }
    let (Some(lo), Some(hi)) = (int(t, "window_lo_ns"), int(t, "window_hi_ns")) else {
        page.absent("the step's window (no GPU work in it)");
        return None;
    };
    let span = hi.saturating_sub(lo).max(1);
    let empty = Vec::new();
    let ops = t.get("ops").and_then(Value::as_array).unwrap_or(&empty);
    let (ops, cut) = held_ops(t, ops);
    let mut buckets = Vec::new();
    let (lane_names, lanes) = lanes_of(ops, lo, &mut buckets);
    let n: usize = lanes.iter().map(Vec::len).sum();
    let (bars, merge) = bars(&lanes, span, DRAW_CAP);
    let (drawn, names) = drawn_bars(&bars, &lanes);
    let gaps = idle_gaps(t, lo);
    let ml = lay_out_marks(marks, lo, hi, order);

    let step = t.get("name").and_then(Value::as_str).unwrap_or("");
    let index = t.get("step").map(Value::to_string).unwrap_or_default();
    let chosen = t.get("chosen").and_then(Value::as_str).unwrap_or("");
    let gap_count = gaps.count;
    let mut text = format!(
        "Step {step} (step {index}; {chosen}): {} from its first op's start to its last op's end; {n} GPU ops on {} stream{}; idle {} in {gap_count} gap{} (shaded: no op of the step running on any stream).",
        time(span as f64),
        lanes.len(),
        if lanes.len() == 1 { "" } else { "s" },
        time(gaps.total_ns as f64),
        if gap_count == 1 { "" } else { "s" },
    );
    text.push_str(&gaps.note);
    text.push_str(&drawing_note(merge.as_ref(), &bars, n));
    if let Some(c) = &cut {
        text.push_str(&cut_note(c, n));
    }
    text.push_str(&ml.note);
    page.p(&text);
    page.raw(&legend(&buckets, colors, merge.is_some(), &ml, order));
    page.raw(&format!(
        "<div class=\"timeline\" data-tl=\"{slot}\" data-lanes=\"{}\" data-bars=\"{}\"></div>",
        lanes.len(),
        bars.len()
    ));
    Some(json!({
        "file": file,
        "span_ns": span,
        "window_lo_ns": lo,
        "lanes": lane_names,
        "buckets": buckets,
        "colors": buckets.iter().map(|b| colors(b)).collect::<Vec<_>>(),
        "bars": drawn,
        "names": names,
        "gaps": gaps.shaded,
        "view_lo_ns": ml.view_lo,
        "view_hi_ns": ml.view_hi,
        "mark_lanes": ml.lanes,
        "mark_colors": ml.lanes.iter().map(|l| mark_color(order, l)).collect::<Vec<_>>(),
        "marks": ml.drawn,
        "ops": n,
        "ops_cut": cut.map(|c| c.json()),
    }))
}

/// The script that draws every `div.timeline` from the derived block's `timelines`, run by the page's
/// script before it marks the document done. Bars are `rect.tl-op` (merged ones also `.tl-merged`), idle
/// gaps `rect.tl-gap`, marks `rect.tl-mark` (one lane per finding, above the streams, labelled
/// `text.tl-mark-lane`), lane labels `text.tl-lane`; hovering one fills `div.tl-tip`.
pub const SCRIPT: &str = r#"<script>window.kl1Timeline=function(){
var D=JSON.parse(document.getElementById('derived-json').textContent)||{},T=D.timelines||[],NS='http://www.w3.org/2000/svg';
function el(n,a,p){var e=document.createElementNS(NS,n);for(var k in a){e.setAttribute(k,a[k])}if(p)p.appendChild(e);return e}
function us(ns){var v=ns/1000,a=Math.abs(v);return v===0?'0':a>=1000?v.toFixed(0):a>=100?v.toFixed(1):a>=10?v.toFixed(2):v.toFixed(3)}
function tick(ns,span){return span>=1e7?(ns===0?'0':(ns/1e6).toFixed(ns%1e6===0?0:1))+' ms':us(ns)+' µs'}
function nice(span,px){var raw=span/Math.max(1,px/110),p=Math.pow(10,Math.floor(Math.log10(raw))),m=raw/p;return p*(m<=1?1:m<=2?2:m<=5?5:10)}
var tip=document.querySelector('div.tl-tip');if(!tip){tip=document.createElement('div');tip.className='tl-tip';document.body.appendChild(tip)}
document.querySelectorAll('div.timeline').forEach(function(div){
var t=T[+div.getAttribute('data-tl')];if(!t)return;
var L=150,W=Math.max(600,div.clientWidth||1300),R=12,H=20,MH=14,ML=t.mark_lanes||[],top=28+ML.length*MH+(ML.length?4:0),h=top+t.lanes.length*H+6;
var v0=t.view_lo_ns||0,v1=t.view_hi_ns===undefined?t.span_ns:t.view_hi_ns,vs=Math.max(1,v1-v0),sc=(W-L-R)/vs;
var svg=el('svg',{width:W,height:h,viewBox:'0 0 '+W+' '+h,'class':'tl-svg'},div);
function x(ns){return L+(ns-v0)*sc}
var step=nice(vs,W-L-R),g=el('g',{'class':'tl-axis'},svg);
for(var v=Math.ceil(v0/step)*step;v<=v1;v+=step){el('line',{x1:x(v),x2:x(v),y1:20,y2:h-4,stroke:'#e4e4e4'},g);var tx=el('text',{x:x(v),y:14,'text-anchor':'middle','font-size':11},g);tx.textContent=tick(v,vs)}
ML.forEach(function(n,i){var y=24+i*MH;el('rect',{x:L,y:y,width:W-L-R,height:MH,fill:i%2?'#fdf8f2':'#faf1e6'},svg);
var lt=el('text',{x:L-6,y:y+MH-3,'text-anchor':'end','font-size':11,fill:t.mark_colors[i],'class':'tl-mark-lane'},svg);lt.textContent=n});
t.lanes.forEach(function(n,i){var y=top+i*H;el('rect',{x:L,y:y,width:W-L-R,height:H,fill:i%2?'#fafafa':'#f3f3f3'},svg);
var lt=el('text',{x:L-6,y:y+H-5,'text-anchor':'end','font-size':12,'class':'tl-lane'},svg);lt.textContent=n});
if(v0<0||v1>t.span_ns){[0,t.span_ns].forEach(function(e){el('line',{x1:x(e),x2:x(e),y1:20,y2:h-4,'class':'tl-edge'},svg)})}
t.gaps.forEach(function(q){el('rect',{x:x(q[0]),y:top,width:Math.max(0.5,q[1]*sc),height:t.lanes.length*H,'class':'tl-gap','data-a':q[0],'data-d':q[1]},svg)});
t.bars.forEach(function(b,i){var c=b[3]<0?'#999':t.colors[b[3]],a={x:x(b[1]),y:top+b[0]*H+2,width:Math.max(0.5,b[2]*sc),height:H-4,fill:c,'class':b[4]>1?'tl-op tl-merged':'tl-op','data-i':i,'data-lane':b[0]};el('rect',a,svg)});
t.marks.forEach(function(m){el('rect',{x:x(m[1]),y:24+m[0]*MH+1,width:Math.max(2,m[2]*sc),height:MH-2,fill:t.mark_colors[m[0]],'class':'tl-mark','data-lane':m[0],'data-l':m[3],'data-a':m[1],'data-d':m[2]},svg)});
function text(e){var c=e.getAttribute('class')||'';if(c.indexOf('tl-op')>=0){var b=t.bars[+e.getAttribute('data-i')];
return t.names[b[5]]+'\n'+(b[3]<0?'mixed buckets':t.buckets[b[3]])+' · '+t.lanes[b[0]]+'\nstart +'+us(b[1])+' µs · duration '+us(b[2])+' µs'}
if(c.indexOf('tl-gap')>=0)return 'idle gap\nstart +'+us(+e.getAttribute('data-a'))+' µs · duration '+us(+e.getAttribute('data-d'))+' µs';
if(c==='tl-mark'){var a=+e.getAttribute('data-a');return e.getAttribute('data-l')+'\nstart '+(a<0?'':'+')+us(a)+' µs · drawn '+us(+e.getAttribute('data-d'))+' µs'}return null}
svg.addEventListener('mousemove',function(ev){var s=text(ev.target);if(s===null){tip.style.display='none';return}
tip.textContent=s;tip.style.display='block';tip.style.left=(ev.pageX+12)+'px';tip.style.top=(ev.pageY+12)+'px'});
svg.addEventListener('mouseleave',function(){tip.style.display='none'});
div.setAttribute('data-drawn',String(t.bars.length))})};</script>"#;

/// The timeline's style.
pub const STYLE: &str = "<style>.timeline{overflow-x:auto;margin:.3em 0 1em}.tl-legend span{margin-right:14px;\
font-size:13px;white-space:nowrap}.tl-legend i{display:inline-block;width:12px;height:12px;margin-right:4px;\
vertical-align:-1px;border:1px solid #0003}.tl-idle,.tl-gap{fill:#9a9a9a;fill-opacity:.35;background:#9a9a9a59}\
.tl-merged{stroke:#000;stroke-opacity:.3;stroke-width:.5}.tl-merged-key{border:1px solid #222!important;background:#bbb}\
.tl-mark{fill-opacity:.85;stroke:#fff;stroke-width:.5}.tl-edge{stroke:#555;stroke-dasharray:3 3}\
.tl-mark-legend{margin-top:2px}\
.tl-tip{position:absolute;display:none;background:#fff;border:1px solid #888;padding:4px 6px;font-size:12px;\
white-space:pre;pointer-events:none;box-shadow:0 1px 4px #0003;z-index:9;max-width:70em;overflow:hidden}</style>";

#[cfg(test)]
mod tests {
    use super::*;

    fn op(lane: usize, start: i64, end: i64, bucket: usize) -> Op {
        Op {
            lane,
            start,
            end,
            bucket,
            name: format!("k{bucket}"),
        }
    }

    /// Under the cap every op is a bar; over it, ops merge and every op is in exactly one bar.
    #[test]
    fn merging_keeps_every_op() {
        let lanes = vec![vec![op(0, 0, 10, 0), op(0, 12, 20, 0), op(0, 30, 40, 1)]];
        let (b, m) = bars(&lanes, 40, 3);
        assert_eq!((b.len(), m), (3, None));
        // Cap 2: the gap doubles from max(1, 40 / 8) = 5: 0–10 and 12–20 (gap 2, one bucket) merge.
        let (b, m) = bars(&lanes, 40, 2);
        assert_eq!(
            m,
            Some(Merge {
                gap_ns: 5,
                same_bucket: true
            })
        );
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].start, b[0].end, b[0].count), (0, 20, 2));
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 3);
        // Cap 1: buckets 0 and 1 cannot merge by bucket; then any bucket: one grey bar of 3.
        let (b, m) = bars(&lanes, 40, 1);
        assert_eq!(m.map(|m| m.same_bucket), Some(false));
        assert_eq!((b.len(), b[0].count, b[0].bucket), (1, 3, None));
    }

    fn mark(finding: &str, lo_ns: i64, hi_ns: i64) -> Mark {
        Mark {
            file: "t".into(),
            finding: finding.into(),
            lo_ns,
            hi_ns,
            label: format!("{finding} {}", hi_ns - lo_ns),
        }
    }

    /// Window 1000‥1100 (span 100, so the drawn range may reach 900‥1200): idle before the step
    /// 850‥1000 widens the range to 900 and is cut there; a mark at 1300 lies outside; lanes in order of
    /// first appearance; a zero-length mark is counted, not drawn.
    #[test]
    fn marks_widen_the_range_up_to_the_span_and_say_what_is_not_drawn() {
        let ms = [
            mark("between_steps", 850, 1000),
            mark("short_kernels", 1010, 1012),
            mark("exposed_comm", 1050, 1060),
            mark("short_kernels", 1020, 1020),
            mark("short_kernels", 1300, 1310),
        ];
        let refs: Vec<&Mark> = ms.iter().collect();
        // The page's order puts exposed_comm before short_kernels.
        let order = ["between_steps", "exposed_comm", "short_kernels"].map(String::from);
        let l = lay_out_marks(&refs, 1000, 1100, &order);
        assert_eq!((l.view_lo, l.view_hi), (-100, 100));
        // The zero-length mark and the one outside are not counted in their lane.
        assert_eq!(l.per_lane, vec![(1, 150), (1, 10), (1, 2)]);
        assert_eq!(l.lanes, ["between_steps", "exposed_comm", "short_kernels"]);
        assert_eq!(mark_color(&order, "short_kernels"), MARK_COLORS[2]);
        // [lane, start − 1000, drawn duration, label]: between_steps cut to 900‥1000.
        assert_eq!(
            l.drawn,
            vec![
                json!([0, -100, 100, "between_steps 150"]),
                json!([2, 10, 2, "short_kernels 2"]),
                json!([1, 50, 10, "exposed_comm 10"]),
            ]
        );
        for part in [
            "Drawn from 0.100 µs before the step's first op to 0 µs after its last",
            "1 mark reaches past the drawn range and is cut at its edge",
            "1 empty finding mark (no duration) is not drawn.",
            "1 finding mark of this trace lies outside this step.",
        ] {
            assert!(l.note.contains(part), "{part}: {}", l.note);
        }
    }

    /// More marks than the cap: the widest are drawn and the rest counted with their time.
    #[test]
    fn marks_over_the_cap_are_counted() {
        // DRAW_CAP + 3 marks in a 1 ms window: DRAW_CAP of 2 ns and 3 of 1 ns.
        let mut ms: Vec<Mark> = (0..DRAW_CAP as i64)
            .map(|i| mark("short_kernels", 10 * i, 10 * i + 2))
            .collect();
        ms.extend((0..3).map(|i| mark("short_kernels", 50_000 + 10 * i, 50_000 + 10 * i + 1)));
        let refs: Vec<&Mark> = ms.iter().collect();
        let l = lay_out_marks(&refs, 0, 1_000_000, &finding_order(&ms));
        assert_eq!(l.drawn.len(), DRAW_CAP);
        assert!(
            l.note
                .contains("the 3 narrowest (each at most 0.001 µs, 0.003 µs in all) are not drawn"),
            "{}",
            l.note
        );
    }

    /// 10 000 ops of 1 µs every 2 µs on two streams, cap 4000: merged to fit, none lost.
    #[test]
    fn a_big_step_fits_the_cap() {
        let lanes: Vec<Vec<Op>> = (0..2)
            .map(|l| {
                (0..5000)
                    .map(|i| op(l, i * 2000, i * 2000 + 1000, (i % 2) as usize))
                    .collect()
            })
            .collect();
        let (b, m) = bars(&lanes, 10_000_000, DRAW_CAP);
        assert!(b.len() <= DRAW_CAP && m.is_some(), "{}", b.len());
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 10_000);
    }
}
