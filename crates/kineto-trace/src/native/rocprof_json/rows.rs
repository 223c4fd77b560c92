//! What a rocprofv3 JSON record becomes in the model: a kernel dispatch, a memory copy, an API call
//! (HIP, HSA, RCCL) or a roctx marker, with the tables of its process (`super::ProcessRead`).
//!
//! What it is not: the walk of the text (`walk.rs`), or the order the lists are built in (`super`).

use super::super::TraceBuilder;
use super::super::names::{blit_kind, copy_name, kernel_name};
use super::super::rocprof_resources::KernelResources;
use super::{ApiRecord, Copy, Correlation, Dispatch, List, ProcessRead, Reading, symbol_name};
use crate::model::{Api, GpuKind, IdValue, Launch, NewGpuOp, Span, SpanKind, Sym};

impl ProcessRead {
    /// A kernel dispatch: a GPU op (a runtime fill or copy kernel as a fill or copy), on its queue for
    /// the overruns.
    pub(super) fn dispatch(&mut self, r: &mut Reading, i: usize, d: &Dispatch) {
        if r.refused.is_some() {
            return;
        }
        let info = &d.dispatch_info;
        let b = &mut r.b;
        self.lookups(b);
        let symbols = self.kernel_symbols.as_deref().unwrap_or_default();
        let Some(look) = self.lookups.as_mut() else {
            return;
        };
        let (sym, kind, arch_vgprs) = *look.sym_of.entry(info.kernel_id).or_insert_with(|| {
            let symbol = look.symbol_at.get(&info.kernel_id).map(|&at| &symbols[at]);
            let text = match symbol {
                Some(s) => kernel_name(symbol_name(s)).into_owned(),
                None => format!("kernel_id {}", info.kernel_id),
            };
            let kind = blit_kind(&text).unwrap_or(GpuKind::Kernel);
            (b.name(&text), kind, symbol.and_then(|s| s.arch_vgpr_count))
        });
        let device = look.device_of.get(&info.agent_id.handle).copied();
        let stream = d
            .stream_id
            .as_ref()
            .map_or(info.queue_id.handle, |s| s.handle) as i64;
        let times = (d.start_timestamp, d.end_timestamp);
        let mut op = self.gpu_op(b, sym, (device, stream), times, &d.correlation_id);
        op.detail.grid = [info.grid_size.x, info.grid_size.y, info.grid_size.z];
        op.detail.block = [
            info.workgroup_size.x,
            info.workgroup_size.y,
            info.workgroup_size.z,
        ];
        KernelResources {
            arch_vgprs,
            group_segment_bytes: info.group_segment_size,
        }
        .set_on(&mut op.detail);
        let queue = [self.scope(), info.agent_id.handle, info.queue_id.handle];
        r.totals
            .dispatches
            .add(kind, queue, d.start_timestamp, d.end_timestamp);
        if let Err(m) = r.b.gpu_op(kind, op) {
            self.refuse(r, "kernel_dispatch", i, m);
        }
    }

    /// A memory copy, named by its direction, on the destination's device (else the source's).
    pub(super) fn copy(&mut self, r: &mut Reading, i: usize, c: &Copy) {
        if r.refused.is_some() {
            return;
        }
        let text = copy_name(self.op_name(c.kind, c.operation).unwrap_or("MEMORY_COPY"));
        let b = &mut r.b;
        let look = self.lookups(b);
        let device = look
            .device_of
            .get(&c.dst_agent_id.handle)
            .or_else(|| look.device_of.get(&c.src_agent_id.handle))
            .copied();
        let stream = c.stream_id.as_ref().map_or(0, |s| s.handle) as i64;
        let sym = b.name(&text);
        let times = (c.start_timestamp, c.end_timestamp);
        let mut op = self.gpu_op(b, sym, (device, stream), times, &c.correlation_id);
        op.detail.bytes = c.bytes;
        if let Err(m) = b.gpu_op(GpuKind::Memcpy, op) {
            self.refuse(r, "memory_copy", i, m);
        }
    }

    /// A GPU op of this process named `name`, on its `(device, stream)` track (device -1 when its agent
    /// is unknown), from `start` to `end`, with the launching call's correlation: what a dispatch and
    /// a copy record alike.
    fn gpu_op(
        &self,
        b: &mut TraceBuilder,
        name: Sym,
        (device, stream): (Option<i64>, i64),
        (start, end): (i64, i64),
        correlation: &Correlation,
    ) -> NewGpuOp {
        let track = b.track(IdValue::Num(device.unwrap_or(-1)), IdValue::Num(stream));
        let mut op = NewGpuOp::at(name, start, end - start, track);
        op.detail.device = device;
        op.detail.stream = Some(stream);
        op.correlation = b.correlation(self.scope(), correlation.internal);
        op.external_id = std::num::NonZeroU64::new(correlation.external);
        op
    }

    /// A record of an API list: a HIP (runtime) or HSA (driver) call, an RCCL call (a CPU op), a roctx
    /// marker.
    pub(super) fn api_record(&mut self, r: &mut Reading, list: List, i: usize, a: &ApiRecord) {
        if r.refused.is_some() {
            return;
        }
        self.lookups(&mut r.b);
        let done = match list {
            List::HipApi => self.api_call(&mut r.b, a, Api::Runtime),
            List::HsaApi => self.api_call(&mut r.b, a, Api::Driver),
            List::RcclApi => self.rccl_call(&mut r.b, a),
            _ => self.marker(&mut r.b, a),
        };
        if let Err(m) = done {
            self.refuse(r, list.key(), i, m);
        }
    }

    /// A HIP (runtime) or HSA (driver) call.
    fn api_call(
        &self,
        b: &mut TraceBuilder,
        a: &ApiRecord,
        api: Api,
    ) -> std::result::Result<(), String> {
        let text = self.op_name(a.kind, a.operation).unwrap_or("?").to_string();
        let sym = b.name(&text);
        let track = b.track(IdValue::Num(self.pid()), IdValue::Num(a.thread_id));
        let correlation = b.correlation(self.scope(), a.correlation_id.internal);
        let mut l = Launch::at(
            sym,
            api,
            a.start_timestamp,
            a.end_timestamp - a.start_timestamp,
            track,
            correlation,
        );
        l.external_id = std::num::NonZeroU64::new(a.correlation_id.external);
        b.launch(l)
    }

    /// An RCCL call, as a CPU op.
    fn rccl_call(&self, b: &mut TraceBuilder, a: &ApiRecord) -> std::result::Result<(), String> {
        let text = self.op_name(a.kind, a.operation).unwrap_or("?").to_string();
        let sym = b.name(&text);
        let track = b.track(IdValue::Num(self.pid()), IdValue::Num(a.thread_id));
        let s = Span::at(
            sym,
            a.start_timestamp,
            a.end_timestamp - a.start_timestamp,
            track,
        );
        b.span(SpanKind::CpuOp, s)
    }

    /// A roctx marker: a range (named by its message), an instant (counted), a range never closed
    /// (left out, counted for the warning).
    fn marker(&mut self, b: &mut TraceBuilder, a: &ApiRecord) -> std::result::Result<(), String> {
        if a.end_timestamp == 0 && a.start_timestamp > 0 {
            self.open_ranges += 1;
            return Ok(());
        }
        if a.end_timestamp == a.start_timestamp {
            // No track for an instant: a thread with only instants has no row on it.
            let what = format!("{} mark", self.kind_name(a.kind));
            return b.instant_mark(&what, a.start_timestamp);
        }
        let pairs = self.strings.as_ref().map_or(&[][..], |s| &s.marker_api[..]);
        let at = self.message_at.get_or_insert_with(|| {
            let keys = pairs.iter().enumerate();
            keys.map(|(i, kv)| (kv.key, i)).collect()
        });
        let message = at
            .get(&a.correlation_id.internal)
            .map(|&i| pairs[i].value.as_str());
        let text = message
            .or_else(|| self.op_name(a.kind, a.operation))
            .unwrap_or("?")
            .to_string();
        let track = b.track(IdValue::Num(self.pid()), IdValue::Num(a.thread_id));
        b.marker_range(&text, a.start_timestamp, a.end_timestamp, track)
    }
}
