//! kineto-trace
