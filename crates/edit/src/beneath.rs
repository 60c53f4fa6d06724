//! The one resolver for every path the agent touches: lexically under the root, then
//! opened *beneath* a handle on the root (cap-std: openat2 `RESOLVE_BENEATH` where the
//! kernel has it, component-by-component resolution elsewhere), so no `..`, symbolic
//! link or absolute link inside the workspace can lead a read or a write outside it.
//!
//! Links that stay inside the workspace are followed. A path that resolves outside, a
//! final link whose target is missing, and a regular file with several hard links (the
//! other link may be anywhere on the same file system) are refused with
//! [`EditError::NotBeneath`], which tells the model why and counts as an environment
//! error: the model's path is well-formed and under the root; the workspace's links are
//! what would send it out.

use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use agentls_text::{ReadError, ReadLimits, read_text_from};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use crate::error::EditError;

/// A handle on the workspace root; every operation resolves beneath it.
#[derive(Debug)]
pub struct Beneath {
    root: PathBuf,
    dir: Dir,
}

/// What exists at a path, as seen beneath the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing (the parent directories resolve beneath the root, or are missing).
    Missing,
    /// A regular file (or a link inside the root to one).
    File,
    /// A directory (or a link inside the root to one).
    Dir,
    /// Something else (a socket, a device): neither read nor written.
    Other,
}

impl Beneath {
    /// Opens `root` (made absolute, `.` and `..` removed). The directory itself may be
    /// reached through links: the user chose it.
    pub fn open(root: &Path) -> io::Result<Self> {
        let root = normalize(&std::path::absolute(root)?);
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Self { root, dir })
    }

    /// The root, absolute.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `written` (relative to the root, or absolute under it) as a path relative to the
    /// root, with `.` and `..` resolved lexically. Empty for the root itself. No I/O.
    pub fn relative(root: &Path, written: &str) -> Result<PathBuf, EditError> {
        let p = Path::new(written.trim());
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        };
        let abs = normalize(&joined);
        let root = normalize(root);
        match abs.strip_prefix(&root) {
            Ok(rel) => Ok(rel.to_path_buf()),
            Err(_) => Err(EditError::OutsideRoot {
                path: written.to_owned(),
            }),
        }
    }

    /// `path` (absolute under the root, or relative to it) relative to the root.
    fn rel<'p>(&self, path: &'p Path) -> Result<&'p Path, EditError> {
        if path.is_absolute() {
            path.strip_prefix(&self.root)
                .map_err(|_| EditError::OutsideRoot {
                    path: path.display().to_string(),
                })
        } else {
            Ok(path)
        }
    }

    /// Checks that `path` resolves beneath the root and may be read or written: every
    /// existing component stays inside, a final link points inside at something that
    /// exists, and a regular file has one link only. `shown` names it in errors.
    pub fn check(&self, path: &Path, shown: &str) -> Result<Found, EditError> {
        let rel = self.rel(path)?;
        if rel.as_os_str().is_empty() {
            return Ok(Found::Dir);
        }
        let meta = match self.dir.symlink_metadata(rel) {
            Ok(m) => m,
            // Missing: every existing parent resolved beneath the root on the way (an
            // escape is reported before a missing name).
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Missing),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(Found::Missing),
            Err(e) => return Err(self.refusal(rel, shown, e)),
        };
        let meta = if meta.file_type().is_symlink() {
            match self.dir.metadata(rel) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(EditError::NotBeneath {
                        path: shown.to_owned(),
                        reason: "is a symbolic link to a missing file; the agent does not write through dangling links (delete the link first)".into(),
                    });
                }
                Err(e) => return Err(self.refusal(rel, shown, e)),
            }
        } else {
            meta
        };
        if meta.is_dir() {
            return Ok(Found::Dir);
        }
        if !meta.is_file() {
            return Ok(Found::Other);
        }
        hard_links(&meta, shown)?;
        Ok(Found::File)
    }

    /// The path `path` leads to beneath the root, links inside the root followed,
    /// as an absolute path. `path` must exist.
    pub fn canonical(&self, path: &Path, shown: &str) -> Result<PathBuf, EditError> {
        let rel = self.rel(path)?;
        if rel.as_os_str().is_empty() {
            return Ok(self.root.clone());
        }
        let c = self
            .dir
            .canonicalize(rel)
            .map_err(|e| self.refusal(rel, shown, e))?;
        Ok(self.root.join(c))
    }

    /// Reads `path` as text beneath the root (see [`agentls_text::read_text_file`]),
    /// refusing links out and hard-linked files.
    pub fn read_text(&self, path: &Path, limits: &ReadLimits) -> Result<String, ReadError> {
        let shown = path.display().to_string();
        let rel = self.rel(path).map_err(|e| not_beneath(path, e))?;
        let file = self.dir.open(rel).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                ReadError::Io {
                    path: path.to_owned(),
                    source: e,
                }
            } else {
                not_beneath(path, self.refusal(rel, &shown, e))
            }
        })?;
        let file = file.into_std();
        let meta = file.metadata().map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
        if meta.is_dir() {
            return Err(ReadError::Io {
                path: path.to_owned(),
                source: io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            });
        }
        std_hard_links(&meta, &shown).map_err(|e| not_beneath(path, e))?;
        read_text_from(file, path, limits)
    }

    /// Opens `path` for reading beneath the root, refusing a hard-linked file.
    pub fn open_read(&self, path: &Path) -> Result<std::fs::File, EditError> {
        let shown = path.display().to_string();
        let rel = self.rel(path)?;
        let f = self
            .dir
            .open(rel)
            .map_err(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    io_err(path, e)
                } else {
                    self.refusal(rel, &shown, e)
                }
            })?
            .into_std();
        let meta = f.metadata().map_err(|source| io_err(path, source))?;
        std_hard_links(&meta, &shown)?;
        Ok(f)
    }

    /// Reads `path`'s bytes beneath the root (a move's content).
    pub fn read_bytes(&self, path: &Path) -> Result<Vec<u8>, EditError> {
        let mut f = self.open_read(path)?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)
            .map_err(|source| io_err(path, source))?;
        Ok(bytes)
    }

    /// The directories of `dir` (relative or absolute under the root) that do not exist
    /// yet, outermost first.
    pub fn missing_dirs(&self, dir: &Path) -> Result<Vec<PathBuf>, EditError> {
        let rel = self.rel(dir)?;
        let mut missing = Vec::new();
        let mut d = rel;
        while !d.as_os_str().is_empty() {
            match self.dir.metadata(d) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(d.to_path_buf()),
                Err(e) => return Err(self.refusal(d, &d.display().to_string(), e)),
            }
            d = d.parent().unwrap_or(Path::new(""));
        }
        missing.reverse();
        Ok(missing)
    }

    /// Creates `dir` and its parents beneath the root.
    pub fn create_dir_all(&self, dir: &Path) -> Result<(), EditError> {
        let rel = self.rel(dir)?;
        if rel.as_os_str().is_empty() {
            return Ok(());
        }
        self.dir
            .create_dir_all(rel)
            .map_err(|e| self.refusal(rel, &dir.display().to_string(), e))
    }

    /// Writes `bytes` to a new file `path` (never an existing one: no link is followed,
    /// no hard link written through), with `like`'s permissions when given.
    pub fn write_new(
        &self,
        path: &Path,
        bytes: &[u8],
        like: Option<&Path>,
    ) -> Result<(), EditError> {
        let rel = self.rel(path)?;
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        let mut f = self
            .dir
            .open_with(rel, &opts)
            .map_err(|e| self.refusal(rel, &path.display().to_string(), e))?
            .into_std();
        f.write_all(bytes).map_err(|source| io_err(path, source))?;
        if let Some(like) = like {
            let like_rel = self.rel(like)?;
            if let Ok(meta) = self.dir.metadata(like_rel) {
                let perms = meta
                    .permissions()
                    .into_std(&f)
                    .map_err(|source| io_err(path, source))?;
                f.set_permissions(perms)
                    .map_err(|source| io_err(path, source))?;
            }
        }
        Ok(())
    }

    /// Renames `from` to `to`, both beneath the root. A link at `to` is replaced, not
    /// followed.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<(), EditError> {
        let (f, t) = (self.rel(from)?, self.rel(to)?);
        self.dir
            .rename(f, &self.dir, t)
            .map_err(|e| self.refusal(t, &to.display().to_string(), e))
    }

    /// Removes the file (or link) `path`; a missing one is fine.
    pub fn remove_file(&self, path: &Path) -> Result<(), EditError> {
        let rel = self.rel(path)?;
        match self.dir.remove_file(rel) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.refusal(rel, &path.display().to_string(), e)),
        }
    }

    /// Removes the empty directory `path`, ignoring failures (rollback only).
    pub fn remove_dir_quietly(&self, path: &Path) {
        if let Ok(rel) = self.rel(path) {
            let _ = self.dir.remove_dir(rel);
        }
    }

    /// An I/O failure beneath the root, worded: an escape (cap-std reports it as
    /// permission denied, openat2 as a cross-device error) becomes
    /// [`EditError::NotBeneath`]; anything else stays an I/O error.
    fn refusal(&self, rel: &Path, shown: &str, e: io::Error) -> EditError {
        let escaped = match e.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::CrossesDevices => {
                e.to_string().contains("outside") || !self.inside_ambiently(rel)
            }
            _ => false,
        };
        if escaped {
            EditError::NotBeneath {
                path: shown.to_owned(),
                reason: "resolves outside the workspace root (through a symbolic link that leaves it, or an absolute one); the agent only reads and writes files beneath the root".into(),
            }
        } else {
            io_err(&self.root.join(rel), e)
        }
    }

    /// Whether the longest existing prefix of `rel`, resolved the usual way, is inside
    /// the root. Only used to word errors; the checks above are what keep paths in.
    fn inside_ambiently(&self, rel: &Path) -> bool {
        let Ok(root) = std::fs::canonicalize(&self.root) else {
            return false;
        };
        let mut p = self.root.join(rel);
        loop {
            if let Ok(c) = std::fs::canonicalize(&p) {
                return c.starts_with(&root);
            }
            if !p.pop() {
                return false;
            }
        }
    }
}

fn io_err(path: &Path, source: io::Error) -> EditError {
    EditError::Io {
        path: path.to_owned(),
        source,
    }
}

fn not_beneath(path: &Path, e: EditError) -> ReadError {
    let message = match e {
        EditError::NotBeneath { reason, .. } => reason,
        other => other.to_string(),
    };
    ReadError::Io {
        path: path.to_owned(),
        source: io::Error::new(io::ErrorKind::PermissionDenied, message),
    }
}

const HARD_LINKED: &str = "hard links; the agent neither reads nor changes a file with several (another link may be outside the workspace). Copy it to a new file with a command if you need its content";

#[cfg(unix)]
fn hard_links(meta: &cap_std::fs::Metadata, shown: &str) -> Result<(), EditError> {
    use cap_std::fs::MetadataExt;
    links(meta.nlink(), shown)
}

#[cfg(not(unix))]
fn hard_links(_meta: &cap_std::fs::Metadata, _shown: &str) -> Result<(), EditError> {
    Ok(())
}

#[cfg(unix)]
fn std_hard_links(meta: &std::fs::Metadata, shown: &str) -> Result<(), EditError> {
    use std::os::unix::fs::MetadataExt;
    links(meta.nlink(), shown)
}

#[cfg(not(unix))]
fn std_hard_links(_meta: &std::fs::Metadata, _shown: &str) -> Result<(), EditError> {
    Ok(())
}

#[cfg(unix)]
fn links(n: u64, shown: &str) -> Result<(), EditError> {
    if n > 1 {
        return Err(EditError::NotBeneath {
            path: shown.to_owned(),
            reason: format!("has {n} {HARD_LINKED}"),
        });
    }
    Ok(())
}

/// Removes `.` and resolves `..` lexically (the file may not exist yet).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
