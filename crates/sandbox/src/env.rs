//! The command's environment: small, predictable, and without secrets.

/// Names (upper-cased) containing any of these are never passed through.
const SECRET_MARKERS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "SESSION",
    "COOKIE",
    "PRIVATE",
];

/// True for a variable name that looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// The base environment: fixed values, then the passthrough names that are set in
/// `host` and are not secret-looking.
pub(crate) fn build(
    host: impl Fn(&str) -> Option<String>,
    passthrough: &[String],
    home: &str,
) -> Vec<(String, String)> {
    let path = host("PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_string());
    let mut env = vec![
        ("PATH".to_string(), path),
        ("HOME".to_string(), home.to_string()),
        ("TMPDIR".to_string(), "/tmp".to_string()),
        // The home directory is read-only inside; build caches (Go's, pip's, …) that
        // default to ~/.cache go to the run's own /tmp instead of failing.
        ("XDG_CACHE_HOME".to_string(), "/tmp/.cache".to_string()),
        (
            "LANG".to_string(),
            host("LANG").unwrap_or_else(|| "C.UTF-8".to_string()),
        ),
        ("TERM".to_string(), "dumb".to_string()),
        ("NO_COLOR".to_string(), "1".to_string()),
        ("CI".to_string(), "1".to_string()),
        ("AGENTLS_SANDBOX".to_string(), "1".to_string()),
    ];
    for name in ["USER", "LOGNAME", "SHELL", "TZ"] {
        if let Some(v) = host(name) {
            env.push((name.to_string(), v));
        }
    }
    for name in passthrough {
        if looks_secret(name) || env.iter().any(|(k, _)| k == name) {
            continue;
        }
        if let Some(v) = host(name) {
            env.push((name.clone(), v));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_passed_through() {
        let host = |k: &str| match k {
            "PATH" => Some("/bin".to_string()),
            "OPENAI_API_KEY" | "GITHUB_TOKEN" | "CARGO_HOME" => Some("x".to_string()),
            _ => None,
        };
        let pass = vec![
            "OPENAI_API_KEY".to_string(),
            "GITHUB_TOKEN".to_string(),
            "CARGO_HOME".to_string(),
        ];
        let env = build(host, &pass, "/home/u");
        assert!(env.iter().any(|(k, _)| k == "CARGO_HOME"));
        assert!(
            !env.iter()
                .any(|(k, _)| k.contains("KEY") || k.contains("TOKEN"))
        );
        assert!(env.contains(&("PATH".to_string(), "/bin".to_string())));
        assert!(looks_secret("aws_secret_access_key"));
        assert!(!looks_secret("RUSTUP_HOME"));
    }
}
