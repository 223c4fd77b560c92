//! Nsight Systems' runtime and driver calls (`CUPTI_ACTIVITY_KIND_RUNTIME`, `…_DRIVER`): each call read
//! once — the `_vNNNN` suffix of CUPTI's callback names dropped, a call listed under both names with one
//! correlation id (nsys 2022 exports) kept once — and a call whose name id names no string named by what
//! it launched. Part of the reader in [`crate::nsys`], which reads the kernels first.

use crate::db::{Db, get_int, get_time};
use crate::nsys::{Dangling, EnumTable, PID_MASK, enum_table, pid_of, string_of, tid_of};
use kineto_trace::native::TraceBuilder;
use kineto_trace::{Api, Launch, Result};
use rustc_hash::FxHashMap;

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`.
pub(crate) fn api_name(raw: &str) -> &str {
    match raw.rfind("_v") {
        Some(i)
            if i > 0 && raw[i + 2..].bytes().all(|b| b.is_ascii_digit()) && raw.len() > i + 2 =>
        {
            &raw[..i]
        }
        _ => raw,
    }
}

/// The kernels each call launched, by (process, correlation id): whether any is a CUDA graph's node. What
/// names a call whose own name is lost ([`lost_call_name`]).
pub(crate) type Launched = FxHashMap<(i64, i64), bool>;

/// The name of a call whose `nameId` names no string, from what it launched: a graph's kernels make it a
/// graph launch, other kernels a launch (so both are still recognised as such), nothing an unnamed call.
fn lost_call_name(launched: Option<bool>) -> &'static str {
    match launched {
        Some(true) => "(unnamed GraphLaunch call: it launched a CUDA graph's kernels)",
        Some(false) => "(unnamed Launch call: it launched kernels)",
        None => "(unnamed call)",
    }
}

/// Runtime and driver calls, from `CUPTI_ACTIVITY_KIND_RUNTIME` and `…_DRIVER`.
///
/// A call is one CUPTI record: its correlation id is unique per call within its process (CUPTI's
/// `CUpti_ActivityAPI.correlationId`), and its name is CUPTI's callback name, which carries the version of
/// the API entry point as `_vNNNN` (`cudaLaunchKernel_v7000`; nsys's own reports drop that suffix to name
/// the function). Nsight Systems 2022 exports list some calls twice, once under each name, with one
/// correlation id: two rows of one process with one correlation id and one name once the suffix is dropped
/// are one call, kept once (the first listed) and counted in a note.
pub(crate) fn read_calls(
    d: &Db,
    b: &mut TraceBuilder,
    strings: &FxHashMap<i64, String>,
    launched: &Launched,
) -> Result<()> {
    let classes = enum_table(d, "ENUM_NSYS_EVENT_CLASS")?;
    let mut dangling = Dangling::default();
    let mut api_syms: FxHashMap<Option<i64>, kineto_trace::Sym> = FxHashMap::default();
    // The name of the first call listed with each (process, correlation id), by the trace's correlation
    // id for it (numbered 1, 2, … as first seen): a slot per correlation, not a hashed entry per call.
    let mut first_call: Vec<Option<kineto_trace::Sym>> = Vec::new();
    let mut tracks = crate::Tracks::default();
    let mut listed_twice = 0u64;
    // What API a (class, name) is, decided once, not per row.
    let mut apis: FxHashMap<(Option<i64>, kineto_trace::Sym), Api> = FxHashMap::default();
    for (table, default_api) in [
        ("CUPTI_ACTIVITY_KIND_RUNTIME", None),
        ("CUPTI_ACTIVITY_KIND_DRIVER", Some(Api::Driver)),
    ] {
        if !d.has(table) {
            continue;
        }
        let cols = [
            "start",
            "end",
            "?globalTid",
            "?correlationId",
            "?nameId",
            "?eventClass",
        ];
        d.each(table, &cols, "", |i, r| {
            let e = |m: String| d.row_err(table, i, m);
            let int = |c: usize| get_int(r, c).map_err(e);
            let time = |c: usize| get_time(r, c).map_err(e);
            let (start, end) = (time(0)?, time(1)?);
            let gt = int(2)?.unwrap_or(0);
            // The process part of the global thread id: what scopes a correlation id.
            let process = gt & PID_MASK;
            let name_id = int(4)?;
            let raw_correlation = int(3)?.unwrap_or(0).max(0);
            dangling.add(strings, &[name_id]);
            let (name, sym) = match string_of(strings, name_id) {
                Some(raw) => {
                    let name = api_name(raw);
                    (
                        name,
                        *api_syms.entry(name_id).or_insert_with(|| b.name(name)),
                    )
                }
                None => {
                    let lost = lost_call_name(launched.get(&(process, raw_correlation)).copied());
                    (lost, b.name(lost))
                }
            };
            let api = default_api.unwrap_or_else(|| {
                let class = int(5).ok().flatten();
                *apis
                    .entry((class, sym))
                    .or_insert_with(|| call_api(&classes, class, name))
            });
            let correlation = b.correlation(process as u64, raw_correlation as u64);
            if let Some(c) = correlation {
                let slot = c.get() as usize - 1;
                if first_call.len() <= slot {
                    first_call.resize(slot + 1, None);
                }
                match first_call[slot] {
                    Some(first) if first == sym => {
                        listed_twice += 1;
                        return Ok(());
                    }
                    Some(_) => {}
                    None => first_call[slot] = Some(sym),
                }
            }
            let track = tracks.of(b, pid_of(gt), tid_of(gt));
            b.launch(Launch::at(sym, api, start, end - start, track, correlation))
                .map_err(e)
        })?;
    }
    dangling.warn(
        b,
        "CUPTI_ACTIVITY_KIND_RUNTIME/DRIVER",
        "each named by what it launched (`(unnamed GraphLaunch call…)` for a CUDA graph's kernels, \
         `(unnamed Launch call…)` for other kernels, else `(unnamed call)`)",
    );
    if listed_twice > 0 {
        b.note(format!(
            "{listed_twice} API calls were listed twice, under their name and their versioned name (`cudaLaunchKernel` and `cudaLaunchKernel_v7000`) with one correlation id: each is counted once"
        ));
    }
    Ok(())
}

/// The API of a runtime-table call: by its event class, else (no class table) by its name.
fn call_api(classes: &EnumTable, class: Option<i64>, name: &str) -> Api {
    match class.and_then(|c| classes.get(&c)) {
        Some((n, l)) if n.contains("DRIVER") || l.to_ascii_lowercase().contains("driver") => {
            Api::Driver
        }
        Some(_) => Api::Runtime,
        // No class table: by the call's name.
        None => kineto_trace::native::api_of_call(name),
    }
}
