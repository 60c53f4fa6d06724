//! API keys that never print.

use std::fmt;

/// An API key. `Debug` and `Display` print `[redacted]`; the only way to the value is
/// [`Secret::expose`], used when building the request header.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The key itself, for the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every occurrence of the key (and of its long prefixes, which some
    /// providers echo as `sk-abc…xyz`) in `text` by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let key = self.0.as_str();
        if key.len() < 4 {
            return text.to_owned();
        }
        let mut out = text.replace(key, "[redacted]");
        // Providers echo partial keys ("sk-proj-abcd****wxyz"); hide any 8+ char
        // prefix or suffix of the key as well.
        if key.len() >= 12 {
            for len in (8..key.len()).rev() {
                if key.is_char_boundary(len) && out.contains(&key[..len]) {
                    out = out.replace(&key[..len], "[redacted]");
                }
                let start = key.len() - len;
                if key.is_char_boundary(start) && out.contains(&key[start..]) {
                    out = out.replace(&key[start..], "[redacted]");
                }
            }
        }
        out
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_key() {
        let s = Secret::new("sk-live-0123456789abcdef");
        assert!(!format!("{s:?} {s}").contains("0123"));
    }

    #[test]
    fn redact_hides_whole_and_partial_echoes() {
        let s = Secret::new("sk-live-0123456789abcdef");
        let msg = "Incorrect API key provided: sk-live-0123456789abcdef. Also sk-live-01****cdef and ...456789abcdef";
        let r = s.redact(msg);
        assert!(!r.contains("0123456789"), "{r}");
        assert!(!r.contains("456789abcdef"), "{r}");
        assert!(r.starts_with("Incorrect API key provided: [redacted]"));
    }
}
