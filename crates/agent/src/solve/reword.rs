//! Rewording one message everywhere, without the model: "change `invalid port: X` to
//! exactly `port "X" must be …`, with the rejected text in place of X" is read from the
//! task's words ([`asked`]), and every string literal that holds the old message is
//! rewritten in the idiom it is written in ([`edits`]): a format verb stays a verb, an
//! interpolation stays one, `"…" + s` becomes the language's interpolation, and a
//! message that named no value takes the one its `if` tested. The tests' expected
//! messages follow; where one names no value (`'Invalid email'`), the value is one of
//! the test's own strings, each tried until the tests say which. A small model cannot
//! find every spelling of a message across files; the parser can, and the tests say
//! whether the result holds together.

use std::ops::Range;

use agentls_index::Language;

/// The message change a task asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reword {
    /// The message as the code has it now, the value written as `placeholder` (or
    /// not at all: `Invalid email`).
    pub old: String,
    /// The message it must become, with `placeholder` where the value goes.
    pub new: String,
    /// The word that stands for the value in both.
    pub placeholder: String,
}

/// Where `word` stands whole in `text` (not inside a longer word), the last place.
fn whole_word(text: &str, word: &str) -> Option<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word)
        .filter(|(i, _)| {
            !text[..*i].chars().next_back().is_some_and(is_word)
                && !text[i + word.len()..].chars().next().is_some_and(is_word)
        })
        .map(|(i, _)| i)
        .last()
}

/// The message change `task` may ask for, read from what the workspace holds
/// (`literals`: the contents of its string literals, ASCII lower-cased): the old
/// message is a span the task quotes that a literal holds up to its value, with the
/// value itself interpolated there (`invalid port: X` against `"invalid port: %q"`),
/// or whole when it names no value (`"Invalid email"`); the new one is a span it
/// quotes that no literal holds. The value's word is the new message's one stand-in
/// in capitals that the old lacks (`X`, `N`, `NAME`), else the last word both share
/// that the literal interpolates. However the request is worded, the same two quotes
/// make the same reword. `None` when no two quoted spans read so.
pub fn asked(task: &str, literals: &[String]) -> Option<Reword> {
    let held = Held(literals);
    let spans: Vec<(usize, String)> = super::mention::quoted(task)
        .into_iter()
        .filter(|(_, s)| s.trim().len() >= 4)
        .collect();
    let fresh: Vec<bool> = spans.iter().map(|(_, s)| !held.has(&[s])).collect();
    // The old message before the new one first, then after it.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for o in 0..spans.len() {
        for n in o + 1..spans.len() {
            pairs.push((o, n));
        }
    }
    for n in 0..spans.len() {
        for o in n + 1..spans.len() {
            pairs.push((o, n));
        }
    }
    pairs.into_iter().find_map(|(o, n)| {
        let (old, new) = (&spans[o].1, &spans[n].1);
        // Messages are prose: words, not a command line's flags or one name.
        let words = |s: &str| s.split_whitespace().count();
        if !fresh[n] || old == new || words(old) < 2 || words(new) < 3 || new.starts_with('-') {
            return None;
        }
        let placeholder = value_word(old, new, &held)?;
        let reword = Reword {
            old: old.clone(),
            new: new.clone(),
            placeholder,
        };
        let head = reword.head();
        let found = match reword.tail() {
            // The message around its value in one literal that interpolates the value.
            Some(tail) => held.interpolates(head, &reword.placeholder, tail.trim()),
            None => held.has(&[head]),
        };
        (head.trim().len() >= 4 && found).then_some(reword)
    })
}

/// The workspace's string literals, lower-cased, as [`asked`] reads them.
struct Held<'a>(&'a [String]);

impl Held<'_> {
    /// Whether one literal has every one of `parts`.
    fn has(&self, parts: &[&str]) -> bool {
        self.0.iter().any(|t| {
            parts
                .iter()
                .all(|p| t.contains(p.to_ascii_lowercase().as_str()))
        })
    }

    /// Whether one literal has `head` and `tail` but not `value` written after the
    /// head: the value is interpolated there (`"missing key: {key}"`), not text of
    /// the message (`"Missing required field"` has no value after `Missing required`).
    fn interpolates(&self, head: &str, value: &str, tail: &str) -> bool {
        let (head, tail) = (head.to_ascii_lowercase(), tail.to_ascii_lowercase());
        let written = format!("{head}{}", value.to_ascii_lowercase());
        self.0
            .iter()
            .any(|t| t.contains(&head) && !t.contains(&written) && t.contains(&tail))
    }
}

/// The word that stands for the value in `old` and `new` (see [`asked`]): the new
/// message's one stand-in in capitals that the old one lacks (`X`, `N`, `NAME`),
/// else the last word both share that a literal interpolates after the text before it.
fn value_word(old: &str, new: &str, held: &Held<'_>) -> Option<String> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let stand_ins: Vec<String> = words(new)
        .into_iter()
        .filter(|w| {
            w.len() <= 8
                && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && whole_word(old, w).is_none()
        })
        .collect();
    if let [one] = stand_ins.as_slice() {
        return Some(one.clone());
    }
    words(old).into_iter().rev().find(|w| {
        whole_word(new, w).is_some()
            && whole_word(old, w).is_some_and(|i| {
                let tail = old[i + w.len()..].trim();
                i >= 4 && held.interpolates(&old[..i], w, tail)
            })
    })
}

impl Reword {
    /// The old message up to its value (all of it when it names none).
    fn head(&self) -> &str {
        match whole_word(&self.old, &self.placeholder) {
            Some(i) => &self.old[..i],
            None => &self.old,
        }
    }

    /// The old message after its value; `None` when it names no value.
    fn tail(&self) -> Option<&str> {
        whole_word(&self.old, &self.placeholder).map(|i| &self.old[i + self.placeholder.len()..])
    }

    /// The new message around its value.
    fn new_parts(&self) -> (&str, &str) {
        let i = whole_word(&self.new, &self.placeholder).unwrap_or(self.new.len());
        let end = (i + self.placeholder.len()).min(self.new.len());
        (&self.new[..i], &self.new[end..])
    }

    /// Whether `text` mentions the old message at all (ASCII case ignored).
    pub fn mentioned_in(&self, text: &str) -> bool {
        find_ci(text, self.head()).is_some()
    }
}

/// Where `needle` first occurs in `hay`, ASCII case ignored.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    hay.to_ascii_lowercase().find(&needle.to_ascii_lowercase())
}

/// A string literal of the source: its parts by byte offset.
#[derive(Clone, Debug)]
struct Lit {
    range: Range<usize>,
    /// The literal up to its content: prefix letters and the opening quote.
    open: String,
    /// The closing quote.
    close: String,
    content: Range<usize>,
    /// Escapes are not read (a raw string).
    raw: bool,
    /// `{expr}` (Python's f-strings), `${expr}` (JavaScript's templates) or `{name}`
    /// (Rust's format macros) interpolate.
    interpolates: bool,
    /// Its `%` (Go's `…f(` calls, Python's `%` operator) or `{}` (Rust's macros) are
    /// format verbs.
    format: bool,
}

/// The literal at `range` of `text`, split into its parts.
fn literal(lang: Language, text: &str, range: Range<usize>) -> Option<Lit> {
    let s = &text[range.clone()];
    let letters = s.find(|c: char| !(c.is_ascii_alphabetic() || c == '#'))?;
    let prefix = &s[..letters].to_ascii_lowercase();
    let rest = &s[letters..];
    let quote = ["\"\"\"", "'''", "\"", "'", "`"]
        .into_iter()
        .find(|q| rest.starts_with(q))?;
    let hashes = prefix.matches('#').count();
    let close = format!("{quote}{}", "#".repeat(hashes));
    if s.len() < letters + quote.len() + close.len() || !s.ends_with(&close) {
        return None;
    }
    let content = range.start + letters + quote.len()..range.end - close.len();
    let before = text[..range.start].trim_end();
    let after = text[range.end..].trim_start();
    let (raw, interpolates, format) = match lang {
        Language::Python => (
            prefix.contains('r'),
            prefix.contains('f'),
            after.starts_with('%') && !after.starts_with("%="),
        ),
        Language::JavaScript | Language::TypeScript | Language::Tsx => (false, quote == "`", false),
        Language::Go => {
            let callee = before.strip_suffix('(').unwrap_or("");
            (quote == "`", false, callee.ends_with('f'))
        }
        Language::Rust => {
            let macro_arg = before.ends_with("!(");
            (prefix.contains('r'), macro_arg, macro_arg)
        }
        _ => return None,
    };
    Some(Lit {
        range: range.clone(),
        open: s[..letters + quote.len()].to_owned(),
        close,
        content,
        raw,
        interpolates,
        format,
    })
}

impl Lit {
    /// A literal written anew in `lang`: `prefix` (Python's `f`) and `quote`; it
    /// interpolates as an f-string or a template does, and Go's is a format.
    fn fresh(lang: Language, prefix: &str, quote: char) -> Lit {
        Lit {
            range: 0..0,
            open: format!("{prefix}{quote}"),
            close: quote.to_string(),
            content: 0..0,
            raw: false,
            interpolates: prefix == "f" || quote == '`',
            format: lang == Language::Go,
        }
    }

    /// `text` written inside this literal: escapes, doubled braces and percents where
    /// the literal gives them meaning. `None` when a raw literal cannot hold it.
    fn escape(&self, lang: Language, text: &str) -> Option<String> {
        if self.raw {
            return (!text.contains(&self.close) && !text.contains('\n')).then(|| text.to_owned());
        }
        let quote = self.close.chars().next()?;
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c if c == quote && self.close.len() == 1 => {
                    out.push('\\');
                    out.push(c);
                }
                '$' if quote == '`' && chars.peek() == Some(&'{') => out.push_str("\\$"),
                '{' | '}' if self.interpolates && !is_js(lang) => {
                    out.push(c);
                    out.push(c);
                }
                '%' if self.format && lang != Language::Rust => out.push_str("%%"),
                c => out.push(c),
            }
        }
        Some(out)
    }
}

/// What stands for the value inside an old message.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    /// An interpolation, as written (`{key}`, `${address}`).
    Interpolated(String),
    /// A format verb (`%s`, `{}`), its argument elsewhere.
    Verb(String),
    /// The value itself, written out (a test's expected message).
    Text(String),
    /// Nothing: the literal ends with the message's head.
    Absent,
}

/// The value's piece at the start of `rest` (the literal's content after the head),
/// and how long it is.
fn value_at(lang: Language, lit: &Lit, rest: &str, tail: Option<&str>) -> (Value, usize) {
    if rest.is_empty() {
        return (Value::Absent, 0);
    }
    let braced = |open: &str| -> Option<usize> {
        let body = rest.strip_prefix(open)?;
        if open == "{" && body.starts_with('{') {
            return None;
        }
        let mut depth = 1;
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open.len() + i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    };
    if lit.interpolates {
        let open = if is_js(lang) { "${" } else { "{" };
        if let Some(n) = braced(open) {
            let inner = &rest[open.len()..n - 1];
            let verb = lang == Language::Rust && (inner.is_empty() || inner.starts_with(':'));
            let piece = rest[..n].to_owned();
            return (
                if verb {
                    Value::Verb(piece)
                } else {
                    Value::Interpolated(piece)
                },
                n,
            );
        }
    }
    if lit.format
        && lang != Language::Rust
        && let Some(body) = rest.strip_prefix('%')
    {
        let flags = body
            .find(|c: char| !(c.is_ascii_digit() || "-+# .".contains(c)))
            .unwrap_or(body.len());
        if body[flags..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            return (Value::Verb(rest[..flags + 2].to_owned()), flags + 2);
        }
    }
    let end = match tail {
        Some(t) if !t.is_empty() => find_ci(rest, t).unwrap_or(rest.len()),
        _ => rest.len(),
    };
    (Value::Text(rest[..end].to_owned()), end)
}

/// One change to a file: a byte range and what may replace it. A test's expected
/// message whose value is not written has one option per string of the test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    range: Range<usize>,
    options: Vec<String>,
}

impl Edit {
    /// Whether the tests must say which option is right.
    pub fn open(&self) -> bool {
        self.options.len() > 1
    }
}

/// `text` with `edits` applied, option `choice[k]` for edit `k` (the first for any
/// edit `choice` does not reach).
pub fn compose(text: &str, edits: &[Edit], choice: &[usize]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (k, e) in edits.iter().enumerate() {
        let pick = choice.get(k).copied().unwrap_or(0);
        out.push_str(&text[at..e.range.start]);
        out.push_str(e.options.get(pick).map_or("", String::as_str));
        at = e.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The expression added to a message by `+` right after `end` (`"…: " + s`), and
/// where it ends; `None` when no `+` follows, or more follows it.
fn concatenated(text: &str, end: usize) -> Option<(String, usize)> {
    let after = &text[end..];
    let plus = after.len() - after.trim_start().len();
    let rest = after.trim_start().strip_prefix('+')?;
    let start = end + plus + 1 + (rest.len() - rest.trim_start().len());
    let mut depth = 0i32;
    let mut stop = text.len();
    for (i, c) in text[start..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => {
                stop = start + i;
                break;
            }
            ')' | ']' | '}' => depth -= 1,
            ',' | ';' | '\n' | '+' | '"' | '\'' | '`' if depth == 0 => {
                stop = start + i;
                break;
            }
            _ => {}
        }
    }
    if text[stop..].starts_with('+') {
        return None;
    }
    let expr = text[start..stop].trim_end();
    (!expr.is_empty()).then(|| (expr.to_owned(), start + expr.len()))
}

/// The value a message with none in it is about: the single argument of the last
/// call in the nearest `if` condition above it, within a few lines
/// (`if (!isEmail(form.email)) …` → `form.email`).
fn tested_value(text: &str, at: usize) -> Option<String> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let above = &text[..line_start];
    let mut lines: Vec<&str> = vec![&text[line_start..at]];
    lines.extend(above.lines().rev().take(4));
    for line in lines {
        let keyword = line
            .match_indices("if")
            .find(|(i, _)| {
                !line[..*i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                    && line[i + 2..].starts_with([' ', '('])
            })
            .map(|(i, _)| i);
        let Some(cond) = keyword.map(|i| &line[i + 2..]) else {
            continue;
        };
        let mut best = None;
        for (open, _) in cond.match_indices('(') {
            let callee = cond[..open]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            let Some(close) = cond[open + 1..].find(')') else {
                continue;
            };
            let arg = cond[open + 1..open + 1 + close].trim();
            if callee && !arg.is_empty() && !arg.contains(['(', ',']) {
                best = Some(arg.to_owned());
            }
        }
        if best.is_some() {
            return best;
        }
    }
    None
}

/// The strings of the test around `at` that a value may be: on its line first, then
/// the lines around it, nearest first: above up to where the test starts, and a few
/// below (Python's `with self.assertRaises…:` has the call under it).
fn test_strings(lang: Language, text: &str, literals: &[Range<usize>], at: usize) -> Vec<String> {
    let line_of = |i: usize| text[..i].matches('\n').count();
    let here = line_of(at);
    let starts = |line: &str| {
        let l = line.trim_start();
        [
            "test(",
            "it(",
            "def test",
            "func Test",
            "#[test]",
            "fn test",
        ]
        .iter()
        .any(|s| l.starts_with(s))
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut first = here;
    while first > 0 && here - first < 12 && !lines.get(first).is_some_and(|l| starts(l)) {
        first -= 1;
    }
    let mut last = here;
    while last + 1 < lines.len() && last - here < 3 && !starts(lines[last + 1]) {
        last += 1;
    }
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    for r in literals {
        let line = line_of(r.start);
        if line < first || line > last || r.start == at {
            continue;
        }
        let Some(lit) = literal(lang, text, r.clone()) else {
            continue;
        };
        let s = &text[lit.content.clone()];
        if !s.is_empty() && s.len() <= 60 && !s.contains(['\\', '\n']) {
            found.push((here.abs_diff(line), r.start.abs_diff(at), s.to_owned()));
        }
    }
    found.sort();
    let mut out: Vec<String> = Vec::new();
    for (.., s) in found {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The message built anew around `expr` in `lang`'s interpolation, keeping the
/// literal's text before the message (`before`); `None` where the language has none
/// this path writes.
fn interpolated(
    lang: Language,
    reword: &Reword,
    before: &str,
    expr: &str,
    string_typed: bool,
) -> Option<String> {
    let (head, tail) = reword.new_parts();
    // The new literal's prefix and quote, how the value goes in, the message around it.
    let (prefix, quote, value, head, tail) = match lang {
        Language::Python => {
            let q = if head.contains('"') || tail.contains('"') || expr.contains('"') {
                '\''
            } else {
                '"'
            };
            if expr.contains(q) || expr.contains('\\') {
                return None;
            }
            ("f", q, format!("{{{expr}}}"), head, tail)
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            ("", '`', format!("${{{expr}}}"), head, tail)
        }
        Language::Go => {
            let (h, t, verb) = go_verb(head, tail, if string_typed { "%s" } else { "%v" });
            ("", '"', verb.to_owned(), h, t)
        }
        _ => return None,
    };
    let lit = Lit::fresh(lang, prefix, quote);
    let text = format!(
        "{}{}{}{value}{}{}",
        lit.open,
        lit.escape(lang, before)?,
        lit.escape(lang, head)?,
        lit.escape(lang, tail)?,
        lit.close
    );
    Some(if lang == Language::Go {
        format!("fmt.Sprintf({text}, {expr})")
    } else {
        text
    })
}

/// Go's verb for a value the new message quotes (`"X"`): `%q` quotes a string as the
/// message shows it, so the quotes go; any other keeps `verb` and its quotes.
fn go_verb<'a>(head: &'a str, tail: &'a str, verb: &'a str) -> (&'a str, &'a str, &'a str) {
    match (head.strip_suffix('"'), tail.strip_prefix('"')) {
        (Some(h), Some(t)) if matches!(verb, "%s" | "%q") => (h, t, "%q"),
        _ => (head, tail, verb),
    }
}

/// Whether `lang` is JavaScript or TypeScript (`${…}` templates).
fn is_js(lang: Language) -> bool {
    matches!(
        lang,
        Language::JavaScript | Language::TypeScript | Language::Tsx
    )
}

/// One literal's edit, or why it cannot be made. `Ok(None)`: the literal holds no
/// occurrence of the message (another message with the same words).
fn literal_edit(
    lang: Language,
    text: &str,
    literals: &[Range<usize>],
    lit: &Lit,
    reword: &Reword,
    test_file: bool,
) -> Result<Option<Edit>, String> {
    let content = &text[lit.content.clone()];
    let head = reword.head();
    let Some(h) = find_ci(content, head) else {
        return Ok(None);
    };
    let mut rest_at = h + head.len();
    let tail = reword.tail();
    if tail.is_none() && rest_at < content.len() {
        // A message that names no value may carry one after a colon.
        let after = &content[rest_at..];
        let Some(value) = after.strip_prefix(':') else {
            return Ok(None);
        };
        rest_at += 1 + (value.len() - value.trim_start().len());
    }
    let (value, n) = value_at(lang, lit, &content[rest_at..], tail);
    let mut end = rest_at + n;
    if let Some(t) = tail
        && value != Value::Absent
    {
        if !content[end..]
            .to_ascii_lowercase()
            .starts_with(&t.to_ascii_lowercase())
        {
            return Ok(None);
        }
        end += t.len();
    }
    let (before, after) = (&content[..h], &content[end..]);
    let (nhead, ntail) = reword.new_parts();
    let rewritten = |piece: &str, nhead: &str, ntail: &str| -> Option<String> {
        Some(format!(
            "{}{}{}{piece}{}{}{}",
            lit.open,
            &before,
            lit.escape(lang, nhead)?,
            lit.escape(lang, ntail)?,
            after,
            lit.close
        ))
    };
    let cannot = |what: &str| {
        format!(
            "cannot rewrite {what} `{}`",
            &text[lit.range.clone()].chars().take(80).collect::<String>()
        )
    };
    let single = |s: Option<String>, what: &str| {
        s.map(|s| {
            Some(Edit {
                range: lit.range.clone(),
                options: vec![s],
            })
        })
        .ok_or_else(|| cannot(what))
    };
    match value {
        Value::Interpolated(piece) => single(rewritten(&piece, nhead, ntail), "the interpolation"),
        Value::Verb(verb) => {
            let (h, t, v) = if lang == Language::Go {
                go_verb(nhead, ntail, &verb)
            } else {
                (nhead, ntail, verb.as_str())
            };
            single(rewritten(v, h, t), "the format")
        }
        Value::Text(x) => {
            let whole = lit.escape(lang, &format!("{nhead}{x}{ntail}"));
            single(whole.and_then(|w| rewritten(&w, "", "")), "the message")
        }
        Value::Absent => {
            if let Some((expr, stop)) = concatenated(text, lit.range.end) {
                let new = interpolated(lang, reword, before, &expr, true)
                    .ok_or_else(|| cannot("the concatenation"))?;
                return Ok(Some(go_call(lang, text, lit.range.start..stop, new)));
            }
            if test_file {
                let options: Vec<String> = test_strings(lang, text, literals, lit.range.start)
                    .iter()
                    .filter(|s| !reword.mentioned_in(s))
                    .filter_map(|x| {
                        let whole = format!("{nhead}{x}{ntail}");
                        rewritten(&lit.escape(lang, &whole)?, "", "")
                    })
                    .collect();
                if options.is_empty() {
                    return Err(cannot(
                        "the expected message (no string to take its value from)",
                    ));
                }
                return Ok(Some(Edit {
                    range: lit.range.clone(),
                    options,
                }));
            }
            let expr = tested_value(text, lit.range.start)
                .ok_or_else(|| cannot("the message (no tested value above it)"))?;
            let new = interpolated(lang, reword, before, &expr, false)
                .ok_or_else(|| cannot("the message"))?;
            Ok(Some(go_call(lang, text, lit.range.clone(), new)))
        }
    }
}

/// The edit that puts `new` at `range`; in Go, `errors.New(fmt.Sprintf(…))` is written
/// `fmt.Errorf(…)`.
fn go_call(lang: Language, text: &str, range: Range<usize>, new: String) -> Edit {
    if lang == Language::Go
        && let Some(args) = new.strip_prefix("fmt.Sprintf(")
    {
        let before = text[..range.start].trim_end();
        let after = text[range.end..].trim_start();
        if let Some(call) = before.strip_suffix("errors.New(")
            && after.starts_with(')')
        {
            let start = call.len();
            let end = text.len() - after.len() + 1;
            return Edit {
                range: start..end,
                options: vec![format!("fmt.Errorf({args}")],
            };
        }
    }
    Edit {
        range,
        options: vec![new],
    }
}

/// Go's imports made right after a rewrite: `fmt` added where the text now calls it,
/// `errors` dropped where nothing uses it any more.
pub fn go_imports(text: &str) -> String {
    let mut out = text.to_owned();
    let imported = |t: &str, pkg: &str| {
        t.lines().any(|l| {
            let l = l.trim();
            l == format!("\"{pkg}\"") || l == format!("import \"{pkg}\"")
        })
    };
    if out.contains("fmt.") && !imported(&out, "fmt") {
        let lone = "\nimport \"errors\"\n";
        if !out.contains("errors.") && out.contains(lone) {
            out = out.replacen(lone, "\nimport \"fmt\"\n", 1);
        } else if let Some(at) = out.find("import (\n") {
            out.insert_str(at + "import (\n".len(), "\t\"fmt\"\n");
        } else if let Some(at) = out
            .find("\npackage ")
            .map(|i| i + 1)
            .or_else(|| out.starts_with("package ").then_some(0))
        {
            let eol = out[at..].find('\n').map_or(out.len(), |i| at + i + 1);
            out.insert_str(eol, "\nimport \"fmt\"\n");
        }
    }
    let uses_errors = out.contains("errors.");
    if !uses_errors && imported(&out, "errors") {
        out = out
            .lines()
            .filter(|l| !matches!(l.trim(), "\"errors\"" | "import \"errors\""))
            .map(|l| format!("{l}\n"))
            .collect();
        if !text.ends_with('\n') {
            out.pop();
        }
    }
    out
}

/// The edits that reword every occurrence of the message in `text` (a file in
/// `lang`; `test_file` for a test, whose expected messages follow the code's), in
/// order; an error names an occurrence this path cannot rewrite.
pub fn edits(
    lang: Language,
    text: &str,
    reword: &Reword,
    test_file: bool,
) -> Result<Vec<Edit>, String> {
    let literals = agentls_index::string_literals(lang, text);
    let mut out: Vec<Edit> = Vec::new();
    for r in &literals {
        if out.last().is_some_and(|e| e.range.end > r.start) {
            continue;
        }
        if !reword.mentioned_in(&text[r.clone()]) {
            continue;
        }
        let lit = literal(lang, text, r.clone())
            .ok_or_else(|| format!("cannot read the string `{}`", &text[r.clone()]))?;
        if let Some(edit) = literal_edit(lang, text, &literals, &lit, reword, test_file)? {
            if out.last().is_some_and(|e| e.range.end > edit.range.start) {
                return Err("two rewrites overlap".to_owned());
            }
            out.push(edit);
        }
    }
    Ok(out)
}

/// Most test runs spent finding the values of the tests' expected messages.
const TRIALS: usize = 40;

/// One file the reword changes, with the edits still to compose.
struct Planned {
    path: std::path::PathBuf,
    lang: Language,
    before: String,
    edits: Vec<Edit>,
}

impl Planned {
    /// The file's text with `choice` for its open edits, imports made right.
    fn text(&self, choice: &[usize]) -> String {
        let text = compose(&self.before, &self.edits, choice);
        if self.lang == Language::Go {
            go_imports(&text)
        } else {
            text
        }
    }
}

/// The edits of every indexed file that mentions the old message (protected paths
/// aside), or why one occurrence cannot be rewritten.
fn plan(
    root: &std::path::Path,
    index: &agentls_index::Index,
    read: impl Fn(&std::path::Path) -> Option<String>,
    reword: &Reword,
    protected: &[String],
) -> Result<Vec<Planned>, String> {
    let mut paths: Vec<std::path::PathBuf> = index
        .paths()
        .filter(|p| !super::localise::is_protected(p.strip_prefix(root).unwrap_or(p), protected))
        .map(|p| p.to_path_buf())
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let Some(lang) = Language::from_path(&path) else {
            continue;
        };
        let Some(before) = read(&path) else {
            continue;
        };
        if !reword.mentioned_in(&before) {
            continue;
        }
        let test = super::localise::is_test_file(root, &path);
        let shown = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let edits = edits(lang, &before, reword, test).map_err(|e| format!("{shown}: {e}"))?;
        if !edits.is_empty() {
            out.push(Planned {
                path,
                lang,
                before,
                edits,
            });
        }
    }
    Ok(out)
}

/// Rewords the message `task` asks for in every file that has it, settles the test
/// messages whose value is not written by running the tests, verifies and lands the
/// result as one edit. `None` when the task asks for no reword, or an occurrence is
/// one this path cannot rewrite: the other ways take it.
async fn solve(
    ctx: &agentls_tools::ToolContext,
    task: &str,
    config: &super::SolveConfig,
    events: Option<&crate::event::EventSender>,
    reword: Reword,
) -> Option<super::Solved> {
    let started = std::time::Instant::now();
    let (index, store, limits) = (ctx.index.clone(), ctx.store.clone(), ctx.read_limits);
    let (root, protected) = (ctx.root.clone(), super::localise::protected(task));
    let wanted = reword.clone();
    let planned = tokio::task::spawn_blocking(move || {
        let index = index.read().unwrap_or_else(|p| p.into_inner());
        let read = |p: &std::path::Path| store.read(p, &limits).ok().map(|s| s.rope.to_string());
        plan(&root, &index, read, &wanted, &protected)
    })
    .await
    .ok()?;
    let planned = match planned {
        Ok(p) if !p.is_empty() => p,
        Ok(_) => {
            tracing::info!("solve: the message to reword occurs nowhere");
            return None;
        }
        Err(e) => {
            tracing::info!("solve: not reworded here: {e}");
            return None;
        }
    };
    let shown = |p: &std::path::Path| p.strip_prefix(&ctx.root).unwrap_or(p).display().to_string();
    let count: usize = planned.iter().map(|p| p.edits.len()).sum();
    let files: Vec<String> = planned.iter().map(|p| shown(&p.path)).collect();
    let target = format!(
        "reword `{}` → `{}`: {count} message(s) in {} file(s) ({})",
        reword.old,
        reword.new,
        files.len(),
        files.join(", ")
    );
    let progress = super::Progress::new(events);
    progress.start(serde_json::json!({ "targets": [target.clone()], "samples": 1 }));
    progress.line(target.clone());
    let verifier = super::Verifier::detected(ctx).await;
    let baseline = verifier.verify_files(&[]).await;
    progress.line(format!("the workspace as it is: {}", baseline.phrase()));

    // Every open edit starts at its first option; each other option is kept when the
    // tests fail less with it.
    let mut choice: Vec<Vec<usize>> = planned.iter().map(|p| vec![0; p.edits.len()]).collect();
    let verify = async |choice: &[Vec<usize>]| {
        let texts: Vec<String> = planned.iter().zip(choice).map(|(p, c)| p.text(c)).collect();
        let laid: Vec<(&std::path::Path, &str)> = planned
            .iter()
            .zip(&texts)
            .map(|(p, t)| (p.path.as_path(), t.as_str()))
            .collect();
        verifier.verify_files(&laid).await
    };
    let failing = |v: &super::Verdict| -> u32 {
        match &v.tests {
            Some(t) if !t.ok => t.counts.map_or(u32::MAX, |(_, f)| f.max(1)),
            _ if !v.builds() => u32::MAX,
            _ => 0,
        }
    };
    let mut verdict = verify(&choice).await;
    let (mut settled, mut trials) = (0, 0);
    for (f, p) in planned.iter().enumerate() {
        for (k, e) in p.edits.iter().enumerate() {
            if !e.open() || failing(&verdict) == 0 {
                continue;
            }
            for option in 1..e.options.len() {
                if trials == TRIALS {
                    break;
                }
                trials += 1;
                let mut tried = choice.clone();
                tried[f][k] = option;
                let v = verify(&tried).await;
                if failing(&v) < failing(&verdict) {
                    progress.line(format!(
                        "{}: the expected message {}: {}",
                        shown(&p.path),
                        e.options[option],
                        v.phrase()
                    ));
                    choice = tried;
                    verdict = v;
                    settled += 1;
                    break;
                }
            }
        }
    }
    progress.line(format!("reworded: {}", verdict.phrase()));
    let open = planned
        .iter()
        .flat_map(|p| &p.edits)
        .filter(|e| e.open())
        .count();
    let mut done = format!(
        "Reworded `{}` as `{}`: {count} message(s) in {} file(s)",
        reword.old,
        reword.new,
        files.len()
    );
    if open > 0 {
        done.push_str(&format!(
            "; {settled} of {open} expected message(s) in the tests took their value from the test's own strings, chosen by running the tests"
        ));
    }
    let changes = planned
        .iter()
        .zip(&choice)
        .map(|(p, c)| super::land::FileChange {
            path: p.path.clone(),
            before: p.before.clone(),
            after: p.text(c),
        })
        .collect();
    let made = super::land::Made {
        target,
        done,
        workspace: "the reworded workspace",
        tests: verifier.checks().tests.clone(),
        started,
        verify_ms: verifier.spent_ms(),
    };
    let solved =
        super::land::settle(ctx, config, &progress, made, (&baseline, &verdict), changes).await;
    Some(solved)
}

/// The contents of the string literals of `text`, ASCII lower-cased: where messages
/// are written (code quoted in a task is not one).
fn literal_texts(lang: Language, text: &str) -> Vec<String> {
    agentls_index::string_literals(lang, text)
        .into_iter()
        .filter_map(|r| text.get(r))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// The model-free reword: a message the task quotes, found in the workspace's
/// string literals, rewritten in each literal's idiom with the tests following.
pub(super) struct Rewording;

#[async_trait::async_trait]
impl super::strategy::Strategy for Rewording {
    fn name(&self) -> &'static str {
        "reword"
    }

    fn plan(&self, scene: &super::strategy::Scene<'_>) -> Option<super::strategy::Plan> {
        let texts: Vec<String> = scene
            .index
            .paths()
            .filter_map(|p| Some((Language::from_path(p)?, scene.read(p)?)))
            .flat_map(|(lang, text)| literal_texts(lang, &text))
            .collect();
        let reword = asked(scene.task, &texts)?;
        Some(super::strategy::Plan {
            why: format!(
                "the workspace has the quoted `{}`, not `{}`",
                reword.head().trim(),
                reword.new
            ),
            work: Box::new(reword),
        })
    }

    async fn run(
        &self,
        cx: &super::strategy::Cx<'_>,
        work: super::strategy::Work,
    ) -> Option<super::Solved> {
        let Ok(reword) = work.downcast::<Reword>().map(|r| *r) else {
            return None;
        };
        solve(cx.ctx, cx.task, cx.config, cx.events, reword).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reworded(lang: Language, text: &str, reword: &Reword, test: bool) -> String {
        let edits = edits(lang, text, reword, test).expect("rewritable");
        let out = compose(text, &edits, &[]);
        if lang == Language::Go {
            go_imports(&out)
        } else {
            out
        }
    }

    /// A workspace's literals, as [`asked`] takes them.
    fn held(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_ascii_lowercase()).collect()
    }

    #[test]
    fn the_task_names_the_old_message_the_new_one_and_the_value() {
        let go = asked("Errors say `bad size: N` today. Make them read `size \"N\" is out of range`, with the given text where N is. Keep the tests green.", &held(&["fmt.Errorf(\"bad size: %s\", s)"])).unwrap();
        assert_eq!(
            (go.old.as_str(), go.new.as_str(), go.placeholder.as_str()),
            ("bad size: N", "size \"N\" is out of range", "N")
        );
        assert_eq!((go.head(), go.tail()), ("bad size: ", Some("")));
        // The old message quoted in double quotes, naming no value.
        let js = asked(
            "Our \"Bad name\" errors confuse people: the message should be `name \"X\" is taken`.",
            &held(&["throw new Error('Bad name')"]),
        )
        .unwrap();
        assert_eq!((js.head(), js.tail()), ("Bad name", None));
        assert_eq!(js.new_parts(), ("name \"", "\" is taken"));
        // The value's word is a real one of the example.
        let py = asked(
            "It says `no such user: bob`; I'd rather it said `user 'bob' does not exist`.",
            &held(&["raise KeyError(f\"no such user: {name}\")"]),
        )
        .unwrap();
        assert_eq!((py.head(), py.tail()), ("no such user: ", Some("")));
        assert_eq!(asked("Rename `a` to `b` exactly.", &held(&["a = 1"])), None);
        // A message kept and extended with a value the code must work out is no reword.
        assert_eq!(
            asked(
                "\"Missing required field\" is useless: make it say `Missing required field: customerId`.",
                &held(&["Missing required field"])
            ),
            None
        );
        assert_eq!(
            asked("Fix the off-by-one in `span`.", &held(&["fn span()"])),
            None
        );
        // The new message is one the workspace has already: nothing to reword.
        assert_eq!(
            asked(
                "`bad size: N` or `size N is bad`?",
                &held(&["bad size: N", "size N is bad"])
            ),
            None
        );
    }

    #[test]
    fn go_keeps_its_verbs_and_turns_concatenation_into_errorf() {
        let reword = asked("Says `bad size: N`. Make it exactly `size \"N\" is out of range`, the text in place of N.", &held(&["\"bad size: \""])).unwrap();
        let src = "package box\n\nimport (\n\t\"errors\"\n\t\"strconv\"\n)\n\nfunc A(s string) error {\n\treturn errors.New(\"bad size: \" + s)\n}\n\nfunc B(s string) error {\n\t_, err := strconv.Atoi(s)\n\tif err != nil {\n\t\treturn fmt.Errorf(\"bad size: %s\", s)\n\t}\n\treturn fmt.Errorf(\"empty %q\", s)\n}\n";
        let out = reworded(Language::Go, src, &reword, false);
        assert!(
            out.contains("return fmt.Errorf(\"size %q is out of range\", s)\n}\n\nfunc B"),
            "{out}"
        );
        assert!(
            out.contains("\t\treturn fmt.Errorf(\"size %q is out of range\", s)\n\t}"),
            "{out}"
        );
        assert!(
            out.contains("fmt.Errorf(\"empty %q\", s)"),
            "other messages stay: {out}"
        );
        assert!(
            out.contains("import (\n\t\"fmt\"\n\t\"strconv\"\n)"),
            "{out}"
        );
        assert!(agentls_index::syntax_errors(Language::Go, &out).is_empty());
        let test = "package box\n\nfunc TestA(t *testing.T) {\n\tif A(\"x1\").Error() != \"bad size: x1\" {\n\t\tt.Fatal()\n\t}\n}\n";
        let out = reworded(Language::Go, test, &reword, true);
        assert!(
            out.contains("!= \"size \\\"x1\\\" is out of range\" {"),
            "{out}"
        );
    }

    #[test]
    fn python_keeps_percent_and_f_strings_and_interpolates_concatenation() {
        let reword = asked("It says `no such user: bob`; make it say exactly `user 'bob' does not exist` (with the name in place of bob).", &held(&["no such user: "])).unwrap();
        let src = "def a(name):\n    raise KeyError(\"no such user: %s\" % name)\n\ndef b(names):\n    raise KeyError('no such user: ' + names[0])\n\ndef c(name):\n    raise KeyError(f\"no such user: {name}\")\n\n# no such user: in a comment stays\n";
        let out = reworded(Language::Python, src, &reword, false);
        assert!(
            out.contains("KeyError(\"user '%s' does not exist\" % name)"),
            "{out}"
        );
        assert!(
            out.contains("KeyError(f\"user '{names[0]}' does not exist\")"),
            "{out}"
        );
        assert!(
            out.contains("KeyError(f\"user '{name}' does not exist\")"),
            "{out}"
        );
        assert!(out.contains("# no such user: in a comment stays"));
        let test = "class T(unittest.TestCase):\n    def test_a(self):\n        with self.assertRaisesRegex(KeyError, 'no such user: ann'):\n            a('ann')\n";
        let out = reworded(Language::Python, test, &reword, true);
        assert!(
            out.contains("KeyError, 'user \\'ann\\' does not exist')"),
            "{out}"
        );
    }

    #[test]
    fn a_message_without_its_value_takes_the_one_its_if_tested() {
        let reword = asked("The \"Bad name\" errors must read exactly `name \"X\" is taken` with the name in place of X.", &held(&["Bad name"])).unwrap();
        let src = "function a(form) {\n  if (!isFree(form.name)) {\n    throw new Error('Bad name');\n  }\n  if (taken(form.alias)) errors.alias = 'Bad name';\n  return `Bad name: ${form.nick}`;\n}\n";
        let out = reworded(Language::JavaScript, src, &reword, false);
        assert!(
            out.contains("throw new Error(`name \"${form.name}\" is taken`);"),
            "{out}"
        );
        assert!(
            out.contains("errors.alias = `name \"${form.alias}\" is taken`;"),
            "{out}"
        );
        assert!(
            out.contains("return `name \"${form.nick}\" is taken`;"),
            "{out}"
        );
        // Without an `if` above it there is nothing to take the value from.
        assert!(
            edits(
                Language::JavaScript,
                "const m = 'Bad name';\n",
                &reword,
                false
            )
            .is_err()
        );
    }

    #[test]
    fn a_tests_expected_message_without_its_value_offers_the_tests_strings() {
        let reword = asked("The \"Bad name\" errors must read exactly `name \"X\" is taken` with the name in place of X.", &held(&["Bad name"])).unwrap();
        let test = "test('a', () => {\n  assert.deepStrictEqual(check({ name: 'ann', age: 'x' }), {\n    name: 'Bad name',\n  });\n  assert.deepStrictEqual(list('bo, cy'), ['Bad name: cy']);\n});\n";
        let edits = edits(Language::JavaScript, test, &reword, true).unwrap();
        assert_eq!(edits.len(), 2);
        assert!(edits[0].open());
        assert!(
            edits[0]
                .options
                .contains(&"'name \"ann\" is taken'".to_owned()),
            "{:?}",
            edits[0].options
        );
        assert!(!edits[1].open());
        let right = edits[0]
            .options
            .iter()
            .position(|o| o.contains("ann"))
            .unwrap();
        let out = compose(test, &edits, &[right]);
        assert!(out.contains("name: 'name \"ann\" is taken',"), "{out}");
        assert!(out.contains("['name \"cy\" is taken']"), "{out}");
    }

    /// Of the suite's tasks, only those that reword a message are taken this way (the
    /// `-message-` tasks ask for a message the code must compute, or one it keeps
    /// and extends: the model's).
    #[test]
    fn only_message_tasks_of_the_suite_are_rewords() {
        for (name, prompt) in super::super::fixtures::prompts() {
            let texts: Vec<String> = super::super::fixtures::repo_files(&name)
                .into_iter()
                .filter_map(|(path, text)| Some((Language::from_path(&path)?, text)))
                .flat_map(|(lang, text)| literal_texts(lang, &text))
                .collect();
            assert_eq!(
                asked(&prompt, &texts).is_some(),
                name.ends_with("-error-message"),
                "{name}: {prompt}"
            );
        }
    }

    #[test]
    fn imports_follow_what_go_code_uses() {
        let one = "package p\n\nimport \"errors\"\n\nvar E = fmt.Errorf(\"x\")\n";
        assert_eq!(
            go_imports(one),
            "package p\n\nimport \"fmt\"\n\nvar E = fmt.Errorf(\"x\")\n"
        );
        let kept = "package p\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n)\n\nvar E = errors.New(fmt.Sprint(1))\n";
        assert_eq!(go_imports(kept), kept);
    }
}
