//! What of the host a sandboxed command sees: system folders and toolchains read-only,
//! the workspace (layered) and granted paths writable, its own /tmp, and nothing else.
//!
//! Every top-level directory of `/` that is not a system folder ([`SYSTEM`]) is covered
//! inside the sandbox by an empty tmpfs: `/home`, `/root`, `/var`, `/srv`, `/mnt`,
//! `/run`, `/tmp`, and whatever else the machine has (`/work`, `/data`). The trees a
//! run needs beneath them (the workspace, granted paths, toolchains such as `~/.cargo`
//! or `~/.pyenv`) are cloned before the cover goes on and put back after.
//!
//! # Why hiding, and not seccomp, keeps host sockets out of reach
//! A pathname Unix socket is reached by `connect()` on its path; seccomp sees only the
//! pointer to the address, not the path (reading it from the caller's memory is racy,
//! so no seccomp policy can hold on it), and denying `connect()` on every `AF_UNIX`
//! socket would also break what builds and tests do among themselves (a test server
//! on a socket in /tmp, Python's multiprocessing managers). Landlock controls pathname
//! socket resolution only from the kernel that adds `LANDLOCK_ACCESS_FS_RESOLVE_UNIX`
//! (used where [`crate::probe`] finds it, as a second wall); its ABI 6 scoping covers
//! abstract sockets only (which the network namespace separates anyway).
//! So the first wall is that no host socket is *there*: sockets live in `/run`, `/tmp`,
//! `/var` (`/var/tmp`, `/var/lib/mysql`), home folders (an ssh agent, a docker
//! rootless socket) and service folders, all of them covered; the system folders hold
//! programs and configuration, not sockets. The workspace is an overlay, through which
//! `connect()` to a socket of a lower layer is refused; write-through folders, bound
//! from disk, are walked before the run and not bound when they hold a socket
//! (`layers::guard_write_through`).

use std::path::{Path, PathBuf};

/// Top-level directories shown as they are (read-only under Landlock): programs,
/// libraries and configuration. `/proc`, `/dev` are the sandbox's own where it has a
/// pid and mount namespace; `/sys` holds no sockets.
const SYSTEM: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "proc", "dev", "sys",
    "snap",
];

/// Stores of package managers that live under a folder with more in it (`/nix/var`
/// holds the nix daemon's socket): only the store is shown.
const STORES: &[&str] = &["/nix/store", "/gnu/store"];

/// Toolchain folders beneath the home directory, shown read-only when they exist.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".volta",
    ".deno",
    ".bun",
    ".sdkman",
    ".local/bin",
    ".local/lib",
    "go",
    ".m2",
];

/// A host directory covered by an empty tmpfs inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mask {
    /// The covered directory (`/home`).
    pub dir: PathBuf,
    /// Directories made in the cover: the home directory, so `cd ~` works.
    pub dirs: Vec<PathBuf>,
    /// Symbolic links made in the cover, (target, link): `/var/tmp -> /tmp`.
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// A tree beneath a mask put back after the cover goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keep {
    /// The tree (`/home/me/project`); cloned with what is mounted beneath it.
    pub tree: PathBuf,
    /// Directories to make in the cover for it, outermost first, ending with the tree
    /// itself (its mount point).
    pub dirs: Vec<PathBuf>,
    /// The tree is a file: its mount point is a file, not a directory.
    pub file: bool,
    /// Remounted read-only once back.
    pub readonly: bool,
}

/// The sandbox's view of the host: what is covered and what is put back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct View {
    pub masks: Vec<Mask>,
    /// Outermost first, so a tree inside another is mounted on top of it.
    pub keeps: Vec<Keep>,
}

impl View {
    /// Plans the view from the names of the directories at `/`, the trees the command
    /// writes and the trees it reads.
    pub(crate) fn plan(
        root_dirs: &[String],
        writable: &[PathBuf],
        readable: &[PathBuf],
        home: Option<&Path>,
    ) -> Self {
        let mut view = View::default();
        for name in root_dirs {
            if SYSTEM.contains(&name.as_str()) {
                continue;
            }
            view.masks.push(Mask {
                dir: Path::new("/").join(name),
                dirs: Vec::new(),
                links: Vec::new(),
            });
        }
        // /tmp and /run are always the sandbox's own, present on the host or not.
        for dir in ["/tmp", "/run"] {
            if !view.masks.iter().any(|m| m.dir == Path::new(dir)) {
                view.masks.push(Mask {
                    dir: PathBuf::from(dir),
                    dirs: Vec::new(),
                    links: Vec::new(),
                });
            }
        }
        // A top-level folder that is itself the workspace or a granted tree stays.
        view.masks.retain(|m| {
            m.dir == Path::new("/tmp")
                || m.dir == Path::new("/run")
                || !writable.iter().chain(readable).any(|t| *t == m.dir)
        });
        view.masks.sort_by(|a, b| a.dir.cmp(&b.dir));
        let mut readable: Vec<&PathBuf> = readable.iter().collect();
        readable.sort_by_key(|p| p.components().count());
        let trees = writable
            .iter()
            .map(|p| (p, false))
            .chain(readable.into_iter().map(|p| (p, true)));
        for (tree, readonly) in trees {
            let Some(mask) = view.mask_of(tree) else {
                continue;
            };
            if *tree == mask || view.keeps.iter().any(|k| k.tree == *tree) {
                continue;
            }
            // A read-only tree inside one already kept is carried along with it.
            if readonly && view.keeps.iter().any(|k| tree.starts_with(&k.tree)) {
                continue;
            }
            let dirs = tree
                .strip_prefix(&mask)
                .map(|rel| {
                    let mut acc = mask.clone();
                    rel.components()
                        .map(|c| {
                            acc.push(c);
                            acc.clone()
                        })
                        .collect()
                })
                .unwrap_or_default();
            view.keeps.push(Keep {
                tree: tree.clone(),
                dirs,
                file: tree.is_file(),
                readonly,
            });
        }
        view.keeps
            .sort_by_key(|k| (k.tree.components().count(), k.tree.clone()));
        if let Some(home) = home
            && let Some(mask) = view.mask_of(home)
            && !view.keeps.iter().any(|k| home.starts_with(&k.tree))
            && let Ok(rel) = home.strip_prefix(&mask)
            && let Some(m) = view.masks.iter_mut().find(|m| m.dir == mask)
        {
            let mut acc = mask.clone();
            for c in rel.components() {
                acc.push(c);
                m.dirs.push(acc.clone());
            }
        }
        if let Some(var) = view.masks.iter_mut().find(|m| m.dir == Path::new("/var")) {
            // Programs that use /var/tmp get the run's own /tmp.
            var.links
                .push((PathBuf::from("/tmp"), PathBuf::from("/var/tmp")));
            var.links
                .push((PathBuf::from("/run"), PathBuf::from("/var/run")));
        }
        view
    }

    /// The mask covering `path`, if any.
    fn mask_of(&self, path: &Path) -> Option<PathBuf> {
        self.masks
            .iter()
            .find(|m| path.starts_with(&m.dir))
            .map(|m| m.dir.clone())
    }

    /// True when `path` (absolute) is hidden inside the sandbox: covered and not kept.
    pub(crate) fn hides(&self, path: &Path) -> bool {
        self.mask_of(path).is_some()
            && !self.keeps.iter().any(|k| path.starts_with(&k.tree))
            && !self
                .masks
                .iter()
                .any(|m| m.dirs.iter().any(|d| d == path) || m.dir == path)
    }
}

/// The directories at `/` (not links: `/lib -> usr/lib` follows its target).
pub(crate) fn root_dirs() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/") else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    out.sort();
    out
}

/// The toolchain folders a command reads: package stores, the directories named by
/// the passed-through variables (`CARGO_HOME`, `GOROOT`, ...), the usual ones beneath
/// the home directory, and each `PATH` entry (its parent for a `bin` or `shims`
/// folder, such as `~/.cargo/bin`, so the toolchain's other folders come along).
pub(crate) fn toolchains(home: Option<&Path>, path_var: &str, named: &[String]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = STORES.iter().map(PathBuf::from).collect();
    out.extend(named.iter().map(PathBuf::from));
    if let Some(home) = home {
        out.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
    }
    for entry in path_var.split(':').map(Path::new) {
        let toolchain_root = entry
            .file_name()
            .is_some_and(|n| n == "bin" || n == "shims")
            .then(|| entry.parent())
            .flatten()
            // Not the home directory itself (`~/bin`), nor a top-level folder.
            .filter(|p| Some(*p) != home && p.components().count() > 2);
        out.push(toolchain_root.unwrap_or(entry).to_path_buf());
    }
    out.retain(|p| p.is_absolute() && p.exists());
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn covers_all_but_system_folders_and_puts_back_what_runs_need() {
        let view = View::plan(
            &names(&["bin", "etc", "home", "nix", "tmp", "usr", "var", "work"]),
            &[PathBuf::from("/work/ws")],
            &[
                PathBuf::from("/home/me/.cargo"),
                PathBuf::from("/home/me/.cargo/bin"),
                PathBuf::from("/usr/local"),
                PathBuf::from("/nix/store"),
            ],
            Some(Path::new("/home/me")),
        );
        let masked: Vec<_> = view.masks.iter().map(|m| m.dir.clone()).collect();
        let expect: Vec<PathBuf> = ["/home", "/nix", "/run", "/tmp", "/var", "/work"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(masked, expect);
        let kept: Vec<_> = view
            .keeps
            .iter()
            .map(|k| (k.tree.clone(), k.readonly))
            .collect();
        assert_eq!(
            kept,
            [
                (PathBuf::from("/nix/store"), true),
                (PathBuf::from("/work/ws"), false),
                (PathBuf::from("/home/me/.cargo"), true),
            ]
        );
        assert_eq!(
            view.keeps[2].dirs,
            [PathBuf::from("/home/me"), PathBuf::from("/home/me/.cargo")]
        );
        assert!(view.hides(Path::new("/var/tmp/agent.sock")));
        assert!(view.hides(Path::new("/home/me/.ssh/agent.sock")));
        assert!(!view.hides(Path::new("/home/me/.cargo/bin/cargo")));
        assert!(!view.hides(Path::new("/work/ws/src/lib.rs")));
        assert!(!view.hides(Path::new("/usr/bin/python3")));
        let var = view.masks.iter().find(|m| m.dir == Path::new("/var"));
        assert!(var.is_some_and(|v| v.links.iter().any(|(_, l)| l == Path::new("/var/tmp"))));
    }

    #[test]
    fn the_home_directory_exists_even_when_nothing_in_it_is_kept() {
        let view = View::plan(&names(&["home"]), &[], &[], Some(Path::new("/home/me")));
        let home = view.masks.iter().find(|m| m.dir == Path::new("/home"));
        assert_eq!(
            home.map(|m| m.dirs.clone()),
            Some(vec![PathBuf::from("/home/me")])
        );
    }

    #[test]
    fn a_writable_tree_inside_a_read_only_one_is_kept_on_its_own() {
        let view = View::plan(
            &names(&["root"]),
            &[PathBuf::from("/root/go/src/proj")],
            &[PathBuf::from("/root/go")],
            None,
        );
        let kept: Vec<_> = view.keeps.iter().map(|k| k.tree.clone()).collect();
        assert_eq!(
            kept,
            [
                PathBuf::from("/root/go"),
                PathBuf::from("/root/go/src/proj")
            ]
        );
    }

    #[test]
    fn toolchains_come_from_path_and_home() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        std::fs::create_dir_all(h.join(".cargo/bin")).unwrap();
        std::fs::create_dir_all(h.join("bin")).unwrap();
        std::fs::create_dir_all(h.join(".pyenv/shims")).unwrap();
        let path = format!(
            "{}:{}:{}:/usr/bin",
            h.join(".cargo/bin").display(),
            h.join("bin").display(),
            h.join(".pyenv/shims").display()
        );
        let found = toolchains(Some(h), &path, &[]);
        assert!(found.contains(&h.join(".cargo")), "{found:?}");
        assert!(found.contains(&h.join(".pyenv")), "{found:?}");
        // `~/bin` alone, never the whole home directory.
        assert!(found.contains(&h.join("bin")), "{found:?}");
        assert!(!found.contains(&h.to_path_buf()), "{found:?}");
    }
}
