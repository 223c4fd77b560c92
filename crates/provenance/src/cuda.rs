//! CUDA toolkit, CUDA runtime and cuDNN versions, read from the files that name them, with the file each was
//! read from. Beside the driver's CUDA version (in `gpus[]`, from the driver): the driver says the newest CUDA it
//! supports, these say what a program here would build against or load.
//!
//! Nothing is run (no `nvcc`): version files, headers and library file names only. Where several copies are
//! installed, the first in the search order wins, and the record names its path so a reader can tell.

use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

use crate::Probe;

/// A version and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FoundVersion {
    /// The version (`12.4.1`, `9.1.0`).
    pub version: String,
    /// The file it was read from.
    pub source: String,
}

/// The CUDA software on this machine, each with where it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CudaVersions {
    /// The toolkit: `version.json` (CUDA ≥ 11.1) or `version.txt` in the toolkit directory.
    pub toolkit: Probe<FoundVersion>,
    /// The runtime library `libcudart.so.X.Y.Z` (its file name carries the version).
    pub runtime: Probe<FoundVersion>,
    /// cuDNN: `cudnn_version.h` (cuDNN ≥ 8) or `cudnn.h`, else the library file `libcudnn.so.X.Y.Z`.
    pub cudnn: Probe<FoundVersion>,
}

/// Where to look. [`CudaSearch::from_env`] is what a record uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CudaSearch {
    /// Toolkit directories, in order (`CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`).
    pub toolkits: Vec<PathBuf>,
    /// Library directories, in order (each toolkit's `lib64` and `lib`, `LD_LIBRARY_PATH`, the system's).
    pub lib_dirs: Vec<PathBuf>,
    /// Header directories, in order (each toolkit's `include`, the system's).
    pub include_dirs: Vec<PathBuf>,
}

impl CudaSearch {
    /// The usual places: `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`; `LD_LIBRARY_PATH`; `/usr/lib/<arch>-linux-gnu`,
    /// `/usr/lib64`, `/usr/lib`; `/usr/include` and `/usr/include/<arch>-linux-gnu`.
    ///
    /// ```
    /// let s = provenance::CudaSearch::from_env();
    /// assert!(s.toolkits.ends_with(&["/usr/local/cuda".into()]));
    /// let v = s.versions(); // each a version with its file, or the reason there is none
    /// assert!(v.toolkit.value().is_some() || v.toolkit.reason().is_some());
    /// ```
    pub fn from_env() -> CudaSearch {
        let mut toolkits: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(std::env::var_os)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .collect();
        toolkits.push(PathBuf::from("/usr/local/cuda"));
        let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
        let mut s = CudaSearch::under(&toolkits);
        s.toolkits = toolkits;
        if let Some(ld) = std::env::var_os("LD_LIBRARY_PATH") {
            s.lib_dirs
                .extend(std::env::split_paths(&ld).filter(|p| !p.as_os_str().is_empty()));
        }
        for d in [
            format!("/usr/lib/{multiarch}"),
            "/usr/lib64".into(),
            "/usr/lib".into(),
        ] {
            s.lib_dirs.push(PathBuf::from(d));
        }
        for d in [
            "/usr/include".to_owned(),
            format!("/usr/include/{multiarch}"),
        ] {
            s.include_dirs.push(PathBuf::from(d));
        }
        s
    }

    /// Only the given toolkit directories (and their `lib64`, `lib`, `include`).
    ///
    /// ```
    /// let s = provenance::CudaSearch::under(&["/opt/cuda-12.4".into()]);
    /// assert_eq!(s.include_dirs, [std::path::PathBuf::from("/opt/cuda-12.4/include")]);
    /// ```
    pub fn under(toolkits: &[PathBuf]) -> CudaSearch {
        CudaSearch {
            toolkits: toolkits.to_vec(),
            lib_dirs: toolkits
                .iter()
                .flat_map(|t| [t.join("lib64"), t.join("lib")])
                .collect(),
            include_dirs: toolkits.iter().map(|t| t.join("include")).collect(),
        }
    }

    /// Reads the versions.
    ///
    /// ```
    /// let v = provenance::CudaSearch::under(&[]).versions();
    /// assert!(v.toolkit.value().is_none());
    /// ```
    pub fn versions(&self) -> CudaVersions {
        CudaVersions {
            toolkit: first(
                &self.toolkits,
                "a CUDA toolkit (version.json or version.txt)",
                toolkit,
            ),
            runtime: first(&self.lib_dirs, "libcudart.so.X.Y.Z", |d| {
                library(d, "libcudart.so.")
            }),
            cudnn: first(
                &self.include_dirs,
                "cudnn_version.h or cudnn.h",
                cudnn_header,
            )
            .or_else(|why| {
                first(&self.lib_dirs, "libcudnn.so.X.Y.Z", |d| {
                    library(d, "libcudnn.so.")
                })
                .or_else(|w2| Probe::unavailable(format!("{why}; {w2}")))
            }),
        }
    }
}

impl<T> Probe<T> {
    fn or_else(self, f: impl FnOnce(String) -> Probe<T>) -> Probe<T> {
        match self {
            Probe::Value(v) => Probe::Value(v),
            Probe::Unavailable(why) => f(why),
        }
    }
}

fn first(
    dirs: &[PathBuf],
    what: &str,
    read: impl Fn(&Path) -> Option<FoundVersion>,
) -> Probe<FoundVersion> {
    match dirs.iter().find_map(|d| read(d)) {
        Some(v) => Probe::Value(v),
        None if dirs.is_empty() => Probe::unavailable(format!("no {what}: nowhere to look")),
        None => Probe::unavailable(format!(
            "no {what} in {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Version files are a few hundred bytes; anything much larger is not one.
const SMALL: u64 = 1 << 20;

fn read_small(path: &Path) -> Option<String> {
    let bytes = tool_io::read_input(path, "version file", SMALL).ok()?;
    String::from_utf8(bytes).ok()
}

fn found(version: String, source: &Path) -> FoundVersion {
    FoundVersion {
        version,
        source: source.display().to_string(),
    }
}

fn toolkit(dir: &Path) -> Option<FoundVersion> {
    let json = dir.join("version.json");
    if let Some(text) = read_small(&json)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(version) = v.pointer("/cuda/version").and_then(|x| x.as_str())
    {
        return Some(found(version.to_owned(), &json));
    }
    let txt = dir.join("version.txt");
    let text = read_small(&txt)?;
    // "CUDA Version 10.2.89"
    let version = text.trim().strip_prefix("CUDA Version ")?.trim();
    is_version(version).then(|| found(version.to_owned(), &txt))
}

fn is_version(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').count() >= 2
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The highest `PREFIX<version>` file in `dir` whose suffix is a full dotted version (`libcudart.so.12.4.127`;
/// the `libcudart.so.12` link names only the major).
fn library(dir: &Path, prefix: &str) -> Option<FoundVersion> {
    let mut best: Option<(Vec<u64>, String, PathBuf)> = None;
    for e in fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name();
        let Some(v) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if !is_version(v) {
            continue;
        }
        let key: Vec<u64> = v.split('.').filter_map(|p| p.parse().ok()).collect();
        if best.as_ref().is_none_or(|(k, _, _)| key > *k) {
            best = Some((key, v.to_owned(), e.path()));
        }
    }
    best.map(|(_, v, p)| found(v, &p))
}

fn cudnn_header(dir: &Path) -> Option<FoundVersion> {
    ["cudnn_version.h", "cudnn.h"].iter().find_map(|h| {
        let path = dir.join(h);
        let text = read_small(&path)?;
        let define = |name: &str| {
            text.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next()? == "#define" && w.next()? == name).then(|| w.next())?
            })
        };
        let (major, minor, patch) = (
            define("CUDNN_MAJOR")?,
            define("CUDNN_MINOR")?,
            define("CUDNN_PATCHLEVEL")?,
        );
        let version = format!("{major}.{minor}.{patch}");
        is_version(&version).then(|| found(version, &path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    #[test]
    fn versions_come_from_the_files_that_name_them() {
        let t = tempfile::tempdir().expect("tempdir");
        let cuda = t.path().join("cuda-12.4");
        write(
            &cuda.join("version.json"),
            r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "cuda_cudart": {"version": "12.4.127"}}"#,
        );
        for f in [
            "libcudart.so",
            "libcudart.so.12",
            "libcudart.so.12.4.127",
            "libcudart.so.12.4.99",
        ] {
            write(&cuda.join("lib64").join(f), "");
        }
        write(
            &cuda.join("include/cudnn_version.h"),
            "#ifndef CUDNN_VERSION_H_\n#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n\
             #define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n",
        );
        let v = CudaSearch::under(std::slice::from_ref(&cuda)).versions();
        let tk = v.toolkit.value().expect("toolkit");
        assert_eq!(tk.version, "12.4.1");
        assert!(
            tk.source.ends_with("cuda-12.4/version.json"),
            "{}",
            tk.source
        );
        let rt = v.runtime.value().expect("runtime");
        // The highest full version wins over 12.4.99 (numerically, not as text) and over the bare links.
        assert_eq!(rt.version, "12.4.127");
        assert!(
            rt.source.ends_with("lib64/libcudart.so.12.4.127"),
            "{}",
            rt.source
        );
        let dnn = v.cudnn.value().expect("cudnn");
        assert_eq!(dnn.version, "9.1.0");
        assert!(
            dnn.source.ends_with("include/cudnn_version.h"),
            "{}",
            dnn.source
        );
    }

    #[test]
    fn older_layouts_and_missing_files() {
        let t = tempfile::tempdir().expect("tempdir");
        let cuda = t.path().join("cuda-10.2");
        write(&cuda.join("version.txt"), "CUDA Version 10.2.89\n");
        write(&cuda.join("lib64/libcudnn.so.7.6.5"), "");
        let v = CudaSearch::under(std::slice::from_ref(&cuda)).versions();
        assert_eq!(
            v.toolkit.value().map(|f| f.version.as_str()),
            Some("10.2.89")
        );
        // No header: the library's file name gives cuDNN.
        let dnn = v.cudnn.value().expect("cudnn from the library");
        assert_eq!(dnn.version, "7.6.5");
        let why = v.runtime.reason().expect("no libcudart");
        assert!(
            why.contains("libcudart.so.X.Y.Z") && why.contains("cuda-10.2/lib64"),
            "{why}"
        );

        let empty = CudaSearch::under(&[t.path().join("nothing")]).versions();
        assert!(
            empty
                .toolkit
                .reason()
                .is_some_and(|w| w.contains("nothing"))
        );
        assert!(
            empty
                .cudnn
                .reason()
                .is_some_and(|w| w.contains("cudnn_version.h") && w.contains("libcudnn"))
        );
    }
}
