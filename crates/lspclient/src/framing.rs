//! LSP base protocol framing: `Content-Length` headers, then a JSON body. The children
//! are untrusted programs: a body larger than [`MAX_BODY`] or a header without a length
//! ends the connection instead of allocating what it asks for.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message body accepted from a child (diagnostics of a huge file fit).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Reads one message body. `Ok(None)` at a clean end of stream.
pub async fn read_message<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        // A header line is short; a child sending an endless one is cut off.
        let n = (&mut *r).take(8192).read_line(&mut line).await?;
        if n == 0 {
            return Ok(None);
        }
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            if length.is_some() {
                break;
            }
            // Blank lines before a header: tolerated, as some servers log them.
            continue;
        }
        if let Some((name, value)) = trimmed.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY {
        return Err(std::io::Error::other(format!(
            "a message of {length} bytes from a language server (limit {MAX_BODY})"
        )));
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).await?;
    Ok(Some(body))
}

/// Writes one message.
pub async fn write_message<W: AsyncWrite + Unpin>(w: &mut W, body: &[u8]) -> std::io::Result<()> {
    w.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    w.write_all(body).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn round_trip_and_clean_end() {
        let mut buf = Vec::new();
        write_message(&mut buf, b"{\"a\":1}").await.unwrap();
        write_message(&mut buf, b"{}").await.unwrap();
        let mut r = tokio::io::BufReader::new(&buf[..]);
        assert_eq!(read_message(&mut r).await.unwrap().unwrap(), b"{\"a\":1}");
        assert_eq!(read_message(&mut r).await.unwrap().unwrap(), b"{}");
        assert!(read_message(&mut r).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_huge_length_is_refused_not_allocated() {
        let msg = format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1);
        let mut r = tokio::io::BufReader::new(msg.as_bytes());
        assert!(read_message(&mut r).await.is_err());
    }

    #[tokio::test]
    async fn other_headers_and_case_are_accepted() {
        let msg = b"content-length: 2\r\nContent-Type: x\r\n\r\n{}";
        let mut r = tokio::io::BufReader::new(&msg[..]);
        assert_eq!(read_message(&mut r).await.unwrap().unwrap(), b"{}");
    }
}
