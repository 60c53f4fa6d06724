//! Finding a block of lines in a file: strict levels first, each checking uniqueness.

use std::ops::Range;

use std::borrow::Cow;

use crate::normalize::{Offset, fold_unicode_cow, is_elision};

/// How loosely a search text had to be read to match. Levels are tried in this order and
/// the first level with any match decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MatchLevel {
    /// Byte for byte.
    Exact,
    /// Trailing whitespace ignored.
    TrailingWhitespace,
    /// Every line shifted by the same indentation; the replacement is re-indented.
    IndentOffset,
    /// Leading and trailing whitespace ignored (tabs vs spaces); the replacement is
    /// re-indented from the first line.
    SurroundingWhitespace,
    /// As above, with dashes, curly quotes and odd spaces folded to ASCII.
    UnicodeFolded,
    /// `...` lines in the search text stand for lines left out; the lines they cover are
    /// kept when the replacement has the same `...` lines.
    Elision,
}

impl MatchLevel {
    /// Every level, strictest first.
    pub const ALL: [MatchLevel; 6] = [
        MatchLevel::Exact,
        MatchLevel::TrailingWhitespace,
        MatchLevel::IndentOffset,
        MatchLevel::SurroundingWhitespace,
        MatchLevel::UnicodeFolded,
        MatchLevel::Elision,
    ];

    /// A short human name, used in messages.
    pub fn describe(self) -> &'static str {
        match self {
            MatchLevel::Exact => "exact",
            MatchLevel::TrailingWhitespace => "ignoring trailing whitespace",
            MatchLevel::IndentOffset => "with a uniform indentation offset",
            MatchLevel::SurroundingWhitespace => "ignoring surrounding whitespace",
            MatchLevel::UnicodeFolded => "with Unicode punctuation folded",
            MatchLevel::Elision => "with `...` elision",
        }
    }
}

/// One place a search text matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Zero-based line range in the file.
    pub range: Range<usize>,
    pub level: MatchLevel,
    /// For [`MatchLevel::Elision`]: the file lines each `...` stood for.
    pub gaps: Vec<Range<usize>>,
}

/// What to look for and where.
#[derive(Debug, Clone)]
pub(crate) struct Query<'p> {
    pub search: &'p [String],
    /// Lines of the file to search in.
    pub region: Range<usize>,
    /// One-based line near which the match is expected; breaks ties.
    pub line_hint: Option<usize>,
    /// The match must end at the end of the file.
    pub at_eof: bool,
    /// Take the first match instead of calling several ambiguous (after an `@@` anchor).
    pub first_wins: bool,
}

/// The answer of [`find`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Found(Found),
    /// Several places match at `level`; zero-based start lines.
    Ambiguous {
        level: MatchLevel,
        starts: Vec<usize>,
    },
    NotFound,
}

/// Finds `q.search` in `file`, level by level. `search` must not be empty.
pub(crate) fn find(file: &[&str], q: &Query) -> Outcome {
    find_from(file, q, MatchLevel::Exact)
}

/// As [`find`], starting at level `from`.
pub(crate) fn find_from(file: &[&str], q: &Query, from: MatchLevel) -> Outcome {
    for level in MatchLevel::ALL.into_iter().filter(|l| *l >= from) {
        let found = match level {
            MatchLevel::UnicodeFolded => {
                // Folding changes nothing when neither side has non-ASCII text: the
                // previous level already saw exactly this.
                if q.search.iter().all(|l| l.is_ascii()) && file.iter().all(|l| l.is_ascii()) {
                    continue;
                }
                let f: Vec<Cow<'_, str>> =
                    file.iter().map(|l| fold_unicode_cow(l.trim())).collect();
                let s: Vec<Cow<'_, str>> = q
                    .search
                    .iter()
                    .map(|l| fold_unicode_cow(l.trim()))
                    .collect();
                candidates(file.len(), q, |i, j| f[i] == s[j])
                    .into_iter()
                    .map(|r| plain(r, level))
                    .collect()
            }
            MatchLevel::Elision => elision(file, q),
            _ => candidates(file.len(), q, |i, j| same_at(level, file, q.search, i, j))
                .into_iter()
                .map(|r| plain(r, level))
                .collect(),
        };
        match choose(found, q) {
            Outcome::NotFound => continue,
            other => return other,
        }
    }
    Outcome::NotFound
}

fn plain(range: Range<usize>, level: MatchLevel) -> Found {
    Found {
        range,
        level,
        gaps: Vec::new(),
    }
}

/// Line comparison at the simple levels; `i` is the file line of search line `j`.
fn same_at(level: MatchLevel, file: &[&str], search: &[String], i: usize, j: usize) -> bool {
    let (f, s) = (file[i], search[j].as_str());
    match level {
        MatchLevel::Exact => f == s,
        MatchLevel::TrailingWhitespace => f.trim_end() == s.trim_end(),
        MatchLevel::IndentOffset => {
            // The offset is fixed by the first non-blank search line of this window.
            let Some(k) = search.iter().position(|l| !l.trim().is_empty()) else {
                return f.trim().is_empty();
            };
            let start = i - j;
            match Offset::between(file[start + k], &search[k]) {
                Some(o) if !o.is_zero() => o.same(f, s),
                _ => false,
            }
        }
        MatchLevel::SurroundingWhitespace => f.trim() == s.trim(),
        MatchLevel::UnicodeFolded | MatchLevel::Elision => false,
    }
}

/// Every window of `q.region` where `same(file_line, search_line)` holds for all lines.
fn candidates(n: usize, q: &Query, same: impl Fn(usize, usize) -> bool) -> Vec<Range<usize>> {
    let k = q.search.len();
    let end = q.region.end.min(n);
    let mut out = Vec::new();
    if k == 0 || end < k || q.region.start > end - k {
        return out;
    }
    for start in q.region.start..=end - k {
        if q.at_eof && start + k != n {
            continue;
        }
        if (0..k).all(|j| same(start + j, j)) {
            out.push(start..start + k);
            if q.first_wins {
                break;
            }
        }
    }
    out
}

/// Matches the segments between `...` lines in order, each at the earliest place after
/// the previous one, with one indentation offset for the whole block.
fn elision(file: &[&str], q: &Query) -> Vec<Found> {
    if !q.search.iter().any(|l| is_elision(l)) {
        return Vec::new();
    }
    let segments: Vec<&[String]> = q
        .search
        .split(|l| is_elision(l))
        .filter(|s| !s.is_empty())
        .collect();
    let Some(first) = segments.first() else {
        return Vec::new();
    };
    let end = q.region.end.min(file.len());
    let Some(k) = first.iter().position(|l| !l.trim().is_empty()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let seg_at = |at: usize, seg: &[String], o: Offset| {
        at + seg.len() <= end && seg.iter().enumerate().all(|(j, s)| o.same(file[at + j], s))
    };
    for start in q.region.start..end {
        if start + first.len() > end {
            break;
        }
        let Some(offset) = Offset::between(file[start + k], &first[k]) else {
            continue;
        };
        if !seg_at(start, first, offset) {
            continue;
        }
        let mut pos = start + first.len();
        let mut gaps = Vec::new();
        let mut ok = true;
        for seg in &segments[1..] {
            match (pos..end).find(|&at| seg_at(at, seg, offset)) {
                Some(at) => {
                    gaps.push(pos..at);
                    pos = at + seg.len();
                }
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok && (!q.at_eof || pos == file.len()) {
            out.push(Found {
                range: start..pos,
                level: MatchLevel::Elision,
                gaps,
            });
            if q.first_wins {
                break;
            }
        }
    }
    out
}

/// One match, a tie broken by the line hint, or ambiguity.
fn choose(mut found: Vec<Found>, q: &Query) -> Outcome {
    match found.len() {
        0 => Outcome::NotFound,
        1 => Outcome::Found(found.remove(0)),
        _ => {
            if let Some(hint) = q.line_hint {
                let target = hint.saturating_sub(1);
                let dist = |f: &Found| f.range.start.abs_diff(target);
                found.sort_by_key(dist);
                if dist(&found[0]) < dist(&found[1]) {
                    return Outcome::Found(found.remove(0));
                }
            }
            Outcome::Ambiguous {
                level: found[0].level,
                starts: found.iter().map(|f| f.range.start).collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(search: &[&str]) -> (Vec<String>, Option<usize>) {
        (search.iter().map(|s| s.to_string()).collect(), None)
    }

    fn run(file: &str, search: &[&str], hint: Option<usize>) -> Outcome {
        let file: Vec<&str> = file.lines().collect();
        let (search, _) = q(search);
        find(
            &file,
            &Query {
                search: &search,
                region: 0..file.len(),
                line_hint: hint,
                at_eof: false,
                first_wins: false,
            },
        )
    }

    fn level_of(o: &Outcome) -> Option<(MatchLevel, Range<usize>)> {
        match o {
            Outcome::Found(f) => Some((f.level, f.range.clone())),
            _ => None,
        }
    }

    #[test]
    fn each_level() {
        let file = "fn a() {\n    let x = \u{201C}hi\u{201D};  \n    b();\n}\n";
        assert_eq!(
            level_of(&run(file, &["    b();"], None)),
            Some((MatchLevel::Exact, 2..3))
        );
        assert_eq!(
            level_of(&run(file, &["    let x = \u{201C}hi\u{201D};"], None)),
            Some((MatchLevel::TrailingWhitespace, 1..2))
        );
        assert_eq!(
            level_of(&run(file, &["let x = \u{201C}hi\u{201D};", "b();"], None)),
            Some((MatchLevel::IndentOffset, 1..3))
        );
        assert_eq!(
            level_of(&run(
                file,
                &["fn a() {", "let x = \u{201C}hi\u{201D};"],
                None
            )),
            Some((MatchLevel::SurroundingWhitespace, 0..2))
        );
        assert_eq!(
            level_of(&run(file, &["let x = \"hi\";"], None)),
            Some((MatchLevel::UnicodeFolded, 1..2))
        );
        assert_eq!(
            level_of(&run(file, &["fn a() {", "...", "}"], None)),
            Some((MatchLevel::Elision, 0..4))
        );
    }

    #[test]
    fn ambiguity_and_hint() {
        let file = "x\ny\nx\ny\nx\n";
        assert_eq!(
            run(file, &["x"], None),
            Outcome::Ambiguous {
                level: MatchLevel::Exact,
                starts: vec![0, 2, 4]
            }
        );
        assert_eq!(
            level_of(&run(file, &["x"], Some(3))),
            Some((MatchLevel::Exact, 2..3))
        );
        // Equidistant hint stays ambiguous.
        assert!(matches!(
            run(file, &["x"], Some(2)),
            Outcome::Ambiguous { .. }
        ));
    }

    #[test]
    fn elision_respects_indentation() {
        let file = "fn a() {\n    if x {\n    }\n}\nfn b() {}\n";
        let o = run(file, &["fn a() {", "...", "}"], None);
        assert_eq!(level_of(&o), Some((MatchLevel::Elision, 0..4)));
    }
}
