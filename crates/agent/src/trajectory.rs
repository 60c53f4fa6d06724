//! The session's log: one JSON object per line (requests, responses, tool calls and
//! results, timings, tokens, error classes), secrets redacted before anything is
//! written. Each line is flushed as it is written, so a crash loses nothing before it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Value, json};

/// Where trajectories go by default: `<user data dir>/agentls/trajectories`.
pub fn default_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("agentls").join("trajectories"))
}

/// A JSONL trajectory being written.
#[derive(Debug)]
pub struct Trajectory {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
    start: Instant,
    secrets: Vec<String>,
}

impl Trajectory {
    /// Creates `<dir>/<session>.jsonl`. `secrets` are literal values (API keys) to
    /// redact wherever they appear, on top of the key-shaped tokens always redacted.
    pub fn create(dir: &Path, session: &str, secrets: Vec<String>) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{session}.jsonl"));
        let file = File::create(&path)?;
        Ok(Self {
            path,
            out: Mutex::new(BufWriter::new(file)),
            start: Instant::now(),
            secrets: secrets.into_iter().filter(|s| s.len() >= 8).collect(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `{"t_ms": …, "kind": kind, …fields}`. Failures are logged, not raised:
    /// losing the log must not stop the session.
    pub fn record(&self, kind: &str, fields: Value) {
        let mut line = json!({
            "t_ms": (self.start.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
            "kind": kind,
        });
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
            // A field of that name must not hide what the line is (guards once wrote
            // their own `kind`, and the lines read `"kind": "runaway"`).
            line.insert("kind".to_owned(), Value::String(kind.to_owned()));
        }
        redact_value(&mut line, &self.secrets);
        let mut out = match self.out.lock() {
            Ok(g) => g,
            Err(e) => e.into_inner(),
        };
        let written = serde_json::to_writer(&mut *out, &line)
            .map_err(std::io::Error::other)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            tracing::warn!(path = %self.path.display(), "trajectory write failed: {e}");
        }
    }
}

fn redact_value(v: &mut Value, secrets: &[String]) {
    match v {
        Value::String(s) => {
            if let Some(r) = redact(s, secrets) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact_value(i, secrets)),
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                let key = k.to_ascii_lowercase();
                let sensitive = ["api_key", "apikey", "authorization", "password", "secret"]
                    .iter()
                    .any(|s| key.contains(s));
                if sensitive && val.is_string() {
                    *val = Value::String("[redacted]".into());
                } else {
                    redact_value(val, secrets);
                }
            }
        }
        _ => {}
    }
}

/// Prefixes of tokens that are API keys by their shape.
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
];

/// `text` with secrets replaced by `[redacted]`, or `None` when there were none: the
/// literal `secrets`, key-shaped tokens, and the value after `Bearer `.
pub fn redact(text: &str, secrets: &[String]) -> Option<String> {
    let mut out = text.to_owned();
    let mut changed = false;
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "[redacted]");
            changed = true;
        }
    }
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    let mut prev_bearer = false;
    while !rest.is_empty() {
        let tok_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        if tok_len == 0 {
            let c = rest.chars().next().map_or(1, char::len_utf8);
            result.push_str(&rest[..c]);
            if !rest[..c].trim().is_empty() {
                prev_bearer = false;
            }
            rest = &rest[c..];
            continue;
        }
        let tok = &rest[..tok_len];
        let keyish = tok.len() >= 16 && KEY_PREFIXES.iter().any(|p| tok.starts_with(p));
        if keyish || (prev_bearer && tok.len() >= 8) {
            result.push_str("[redacted]");
            changed = true;
        } else {
            result.push_str(tok);
        }
        prev_bearer = tok.eq_ignore_ascii_case("bearer");
        rest = &rest[tok_len..];
    }
    changed.then_some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_keeps_its_kind_whatever_its_fields() {
        let dir = tempfile::tempdir().unwrap();
        let t = Trajectory::create(dir.path(), "s1", Vec::new()).unwrap();
        t.record(
            "guard",
            json!({"guard": "runaway", "kind": "runaway", "step": 2}),
        );
        let line: Value =
            serde_json::from_str(std::fs::read_to_string(t.path()).unwrap().trim()).unwrap();
        assert_eq!(line["kind"], "guard");
        assert_eq!(line["guard"], "runaway");
    }

    #[test]
    fn redacts_keys_by_shape_by_value_and_by_field_name() {
        let secrets = vec!["hunter2-very-secret".to_owned()];
        assert_eq!(
            redact("key sk-abcdefghijklmnop1234 here", &secrets).as_deref(),
            Some("key [redacted] here")
        );
        assert_eq!(
            redact("Authorization: Bearer abcdefgh12345", &secrets).as_deref(),
            Some("Authorization: Bearer [redacted]")
        );
        assert_eq!(
            redact("pw=hunter2-very-secret;", &secrets).as_deref(),
            Some("pw=[redacted];")
        );
        assert_eq!(redact("sk-short and plain words", &secrets), None);

        let dir = tempfile::tempdir().unwrap();
        let t = Trajectory::create(dir.path(), "s1", secrets).unwrap();
        t.record(
            "request",
            json!({"api_key": "plain", "text": "uses hunter2-very-secret", "n": 3}),
        );
        let text = std::fs::read_to_string(t.path()).unwrap();
        assert!(
            !text.contains("plain") && !text.contains("hunter2"),
            "{text}"
        );
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["kind"], "request");
        assert_eq!(line["n"], 3);
    }
}
