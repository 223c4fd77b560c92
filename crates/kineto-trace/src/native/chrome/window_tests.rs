//! The window's end may fall anywhere in an event: the trace is the same whatever the window's size.

use super::{Layout, read_in};
use crate::stored::streamed::Streamed;
use std::path::Path;

/// Events whose numbers have every form serde reads past unparsed, and could be cut after a `-`, a
/// `.` or an exponent's `e`/sign: in `args` (a `RawValue`), in fields the reader ignores, and in the
/// fields it reads (negative pids and tids, decimal times).
const EVENTS: &str = r#"[
{"name":"process_name","ph":"M","pid":-1,"args":{"name":"python"}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":-1,"tid":-2,"ts":1500.5,"dur":22.25,"args":{"x":-0.5e-2,"y":[1.0,-2,3E+4,-7e1]},"zz":-1.25e-10},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":-1,"tid":-2,"ts":1510.125,"dur":1.5,"args":{"correlation":12,"w":-0.0}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":1520.875,"dur":0.5,"args":{"correlation":12,"device":0,"stream":7,"grid":[1,2,3]}},
{"ph":"B","name":"caf\u00e9 ∑","pid":-1,"tid":-2,"ts":1600.75,"args":{"v":1.5e3}},
{"ph":"E","pid":-1,"tid":-2,"ts":1700.5,"q":-3.0E-2},
{"ph":"i","name":"mark","pid":-1,"tid":-2,"ts":1650.0,"s":"t"}
]
"#;

/// What a read gives, as text to compare: the trace, or the error.
fn read(text: &[u8], window: usize) -> String {
    let content =
        Streamed::open(Path::new("w.json"), text, false, None).unwrap_or_else(|e| panic!("{e}"));
    match read_in(
        Path::new("w.json"),
        content,
        Layout::Array,
        (false, false),
        window,
    ) {
        Ok((trace, _)) => format!("{trace:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Every window from 1 byte to the whole text: each puts the window's ends in other places (it grows
/// by doubling to hold one event, then refills at that size), among them right after a number's `-`,
/// `.` and `e`. Before `native::is_cut_json`, 94 of the 700 windows gave "invalid number" for this valid text.
#[test]
fn a_trace_is_the_same_wherever_the_window_ends() {
    let text = EVENTS.as_bytes();
    let whole = read(text, text.len() + 1);
    assert!(!whole.starts_with("error"), "{whole}");
    for window in 1..=text.len() {
        assert_eq!(read(text, window), whole, "a window of {window} bytes");
    }
}

/// A true syntax error at a window's end is still one once the text after it is read, at its byte.
#[test]
fn a_bad_number_is_an_error_wherever_the_window_ends() {
    let text = EVENTS.replacen("\"dur\":22.25", "\"dur\":22.x5", 1);
    let whole = read(text.as_bytes(), text.len() + 1);
    assert!(whole.starts_with("error"), "{whole}");
    for window in 1..=text.len() {
        assert_eq!(
            read(text.as_bytes(), window),
            whole,
            "a window of {window} bytes"
        );
    }
}
