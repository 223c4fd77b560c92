//! KL1 bandwidth: achieved GB/s per kernel family per serving step.
//!
//! This crate will hold the seed-004 analysis: it reads profiler windows (the Kineto traces of every rank,
//! listed in a manifest with sha256), splits them into decode and prefill steps with `kineto-trace`, and
//! divides bytes ESTIMATED by `kl1-shapes` by durations MEASURED from the trace.
//!
//! It is not written yet: nothing here is callable. See the open issue "kl1-bandwidth".
#![deny(missing_docs)]
