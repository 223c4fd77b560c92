//! gpu-monitor: GPU sampling. Being written (issue "gpu-monitor").
#![deny(missing_docs)]
