//! Checks from the task's and the code's own examples, for when no test tells
//! candidates apart: a docstring's doctests (`>>> slugify("A b")` then `'a-b'`), and
//! examples written as a call, an arrow and a value in the function's comments or
//! in the task (`` `add(2, 3)` → `5` ``, `fizz(3) => "Fizz"`, `f(1) == 2`). Each
//! becomes an assertion in the language of the function (Python, JavaScript), run on
//! every candidate like the model's own ([`super::agreement`]); these are the user's
//! and the code's words, so a candidate that fails one is never chosen over one
//! that passes it.

use agentls_index::Language;

/// Most examples taken.
const MAX_EXAMPLES: usize = 16;

/// The assertions the examples of `name` give, from `docs` (the function's definition
/// with its comments) and `task`; each once.
pub fn assertions(lang: Language, name: &str, docs: &str, task: &str) -> Vec<String> {
    let mut pairs = doctests(docs, name);
    for text in [docs, task] {
        pairs.extend(arrows(text, name));
    }
    let mut out: Vec<String> = Vec::new();
    for (call, value) in pairs {
        let line = match lang {
            Language::Python => format!("assert {call} == {value}"),
            Language::JavaScript => format!("assert.deepStrictEqual({call}, {value})"),
            _ => return Vec::new(),
        };
        if !out.contains(&line) {
            out.push(line);
        }
        if out.len() == MAX_EXAMPLES {
            break;
        }
    }
    out
}

/// The function at `range` of `text` with the comment lines just above it (a
/// JSDoc, Go's or Rust's doc comments): where its examples are written.
pub fn docs_of(text: &str, range: std::ops::Range<usize>) -> &str {
    let mut start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    while start > 0 {
        let prev = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        let line = text[prev..start - 1].trim_start();
        if !["*", "/*", "//", "#"].iter().any(|m| line.starts_with(m)) {
            break;
        }
        start = prev;
    }
    text.get(start..range.end).unwrap_or("")
}

/// Python doctests of `name`: `>>> CALL` and the line after it, the value.
fn doctests(docs: &str, name: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = docs.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(call) = line.strip_prefix(">>> ") else {
            continue;
        };
        let Some(value) = lines.get(i + 1) else {
            continue;
        };
        if call.contains(name)
            && !value.is_empty()
            && !value.starts_with(">>>")
            && !value.starts_with("...")
            && !value.starts_with("Traceback")
        {
            out.push((call.trim().to_owned(), (*value).to_owned()));
        }
    }
    out
}

/// The end of the call to `name` that opens at `at` (the byte after its `)`), parens
/// balanced; `None` when it does not close on the line.
fn call_end(text: &str, at: usize, name: &str) -> Option<usize> {
    let open = at + name.len();
    if !text[open..].starts_with('(') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + i + 1);
                }
            }
            '\n' => return None,
            _ => {}
        }
    }
    None
}

/// Where the value that opens `text` ends: a quoted string to its closing quote, a
/// list, map or tuple to its closing bracket, anything else to the first space (its
/// trailing `.,;)` off); `None` when it does not close or is prose.
fn literal_end(text: &str) -> Option<usize> {
    let first = text.chars().next()?;
    if first == '"' || first == '\'' {
        let mut escaped = false;
        for (i, c) in text.char_indices().skip(1) {
            match c {
                '\\' if !escaped => escaped = true,
                c if c == first && !escaped => return Some(i + 1),
                '\n' => return None,
                _ => escaped = false,
            }
        }
        return None;
    }
    if matches!(first, '[' | '{' | '(') {
        let mut depth = 0usize;
        for (i, c) in text.char_indices() {
            match c {
                '[' | '{' | '(' => depth += 1,
                ']' | '}' | ')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                '\n' => return None,
                _ => {}
            }
        }
        return None;
    }
    let word = text.split_whitespace().next()?;
    let trimmed = word.trim_end_matches(['.', ',', ';', ')']);
    // A word of prose ("the sum of both") is no value: values are literals.
    let literal = trimmed.parse::<f64>().is_ok()
        || [
            "true",
            "false",
            "True",
            "False",
            "None",
            "null",
            "undefined",
        ]
        .contains(&trimmed);
    (literal && !trimmed.is_empty()).then_some(trimmed.len())
}

/// `CALL ARROW VALUE` examples of `name` in `text`: the call balanced, the arrow one
/// of `->`, `=>`, `→`, `==`, the value up to the line's end (a closing backtick, a
/// comment's end or a sentence's full stop cut it). Backticks around either side
/// are taken off.
fn arrows(text: &str, name: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(name) {
        if text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        {
            continue;
        }
        let Some(end) = call_end(text, at, name) else {
            continue;
        };
        let rest = text[end..].trim_start_matches('`').trim_start();
        let Some((arrow, _)) = ["->", "=>", "→", "=="]
            .iter()
            .map(|a| (a, rest.starts_with(a)))
            .find(|(_, yes)| *yes)
        else {
            continue;
        };
        let after = rest[arrow.len()..].trim_start();
        let (value, quoted) = match after.strip_prefix('`') {
            Some(inner) => (inner.split('`').next().unwrap_or(""), true),
            None => (after.lines().next().unwrap_or(""), false),
        };
        let value = if quoted {
            value.trim()
        } else {
            match literal_end(value) {
                Some(end) => &value[..end],
                None => continue,
            }
        };
        if !value.is_empty() {
            out.push((text[at..end].to_owned(), value.to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctests_and_arrows_become_assertions() {
        let docs = "def slug(s):\n    \"\"\"Slug of s.\n\n    >>> slug(\"A b\")\n    'a-b'\n    >>> slug('x')\n    'x'\n    \"\"\"\n";
        assert_eq!(
            assertions(
                Language::Python,
                "slug",
                docs,
                "slug(\"Zoë\") → \"zoe\", please."
            ),
            vec![
                "assert slug(\"A b\") == 'a-b'",
                "assert slug('x') == 'x'",
                "assert slug(\"Zoë\") == \"zoe\"",
            ]
        );
        let js =
            "/**\n * fizz(3) => \"Fizz\"\n * fizz(15) => \"FizzBuzz\"\n */\nfunction fizz(n) {}\n";
        assert_eq!(
            assertions(Language::JavaScript, "fizz", js, "`fizz(1)` -> `\"1\"`"),
            vec![
                "assert.deepStrictEqual(fizz(3), \"Fizz\")",
                "assert.deepStrictEqual(fizz(15), \"FizzBuzz\")",
                "assert.deepStrictEqual(fizz(1), \"1\")",
            ]
        );
    }

    #[test]
    fn prose_after_an_arrow_and_other_names_are_not_examples() {
        assert!(assertions(Language::Python, "add", "add(2, 3) -> the sum of both", "").is_empty());
        assert!(assertions(Language::Python, "add", "madd(2, 3) == 5", "").is_empty());
        assert!(assertions(Language::Go, "Add", "Add(2, 3) == 5", "").is_empty());
    }
}
