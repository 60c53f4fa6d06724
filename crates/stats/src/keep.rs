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

/// Keep Rate per model (or per tool) and look: lines kept over lines added.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeepSummary {
    /// The model, in [`by_model`]'s rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tool, in [`by_tool`]'s rows (`unknown` for looks recorded before tools were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Seconds after landing; `None` for the looks at session end.
    pub after_secs: Option<u64>,
    /// The looks taken when the session ended, however long after landing.
    pub at_end: bool,
    /// Lines added by the edits looked at.
    pub lines: u64,
    /// Of which still there.
    pub kept: u64,
    /// `kept / lines`.
    pub rate: f64,
}

impl KeepSummary {
    /// `after 30s`, `after 5m`, `at session end`.
    pub fn when(&self) -> String {
        match self.after_secs {
            Some(s) => format!("after {}", span(s)),
            None => "at session end".to_owned(),
        }
    }

    /// `after 30s 75% (3/4 lines)`.
    pub fn line(&self) -> String {
        format!(
            "{} {:.0}% ({}/{} lines)",
            self.when(),
            self.rate * 100.0,
            self.kept,
            self.lines
        )
    }
}

/// The looks summed per model and delay, the looks at session end last.
pub fn by_model(keeps: &[KeepRecord]) -> Vec<KeepSummary> {
    summarize(keeps, |k| k.model.clone())
        .into_iter()
        .map(|(model, s)| KeepSummary {
            model: Some(model),
            ..s
        })
        .collect()
}

/// The looks summed per tool and delay, the looks at session end last.
pub fn by_tool(keeps: &[KeepRecord]) -> Vec<KeepSummary> {
    summarize(keeps, |k| {
        if k.tool.is_empty() {
            "unknown".to_owned()
        } else {
            k.tool.clone()
        }
    })
    .into_iter()
    .map(|(tool, s)| KeepSummary {
        tool: Some(tool),
        ..s
    })
    .collect()
}

/// `30s`, `5m`, `1h`.
fn span(secs: u64) -> String {
    match secs {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn summarize(
    keeps: &[KeepRecord],
    group: impl Fn(&KeepRecord) -> String,
) -> Vec<(String, KeepSummary)> {
    // Keyed (group, at end, delay): the timed looks in order, then the one at the end.
    let mut sums: BTreeMap<(String, bool, u64), (u64, u64)> = BTreeMap::new();
    for k in keeps {
        let after = if k.at_end { 0 } else { k.after_secs };
        let s = sums.entry((group(k), k.at_end, after)).or_default();
        s.0 += u64::from(k.lines);
        s.1 += u64::from(k.kept);
    }
    sums.into_iter()
        .map(|((key, at_end, after), (lines, kept))| {
            let s = KeepSummary {
                model: None,
                tool: None,
                after_secs: (!at_end).then_some(after),
                at_end,
                lines,
                kept,
                rate: if lines == 0 {
                    0.0
                } else {
                    kept as f64 / lines as f64
                },
            };
            (key, s)
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
    fn looks_sum_up_per_model_and_per_tool_and_delay_with_the_end_last() {
        let look =
            |model: &str, tool: &str, after: u64, at_end: bool, lines: u32, kept: u32| KeepRecord {
                model: model.into(),
                tool: tool.into(),
                after_secs: after,
                at_end,
                lines,
                kept,
                ..KeepRecord::default()
            };
        let looks = [
            look("a", "apply_patch", 30, false, 4, 4),
            look("a", "str_replace", 30, false, 4, 2),
            look("a", "str_replace", 300, false, 8, 4),
            // Two session ends, minutes apart: one row.
            look("a", "str_replace", 100, true, 4, 1),
            look("a", "", 900, true, 4, 3),
        ];
        let m = by_model(&looks);
        let rows: Vec<(Option<u64>, bool, u64, u64)> = m
            .iter()
            .map(|s| (s.after_secs, s.at_end, s.lines, s.kept))
            .collect();
        assert_eq!(
            rows,
            [
                (Some(30), false, 8, 6),
                (Some(300), false, 8, 4),
                (None, true, 8, 4)
            ]
        );
        assert_eq!(m[0].rate, 0.75);
        assert_eq!(m[2].when(), "at session end");
        assert_eq!(m[1].when(), "after 5m");
        let t = by_tool(&looks);
        let rows: Vec<(&str, Option<u64>, u64)> = t
            .iter()
            .map(|s| (s.tool.as_deref().unwrap(), s.after_secs, s.kept))
            .collect();
        assert_eq!(
            rows,
            [
                ("apply_patch", Some(30), 4),
                ("str_replace", Some(30), 2),
                ("str_replace", Some(300), 4),
                ("str_replace", None, 1),
                ("unknown", None, 3)
            ]
        );
        let json = serde_json::to_value(&t[0]).unwrap();
        assert!(json.get("model").is_none(), "{json}");
        assert_eq!(json["tool"], "apply_patch");
    }
}
