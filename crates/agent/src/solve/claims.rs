//! Checks from the task's own values, asked for before any candidate. Where no test
//! fails before, the visible tests cannot tell a fix from a candidate that changes
//! nothing that matters, and candidates that agree may agree on being wrong (three
//! identical answers to "looking up 1.10.0 returns -1" that still return -1). When
//! the task states values (numbers, quoted text), the model turns them into checks
//! of the function, one call and its expected value a line; each side is probed in
//! the sandbox as the characterisation probes calls ([`super::pinned::probe`], in
//! every language it probes), and a check holds when both sides render alike. Only
//! the checks the code as it was fails are kept: those say what the change must do.
//! A candidate that passes the visible tests and every kept check is picked at once;
//! one that does not leaves the usual pick to decide. Go and Rust checks the
//! compiler rejects are dropped, as probes are.

use std::path::{Path, PathBuf};

use agentls_index::Language;
use agentls_model::{ChatRequest, Message};

use super::characterise::outside_quotes;
use super::generate::fence;
use super::localise::Target;
use super::pinned::{Layout, Outcome, Pinned};

/// Checks asked for, and the most kept.
const CHECKS: usize = 6;

/// Different candidates that pass every test but none of the checks, after which
/// the checks no longer decide (as many as settle a pick by agreeing).
pub const DOUBTED: usize = 3;

/// The name of the probe file laid beside a Go target (its package's tests).
const GO_FILE: &str = "agentls_checks_test.go";

/// Whether the task states values a check could compare against: a word with a
/// digit in it (`1.10.0`, `-1`, `20.00`, `480x360`) or text in double quotes or
/// backticks that is not a bare name (`"a-b"`, `` `add(2, 3)` ``). A task without any
/// ("sum skips the last element") gives the model nothing to check but its guesses.
pub fn gives_values(task: &str) -> bool {
    let digits = task.split_whitespace().any(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
        // File names (`v2.py`, `lib/x1.go`) state no value.
        w.chars().any(|c| c.is_ascii_digit())
            && !w.contains('/')
            && Language::from_path(Path::new(w)).is_none()
    });
    let quoted = ['"', '`'].iter().any(|&q| {
        task.split(q).skip(1).step_by(2).any(|inner| {
            !inner.is_empty()
                && !inner
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        })
    });
    digits || quoted
}

/// The request for checks of `name`: the task and the file as it was, asking for
/// one call and its expected value a line, in the language's own assertion (for Go,
/// the condition of a test's `if`: Go has no assertion, and the small models
/// asked for a `check(…)` helper write the helper).
pub fn request(task: &str, target: &Target, shown: &str, name: &str) -> ChatRequest {
    let lang = fence(target.language);
    let example = match target.language {
        Language::JavaScript => format!("assert.deepStrictEqual({name}(...), ...);"),
        Language::Go => format!("if got := {name}(...); got != ... {{"),
        Language::Rust => format!("assert_eq!({name}(...), ...);"),
        _ => format!("assert {name}(...) == ..."),
    };
    let user = format!(
        "Task: {task}\n\nFile `{shown}`:\n```{lang}\n{}\n```\n\nWrite up to {CHECKS} checks of `{name}` with the values the task states, for when the task is done: each on one line, a call and the value it must return, like `{example}`. Answer with the checks only, in one ```{lang} code block.",
        target.text.trim_end()
    );
    ChatRequest {
        system: Some(format!(
            "You are an expert {lang} programmer who writes precise unit tests. You answer with code only, in one fenced code block."
        )),
        messages: vec![Message::user(user)],
        // Six one-line checks fit; a small model that writes a helper instead is cut
        // short (its checks would not parse anyway).
        max_tokens: Some(240),
        code_block: Some(lang.to_owned()),
        ..ChatRequest::default()
    }
}

/// `s` split at `sep` where it stands outside strings and brackets.
fn split_top<'s>(s: &'s str, sep: &str) -> Vec<&'s str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    let outside: Vec<usize> = outside_quotes(s).map(|(i, _)| i).collect();
    for &i in &outside {
        match s.as_bytes()[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
        if depth == 0
            && i >= start
            && s[i..].starts_with(sep)
            && (0..sep.len()).all(|k| outside.binary_search(&(i + k)).is_ok())
        {
            out.push(&s[start..i]);
            start = i + sep.len();
        }
    }
    out.push(&s[start..]);
    out
}

/// The two arguments of a call's argument list `inner` (`a, b` or `a, b, "message"`).
fn two(inner: &str) -> Option<(String, String)> {
    let args = split_top(inner, ",");
    let (a, b) = (args.first()?.trim(), args.get(1)?.trim());
    (!a.is_empty() && !b.is_empty()).then(|| (a.to_owned(), b.to_owned()))
}

/// The `(call, expected)` checks of the model's answer `code`: lines in the form
/// [`request`] asks for (and, for Go, `if got := CALL; got != WANT {` and `if CALL !=
/// WANT {`), whose call side calls `name`; each once, at most [`CHECKS`].
pub fn checks(lang: Language, code: &str, name: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in code.lines().map(str::trim) {
        let line = line.strip_suffix(';').unwrap_or(line).trim_end();
        let pair = match lang {
            Language::Python => line
                .strip_prefix("assert ")
                .map(|rest| split_top(rest, ","))
                .and_then(|parts| {
                    let sides = split_top(parts.first()?, "==");
                    match sides[..] {
                        [a, b] => Some((a.trim().to_owned(), b.trim().to_owned())),
                        _ => None,
                    }
                }),
            Language::JavaScript => ["deepStrictEqual(", "strictEqual(", "deepEqual(", "equal("]
                .iter()
                .find_map(|f| line.strip_prefix("assert.")?.strip_prefix(f))
                .and_then(|rest| two(rest.strip_suffix(')')?)),
            Language::Rust => line
                .strip_prefix("assert_eq!(")
                .and_then(|rest| two(rest.strip_suffix(')')?)),
            Language::Go => go_check(line),
            _ => None,
        };
        let Some((call, want)) = pair else {
            continue;
        };
        if call.contains(&format!("{name}("))
            && !want.contains(&format!("{name}("))
            && !out.iter().any(|(c, w)| *c == call && *w == want)
        {
            out.push((call, want));
        }
        if out.len() == CHECKS {
            break;
        }
    }
    out
}

/// A Go check line: `check(CALL, WANT)`, `if got := CALL; got != WANT {`, or `if
/// CALL != WANT {`.
fn go_check(line: &str) -> Option<(String, String)> {
    if let Some(rest) = line.strip_prefix("check(") {
        return two(rest.strip_suffix(')')?);
    }
    let cond = line.strip_prefix("if ")?.strip_suffix('{')?.trim_end();
    if let Some(rest) = cond.strip_prefix("got := ") {
        let [call, test] = split_top(rest, ";")[..] else {
            return None;
        };
        let want = test.trim().strip_prefix("got != ")?;
        return Some((call.trim().to_owned(), want.trim().to_owned()));
    }
    let [call, want] = split_top(cond, "!=")[..] else {
        return None;
    };
    Some((call.trim().to_owned(), want.trim().to_owned()))
}

/// How to probe the checks of a function of `target` (below `root` as `rel`): where
/// the probe file goes, and the package or crate around the calls
/// ([`super::characterise::unit`]). `None` for a layout the probes do not handle (a
/// Rust binary crate, a language without probes).
pub fn layout(root: &Path, target: &Target, rel: &str, name: &str) -> Option<(Layout, PathBuf)> {
    let test_rel = match target.language {
        Language::Go => match rel.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{GO_FILE}"),
            None => GO_FILE.to_owned(),
        },
        Language::Rust => "tests/agentls_checks.rs".to_owned(),
        // Scripts: no file is laid.
        _ => rel.to_owned(),
    };
    let unit = super::characterise::unit(root, target.language, &target.text, &test_rel, rel)?;
    let path = root.join(&test_rel);
    Some((
        Layout {
            lang: target.language,
            test_rel,
            source_rel: rel.to_owned(),
            functions: vec![name.to_owned()],
            unit,
            // Only test files read it; the JavaScript probe loads either kind.
            esm: false,
        },
        path,
    ))
}

/// The probe's calls for `checks`: each check's call, then its expected value.
pub fn calls(name: &str, checks: &[(String, String)]) -> Vec<(String, String)> {
    checks
        .iter()
        .flat_map(|(call, want)| [call, want])
        .map(|c| (name.to_owned(), c.clone()))
        .collect()
}

/// Whether each check holds, from what the probe pinned: both sides returned, and
/// alike. `None` when a side left nothing to compare (the compiler rejected it, it
/// hung, it returned nothing a probe renders).
pub fn holds(checks: &[(String, String)], pinned: &[Pinned]) -> Vec<Option<bool>> {
    let outcome = |c: &str| pinned.iter().find(|p| p.call == c).map(|p| &p.outcome);
    checks
        .iter()
        .map(|(call, want)| match (outcome(call)?, outcome(want)?) {
            (Outcome::Returned(a), Outcome::Returned(b)) => Some(a == b),
            // A call that raises, against a value: the check fails.
            _ => Some(false),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_that_state_values_are_told_from_those_that_do_not() {
        assert!(gives_values(
            "versions.Index cannot find 1.10.0 in 1.0.0, 1.2.0, 1.10.0: it returns -1."
        ));
        assert!(gives_values("slugify should turn \"A b\" into \"a-b\""));
        assert!(gives_values("`add(2, 3)` should give 5"));
        assert!(!gives_values(
            "sum in math.js skips the last element. Fix it."
        ));
        assert!(!gives_values("calc.add returns the wrong result. Fix it."));
        assert!(!gives_values(
            "Rename `fetchUser` to `loadUser` in lib2.js."
        ));
    }

    #[test]
    fn checks_are_read_in_each_language_form() {
        let py = "assert add(2, 3) == 5\nassert add(\"a,b\", 1) == 'x==y', 'msg'\nprint(add(1, 1))\nassert 5 == 5\n";
        assert_eq!(
            checks(Language::Python, py, "add"),
            vec![
                ("add(2, 3)".to_owned(), "5".to_owned()),
                ("add(\"a,b\", 1)".to_owned(), "'x==y'".to_owned()),
            ]
        );
        let js =
            "assert.deepStrictEqual(sum([1, 2]), 3);\nassert.strictEqual(sum([]), 0, 'empty');\n";
        assert_eq!(
            checks(Language::JavaScript, js, "sum"),
            vec![
                ("sum([1, 2])".to_owned(), "3".to_owned()),
                ("sum([])".to_owned(), "0".to_owned()),
            ]
        );
        let go = "check(Index([]string{\"1.0.0\", \"1.10.0\"}, \"1.10.0\"), 1)\nif got := Index(nil, \"x\"); got != -1 {\nif Index([]string{}, \"a\") != -1 {\n";
        assert_eq!(
            checks(Language::Go, go, "Index"),
            vec![
                (
                    "Index([]string{\"1.0.0\", \"1.10.0\"}, \"1.10.0\")".to_owned(),
                    "1".to_owned()
                ),
                ("Index(nil, \"x\")".to_owned(), "-1".to_owned()),
                ("Index([]string{}, \"a\")".to_owned(), "-1".to_owned()),
            ]
        );
        let rs = "assert_eq!(rle(\"aab\"), \"a2b1\");\nassert!(rle(\"\").is_empty());\n";
        assert_eq!(
            checks(Language::Rust, rs, "rle"),
            vec![("rle(\"aab\")".to_owned(), "\"a2b1\"".to_owned())]
        );
    }

    #[test]
    fn a_check_holds_when_both_sides_return_alike() {
        let pin = |call: &str, v: &str| Pinned {
            function: "f".to_owned(),
            call: call.to_owned(),
            outcome: Outcome::Returned(v.to_owned()),
        };
        let checks = vec![
            ("f(1)".to_owned(), "2".to_owned()),
            ("f(2)".to_owned(), "5".to_owned()),
            ("f(3)".to_owned(), "9".to_owned()),
        ];
        let pinned = vec![
            pin("f(1)", "2"),
            pin("2", "2"),
            pin("f(2)", "4"),
            pin("5", "5"),
            pin("9", "9"),
        ];
        // f(3) left nothing to compare (rejected, or nothing to pin): not told.
        assert_eq!(holds(&checks, &pinned), vec![Some(true), Some(false), None]);
        assert_eq!(
            calls("f", &checks[..1]),
            vec![
                ("f".to_owned(), "f(1)".to_owned()),
                ("f".to_owned(), "2".to_owned())
            ]
        );
    }
}
