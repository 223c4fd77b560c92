//! The HTML document: inline style, the tool's JSON and this crate's derived numbers embedded as
//! `<script type="application/json">` blocks, sections, tables whose numeric cells carry the exact JSON value
//! they show, and a few lines of inline script that sort a table by a clicked header. No network, no CDN.

use std::fmt::Write as _;

use serde_json::Value;

/// The id of the block holding the tool's own JSON, byte for byte as `serde_json` writes the input value.
pub const TOOL_JSON_ID: &str = "tool-json";
/// The id of the block holding the numbers this crate computed from it (spreads, Δ).
pub const DERIVED_JSON_ID: &str = "derived-json";

/// Escapes text for HTML element content and double-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// JSON text safe inside a `<script>` element: `<` is written as `\u003c`, which JSON reads back as `<`.
pub fn script_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_else(|_| "null".to_owned())
        .replace('<', "\\u003c")
}

/// A number for people: four significant figures, at most three decimals, no exponent for the usual range.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        return format!("{v:.0}");
    }
    let decimals = if a >= 1000.0 || a == 0.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else {
        3
    };
    if a != 0.0 && a < 0.001 {
        return format!("{v:.3e}");
    }
    format!("{v:.decimals$}")
}

/// Where a table cell's number comes from, checked by the tests: `Tool` numbers appear in the tool's JSON,
/// `Derived` ones in the derived block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A value of the tool's JSON, shown as it is.
    Tool,
    /// A value this crate computed (spread, Δ %), also written to the derived block.
    Derived,
}

impl Source {
    /// The `data-src` value.
    pub fn name(self) -> &'static str {
        match self {
            Source::Tool => "tool",
            Source::Derived => "derived",
        }
    }
}

/// One table cell.
#[derive(Debug, Clone)]
pub enum Cell {
    /// Text, escaped on output.
    Text(String),
    /// A number: shown rounded, with the exact value in `data-v` and its source in `data-src`.
    Num(f64, Source),
    /// A number followed by a unit or remark (e.g. "69.7 %"), sorted by the number.
    NumNote(f64, Source, String),
    /// A number shown divided by `div` (the column's unit: ns shown in µs, µs in ms), its exact undivided
    /// value in `data-v`: the tool's value as its JSON has it.
    Scaled(f64, Source, f64),
    /// A long name (a kernel's): shown whole when it fits, cut with an ellipsis when it does not, and always
    /// whole in the `title` tooltip.
    Name(String),
    /// Nothing to show (the field is missing from this output).
    Missing,
}

impl Cell {
    /// A cell holding a value of the tool's JSON (`Missing` when it is not a number).
    pub fn tool(v: Option<&Value>) -> Cell {
        match v.and_then(Value::as_f64) {
            Some(x) => Cell::Num(x, Source::Tool),
            None => Cell::Missing,
        }
    }
    /// Text.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
}

/// A table with a header row; `sortable` tables re-sort on a header click.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Each header's tooltip (what the column holds); empty or shorter than `headers`: none.
    pub titles: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Cell>>,
    /// Whether clicking a header sorts.
    pub sortable: bool,
}

impl Table {
    /// An empty table with these headers.
    pub fn new(headers: &[&str], sortable: bool) -> Self {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            titles: Vec::new(),
            rows: Vec::new(),
            sortable,
        }
    }

    /// The table as HTML.
    pub fn html(&self) -> String {
        let mut s = String::new();
        let class = if self.sortable { "sortable" } else { "plain" };
        let _ = write!(s, "<table class=\"{class}\"><thead><tr>");
        for (i, h) in self.headers.iter().enumerate() {
            // A numeric column's header is right-aligned over its numbers.
            let numeric = self.rows.iter().any(|r| {
                matches!(
                    r.get(i),
                    Some(Cell::Num(..) | Cell::NumNote(..) | Cell::Scaled(..))
                )
            });
            let class = if numeric { " class=\"num\"" } else { "" };
            let title = match self.titles.get(i) {
                Some(t) if !t.is_empty() => format!(" title=\"{}\"", esc(t)),
                _ => String::new(),
            };
            let _ = write!(s, "<th{class}{title}>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            s.push_str("<tr>");
            for c in row {
                match c {
                    Cell::Text(t) => {
                        let _ = write!(s, "<td>{}</td>", esc(t));
                    }
                    Cell::Num(v, src) | Cell::NumNote(v, src, _) => {
                        let src = src.name();
                        let note = match c {
                            Cell::NumNote(_, _, n) => format!(" {}", esc(n)),
                            _ => String::new(),
                        };
                        let _ = write!(
                            s,
                            "<td class=\"num\" data-src=\"{src}\" data-v=\"{}\">{}{note}</td>",
                            json_number(*v),
                            fmt_num(*v)
                        );
                    }
                    Cell::Scaled(v, src, div) => {
                        let _ = write!(
                            s,
                            "<td class=\"num\" data-src=\"{}\" data-v=\"{}\">{}</td>",
                            src.name(),
                            json_number(*v),
                            fmt_num(*v / *div)
                        );
                    }
                    Cell::Name(t) => {
                        let t = esc(t);
                        let _ = write!(s, "<td class=\"name\" title=\"{t}\">{t}</td>");
                    }
                    Cell::Missing => s.push_str("<td class=\"missing\">–</td>"),
                }
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }
}

/// The value as JSON writes it (the shortest text that reads back to the same f64).
pub fn json_number(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())
}

/// Part of a page, built piece by piece: headings, paragraphs, tables, charts. A page's body is one; a
/// section made apart from the page that shows it (the doctor's findings on the kineto page) is another,
/// placed whole with [`Page::section`]. Its `json` is what its numbers come from: the page embeds it
/// with the tool's JSON, so its cells' `data-v` are numbers of `#tool-json` as everywhere else.
#[derive(Debug, Clone, Default)]
pub struct Section {
    body: String,
    json: Value,
}

impl Section {
    /// An empty section whose numbers come from `json`.
    pub fn new(json: Value) -> Self {
        Section {
            body: String::new(),
            json,
        }
    }

    /// The JSON its numbers come from.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// Its HTML.
    pub fn html(&self) -> &str {
        &self.body
    }

    /// A section heading.
    pub fn h2(&mut self, text: &str) {
        let _ = write!(self.body, "<h2>{}</h2>", esc(text));
    }

    /// A sub-heading.
    pub fn h3(&mut self, text: &str) {
        let _ = write!(self.body, "<h3>{}</h3>", esc(text));
    }

    /// A paragraph of text.
    pub fn p(&mut self, text: &str) {
        let _ = write!(self.body, "<p>{}</p>", esc(text));
    }

    /// A note that a section has no data in this output.
    pub fn absent(&mut self, what: &str) {
        let _ = write!(
            self.body,
            "<p class=\"absent\">{}: not in this output.</p>",
            esc(what)
        );
    }

    /// A table.
    pub fn table(&mut self, t: &Table) {
        // A wide table scrolls in its own box rather than past the page's edge.
        self.body.push_str("<div class=\"tablewrap\">");
        self.body.push_str(&t.html());
        self.body.push_str("</div>");
    }

    /// An inline SVG chart, or the reason it could not be drawn.
    pub fn chart(&mut self, svg: Result<String, String>) {
        match svg {
            Ok(svg) => {
                let _ = write!(self.body, "<div class=\"chart\">{svg}</div>");
            }
            Err(e) => {
                let _ = write!(
                    self.body,
                    "<p class=\"absent\">chart not drawn: {}</p>",
                    esc(&e)
                );
            }
        }
    }

    /// Raw HTML made by this crate (already escaped).
    pub(crate) fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }
}

/// A whole report page, built section by section: its body is a [`Section`] (`page.h2(…)`, `page.table(…)`
/// are the body's).
#[derive(Debug, Clone)]
pub struct Page {
    title: String,
    body: Section,
    tool_json: Value,
    derived: Value,
}

impl std::ops::Deref for Page {
    type Target = Section;
    fn deref(&self) -> &Section {
        &self.body
    }
}

impl std::ops::DerefMut for Page {
    fn deref_mut(&mut self) -> &mut Section {
        &mut self.body
    }
}

impl Page {
    /// A page titled `title` embedding `tool_json` (the tool's output, unchanged).
    pub fn new(title: &str, tool_json: Value) -> Self {
        Page {
            title: title.to_owned(),
            body: Section::default(),
            tool_json,
            derived: Value::Null,
        }
    }

    /// Sets the derived block (numbers this crate computed).
    pub fn derived(&mut self, v: Value) {
        self.derived = v;
    }

    /// Places a section made apart, whole, as a `<section>` with this class.
    pub fn section(&mut self, class: &str, s: &Section) {
        let _ = write!(
            self.body.body,
            "<section class=\"{}\">{}</section>",
            esc(class),
            s.body
        );
    }

    /// The finished document.
    pub fn finish(self) -> String {
        let mut s = String::with_capacity(self.body.body.len() + 4096);
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{t}</title><style>{STYLE}</style></head><body><h1>{t}</h1>",
            t = esc(&self.title)
        );
        s.push_str(&self.body.body);
        let _ = write!(
            s,
            "<p class=\"foot\">Every table number carries its exact value (<code>data-v</code>); the tool's \
             JSON is embedded below as <code>#{TOOL_JSON_ID}</code>, this page's derived numbers as \
             <code>#{DERIVED_JSON_ID}</code>.</p>\
             <script type=\"application/json\" id=\"{TOOL_JSON_ID}\">{}</script>\
             <script type=\"application/json\" id=\"{DERIVED_JSON_ID}\">{}</script>\
             <script>{SCRIPT}</script></body></html>",
            script_json(&self.tool_json),
            script_json(&self.derived)
        );
        s.push('\n');
        s
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}\
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:1.6em}h3{font-size:1.05em}\
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ddd;padding:2px 6px}\
th{background:#f3f3f3;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}\
th.num{text-align:right}td.missing{color:#999;text-align:center}\
td.name{max-width:44em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;\
font:12px ui-monospace,monospace}th[aria-sort=ascending]::after{content:' \\25B2'}\
th[aria-sort=descending]::after{content:' \\25BC'}.hint{color:#555;font-size:13px}\
details>summary{cursor:pointer;color:#335}table.sortable th{cursor:pointer}table.sortable th:hover{background:#e4e4e4}\
.absent{color:#8a6d3b;background:#fcf8e3;padding:4px 8px;display:inline-block}\
.chart{margin:.5em 0;overflow-x:auto}.flag{color:#a94442;font-weight:bold}.ok{color:#3c763d;font-weight:bold}\
.tablewrap{overflow-x:auto;max-width:100%}.foot{color:#777;font-size:12px;margin-top:2em}.row{display:flex;flex-wrap:wrap;gap:12px}";

// Sorts a table by the clicked column: numeric cells by data-v, the others as text; a second click reverses.
// The last line marks the document once the script has run to its end, which the browser test looks for.
const SCRIPT: &str = "document.querySelectorAll('table.sortable').forEach(function(t){\
var hs=t.tHead.rows[0].cells;for(var i=0;i<hs.length;i++){(function(c){hs[c].addEventListener('click',\
function(){var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),asc=t.getAttribute('data-col')!=String(c)\
||t.getAttribute('data-dir')!='asc';rows.sort(function(x,y){var a=x.cells[c],z=y.cells[c];\
var va=a&&a.hasAttribute('data-v')?parseFloat(a.getAttribute('data-v')):null,\
vz=z&&z.hasAttribute('data-v')?parseFloat(z.getAttribute('data-v')):null,r;\
if(va!==null&&vz!==null){r=va-vz}else if(va!==null){r=-1}else if(vz!==null){r=1}\
else{r=(a?a.textContent:'').localeCompare(z?z.textContent:'')}return asc?r:-r});\
rows.forEach(function(r){b.appendChild(r)});t.setAttribute('data-col',String(c));\
t.setAttribute('data-dir',asc?'asc':'desc');for(var j=0;j<hs.length;j++){hs[j].removeAttribute('aria-sort')}\
hs[c].setAttribute('aria-sort',asc?'ascending':'descending')})})(i)}});\
if(window.kl1Timeline){window.kl1Timeline()}\
document.documentElement.setAttribute('data-report-js','ok');";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_escaping() {
        assert_eq!(fmt_num(190.4711509699279), "190.5");
        assert_eq!(fmt_num(7154.14), "7154");
        assert_eq!(fmt_num(12.345), "12.35"); // 12.345 is 12.3449… in binary
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(12.0), "12");
        assert_eq!(json_number(190.4711509699279), "190.4711509699279");
        assert_eq!(json_number(273.0), "273.0");
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let v = serde_json::json!({"k": "</script><b>"});
        let s = script_json(&v);
        assert!(!s.contains('<'));
        assert_eq!(serde_json::from_str::<Value>(&s).unwrap(), v);
    }
}
