//! `kineto kernels`: one row per kernel, in file order.

use crate::render::{Col, Kind, Show, Val};
use kineto_trace::Trace;
use kineto_trace::analysis::Analysis;
use kineto_trace::family::{Rules, UNMATCHED};
use std::borrow::Cow;

/// One kernel with what the analysis says about it.
pub struct KernelRow<'a> {
    /// The trace file.
    pub file: &'a str,
    /// The trace.
    pub trace: &'a Trace,
    /// Index in the trace's kernels.
    pub index: usize,
    /// Its step.
    pub step: Option<u32>,
    /// Family and bucket names (`None`: unmatched).
    pub family: Option<(&'a str, &'a str)>,
    /// How the family was found: `rule`, `fallback` or `unmatched`.
    pub matched: &'static str,
    /// Which rule or fallback word (`rule 12 (line 80)`), empty when unmatched.
    pub how: String,
    /// Its launch, an index into `Trace::launches`.
    pub launch: Option<usize>,
    /// Innermost annotation around the launch.
    pub annotation: Option<&'a str>,
    /// Innermost cpu op around the launch.
    pub cpu_op: Option<&'a str>,
    /// Started before an earlier kernel on its stream had ended.
    pub overlap: bool,
}

impl<'a> KernelRow<'a> {
    /// The row of kernel `index`.
    pub fn of(
        file: &'a str,
        trace: &'a Trace,
        a: &'a Analysis,
        rules: &'a Rules,
        index: usize,
        step: Option<u32>,
        overlap: bool,
    ) -> KernelRow<'a> {
        let launch = a.links.launch_of(kineto_trace::GpuKind::Kernel, index);
        let label = a.classes.label(index);
        let family = a.classes.of(index).map(|f| {
            let f = rules.family(f);
            (f.name.as_str(), f.bucket.as_str())
        });
        KernelRow {
            file,
            trace,
            index,
            step,
            family,
            matched: label.kind().as_str(),
            how: rules.how(label),
            launch,
            annotation: launch
                .and_then(|l| a.links.annotations(trace, l).next())
                .map(|s| trace.name(s.name)),
            cpu_op: launch
                .and_then(|l| a.links.cpu_ops(trace, l).next())
                .map(|s| trace.name(s.name)),
            overlap,
        }
    }

    fn op(&self) -> &'a kineto_trace::GpuOp {
        &self.trace.kernels[self.index]
    }
}

fn dims(d: [u32; 3]) -> Val<'static> {
    Val::Str(Cow::Owned(format!("{}x{}x{}", d[0], d[1], d[2])))
}

/// The columns of `kineto kernels`, in order.
pub fn columns<'a>() -> &'a [Col<KernelRow<'a>>] {
    &[
        Col {
            name: "file",
            kind: Kind::Plain,
            head: "file",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.file)),
        },
        Col {
            name: "rank",
            kind: Kind::Plain,
            head: "rank",
            show: Show::No,
            get: |r| Val::u(r.trace.header.rank),
        },
        Col {
            name: "kernel",
            kind: Kind::Plain,
            head: "kernel",
            show: Show::Right(6),
            get: |r| Val::U(r.index as u64),
        },
        Col {
            name: "step",
            kind: Kind::Plain,
            head: "step",
            show: Show::Right(5),
            get: |r| Val::u(r.step),
        },
        Col {
            name: "name",
            kind: Kind::Plain,
            head: "name",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.trace.name(r.op().name))),
        },
        Col {
            name: "family",
            kind: Kind::Plain,
            head: "family",
            show: Show::No,
            get: |r| Val::text(r.family.map(|f| f.0)),
        },
        Col {
            name: "bucket",
            kind: Kind::Plain,
            head: "bucket",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.family.map_or(UNMATCHED, |f| f.1))),
        },
        Col {
            name: "matched",
            kind: Kind::Plain,
            head: "matched",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(r.matched)),
        },
        Col {
            name: "how",
            kind: Kind::Plain,
            head: "how",
            show: Show::No,
            get: |r| Val::Str(Cow::Borrowed(&r.how)),
        },
        Col {
            name: "ts",
            kind: Kind::Time,
            head: "ts",
            show: Show::Right(14),
            get: |r| Val::I(r.op().ts_ns),
        },
        Col {
            name: "dur",
            kind: Kind::Dur,
            head: "dur",
            show: Show::Right(12),
            get: |r| Val::I(r.op().dur_ns),
        },
        Col {
            name: "device",
            kind: Kind::Plain,
            head: "device",
            show: Show::No,
            get: |r| Val::ns(r.op().device),
        },
        Col {
            name: "stream",
            kind: Kind::Plain,
            head: "stream",
            show: Show::Right(8),
            get: |r| Val::ns(r.op().stream),
        },
        Col {
            name: "correlation",
            kind: Kind::Plain,
            head: "correlation",
            show: Show::No,
            get: |r| Val::u(r.op().correlation.map(|c| c.get())),
        },
        Col {
            name: "launch",
            kind: Kind::Plain,
            head: "launch",
            show: Show::No,
            get: |r| Val::text(r.launch.map(|l| r.trace.name(r.trace.launches[l].name))),
        },
        Col {
            name: "launch_tid",
            kind: Kind::Plain,
            head: "launch tid",
            show: Show::No,
            get: |r| {
                Val::text(
                    r.launch
                        .map(|l| r.trace.track(r.trace.launches[l].track).tid.to_string()),
                )
            },
        },
        Col {
            name: "annotation",
            kind: Kind::Plain,
            head: "annotation",
            show: Show::No,
            get: |r| Val::text(r.annotation),
        },
        Col {
            name: "cpu_op",
            kind: Kind::Plain,
            head: "cpu op",
            show: Show::No,
            get: |r| Val::text(r.cpu_op),
        },
        Col {
            name: "grid",
            kind: Kind::Plain,
            head: "grid",
            show: Show::No,
            get: |r| dims(r.op().grid),
        },
        Col {
            name: "block",
            kind: Kind::Plain,
            head: "block",
            show: Show::No,
            get: |r| dims(r.op().block),
        },
        Col {
            name: "same_stream_overlap",
            kind: Kind::Plain,
            head: "ovl",
            show: Show::No,
            get: |r| Val::Bool(r.overlap),
        },
        // Table-only tail: family (or "(unmatched)"), how it was matched, then the name, last so it
        // can be long.
        Col {
            name: "",
            kind: Kind::Plain,
            head: "family",
            show: Show::Left(24),
            get: |r| Val::Str(Cow::Borrowed(r.family.map_or("(unmatched)", |f| f.0))),
        },
        Col {
            name: "",
            kind: Kind::Plain,
            head: "matched",
            show: Show::Left(9),
            get: |r| Val::Str(Cow::Borrowed(r.matched)),
        },
        Col {
            name: "",
            kind: Kind::Plain,
            head: "name",
            show: Show::Rest,
            get: |r| Val::Str(Cow::Borrowed(r.trace.name(r.op().name))),
        },
    ]
}
