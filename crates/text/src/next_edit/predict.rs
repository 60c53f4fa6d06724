//! Model-free next edits: what the user's last burst implies elsewhere in the text.
//!
//! - **Rename.** The burst changed one identifier into another (`count` -> `total`,
//!   the whole word before and after being an identifier): the same change at every
//!   other whole-word occurrence of the old name in the scope the caller gives (the
//!   enclosing function, or the whole document), an occurrence after a `.` only when
//!   the renamed one was after a `.` too (a field is not a local of the same name).
//! - **Signature.** The burst added one parameter to a function definition (`fn`, `def`,
//!   `function`, `func`): at every call of the function with the old number of
//!   arguments, the parameter's name as a placeholder argument in the new slot. A
//!   parameter with a default value needs no argument and gives nothing.
//!
//! Gates: a suggestion that would undo the burst, or change nothing, is dropped
//! ([`undoes`]); whether the user is still typing the word is the caller's call, from
//! [`word_being_typed`] and the time of the burst's last keystroke.

use std::ops::Range;

use super::history::Burst;

/// Suggestions kept per prediction.
pub const MAX_EDITS: usize = 100;

/// One suggested edit: replace `range` (chars of the current text) with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The chars replaced.
    pub range: Range<usize>,
    /// Their replacement.
    pub text: String,
}

/// What the burst was, and the edits that follow from it, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// What the user did.
    pub kind: Kind,
    /// The edits that follow, sorted and disjoint.
    pub edits: Vec<Suggestion>,
}

/// What the user's burst was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// An identifier renamed.
    Rename {
        /// The name before.
        from: String,
        /// The name after.
        to: String,
    },
    /// A parameter added to a function.
    Parameter {
        /// The function.
        function: String,
        /// The parameter's name.
        name: String,
    },
    /// A model's rewrite of the lines around the cursor ([`super::rewrite`]).
    Rewrite {
        /// The model.
        model: String,
    },
}

/// A parameter added to a function's definition: how its calls change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedParameter {
    /// The function's name.
    pub function: String,
    /// The parameter's name (the placeholder argument).
    pub name: String,
    /// Arguments a call had before (receiver not counted).
    pub old_count: usize,
    /// The new argument's slot (receiver not counted).
    pub slot: usize,
    /// Where the definition's name is (not a call).
    pub definition: usize,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn is_ident(w: &[char]) -> bool {
    w.first().is_some_and(|c| !c.is_ascii_digit()) && w.iter().all(|c| is_word(*c))
}

/// The identifier around `range` (which it contains or borders).
fn word_around(text: &[char], range: &Range<usize>) -> Range<usize> {
    let mut start = range.start.min(text.len());
    while start > 0 && is_word(text[start - 1]) {
        start -= 1;
    }
    let mut end = range.end.min(text.len()).max(start);
    while end < text.len() && is_word(text[end]) {
        end += 1;
    }
    start..end
}

/// Whether `cursor` touches the identifier the burst ends in: the word the user may
/// still be typing.
pub fn word_being_typed(text: &[char], burst: &Burst, cursor: usize) -> bool {
    let r = burst.range();
    let end = r.end.min(text.len());
    let in_word = (end > 0 && is_word(text[end - 1])) || text.get(end).is_some_and(|c| is_word(*c));
    if !in_word {
        return false;
    }
    let w = word_around(text, &(end..end));
    w.start <= cursor && cursor <= w.end
}

/// The next edits the burst implies in `text` (the document now), renames looked for
/// in `scope` (chars; the whole text when `None`).
pub fn predict(text: &[char], burst: &Burst, scope: Option<Range<usize>>) -> Option<Prediction> {
    let prediction = rename(text, burst, scope).or_else(|| {
        let added = added_parameter(text, burst)?;
        let edits = call_sites(text, &added);
        Some(Prediction {
            kind: Kind::Parameter {
                function: added.function.clone(),
                name: added.name.clone(),
            },
            edits,
        })
    })?;
    let edits: Vec<_> = prediction
        .edits
        .into_iter()
        .filter(|s| !undoes(text, burst, s))
        .take(MAX_EDITS)
        .collect();
    (!edits.is_empty()).then_some(Prediction {
        edits,
        ..prediction
    })
}

/// Whether applying `s` would take the burst back, or change nothing.
pub fn undoes(text: &[char], burst: &Burst, s: &Suggestion) -> bool {
    let Some(here) = text.get(s.range.clone()) else {
        return true;
    };
    if here.iter().copied().eq(s.text.chars()) {
        return true;
    }
    let r = burst.range();
    if s.range.start < r.start || s.range.end > r.end || r.end > text.len() {
        return false;
    }
    let after: String = text[r.start..s.range.start]
        .iter()
        .copied()
        .chain(s.text.chars())
        .chain(text[s.range.end..r.end].iter().copied())
        .collect();
    after == burst.old
}

fn rename(text: &[char], burst: &Burst, scope: Option<Range<usize>>) -> Option<Prediction> {
    let r = burst.range();
    if r.end > text.len() || !burst.old.chars().chain(burst.new.chars()).all(is_word) {
        return None;
    }
    let w = word_around(text, &r);
    let to = &text[w.clone()];
    let from: Vec<char> = text[w.start..r.start]
        .iter()
        .copied()
        .chain(burst.old.chars())
        .chain(text[r.end..w.end].iter().copied())
        .collect();
    if !is_ident(to) || !is_ident(&from) || to == from.as_slice() {
        return None;
    }
    let dotted = |at: usize| at > 0 && text[at - 1] == '.';
    let renamed_dotted = dotted(w.start);
    let scope = scope.unwrap_or(0..text.len());
    let new: String = to.iter().collect();
    let edits = occurrences(text, &from, scope)
        .filter(|at| dotted(*at) == renamed_dotted)
        .map(|at| Suggestion {
            range: at..at + from.len(),
            text: new.clone(),
        })
        .collect();
    Some(Prediction {
        kind: Kind::Rename {
            from: from.iter().collect(),
            to: new,
        },
        edits,
    })
}

/// Where `word` occurs whole in `text[scope]`.
fn occurrences<'a>(
    text: &'a [char],
    word: &'a [char],
    scope: Range<usize>,
) -> impl Iterator<Item = usize> + 'a {
    let end = scope.end.min(text.len());
    let start = scope.start.min(end);
    (start..end.saturating_sub(word.len().saturating_sub(1))).filter(move |&at| {
        text.get(at..at + word.len()) == Some(word)
            && (at == 0 || !is_word(text[at - 1]))
            && text.get(at + word.len()).is_none_or(|c| !is_word(*c))
    })
}

const DEFINING: &[&str] = &["fn", "def", "function", "func"];
const RECEIVERS: &[&str] = &["self", "&self", "&mut self", "mut self", "cls", "this"];

/// The parameter the burst added to a function definition, if it did.
pub fn added_parameter(text: &[char], burst: &Burst) -> Option<AddedParameter> {
    let r = burst.range();
    let open = unmatched_open(text, r.start)?;
    let close = matching_close(text, open)?;
    if r.end > close {
        return None;
    }
    let (function, definition, keyword) = defined_name(text, open)?;
    let now: String = text[open + 1..close].iter().collect();
    let before: String = text[open + 1..r.start]
        .iter()
        .copied()
        .chain(burst.old.chars())
        .chain(text[r.end..close].iter().copied())
        .collect();
    let (old, new) = (split_top(&before), split_top(&now));
    if new.len() != old.len() + 1 {
        return None;
    }
    let k = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    if old[k..] != new[k + 1..] {
        return None;
    }
    let added = new[k];
    let name = parameter_name(added, &keyword)?;
    let receiver = usize::from(old.first().is_some_and(|p| RECEIVERS.contains(p)));
    Some(AddedParameter {
        function,
        name,
        old_count: old.len().checked_sub(receiver)?,
        slot: k.checked_sub(receiver)?,
        definition,
    })
}

/// The name a complete parameter declares (`mut x: u32` -> `x`), `None` while it is
/// incomplete or when it has a default (calls need no argument).
fn parameter_name(param: &str, keyword: &str) -> Option<String> {
    if param.contains('=') || param.contains('?') {
        return None;
    }
    let p = param.trim_start_matches(['&', '*', '.']);
    let p = p.strip_prefix("mut ").unwrap_or(p).trim_start();
    let name: String = p.chars().take_while(|c| is_word(*c)).collect();
    let rest = p[name.len()..].trim();
    let typed = match keyword {
        "fn" => rest.strip_prefix(':').is_some_and(|t| !t.trim().is_empty()),
        "func" => !rest.is_empty(),
        _ => rest.is_empty() || rest.strip_prefix(':').is_some_and(|t| !t.trim().is_empty()),
    };
    let chars: Vec<char> = name.chars().collect();
    (typed && is_ident(&chars)).then_some(name)
}

/// The `(` before `at` that is not closed before it, looked for back to the start of the
/// statement.
fn unmatched_open(text: &[char], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in (at.saturating_sub(2000)..at.min(text.len())).rev() {
        match text[i] {
            ')' | ']' => depth += 1,
            '(' | '[' if depth > 0 => depth -= 1,
            '(' => return Some(i),
            '[' | '{' | '}' | ';' => return None,
            _ => {}
        }
    }
    None
}

/// The `)` that closes the bracket at `open`.
fn matching_close(text: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.iter().enumerate().skip(open).take(4000) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (*c == ')').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The function whose parameter list opens at `open`: its name, where the name starts,
/// and the keyword that defines it.
fn defined_name(text: &[char], open: usize) -> Option<(String, usize, String)> {
    let mut i = open;
    let skip_space = |mut i: usize| {
        while i > 0 && text[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    };
    i = skip_space(i);
    if i > 0 && text[i - 1] == '>' {
        // Generics: `fn name<T: A<B>>(`.
        let mut depth = 0usize;
        while i > 0 {
            i -= 1;
            match text[i] {
                '>' => depth += 1,
                '<' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        i = skip_space(i);
    }
    let end = i;
    while i > 0 && is_word(text[i - 1]) {
        i -= 1;
    }
    let name = &text[i..end];
    if !is_ident(name) {
        return None;
    }
    let start = i;
    let k_end = skip_space(i);
    let mut k = k_end;
    while k > 0 && is_word(text[k - 1]) {
        k -= 1;
    }
    let keyword: String = text[k..k_end].iter().collect();
    DEFINING
        .contains(&keyword.as_str())
        .then(|| (name.iter().collect(), start, keyword))
}

/// The items of a comma-separated list at bracket depth 0, trimmed, empty ones left out.
fn split_top(list: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    let mut prev = ' ';
    for (i, c) in list.char_indices() {
        match c {
            '(' | '[' | '{' | '<' => depth += 1,
            '>' if prev == '-' || prev == '=' => {}
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                items.push(list[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
        prev = c;
    }
    items.push(list[from..].trim());
    items.retain(|s| !s.is_empty());
    items
}

/// The placeholder argument at every call of `added.function` in `text` that still has
/// the old number of arguments.
pub fn call_sites(text: &[char], added: &AddedParameter) -> Vec<Suggestion> {
    let name: Vec<char> = added.function.chars().collect();
    let mut edits = Vec::new();
    for at in occurrences(text, &name, 0..text.len()) {
        if at == added.definition || defined_name(text, at + name.len()).is_some() {
            continue;
        }
        let mut open = at + name.len();
        while text
            .get(open)
            .is_some_and(|c| c.is_whitespace() && *c != '\n')
        {
            open += 1;
        }
        if text.get(open) != Some(&'(') {
            continue;
        }
        let Some(close) = matching_close(text, open) else {
            continue;
        };
        let args: String = text[open + 1..close].iter().collect();
        let items = split_top(&args);
        if items.len() != added.old_count {
            continue;
        }
        edits.push(argument_insertion(text, open, close, added));
        if edits.len() >= MAX_EDITS {
            break;
        }
    }
    edits
}

/// The edit putting the placeholder in its slot of the call `text[open..=close]`.
fn argument_insertion(
    text: &[char],
    open: usize,
    close: usize,
    added: &AddedParameter,
) -> Suggestion {
    let insert = |at: usize, s: String| Suggestion {
        range: at..at,
        text: s,
    };
    if added.slot >= added.old_count {
        let mut end = close;
        while end > open + 1 && text[end - 1].is_whitespace() {
            end -= 1;
        }
        return match text[end - 1] {
            '(' => insert(end, added.name.clone()),
            ',' => insert(end, format!(" {},", added.name)),
            _ => insert(end, format!(", {}", added.name)),
        };
    }
    // Before the argument in the slot: after its comma (or the parenthesis), past spaces.
    let (mut depth, mut seen, mut at) = (0i32, 0usize, open + 1);
    for (i, c) in text.iter().enumerate().take(close).skip(open + 1) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                seen += 1;
                if seen == added.slot {
                    at = i + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    while at < close && text[at].is_whitespace() {
        at += 1;
    }
    insert(at, format!("{}, ", added.name))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::next_edit::history::{Change, EditHistory};

    /// `before` with `$` ... `$` marking the span the user replaced by `typed`: the text
    /// after, and the burst.
    fn burst(before: &str, typed: &str) -> (Vec<char>, Burst) {
        let start = before.find('$').unwrap_or_else(|| panic!("a $"));
        let end = before[start + 1..]
            .find('$')
            .unwrap_or_else(|| panic!("two $"))
            + start
            + 1;
        let removed = &before[start + 1..end];
        let clean = format!("{}{}{}", &before[..start], removed, &before[end + 1..]);
        let at = clean[..start].chars().count();
        let mut h = EditHistory::default();
        h.record(
            &Change {
                start: at,
                removed,
                inserted: typed,
            },
            Instant::now(),
        );
        let after = format!("{}{}{}", &before[..start], typed, &before[end + 1..]);
        let b = h.last().cloned().unwrap_or_else(|| panic!("a burst"));
        (after.chars().collect(), b)
    }

    fn applied(text: &[char], edits: &[Suggestion]) -> String {
        let mut out: Vec<char> = text.to_vec();
        for e in edits.iter().rev() {
            out.splice(e.range.clone(), e.text.chars());
        }
        out.into_iter().collect()
    }

    #[test]
    fn a_rename_at_the_assignment_renames_the_uses() {
        let (text, b) = burst(
            "fn f() {\n    let $count$ = 1;\n    g(count + self.count);\n    count\n}\n",
            "total",
        );
        let p = predict(&text, &b, None).unwrap_or_else(|| panic!("a prediction"));
        assert_eq!(
            p.kind,
            Kind::Rename {
                from: "count".into(),
                to: "total".into()
            }
        );
        assert_eq!(
            applied(&text, &p.edits),
            "fn f() {\n    let total = 1;\n    g(total + self.count);\n    total\n}\n"
        );
    }

    #[test]
    fn a_rename_inside_a_word_and_its_scope() {
        // `count` -> `counter` by typing at its end; the scope stops at the second fn.
        let src = "let count$$ = 0;\ncount += 1;\nfn other() { count }\n";
        let (text, b) = burst(src, "er");
        let scope_end = text
            .iter()
            .collect::<String>()
            .find("fn other")
            .unwrap_or(0);
        let p = predict(&text, &b, Some(0..scope_end)).unwrap_or_else(|| panic!("a prediction"));
        assert_eq!(
            applied(&text, &p.edits),
            "let counter = 0;\ncounter += 1;\nfn other() { count }\n"
        );
    }

    #[test]
    fn nothing_for_non_renames() {
        // A new word typed whole, a change of punctuation, a rename with no other use.
        for (src, typed) in [
            ("let a = 1;\n$$\nlet b = a;\n", "let total = a;"),
            ("f(a$,$ b); f(a, b);\n", ";"),
            ("let $count$ = 1;\n", "total"),
        ] {
            let (text, b) = burst(src, typed);
            assert_eq!(predict(&text, &b, None), None, "{src}");
        }
    }

    #[test]
    fn an_added_parameter_reaches_the_calls() {
        let src = "fn area(w: u32$$) -> u32 {\n    w\n}\nfn main() {\n    area(3);\n    let _ = area( 4 ) + area(1, 2) + area (5);\n}\n";
        let (text, b) = burst(src, ", h: u32");
        let p = predict(&text, &b, None).unwrap_or_else(|| panic!("a prediction"));
        assert_eq!(
            p.kind,
            Kind::Parameter {
                function: "area".into(),
                name: "h".into()
            }
        );
        assert_eq!(
            applied(&text, &p.edits),
            "fn area(w: u32, h: u32) -> u32 {\n    w\n}\nfn main() {\n    area(3, h);\n    let _ = area( 4, h ) + area(1, 2) + area (5, h);\n}\n"
        );
    }

    #[test]
    fn parameters_first_methods_python_and_defaults() {
        let (text, b) = burst(
            "def run(self, $$b):\n    pass\nx.run(1)\nrun(o, 2)\n",
            "a, ",
        );
        let p = predict(&text, &b, None).unwrap_or_else(|| panic!("a prediction"));
        assert_eq!(
            applied(&text, &p.edits),
            "def run(self, a, b):\n    pass\nx.run(a, 1)\nrun(o, 2)\n"
        );
        let (text, b) = burst("function go($$) {}\ngo();\n", "x");
        let p = predict(&text, &b, None).unwrap_or_else(|| panic!("a prediction"));
        assert_eq!(applied(&text, &p.edits), "function go(x) {}\ngo(x);\n");
        // A default, or a Rust parameter still without its type: nothing.
        for (src, typed) in [
            ("def go(a$$):\n    pass\ngo(1)\n", ", b=2"),
            ("fn go(a: u8$$) {}\nfn m() { go(1); }\n", ", b"),
        ] {
            let (text, b) = burst(src, typed);
            assert_eq!(predict(&text, &b, None), None, "{src}");
        }
    }

    #[test]
    fn the_undo_gate_and_the_word_being_typed() {
        let (text, b) = burst("let $count$ = count;\n", "total");
        // Putting `count` back where it was renamed undoes the burst.
        let back = Suggestion {
            range: 4..9,
            text: "count".into(),
        };
        assert!(undoes(&text, &b, &back));
        let fwd = Suggestion {
            range: 12..17,
            text: "total".into(),
        };
        assert!(!undoes(&text, &b, &fwd));
        // The cursor at the end of `total` touches it; on `= ` it does not.
        assert!(word_being_typed(&text, &b, 9));
        assert!(word_being_typed(&text, &b, 6));
        assert!(!word_being_typed(&text, &b, 11));
        // A burst that ended in punctuation leaves no word being typed.
        let (text, b) = burst("f(a$$)\n", ", ");
        assert!(!word_being_typed(&text, &b, 5));
    }
}
