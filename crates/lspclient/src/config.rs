//! Which language servers agentls knows, and how the user overrides them:
//! `[language_servers.NAME]` tables (`command`, `args`, `filetypes`, `language_id`,
//! `enabled`) in the user's config file, never the workspace's (a repository must not
//! pick programs to run).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One language server: how to start it and which files it checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// A short name (`rust-analyzer`, `pylsp`, ...), the config table's key.
    pub name: String,
    /// The program, looked up on `PATH` unless it holds a `/`.
    pub command: String,
    /// Its arguments (`--stdio` for most).
    pub args: Vec<String>,
    /// File extensions it checks, without the dot.
    pub filetypes: Vec<String>,
    /// The LSP `languageId` of those files.
    pub language_id: String,
}

/// A user's `[language_servers.NAME]` table: every key optional; a name agentls does not
/// know needs `command` and `filetypes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerOverride {
    /// The program.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Option<Vec<String>>,
    /// File extensions, without the dot.
    pub filetypes: Option<Vec<String>>,
    /// The LSP `languageId`; the first file type when absent.
    pub language_id: Option<String>,
    /// `false` turns the server off.
    pub enabled: Option<bool>,
}

/// The `[language_servers]` table: overrides per name, and `enabled = false` under
/// `[verify]` turns them all off (see [`crate::VerifyConfig`]).
pub type LanguageServersConfig = BTreeMap<String, ServerOverride>;

fn spec(name: &str, command: &str, args: &[&str], filetypes: &[&str], id: &str) -> ServerSpec {
    ServerSpec {
        name: name.to_owned(),
        command: command.to_owned(),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        filetypes: filetypes.iter().map(|s| (*s).to_owned()).collect(),
        language_id: id.to_owned(),
    }
}

/// The servers agentls knows, in order of preference: for a file type, the first one
/// found on `PATH` wins (pyright before pylsp).
pub fn known() -> Vec<ServerSpec> {
    vec![
        spec("rust-analyzer", "rust-analyzer", &[], &["rs"], "rust"),
        spec(
            "pyright",
            "pyright-langserver",
            &["--stdio"],
            &["py", "pyi"],
            "python",
        ),
        spec("pylsp", "pylsp", &[], &["py", "pyi"], "python"),
        spec("gopls", "gopls", &[], &["go"], "go"),
        spec(
            "typescript-language-server",
            "typescript-language-server",
            &["--stdio"],
            &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
            "typescript",
        ),
        spec(
            "clangd",
            "clangd",
            &[],
            &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
            "cpp",
        ),
    ]
}

/// Known servers that start only when the user's config says `enabled = true`.
/// rust-analyzer answers a warm check of a 5,000-line crate in tens of milliseconds
/// (`tests/rust_analyzer.rs`), but it holds the whole crate graph in memory (~600 MiB
/// for that crate, gigabytes for large workspaces), a second copy beside the editor's
/// own rust-analyzer, whose diagnostics the editor clients forward anyway.
pub const OPT_IN: &[&str] = &["rust-analyzer"];

/// The known servers with `config` laid over them: fields replaced, servers disabled or
/// added. An added server without `command` or `filetypes` is left out, with a warning.
/// A server in [`OPT_IN`] is left out unless its table says `enabled = true`.
pub fn merged(config: &LanguageServersConfig) -> Vec<ServerSpec> {
    let mut specs: Vec<ServerSpec> = Vec::new();
    let mut known = known();
    for (name, o) in config {
        if !known.iter().any(|s| &s.name == name) {
            match (&o.command, &o.filetypes) {
                (Some(c), Some(f)) if !f.is_empty() => {
                    known.push(spec(name, c, &[], &[], f[0].as_str()));
                }
                _ => {
                    tracing::warn!("[language_servers.{name}]: needs command and filetypes");
                    continue;
                }
            }
        }
    }
    for mut s in known {
        let enabled = config.get(&s.name).and_then(|o| o.enabled);
        if OPT_IN.contains(&s.name.as_str()) && enabled != Some(true) {
            continue;
        }
        if let Some(o) = config.get(&s.name) {
            if o.enabled == Some(false) {
                continue;
            }
            if let Some(c) = &o.command {
                s.command.clone_from(c);
            }
            if let Some(a) = &o.args {
                s.args.clone_from(a);
            }
            if let Some(f) = &o.filetypes {
                s.filetypes.clone_from(f);
            }
            if let Some(id) = &o.language_id {
                s.language_id.clone_from(id);
            }
        }
        specs.push(s);
    }
    specs
}

/// Which server checks `path`, among `specs`, by its extension.
pub fn for_path<'a>(specs: &'a [ServerSpec], path: &Path) -> Option<&'a ServerSpec> {
    let ext = path.extension()?.to_str()?;
    specs.iter().find(|s| s.filetypes.iter().any(|f| f == ext))
}

/// The program `command` names: itself when it holds a `/`, else the first executable
/// of that name on `path_var` (the `PATH` value).
pub fn which(command: &str, path_var: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = Path::new(command);
        return executable(p).then(|| p.to_path_buf());
    }
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn overrides_replace_disable_and_add() {
        let config: LanguageServersConfig = toml_like(&[
            (
                "pyright",
                ServerOverride {
                    enabled: Some(false),
                    ..Default::default()
                },
            ),
            (
                "pylsp",
                ServerOverride {
                    args: Some(vec!["-v".into()]),
                    ..Default::default()
                },
            ),
            (
                "zls",
                ServerOverride {
                    command: Some("/opt/zls".into()),
                    filetypes: Some(vec!["zig".into()]),
                    ..Default::default()
                },
            ),
            ("broken", ServerOverride::default()),
        ]);
        let specs = merged(&config);
        assert!(!specs.iter().any(|s| s.name == "pyright"));
        assert!(!specs.iter().any(|s| s.name == "broken"));
        let py = for_path(&specs, Path::new("a/b.py")).unwrap();
        assert_eq!(
            (py.name.as_str(), py.args.clone()),
            ("pylsp", vec!["-v".to_owned()])
        );
        let zig = for_path(&specs, Path::new("x.zig")).unwrap();
        assert_eq!(
            (zig.command.as_str(), zig.language_id.as_str()),
            ("/opt/zls", "zig")
        );
        assert!(for_path(&specs, Path::new("README")).is_none());
    }

    #[test]
    fn rust_analyzer_starts_only_when_enabled() {
        let rs = Path::new("src/lib.rs");
        assert!(for_path(&merged(&LanguageServersConfig::new()), rs).is_none());
        let on = toml_like(&[(
            "rust-analyzer",
            ServerOverride {
                enabled: Some(true),
                ..Default::default()
            },
        )]);
        assert_eq!(
            for_path(&merged(&on), rs).map(|s| s.name.as_str()),
            Some("rust-analyzer")
        );
    }

    fn toml_like(items: &[(&str, ServerOverride)]) -> LanguageServersConfig {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn which_finds_executables_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("ls-a");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("ls-b"), "").unwrap();
        let path = dir.path().as_os_str();
        assert_eq!(which("ls-a", Some(path)), Some(exe));
        assert_eq!(which("ls-b", Some(path)), None);
        assert_eq!(which("ls-a", None), None);
    }
}
