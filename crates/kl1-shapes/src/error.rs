//! The crate's one error type.

/// Everything that can go wrong in this crate: loading a spec (or its GPU table, through `model-shapes`),
/// or handing a function a value (a kernel grid, a bit width, a duration) that has no meaning.
///
/// Spec and GPU-table errors name the field they are about, as a dotted path such as `model.hidden` or
/// `quant.routed_experts[1].k`; [`Error::field`] returns it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A spec, GPU-table or config file was refused before reading: not a regular file, over its size
    /// cap, not UTF-8 (tool-io's rules; the message names the file).
    #[error(transparent)]
    Input(#[from] tool_io::Error),
    /// The text is not TOML. `message` is the parser's, with the line and column.
    #[error("{origin}: {message}")]
    Parse {
        /// Where the text came from (a path, or the name of a built-in file).
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// The TOML parses but does not make a valid spec or table: a key missing, unknown or of the wrong type,
    /// or a value that breaks a rule (a dimension that does not divide among the ranks, a K outside 1..=8, a
    /// K mix that does not add up, a value without its provenance).
    #[error("{origin}: `{field}`: {reason}")]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// The offending field, as a dotted path.
        field: String,
        /// Why it is rejected.
        reason: String,
    },
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
    /// A routing description with no meaning (no experts, or more picks per row than experts).
    #[error("routing {top_k} of {experts} experts: {reason}")]
    Routing {
        /// Routed experts.
        experts: u64,
        /// Experts picked per row.
        top_k: u64,
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
    /// Another error of `model-shapes` (the GPU table, cited TOML).
    #[error(transparent)]
    Model(model_shapes::Error),
}

impl Error {
    /// The dotted path of the field an [`Error::Invalid`] is about; `None` for the other kinds.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Invalid { field, .. } => Some(field),
            Error::Model(e) => e.field(),
            _ => None,
        }
    }
}

/// `model-shapes`' errors as this crate's own kinds, so a spec's GPU-table error is an [`Error::Invalid`]
/// like the spec's.
impl From<model_shapes::Error> for Error {
    fn from(e: model_shapes::Error) -> Error {
        match e {
            model_shapes::Error::Input(e) => Error::Input(e),
            model_shapes::Error::Parse { origin, message } => Error::Parse { origin, message },
            model_shapes::Error::Invalid {
                origin,
                field,
                reason,
            } => Error::Invalid {
                origin,
                field,
                reason,
            },
            model_shapes::Error::Routing {
                experts,
                top_k,
                reason,
            } => Error::Routing {
                experts,
                top_k,
                reason,
            },
            other => Error::Model(other),
        }
    }
}
