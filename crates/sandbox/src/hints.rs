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

/// Looks at a failed command's stderr (and stdout) for the marks of a denial.
pub(crate) fn detect(success: bool, stderr: &str, stdout: &str) -> Option<DenialHint> {
    if success {
        return None;
    }
    for line in stderr.lines().chain(stdout.lines()) {
        let lower = line.to_ascii_lowercase();
        let hit = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
        let (kind, what) = if hides_host_tmp_path(line) {
            (
                DenialKind::Filesystem,
                "the sandbox has a private /tmp, so paths under the host's /tmp (outside the workspace) do not exist inside it",
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

/// Whether `line` complains that a path under /tmp is missing while its folder exists on
/// the host: the sandbox's private /tmp hid it.
fn hides_host_tmp_path(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    if !(lower.contains("no such file or directory") || lower.contains("nonexistent")) {
        return false;
    }
    line.split(|c: char| c.is_whitespace() || matches!(c, ':' | '\'' | '"' | '`'))
        .filter(|word| word.starts_with("/tmp/"))
        .any(|path| {
            std::path::Path::new(path)
                .parent()
                .is_some_and(|dir| dir != std::path::Path::new("/tmp") && dir.is_dir())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_denials() {
        let h = detect(false, "curl: (6) Could not resolve host: example.com", "");
        assert_eq!(h.map(|h| h.kind), Some(DenialKind::Network));
        let h = detect(false, "touch: cannot touch '/etc/x': Permission denied", "");
        assert!(h.as_ref().is_some_and(|h| h.message.contains("/etc/x")));
        assert_eq!(h.map(|h| h.kind), Some(DenialKind::Filesystem));
        assert_eq!(detect(false, "error[E0308]: mismatched types", ""), None);
        assert_eq!(detect(true, "Permission denied", ""), None);
    }

    #[test]
    fn a_host_tmp_path_hidden_by_the_private_tmp_is_explained() {
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let line = format!(
            "/bin/sh: 1: cannot create {}/x: Directory nonexistent",
            dir.path().display()
        );
        let h = detect(false, &line, "");
        assert_eq!(h.as_ref().map(|h| h.kind), Some(DenialKind::Filesystem));
        assert!(h.is_some_and(|h| h.message.contains("private /tmp")));
        // A folder that does not exist on the host either is an ordinary error.
        assert_eq!(
            detect(
                false,
                "sh: cannot create /tmp/no-such-dir-here/x: Directory nonexistent",
                ""
            ),
            None
        );
    }
}
