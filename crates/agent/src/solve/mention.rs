//! What a task mentions, read as text marks, not as wording: the identifiers it
//! names (with whether they are set off as code), the spans it quotes. Strategies
//! look these up in the workspace ([`super::strategy`]); no word of the task decides
//! anything by itself.

use std::ops::Range;

/// An identifier the task names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    /// The identifier (one part of a dotted path: `Registry.Lookup` gives two).
    pub name: String,
    /// The index of the whitespace-separated word it stands in.
    pub word: usize,
    /// Set off as code: in backticks or quotes by itself, or called (`f()`).
    pub marked: bool,
    /// The first word of a sentence (its capital says nothing).
    pub initial: bool,
    /// The last part of a dotted path, or no path at all.
    pub last: bool,
    /// Inside a call's arguments as the task writes it (`NewServer(cfg Config)`): a
    /// parameter or a type, not a name of its own.
    pub in_args: bool,
}

/// Whether `s` is an identifier of the languages the index knows (`$` for JavaScript).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(is_ident_char)
}

/// Whether `c` may stand inside an identifier.
pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// Whether `name` is written as only code writes names: snake_case, camelCase, a
/// capital inside (`NewLexer`, `HTTPServer`), or letters with digits.
pub fn code_shaped(name: &str) -> bool {
    let letters = name.chars().any(|c| c.is_ascii_alphabetic());
    let capitals = name.chars().filter(char::is_ascii_uppercase).count();
    let first_capital = usize::from(name.starts_with(|c: char| c.is_ascii_uppercase()));
    let inner_capital = name.chars().any(|c| c.is_ascii_lowercase()) && capitals > first_capital;
    letters
        && (name.trim_matches('_').contains('_')
            || inner_capital
            || name.chars().any(|c| c.is_ascii_digit())
            || name.starts_with('$'))
}

/// The identifiers `task` names, in order. Words that are command-line flags
/// (`--dev`, `-top`), paths and parts of quoted phrases (messages: `"invalid port:
/// X"`) are not names.
pub fn mentions(task: &str) -> Vec<Mention> {
    let phrases = quoted(task);
    let in_phrase = |at: usize| {
        phrases
            .iter()
            .any(|(start, text)| text.contains(' ') && at >= *start && at <= start + text.len())
    };
    let mut out = Vec::new();
    let mut initial = true;
    let mut in_args = false;
    let mut at = 0;
    for (word_index, raw) in task.split_whitespace().enumerate() {
        let start = task[at..].find(raw).map_or(at, |i| at + i);
        at = start + raw.len();
        let was_initial = initial;
        initial = raw.ends_with(['.', '!', '?', ':']) && !raw.ends_with("..");
        let was_in_args = in_args;
        // `f(a, b)` across words: an identifier right before `(` opens arguments.
        if let Some(open) = raw.rfind('(')
            && raw[..open].ends_with(is_ident_char)
            && !raw[open..].contains(')')
        {
            in_args = true;
        } else if raw.contains(')') {
            in_args = false;
        }
        if raw.starts_with('-') || in_phrase(start) {
            continue;
        }
        let marked_around = ["`", "'", "\""].iter().any(|q| {
            let t = raw.trim_end_matches(|c: char| ",;:!?.)".contains(c));
            let t = t.trim_start_matches('(');
            t.len() > 2 * q.len() && t.starts_with(q) && t.ends_with(q)
        });
        let w = raw.trim_matches(|c: char| "`'\"()[]{},;:!?<>".contains(c));
        let called = w.ends_with("()") || raw.contains("()");
        let w = w.strip_suffix("()").unwrap_or(w).trim_end_matches('.');
        let w = w.split('(').next().unwrap_or(w);
        // A possessive names its owner: `Registry's Lookup`.
        let w = w
            .strip_suffix("'s")
            .or_else(|| w.strip_suffix("\u{2019}s"))
            .unwrap_or(w);
        if w.contains('/') || w.contains('\\') {
            continue;
        }
        let parts: Vec<&str> = w.split('.').collect();
        // A file name (`report.py`) is not a dotted path.
        let file_like = parts.len() == 2
            && parts[1].len() <= 4
            && parts[1].chars().all(|c| c.is_ascii_lowercase());
        for (i, part) in parts.iter().enumerate() {
            if !is_identifier(part) || part.len() < 2 || (file_like && i == 1) {
                continue;
            }
            out.push(Mention {
                name: (*part).to_owned(),
                word: word_index,
                marked: marked_around || called,
                initial: was_initial && i == 0,
                last: i + 1 == parts.len(),
                in_args: was_in_args,
            });
        }
    }
    out
}

/// The spans of `task` quoted in backticks, then those in double quotes outside
/// them, each with its byte offset, in the order they appear.
pub fn quoted(task: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut ticks: Vec<Range<usize>> = Vec::new();
    let mut at = 0;
    while let Some(open) = task[at..].find('`').map(|i| at + i) {
        let Some(close) = task[open + 1..].find('`').map(|i| open + 1 + i) else {
            break;
        };
        out.push((open, task[open + 1..close].to_owned()));
        ticks.push(open..close + 1);
        at = close + 1;
    }
    let mut at = 0;
    while let Some(open) = task[at..].find('"').map(|i| at + i) {
        if let Some(t) = ticks.iter().find(|t| t.contains(&open)) {
            at = t.end;
            continue;
        }
        let Some(close) = task[open + 1..].find('"').map(|i| open + 1 + i) else {
            break;
        };
        if ticks.iter().any(|t| t.contains(&close)) {
            at = open + 1;
            continue;
        }
        out.push((open, task[open + 1..close].to_owned()));
        at = close + 1;
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(task: &str) -> Vec<(String, bool)> {
        mentions(task)
            .into_iter()
            .map(|m| (m.name, m.marked))
            .collect()
    }

    #[test]
    fn names_are_read_with_their_marks() {
        let m = mentions("Let's call Registry.Lookup `Resolve` instead, and fix fmt_time().");
        let get = |n: &str| m.iter().find(|x| x.name == n).cloned().unwrap();
        assert!(!get("Lookup").marked && get("Lookup").last);
        assert!(!get("Registry").last);
        assert!(get("Resolve").marked);
        assert!(get("fmt_time").marked, "a call is code");
        let m = mentions("Registry's Lookup and Cart\u{2019}s total");
        let n: Vec<&str> = m.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(n, ["Registry", "Lookup", "and", "Cart", "total"]);
        let m = mentions("Fix add. Then Parse it.");
        let initial: Vec<bool> = m.iter().map(|x| x.initial).collect();
        assert_eq!(initial, [true, false, true, false, false]);
        let m = mentions("Replace it with NewServer(cfg Config), where Config is new.");
        let args: Vec<(&str, bool)> = m.iter().map(|x| (x.name.as_str(), x.in_args)).collect();
        assert!(
            args.contains(&("Config", true)) && args.contains(&("Config", false)),
            "{args:?}"
        );
        assert!(args.contains(&("NewServer", false)), "{args:?}");
    }

    #[test]
    fn flags_paths_and_messages_are_not_names() {
        let n = names(
            "Add a --dev switch to report.py; the error `invalid port: X` stays. See src/app.rs",
        );
        let n: Vec<&str> = n.iter().map(|(s, _)| s.as_str()).collect();
        assert!(!n.contains(&"dev"), "{n:?}");
        assert!(!n.contains(&"py"), "{n:?}");
        assert!(n.contains(&"report"), "{n:?}");
        assert!(!n.contains(&"invalid") && !n.contains(&"port"), "{n:?}");
        assert!(!n.contains(&"app"), "{n:?}");
    }

    #[test]
    fn code_shapes() {
        for s in [
            "fetch_user",
            "fetchUser",
            "NewLexer",
            "HTTPServer",
            "v2",
            "$el",
        ] {
            assert!(code_shaped(s), "{s}");
        }
        for s in ["Lexer", "total", "Resolve", "URL"] {
            assert!(!code_shaped(s), "{s}");
        }
    }
}
