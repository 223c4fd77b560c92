//! A trace is opened through tool-io: a FIFO is refused at once (not waited on), and a trace that a result
//! of the same process would replace is refused before a byte is read.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers, outside `#[test]` functions.

use kineto_trace::{Error, Options, parse_file};
use std::time::Duration;

#[test]
fn a_fifo_given_as_a_trace_is_refused_without_waiting_for_a_writer() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("t.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let f = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(parse_file(&f, &Options::default()).map(|_| ()));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("opening a FIFO as a trace hung");
    match r {
        Err(e @ Error::NotAFile { .. }) => assert!(e.to_string().contains("is a FIFO"), "{e}"),
        other => panic!("expected NotAFile, got {other:?}"),
    }
}

#[test]
fn a_trace_a_result_of_this_process_would_replace_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t.json");
    std::fs::write(&t, r#"{"traceEvents": []}"#).unwrap();
    let claim = tool_io::Claim::new(&t, true).unwrap();
    match parse_file(&t, &Options::default()) {
        Err(Error::Input(tool_io::Error::InputIsResult { .. })) => {}
        other => panic!("expected InputIsResult, got {other:?}"),
    }
    drop(claim);
    assert_eq!(
        std::fs::read_to_string(&t).unwrap(),
        r#"{"traceEvents": []}"#
    );
}
