//! Provenance: the record of where a benchmark number came from.
//!
//! This crate will hold the seed-000 record (UTC time, git commit and dirty state, versions, GPU and driver,
//! host load before and after) with the `gpu-monitor` summary of the timed region beside it.
//!
//! It is not written yet: nothing here is callable. See the open issue "provenance".
#![deny(missing_docs)]
