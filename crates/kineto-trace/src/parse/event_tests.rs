//! Tests of one event's reading (`event.rs`): the known key texts against the general path, and the
//! rows of an op's `Input Dims`.

use super::{RawEvent, input_rows, read_event};
use crate::scan::{Cursor, Scan};
use proptest::prelude::*;

/// Keys as they stand in the text: those read, their near misses (a letter more or less, another
/// case, an escape that decodes to a known key, a space inside the quotes) and others.
const KEYS: &[&str] = &[
    "\"ph\"",
    "\"cat\"",
    "\"name\"",
    "\"pid\"",
    "\"tid\"",
    "\"ts\"",
    "\"dur\"",
    "\"id\"",
    "\"args\"",
    "\"bp\"",
    "\"p\"",
    "\"phx\"",
    "\"Ph\"",
    "\"p\\u0068\"",
    "\"ph \"",
    "\"\"",
    "\"c\\at\"",
];
const ARG_KEYS: &[&str] = &[
    "\"External id\"",
    "\"external id\"",
    "\"External i\"",
    "\"External idx\"",
    "\"External\\u0020id\"",
    "\"cbid\"",
    "\"correlation\"",
    "\"correlationId\"",
    "\"device\"",
    "\"stream\"",
    "\"bytes\"",
    "\"grid\"",
    "\"block\"",
    "\"blocks\"",
    "\"context\"",
    "\"registers per thread\"",
    "\"shared memory\"",
    "\"Input Dims\"",
    "\"queued\"",
];
/// What may stand between a key and its value, and between two fields.
const COLONS: &[&str] = &[": ", ":", " : ", ":  ", ":\n", "\t:\t"];
const SEPARATORS: &[&str] = &[", ", ",", ",\n    ", ",      ", " ,\t", ",\r\n  "];
const VALUES: &[&str] = &[
    "\"X\"",
    "\"f\"",
    "\"kernel\"",
    "\"cpu_op\"",
    "\"cuda_runtime\"",
    "\"gpu_memcpy\"",
    "\"ac2g\"",
    "7",
    "1102",
    "1712195495556515.780",
    "4.928",
    "-3",
    "[4, 106, 1]",
    "null",
    "\"s\\n\"",
    "1e3",
];

/// An object of `fields` (key, colon, value, separator before the next field) from the lists
/// above; `args_at` puts an `args` object of `arg_fields` at one of them.
fn object(
    fields: &[(usize, usize, usize, usize)],
    open: &str,
    close: &str,
    keys: &[&str],
) -> String {
    let mut t = String::from("{");
    t.push_str(open);
    for (i, &(k, c, v, s)) in fields.iter().enumerate() {
        if i > 0 {
            t.push_str(SEPARATORS[s % SEPARATORS.len()]);
        }
        t.push_str(keys[k % keys.len()]);
        t.push_str(COLONS[c % COLONS.len()]);
        t.push_str(VALUES[v % VALUES.len()]);
    }
    t.push_str(close);
    t.push('}');
    t
}

/// An event read with the known key texts and the general way: the same event and end, or the
/// same stop. Run on the whole text, with room after it, and cut at every byte of its end.
fn agree(text: &str) {
    let read = |b: &[u8], known: bool| -> (Scan<()>, usize, String) {
        let mut c = Cursor::new(b, 0);
        let mut ev = RawEvent::default();
        let r = if known {
            read_event::<true>(&mut c, &mut ev)
        } else {
            read_event::<false>(&mut c, &mut ev)
        };
        // After a fault the event and the position are dropped by every caller.
        match r {
            Ok(()) => (Ok(()), c.pos, format!("{ev:?}")),
            Err(e) => (Err(e), 0, String::new()),
        }
    };
    let padded = format!("{text}, {:40}", "");
    let b = padded.as_bytes();
    for end in (0..=b.len()).rev().take(text.len() + 3) {
        assert_eq!(
            read(&b[..end], true),
            read(&b[..end], false),
            "{:?}",
            String::from_utf8_lossy(&b[..end])
        );
    }
}

fn field() -> impl Strategy<Value = (usize, usize, usize, usize)> {
    (0..64usize, 0..64usize, 0..64usize, 0..64usize)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn known_key_texts_read_as_the_general_way(
        fields in prop::collection::vec(field(), 0..10),
        arg_fields in prop::collection::vec(field(), 0..8),
        args_at in 0..12usize,
        cat in 0..6usize,
        open in 0..SEPARATORS.len(),
    ) {
        let args = object(&arg_fields, "", "", ARG_KEYS);
        let mut text = object(&fields, &SEPARATORS[open][1..], "\n  ", KEYS);
        // The category first (most reads of `args` need it), then `args` at some field.
        let cats = ["kernel", "cuda_runtime", "gpu_memcpy", "cpu_op", "ac2g", "gpu_memset"];
        text.insert_str(1, &format!("\"cat\": \"{}\", ", cats[cat]));
        let at = text.match_indices(", ").nth(args_at).map_or(text.len() - 1, |(i, _)| i);
        text.insert_str(at, &format!(", \"args\": {args}"));
        agree(&text);
    }
}

/// Kineto's own text, and the same with each key and separator disturbed by hand.
#[test]
fn kineto_events_and_their_near_misses_read_as_the_general_way() {
    let kernel = "{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7,\n    \
                  \"ts\": 1712195495505582.988, \"dur\": 4.928,\n    \"args\": {\n      \
                  \"External id\": 112,      \"queued\": 0, \"device\": 0, \"context\": 1,      \
                  \"stream\": 7, \"correlation\": 135071,      \"registers per thread\": 30,      \
                  \"shared memory\": 0, \"grid\": [4, 106, 1],      \"block\": [128, 1, 1]\n    }\n  }";
    let runtime = "{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \
                   \"pid\": 1102, \"tid\": 1102,\n    \"ts\": 1712195495505543.140, \"dur\": 41.768,\n    \
                   \"args\": {\n      \"External id\": 112,      \"cbid\": 211, \"correlation\": 135071\n    }\n  }";
    let memcpy = "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"pid\": 0, \
                  \"tid\": 7, \"ts\": 5, \"dur\": 1, \"args\": {\"External id\": 3, \"device\": 0, \
                  \"context\": 1, \"stream\": 7, \"correlation\": 9, \"bytes\": 4096}}";
    let flow = "{\n    \"ph\": \"f\", \"id\": 135071, \"pid\": 0, \"tid\": 7, \"ts\": 1712195495505582.988,\n    \
                \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }";
    for text in [kernel, runtime, memcpy, flow] {
        agree(text);
        // Each key's closing quote, colon or space replaced, one at a time.
        for (i, _) in text.match_indices("\": ") {
            for with in ["\" : ", "\":", "x\": ", "\"\t: ", "\":\n"] {
                let mut t = text.to_string();
                t.replace_range(i..i + 3, with);
                agree(&t);
            }
        }
    }
}

#[test]
fn rows_of_an_input() {
    let addmm = b"[[5120], [32, 2880], [2880, 5120], [], []]";
    assert_eq!(input_rows(addmm, 1), Some(32));
    assert_eq!(input_rows(addmm, 0), Some(1));
    assert_eq!(input_rows(addmm, 3), None);
    assert_eq!(input_rows(addmm, 9), None);
    assert_eq!(input_rows(b"[[2, 128, 4096], [4096, 4096]]", 0), Some(256));
    assert_eq!(input_rows(b"[[[2, 3], [2, 3]], []]", 0), None);
    assert_eq!(input_rows(b"[[4294967296, 2]]", 0), None);
    assert_eq!(input_rows(b"\"x\"", 0), None);
    assert_eq!(input_rows(b"[]", 0), None);
}
