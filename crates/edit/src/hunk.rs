//! Applying one hunk to a file's current text in memory.

use crate::error::EditError;
use crate::lines::{Lines, indent_of, split_model_lines};
use crate::matcher::{Found, MatchLevel, Outcome, Query, find};
use crate::normalize::{fold_unicode, is_elision};
use crate::ops::{LineHunk, SubstringHunk};
use crate::report;

/// Where a hunk landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkReport {
    /// File as written.
    pub path: String,
    /// One-based hunk number within the whole edit.
    pub hunk: usize,
    /// How loosely it matched (`None` for pure insertions and exact substrings).
    pub level: Option<MatchLevel>,
    /// One-based first line of the replaced text in the file before the hunk.
    pub line: usize,
}

/// Identifies a hunk in messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub path: &'a str,
    pub hunk: usize,
}

impl Ctx<'_> {
    fn report(&self, level: Option<MatchLevel>, line: usize) -> HunkReport {
        HunkReport {
            path: self.path.to_owned(),
            hunk: self.hunk,
            level,
            line,
        }
    }

    fn no_match(&self, detail: String) -> EditError {
        EditError::NoMatch {
            path: self.path.to_owned(),
            hunk: self.hunk,
            detail,
        }
    }
}

/// The text after a hunk, the line cursor for the next sequential hunk, and the report.
pub(crate) struct Applied {
    pub text: String,
    pub cursor: usize,
    pub report: HunkReport,
}

const LINE_ADVICE: &str =
    "Include more surrounding lines so the text occurs once, or give a line hint.";

/// Applies a line hunk; sequential hunks search from `cursor` (a zero-based line).
pub(crate) fn apply_lines(
    text: &str,
    h: &LineHunk,
    cursor: usize,
    ctx: Ctx,
) -> Result<Applied, EditError> {
    let lines = Lines::new(text);
    let file = lines.contents();
    let mut start = if h.sequential {
        cursor.min(file.len())
    } else {
        0
    };
    let mut anchored = false;
    if let Some(anchor) = h.anchor.as_deref().filter(|a| !a.trim().is_empty()) {
        let want = fold_unicode(anchor.trim());
        let at = (start..file.len())
            .find(|&i| file[i].trim() == anchor.trim())
            .or_else(|| (start..file.len()).find(|&i| fold_unicode(file[i].trim()) == want))
            .or_else(|| (start..file.len()).find(|&i| file[i].contains(anchor.trim())));
        let Some(at) = at else {
            let detail = report::no_match(&file, &[anchor.to_owned()], "the `@@` line");
            return Err(ctx.no_match(detail));
        };
        start = at;
        anchored = true;
    }
    if h.old.is_empty() {
        // Pure insertion: after the anchor line, else at the end of the file.
        let at = if anchored { start + 1 } else { file.len() };
        let new_text = lines.replace(at..at, &h.new);
        return Ok(Applied {
            text: new_text,
            cursor: at + h.new.len(),
            report: ctx.report(None, at + 1),
        });
    }
    let query = Query {
        search: &h.old,
        region: start..file.len(),
        line_hint: h.line_hint,
        at_eof: h.at_eof,
        first_wins: anchored,
    };
    match find(&file, &query) {
        Outcome::Found(found) => {
            let new = replacement(&file, &h.old, &h.new, &found).map_err(|m| ctx.no_match(m))?;
            let text = lines.replace(found.range.clone(), &new);
            Ok(Applied {
                text,
                cursor: found.range.start + new.len(),
                report: ctx.report(Some(found.level), found.range.start + 1),
            })
        }
        Outcome::Ambiguous { level, starts } => Err(EditError::Ambiguous {
            path: ctx.path.to_owned(),
            hunk: ctx.hunk,
            lines: starts.iter().map(|s| s + 1).collect(),
            detail: report::ambiguous(
                &file,
                h.old.len(),
                level,
                &starts,
                "the text to replace",
                LINE_ADVICE,
            ),
        }),
        Outcome::NotFound => {
            if let Some(line) = already_applied(&file, &h.old, &h.new, start) {
                return Err(EditError::AlreadyApplied {
                    path: ctx.path.to_owned(),
                    hunk: ctx.hunk,
                    line,
                });
            }
            let what = if h.sequential && start > 0 {
                format!(
                    "the text to replace (searched from line {}, after the previous hunk or `@@` line)",
                    start + 1
                )
            } else {
                "the text to replace".to_owned()
            };
            Err(ctx.no_match(report::no_match(&file, &h.old, &what)))
        }
    }
}

/// The one-based line where `new` already sits, when `old` is gone.
fn already_applied(file: &[&str], old: &[String], new: &[String], start: usize) -> Option<usize> {
    if new.iter().all(|l| l.trim().is_empty()) || old == new {
        return None;
    }
    let query = Query {
        search: new,
        region: start..file.len(),
        line_hint: None,
        at_eof: false,
        first_wins: true,
    };
    match find(file, &query) {
        Outcome::Found(f) if f.level <= MatchLevel::UnicodeFolded => Some(f.range.start + 1),
        _ => None,
    }
}

/// The lines that replace a match: re-indented for loose levels, with the lines `...`
/// stood for kept in place.
fn replacement(
    file: &[&str],
    old: &[String],
    new: &[String],
    found: &Found,
) -> Result<Vec<String>, String> {
    let written = new;
    let new = if found.level >= MatchLevel::IndentOffset {
        reindent(file, old, new, found)
    } else {
        new.to_vec()
    };
    if found.gaps.is_empty() && found.level == MatchLevel::Elision {
        // Only leading or trailing `...` lines: they stand for nothing to keep.
        return Ok(new.into_iter().filter(|l| !is_elision(l)).collect());
    }
    if found.gaps.is_empty() {
        return Ok(keep_unchanged(file, old, written, new, found));
    }
    let markers = new.iter().filter(|l| is_elision(l)).count();
    if markers == 0 {
        return Ok(new);
    }
    // Segments of the replacement between its `...` lines; empty edge segments were
    // dropped from the search side, so drop them here too.
    let mut segments: Vec<&[String]> = new.split(|l| is_elision(l)).collect();
    while segments.first().is_some_and(|s| s.is_empty()) && segments.len() > found.gaps.len() + 1 {
        segments.remove(0);
    }
    while segments.last().is_some_and(|s| s.is_empty()) && segments.len() > found.gaps.len() + 1 {
        segments.pop();
    }
    if segments.len() != found.gaps.len() + 1 {
        return Err(format!(
            "the search text leaves out lines {} time(s) with `...` but the replacement does so {} time(s); use the same `...` lines in both, or none in the replacement",
            found.gaps.len(),
            markers
        ));
    }
    let mut out = Vec::new();
    for (i, seg) in segments.iter().enumerate() {
        out.extend(seg.iter().cloned());
        if let Some(gap) = found.gaps.get(i) {
            out.extend(file[gap.clone()].iter().map(|s| (*s).to_owned()));
        }
    }
    Ok(out)
}

/// Lines the hunk leaves unchanged (context, equal lines of a search/replace block) are
/// taken from the file as they are, so a loose match never rewrites them. `written` is
/// the replacement as the model wrote it, `new` the same lines re-indented.
fn keep_unchanged(
    file: &[&str],
    old: &[String],
    written: &[String],
    new: Vec<String>,
    found: &Found,
) -> Vec<String> {
    if found.level == MatchLevel::Exact || old.len() != found.range.len() {
        return new;
    }
    let mut out = Vec::with_capacity(new.len());
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, written) {
        let (tag, or, nr) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            out.extend(or.map(|i| file[found.range.start + i].to_owned()));
        } else {
            out.extend(new[nr].iter().cloned());
        }
    }
    out
}

/// Re-indents `new` by the difference between the first non-blank search line and the
/// file line it matched, converting between tabs and spaces when the two disagree.
fn reindent(file: &[&str], old: &[String], new: &[String], found: &Found) -> Vec<String> {
    let body: Vec<&String> = old.iter().skip_while(|l| is_elision(l)).collect();
    let Some(k) = body.iter().position(|l| !l.trim().is_empty()) else {
        return new.to_vec();
    };
    let Some(file_line) = file.get(found.range.start + k) else {
        return new.to_vec();
    };
    let si = indent_of(body[k]);
    let fi = indent_of(file_line);
    if si == fi {
        return new.to_vec();
    }
    let file_tabs = fi.contains('\t');
    let unit = space_unit(old);
    let convert = |extra: &str| -> String {
        if file_tabs && !extra.contains('\t') {
            let tabs = extra.len() / unit;
            let rest = extra.len() % unit;
            format!("{}{}", "\t".repeat(tabs), " ".repeat(rest))
        } else if !file_tabs && !fi.is_empty() && extra.contains('\t') {
            extra.replace('\t', &" ".repeat(unit))
        } else {
            extra.to_owned()
        }
    };
    new.iter()
        .map(|l| {
            if l.trim().is_empty() || is_elision(l) {
                return if is_elision(l) {
                    l.clone()
                } else {
                    String::new()
                };
            }
            let ind = indent_of(l);
            let rest = &l[ind.len()..];
            match ind.strip_prefix(si) {
                Some(extra) => format!("{fi}{}{rest}", convert(extra)),
                None => format!("{}{rest}", convert(ind)),
            }
        })
        .collect()
}

/// The smallest positive difference of space indentation in `lines`, 4 when unknown.
fn space_unit(lines: &[String]) -> usize {
    let mut widths: Vec<usize> = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent_of(l).len())
        .collect();
    widths.sort_unstable();
    widths.dedup();
    widths
        .windows(2)
        .map(|w| w[1] - w[0])
        .chain(widths.first().copied())
        .filter(|&d| d > 0 && d <= 8)
        .min()
        .unwrap_or(4)
}

/// Applies a `str_replace`: an exact substring first, then line matching.
pub(crate) fn apply_substring(
    text: &str,
    h: &SubstringHunk,
    ctx: Ctx,
) -> Result<Applied, EditError> {
    let lines = Lines::new(text);
    if h.old.is_empty() {
        if text.is_empty() {
            return Ok(Applied {
                text: h.new.clone(),
                cursor: 0,
                report: ctx.report(None, 1),
            });
        }
        return Err(EditError::Args(format!(
            "{}: old_string is empty but the file is not; to add text use insert, or give the text to replace",
            ctx.path
        )));
    }
    let (old, new) = if lines.eol() == "\r\n" && !h.old.contains("\r\n") {
        (h.old.replace('\n', "\r\n"), h.new.replace('\n', "\r\n"))
    } else {
        (h.old.clone(), h.new.clone())
    };
    let hits: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
    let chosen = match hits.len() {
        0 => None,
        1 => Some(hits.clone()),
        _ if h.replace_all => Some(hits.clone()),
        _ => {
            let line_of = |b: usize| lines.line_of_byte(b);
            let pick = h.line_hint.and_then(|hint| {
                let mut by: Vec<(usize, usize)> = hits
                    .iter()
                    .map(|&b| (line_of(b).abs_diff(hint), b))
                    .collect();
                by.sort_unstable();
                (by[0].0 < by[1].0).then(|| vec![by[0].1])
            });
            if pick.is_none() {
                let file = lines.contents();
                let starts: Vec<usize> = hits.iter().map(|&b| line_of(b) - 1).collect();
                let n_lines = old.lines().count().max(1);
                return Err(EditError::Ambiguous {
                    path: ctx.path.to_owned(),
                    hunk: ctx.hunk,
                    lines: starts.iter().map(|s| s + 1).collect(),
                    detail: report::ambiguous(
                        &file,
                        n_lines,
                        MatchLevel::Exact,
                        &starts,
                        "old_string",
                        "Include more surrounding text in old_string so it occurs once, or set replace_all to change every occurrence.",
                    ),
                });
            }
            pick
        }
    };
    if let Some(at) = chosen {
        let mut out = String::with_capacity(text.len() + new.len());
        let mut last = 0;
        for &b in &at {
            out.push_str(&text[last..b]);
            out.push_str(&new);
            last = b + old.len();
        }
        out.push_str(&text[last..]);
        return Ok(Applied {
            text: out,
            cursor: 0,
            report: ctx.report(Some(MatchLevel::Exact), lines.line_of_byte(at[0])),
        });
    }
    // No exact occurrence: read old_string as whole lines and match loosely.
    let as_lines = LineHunk {
        old: split_model_lines(&h.old),
        new: split_model_lines(&h.new),
        line_hint: h.line_hint,
        ..LineHunk::default()
    };
    if as_lines.old.iter().all(|l| l.trim().is_empty()) {
        return Err(ctx.no_match(report::no_match(
            &lines.contents(),
            &as_lines.old,
            "old_string",
        )));
    }
    match apply_lines(text, &as_lines, 0, ctx) {
        Err(EditError::NoMatch { path, hunk, .. }) => {
            // Only a distinctive replacement counts: a short one is found anywhere.
            if new.trim().chars().count() >= 6 && text.contains(new.as_str()) {
                return Err(EditError::AlreadyApplied {
                    path,
                    hunk,
                    line: lines.line_of_byte(text.find(new.as_str()).unwrap_or(0)),
                });
            }
            Err(EditError::NoMatch {
                path,
                hunk,
                detail: report::no_match(&lines.contents(), &as_lines.old, "old_string"),
            })
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lh(old: &[&str], new: &[&str]) -> LineHunk {
        LineHunk {
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
            ..LineHunk::default()
        }
    }

    const CTX: Ctx = Ctx {
        path: "a.rs",
        hunk: 1,
    };

    #[test]
    fn reindents_for_offset() {
        let text = "fn a() {\n        x();\n        y();\n}\n";
        let h = lh(&["x();", "y();"], &["x();", "if c {", "    z();", "}"]);
        let a = apply_lines(text, &h, 0, CTX).unwrap();
        assert_eq!(
            a.text,
            "fn a() {\n        x();\n        if c {\n            z();\n        }\n}\n"
        );
        assert_eq!(a.report.level, Some(MatchLevel::IndentOffset));
    }

    #[test]
    fn tabs_from_spaces() {
        let text = "fn a() {\n\tx();\n\tif b {\n\t\ty();\n\t}\n}\n";
        let h = lh(
            &["    x();", "    if b {"],
            &["    x();", "    if b {", "        w();"],
        );
        let a = apply_lines(text, &h, 0, CTX).unwrap();
        assert_eq!(
            a.text,
            "fn a() {\n\tx();\n\tif b {\n\t\tw();\n\t\ty();\n\t}\n}\n"
        );
    }

    #[test]
    fn elision_keeps_middle() {
        let text = "fn a() {\n    one();\n    two();\n}\n";
        let h = lh(&["fn a() {", "...", "}"], &["fn b() {", "...", "}"]);
        let a = apply_lines(text, &h, 0, CTX).unwrap();
        assert_eq!(a.text, "fn b() {\n    one();\n    two();\n}\n");
    }

    #[test]
    fn already_applied() {
        let text = "a\nB\nc\n";
        let err = apply_lines(text, &lh(&["b"], &["B"]), 0, CTX)
            .err()
            .unwrap();
        assert!(
            matches!(err, EditError::AlreadyApplied { line: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn substring_ambiguous_then_hint() {
        let text = "x = 1\ny = 1\n";
        let h = SubstringHunk {
            old: "1".into(),
            new: "2".into(),
            ..Default::default()
        };
        let err = apply_substring(text, &h, CTX).err().unwrap();
        assert!(
            matches!(&err, EditError::Ambiguous { lines, .. } if lines == &[1, 2]),
            "{err}"
        );
        let h = SubstringHunk {
            line_hint: Some(2),
            ..h
        };
        assert_eq!(
            apply_substring(text, &h, CTX).unwrap().text,
            "x = 1\ny = 2\n"
        );
    }

    #[test]
    fn substring_crlf() {
        let text = "a\r\nb\r\nc\r\n";
        let h = SubstringHunk {
            old: "a\nb".into(),
            new: "a\nB".into(),
            ..Default::default()
        };
        assert_eq!(
            apply_substring(text, &h, CTX).unwrap().text,
            "a\r\nB\r\nc\r\n"
        );
    }
}
