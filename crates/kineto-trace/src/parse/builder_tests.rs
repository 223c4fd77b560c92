//! Tests of the builder (`builder.rs`): a folded range's row vectors handed on to the next range.

use super::{Builder, Spare};
use crate::parse::event::{RawEvent, event};
use crate::scan::Cursor;

/// One event of each kind of row a [`Spare`] hands on, as Kineto writes them (a python function is
/// kept as a row with `python_frames`), one to a line.
const ONE_OF_EACH: &str = r#"
{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 2.0, "args": {"External id": 1, "device": 0, "stream": 7, "correlation": 5, "grid": [1, 1, 1], "block": [32, 1, 1]}},
{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 13.0, "dur": 1.0, "args": {"device": 0, "stream": 7, "correlation": 6, "bytes": 64}},
{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 15.0, "dur": 1.0, "args": {"device": 0, "stream": 7, "correlation": 7, "bytes": 64}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 8.0, "dur": 1.0, "args": {"External id": 1, "cbid": 211, "correlation": 5}},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 7.0, "dur": 3.0, "args": {"External id": 1}},
{"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 6.0, "dur": 12.0},
{"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 0, "tid": 7, "ts": 10.0, "dur": 7.0},
{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 6.5, "dur": 4.0},
{"ph": "s", "id": 5, "pid": 1, "tid": 1, "ts": 8.0, "cat": "ac2g", "name": "ac2g"},
{"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 10.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
"#;

/// `b` after reading `text`'s events (objects separated by commas and whitespace).
fn read_into(mut b: Builder, text: &str) -> Builder {
    let buf = text.as_bytes();
    let mut c = Cursor::new(buf, 0);
    while let Some(start) = buf[c.pos..]
        .iter()
        .position(|&x| x == b'{')
        .map(|i| c.pos + i)
    {
        c.pos = start;
        let mut ev = RawEvent::default();
        event(&mut c, &mut ev).expect("an event");
        b.apply(&ev, start).expect("applied");
    }
    b
}

/// The lengths of the row vectors a [`Spare`] carries, in its list's order.
fn row_lens(b: &Builder) -> Vec<usize> {
    Spare::shape(b).into_iter().map(|(len, _)| len).collect()
}

/// The same tables' room, in bytes.
fn row_capacities(b: &Builder) -> Vec<usize> {
    Spare::shape(b).into_iter().map(|(_, cap)| cap).collect()
}

/// A folded range's rows land in the model, and its vectors come back empty with their capacity: the
/// next range's builder starts with no row and needs no allocation for as many rows.
#[test]
fn a_folded_range_hands_on_its_row_vectors_empty_with_their_capacity() {
    let part = read_into(range(), ONE_OF_EACH);
    // One kernel, copy, fill and launch; a flow's start and finish; four spans (a cpu op, an
    // annotation, a GPU annotation, a python function), held whole in the range.
    assert_eq!(row_lens(&part), [1, 1, 1, 1, 2, 4]);
    let mut model = Builder::new(true);
    let spare = model.absorb(part);
    // In the model, the spans are encoded.
    assert_eq!(row_lens(&model), [1, 1, 1, 1, 2, 4]);
    assert!(model.range.is_none());
    assert_eq!(
        [
            model.trace.cpu_ops.len(),
            model.trace.user_annotations.len(),
            model.trace.gpu_user_annotations.len(),
            model.trace.python_functions.len()
        ],
        [1; 4]
    );
    let next = Builder::reusing(true, spare);
    assert_eq!(row_lens(&next), [0; 6]);
    let kept = row_capacities(&next);
    assert!(kept.iter().all(|&c| c >= 1), "capacities {kept:?}");
    assert!(
        kept[4] >= 2 * std::mem::size_of::<crate::model::Flow>(),
        "the flows' room {}",
        kept[4]
    );
    assert!(
        kept[5] >= 4 * std::mem::size_of::<crate::model::Span>(),
        "the spans' room {}",
        kept[5]
    );
}

/// A range's builder, as the parallel parse makes one (on a new spare).
fn range() -> Builder {
    Builder::reusing(true, Spare::default())
}

/// A spare that still holds rows (no caller hands one on, but nothing rests on that) gives a builder
/// with none: nothing of one range reaches another.
#[test]
fn a_spare_still_holding_rows_gives_a_builder_with_none() {
    let mut full = read_into(range(), ONE_OF_EACH);
    let spare = Spare::take(&mut full);
    let next = Builder::reusing(true, spare);
    assert_eq!(row_lens(&next), [0; 6]);
    assert!(row_capacities(&next).iter().all(|&c| c >= 1));
}

/// A builder made from a spare reads as a new one does: two ranges of the same events, the second
/// read into the first's spare, fold into the model one builder makes of both.
#[test]
fn a_builder_on_a_spare_reads_as_a_new_one() {
    let mut model = Builder::new(true);
    let first = read_into(range(), ONE_OF_EACH);
    let spare = model.absorb(first);
    let second = read_into(Builder::reusing(true, spare), ONE_OF_EACH);
    model.absorb(second);
    let whole = read_into(Builder::new(true), &ONE_OF_EACH.repeat(2));
    assert_eq!(
        format!("{:?}", model.finish()),
        format!("{:?}", whole.finish())
    );
}
