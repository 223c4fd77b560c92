//! The captures the analysis knows: their labels (`cell:capture`, as the manifest's two fields make them) and
//! what kind of step each is analysed for. One table, so a new capture is one line.

/// What a capture is analysed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptureKind {
    /// Decode steps: dense GEMV, sparse MoE.
    Decode,
    /// Prefill steps: the expert path and the reconstruct kernels.
    Prefill,
}

impl CaptureKind {
    /// The step `phase` this kind analyses, and the `kind` written in the output.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureKind::Decode => "decode",
            CaptureKind::Prefill => "prefill",
        }
    }
}

impl std::fmt::Display for CaptureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One known capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownCapture {
    /// `cell:capture`.
    pub label: &'static str,
    /// What it is analysed for.
    pub kind: CaptureKind,
}

/// The known captures, in output order (the seed's: decode captures, then prefill).
pub const CAPTURES: [KnownCapture; 6] = [
    KnownCapture {
        label: "prof-short-b1:decode",
        kind: CaptureKind::Decode,
    },
    KnownCapture {
        label: "prof-32k-b1:decode",
        kind: CaptureKind::Decode,
    },
    KnownCapture {
        label: "prof-150k-b1:decode",
        kind: CaptureKind::Decode,
    },
    KnownCapture {
        label: "prof-32k-b4:decode",
        kind: CaptureKind::Decode,
    },
    KnownCapture {
        label: "prof-32k-b1:prefill-early",
        kind: CaptureKind::Prefill,
    },
    KnownCapture {
        label: "prof-150k-b1:prefill-late",
        kind: CaptureKind::Prefill,
    },
];

/// The known capture with this label.
pub fn capture(label: &str) -> Option<KnownCapture> {
    CAPTURES.iter().copied().find(|c| c.label == label)
}

/// A label's position in [`CAPTURES`] (output order).
pub(crate) fn position(label: &str) -> Option<usize> {
    CAPTURES.iter().position(|c| c.label == label)
}
