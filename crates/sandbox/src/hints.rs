//! Recognising failures that look like the sandbox said no, so the caller can offer to
//! re-run with more access.

/// What kind of access a failure seems to have lacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenialKind {
    /// Network access (there is no route out of the sandbox).
    Network,
    /// A write outside the writable trees, or to `.git`.
    Filesystem,
    /// A process, memory or system-call limit.
    Resources,
}

/// "This looks like a sandbox denial", with the evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenialHint {
    /// The access that seems to be missing.
    pub kind: DenialKind,
    /// A message for the model and the user, naming the line that gave it away.
    pub message: String,
}

const NETWORK: &[&str] = &[
    "network is unreachable",
    "could not resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "failed to lookup address",
    "no address associated with hostname",
    "getaddrinfo",
    "dns error",
    "network unreachable",
    "failed to connect to",
    // Inside the sandbox, services of the host on localhost are out of reach.
    "connection refused",
];
const FILESYSTEM: &[&str] = &[
    "read-only file system",
    "permission denied",
    "eacces",
    "erofs",
];
const RESOURCES: &[&str] = &[
    "resource temporarily unavailable",
    "cannot allocate memory",
    "out of memory",
    "fork: retry",
    "operation not permitted",
];

/// Looks at a failed command's stderr (and stdout) for the marks of a denial;
/// `hidden` says which host paths the sandbox's view leaves out.
pub(crate) fn detect(
    success: bool,
    stderr: &str,
    stdout: &str,
    hidden: &dyn Fn(&std::path::Path) -> bool,
) -> Option<DenialHint> {
    if success {
        return None;
    }
    for line in stderr.lines().chain(stdout.lines()) {
        let lower = line.to_ascii_lowercase();
        let hit = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
        let (kind, what) = if let Some(path) = hidden_host_path(line, hidden) {
            (
                DenialKind::Filesystem,
                if path.starts_with("/tmp/") {
                    "the sandbox has a private /tmp, so paths under the host's /tmp (outside the workspace) do not exist inside it"
                } else {
                    "the sandbox shows only system folders, toolchains and the workspace, so this host path does not exist inside it"
                },
            )
        } else if hit(NETWORK) {
            (DenialKind::Network, "the sandbox has no network")
        } else if hit(FILESYSTEM) {
            (
                DenialKind::Filesystem,
                "the sandbox allows writes only inside the workspace (not `.git`) and /tmp",
            )
        } else if hit(RESOURCES) {
            (
                DenialKind::Resources,
                "the sandbox limits processes, memory and some system calls",
            )
        } else {
            continue;
        };
        let line = line.trim();
        let line: String = line.chars().take(200).collect();
        return Some(DenialHint {
            kind,
            message: format!(
                "this looks like a sandbox denial: {what} (`{line}`); ask the user to re-run it with more access if it is needed"
            ),
        });
    }
    None
}

/// The path `line` says is missing while it exists on the host (or its folder does)
/// and the sandbox's view hides it.
fn hidden_host_path<'a>(
    line: &'a str,
    hidden: &dyn Fn(&std::path::Path) -> bool,
) -> Option<&'a str> {
    let lower = line.to_ascii_lowercase();
    if !(lower.contains("no such file or directory") || lower.contains("nonexistent")) {
        return None;
    }
    line.split(|c: char| c.is_whitespace() || matches!(c, ':' | '\'' | '"' | '`'))
        .filter(|word| word.starts_with('/'))
        .find(|word| {
            let path = std::path::Path::new(word);
            hidden(path)
                && (path.exists()
                    || path
                        .parent()
                        .is_some_and(|dir| dir.components().count() > 2 && dir.is_dir()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no(_: &std::path::Path) -> bool {
        false
    }

    fn tmp(p: &std::path::Path) -> bool {
        p.starts_with("/tmp")
    }

    #[test]
    fn recognises_denials() {
        let h = detect(
            false,
            "curl: (6) Could not resolve host: example.com",
            "",
            &no,
        );
        assert_eq!(h.map(|h| h.kind), Some(DenialKind::Network));
        let h = detect(
            false,
            "touch: cannot touch '/etc/x': Permission denied",
            "",
            &no,
        );
        assert!(h.as_ref().is_some_and(|h| h.message.contains("/etc/x")));
        assert_eq!(h.map(|h| h.kind), Some(DenialKind::Filesystem));
        assert_eq!(
            detect(false, "error[E0308]: mismatched types", "", &no),
            None
        );
        assert_eq!(detect(true, "Permission denied", "", &no), None);
    }

    #[test]
    fn a_host_tmp_path_hidden_by_the_private_tmp_is_explained() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let line = format!(
            "/bin/sh: 1: cannot create {}/x: Directory nonexistent",
            dir.path().display()
        );
        let h = detect(false, &line, "", &tmp);
        assert_eq!(h.as_ref().map(|h| h.kind), Some(DenialKind::Filesystem));
        assert!(h.is_some_and(|h| h.message.contains("private /tmp")));
        // A folder that does not exist on the host either is an ordinary error.
        assert_eq!(
            detect(
                false,
                "sh: cannot create /tmp/no-such-dir-here/x: Directory nonexistent",
                "",
                &tmp
            ),
            None
        );
    }
}
