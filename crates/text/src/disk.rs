//! Reading files that are not open, with the checks a text tool needs.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Bounds on what [`read_text_file`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// Files larger than this many bytes are refused.
    pub max_bytes: u64,
}

impl Default for ReadLimits {
    /// 8 MiB: larger than nearly all source files, small enough to keep a prompt sane.
    fn default() -> Self {
        Self {
            max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// How far into a file to look for NUL bytes, as git and ripgrep do.
const BINARY_SNIFF_BYTES: usize = 8000;

/// Why a file could not be read as text. Every variant names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Larger than [`ReadLimits::max_bytes`].
    #[error(
        "{path}: file is {size} bytes, over the {limit}-byte limit; read it in parts or raise files.max_bytes"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// Contains a NUL byte near its start.
    #[error("{path}: binary file (NUL byte at offset {offset}); not shown as text")]
    Binary {
        /// The file.
        path: PathBuf,
        /// Offset of the first NUL.
        offset: usize,
    },
    /// Not valid UTF-8.
    #[error("{path}: not valid UTF-8 at line {line}, byte {byte_offset}")]
    InvalidUtf8 {
        /// The file.
        path: PathBuf,
        /// One-based line of the first invalid byte.
        line: usize,
        /// Byte offset of the first invalid byte.
        byte_offset: usize,
    },
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// Reads a file as UTF-8 text, refusing files over the limit, binary files and invalid
/// UTF-8 with an error that says which and where.
pub fn read_text_file(path: &Path, limits: &ReadLimits) -> Result<String, ReadError> {
    let file = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    read_text_from(file, path, limits)
}

/// [`read_text_file`] on a file already opened (beneath the workspace root, say);
/// `path` names it in errors.
pub fn read_text_from(
    file: std::fs::File,
    path: &Path,
    limits: &ReadLimits,
) -> Result<String, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let size = file.metadata().map_err(io)?.len();
    if size > limits.max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            size,
            limit: limits.max_bytes,
        });
    }
    // Read at most one byte past the limit, in case the file grew since the stat.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limits.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
            limit: limits.max_bytes,
        });
    }
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if let Some(offset) = sniff.iter().position(|&b| b == 0) {
        return Err(ReadError::Binary {
            path: path.to_owned(),
            offset,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let byte_offset = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..byte_offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        ReadError::InvalidUtf8 {
            path: path.to_owned(),
            line,
            byte_offset,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes)
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        p
    }

    #[test]
    fn refuses_binary_large_and_invalid_utf8() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let limits = ReadLimits { max_bytes: 16 };
        let ok = write(&dir, "ok.txt", "héllo\n".as_bytes());
        assert_eq!(
            read_text_file(&ok, &limits).ok().as_deref(),
            Some("héllo\n")
        );

        let big = write(&dir, "big.txt", &[b'a'; 17]);
        let e = read_text_file(&big, &limits)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("17 bytes, over the 16-byte limit"), "{e}");

        let bin = write(&dir, "bin", b"ab\0cd");
        assert!(matches!(
            read_text_file(&bin, &limits),
            Err(ReadError::Binary { offset: 2, .. })
        ));

        let bad = write(&dir, "bad.txt", b"ok\nfine\n\xff");
        assert!(matches!(
            read_text_file(&bad, &limits),
            Err(ReadError::InvalidUtf8 {
                line: 3,
                byte_offset: 8,
                ..
            })
        ));

        let missing = dir.path().join("missing");
        assert!(matches!(
            read_text_file(&missing, &limits),
            Err(ReadError::Io { .. })
        ));
    }
}
