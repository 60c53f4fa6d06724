//! The live-buffer view and the change set: the overlay's scratch directories, the
//! buffer layer, write-through paths, and reading back what the command changed.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Files bigger than this are not read into the change set.
const MAX_CHANGE_BYTES: u64 = 16 << 20;

/// Version-control metadata directories. A change set never carries a path through
/// one: a `.git/hooks/pre-commit` the command made would run on the user's next commit
/// once a caller lands it, and `.git/config` can name programs git runs
/// (`core.fsmonitor`, `core.sshCommand`). A file of the same name (`.git` holding
/// `gitdir: ...`) points git elsewhere, so it is dropped as well. Write-through never
/// applies to them either, whatever `.gitignore` says.
pub(crate) const VCS_DIRS: &[&str] = &[
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", "CVS",
];

/// Why a path was left out of the change set, as the caller and the model read it.
pub(crate) const VCS_DROPPED: &str = "version-control metadata: dropped, never part of a change set (a command may not plant hooks or configuration)";

/// True when any component of the workspace-relative `rel` is version-control metadata.
pub(crate) fn is_vcs_path(rel: &Path) -> bool {
    rel.components().any(|c| {
        matches!(c, std::path::Component::Normal(name)
            if name.to_str().is_some_and(|n| VCS_DIRS.contains(&n)))
    })
}

/// One file the command created, modified or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Absolute path in the workspace.
    pub path: PathBuf,
    /// What the command saw before: the dirty buffer's text if one was laid over the
    /// file, else the disk's; `None` when the file was created.
    pub old: Option<String>,
    /// The content the command left; `None` when it deleted the file.
    pub new: Option<String>,
    /// The file did not exist before.
    pub created: bool,
    /// The command deleted the file.
    pub deleted: bool,
}

/// Everything a command changed in the workspace, none of it written to disk yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeSet {
    /// Text files created, modified or deleted, sorted by path.
    pub changes: Vec<FileChange>,
    /// Changes that cannot travel as text (binary, too large, symlinks, special files),
    /// with the reason; they are not applied anywhere.
    pub skipped: Vec<(PathBuf, String)>,
    /// Paths under write-through (ignored) trees that the command created outside the
    /// bound directories, and which were copied to disk after the run.
    pub written_through: Vec<PathBuf>,
    /// Paths the command created, changed or deleted in version-control metadata
    /// (`.git/`, `.hg/`, `.svn/`, ...), left out of `changes` on purpose, with the
    /// reason; nothing of them is applied anywhere. Report them: a command planting
    /// `.git/hooks/pre-commit` should be seen, not silently lost.
    pub dropped: Vec<(PathBuf, String)>,
}

impl ChangeSet {
    /// True when the command changed nothing (dropped paths included).
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.skipped.is_empty() && self.dropped.is_empty()
    }

    /// The change to `path`, if any.
    pub fn get(&self, path: &Path) -> Option<&FileChange> {
        self.changes.iter().find(|c| c.path == path)
    }
}

/// Per-run scratch directories; removed on drop.
pub(crate) struct Scratch {
    pub root: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
    pub buffers: PathBuf,
}

impl Scratch {
    pub(crate) fn create(base: &Path) -> io::Result<Self> {
        let pid = std::process::id();
        for _ in 0..1000 {
            let n = next_id();
            let root = base.join(format!("agentls-sandbox-{pid}-{n}"));
            match fs::create_dir(&root) {
                Ok(()) => {
                    fs::set_permissions(&root, fs::Permissions::from_mode(0o700))?;
                    let s = Self {
                        upper: root.join("upper"),
                        work: root.join("work"),
                        buffers: root.join("buffers"),
                        root,
                    };
                    for d in [&s.upper, &s.work, &s.buffers] {
                        fs::create_dir(d)?;
                    }
                    return Ok(s);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("no free scratch directory name"))
    }
}

/// Removes scratch dirs left in `base` by agentls processes that no longer exist (a
/// crash between run and cleanup); on tmpfs they would hold memory until reboot.
pub(crate) fn remove_stale_scratch(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("agentls-sandbox-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let path = entry.path();
            make_removable(&path);
            if let Err(e) = fs::remove_dir_all(&path) {
                tracing::debug!(path = %path.display(), error = %e, "stale scratch not removed");
            }
        }
    }
}

fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if fs::remove_dir_all(&self.root).is_err() {
            // Overlay leaves `work/work` mode 000; open it up and retry.
            make_removable(&self.root);
            if let Err(e) = fs::remove_dir_all(&self.root) {
                tracing::warn!(path = %self.root.display(), error = %e, "could not remove sandbox scratch");
            }
        }
    }
}

fn make_removable(dir: &Path) {
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_removable(&entry.path());
            }
        }
    }
}

/// Writes each buffer under `layer` at its workspace-relative path, keeping the disk
/// file's mode. Returns the texts by relative path (the "old" side of the change set).
pub(crate) fn write_buffer_layer(
    layer: &Path,
    workspace: &Path,
    buffers: &[crate::DirtyBuffer],
    warnings: &mut Vec<String>,
) -> io::Result<HashMap<PathBuf, String>> {
    let mut texts = HashMap::new();
    for buffer in buffers {
        let Some(rel) = relative_inside(&buffer.path, workspace) else {
            warnings.push(format!(
                "buffer {} is outside the workspace and was not laid over the disk",
                buffer.path.display()
            ));
            continue;
        };
        if rel.as_os_str().is_empty() || is_vcs_path(&rel) {
            warnings.push(format!(
                "buffer {} was not laid over the disk",
                buffer.path.display()
            ));
            continue;
        }
        let dest = layer.join(&rel);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&dest, &buffer.text)?;
        if let Ok(meta) = fs::metadata(workspace.join(&rel)) {
            fs::set_permissions(&dest, fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        }
        texts.insert(rel, buffer.text.clone());
    }
    Ok(texts)
}

/// `path` relative to `root`, when it lies inside it (lexically, no `..`).
pub(crate) fn relative_inside(path: &Path, root: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(root).ok()?;
    if rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        Some(rel.to_path_buf())
    } else {
        None
    }
}

/// Decides which workspace paths write through to disk: the configured directories
/// and, optionally, whatever the root `.gitignore` ignores.
pub(crate) struct WriteThrough {
    roots: Vec<PathBuf>,
    gitignore: Option<Gitignore>,
}

impl WriteThrough {
    pub(crate) fn new(workspace: &Path, roots: &[PathBuf], use_gitignore: bool) -> Self {
        let gitignore = use_gitignore
            .then(|| {
                let mut b = GitignoreBuilder::new(workspace);
                b.add(workspace.join(".gitignore"));
                b.build().ok()
            })
            .flatten()
            .filter(|g| !g.is_empty());
        let roots = roots
            .iter()
            .filter(|r| relative_inside(&workspace.join(r), workspace).is_some())
            .cloned()
            .collect();
        Self { roots, gitignore }
    }

    /// True for a workspace-relative path that writes through.
    pub(crate) fn matches(&self, rel: &Path, is_dir: bool) -> bool {
        if is_vcs_path(rel) {
            return false;
        }
        if self.roots.iter().any(|r| rel.starts_with(r)) {
            return true;
        }
        self.gitignore
            .as_ref()
            .is_some_and(|g| g.matched_path_or_any_parents(rel, is_dir).is_ignore())
    }

    /// Existing top-level directories to bind-mount read-write over the overlay.
    pub(crate) fn existing_dirs(&self, workspace: &Path) -> Vec<PathBuf> {
        // Only real directories: a planted `target -> /outside` must not bind the
        // outside writable (its writes stay in the overlay and reach the host through
        // the checked edit path).
        let mut out: Vec<PathBuf> = self
            .roots
            .iter()
            .filter(|r| real_dir_beneath(workspace, r))
            .cloned()
            .collect();
        if self.gitignore.is_some()
            && let Ok(entries) = fs::read_dir(workspace)
        {
            for entry in entries.flatten() {
                let rel = PathBuf::from(entry.file_name());
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && !out.contains(&rel) && self.matches(&rel, true) {
                    out.push(rel);
                }
            }
        }
        out.sort();
        out
    }
}

/// What [`guard_write_through`] did to the write-through directories before a run.
#[derive(Debug, Default)]
pub(crate) struct Guarded {
    /// Directories safe to bind read-write from disk.
    pub bind: Vec<PathBuf>,
    /// One line each for the run's warnings: private copies made, directories not bound.
    pub notes: Vec<String>,
}

/// Makes the write-through directories safe to bind from disk, where the command's
/// writes land on the real inodes:
/// - A regular file with more links than the walk found inside these directories
///   (`st_nlink` larger) shares its inode with a path elsewhere, outside the root:
///   `echo >> target/x` would change that outside file too. It is replaced by a
///   private copy (a fresh inode renamed over it), so the outside file keeps its
///   content; where the copy fails, the directory is not bound this run.
///   Links between files inside (cargo's `deps/x-hash` and `x`) are left alone.
/// - A socket or FIFO in a directory would let the command reach a host process by
///   path, so that directory is not bound this run: its writes go to the overlay and
///   are copied to disk after the run, like other ignored paths.
///
/// The walk reads every entry under each directory (one `lstat` per file): for a
/// large `target/` this is the price of binding it.
pub(crate) fn guard_write_through(ws: &Path, dirs: Vec<PathBuf>) -> Guarded {
    use std::collections::hash_map::Entry;
    let mut out = Guarded::default();
    // (dev, ino) -> (st_nlink, the paths found, the directory they are in)
    let mut linked: HashMap<(u64, u64), (u64, Vec<PathBuf>, usize)> = HashMap::new();
    let mut refused = vec![false; dirs.len()];
    for (i, rel) in dirs.iter().enumerate() {
        let mut stack = vec![ws.join(rel)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(ft) = entry.file_type() else { continue };
                if ft.is_dir() {
                    stack.push(entry.path());
                } else if ft.is_socket() || ft.is_fifo() {
                    if !refused[i] {
                        out.notes.push(format!(
                            "{} holds {} {}: it is not written through this run (no host socket or pipe is reachable from the sandbox); its changes are copied to disk after the run",
                            rel.display(),
                            if ft.is_socket() { "the socket" } else { "the FIFO" },
                            entry.path().display()
                        ));
                    }
                    refused[i] = true;
                } else if ft.is_file()
                    && let Ok(meta) = entry.metadata()
                    && meta.nlink() > 1
                {
                    match linked.entry((meta.dev(), meta.ino())) {
                        Entry::Occupied(mut e) => e.get_mut().1.push(entry.path()),
                        Entry::Vacant(e) => {
                            e.insert((meta.nlink(), vec![entry.path()], i));
                        }
                    }
                }
            }
        }
    }
    for (nlink, paths, i) in linked.into_values() {
        if paths.len() as u64 >= nlink {
            continue;
        }
        for path in paths {
            match private_copy(&path) {
                Ok(()) => out.notes.push(format!(
                    "{} had a hard link outside the workspace's write-through folders: replaced by a private copy, so the sandbox's writes cannot reach the other file",
                    path.display()
                )),
                Err(e) => {
                    out.notes.push(format!(
                        "{} has a hard link outside the workspace and could not be copied ({e}): {} is not written through this run",
                        path.display(),
                        dirs[i].display()
                    ));
                    refused[i] = true;
                }
            }
        }
    }
    out.bind = dirs
        .into_iter()
        .zip(refused)
        .filter_map(|(d, r)| (!r).then_some(d))
        .collect();
    out
}

/// Gives `path` an inode of its own: a copy beside it, renamed over it (mode kept).
fn private_copy(path: &Path) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{}.agentls-unlink-{}",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let _ = fs::remove_file(&tmp);
    fs::copy(path, &tmp)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Reads the overlay's upper layer into a change set; copies write-through paths the
/// command created (outside the bound directories) to disk.
pub(crate) fn collect(
    upper: &Path,
    workspace: &Path,
    overlaid: &HashMap<PathBuf, String>,
    write_through: &WriteThrough,
) -> ChangeSet {
    let mut set = ChangeSet::default();
    walk(
        upper,
        workspace,
        Path::new(""),
        overlaid,
        write_through,
        &mut set,
    );
    set.changes.sort_by(|a, b| a.path.cmp(&b.path));
    set.dropped.sort();
    set
}

fn walk(
    upper: &Path,
    ws: &Path,
    dir: &Path,
    overlaid: &HashMap<PathBuf, String>,
    wt: &WriteThrough,
    set: &mut ChangeSet,
) {
    let Ok(entries) = fs::read_dir(upper.join(dir)) else {
        return;
    };
    let mut names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    names.sort();
    let present: HashSet<_> = names.iter().cloned().collect();
    if is_opaque(&upper.join(dir)) {
        // The command removed the directory and made it again: whatever the lower
        // layers had in it and the upper lacks is gone.
        for rel in lower_files(ws, dir, overlaid) {
            let top = rel
                .strip_prefix(dir)
                .ok()
                .and_then(|r| r.components().next());
            if top.is_some_and(|t| present.contains(t.as_os_str())) {
                continue;
            }
            push_deleted(ws, &rel, overlaid, set);
        }
    }
    for name in names {
        let rel = dir.join(&name);
        let path = upper.join(&rel);
        if is_vcs_path(&rel) {
            // Reported once, at the metadata directory (or file) itself.
            set.dropped.push((ws.join(&rel), VCS_DROPPED.to_owned()));
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let ft = meta.file_type();
        let whiteout = ft.is_char_device() && meta.rdev() == 0;
        if wt.matches(&rel, ft.is_dir()) {
            write_through_copy(&path, ws, &rel, whiteout, set);
            continue;
        }
        if whiteout {
            for file in lower_files_at(ws, &rel, overlaid) {
                push_deleted(ws, &file, overlaid, set);
            }
        } else if ft.is_dir() {
            if lower_is_file(ws, &rel, overlaid) {
                push_deleted(ws, &rel, overlaid, set);
            }
            walk(upper, ws, &rel, overlaid, wt, set);
        } else if ft.is_file() {
            if fs::symlink_metadata(ws.join(&rel)).is_ok_and(|m| m.is_dir()) {
                for file in lower_files_at(ws, &rel, overlaid) {
                    push_deleted(ws, &file, overlaid, set);
                }
            }
            push_written(ws, &rel, &path, meta.len(), overlaid, set);
        } else {
            set.skipped.push((
                ws.join(&rel),
                "not a regular file (symlink or special file)".into(),
            ));
        }
    }
}

fn is_opaque(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut buf = [0u8; 4];
    // SAFETY: valid C strings and a live buffer of the given length.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n >= 1 && buf[0] == b'y'
}

fn lower_is_file(ws: &Path, rel: &Path, overlaid: &HashMap<PathBuf, String>) -> bool {
    overlaid.contains_key(rel) || fs::symlink_metadata(ws.join(rel)).is_ok_and(|m| m.is_file())
}

/// Regular files at `rel` in the lower layers (the path itself or all files beneath).
fn lower_files_at(ws: &Path, rel: &Path, overlaid: &HashMap<PathBuf, String>) -> Vec<PathBuf> {
    if lower_is_file(ws, rel, overlaid) {
        return vec![rel.to_path_buf()];
    }
    lower_files(ws, rel, overlaid)
}

/// Regular files beneath the directory `rel` in the lower layers (disk and buffers).
fn lower_files(ws: &Path, rel: &Path, overlaid: &HashMap<PathBuf, String>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let root = ws.join(rel);
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file()
                && let Ok(r) = e.path().strip_prefix(ws)
            {
                out.push(r.to_path_buf());
            }
        }
    }
    for k in overlaid.keys() {
        if k.starts_with(rel) && k != rel && !out.contains(k) {
            out.push(k.clone());
        }
    }
    out.sort();
    out
}

fn read_old(
    ws: &Path,
    rel: &Path,
    overlaid: &HashMap<PathBuf, String>,
) -> Result<Option<String>, String> {
    if let Some(t) = overlaid.get(rel) {
        return Ok(Some(t.clone()));
    }
    let path = ws.join(rel);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => read_text(&path, m.len()).map(Some),
        Ok(_) => Err("was not a regular file".into()),
        Err(_) => Ok(None),
    }
}

fn read_text(path: &Path, len: u64) -> Result<String, String> {
    if len > MAX_CHANGE_BYTES {
        return Err(format!("larger than {MAX_CHANGE_BYTES} bytes"));
    }
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

fn push_deleted(ws: &Path, rel: &Path, overlaid: &HashMap<PathBuf, String>, set: &mut ChangeSet) {
    if is_vcs_path(rel) {
        set.dropped.push((ws.join(rel), VCS_DROPPED.to_owned()));
        return;
    }
    match read_old(ws, rel, overlaid) {
        Ok(Some(old)) => set.changes.push(FileChange {
            path: ws.join(rel),
            old: Some(old),
            new: None,
            created: false,
            deleted: true,
        }),
        Ok(None) => {}
        Err(why) => set
            .skipped
            .push((ws.join(rel), format!("deleted; old content {why}"))),
    }
}

fn push_written(
    ws: &Path,
    rel: &Path,
    upper_path: &Path,
    len: u64,
    overlaid: &HashMap<PathBuf, String>,
    set: &mut ChangeSet,
) {
    let new = match read_text(upper_path, len) {
        Ok(t) => t,
        Err(why) => {
            set.skipped
                .push((ws.join(rel), format!("new content {why}")));
            return;
        }
    };
    match read_old(ws, rel, overlaid) {
        // Copied up for a metadata change (chmod, touch) only.
        Ok(Some(old)) if old == new => {}
        Ok(old) => set.changes.push(FileChange {
            path: ws.join(rel),
            created: old.is_none(),
            old,
            new: Some(new),
            deleted: false,
        }),
        Err(why) => set
            .skipped
            .push((ws.join(rel), format!("old content {why}"))),
    }
}

/// Whether `rel` is a real directory beneath `root`, reached through no symbolic link.
pub(crate) fn real_dir_beneath(root: &Path, rel: &Path) -> bool {
    no_link_on_the_way(root, rel).is_ok()
        && fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.is_dir())
}

/// Refuses a workspace-relative path whose parent directories include a symbolic link
/// (or a `..`): writing there would land wherever the link points.
fn no_link_on_the_way(root: &Path, rel: &Path) -> io::Result<()> {
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        let std::path::Component::Normal(name) = part else {
            return Err(io::Error::other(format!(
                "{} leaves the workspace",
                rel.display()
            )));
        };
        at.push(name);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(io::Error::other(format!(
                    "{} is a symbolic link; nothing is written through it",
                    at.display()
                )));
            }
            Ok(m) if !m.is_dir() => {
                return Err(io::Error::other(format!(
                    "{} is not a directory",
                    at.display()
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Applies a write-through path from the upper layer to disk, beneath the workspace:
/// no symbolic link on the host is followed (a link in the way is replaced, never
/// written through), and files are replaced by rename, so a hard link to a file
/// elsewhere keeps its old content.
fn write_through_copy(from: &Path, ws: &Path, rel: &Path, whiteout: bool, set: &mut ChangeSet) {
    let to = ws.join(rel);
    let to = to.as_path();
    let result = match no_link_on_the_way(ws, rel) {
        Err(e) => Err(e),
        Ok(()) if whiteout => remove_no_follow(to),
        Ok(()) => copy_tree(from, to),
    };
    match result {
        Ok(()) => set.written_through.push(to.to_path_buf()),
        Err(e) => set
            .skipped
            .push((to.to_path_buf(), format!("write-through copy failed: {e}"))),
    }
}

/// Removes `path` itself: a link is unlinked, never followed.
fn remove_no_follow(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::remove_file(path),
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => Ok(()),
    }
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(from)?;
    let ft = meta.file_type();
    let existing = fs::symlink_metadata(to).ok();
    if ft.is_dir() {
        match &existing {
            Some(m) if m.is_dir() && !m.file_type().is_symlink() => {}
            Some(_) => {
                // A link (or file) where the command made a directory: replace it,
                // never write through it.
                remove_no_follow(to)?;
                fs::create_dir(to)?;
            }
            None => fs::create_dir(to)?,
        }
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else if ft.is_symlink() {
        let target = fs::read_link(from)?;
        if existing.is_some() {
            remove_no_follow(to)?;
        }
        std::os::unix::fs::symlink(target, to)
    } else if ft.is_file() {
        // A fresh inode renamed over whatever is there: neither a link at `to` nor a
        // hard link to `to` carries the write elsewhere.
        let name = to.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp = to.with_file_name(format!(
            ".{}.agentls-{}",
            name.unwrap_or_default(),
            std::process::id()
        ));
        let _ = fs::remove_file(&tmp);
        fs::copy(from, &tmp)?;
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            remove_no_follow(to)?;
        }
        fs::rename(&tmp, to).inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
    } else {
        // Whiteouts below a copied directory: nothing to bring over.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_scratch_of_dead_processes_is_removed() {
        let base = tempfile::tempdir().unwrap();
        // pid_max is at most 2^22, so this pid cannot exist.
        let dead = base.path().join("agentls-sandbox-99999999-0");
        let mine = base
            .path()
            .join(format!("agentls-sandbox-{}-0", std::process::id()));
        let other = base.path().join("unrelated");
        for d in [&dead, &mine, &other] {
            fs::create_dir_all(d.join("upper")).unwrap();
        }
        remove_stale_scratch(base.path());
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists());
    }

    #[test]
    fn relative_inside_refuses_escapes() {
        let ws = Path::new("/w");
        assert_eq!(
            relative_inside(Path::new("/w/a/b.rs"), ws),
            Some(PathBuf::from("a/b.rs"))
        );
        assert_eq!(relative_inside(Path::new("/w/../etc/passwd"), ws), None);
        assert_eq!(relative_inside(Path::new("/x/a"), ws), None);
    }

    #[test]
    fn write_through_by_root_and_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".gitignore"), "build/\n*.log\n").unwrap();
        fs::create_dir(dir.path().join("build")).unwrap();
        fs::create_dir(dir.path().join("src")).unwrap();
        let wt = WriteThrough::new(dir.path(), &[PathBuf::from("target")], true);
        assert!(wt.matches(Path::new("target/debug/x"), false));
        assert!(wt.matches(Path::new("build/out.o"), false));
        assert!(wt.matches(Path::new("src/run.log"), false));
        assert!(!wt.matches(Path::new("src/main.rs"), false));
        assert!(!wt.matches(Path::new(".git/config"), false));
        assert_eq!(wt.existing_dirs(dir.path()), vec![PathBuf::from("build")]);
    }

    #[test]
    fn collect_reads_upper() {
        let ws = tempfile::tempdir().unwrap();
        let upper = tempfile::tempdir().unwrap();
        fs::write(ws.path().join("a.txt"), "disk\n").unwrap();
        fs::write(ws.path().join("same.txt"), "same\n").unwrap();
        fs::write(upper.path().join("a.txt"), "new\n").unwrap();
        fs::write(upper.path().join("same.txt"), "same\n").unwrap();
        fs::write(upper.path().join("b.txt"), "created\n").unwrap();
        fs::write(upper.path().join("bin"), [0xff, 0xfe]).unwrap();
        let overlaid = HashMap::from([(PathBuf::from("a.txt"), "buffer\n".to_string())]);
        let wt = WriteThrough::new(ws.path(), &[], false);
        let set = collect(upper.path(), ws.path(), &overlaid, &wt);
        assert_eq!(set.changes.len(), 2);
        let a = set.get(&ws.path().join("a.txt")).unwrap();
        assert_eq!(
            (a.old.as_deref(), a.new.as_deref(), a.created),
            (Some("buffer\n"), Some("new\n"), false)
        );
        let b = set.get(&ws.path().join("b.txt")).unwrap();
        assert!(b.created && b.old.is_none());
        assert_eq!(set.skipped.len(), 1);
    }
}
