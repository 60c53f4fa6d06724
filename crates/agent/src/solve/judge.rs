//! Choosing among candidates by what they return, judged by the model's likelihood.
//! When no test tells candidates apart, each runs the calls of the model's own
//! assertions (and their neighbours) in the sandbox's overlay. Where they return
//! different values (a dispute), the model does not write the expected value (a
//! small model writes it wrong, see `agreement`), it reads each value the
//! candidates returned as the end of an assertion (`assert dedupe([3, 1, 3]) ==`
//! ` [3, 1]`) and the value it finds most likely wins the dispute: judging given
//! answers is easier than writing one, and a likelihood has no position bias, as a
//! multiple-choice question would. The candidate whose values win the most
//! disputes is chosen (ties: the behaviour more samples share, then the earliest).
//! Needs a provider that scores text (the embedded engine); Python and JavaScript,
//! whose calls a probe runs without a build.

use agentls_index::Language;
use agentls_model::{ChatRequest, Message};

use super::characterise;
use super::generate::fence;
use super::pinned::{Layout, Outcome};

/// Most calls probed: the assertions' own first, then their neighbours.
const MAX_CALLS: usize = 40;

/// Most disputes the model judges.
pub const MAX_DISPUTES: usize = 12;

/// Longest value judged, in characters: a long rendering is a list the model
/// cannot read at a glance, and would dominate the likelihood by its length.
const MAX_VALUE_CHARS: usize = 160;

/// Whether candidates in `lang` can be judged here.
pub fn supported(lang: Language) -> bool {
    matches!(lang, Language::Python | Language::JavaScript)
}

/// The calls to judge on: each call to `name` in the model's test code (and, given
/// the function's arity, the rows of its test tables, as the characterisation
/// harvests them: small models write tests as tables), then those calls with
/// a list argument reversed (small models test order-keeping code on sorted lists
/// only, where keeping the order and sorting agree), then the neighbours of the
/// calls (off-by-one integers, edited strings), each once, at most [`MAX_CALLS`].
pub fn calls(code: &str, name: &str, arity: Option<usize>) -> Vec<(String, String)> {
    let code = inline_locals(code, name);
    let mut own = characterise::calls(&code, &[name.to_owned()]);
    if let Some(n) = arity {
        for row in characterise::table_calls(&code, &[(name.to_owned(), n)]) {
            if !own.contains(&row) {
                own.push(row);
            }
        }
    }
    let mut out = own.clone();
    let reversed = own
        .iter()
        .flat_map(|(f, call)| reversed_lists(call).into_iter().map(|c| (f.clone(), c)));
    for (function, call) in reversed.collect::<Vec<_>>() {
        if !out.iter().any(|(_, c)| *c == call) {
            out.push((function, call));
        }
    }
    for (function, call) in &own {
        for n in characterise::neighbours(call) {
            if out.len() >= MAX_CALLS {
                return out;
            }
            if !out.iter().any(|(_, c)| *c == n) {
                out.push((function.clone(), n));
            }
        }
    }
    out.truncate(MAX_CALLS);
    out
}

/// `code` with the local variables that a line calling `name` uses written as the
/// literals last assigned to them (`v := "1.10.0"`, `const xs = [1, 2];`, `s = 'a'`):
/// small models set up a test's inputs in variables first, and a call on names is
/// nothing a probe can run.
fn inline_locals(code: &str, name: &str) -> String {
    let mut known: Vec<(String, String)> = Vec::new();
    let mut out = String::with_capacity(code.len());
    let call = format!("{name}(");
    for line in code.lines() {
        let t = line.trim();
        let t = ["const ", "let ", "var "]
            .iter()
            .find_map(|k| t.strip_prefix(k))
            .unwrap_or(t);
        let assigned = t
            .split_once(":=")
            .or_else(|| t.split_once(" = "))
            .map(|(l, r)| (l.trim(), r.trim().trim_end_matches(';').trim()));
        if let Some((var, value)) = assigned
            && !var.is_empty()
            && var.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            known.retain(|(v, _)| v != var);
            if literal(value) {
                known.push((var.to_owned(), value.to_owned()));
            }
        }
        match line.find(&call) {
            Some(at) if !known.is_empty() => {
                let (head, args) = line.split_at(at + call.len());
                out.push_str(head);
                out.push_str(&replace_words(args, &known));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Whether `v` is a literal a probe can run: one the characterisation reads, or a
/// list of them (`[3, 1, 3]`).
fn literal(v: &str) -> bool {
    characterise::is_literal(v)
        || v.strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .is_some_and(|inner| characterise::literals(inner).is_some())
}

/// `s` with each whole identifier that `known` names replaced by its value
/// (identifiers inside string literals are left).
fn replace_words(s: &str, known: &[(String, String)]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let flush = |word: &mut String, out: &mut String| {
        match known.iter().find(|(v, _)| v == word) {
            Some((_, value)) => out.push_str(value),
            None => out.push_str(word),
        }
        word.clear();
    };
    let mut escaped = false;
    for c in s.chars() {
        if let Some(q) = quote {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        // A field (`x.v`) is not the variable `v`.
        if out.ends_with('.') && !word.is_empty() {
            out.push_str(&word);
            word.clear();
        } else {
            flush(&mut word, &mut out);
        }
        if matches!(c, '"' | '\'' | '`') {
            quote = Some(c);
        }
        out.push(c);
    }
    flush(&mut word, &mut out);
    out
}

/// `call` with each flat list literal among its arguments (`[1, 2, 2]`, no list
/// or call inside: of nested lists, the innermost, no comma inside a string) reversed, one variant a list; lists of
/// fewer than two items are left.
fn reversed_lists(call: &str) -> Vec<String> {
    let Some(open) = call.find('(') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut from = open;
    while let Some(at) = call[from..].find('[').map(|k| from + k) {
        from = at + 1;
        let Some(len) = call[at + 1..].find(']') else {
            break;
        };
        let inner = &call[at + 1..at + 1 + len];
        if inner.contains(['[', '(', '{']) {
            continue;
        }
        let items: Vec<&str> = inner.split(',').map(str::trim).collect();
        let balanced = |i: &&str| {
            i.matches('"').count().is_multiple_of(2) && i.matches('\'').count().is_multiple_of(2)
        };
        if items.len() < 2 || items.iter().any(|i| i.is_empty() || !balanced(i)) {
            continue;
        }
        let back: Vec<&str> = items.iter().rev().copied().collect();
        let v = format!(
            "{}[{}]{}",
            &call[..at],
            back.join(", "),
            &call[at + 1 + len + 1..]
        );
        if v != call && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The head of a function's definition: its signature with the comments before it,
/// and a Python docstring, the body left out (`...`). The judge must read what the
/// function is for, not what the code as it was does: shown a fix's old body, a
/// small model predicts what the bug returns.
pub fn header(lang: Language, definition: &str) -> String {
    let mut out = String::new();
    let mut lines = definition.lines();
    let opens = |l: &str| match lang {
        Language::Python => l.trim_end().ends_with(':') && !l.trim_start().starts_with('#'),
        _ => l.contains('{') && !l.trim_start().starts_with("//"),
    };
    for line in lines.by_ref() {
        out.push_str(line);
        out.push('\n');
        if opens(line) {
            break;
        }
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut rest = lines.clone().skip_while(|l| l.trim().is_empty());
    let first = rest.next();
    let body_indent = first.map(indent).filter(|n| *n > 0);
    let docstring = first.filter(|_| lang == Language::Python).and_then(|f| {
        let t = f.trim_start();
        ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| t.starts_with(q))
            .map(|q| (f, q, t[3..].contains(q)))
    });
    if let Some((first, q, closed)) = docstring {
        out.push_str(first);
        out.push('\n');
        if !closed {
            for l in rest {
                out.push_str(l);
                out.push('\n');
                if l.contains(q) {
                    break;
                }
            }
        }
    }
    let pad = " ".repeat(body_indent.unwrap_or(4));
    match lang {
        Language::Python => out.push_str(&format!("{pad}...\n")),
        _ => out.push_str(&format!("{pad}// ...\n}}\n")),
    }
    out
}

/// The request a value is read under: the task and the function's head, asking for
/// assertions (the values are read as their ends).
pub fn request(task: &str, lang: Language, shown: &str, name: &str, head: &str) -> ChatRequest {
    let code = fence(lang);
    let user = format!(
        "Task: {task}\n\nThe function `{name}` in `{shown}`:\n```{code}\n{}\n```\n\nWrite assertions that check `{name}` once the task is done, each on one line.",
        head.trim_end()
    );
    ChatRequest {
        system: Some(format!(
            "You are an expert {code} programmer who writes precise unit tests. You answer with code only, in one fenced code block."
        )),
        messages: vec![Message::user(user)],
        max_tokens: Some(1),
        code_block: Some(code.to_owned()),
        ..ChatRequest::default()
    }
}

/// The probe's layout for the function `name` of the file `rel` (below the root).
pub fn layout(lang: Language, rel: &str, name: &str) -> Layout {
    Layout {
        lang,
        test_rel: String::new(),
        source_rel: rel.to_owned(),
        functions: vec![name.to_owned()],
        unit: String::new(),
        esm: false,
    }
}

/// A call on which candidates return different values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispute {
    /// The call, as source text.
    pub call: String,
    /// The different values returned, in the order first met.
    pub values: Vec<String>,
    /// For each candidate, the index of the value it returned (`None`: it raised,
    /// hung or returned something without a literal).
    pub by: Vec<Option<usize>>,
}

/// The disputes among candidates, from each candidate's outcomes of `calls` (one
/// list per candidate, in the calls' order): calls where at least two values were
/// returned, the earliest calls first (the model's own), at most [`MAX_DISPUTES`].
pub fn disputes(calls: &[(String, String)], outcomes: &[Vec<Option<Outcome>>]) -> Vec<Dispute> {
    let mut out = Vec::new();
    for (k, (_, call)) in calls.iter().enumerate() {
        let mut values: Vec<String> = Vec::new();
        let mut by = Vec::with_capacity(outcomes.len());
        for o in outcomes {
            let value = match o.get(k) {
                Some(Some(Outcome::Returned(v))) if v.chars().count() <= MAX_VALUE_CHARS => v,
                _ => {
                    by.push(None);
                    continue;
                }
            };
            let at = values.iter().position(|x| x == value).unwrap_or_else(|| {
                values.push(value.clone());
                values.len() - 1
            });
            by.push(Some(at));
        }
        if values.len() >= 2 {
            out.push(Dispute {
                call: call.clone(),
                values,
                by,
            });
            if out.len() == MAX_DISPUTES {
                break;
            }
        }
    }
    out
}

/// What the model reads for a dispute: the assertion's head (`assert CALL ==`), and
/// each value as its end (` VALUE` and the line's end), the space with the value so
/// that the head's tokens are the same for every value.
pub fn line(lang: Language, dispute: &Dispute) -> (String, Vec<String>) {
    let call = &dispute.call;
    match lang {
        Language::JavaScript => (
            format!("assert.deepStrictEqual({call},"),
            dispute.values.iter().map(|v| format!(" {v});\n")).collect(),
        ),
        _ => (
            format!("assert {call} =="),
            dispute.values.iter().map(|v| format!(" {v}\n")).collect(),
        ),
    }
}

/// The index of the most likely value (ties: the first met).
pub fn winner(scores: &[f64]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, &s) in scores.iter().enumerate() {
        if s.is_finite() && best.is_none_or(|(_, b)| s > b) {
            best = Some((i, s));
        }
    }
    best.map(|(i, _)| i)
}

/// The chosen candidate (its position in the outcomes) from the disputes and each
/// one's winning value (`None`: not judged): the candidate whose values win the
/// most; ties go to the behaviour that more samples share (`weights[c]`: how many
/// samples gave candidate `c`'s text, summed over the candidates that return the
/// same as it in every dispute), then to the earliest. With the disputes won and
/// the disputes judged; `None` when no candidate wins one.
pub fn choose(
    disputes: &[Dispute],
    winners: &[Option<usize>],
    weights: &[usize],
) -> Option<(usize, usize, usize)> {
    let judged = winners.iter().flatten().count();
    let wins = |c: usize| {
        disputes
            .iter()
            .zip(winners)
            .filter(|(d, w)| w.is_some() && d.by.get(c).copied().flatten() == **w)
            .count()
    };
    let behaviour = |c: usize| -> Vec<Option<usize>> {
        disputes
            .iter()
            .map(|d| d.by.get(c).copied().flatten())
            .collect()
    };
    let mut best: Option<(usize, usize, usize)> = None; // (candidate, wins, weight)
    for c in 0..weights.len() {
        let w = wins(c);
        if w == 0 {
            continue;
        }
        let mine = behaviour(c);
        let weight = (0..weights.len())
            .filter(|&o| behaviour(o) == mine)
            .map(|o| weights[o])
            .sum();
        if best.is_none_or(|(_, bw, bweight)| (w, weight) > (bw, bweight)) {
            best = Some((c, w, weight));
        }
    }
    best.map(|(c, w, _)| (c, w, judged))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(v: &str) -> Option<Outcome> {
        Some(Outcome::Returned(v.to_owned()))
    }

    #[test]
    fn calls_are_the_assertions_own_then_their_neighbours() {
        let asserts = "assert dedupe([1, 2, 2]) == [1, 2]\nassert dedupe([]) == []\n";
        let calls = calls(asserts, "dedupe", None);
        assert_eq!(calls[0].1, "dedupe([1, 2, 2])");
        assert_eq!(calls[1].1, "dedupe([])");
        assert_eq!(calls[2].1, "dedupe([2, 2, 1])", "a list reversed");
        assert!(calls.len() > 2, "neighbours join: {calls:?}");
        assert!(calls.len() <= MAX_CALLS);
        // A table's rows are calls too.
        let table = "cases = [\n    ('a b', 2),\n]\n";
        assert_eq!(super::calls(table, "count", Some(1))[0].1, "count('a b')");
        let mut seen: Vec<&str> = calls.iter().map(|(_, c)| c.as_str()).collect();
        seen.dedup();
        assert_eq!(seen.len(), calls.len(), "each call once");
    }

    #[test]
    fn the_header_keeps_the_signature_and_docstring_not_the_body() {
        let py = "def dedupe(items):\n    \"\"\"Items without repeats,\n    in order.\"\"\"\n    return sorted(set(items))\n";
        assert_eq!(
            header(Language::Python, py),
            "def dedupe(items):\n    \"\"\"Items without repeats,\n    in order.\"\"\"\n    ...\n"
        );
        let js = "// Sums the numbers.\nfunction sum(xs) {\n  return 0;\n}\n";
        assert_eq!(
            header(Language::JavaScript, js),
            "// Sums the numbers.\nfunction sum(xs) {\n  // ...\n}\n"
        );
    }

    #[test]
    fn calls_on_local_variables_take_their_literals() {
        let got = |code: &str, f: &str| -> Vec<String> {
            calls(code, f, None).into_iter().map(|(_, c)| c).collect()
        };
        let py = "xs = [3, 1, 3]\nv = 'a'\nassert dedupe(xs, v) == [3, 1]\nv = obj.v\nassert dedupe(xs, v) == []\n";
        let calls = got(py, "dedupe");
        assert_eq!(calls[0], "dedupe([3, 1, 3], 'a')");
        // `v` was set to something else since: not inlined.
        assert_eq!(calls[1], "dedupe([3, 1, 3], v)");
        let js = "const xs = [3, 1];\nassert.deepStrictEqual(sum(xs), 4);\nassert.equal(sum(\"xs\"), 0);\n";
        assert_eq!(got(js, "sum")[..2], ["sum([3, 1])", "sum(\"xs\")"]);
    }

    #[test]
    fn flat_lists_are_reversed_one_at_a_time() {
        assert_eq!(
            reversed_lists("f([1, 2, 3], ['a', 'b'], 2)"),
            vec!["f([3, 2, 1], ['a', 'b'], 2)", "f([1, 2, 3], ['b', 'a'], 2)"]
        );
        // Only the innermost lists; commas inside strings and single items are left.
        assert_eq!(reversed_lists("f([[1, 2], [3]])"), vec!["f([[2, 1], [3]])"]);
        assert!(reversed_lists("f(['a,b', 'c'])").is_empty());
        assert!(reversed_lists("f([1])").is_empty());
        assert!(reversed_lists("f(x)").is_empty());
    }

    #[test]
    fn a_dispute_is_a_call_with_two_values() {
        let calls = vec![
            ("f".to_owned(), "f(1)".to_owned()),
            ("f".to_owned(), "f(2)".to_owned()),
        ];
        let raised = Some(Outcome::Raised {
            name: "ValueError".into(),
            import: false,
        });
        let outcomes = vec![
            vec![ret("1"), ret("[3, 1]")],
            vec![ret("1"), ret("[1, 3]")],
            vec![raised, ret("[3, 1]")],
        ];
        let d = disputes(&calls, &outcomes);
        assert_eq!(
            d,
            vec![Dispute {
                call: "f(2)".into(),
                values: vec!["[3, 1]".into(), "[1, 3]".into()],
                by: vec![Some(0), Some(1), Some(0)],
            }]
        );
        let (head, ends) = line(Language::Python, &d[0]);
        assert_eq!(head, "assert f(2) ==");
        assert_eq!(ends, vec![" [3, 1]\n", " [1, 3]\n"]);
        let (head, ends) = line(Language::JavaScript, &d[0]);
        assert_eq!(head, "assert.deepStrictEqual(f(2),");
        assert_eq!(ends[1], " [1, 3]);\n");
    }

    #[test]
    fn the_candidate_winning_most_disputes_is_chosen() {
        assert_eq!(winner(&[-3.0, -1.5, -2.0]), Some(1));
        assert_eq!(winner(&[f64::NEG_INFINITY]), None);
        let d = |by: Vec<Option<usize>>| Dispute {
            call: "f()".into(),
            values: vec!["a".into(), "b".into()],
            by,
        };
        // Candidate 1 wins both disputes, 0 one, 2 none.
        let disputes = vec![
            d(vec![Some(0), Some(0), Some(1)]),
            d(vec![Some(1), Some(0), Some(1)]),
        ];
        assert_eq!(
            choose(&disputes, &[Some(0), Some(0)], &[1, 1, 1]),
            Some((1, 2, 2))
        );
        // Equal wins (0 wins the first, 1 the second): the behaviour more samples
        // gave.
        let split = vec![d(vec![Some(0), Some(1)]), d(vec![Some(1), Some(0)])];
        assert_eq!(
            choose(&split, &[Some(0), Some(0)], &[1, 3]),
            Some((1, 1, 2))
        );
        assert_eq!(
            choose(&split, &[Some(0), Some(0)], &[2, 2]),
            Some((0, 1, 2))
        );
        // Nothing judged: no choice.
        assert_eq!(choose(&disputes, &[None, None], &[1, 1, 1]), None);
    }
}
