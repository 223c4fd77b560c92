//! The crate's one error type.

/// Everything that can go wrong in this crate: reading a model config or a GPU table, or asking for a
/// routing that has no meaning.
///
/// Config and GPU-table errors name the field they are about, as a dotted path such as `text_config.head_dim`
/// or `gpu[GB10].read_bandwidth[1].label`; [`Error::field`] returns it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A GPU-table or config file was refused before reading: not a regular file, over its size cap, not
    /// UTF-8 (tool-io's rules; the message names the file).
    #[error(transparent)]
    Input(#[from] tool_io::Error),
    /// The text is not TOML (a table) or JSON (a config). `message` is the parser's, with the line and
    /// column.
    #[error("{origin}: {message}")]
    Parse {
        /// Where the text came from (a path, or the name of a built-in file).
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// The text parses but does not make a valid table or model: a key missing, unknown or of the wrong
    /// type, or a value that breaks a rule (a dimension that does not divide among the ranks, a value
    /// without its provenance).
    #[error("{origin}: `{field}`: {reason}")]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// The offending field, as a dotted path.
        field: String,
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
}

impl Error {
    /// The dotted path of the field an [`Error::Invalid`] is about; `None` for the other kinds.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}
