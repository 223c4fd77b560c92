//! rocpd SQLite (ROCm ≥ 7: rocprofv3's default output, `%hostname%/%pid%_results.db`), read through
//! the views rocprofiler-sdk defines (`source/share/rocprofiler-sdk-rocpd/data_views.sql`): the
//! physical tables carry a per-run suffix and two layouts share `schema_version` 3, the views are the
//! stable interface.
//!
//! * kernels — `kernels(guid, pid, tid, name, agent_type_index, queue_id, stream_id, start, end,
//!   grid_x/y/z, workgroup_x/y/z, corr_id)` (ns); compared with `rocpd_kernel_dispatch`'s count;
//! * copies — `memory_copies(name = MEMORY_COPY_HOST_TO_DEVICE …, size, src/dst_agent_type[_index],
//!   stream_id, queue_id, corr_id)`;
//! * CPU calls and markers — `regions(category, name, pid, tid, start, end, corr_id, extdata)`:
//!   `HIP_*` are runtime calls, `HSA_*` driver-level calls, `MARKER_*` roctx ranges named by
//!   `extdata.message`, `RCCL_*` collective calls;
//! * GPUs — `rocpd_info_agent(type = 'GPU', type_index, product_name, name, extdata.cu_count)`;
//!   version — `rocpd_metadata(tag = 'schema_version')`.
//!
//! A GPU op links to the API call that launched it through `rocpd_event.stack_id`: rocprofiler-sdk
//! writes the internal correlation id there (for the call and for what it launched) and the
//! *external* one, 0 unless a tool set it, in `correlation_id` (`corr_id` in the views). So the link
//! is `stack_id` in a file where any row has one, else `corr_id`: decided once per file, because the
//! two number different things and a row's external id must not meet another row's internal one.
//! Correlation ids are per process and run (`guid`); fills run as `__amd_rocclr_fill*` kernels and
//! are counted as fills (copies as `__amd_rocclr_copy*` likewise).

use crate::db::{Db, get_int, get_quantity, get_str, get_text, get_time};
use kineto_trace::native::names::{blit_kind, copy_name};
use kineto_trace::native::{KernelNames, QueueRows, TraceBuilder};
use kineto_trace::{
    Api, DeviceProps, Error, GpuKind, Launch, NewGpuOp, Result, Span, SpanKind, Trace, TraceFormat,
};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// The views whose rows link to each other.
const LINKED: [&str; 3] = ["kernels", "memory_copies", "regions"];

/// Whether this file links by `stack_id`: see the module doc.
fn links_by_stack(d: &Db) -> Result<bool> {
    for v in LINKED {
        if d.has(v) && d.columns(v)?.contains("stack_id") && d.any(v, "stack_id != 0")? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The column that links a view's rows to their API calls, `by_stack` as [`links_by_stack`] says.
fn link(d: &Db, view: &str, by_stack: bool) -> Result<&'static str> {
    Ok(if by_stack && d.columns(view)?.contains("stack_id") {
        "?stack_id"
    } else {
        "?corr_id"
    })
}

/// The optional column `key` of view `view`, or its key in the view's `extdata` JSON where the view has
/// one (rocprofiler-sdk moved such fields there).
fn column_or_extdata(d: &Db, view: &str, key: &str) -> Result<String> {
    Ok(if d.columns(view)?.contains("extdata") {
        format!("=json_extract(extdata, '$.{key}')")
    } else {
        format!("?{key}")
    })
}

/// Reads a rocpd database.
pub(crate) fn read(d: &Db) -> Result<Trace> {
    let mut b = TraceBuilder::new(TraceFormat::RocpdSqlite);
    let by_stack = links_by_stack(d)?;
    b.header().producer = Some("rocprofv3 (rocpd)".into());
    b.header().format_version = d.rocpd_schema_version()?;
    if !d.has("kernels") {
        return Err(Error::Native {
            file: d.file.clone(),
            at: "views".into(),
            message:
                "a rocpd database without its `kernels` view (rocprofiler-sdk's data_views.sql)"
                    .into(),
        });
    }
    read_gpus(d, &mut b)?;
    let mut scopes = Scopes::default();
    read_kernels(d, &mut b, &mut scopes, by_stack)?;
    read_copies(d, &mut b, &mut scopes, by_stack)?;
    read_regions(d, &mut b, &mut scopes, by_stack)?;
    read_process_ranks(d, &mut b)?;
    Ok(b.finish())
}

/// The distributed rank of each process whose environment says it: `rocpd_info_process.environment`
/// (schema 3: a JSON object of the process's environment) holding `RANK`, as `torchrun` sets it — a
/// decimal number, else nothing is read from it. What names the ranks of a file of several processes.
fn read_process_ranks(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let t = "rocpd_info_process";
    if !d.has(t) || !d.columns(t)?.contains("environment") {
        return Ok(());
    }
    let rank = "=CASE WHEN json_valid(environment) \
                AND CAST(json_extract(environment, '$.RANK') AS TEXT) GLOB '[0-9]*' \
                AND NOT CAST(json_extract(environment, '$.RANK') AS TEXT) GLOB '*[^0-9]*' \
                THEN CAST(json_extract(environment, '$.RANK') AS INTEGER) END";
    d.each(t, &["pid", rank], "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        if let (Some(pid), Some(rank)) = (get_int(r, 0).map_err(e)?, get_int(r, 1).map_err(e)?) {
            b.process_rank(pid, rank.max(0) as u64);
        }
        Ok(())
    })
}

/// GPUs by their index among GPUs (the device number HIP gives them), from `rocpd_info_agent`.
fn read_gpus(d: &Db, b: &mut TraceBuilder) -> Result<()> {
    let t = "rocpd_info_agent";
    if !d.has(t) {
        return Ok(());
    }
    let cu = column_or_extdata(d, t, "cu_count")?;
    d.each(
        t,
        &["?type", "?type_index", "?product_name", "?name", &cu],
        "",
        |i, r| {
            let e = |m: String| d.row_err(t, i, m);
            if get_text(r, 0).map_err(e)?.as_deref() != Some("GPU") {
                return Ok(());
            }
            let id = get_int(r, 1).map_err(e)?;
            if b.trace().header.devices.iter().any(|x| x.id == id) {
                return Ok(());
            }
            let name = get_text(r, 2)
                .map_err(e)?
                .filter(|s| !s.is_empty())
                .or(get_text(r, 3).map_err(e)?);
            let cus = get_int(r, 4).ok().flatten().map(|v| v.max(0) as u64);
            b.header().devices.push(DeviceProps {
                id,
                name,
                num_sms: cus,
                total_global_mem: None,
            });
            Ok(())
        },
    )
}

/// The correlation scopes: one per process and run (`guid`, pid), numbered as first seen. Keyed by run
/// first, so that a row's run is looked up as it lies in the row, not copied.
#[derive(Default)]
struct Scopes {
    by_run: FxHashMap<String, FxHashMap<i64, u64>>,
    count: u64,
}

impl Scopes {
    /// The scope of a row of run `guid` (none: the run `""`) and process `pid`.
    fn of(&mut self, guid: Option<&str>, pid: i64) -> u64 {
        let guid = guid.unwrap_or_default();
        let next = self.count;
        let pids = match self.by_run.get_mut(guid) {
            Some(pids) => pids,
            None => self.by_run.entry(guid.to_string()).or_default(),
        };
        let scope = *pids.entry(pid).or_insert(next);
        if scope == next {
            self.count += 1;
        }
        scope
    }
}

/// Whether `text` starts with `prefix`, ASCII case ignored (a category of `marker_api` is a marker's).
fn starts_with_any_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Kernels (runtime fill and copy kernels as fills and copies), from the `kernels` view; then a warning
/// on dispatches the view leaves out, a note on the blit kernels, and the queues' overruns.
fn read_kernels(d: &Db, b: &mut TraceBuilder, scopes: &mut Scopes, by_stack: bool) -> Result<()> {
    let t = "kernels";
    let mut queue_rows = QueueRows::default();
    let (mut fills, mut copy_kernels, mut rows) = (0u64, 0u64, 0u64);
    let cols = [
        "start",
        "end",
        "?name",
        "?guid",
        "?pid",
        "?agent_type_index",
        "?queue_id",
        "?stream_id",
        link(d, t, by_stack)?,
        "?grid_x",
        "?grid_y",
        "?grid_z",
        "?workgroup_x",
        "?workgroup_y",
        "?workgroup_z",
        "?agent_abs_index",
    ];
    let mut kernel_names = KernelNames::default();
    let mut tracks = crate::Tracks::default();
    d.each(t, &cols, "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let (start, end) = (time(0)?, time(1)?);
        let raw = get_str(r, 2).map_err(e)?.unwrap_or_default();
        let sym = kernel_names.sym(b, &raw);
        let guid = get_str(r, 3).map_err(e)?;
        let pid = int(4)?.unwrap_or(0);
        let dev = int(5)?;
        let queue = int(6)?.unwrap_or(0);
        let stream = int(7)?.unwrap_or(queue);
        let sc = scopes.of(guid.as_deref(), pid);
        let track = tracks.of(b, dev.unwrap_or(-1), stream);
        let mut op = NewGpuOp::at(sym, start, end - start, track);
        op.detail.device = dev;
        op.detail.stream = Some(stream);
        op.correlation = b.correlation(sc, int(8)?.unwrap_or(0).max(0) as u64);
        let u = |v: Option<i64>| v.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32;
        op.detail.grid = [u(int(9)?), u(int(10)?), u(int(11)?)];
        op.detail.block = [u(int(12)?), u(int(13)?), u(int(14)?)];
        let kind = blit_kind(b.trace().name(sym)).unwrap_or(GpuKind::Kernel);
        match kind {
            GpuKind::Memset => fills += 1,
            GpuKind::Memcpy => copy_kernels += 1,
            GpuKind::Kernel => {}
        }
        let agent = int(15)?.or(dev).unwrap_or(-1);
        queue_rows.add([sc, agent as u64, queue as u64], start, end);
        rows += 1;
        b.gpu_op_of(kind, op, Some(pid)).map_err(e)
    })?;
    if d.has("rocpd_kernel_dispatch") {
        let all = d.count("rocpd_kernel_dispatch")?;
        if all > rows {
            b.warn(
                0,
                format!(
                    "rocpd_kernel_dispatch holds {all} dispatches but the `kernels` view {rows}: {} dispatches without a symbol, agent, queue or event row are not read",
                    all - rows
                ),
            );
        }
    }
    if fills + copy_kernels > 0 {
        b.note(format!(
            "{fills} runtime fill kernels (__amd_rocclr_fill*) counted as fills, {copy_kernels} runtime copy kernels (__amd_rocclr_copy*) as copies"
        ));
    }
    b.capture().queue_overruns = Some(queue_rows.overruns());
    Ok(())
}

/// Copies, from the `memory_copies` view, on the GPU end's device (the destination's, else the
/// source's).
fn read_copies(d: &Db, b: &mut TraceBuilder, scopes: &mut Scopes, by_stack: bool) -> Result<()> {
    let t = "memory_copies";
    let mut tracks = crate::Tracks::default();
    if !d.has(t) {
        return Ok(());
    }
    let cols = [
        "start",
        "end",
        "?name",
        "?guid",
        "?pid",
        "?size",
        "?src_agent_type",
        "?src_agent_type_index",
        "?dst_agent_type",
        "?dst_agent_type_index",
        "?stream_id",
        link(d, t, by_stack)?,
    ];
    // Named once per direction word, not per row.
    let mut copy_syms: FxHashMap<String, kineto_trace::Sym> = FxHashMap::default();
    d.each(t, &cols, "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let (start, end) = (time(0)?, time(1)?);
        let direction = get_str(r, 2).map_err(e)?.unwrap_or_default();
        let guid = get_str(r, 3).map_err(e)?;
        let pid = int(4)?.unwrap_or(0);
        let gpu =
            |ty: Option<Cow<str>>, idx: Option<i64>| idx.filter(|_| ty.as_deref() == Some("GPU"));
        let dev =
            gpu(get_str(r, 8).map_err(e)?, int(9)?).or(gpu(get_str(r, 6).map_err(e)?, int(7)?));
        let stream = int(10)?.unwrap_or(0);
        let sc = scopes.of(guid.as_deref(), pid);
        let sym = match copy_syms.get(direction.as_ref()) {
            Some(&sym) => sym,
            None => {
                let sym = b.name(&copy_name(&direction));
                copy_syms.insert(direction.into_owned(), sym);
                sym
            }
        };
        let track = tracks.of(b, dev.unwrap_or(-1), stream);
        let mut op = NewGpuOp::at(sym, start, end - start, track);
        op.detail.device = dev;
        op.detail.stream = Some(stream);
        op.detail.bytes = get_quantity(r, 5).map_err(e)?.map(|v| v.max(0) as u64);
        op.correlation = b.correlation(sc, int(11)?.unwrap_or(0).max(0) as u64);
        b.gpu_op_of(GpuKind::Memcpy, op, Some(pid)).map_err(e)
    })
}

/// CPU regions, from the `regions` view: roctx ranges and marks, RCCL calls as CPU ops, HIP and HSA
/// calls as launches, any other category counted as other.
fn read_regions(d: &Db, b: &mut TraceBuilder, scopes: &mut Scopes, by_stack: bool) -> Result<()> {
    let t = "regions";
    let mut tracks = crate::Tracks::default();
    if !d.has(t) {
        return Ok(());
    }
    let message = column_or_extdata(d, t, "message")?;
    let cols = [
        "start",
        "end",
        "?category",
        "?name",
        "?guid",
        "?pid",
        "?tid",
        link(d, t, by_stack)?,
        &message,
    ];
    d.each(t, &cols, "", |i, r| {
        let e = |m: String| d.row_err(t, i, m);
        let int = |c: usize| get_int(r, c).map_err(e);
        let time = |c: usize| get_time(r, c).map_err(e);
        let (start, end) = (time(0)?, time(1)?);
        let category = get_str(r, 2).map_err(e)?.unwrap_or_default();
        let name = get_str(r, 3).map_err(e)?.unwrap_or_default();
        let guid = get_str(r, 4).map_err(e)?;
        let pid = int(5)?.unwrap_or(0);
        let tid = int(6)?.unwrap_or(0);
        let sc = scopes.of(guid.as_deref(), pid);
        let track = tracks.of(b, pid, tid);
        let cat = |prefix: &str| starts_with_any_case(&category, prefix);
        if cat("MARKER") {
            let text = get_str(r, 8)
                .ok()
                .flatten()
                .filter(|s| !s.is_empty())
                .unwrap_or(name);
            return b.marker(&text, start, end, track, "roctx mark").map_err(e);
        }
        let sym = b.name(&name);
        if cat("RCCL") {
            return b
                .span(SpanKind::CpuOp, Span::at(sym, start, end - start, track))
                .map_err(e);
        }
        let api = if cat("HIP") {
            Api::Runtime
        } else if cat("HSA") {
            Api::Driver
        } else {
            return b.other(&category, start, end).map_err(e);
        };
        let correlation = b.correlation(sc, int(7)?.unwrap_or(0).max(0) as u64);
        b.launch(Launch::at(sym, api, start, end - start, track, correlation))
            .map_err(e)
    })?;
    b.note_instant_marks("roctx");
    Ok(())
}
