//! Keep Rate: the share of the lines an agent edit added that are still in the file
//! some time later (the user kept them, or rewrote them). Lines are matched by content,
//! as a multiset, ignoring surrounding whitespace and blank lines: an added line that
//! the user moved still counts, one the user changed does not.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::KeepRecord;

/// The non-blank lines `new` has that `old` has not (as a multiset), trimmed.
pub fn added_lines(old: &str, new: &str) -> Vec<String> {
    let mut before = counts(old);
    let mut out = Vec::new();
    for line in new.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match before.get_mut(line) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(line.to_owned()),
        }
    }
    out
}

/// How many of `lines` `text` still holds (each line of `text` counts once).
pub fn kept(lines: &[String], text: &str) -> u32 {
    let mut now = counts(text);
    let mut n = 0;
    for line in lines {
        if let Some(c) = now.get_mut(line.as_str())
            && *c > 0
        {
            *c -= 1;
            n += 1;
        }
    }
    n
}

fn counts(text: &str) -> BTreeMap<&str, u32> {
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *out.entry(line).or_default() += 1;
    }
    out
}

/// Keep Rate per model and delay: lines kept over lines added.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeepSummary {
    /// The model.
    pub model: String,
    /// Seconds after landing.
    pub after_secs: u64,
    /// Lines added by the edits looked at.
    pub lines: u64,
    /// Of which still there.
    pub kept: u64,
    /// `kept / lines`.
    pub rate: f64,
}

/// The looks summed per model and delay.
pub fn summarize_keeps(keeps: &[KeepRecord]) -> Vec<KeepSummary> {
    let mut sums: BTreeMap<(&str, u64), (u64, u64)> = BTreeMap::new();
    for k in keeps {
        let s = sums.entry((k.model.as_str(), k.after_secs)).or_default();
        s.0 += u64::from(k.lines);
        s.1 += u64::from(k.kept);
    }
    sums.into_iter()
        .map(|((model, after_secs), (lines, kept))| KeepSummary {
            model: model.to_owned(),
            after_secs,
            lines,
            kept,
            rate: if lines == 0 {
                0.0
            } else {
                kept as f64 / lines as f64
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_are_followed_by_content() {
        let old = "fn f() {\n    todo!()\n}\n";
        let new = "fn f() {\n    let x = 1;\n    x + 1\n}\n";
        let added = added_lines(old, new);
        assert_eq!(added, ["let x = 1;", "x + 1"]);
        // Kept as written, moved and reindented: both count.
        assert_eq!(
            kept(&added, "fn f() {\n        x + 1\n    let x = 1;\n}\n"),
            2
        );
        // The user rewrote one line.
        assert_eq!(kept(&added, "fn f() {\n    let x = 2;\n    x + 1\n}\n"), 1);
        // A line the file had before is not the agent's.
        assert!(added_lines("a\nb\n", "b\na\n").is_empty());
        // Duplicates count once each.
        let twice = added_lines("", "x\nx\n");
        assert_eq!(kept(&twice, "x\n"), 1);
    }

    #[test]
    fn looks_sum_up_per_model_and_delay() {
        let look = |model: &str, after: u64, lines: u32, kept: u32| KeepRecord {
            model: model.into(),
            after_secs: after,
            lines,
            kept,
            ..KeepRecord::default()
        };
        let s = summarize_keeps(&[
            look("a", 30, 4, 4),
            look("a", 30, 4, 2),
            look("a", 300, 8, 4),
        ]);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].after_secs, s[0].lines, s[0].kept, s[0].rate),
            (30, 8, 6, 0.75)
        );
        assert_eq!(s[1].rate, 0.5);
    }
}
