//! Parsers from what a model writes to [`FileOp`](crate::FileOp)s. No I/O.

pub mod json;
pub mod patch;
pub mod search_replace;

/// Strips the wrappers models put around an edit: code fences and shell heredocs
/// (`apply_patch <<'EOF'` ... `EOF`), with surrounding blank lines.
pub(crate) fn unwrap_envelope(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    loop {
        while lines.first().is_some_and(|l| l.trim().is_empty()) {
            lines.remove(0);
        }
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
            return lines;
        };
        let (first, last) = (first.trim(), last.trim());
        let fence = first.starts_with("```") && last == "```" && lines.len() >= 2;
        let heredoc = first.contains("<<") && is_heredoc_end(first, last) && lines.len() >= 2;
        if fence || heredoc {
            lines.remove(0);
            lines.pop();
        } else {
            return lines;
        }
    }
}

/// Whether `last` closes the heredoc opened on `first` (`<<'EOF'`, `<<"EOF"`, `<<EOF`).
fn is_heredoc_end(first: &str, last: &str) -> bool {
    let Some(idx) = first.find("<<") else {
        return false;
    };
    let tag = first[idx + 2..]
        .trim_start_matches('-')
        .trim()
        .trim_matches(|c| c == '\'' || c == '"');
    let tag = tag.split_whitespace().next().unwrap_or("");
    !tag.is_empty() && last == tag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_fences_and_heredocs() {
        let t = "\n```bash\napply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n```\n";
        assert_eq!(unwrap_envelope(t), vec!["*** Begin Patch", "*** End Patch"]);
        assert_eq!(unwrap_envelope("a\nb"), vec!["a", "b"]);
    }
}
