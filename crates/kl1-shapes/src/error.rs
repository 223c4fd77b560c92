//! The crate's one error type.

/// Everything that can go wrong in this crate: loading a spec, or handing a function a value (a kernel grid,
/// a bit width, a duration) that has no meaning.
///
/// Reading a spec fails as reading any cited table does ([`Error::Table`]: the file refused, not TOML, or a
/// value that breaks a rule), naming the field as a dotted path such as `model.hidden` or
/// `quant.routed_experts[1].k`; [`Error::field`] returns it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The spec (or its GPU table) could not be read or breaks a rule: a key missing, unknown or of the
    /// wrong type, a dimension that does not divide among the ranks, a K outside 1..=8, a K mix that does not
    /// add up, a value without its provenance (`model_shapes::Error`'s `Input`, `Parse` and `Invalid`).
    #[error(transparent)]
    Table(#[from] model_shapes::Error),
    /// A bit width outside EXL3's 1..=8 bits per weight.
    #[error("K = {value} bits per weight: EXL3 has 1..=8")]
    BitsOutOfRange {
        /// The value given.
        value: u64,
    },
    /// A matrix shape EXL3 cannot store: dimensions must be positive multiples of the 16×16 tile and at most
    /// [`crate::MAX_DIM`].
    #[error("EXL3 linear {k}×{n}: {reason}")]
    Shape {
        /// Input features.
        k: u64,
        /// Output features.
        n: u64,
        /// Why it is rejected.
        reason: String,
    },
    /// A kernel grid that cannot be a reconstruct launch.
    #[error("reconstruct grid [{}, {}, {}]: {reason}", grid[0], grid[1], grid[2])]
    Grid {
        /// The grid, `[x, y, z]`.
        grid: [u32; 3],
        /// Why it is rejected.
        reason: String,
    },
    /// A rate asked for with a duration or byte count that makes it meaningless.
    #[error("rate of {bytes} B over {duration_us} µs: {reason}")]
    Rate {
        /// Bytes given.
        bytes: f64,
        /// Duration given, microseconds.
        duration_us: f64,
        /// Why it is rejected.
        reason: String,
    },
}

impl Error {
    /// The dotted path of the field a spec error is about; `None` for the other kinds.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Table(e) => e.field(),
            _ => None,
        }
    }
}

/// A spec file refused before reading (tool-io's rules).
impl From<tool_io::Error> for Error {
    fn from(e: tool_io::Error) -> Error {
        Error::Table(model_shapes::Error::Input(e))
    }
}
