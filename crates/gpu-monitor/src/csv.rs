//! The comma-separated form shared by `nvidia-smi --format=csv,noheader,nounits`, our `--format csv` and replay.
//!
//! Parsing is total: every line yields either a sample or a [`LineFault`], and every value either a number or
//! `None` with the reason counted in [`ValueStats`]. Nothing here can fail the run.

use crate::sample::Sample;
use crate::throttle::parse_mask;

/// A column of the CSV form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    TS,
    Index,
    Uuid,
    Pstate,
    ClocksSm,
    ClocksMem,
    Temperature,
    Power,
    Utilization,
    MemoryUsed,
    Mask,
    PowerLimit,
    Energy,
    /// A column a recording's header names that gpu-monitor does not read: its cells are skipped.
    Ignored,
}

/// What `nvidia-smi` is asked for, in this order (the seed's fields plus index and UUID first, so that lines
/// from several GPUs can be told apart).
pub(crate) const SMI_QUERY: [Column; 10] = [
    Column::Index,
    Column::Uuid,
    Column::Pstate,
    Column::ClocksSm,
    Column::ClocksMem,
    Column::Temperature,
    Column::Power,
    Column::Utilization,
    Column::MemoryUsed,
    Column::Mask,
];

/// What our own CSV rows ([`Sample::to_csv_row`]) hold: a timestamp first, then the query, then the NVML extras that fit a cell.
pub(crate) const OUR_COLUMNS: [Column; 13] = [
    Column::TS,
    Column::Index,
    Column::Uuid,
    Column::Pstate,
    Column::ClocksSm,
    Column::ClocksMem,
    Column::Temperature,
    Column::Power,
    Column::Utilization,
    Column::MemoryUsed,
    Column::Mask,
    Column::PowerLimit,
    Column::Energy,
];

/// The clock-event mask under its pre-R535 name; the query uses it because every driver still accepts it.
pub(crate) const MASK_FIELD: &str = "clocks_throttle_reasons.active";
/// Its newer name, tried when a driver rejects the old one.
pub(crate) const MASK_FIELD_NEW: &str = "clocks_event_reasons.active";

impl Column {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Column::TS => "t_s",
            Column::Index => "index",
            Column::Uuid => "uuid",
            Column::Pstate => "pstate",
            Column::ClocksSm => "clocks.sm",
            Column::ClocksMem => "clocks.mem",
            Column::Temperature => "temperature.gpu",
            Column::Power => "power.draw",
            Column::Utilization => "utilization.gpu",
            Column::MemoryUsed => "memory.used",
            Column::Mask => MASK_FIELD,
            Column::PowerLimit => "power.limit",
            Column::Energy => "energy_mj",
            // Never written: not one of OUR_COLUMNS.
            Column::Ignored => "(ignored)",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Column> {
        let name = name.trim();
        if name == MASK_FIELD_NEW {
            return Some(Column::Mask);
        }
        OUR_COLUMNS.iter().copied().find(|c| c.name() == name)
    }

    pub(crate) fn format(self, s: &Sample) -> String {
        fn num(v: Option<f64>) -> String {
            v.map_or_else(|| NA.to_owned(), |v| v.to_string())
        }
        match self {
            Column::TS => format!("{:.3}", s.t_s),
            Column::Index => s.index.to_string(),
            // Text from the driver, through the workspace's one CSV cell rule (escaped, guarded, quoted).
            Column::Uuid => s.uuid.as_deref().map_or_else(
                || NA.to_owned(),
                |u| tool_io::csv::text_cell(u).into_owned(),
            ),
            Column::Pstate => s.pstate.as_deref().map_or_else(
                || NA.to_owned(),
                |p| tool_io::csv::text_cell(p).into_owned(),
            ),
            Column::ClocksSm => num(s.clocks_sm),
            Column::ClocksMem => num(s.clocks_mem),
            Column::Temperature => num(s.temperature_gpu),
            Column::Power => num(s.power_draw),
            Column::Utilization => num(s.utilization_gpu),
            Column::MemoryUsed => num(s.memory_used),
            Column::Mask => s
                .throttle_mask
                .map_or_else(|| NA.to_owned(), |m| format!("0x{m:016x}")),
            Column::PowerLimit => num(s.power_limit),
            Column::Energy => s.energy_mj.map_or_else(|| NA.to_owned(), |e| e.to_string()),
            Column::Ignored => NA.to_owned(),
        }
    }
}

const NA: &str = "[N/A]";

/// Why a line produced no sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineFault {
    /// Blank.
    Empty,
    /// Fewer fields than columns: usually a line cut short by the child dying, or a message.
    Short,
    /// More fields than columns, or a first field that is not a GPU index: not a sample line at all.
    Garbage,
}

/// Why values in parsed lines were `None`, counted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ValueStats {
    /// `[N/A]`, `N/A` or empty.
    pub na: u64,
    /// `[Not Supported]`.
    pub not_supported: u64,
    /// Any other bracketed marker (`[Unknown Error]`, `[GPU is lost]`, …); the first few are kept verbatim.
    pub other_marker: u64,
    pub other_marker_texts: Vec<String>,
    /// Text where a number was expected, or a non-finite number.
    pub bad: u64,
}

/// What a value cell holds once markers are recognised.
enum Cell<'a> {
    Value(&'a str),
    Missing,
}

fn cell<'a>(raw: &'a str, stats: &mut ValueStats) -> Cell<'a> {
    let v = raw.trim();
    match v {
        "" | "[N/A]" | "N/A" => {
            stats.na += 1;
            Cell::Missing
        }
        "[Not Supported]" => {
            stats.not_supported += 1;
            Cell::Missing
        }
        _ if v.starts_with('[') && v.ends_with(']') => {
            stats.other_marker += 1;
            if stats.other_marker_texts.len() < 4
                && !stats.other_marker_texts.iter().any(|t| t == v)
            {
                stats.other_marker_texts.push(v.to_owned());
            }
            Cell::Missing
        }
        _ => Cell::Value(v),
    }
}

fn number(raw: &str, stats: &mut ValueStats) -> Option<f64> {
    match cell(raw, stats) {
        Cell::Missing => None,
        // `nounits` should leave bare numbers; a unit that slips through (" W") is stripped rather than lost.
        Cell::Value(v) => match v
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
        {
            // NaN and infinities are refused here so that no summary can ever contain one.
            Some(x) if x.is_finite() => Some(x),
            _ => {
                stats.bad += 1;
                None
            }
        },
    }
}

fn integer(raw: &str, stats: &mut ValueStats) -> Option<u64> {
    match cell(raw, stats) {
        Cell::Missing => None,
        Cell::Value(v) => v.parse::<u64>().ok().or_else(|| {
            stats.bad += 1;
            None
        }),
    }
}

fn text(raw: &str, stats: &mut ValueStats) -> Option<String> {
    match cell(raw, stats) {
        Cell::Missing => None,
        Cell::Value(v) => Some(v.to_owned()),
    }
}

fn pstate(raw: &str, stats: &mut ValueStats) -> Option<String> {
    match cell(raw, stats) {
        Cell::Missing => None,
        Cell::Value(v) => {
            let ok =
                v.len() >= 2 && v.starts_with('P') && v[1..].bytes().all(|b| b.is_ascii_digit());
            if ok {
                Some(v.to_owned())
            } else {
                stats.bad += 1;
                None
            }
        }
    }
}

/// Parses one line against `columns`. Without a `t_s` column the sample's `t_s` is 0 and the caller sets it.
pub(crate) fn parse_line(
    line: &str,
    columns: &[Column],
    stats: &mut ValueStats,
) -> Result<Sample, LineFault> {
    let line = line.trim();
    if line.is_empty() {
        return Err(LineFault::Empty);
    }
    let parts: Vec<&str> = line.split(',').collect();
    if parts.len() < columns.len() {
        return Err(LineFault::Short);
    }
    if parts.len() > columns.len() {
        return Err(LineFault::Garbage);
    }
    // The index identifies the GPU; a line without a valid one cannot be attributed, so it is not a sample.
    let index = columns
        .iter()
        .position(|c| *c == Column::Index)
        .and_then(|i| parts[i].trim().parse::<u32>().ok())
        .ok_or(LineFault::Garbage)?;
    let mut s = Sample::empty(0.0, index);
    for (column, raw) in columns.iter().zip(&parts) {
        match column {
            Column::Index => {}
            Column::TS => match number(raw, stats) {
                Some(t) => s.t_s = t,
                // A sample that cannot be placed in time would corrupt every interval computed from it.
                None => return Err(LineFault::Garbage),
            },
            Column::Uuid => s.uuid = text(raw, stats),
            Column::Pstate => s.pstate = pstate(raw, stats),
            Column::ClocksSm => s.clocks_sm = number(raw, stats),
            Column::ClocksMem => s.clocks_mem = number(raw, stats),
            Column::Temperature => s.temperature_gpu = number(raw, stats),
            Column::Power => s.power_draw = number(raw, stats),
            Column::Utilization => s.utilization_gpu = number(raw, stats),
            Column::MemoryUsed => s.memory_used = number(raw, stats),
            Column::Mask => {
                s.throttle_mask = match cell(raw, stats) {
                    Cell::Missing => None,
                    Cell::Value(v) => parse_mask(v).or_else(|| {
                        stats.bad += 1;
                        None
                    }),
                }
            }
            Column::PowerLimit => s.power_limit = number(raw, stats),
            Column::Energy => s.energy_mj = integer(raw, stats),
            Column::Ignored => {}
        }
    }
    Ok(s)
}

/// A `# t_s,index,…` header line: its columns, and the names among them gpu-monitor does not read (their
/// cells are skipped as [`Column::Ignored`]; the caller says which they were).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub columns: Vec<Column>,
    pub unknown: Vec<String>,
}

/// The header a `#` line is, if it is one: comma-separated names including `index`; `None` for a comment.
pub(crate) fn parse_header(line: &str) -> Option<Header> {
    let body = line.trim().strip_prefix('#')?;
    if !body.contains(',') {
        return None;
    }
    let mut unknown = Vec::new();
    let columns: Vec<Column> = body
        .split(',')
        .map(|name| {
            Column::from_name(name).unwrap_or_else(|| {
                unknown.push(name.trim().to_owned());
                Column::Ignored
            })
        })
        .collect();
    columns
        .contains(&Column::Index)
        .then_some(Header { columns, unknown })
}

impl Sample {
    /// The header for [`to_csv_row`](Self::to_csv_row): a `#` line, so that tools treating `#` as a comment
    /// (as `nvidia-smi dmon` users do) skip it, while replay reads it to learn the columns.
    pub fn csv_header() -> String {
        format!(
            "# {}",
            OUR_COLUMNS
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(",")
        )
    }

    /// This sample as one CSV line in the column order of [`csv_header`](Self::csv_header), with missing
    /// values written `[N/A]` and the mask in `nvidia-smi`'s hex form, so replay reads it back unchanged
    /// — for the driver's own UUIDs and pstates; a text cell the CSV rule had to quote, escape or guard
    /// (`tool_io::csv::text_cell`) is read back as a fault of its line, counted, not as the text.
    /// Violation counters and processes are only in JSON lines.
    pub fn to_csv_row(&self) -> String {
        OUR_COLUMNS
            .iter()
            .map(|c| c.format(self))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_normal_nvidia_smi_line() {
        let mut st = ValueStats::default();
        let s = parse_line(
            "1, GPU-abc, P0, 1980, 2619, 54, 612.31, 97, 70123, 0x0000000000000004",
            &SMI_QUERY,
            &mut st,
        )
        .expect("sample");
        assert_eq!(s.index, 1);
        assert_eq!(s.uuid.as_deref(), Some("GPU-abc"));
        assert_eq!(s.pstate.as_deref(), Some("P0"));
        assert_eq!(s.clocks_sm, Some(1980.0));
        assert_eq!(s.power_draw, Some(612.31));
        assert_eq!(s.throttle_mask, Some(4));
        assert_eq!(st, ValueStats::default());
    }

    #[test]
    fn markers_and_bad_values_become_none_and_are_counted() {
        let mut st = ValueStats::default();
        let s = parse_line(
            "0, GPU-abc, [N/A], [Not Supported], N/A, nan, inf, abc, , [GPU is lost]",
            &SMI_QUERY,
            &mut st,
        )
        .expect("sample");
        assert_eq!(s.pstate, None);
        assert_eq!(s.clocks_sm, None);
        assert_eq!(s.temperature_gpu, None);
        assert_eq!(s.throttle_mask, None);
        assert_eq!(
            (st.na, st.not_supported, st.bad, st.other_marker),
            (3, 1, 3, 1)
        );
        assert_eq!(st.other_marker_texts, vec!["[GPU is lost]"]);
    }

    #[test]
    fn short_long_and_unindexed_lines_are_faults() {
        let mut st = ValueStats::default();
        assert_eq!(
            parse_line("0, GPU-abc, P0", &SMI_QUERY, &mut st),
            Err(LineFault::Short)
        );
        assert_eq!(
            parse_line("   ", &SMI_QUERY, &mut st),
            Err(LineFault::Empty)
        );
        assert_eq!(
            parse_line("a,b,c,d,e,f,g,h,i,j,k", &SMI_QUERY, &mut st),
            Err(LineFault::Garbage)
        );
        assert_eq!(
            parse_line("x, GPU-a, P0, 1, 1, 1, 1, 1, 1, 0x0", &SMI_QUERY, &mut st),
            Err(LineFault::Garbage)
        );
    }

    #[test]
    fn our_rows_round_trip() {
        let mut s = Sample::empty(1.25, 3);
        s.uuid = Some("GPU-x".into());
        s.pstate = Some("P2".into());
        s.clocks_sm = Some(1755.0);
        s.power_draw = Some(301.5);
        s.throttle_mask = Some(0x104);
        s.energy_mj = Some(123_456_789);
        let header = parse_header(&Sample::csv_header()).expect("header");
        assert!(header.unknown.is_empty());
        let mut st = ValueStats::default();
        let back = parse_line(&s.to_csv_row(), &header.columns, &mut st).expect("row");
        assert_eq!(back, s);
        assert_eq!(parse_header("# just a comment"), None);
        assert_eq!(parse_header("# foo,bar"), None);
    }

    #[test]
    fn a_hostile_uuid_is_one_escaped_guarded_cell() {
        let mut s = Sample::empty(1.0, 0);
        s.uuid = Some("=GPU\u{1b}[2J\u{7}\n".into());
        let row = s.to_csv_row();
        // t_s, index, then the UUID: escaped by hand, `'` before the `=`; the row is one line of 13 cells.
        assert!(
            row.starts_with("1.000,0,'=GPU\\u{1b}[2J\\u{7}\\u{a},[N/A],"),
            "{row}"
        );
        assert_eq!(row.split(',').count(), OUR_COLUMNS.len(), "{row}");
    }

    #[test]
    fn a_header_with_a_column_gpu_monitor_does_not_read_is_still_a_header_naming_it() {
        let h = parse_header("# t_s,index,uuid,fan.speed,clocks.sm").expect("a header");
        assert_eq!(h.unknown, ["fan.speed"]);
        assert_eq!(h.columns[3], Column::Ignored);
        let mut st = ValueStats::default();
        let s = parse_line("1.5,0,GPU-x,47,1980", &h.columns, &mut st).expect("row");
        assert_eq!((s.t_s, s.clocks_sm), (1.5, Some(1980.0)));
    }
}
