//! Byte-level BPE (the GPT-2 family: Qwen2, SmolLM2, Llama 3) built from the GGUF's
//! own metadata: `tokenizer.ggml.{tokens,merges,token_type,pre}`.
//!
//! Special tokens are never produced from text: [`Tokenizer::encode`] treats
//! `<|im_start|>` written by a user as plain characters. The chat template places
//! special tokens by id, so a prompt cannot forge a turn boundary.

use std::collections::HashMap;
use std::sync::Mutex;

use fancy_regex::Regex;

/// GPT-2's split: contractions, letters, numbers, punctuation, spaces.
const GPT2_SPLIT: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
/// Qwen2's split: single digits, newlines kept apart.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// SmolLM's: digits one by one, then GPT-2's.
const SMOLLM_SPLIT: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Why a tokenizer could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// A metadata key is missing or has the wrong type.
    #[error("GGUF tokenizer metadata: {0}")]
    Metadata(String),
    /// The split regex did not compile (a bug of ours).
    #[error("tokenizer regex: {0}")]
    Regex(String),
}

/// A byte-level BPE tokenizer.
#[derive(Debug)]
pub struct Tokenizer {
    vocab: HashMap<String, u32>,
    tokens: Vec<String>,
    special: Vec<bool>,
    ranks: HashMap<(String, String), u32>,
    split: Regex,
    byte_to_char: [char; 256],
    char_to_byte: HashMap<char, u8>,
    cache: Mutex<HashMap<String, Vec<u32>>>,
}

/// What the GGUF says about its tokenizer.
#[derive(Clone, Debug, Default)]
pub struct TokenizerData {
    /// Token strings, by id.
    pub tokens: Vec<String>,
    /// Merges, `"a b"`, by rank.
    pub merges: Vec<String>,
    /// Token types by id (3 control, 4 user-defined count as special).
    pub token_types: Vec<i32>,
    /// Pre-tokenizer name (`qwen2`, `smollm`, `gpt2` …).
    pub pre: String,
}

impl Tokenizer {
    /// Builds the tokenizer.
    pub fn new(data: TokenizerData) -> Result<Self, TokenizerError> {
        let pattern = match data.pre.as_str() {
            "qwen2" | "deepseek-coder" => QWEN2_SPLIT,
            "smollm" => SMOLLM_SPLIT,
            _ => GPT2_SPLIT,
        };
        let split = Regex::new(pattern).map_err(|e| TokenizerError::Regex(e.to_string()))?;
        let vocab = data
            .tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let special = (0..data.tokens.len())
            .map(|i| matches!(data.token_types.get(i), Some(3 | 4)))
            .collect();
        let mut ranks = HashMap::with_capacity(data.merges.len());
        for (rank, merge) in data.merges.iter().enumerate() {
            let (a, b) = merge
                .split_once(' ')
                .ok_or_else(|| TokenizerError::Metadata(format!("bad merge {merge:?}")))?;
            ranks.insert((a.to_owned(), b.to_owned()), rank as u32);
        }
        let byte_to_char = bytes_to_unicode();
        let char_to_byte = byte_to_char
            .iter()
            .enumerate()
            .map(|(b, c)| (*c, b as u8))
            .collect();
        Ok(Self {
            vocab,
            tokens: data.tokens,
            special,
            ranks,
            split,
            byte_to_char,
            char_to_byte,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Number of tokens.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The id of a token written out, e.g. `<|im_end|>`.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    /// Whether `id` is a control or user-defined token.
    pub fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }

    /// Encodes plain text (no special tokens are recognised).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let mut end = 0;
        for piece in self.split.find_iter(text) {
            match piece {
                Ok(piece) => {
                    end = piece.end();
                    self.encode_word(piece.as_str(), &mut out);
                }
                // fancy-regex fails only past its backtrack limit, which these
                // patterns (one bounded lookahead) do not reach; keep the text anyway.
                Err(_) => {
                    self.encode_word(&text[end..], &mut out);
                    break;
                }
            }
        }
        out
    }

    fn encode_word(&self, word: &str, out: &mut Vec<u32>) {
        if let Ok(cache) = self.cache.lock()
            && let Some(ids) = cache.get(word)
        {
            out.extend_from_slice(ids);
            return;
        }
        let mut parts: Vec<String> = word
            .bytes()
            .map(|b| self.byte_to_char[b as usize].to_string())
            .collect();
        loop {
            let best = parts
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| {
                    self.ranks
                        .get(&(w[0].clone(), w[1].clone()))
                        .map(|r| (*r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = parts.remove(i + 1);
            parts[i].push_str(&right);
        }
        let mut ids = Vec::with_capacity(parts.len());
        for p in &parts {
            match self.vocab.get(p) {
                Some(id) => ids.push(*id),
                // A piece missing from the vocabulary: fall back to its bytes.
                None => ids.extend(p.chars().filter_map(|c| self.vocab.get(&c.to_string()))),
            }
        }
        out.extend_from_slice(&ids);
        if let Ok(mut cache) = self.cache.lock()
            && cache.len() < 100_000
        {
            cache.insert(word.to_owned(), ids);
        }
    }

    /// The bytes of one token (special tokens as their literal text).
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        let Some(tok) = self.tokens.get(id as usize) else {
            return Vec::new();
        };
        if self.is_special(id) {
            return tok.as_bytes().to_vec();
        }
        let mut out = Vec::with_capacity(tok.len());
        for c in tok.chars() {
            match self.char_to_byte.get(&c) {
                Some(b) => out.push(*b),
                None => out.extend_from_slice(c.to_string().as_bytes()),
            }
        }
        out
    }

    /// Decodes ids to text (invalid UTF-8 replaced).
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|id| self.token_bytes(*id)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// GPT-2's reversible map from bytes to printable characters.
fn bytes_to_unicode() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
        map[b as usize] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + n).unwrap_or('\u{FFFD}');
            n += 1;
            c
        };
    }
    map
}

/// Collects valid UTF-8 out of a byte stream that may split characters across tokens.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes; returns the text that is complete so far.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(s) => {
                let s = s.to_owned();
                self.pending.clear();
                s
            }
            Err(e) => {
                let valid = e.valid_up_to();
                // An invalid sequence (not just an incomplete one) is replaced.
                let (text, rest) = if e.error_len().is_some() {
                    (
                        String::from_utf8_lossy(&self.pending).into_owned(),
                        Vec::new(),
                    )
                } else {
                    (
                        String::from_utf8_lossy(&self.pending[..valid]).into_owned(),
                        self.pending[valid..].to_vec(),
                    )
                };
                self.pending = rest;
                text
            }
        }
    }

    /// What is left at the end, replaced if incomplete.
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny vocabulary: every byte-char of "hello world" plus two merges.
    fn tiny() -> Tokenizer {
        let map = bytes_to_unicode();
        let mut tokens: Vec<String> = map.iter().map(|c| c.to_string()).collect();
        tokens.push("he".into());
        tokens.push("hel".into());
        tokens.push("<|im_end|>".into());
        let mut token_types = vec![1; tokens.len()];
        if let Some(last) = token_types.last_mut() {
            *last = 3;
        }
        Tokenizer::new(TokenizerData {
            tokens,
            merges: vec!["h e".into(), "he l".into()],
            token_types,
            pre: "gpt2".into(),
        })
        .unwrap()
    }

    #[test]
    fn merges_apply_by_rank_and_round_trip() {
        let t = tiny();
        let ids = t.encode("hello");
        assert_eq!(t.tokens[ids[0] as usize], "hel");
        assert_eq!(ids.len(), 3);
        assert_eq!(t.decode(&ids), "hello");
    }

    #[test]
    fn every_byte_round_trips() {
        let t = tiny();
        let text = "tab\t, newline\n, é, 日本, emoji 🦀";
        assert_eq!(t.decode(&t.encode(text)), text);
    }

    #[test]
    fn special_tokens_are_not_made_from_text() {
        let t = tiny();
        let ids = t.encode("<|im_end|>");
        let end = t.token_id("<|im_end|>").unwrap();
        assert!(t.is_special(end));
        assert!(!ids.contains(&end));
        assert_eq!(t.decode(&ids), "<|im_end|>");
    }

    #[test]
    fn utf8_stream_waits_for_whole_characters() {
        let mut s = Utf8Stream::default();
        let crab = "🦀".as_bytes();
        assert_eq!(s.push(&crab[..2]), "");
        assert_eq!(s.push(&crab[2..]), "🦀");
        assert_eq!(s.push(&[0xff]), "\u{FFFD}");
        assert_eq!(s.push(&crab[..1]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    #[test]
    fn qwen_split_keeps_digits_apart() {
        let r = Regex::new(QWEN2_SPLIT).unwrap();
        let pieces: Vec<&str> = r
            .find_iter("x = 42\n")
            .map(|m| m.unwrap().as_str())
            .collect();
        assert_eq!(pieces, ["x", " =", " ", "4", "2", "\n"]);
    }
}
