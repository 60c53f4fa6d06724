//! Messages for failed matches: the nearest real lines, with numbers and differences, and
//! the candidates of an ambiguous match.

use std::fmt::Write;

use crate::matcher::MatchLevel;
use crate::normalize::fold_unicode;

/// Most lines of a candidate or window shown in a message.
const MAX_SHOWN: usize = 12;
/// Most search lines scored per window when looking for the nearest lines.
const MAX_SCORED: usize = 16;
/// Below this similarity nothing is called "near".
const MIN_SIMILARITY: f64 = 0.35;

/// Sorted character bigrams of a trimmed line, for a Dice coefficient.
fn bigrams(line: &str) -> Vec<u64> {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut out: Vec<u64> = chars
        .windows(2)
        .map(|w| (u64::from(w[0] as u32) << 32) | u64::from(w[1] as u32))
        .collect();
    out.sort_unstable();
    out
}

/// Dice similarity of two bigram multisets, in 0..=1.
fn dice(a: &[u64], b: &[u64], a_line: &str, b_line: &str) -> f64 {
    if a.is_empty() || b.is_empty() {
        return if a_line.trim() == b_line.trim() {
            1.0
        } else {
            0.0
        };
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

/// A 128-bit set of hashed character bigrams of a trimmed line: a cheap first pass
/// before the exact Dice score.
fn signature(line: &str) -> u128 {
    let mut sig = 0u128;
    let mut prev: Option<char> = None;
    for c in line.trim().chars() {
        if let Some(p) = prev {
            let h = (u32::from(p).wrapping_mul(31) ^ u32::from(c)).wrapping_mul(2_654_435_761);
            sig |= 1u128 << (h >> 25);
        }
        prev = Some(c);
    }
    sig
}

fn approx(a: u128, b: u128) -> f64 {
    let total = a.count_ones() + b.count_ones();
    if total == 0 {
        return 1.0;
    }
    f64::from(2 * (a & b).count_ones()) / f64::from(total)
}

/// Windows re-scored exactly after the first pass.
const RESCORED: usize = 8;

/// The window of `search.len()` file lines most similar to `search`: (start, score).
pub(crate) fn nearest(file: &[&str], search: &[String]) -> Option<(usize, f64)> {
    let k = search.len();
    if k == 0 || file.is_empty() {
        return None;
    }
    let windows = file.len().saturating_sub(k) + 1;
    // Long search texts are scored on evenly spaced lines: the failure path must stay
    // interactive on large files too.
    let sample: Vec<usize> = if k <= MAX_SCORED {
        (0..k).collect()
    } else {
        (0..MAX_SCORED)
            .map(|i| i * (k - 1) / (MAX_SCORED - 1))
            .collect()
    };
    let fsig: Vec<u128> = file.iter().map(|l| signature(l)).collect();
    let ssig: Vec<u128> = search.iter().map(|l| signature(l)).collect();
    let mut rough: Vec<(f64, usize)> = (0..windows)
        .map(|start| {
            let total: f64 = sample
                .iter()
                .filter_map(|&j| fsig.get(start + j).map(|f| approx(ssig[j], *f)))
                .sum();
            (total, start)
        })
        .collect();
    rough.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let s: Vec<Vec<u64>> = search.iter().map(|l| bigrams(l)).collect();
    let mut best: Option<(usize, f64)> = None;
    for &(_, start) in rough.iter().take(RESCORED) {
        let mut total = 0.0;
        for &j in &sample {
            if let Some(fl) = file.get(start + j) {
                total += dice(&s[j], &bigrams(fl), &search[j], fl);
            }
        }
        let score = total / sample.len() as f64;
        if best.is_none_or(|(b_start, b)| score > b || (score == b && start < b_start)) {
            best = Some((start, score));
        }
    }
    best
}

/// "not found" with the nearest lines, what differs, and how to retry.
pub(crate) fn no_match(file: &[&str], search: &[String], what: &str) -> String {
    let tried: Vec<&str> = MatchLevel::ALL.iter().map(|l| l.describe()).collect();
    let mut out = format!("{what} was not found (tried: {}).\n", tried.join(", "));
    match nearest(file, search) {
        Some((start, score)) if score >= MIN_SIMILARITY => {
            let end = (start + search.len()).min(file.len());
            let _ = writeln!(
                out,
                "The most similar lines are {}-{} ({:.0}% similar):",
                start + 1,
                end,
                score * 100.0
            );
            show_lines(&mut out, file, start, end);
            let mut diffs = String::new();
            let mut shown = 0;
            for (j, want) in search.iter().enumerate() {
                let Some(have) = file.get(start + j) else {
                    let _ = writeln!(
                        diffs,
                        "  your line {} is past the end of the file: {want}",
                        j + 1
                    );
                    continue;
                };
                if *have == want.as_str() || shown >= MAX_SHOWN {
                    continue;
                }
                shown += 1;
                let why = if have.trim() == want.trim() {
                    " (whitespace differs)"
                } else if fold_unicode(have.trim()) == fold_unicode(want.trim()) {
                    " (punctuation differs)"
                } else {
                    ""
                };
                let _ = writeln!(
                    diffs,
                    "  line {}{why}:\n    - {want}\n    + {have}",
                    start + j + 1
                );
            }
            if !diffs.is_empty() {
                out.push_str("What differs (- your text, + the file):\n");
                out.push_str(&diffs);
            }
            out.push_str("Copy the file's lines exactly as shown above and retry.");
        }
        _ => {
            let _ = write!(
                out,
                "No lines of the file ({} line{}) resemble it; check the file path, or read the file again before retrying.",
                file.len(),
                if file.len() == 1 { "" } else { "s" }
            );
        }
    }
    out
}

/// "matches several places" with every candidate.
pub(crate) fn ambiguous(
    file: &[&str],
    len: usize,
    level: MatchLevel,
    starts: &[usize],
    what: &str,
    advice: &str,
) -> String {
    let lines: Vec<String> = starts.iter().map(|s| (s + 1).to_string()).collect();
    let mut out = format!(
        "{what} matches {} places ({}), starting at lines {}:\n",
        starts.len(),
        level.describe(),
        lines.join(", ")
    );
    for &s in starts.iter().take(MAX_SHOWN) {
        show_lines(&mut out, file, s, (s + len.clamp(1, 3)).min(file.len()));
        out.push_str("  ---\n");
    }
    out.push_str(advice);
    out
}

fn show_lines(out: &mut String, file: &[&str], start: usize, end: usize) {
    let end = end.min(start + MAX_SHOWN);
    for (i, line) in file.iter().enumerate().take(end).skip(start) {
        let _ = writeln!(out, "  {:>5} | {line}", i + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn nearest_window() {
        let file = [
            "fn a() {",
            "    let x = 1;",
            "}",
            "fn b() {",
            "    let y = 2;",
            "}",
        ];
        let search = vec!["fn b() {".to_string(), "    let y = 3;".to_string()];
        assert_eq!(nearest(&file, &search).map(|(s, _)| s), Some(3));
    }

    #[test]
    fn ambiguous_message() {
        let file = ["a", "x", "b", "x", "c"];
        expect![[r#"
            the text to replace matches 2 places (ignoring trailing whitespace), starting at lines 2, 4:
                  2 | x
                  3 | b
              ---
                  4 | x
                  5 | c
              ---
            Add context."#]]
        .assert_eq(&ambiguous(
            &file,
            2,
            MatchLevel::TrailingWhitespace,
            &[1, 3],
            "the text to replace",
            "Add context.",
        ));
    }

    #[test]
    fn no_match_message() {
        let file = ["fn main() {", "    println!(\"hi\");", "}"];
        let search = vec![
            "fn main() {".to_string(),
            "    println!(\"hello\");".to_string(),
        ];
        expect![[r#"
            the text to replace was not found (tried: exact, ignoring trailing whitespace, with a uniform indentation offset, ignoring surrounding whitespace, with Unicode punctuation folded, with `...` elision).
            The most similar lines are 1-2 (89% similar):
                  1 | fn main() {
                  2 |     println!("hi");
            What differs (- your text, + the file):
              line 2:
                -     println!("hello");
                +     println!("hi");
            Copy the file's lines exactly as shown above and retry."#]]
        .assert_eq(&no_match(&file, &search, "the text to replace"));
    }
}
