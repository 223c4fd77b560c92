//! Any bytes, as a plain or gzip trace, with and without salvage: the parser returns a trace or an
//! error whose offset lies inside the input; it never panics or loops.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    for salvage in [false, true] {
        let mut r = std::io::Cursor::new(data);
        match kineto_trace::parse_reader(Path::new("fuzz.json"), &mut r, salvage, false) {
            Ok((trace, bytes)) => {
                assert_eq!(bytes, data.len() as u64);
                for k in &trace.kernels {
                    assert!(k.dur_ns >= 0);
                }
            }
            Err(kineto_trace::Error::Syntax { offset, .. })
            | Err(kineto_trace::Error::Event { offset, .. })
            | Err(kineto_trace::Error::Truncated { offset, .. }) => {
                assert!(offset <= data.len() as u64);
            }
            Err(_) => {}
        }
    }
});
