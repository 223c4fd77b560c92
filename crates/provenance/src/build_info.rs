//! Toolchain, versions and build profile.

use serde::Serialize;

use crate::Probe;

/// The program that produced the number, as its own crate saw itself at compile time. Made by
/// [`program!`](crate::program!) expanded in that crate, so the name, version and profile are the benchmark's, not this
/// library's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProgramBuild {
    /// `CARGO_PKG_NAME` of the calling crate.
    pub name: String,
    /// `CARGO_PKG_VERSION` of the calling crate.
    pub version: String,
    /// Whether the calling crate was compiled with debug assertions (true in Cargo's `dev` profile).
    pub debug_assertions: bool,
    /// `CARGO_MANIFEST_DIR` of the calling crate: where its git state is read from unless
    /// [`crate::Provenance::repo_dir`] says otherwise (a harness run from another directory still records its
    /// own repository). Not written to the record; `git.dir` says where git was read.
    #[serde(skip)]
    pub manifest_dir: Option<std::path::PathBuf>,
}

/// How this library itself was built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryBuild {
    /// This crate's version.
    pub version: String,
    /// Cargo's profile name for the build (`debug` or `release`, as the build script saw it).
    pub profile: String,
    /// The optimisation level.
    pub opt_level: String,
    /// Whether debug assertions were on.
    pub debug_assertions: bool,
}

/// Versions and toolchain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildInfo {
    /// The benchmark program, when it said who it is (see [`crate::Provenance::program`]).
    pub program: Probe<ProgramBuild>,
    /// This library, as linked into the program.
    pub provenance: LibraryBuild,
    /// `rustc -V` of the compiler that built this library (Cargo builds a whole program with one compiler).
    pub rustc: Probe<String>,
    /// The target triple.
    pub target: String,
    /// CUDA toolkit, runtime and cuDNN versions found on this machine, each with the file it was read from
    /// (the driver's CUDA version is in `gpus[]`).
    pub cuda: crate::cuda::CudaVersions,
}

impl BuildInfo {
    pub(crate) fn collect(program: Probe<ProgramBuild>) -> Self {
        let rustc = env!("PROVENANCE_RUSTC_VERSION");
        BuildInfo {
            program,
            provenance: LibraryBuild {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                profile: env!("PROVENANCE_PROFILE").to_owned(),
                opt_level: env!("PROVENANCE_OPT_LEVEL").to_owned(),
                debug_assertions: cfg!(debug_assertions),
            },
            rustc: if rustc.is_empty() {
                Probe::unavailable("`rustc -V` failed when this crate was built")
            } else {
                Probe::Value(rustc.to_owned())
            },
            target: env!("PROVENANCE_TARGET").to_owned(),
            cuda: crate::cuda::CudaSearch::from_env().versions(),
        }
    }
}

/// Names the calling crate for the record: its package name, version, whether it was built with debug
/// assertions, and its manifest directory (whose repository's git state is recorded). Expands in the caller,
/// so it must be written there:
///
/// ```
/// let p = provenance::Provenance::new().program(provenance::program!());
/// ```
#[macro_export]
macro_rules! program {
    () => {
        $crate::ProgramBuild {
            name: ::std::string::String::from(env!("CARGO_PKG_NAME")),
            version: ::std::string::String::from(env!("CARGO_PKG_VERSION")),
            debug_assertions: cfg!(debug_assertions),
            manifest_dir: ::std::option::Option::Some(::std::path::PathBuf::from(env!(
                "CARGO_MANIFEST_DIR"
            ))),
        }
    };
}
