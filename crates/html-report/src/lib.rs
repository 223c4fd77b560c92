//! Self-contained HTML reports (work in progress).
