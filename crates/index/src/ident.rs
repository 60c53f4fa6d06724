//! The identifier under a cursor, for "go to definition" and "find references" by name.

/// The identifier touching byte `column` of 0-based `line` in `text` (letters, digits,
/// `_` and `$`, not starting with a digit), or `None`. A cursor just after an identifier
/// counts, as editors place it there after typing. Out-of-range positions give `None`.
pub fn ident_at(text: &str, line: usize, column: usize) -> Option<&str> {
    let line_text = text.split('\n').nth(line)?;
    let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
    let bytes = line_text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    let mut at = column.min(bytes.len());
    if at == bytes.len() || !is_ident(bytes[at]) {
        if at > 0 && is_ident(bytes[at - 1]) {
            at -= 1;
        } else {
            return None;
        }
    }
    let start = bytes[..at]
        .iter()
        .rposition(|&b| !is_ident(b))
        .map_or(0, |p| p + 1);
    let end = bytes[at..]
        .iter()
        .position(|&b| !is_ident(b))
        .map_or(bytes.len(), |p| at + p);
    let word = line_text.get(start..end)?;
    if word.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(word)
}

#[cfg(test)]
mod tests {
    use super::ident_at;

    #[test]
    fn finds_the_identifier_under_or_before_the_cursor() {
        let text = "fn main() {\n    let total = add_two(1, 2);\r\n}\n";
        assert_eq!(ident_at(text, 1, 16), Some("add_two"));
        assert_eq!(ident_at(text, 1, 22), Some("add_two"));
        assert_eq!(ident_at(text, 1, 23), Some("add_two"));
        assert_eq!(ident_at(text, 1, 5), Some("let"));
        assert_eq!(ident_at(text, 1, 8), Some("total"));
        assert_eq!(ident_at(text, 1, 0), None);
        assert_eq!(ident_at(text, 1, 24), None);
        assert_eq!(ident_at(text, 1, 999), None);
        assert_eq!(ident_at(text, 9, 0), None);
        assert_eq!(ident_at("x = é_ident", 0, 5), Some("é_ident"));
    }
}
