//! Terms for the lexical ranking: identifiers split where code joins words
//! (`snake_case`, `camelCase`, `HTTPServer`, digits), lower-cased and lightly stemmed, so
//! that "retry failed uploads" meets `retry_failed_upload` and `RetryFailedUploads`.

/// Words too common in questions and code to say anything (BM25's IDF would weigh
/// them down anyway; dropping them keeps postings short).
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "if",
    "in", "is", "it", "of", "on", "or", "that", "the", "this", "to", "we", "what", "when", "where",
    "which", "with", "self",
];

/// The terms of `text`, in order, repeats kept (term frequency counts them).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for ident in text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
    {
        let parts = split_identifier(ident);
        if parts.len() > 1 {
            // The whole identifier too: an exact name in the query is worth more than
            // its parts found apart.
            let whole = ident.to_lowercase().replace('_', "");
            if whole.len() > 2 {
                out.push(whole);
            }
        }
        for p in parts {
            if p.len() < 2 || p.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            let lower = p.to_lowercase();
            if STOP.contains(&lower.as_str()) {
                continue;
            }
            out.push(stem(&lower));
        }
    }
    out
}

/// `parse_HTTPResponse2xx` → `parse`, `HTTP`, `Response`, `2`, `xx`.
fn split_identifier(ident: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let chars: Vec<(usize, char)> = ident.char_indices().collect();
    let mut start: Option<usize> = None;
    for (i, &(at, c)) in chars.iter().enumerate() {
        if c == '_' {
            if let Some(s) = start.take() {
                parts.push(&ident[s..at]);
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(at);
            continue;
        };
        let prev = chars[i - 1].1;
        let next = chars.get(i + 1).map(|&(_, c)| c);
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            // The last capital of a run starts the next word: HTTPServer → HTTP Server.
            || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
            || (prev.is_ascii_digit() != c.is_ascii_digit());
        if boundary {
            parts.push(&ident[s..at]);
            start = Some(at);
        }
    }
    if let Some(s) = start {
        parts.push(&ident[s..]);
    }
    parts
}

/// A light suffix stripper, the same on both sides of the match: `uploads`, `uploaded`,
/// `uploading` → `upload`; `retries` → `retry`. Not a linguist's stemmer: it only has to
/// map a word's common forms together.
fn stem(word: &str) -> String {
    let n = word.len();
    if !word.is_ascii() || n < 4 {
        return word.to_owned();
    }
    if let Some(base) = word.strip_suffix("ies") {
        return format!("{base}y");
    }
    if n > 5
        && let Some(base) = word.strip_suffix("ing")
    {
        return undouble(base);
    }
    if n > 4
        && let Some(base) = word.strip_suffix("ed")
    {
        return undouble(base);
    }
    if let Some(base) = word.strip_suffix('s')
        && !base.ends_with(['s', 'u', 'i'])
    {
        return base.to_owned();
    }
    word.to_owned()
}

/// `stopp` → `stop` (after `stopped`), but `pass`, `call` stay.
fn undouble(base: &str) -> String {
    let b = base.as_bytes();
    if b.len() > 2
        && b[b.len() - 1] == b[b.len() - 2]
        && !matches!(b[b.len() - 1], b's' | b'l' | b'z')
    {
        return base[..base.len() - 1].to_owned();
    }
    base.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_where_words_join() {
        assert_eq!(
            split_identifier("retry_failed_upload"),
            ["retry", "failed", "upload"]
        );
        assert_eq!(
            split_identifier("HTTPServerError"),
            ["HTTP", "Server", "Error"]
        );
        assert_eq!(split_identifier("parseUrl2x"), ["parse", "Url", "2", "x"]);
        assert_eq!(split_identifier("__init__"), ["init"]);
    }

    #[test]
    fn a_question_meets_the_code_that_answers_it() {
        let q = terms("where do we retry failed uploads?");
        let code = terms("def retry_failed_upload(self, uploads): retries += 1");
        for t in &q {
            assert!(code.contains(t), "{t} of {q:?} not in {code:?}");
        }
        assert!(code.contains(&"retryfailedupload".to_owned()));
    }

    #[test]
    fn stems_map_forms_together() {
        for (a, b) in [
            ("uploads", "uploaded"),
            ("uploading", "upload"),
            ("stopped", "stop"),
            ("retries", "retry"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("pass"), "pass");
    }
}
