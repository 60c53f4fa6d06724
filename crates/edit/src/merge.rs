//! Three-way merge by lines: a model's whole-file rewrite made from text it read earlier
//! (`base`), combined with what the user changed since (`theirs`). Either both sides'
//! changes land, or the merge is refused naming the lines where they meet; a user's line
//! is never dropped silently.

use std::ops::Range;

use similar::{Algorithm, DiffTag, capture_diff_slices};

/// Where the two sides changed the same lines (or lines next to each other).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the new text changes lines {ours:?} of the version that was read, and the file has changed since at lines {theirs:?}"
)]
pub struct MergeConflict {
    /// One-based first and last line of our change, in the base text (an insertion
    /// names the line it follows, 0 for the top).
    pub ours: (usize, usize),
    /// The same for the other side's change.
    pub theirs: (usize, usize),
}

/// A clean merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The merged text.
    pub text: String,
    /// One-based line ranges of the merged text that come from `theirs`' changes.
    pub theirs_lines: Vec<(usize, usize)>,
}

/// One change of one side: base lines `base` replaced by `new` lines.
#[derive(Debug, Clone)]
struct Change<'a> {
    base: Range<usize>,
    new: Vec<&'a str>,
}

fn changes<'a>(base: &[&str], side: &[&'a str]) -> Vec<Change<'a>> {
    let mut out: Vec<Change<'a>> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, base, side) {
        let (tag, b, s) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        match out.last_mut() {
            // Adjacent ops (a delete then an insert) are one change.
            Some(last) if last.base.end == b.start && tag != DiffTag::Equal => {
                last.base.end = b.end;
                last.new.extend_from_slice(&side[s]);
            }
            _ => out.push(Change {
                base: b,
                new: side[s].to_vec(),
            }),
        }
    }
    out
}

/// Whether two changes meet: overlapping, or touching (like `git merge`, two changes
/// with no unchanged line between them are a conflict: their order would be a guess).
fn meet(a: &Change, b: &Change) -> bool {
    a.base.start <= b.base.end && b.base.start <= a.base.end
}

fn lines_of(r: &Range<usize>) -> (usize, usize) {
    if r.is_empty() {
        (r.start, r.start)
    } else {
        (r.start + 1, r.end)
    }
}

/// Merges `ours` and `theirs`, both made from `base`. Lines are compared with their
/// terminators, so a side that only changed line endings changes those lines.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Result<Merged, MergeConflict> {
    let b: Vec<&str> = base.split_inclusive('\n').collect();
    let o: Vec<&str> = ours.split_inclusive('\n').collect();
    let t: Vec<&str> = theirs.split_inclusive('\n').collect();
    let co = changes(&b, &o);
    let ct = changes(&b, &t);
    // Conflicts first: any of ours meeting any of theirs, unless both made the same change.
    for x in &co {
        for y in &ct {
            if meet(x, y) && !(x.base == y.base && x.new == y.new) {
                return Err(MergeConflict {
                    ours: lines_of(&x.base),
                    theirs: lines_of(&y.base),
                });
            }
        }
    }
    // Both sides' changes, sorted by base position; a change both made once.
    let mut all: Vec<(&Change, bool)> = co.iter().map(|c| (c, false)).collect();
    for y in &ct {
        if !co.iter().any(|x| x.base == y.base && x.new == y.new) {
            all.push((y, true));
        }
    }
    all.sort_by_key(|(c, _)| (c.base.start, c.base.end));
    let mut text = String::with_capacity(ours.len().max(theirs.len()));
    let mut theirs_lines = Vec::new();
    let mut at = 0;
    let mut out_line = 0;
    for (c, is_theirs) in all {
        for l in &b[at..c.base.start] {
            text.push_str(l);
        }
        out_line += c.base.start - at;
        if is_theirs && !c.new.is_empty() {
            theirs_lines.push((out_line + 1, out_line + c.new.len()));
        }
        for l in &c.new {
            text.push_str(l);
        }
        out_line += c.new.len();
        at = c.base.end;
    }
    for l in &b[at..] {
        text.push_str(l);
    }
    Ok(Merged { text, theirs_lines })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_users_added_line_survives_a_rewrite() {
        let base = "a\nb\nc\nd\n";
        let ours = "A\nb\nc\nd\n";
        let theirs = "a\nb\nc\nuser\nd\n";
        let m = merge3(base, ours, theirs).unwrap();
        assert_eq!(m.text, "A\nb\nc\nuser\nd\n");
        assert_eq!(m.theirs_lines, vec![(4, 4)]);
    }

    #[test]
    fn meeting_changes_conflict() {
        let e = merge3("a\nb\nc\n", "a\nB\nc\n", "a\nb2\nc\n").unwrap_err();
        assert_eq!((e.ours, e.theirs), ((2, 2), (2, 2)));
        // Touching lines too.
        assert!(merge3("a\nb\nc\n", "A\nb\nc\n", "a\nB\nc\n").is_err());
        // The same change on both sides is no conflict.
        assert_eq!(merge3("a\nb\n", "a\nB\n", "a\nB\n").unwrap().text, "a\nB\n");
    }

    #[test]
    fn deletions_and_missing_final_newline() {
        let m = merge3("a\nb\nc\nd\ne", "b\nc\nd\ne", "a\nb\nc\nd\nE").unwrap();
        assert_eq!(m.text, "b\nc\nd\nE");
    }

    /// Texts of a few distinct lines, and a way to change a region of them.
    fn lines(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec("[a-z]{1,3}", n).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, s)| format!("{i}{s}\n"))
                .collect()
        })
    }

    fn join(v: &[String]) -> String {
        v.concat()
    }

    proptest! {
        #[test]
        fn only_theirs_changed_gives_theirs(base in lines(0..12), theirs in lines(0..12)) {
            let (b, t) = (join(&base), join(&theirs));
            prop_assert_eq!(merge3(&b, &b, &t).unwrap().text, t);
        }

        #[test]
        fn only_ours_changed_gives_ours(base in lines(0..12), ours in lines(0..12)) {
            let (b, o) = (join(&base), join(&ours));
            let m = merge3(&b, &o, &b).unwrap();
            prop_assert_eq!(m.text, o);
            prop_assert!(m.theirs_lines.is_empty());
        }

        #[test]
        fn disjoint_changes_keep_both(
            base in lines(6..16),
            split in 2usize..4,
            ours_new in proptest::collection::vec("[A-Z]{1,3}\n", 0..3),
            theirs_new in proptest::collection::vec("[A-Z]{1,3}\n", 0..3),
        ) {
            // Ours rewrites line 0, theirs a line well after it: an unchanged line
            // between them.
            let k = split.min(base.len() - 2) + 1;
            let mut ours = base.clone();
            ours.splice(0..1, ours_new.iter().map(|s| format!("o{s}")));
            let mut theirs = base.clone();
            theirs.splice(k..k + 1, theirs_new.iter().map(|s| format!("t{s}")));
            let mut both = base.clone();
            both.splice(k..k + 1, theirs_new.iter().map(|s| format!("t{s}")));
            both.splice(0..1, ours_new.iter().map(|s| format!("o{s}")));
            let m = merge3(&join(&base), &join(&ours), &join(&theirs)).unwrap();
            prop_assert_eq!(m.text, join(&both));
        }
    }
}
