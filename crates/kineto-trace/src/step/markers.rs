//! Finding the markers of one profile: annotation and CPU-op names, the servers' Python step functions,
//! model forwards, CUDA/HIP-graph replays; and the notes that say which were found.

use super::*;
/// One step's marker before it is a step: its CPU range on a thread, or one launch.
pub(super) struct Marker {
    pub(super) name: Sym,
    pub(super) ts_ns: i64,
    pub(super) end_ns: i64,
    pub(super) track: Track,
    /// A graph replay: the step is exactly this launch's GPU work, whatever else ran meanwhile.
    pub(super) launch: Option<u32>,
}

impl Marker {
    pub(super) fn of(s: &Span) -> Marker {
        Marker {
            name: s.name,
            ts_ns: s.ts_ns,
            end_ns: s.end_ns(),
            track: s.track,
            launch: None,
        }
    }
}

/// Process of each track, interned, so a launch and a marker are compared by pid only.
pub(super) struct Pids<'t> {
    pub(super) trace: &'t Trace,
    pub(super) ids: FxHashMap<&'t IdValue, u64>,
}

impl<'t> Pids<'t> {
    pub(super) fn new(trace: &'t Trace) -> Self {
        Pids {
            trace,
            ids: FxHashMap::default(),
        }
    }
    pub(super) fn of(&mut self, t: Track) -> u64 {
        let n = self.ids.len() as u64;
        *self.ids.entry(&self.trace.track(t).pid).or_insert(n)
    }
}

/// The note naming the profile that found the steps.
pub(super) fn found_note(
    profile: &str,
    finder: &Finder,
    markers: &[Marker],
    trace: &Trace,
) -> String {
    let n = markers.len();
    match finder {
        Finder::Names(_) => format!("steps from the built-in `{profile}` markers ({n} found)"),
        Finder::Python(_) => {
            let mut names: Vec<&str> = markers
                .iter()
                .filter_map(|m| {
                    crate::profiles::python_function(trace.name(m.name)).map(|(_, f)| f.path)
                })
                .collect();
            names.sort_unstable();
            names.dedup();
            format!(
                "steps from the built-in `{profile}` profile: {n} calls of the server's step function ({}) in the trace's python_function events",
                names.join(", ")
            )
        }
        Finder::ModelForward => {
            let replays = markers.iter().filter(|m| m.launch.is_some()).count();
            format!(
                "no serving step marker: steps from the built-in `{profile}` profile, {} forwards of the whole model (`nn.Module: …ForCausalLM`; or the training-step annotations enclosing them one to one) and {replays} CUDA/HIP-graph replays outside them",
                n - replays
            )
        }
        Finder::GraphReplays => format!(
            "no step marker: each of the {n} CUDA/HIP-graph replays is one step (built-in `{profile}` profile; in full-graph decode one replay is one engine step, under piecewise graphs a step is several replays); GPU work outside the replays is outside every step"
        ),
    }
}

/// The names user annotations and CPU ops carry, each once, found on first use: a profile whose
/// marker names match none of them needs no pass over the spans (each is decoded as it is read,
/// [`crate::Rows`]), and the profiles are tried one after another.
#[derive(Default)]
pub(super) struct SpanNames(std::cell::OnceCell<FxHashSet<Sym>>);

impl SpanNames {
    fn get(&self, trace: &Trace) -> &FxHashSet<Sym> {
        self.0.get_or_init(|| trace.range_names())
    }
}

/// The markers one profile finds.
pub(super) fn find_markers(
    trace: &Trace,
    links: &Links,
    finder: &Finder,
    pids: &mut Pids<'_>,
    names: &SpanNames,
) -> Vec<Marker> {
    match finder {
        Finder::Names(regex) => name_markers(trace, regex, names)
            .iter()
            .map(Marker::of)
            .collect(),
        Finder::Python(functions) => python_markers(trace, functions),
        Finder::ModelForward => {
            let forwards = outermost(
                trace
                    .user_annotations
                    .iter()
                    .chain(trace.cpu_ops.iter())
                    .chain(trace.python_functions.iter())
                    .filter(|s| crate::profiles::is_model_forward(trace.name(s.name))),
            );
            if forwards.is_empty() {
                return Vec::new();
            }
            // A training loop's own step annotation around each forward holds the backward and the
            // optimizer too: prefer it to the forward.
            let forwards = enclosing_steps(trace, &forwards).unwrap_or(forwards);
            let spans: Vec<(u64, i64, i64)> = forwards
                .iter()
                .map(|s| (pids.of(s.track), s.ts_ns, s.end_ns()))
                .collect();
            let replays = graph_replays(trace, links);
            let points: Vec<(u64, i64)> = replays
                .iter()
                .map(|m| (pids.of(m.track), m.ts_ns))
                .collect();
            let (_, inside) = crate::correlate::stab(&spans, &points);
            forwards
                .iter()
                .map(Marker::of)
                .chain(
                    replays
                        .into_iter()
                        .zip(inside)
                        .filter(|(_, s)| s.is_none())
                        .map(|(m, _)| m),
                )
                .collect()
        }
        Finder::GraphReplays => graph_replays(trace, links),
    }
}

/// The user annotations that enclose the model forwards one to one, when there are such: on each
/// forward's thread the innermost annotation (not itself a forward) containing it and longer than it,
/// every one distinct and all of one name once digits are set aside (`train_step`, `step 3`, …). A
/// training loop's step annotation is that (the forward, backward and optimizer of one iteration);
/// `None` when any forward lacks one or they differ.
fn enclosing_steps(trace: &Trace, forwards: &[Span]) -> Option<Vec<Span>> {
    let shape = |s: &Span| -> String {
        trace
            .name(s.name)
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect()
    };
    // Decoded once: each forward searches them all (a trace's annotations are few beside its ops).
    let annotations: Vec<Span> = trace.user_annotations.iter().collect();
    // Each forward's annotation, by its place among them.
    let mut out: Vec<(usize, Span)> = Vec::with_capacity(forwards.len());
    for f in forwards {
        let around = annotations
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, a)| {
                a.track == f.track
                    && a.ts_ns <= f.ts_ns
                    && a.end_ns() >= f.end_ns()
                    && a.dur_ns > f.dur_ns
                    && !crate::profiles::is_model_forward(trace.name(a.name))
            })
            .max_by_key(|(_, a)| (a.ts_ns, std::cmp::Reverse(a.dur_ns)))?;
        out.push(around);
    }
    let first = shape(&out[0].1);
    let distinct = out.windows(2).all(|w| w[0].0 != w[1].0);
    (distinct && out.iter().all(|(_, a)| shape(a) == first))
        .then(|| out.into_iter().map(|(_, a)| a).collect())
}

/// Every CUDA/HIP-graph launch that produced GPU work, as a one-launch marker.
pub(super) fn graph_replays(trace: &Trace, links: &Links) -> Vec<Marker> {
    trace
        .launches
        .iter()
        .enumerate()
        .filter(|&(i, l)| links.launch_gpu_ops[i] > 0 && is_graph_launch(trace.name(l.name)))
        .map(|(i, l)| Marker {
            name: l.name,
            ts_ns: l.ts_ns,
            end_ns: l.end_ns(),
            track: l.track,
            launch: Some(i as u32),
        })
        .collect()
}

/// Spans on each thread that no other span of the set contains (the first of equal ones), by start.
pub(super) fn outermost(spans: impl Iterator<Item = Span>) -> Vec<Span> {
    let mut v: Vec<Span> = spans.collect();
    v.sort_by_key(|s| (s.track, s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    let mut out: Vec<Span> = Vec::new();
    let mut open: Option<(Track, i64)> = None;
    for s in v {
        if let Some((t, end)) = open
            && t == s.track
            && s.ts_ns < end
        {
            continue;
        }
        open = Some((s.track, s.end_ns()));
        out.push(s);
    }
    out
}

/// One step per outermost call of a step function on its thread; a tail (`sample_tokens`) that
/// follows extends the step before it on the same thread.
pub(super) fn python_markers(trace: &Trace, functions: &[PyFunction]) -> Vec<Marker> {
    let role_of = |s: &Span| -> Option<PyRole> {
        crate::profiles::python_function(trace.name(s.name))
            .filter(|(_, f)| functions.contains(f))
            .map(|(_, f)| f.role)
    };
    let calls = outermost(
        trace
            .python_functions
            .iter()
            .filter(|s| role_of(s).is_some()),
    );
    let mut out: Vec<Marker> = Vec::new();
    // Per thread, the marker a tail extends.
    let mut last: FxHashMap<Track, usize> = FxHashMap::default();
    for s in &calls {
        match role_of(s) {
            Some(PyRole::Step) => {
                last.insert(s.track, out.len());
                out.push(Marker::of(s));
            }
            Some(PyRole::Tail) => {
                if let Some(&i) = last.get(&s.track) {
                    out[i].end_ns = out[i].end_ns.max(s.end_ns());
                }
            }
            None => {}
        }
    }
    out
}

/// The annotation names a pattern could have matched, most frequent first (for the note that says
/// a pattern found nothing).
pub(super) fn frequent_annotations(trace: &Trace, n: usize) -> Vec<(String, u64)> {
    let mut by: FxHashMap<Sym, u64> = FxHashMap::default();
    for s in &trace.user_annotations {
        *by.entry(s.name).or_default() += 1;
    }
    let mut v: Vec<(String, u64)> = by
        .into_iter()
        .map(|(s, c)| (trace.name(s).to_string(), c))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// The marker spans, deduplicated, in order of (start, longer first, file order).
pub(super) fn name_markers(trace: &Trace, regex: &Regex, names: &SpanNames) -> Vec<Span> {
    let matches: FxHashSet<Sym> = names
        .get(trace)
        .iter()
        .copied()
        .filter(|&n| regex.is_match(trace.name(n)))
        .collect();
    let mut seen: FxHashSet<(Sym, Track, i64, i64)> = FxHashSet::default();
    let mut out: Vec<Span> = Vec::new();
    if matches.is_empty() {
        return out;
    }
    for s in trace.user_annotations.iter().chain(trace.cpu_ops.iter()) {
        if matches.contains(&s.name) && seen.insert((s.name, s.track, s.ts_ns, s.dur_ns)) {
            out.push(s);
        }
    }
    // Stable: equal starts and durations keep file order.
    out.sort_by_key(|s| (s.ts_ns, std::cmp::Reverse(s.dur_ns)));
    out
}
