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
        start = find_anchor(&file, start, anchor, h, ctx)?;
        anchored = true;
    }
    if h.old.is_empty() {
        if h.new.is_empty() {
            return Err(no_op(ctx));
        }
        // Pure insertion: after the anchor line, else at the end of the file. Appending
        // at the end does not move the cursor: later hunks are still searched from it.
        let (at, cursor) = if anchored {
            (start + 1, start + 1 + h.new.len())
        } else {
            (file.len(), start)
        };
        let new_text = lines.replace(at..at, &h.new);
        return Ok(Applied {
            text: new_text,
            cursor,
            report: ctx.report(None, at + 1),
        });
    }
    if h.old == h.new {
        return Err(no_op(ctx));
    }
    let first = find_lines(&lines, &file, h, start, anchored, ctx);
    match (&first, trimmed_blank_edges(h)) {
        // Models often open (or close) a SEARCH block with a blank line the file does
        // not have there: retry without the blank edges, still unique. A failing retry
        // reports the hunk as the model wrote it.
        (Err(EditError::NoMatch { .. }), Some(t)) if t.old != t.new => {
            match find_lines(&lines, &file, &t, start, anchored, ctx) {
                Err(EditError::NoMatch { .. }) => first,
                other => other,
            }
        }
        _ => first,
    }
}

/// The error for an edit that would change nothing.
fn no_op(ctx: Ctx) -> EditError {
    EditError::Args(format!(
        "{}: hunk {}: the edit changes nothing: the old and new text are equal (or there is no text to insert); give the text as it should be after the edit",
        ctx.path, ctx.hunk
    ))
}

/// `h` without the blank lines it starts or ends its search text with (and the same
/// blank lines of its replacement), when it has any and something else is left.
fn trimmed_blank_edges(h: &LineHunk) -> Option<LineHunk> {
    let blank = |l: &String| l.trim().is_empty();
    let lead = h.old.iter().take_while(|l| blank(l)).count();
    if lead == h.old.len() {
        return None;
    }
    let trail = h.old.iter().rev().take_while(|l| blank(l)).count();
    if lead == 0 && trail == 0 {
        return None;
    }
    let new_lead = h.new.iter().take_while(|l| blank(l)).count().min(lead);
    let new_trail = h
        .new
        .iter()
        .rev()
        .take_while(|l| blank(l))
        .count()
        .min(trail)
        .min(h.new.len() - new_lead);
    Some(LineHunk {
        old: h.old[lead..h.old.len() - trail].to_vec(),
        new: h.new[new_lead..h.new.len() - new_trail].to_vec(),
        ..h.clone()
    })
}

/// Whether `line` holds `anchor` as a whole name: not preceded or followed by a word
/// character where the anchor itself starts or ends with one (`def foo` is not in
/// `def foo_bar():`, `class Foo` not in `class FooBase:`).
fn holds_anchor(line: &str, anchor: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let first_word = anchor.chars().next().is_some_and(word);
    let last_word = anchor.chars().next_back().is_some_and(word);
    line.match_indices(anchor).any(|(i, m)| {
        let before_ok = !first_word || !line[..i].chars().next_back().is_some_and(word);
        let after_ok = !last_word || !line[i + m.len()..].chars().next().is_some_and(word);
        before_ok && after_ok
    })
}

/// The zero-based line of a hunk's `@@` anchor at or after `start`. Levels from strict to
/// loose (the whole trimmed line, the same with Unicode folded, the anchor as a whole name
/// inside the line); the first level with candidates decides. Several candidates are
/// narrowed to those after which the hunk's text follows before the next candidate;
/// still several: refused with every candidate line.
fn find_anchor(
    file: &[&str],
    start: usize,
    anchor: &str,
    h: &LineHunk,
    ctx: Ctx,
) -> Result<usize, EditError> {
    let a = anchor.trim();
    let want = fold_unicode(a);
    let levels: [&dyn Fn(&str) -> bool; 3] = [
        &|l: &str| l.trim() == a,
        &|l: &str| fold_unicode(l.trim()) == want,
        &|l: &str| holds_anchor(l, a),
    ];
    for matches in levels {
        let cands: Vec<usize> = (start..file.len()).filter(|&i| matches(file[i])).collect();
        match cands.len() {
            0 => continue,
            1 => return Ok(cands[0]),
            _ => {}
        }
        // The hunk's text must follow the anchor before the next candidate.
        let fits: Vec<usize> = if h.old.is_empty() {
            Vec::new()
        } else {
            cands
                .iter()
                .enumerate()
                .filter(|&(k, &c)| {
                    let end = cands.get(k + 1).copied().unwrap_or(file.len());
                    let q = Query {
                        search: &h.old,
                        region: c..end,
                        line_hint: None,
                        at_eof: h.at_eof,
                        first_wins: true,
                    };
                    matches!(find(file, &q), Outcome::Found(_))
                })
                .map(|(_, &c)| c)
                .collect()
        };
        if let [one] = fits[..] {
            return Ok(one);
        }
        if let Some(hint) = h.line_hint {
            let pool = if fits.is_empty() { &cands } else { &fits };
            let mut by: Vec<(usize, usize)> =
                pool.iter().map(|&c| ((c + 1).abs_diff(hint), c)).collect();
            by.sort_unstable();
            if by.len() == 1 || by[0].0 < by[1].0 {
                return Ok(by[0].1);
            }
        }
        let starts = if fits.is_empty() { cands } else { fits };
        return Err(EditError::Ambiguous {
            path: ctx.path.to_owned(),
            hunk: ctx.hunk,
            lines: starts.iter().map(|s| s + 1).collect(),
            detail: report::ambiguous(
                file,
                1,
                MatchLevel::Exact,
                &starts,
                "the `@@` line",
                "Use an `@@` line that occurs once (the full signature), or more context lines.",
            ),
        });
    }
    let detail = report::no_match(file, &[anchor.to_owned()], "the `@@` line");
    Err(ctx.no_match(detail))
}

/// Finds and replaces a hunk's lines (not a pure insertion) from `start`.
fn find_lines(
    lines: &Lines,
    file: &[&str],
    h: &LineHunk,
    start: usize,
    anchored: bool,
    ctx: Ctx,
) -> Result<Applied, EditError> {
    let query = Query {
        search: &h.old,
        region: start..file.len(),
        line_hint: h.line_hint,
        at_eof: h.at_eof,
        first_wins: anchored,
    };
    match find(file, &query) {
        Outcome::Found(found) => {
            let new = replacement(file, &h.old, &h.new, &found).map_err(|m| ctx.no_match(m))?;
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
                file,
                h.old.len(),
                level,
                &starts,
                "the text to replace",
                LINE_ADVICE,
            ),
        }),
        Outcome::NotFound => {
            if let Some(line) = already_applied(file, &h.old, &h.new, start) {
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
            Err(ctx.no_match(report::no_match(file, &h.old, &what)))
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
    if h.old == h.new {
        return Err(no_op(ctx));
    }
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

    #[test]
    fn anchor_is_a_whole_name() {
        assert!(holds_anchor("def foo(x):", "def foo"));
        assert!(holds_anchor("    def foo():", "def foo"));
        assert!(!holds_anchor("def foo_bar():", "def foo"));
        assert!(!holds_anchor("class FooBase:", "class Foo"));
        assert!(!holds_anchor("subclass Foo:", "class Foo"));
        assert!(holds_anchor("impl Foo {", "impl Foo {"));
    }

    #[test]
    fn ambiguous_anchor_names_every_candidate() {
        let text = "def foo(a):\n    return 1\n\ndef foo(b):\n    return 1\n";
        let h = LineHunk {
            anchor: Some("def foo".into()),
            ..lh(&["    return 1"], &["    return 2"])
        };
        let err = apply_lines(text, &h, 0, CTX).err().unwrap();
        assert!(
            matches!(&err, EditError::Ambiguous { lines, .. } if lines == &[1, 4]),
            "{err}"
        );
        // The hunk's text after only one candidate decides.
        let text = "def foo(a):\n    return 1\n\ndef foo(b):\n    return 3\n";
        let h = LineHunk {
            anchor: Some("def foo".into()),
            ..lh(&["    return 3"], &["    return 4"])
        };
        let a = apply_lines(text, &h, 0, CTX).unwrap();
        assert_eq!(a.report.line, 5);
    }

    #[test]
    fn appending_keeps_the_cursor() {
        let h = LineHunk {
            sequential: true,
            ..lh(&[], &["z"])
        };
        let a = apply_lines("a\nb\n", &h, 1, CTX).unwrap();
        assert_eq!((a.text.as_str(), a.cursor), ("a\nb\nz\n", 1));
    }

    #[test]
    fn no_op_is_refused() {
        let err = apply_lines("a\n", &lh(&["a"], &["a"]), 0, CTX)
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("the edit changes nothing"),
            "{err}"
        );
        let h = SubstringHunk {
            old: "a".into(),
            new: "a".into(),
            ..Default::default()
        };
        assert!(matches!(
            apply_substring("a\n", &h, CTX).err().unwrap(),
            EditError::Args(_)
        ));
    }

    #[test]
    fn blank_edges_are_retried_without_losing_uniqueness() {
        // Found once the blank first line is dropped.
        let a = apply_lines("a\nx\nb\n", &lh(&["", "x"], &["", "y"]), 0, CTX).unwrap();
        assert_eq!(a.text, "a\ny\nb\n");
        // Dropped, the text occurs twice: ambiguous, not a guess.
        let err = apply_lines("x\na\nx\n", &lh(&["", "x"], &["", "y"]), 0, CTX)
            .err()
            .unwrap();
        assert!(matches!(err, EditError::Ambiguous { .. }), "{err}");
        // Dropping the blank would leave an edit that changes nothing: refused (the
        // removal is already done), never a silent success.
        let err = apply_lines("a\nx\n", &lh(&["", "x"], &["x"]), 0, CTX)
            .err()
            .unwrap();
        assert!(matches!(err, EditError::AlreadyApplied { .. }), "{err}");
    }
}
