//! The per-step sections of the seed, each writing flat keys (`dense.wq_b.gbps`) into a step's row.
//!
//! Every weight byte count is the spec's weights table read per kernel (`Spec::kl1_bytes`, ESTIMATED,
//! `docs/formulas.md`); the reconstruct kernels' bytes are the slice each launch's grid names (also
//! `kl1-shapes`), not weights of the model. Every duration comes from the trace (MEASURED); every GB/s is the
//! one over the other. Sections fail on a step that does not fit the KL1 contract (`docs/kl1-window.md`) with
//! a reason naming what was found, and on any number that is not finite with the key it would have been
//! written under.

use std::collections::BTreeMap;

use kineto_trace::interval::{sweep, union_within};
use kl1_shapes::{
    DenseLaunch, ExpertSplit, Kl1Bytes, ReconstructKernel, Spec,
    expected_distinct_experts_per_rank, reconstruct_bytes, reconstruct_shape, shared_runs,
};

use crate::Error;
use crate::captures::CaptureKind;
use crate::rules::{BucketId, Kl1FamilyId, Kl1Rules, L2PF_BUCKET};
use crate::steps::{Kernel, Kl1Step};

/// ns per ms.
const NS_PER_MS: f64 = 1e6;
/// ns per µs.
const NS_PER_US: f64 = 1e3;

/// Why a step could not be analysed (the caller adds window, capture and rank).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fault {
    /// The step does not fit the contract.
    Step { step: u64, reason: String },
    /// A number is not finite.
    NonFinite {
        step: u64,
        field: String,
        value: f64,
    },
}

/// One step's flat output row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Row {
    step: u64,
    pub(crate) values: BTreeMap<String, f64>,
}

impl Row {
    fn new(step: u64) -> Row {
        Row {
            step,
            values: BTreeMap::new(),
        }
    }

    /// Writes `key`, refusing a value that is not finite.
    fn put(&mut self, key: impl Into<String>, value: f64) -> Result<(), Fault> {
        let key = key.into();
        if !value.is_finite() {
            return Err(Fault::NonFinite {
                step: self.step,
                field: key,
                value,
            });
        }
        self.values.insert(key, value);
        Ok(())
    }

    /// GB/s of `bytes` over `dur_ns`, written to `key`; a zero duration is an infinite rate, refused by key.
    fn put_gbps(&mut self, key: impl Into<String>, bytes: f64, dur_ns: i64) -> Result<(), Fault> {
        let key = key.into();
        match kl1_shapes::gbps(bytes, dur_ns as f64 / NS_PER_US) {
            Ok(v) => self.put(key, v),
            Err(_) => Err(Fault::NonFinite {
                step: self.step,
                field: key,
                value: if dur_ns == 0 && bytes > 0.0 {
                    f64::INFINITY
                } else {
                    f64::NAN
                },
            }),
        }
    }

    fn fault(&self, reason: impl Into<String>) -> Fault {
        Fault::Step {
            step: self.step,
            reason: reason.into(),
        }
    }
}

/// The families the analysis reads, resolved once.
struct Fams {
    mrow: Kl1FamilyId,
    mrow_head: Kl1FamilyId,
    exl3_gemm: Kl1FamilyId,
    reconstruct: Kl1FamilyId,
    reconstruct_had: Kl1FamilyId,
    hc_prenorm: Kl1FamilyId,
    router: Kl1FamilyId,
    route_topk: Kl1FamilyId,
    smoe_rot: Kl1FamilyId,
    smoe_gu: Kl1FamilyId,
    smoe_down: Kl1FamilyId,
    smoe_fused: Kl1FamilyId,
    tf_gu: Kl1FamilyId,
    tf_down: Kl1FamilyId,
    tf_aux: Kl1FamilyId,
    l2pf: Kl1FamilyId,
}

/// A bandwidth the "most experts readable" figures are computed at, and its output key suffix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ceiling {
    /// `273` in `unique_max_at_273`.
    pub(crate) key: String,
    /// GB/s.
    pub(crate) gbps: f64,
}

/// Everything the sections need from the spec and the rules, computed once.
pub(crate) struct Ctx<'a> {
    pub(crate) spec: &'a Spec,
    pub(crate) rules: &'a Kl1Rules,
    f: Fams,
    /// One rank's weight bytes per kernel, read from the spec's weights table once.
    pub(crate) bytes: Kl1Bytes,
    pub(crate) ceilings: Vec<Ceiling>,
    l2pf_bucket: BucketId,
}

/// `273.0` → `273`, `231.5` → `231_5`: a bandwidth as an output-key fragment (no `.`, which separates keys).
pub(crate) fn gbps_key(gbps: f64) -> String {
    if gbps.fract() == 0.0 {
        format!("{gbps:.0}")
    } else {
        format!("{gbps}").replace('.', "_")
    }
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(spec: &'a Spec, rules: &'a Kl1Rules) -> Result<Ctx<'a>, Error> {
        let id = |name: &str| {
            rules.family_id(name).ok_or_else(|| Error::Rules {
                origin: rules.origin().to_string(),
                reason: format!("family `{name}` is not defined"),
            })
        };
        let f = Fams {
            mrow: id("mrow")?,
            mrow_head: id("mrow_head")?,
            exl3_gemm: id("exl3_gemm")?,
            reconstruct: id("reconstruct")?,
            reconstruct_had: id("reconstruct_had")?,
            hc_prenorm: id("hc_prenorm")?,
            router: id("router")?,
            route_topk: id("route_topk")?,
            smoe_rot: id("smoe_rot")?,
            smoe_gu: id("smoe_gu")?,
            smoe_down: id("smoe_down")?,
            smoe_fused: id("smoe_fused")?,
            tf_gu: id("tf_gu")?,
            tf_down: id("tf_down")?,
            tf_aux: id("tf_aux")?,
            l2pf: id("l2pf")?,
        };
        let layers = spec.model().moe_layers;
        let p = rules.prefill();
        if p.full_layers > layers {
            return Err(Error::Rules {
                origin: rules.origin().to_string(),
                reason: format!(
                    "prefill full_layers = {} exceeds the spec's {} MoE layers ({})",
                    p.full_layers,
                    layers,
                    spec.name()
                ),
            });
        }
        let gpu = spec.gpu();
        let mut ceilings = vec![Ceiling {
            key: gbps_key(gpu.spec_bandwidth_gbps),
            gbps: gpu.spec_bandwidth_gbps,
        }];
        for r in &gpu.read_bandwidths {
            if r.label == model_shapes::BandwidthLabel::Claim {
                let c = Ceiling {
                    key: gbps_key(r.low_gbps),
                    gbps: r.low_gbps,
                };
                if !ceilings.contains(&c) {
                    ceilings.push(c);
                }
            }
        }
        Ok(Ctx {
            spec,
            rules,
            f,
            bytes: spec.kl1_bytes(),
            ceilings,
            l2pf_bucket: rules
                .bucket_id(L2PF_BUCKET)
                .unwrap_or(BucketId(rules.buckets().len() as u16)),
        })
    }
}

/// One step's row for a capture of `kind`; `None` when the step is not analysed (the last step, which has no
/// period; a prefill chunk under `prefill.min_rows`).
pub(crate) fn step_row(
    ctx: &Ctx<'_>,
    kind: CaptureKind,
    s: &Kl1Step,
) -> Result<Option<Row>, Fault> {
    let Some(period) = s.period else {
        return Ok(None);
    };
    let mut row = Row::new(s.index);
    // `requests` only bounds the decode experts (`smoe.gbps_if_6_per_request`); a marker without it (a
    // prefill marker, a pattern whose `requests` group is optional) loses just those keys.
    let Some(rows) = s.rows else {
        // A `rows` group that gave no number (out of range, not an integer) is named as such.
        if let Some((_, why)) = s.unreadable.iter().find(|(g, _)| g == "rows") {
            return Err(row.fault(format!("its annotation's `rows` {why}")));
        }
        return Err(row.fault(
            "its annotation gives no `rows` (docs/kl1-window.md: `kl1.step#N phase=P rows=R requests=Q`)",
        ));
    };
    let requests = s.requests;
    if kind == CaptureKind::Prefill && rows < ctx.rules.prefill().min_rows {
        return Ok(None);
    }
    row.put("period_ms", period as f64 / NS_PER_MS)?;
    row.put("rows", rows as f64)?;
    sp1_split(ctx, s, &mut row)?;
    moe_wall(ctx, s, &mut row)?;
    family_totals(ctx, s, &mut row)?;
    match kind {
        CaptureKind::Decode => {
            dense_decode(ctx, s, &mut row)?;
            smoe_decode(ctx, s, rows, requests, &mut row)?;
        }
        CaptureKind::Prefill => {
            tf_prefill(ctx, s, rows, &mut row)?;
            reconstruct_prefill(ctx, s, &mut row)?;
        }
    }
    Ok(Some(row))
}

/// SP1's exclusive budget, three ways: `sp1.*` with the rules' buckets (l2pf in its family's bucket),
/// `l2pf_apart.*` with l2pf kernels in a bucket of their own, `no_l2pf.*` without l2pf kernels. ms.
fn sp1_split(ctx: &Ctx<'_>, s: &Kl1Step, row: &mut Row) -> Result<(), Fault> {
    type BucketOf<'c> = Box<dyn Fn(&Kernel) -> Option<BucketId> + 'c>;
    let variants: [(&str, BucketOf<'_>); 3] = [
        ("sp1", Box::new(|k: &Kernel| Some(k.bucket))),
        (
            "l2pf_apart",
            Box::new(|k: &Kernel| {
                Some(if k.family == ctx.f.l2pf {
                    ctx.l2pf_bucket
                } else {
                    k.bucket
                })
            }),
        ),
        (
            "no_l2pf",
            Box::new(|k: &Kernel| (k.family != ctx.f.l2pf).then_some(k.bucket)),
        ),
    ];
    for (tag, bucket_of) in variants {
        let sw = sweep(
            s.kernels
                .iter()
                .filter_map(|k| bucket_of(k).map(|b| (k.start, k.end, b))),
            s.lo,
            s.hi,
        );
        for (b, ns) in &sw.exclusive {
            let name = ctx.rules.bucket_name(*b);
            row.put(format!("{tag}.{name}"), *ns as f64 / NS_PER_MS)?;
        }
        row.put(format!("{tag}.idle"), sw.idle() as f64 / NS_PER_MS)?;
    }
    Ok(())
}

/// Wall time of the MoE phase: unions of router + top-k + expert kernels, of the expert kernels, and of
/// router + top-k. ms.
fn moe_wall(ctx: &Ctx<'_>, s: &Kl1Step, row: &mut Row) -> Result<(), Fault> {
    let f = &ctx.f;
    let routing = [f.router, f.route_topk];
    let experts = [
        f.smoe_rot,
        f.smoe_gu,
        f.smoe_down,
        f.smoe_fused,
        f.tf_gu,
        f.tf_down,
        f.tf_aux,
    ];
    let union_of = |fams: &[Kl1FamilyId]| {
        union_within(
            s.kernels
                .iter()
                .filter(|k| fams.contains(&k.family))
                .map(|k| (k.start, k.end)),
            s.lo,
            s.hi,
        ) as f64
            / NS_PER_MS
    };
    let all: Vec<Kl1FamilyId> = routing.iter().chain(&experts).copied().collect();
    row.put("moe_union_ms", union_of(&all))?;
    row.put("expert_union_ms", union_of(&experts))?;
    row.put("router_topk_union_ms", union_of(&routing))?;
    Ok(())
}

/// Per family present in the step: the union and the sum of its kernels' time. ms.
fn family_totals(ctx: &Ctx<'_>, s: &Kl1Step, row: &mut Row) -> Result<(), Fault> {
    let mut by: BTreeMap<Kl1FamilyId, Vec<(i64, i64)>> = BTreeMap::new();
    for k in &s.kernels {
        by.entry(k.family).or_default().push((k.start, k.end));
    }
    for (fam, iv) in by {
        let name = &ctx.rules.family(fam).name;
        let sum = iv
            .iter()
            .fold(0i64, |acc, (a, b)| acc.saturating_add(b.saturating_sub(*a)));
        let union = union_within(iv.iter().copied(), s.lo, s.hi);
        row.put(format!("family_union_ms.{name}"), union as f64 / NS_PER_MS)?;
        row.put(format!("family_sum_ms.{name}"), sum as f64 / NS_PER_MS)?;
    }
    Ok(())
}

/// Σ durations, ns, saturating (the durations come from the trace, which may be hostile).
fn sum_ns<'k>(ks: impl IntoIterator<Item = &'k Kernel>) -> i64 {
    sat_sum(ks.into_iter().map(Kernel::dur))
}

/// Σ of trace-derived ns, saturating at `i64::MAX`/`MIN` instead of overflowing.
fn sat_sum(ns: impl IntoIterator<Item = i64>) -> i64 {
    ns.into_iter().fold(0i64, i64::saturating_add)
}

/// Dense decode: the m-row launches, four a layer in forward order (launch j of a layer is kernel j, j + 4, …
/// of the step), each checked against the spec's K; the LM head; the router and mHC pre-norm launches.
fn dense_decode(ctx: &Ctx<'_>, s: &Kl1Step, row: &mut Row) -> Result<(), Fault> {
    let f = &ctx.f;
    let ks: Vec<&Kernel> = s.kernels.iter().filter(|k| k.family == f.mrow).collect();
    let per_layer = ctx.bytes.dense.len();
    if ks.is_empty() || !ks.len().is_multiple_of(per_layer) {
        return Err(row.fault(format!(
            "{} mrow launches, not a positive multiple of {per_layer} (wq_a+wkv, wq_b, wo_a, wo_b a layer)",
            ks.len()
        )));
    }
    for (j, lin) in ctx.bytes.dense.iter().enumerate() {
        let mine: Vec<&Kernel> = ks.iter().skip(j).step_by(per_layer).copied().collect();
        for (i, k) in mine.iter().enumerate() {
            if k.k != Some(lin.bits) {
                let found = k.k.map_or("no K".to_string(), |b| format!("K {}", b.get()));
                return Err(row.fault(format!(
                    "{} launch {i} (`{}`): template {found}, but the spec's {} is K {}",
                    lin.name,
                    k.name,
                    lin.name,
                    lin.bits.get()
                )));
            }
        }
        let ns = sum_ns(mine.iter().copied());
        let bytes = lin.bytes();
        let p = format!("dense.{}", lin.name);
        row.put(format!("{p}.launches"), mine.len() as f64)?;
        row.put(format!("{p}.us_per_step"), ns as f64 / NS_PER_US)?;
        row.put(format!("{p}.mb_per_launch"), bytes / 1e6)?;
        row.put_gbps(format!("{p}.gbps"), bytes * mine.len() as f64, ns)?;
    }
    let ns = sum_ns(ks.iter().copied());
    let layer_bytes: f64 = ctx.bytes.dense.iter().map(DenseLaunch::bytes).sum();
    let total = layer_bytes * (ks.len() / per_layer) as f64;
    row.put("dense.all.launches", ks.len() as f64)?;
    row.put("dense.all.us_per_step", ns as f64 / NS_PER_US)?;
    row.put("dense.all.mb_per_step", total / 1e6)?;
    row.put_gbps("dense.all.gbps", total, ns)?;

    // The LM head: the m-row head kernel, or an exl3_gemm at the head's K. Read once a step however many
    // launches it takes.
    let head: Vec<&Kernel> = s
        .kernels
        .iter()
        .filter(|k| {
            k.family == f.mrow_head
                || (k.family == f.exl3_gemm && k.k == Some(ctx.bytes.lm_head_bits))
        })
        .collect();
    if !head.is_empty() {
        let ns = sum_ns(head.iter().copied());
        let bytes = ctx.bytes.lm_head;
        row.put("dense.lm_head.launches", head.len() as f64)?;
        row.put("dense.lm_head.us_per_step", ns as f64 / NS_PER_US)?;
        row.put("dense.lm_head.mb_per_step", bytes / 1e6)?;
        row.put_gbps("dense.lm_head.gbps", bytes, ns)?;
    }
    for (fam, name, bytes) in [
        (f.router, "router", ctx.bytes.router),
        (f.hc_prenorm, "hc_prenorm", ctx.bytes.mhc_prenorm),
    ] {
        let ks2: Vec<&Kernel> = s.kernels.iter().filter(|k| k.family == fam).collect();
        if ks2.is_empty() {
            continue;
        }
        let ns = sum_ns(ks2.iter().copied());
        let p = format!("dense.{name}");
        row.put(format!("{p}.launches"), ks2.len() as f64)?;
        row.put(format!("{p}.us_per_step"), ns as f64 / NS_PER_US)?;
        row.put(format!("{p}.mb_per_launch"), bytes / 1e6)?;
        row.put_gbps(format!("{p}.gbps"), bytes * ks2.len() as f64, ns)?;
    }
    Ok(())
}

/// One MoE layer of a step: its gate|up kernel, its down kernel (the same kernel when fused) and the input
/// rotation before it, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layer<'k> {
    pub(crate) rot: Option<&'k Kernel>,
    pub(crate) gu: &'k Kernel,
    pub(crate) down: &'k Kernel,
}

impl Layer<'_> {
    /// From the layer's first kernel (rotation, else gate|up) starting to its down kernel ending, ns.
    pub(crate) fn span(&self) -> i64 {
        self.down
            .end
            .saturating_sub(self.rot.unwrap_or(self.gu).start)
    }

    /// How long the down kernel runs after gate|up has ended, ns: PDL lets down start early, and the part
    /// before gate|up ends is waiting, not reading. 0 for a fused kernel.
    pub(crate) fn down_after_gu(&self) -> i64 {
        if std::ptr::eq(self.gu, self.down) {
            return 0;
        }
        self.down
            .end
            .saturating_sub(self.down.start.max(self.gu.end))
            .max(0)
    }
}

/// The step's MoE layers, in order: walking the expert kernels by start time, a layer is an optional
/// rotation, a gate|up and the next down (or one fused kernel). Anything else (a down with no gate|up before
/// it, two gate|ups in a row, a rotation with no gate|up after it) is an error naming what was found.
pub(crate) fn moe_layers<'k>(
    s: &'k Kl1Step,
    rot: Option<Kl1FamilyId>,
    gu: Kl1FamilyId,
    down: Kl1FamilyId,
    fused: Option<Kl1FamilyId>,
) -> Result<Vec<Layer<'k>>, String> {
    let mut out = Vec::new();
    let mut pending_rot: Option<&Kernel> = None;
    let mut pending_gu: Option<&Kernel> = None;
    let name = |k: &Kernel| k.name.to_string();
    for k in &s.kernels {
        let at = out.len();
        if Some(k.family) == rot {
            if let Some(g) = pending_gu {
                return Err(format!(
                    "MoE layer {at}: rotation `{}` before the down kernel of gate|up `{}`",
                    name(k),
                    name(g)
                ));
            }
            if pending_rot.is_some() {
                return Err(format!(
                    "MoE layer {at}: two rotations `{}` without a gate|up between them",
                    name(k)
                ));
            }
            pending_rot = Some(k);
        } else if k.family == gu {
            if let Some(g) = pending_gu {
                return Err(format!(
                    "MoE layer {at}: gate|up `{}` has no down kernel before the next gate|up",
                    name(g)
                ));
            }
            pending_gu = Some(k);
        } else if k.family == down {
            let Some(g) = pending_gu.take() else {
                return Err(format!(
                    "MoE layer {at}: down `{}` has no gate|up before it",
                    name(k)
                ));
            };
            out.push(Layer {
                rot: pending_rot.take(),
                gu: g,
                down: k,
            });
        } else if Some(k.family) == fused {
            if let Some(g) = pending_gu {
                return Err(format!(
                    "MoE layer {at}: gate|up `{}` has no down kernel before the fused kernel",
                    name(g)
                ));
            }
            out.push(Layer {
                rot: pending_rot.take(),
                gu: k,
                down: k,
            });
        }
    }
    if let Some(g) = pending_gu {
        return Err(format!(
            "MoE layer {}: gate|up `{}` has no down kernel",
            out.len(),
            name(g)
        ));
    }
    if let Some(r) = pending_rot {
        return Err(format!(
            "MoE layer {}: rotation `{}` has no gate|up after it",
            out.len(),
            name(r)
        ));
    }
    Ok(out)
}

/// The experts a step could have read at `top_k` per request: under a whole-expert split a rank holds
/// 1/ranks of them.
fn per_request_bound(ctx: &Ctx<'_>, requests: u64) -> f64 {
    let per_request = (ctx.spec.model().top_k * requests) as f64;
    match ctx.spec.parallelism().expert_split {
        ExpertSplit::Tensor => per_request,
        ExpertSplit::Whole => per_request / ctx.spec.parallelism().ranks as f64,
    }
}

/// Sparse-MoE decode: the graph's slots and rows from the gate|up grid, the layers' spans, and the routed
/// experts' bandwidth at the uniform-routing count, at top-k per request, and the counts the GPU's spec and
/// claimed bandwidths would allow.
fn smoe_decode(
    ctx: &Ctx<'_>,
    s: &Kl1Step,
    rows: u64,
    requests: Option<u64>,
    row: &mut Row,
) -> Result<(), Fault> {
    let f = &ctx.f;
    let layers = moe_layers(
        s,
        Some(f.smoe_rot),
        f.smoe_gu,
        f.smoe_down,
        Some(f.smoe_fused),
    )
    .map_err(|r| row.fault(r))?;
    let want = ctx.spec.model().moe_layers;
    if layers.len() as u64 != want {
        return Err(row.fault(format!(
            "{} smoe layers, but the spec has {want} MoE layers",
            layers.len()
        )));
    }
    let m = rows;
    if m == 0 {
        return Err(row.fault("a decode step with 0 rows"));
    }
    // A kernel event without `args.grid` reads as grid [0, 0, 0]; a zero grid x would give 0 graph slots.
    if let Some((i, l)) = layers.iter().enumerate().find(|(_, l)| l.gu.grid[0] == 0) {
        return Err(row.fault(format!(
            "MoE layer {i}: gate|up kernel `{}` has no grid (grid {:?}: `args.grid` missing or zero; \
             docs/kl1-window.md: grid x = slots × I_rank/128)",
            l.gu.name, l.gu.grid
        )));
    }
    let units = ctx.spec.expert_intermediate_per_rank() / 128;
    let g0 = u64::from(layers[0].gu.grid[0]);
    if units == 0 || g0 % units != 0 {
        return Err(row.fault(format!(
            "gate|up grid x = {g0} is not a multiple of the rank's {units} 128-column groups per expert \
             (docs/kl1-window.md: grid x = slots × I_rank/128)"
        )));
    }
    let slots = g0 / units;
    let top_k = ctx.spec.model().top_k;
    let n = layers.len() as f64;
    let span = sat_sum(layers.iter().map(Layer::span));
    let gu = sat_sum(layers.iter().map(|l| l.gu.dur()));
    let down_after = sat_sum(layers.iter().map(Layer::down_after_gu));
    let rot = sum_ns(layers.iter().filter_map(|l| l.rot));
    crate::physics::shared_expert_fits(m, n, ctx.bytes.shared_expert, span, ctx.spec.gpu())
        .map_err(|r| row.fault(r))?;
    let uni = expected_distinct_experts_per_rank(ctx.spec, m);
    row.put("smoe.rows", m as f64)?;
    if let Some(requests) = requests {
        row.put("smoe.requests", requests as f64)?;
    }
    row.put("smoe.graph_slots", slots as f64)?;
    row.put("smoe.graph_rows", (slots / (top_k + 1)) as f64)?;
    row.put("smoe.span_ms", span as f64 / NS_PER_MS)?;
    row.put("smoe.gu_ms", gu as f64 / NS_PER_MS)?;
    row.put("smoe.down_after_gu_ms", down_after as f64 / NS_PER_MS)?;
    row.put("smoe.rot_ms", rot as f64 / NS_PER_MS)?;
    row.put("smoe.shared_runs", shared_runs(m) as f64)?;
    row.put("smoe.unique_uniform", uni)?;
    row.put_gbps(
        "smoe.gbps_if_uniform",
        ctx.bytes.moe_layer_weight_bytes(uni, m) * n,
        span,
    )?;
    if let Some(requests) = requests {
        let six = uni.min(per_request_bound(ctx, requests));
        row.put_gbps(
            "smoe.gbps_if_6_per_request",
            ctx.bytes.moe_layer_weight_bytes(six, m) * n,
            span,
        )?;
    }
    let per_layer_us = span as f64 / NS_PER_US / n;
    for c in &ctx.ceilings {
        let key = format!("smoe.unique_max_at_{}", c.key);
        let v = ctx
            .bytes
            .experts_readable(c.gbps, per_layer_us, m)
            .map_err(|_| Fault::NonFinite {
                step: s.index,
                field: key.clone(),
                value: per_layer_us,
            })?;
        row.put(key, v)?;
    }
    Ok(())
}

/// The prefill expert path: the first `prefill.full_layers` layers over every row, the rest over the last
/// `prefill.suffix_rows` rows; gate|up and down GB/s at the uniform-routing expert count.
fn tf_prefill(ctx: &Ctx<'_>, s: &Kl1Step, rows: u64, row: &mut Row) -> Result<(), Fault> {
    let f = &ctx.f;
    let layers = moe_layers(s, None, f.tf_gu, f.tf_down, None).map_err(|r| row.fault(r))?;
    let want = ctx.spec.model().moe_layers;
    if layers.len() as u64 != want {
        return Err(row.fault(format!(
            "{} tf layers in a prefill step, but the spec has {want} MoE layers",
            layers.len()
        )));
    }
    let p = ctx.rules.prefill();
    let full = usize::try_from(p.full_layers)
        .unwrap_or(usize::MAX)
        .min(layers.len());
    let (head, tail) = layers.split_at(full);
    for (tag, sel, group_rows) in [
        ("full", head, rows),
        ("suffix", tail, p.suffix_rows.min(rows)),
    ] {
        if sel.is_empty() {
            continue;
        }
        let uni = expected_distinct_experts_per_rank(ctx.spec, group_rows);
        let gu = sat_sum(sel.iter().map(|l| l.gu.dur()));
        let down = sat_sum(sel.iter().map(|l| l.down.dur()));
        let span = sat_sum(sel.iter().map(Layer::span));
        let n = sel.len() as f64;
        let k = format!("tf.{tag}");
        row.put(format!("{k}.layers"), n)?;
        row.put(format!("{k}.rows"), group_rows as f64)?;
        row.put(format!("{k}.unique_uniform"), uni)?;
        row.put(format!("{k}.gu_ms"), gu as f64 / NS_PER_MS)?;
        row.put(format!("{k}.down_ms"), down as f64 / NS_PER_MS)?;
        row.put_gbps(
            format!("{k}.gu_gbps_if_uniform"),
            uni * ctx.bytes.expert.gate_up * n,
            gu,
        )?;
        row.put_gbps(
            format!("{k}.down_gbps_if_uniform"),
            uni * ctx.bytes.expert.down * n,
            down,
        )?;
        row.put(format!("{k}.span_ms"), span as f64 / NS_PER_MS)?;
    }
    Ok(())
}

/// Reconstruct launches grouped by the tensor slice their grid implies (`KxN`, `KxN_had` for the fused
/// Hadamard kernel); GB/s of read + written bytes.
fn reconstruct_prefill(ctx: &Ctx<'_>, s: &Kl1Step, row: &mut Row) -> Result<(), Fault> {
    let f = &ctx.f;
    let mut by: BTreeMap<String, Vec<(&Kernel, ReconstructKernel)>> = BTreeMap::new();
    for k in &s.kernels {
        let kind = if k.family == f.reconstruct {
            ReconstructKernel::Plain
        } else if k.family == f.reconstruct_had {
            ReconstructKernel::Hadamard
        } else {
            continue;
        };
        let shape = reconstruct_shape(kind, k.grid)
            .map_err(|e| row.fault(format!("reconstruct `{}`: {e}", k.name)))?;
        let suffix = if kind == ReconstructKernel::Hadamard {
            "_had"
        } else {
            ""
        };
        by.entry(format!("{}x{}{suffix}", shape.k(), shape.n()))
            .or_default()
            .push((k, kind));
    }
    let (mut all_bytes, mut all_ns, mut all_n) = (0.0f64, 0i64, 0usize);
    for (shape, group) in &by {
        let mut bytes = 0.0f64;
        let mut ksum = 0u64;
        for (k, kind) in group {
            let Some(bits) = k.k else {
                return Err(row.fault(format!(
                    "reconstruct `{}` without a template K (k_arg of its family)",
                    k.name
                )));
            };
            let b = reconstruct_bytes(*kind, k.grid, bits)
                .map_err(|e| row.fault(format!("reconstruct `{}`: {e}", k.name)))?;
            bytes += b.total() as f64;
            ksum += u64::from(bits.get());
        }
        let ns = sum_ns(group.iter().map(|(k, _)| *k));
        let p = format!("reconstruct.{shape}");
        row.put(format!("{p}.launches"), group.len() as f64)?;
        row.put(format!("{p}.K"), ksum as f64 / group.len() as f64)?;
        row.put(format!("{p}.us"), ns as f64 / NS_PER_US)?;
        row.put_gbps(format!("{p}.gbps"), bytes, ns)?;
        all_bytes += bytes;
        all_ns = all_ns.saturating_add(ns);
        all_n += group.len();
    }
    if all_n > 0 {
        row.put("reconstruct.all.launches", all_n as f64)?;
        row.put("reconstruct.all.us", all_ns as f64 / NS_PER_US)?;
        row.put("reconstruct.all.gb", all_bytes / 1e9)?;
        row.put_gbps("reconstruct.all.gbps", all_bytes, all_ns)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(start: i64, end: i64) -> Kernel {
        Kernel {
            name: "k".into(),
            family: Kl1FamilyId(0),
            bucket: BucketId(0),
            start,
            end,
            grid: [1, 1, 1],
            k: None,
        }
    }

    /// Sums and differences of trace times saturate instead of overflowing (a panic in debug builds).
    #[test]
    fn hostile_times_saturate() {
        let (a, b) = (kernel(i64::MIN, i64::MAX), kernel(0, i64::MAX));
        assert_eq!(a.dur(), i64::MAX);
        assert_eq!(sum_ns([&a, &b]), i64::MAX);
        assert_eq!(sat_sum([i64::MIN, -1]), i64::MIN);
        let l = Layer {
            rot: None,
            gu: &a,
            down: &b,
        };
        assert_eq!(l.span(), i64::MAX);
        assert_eq!(l.down_after_gu(), 0);
        let l = Layer {
            rot: Some(&a),
            gu: &b,
            down: &b,
        };
        assert_eq!(l.span(), i64::MAX);
    }
}
