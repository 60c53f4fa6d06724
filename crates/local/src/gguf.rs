//! Reading a GGUF file's metadata (the key-value header, not the tensors): enough
//! for the tokenizer tables and the chat template, without the inference library.

use std::collections::HashMap;
use std::io::{self, Read};

/// One metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Any integer type, widened.
    Int(i64),
    /// Any unsigned integer type, widened.
    Uint(u64),
    /// `f32` or `f64`.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string (GGUF strings are UTF-8; invalid bytes are replaced).
    Str(String),
    /// An array.
    Array(Vec<Value>),
}

impl Value {
    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a `u32`, if it is a non-negative integer that fits.
    pub fn as_u32(&self) -> Option<u32> {
        match *self {
            Self::Uint(n) => u32::try_from(n).ok(),
            Self::Int(n) => u32::try_from(n).ok(),
            _ => None,
        }
    }

    /// The value as a list of strings, if it is an array of strings.
    pub fn as_strings(&self) -> Option<Vec<String>> {
        match self {
            Self::Array(a) => a.iter().map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => None,
        }
    }

    /// The value as a list of `i32`, if it is an array of integers that fit.
    pub fn as_i32s(&self) -> Option<Vec<i32>> {
        match self {
            Self::Array(a) => a
                .iter()
                .map(|v| match *v {
                    Self::Int(n) => i32::try_from(n).ok(),
                    Self::Uint(n) => i32::try_from(n).ok(),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

/// Longest string or array accepted: guards the allocation against a corrupt header.
const MAX_LEN: u64 = 1 << 28;

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn read_n<const N: usize>(r: &mut impl Read) -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    Ok(u32::from_le_bytes(read_n(r)?))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    Ok(u64::from_le_bytes(read_n(r)?))
}

fn read_len(r: &mut impl Read) -> io::Result<usize> {
    let n = read_u64(r)?;
    if n > MAX_LEN {
        return Err(bad(format!("length {n} is out of range")));
    }
    usize::try_from(n).map_err(|_| bad("length does not fit"))
}

fn read_string(r: &mut impl Read) -> io::Result<String> {
    let n = read_len(r)?;
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    Ok(match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn read_value(r: &mut impl Read, ty: u32, depth: u8) -> io::Result<Value> {
    Ok(match ty {
        0 => Value::Uint(u64::from(u8::from_le_bytes(read_n(r)?))),
        1 => Value::Int(i64::from(i8::from_le_bytes(read_n(r)?))),
        2 => Value::Uint(u64::from(u16::from_le_bytes(read_n(r)?))),
        3 => Value::Int(i64::from(i16::from_le_bytes(read_n(r)?))),
        4 => Value::Uint(u64::from(read_u32(r)?)),
        5 => Value::Int(i64::from(i32::from_le_bytes(read_n(r)?))),
        6 => Value::Float(f64::from(f32::from_le_bytes(read_n(r)?))),
        7 => Value::Bool(read_n::<1>(r)?[0] != 0),
        8 => Value::Str(read_string(r)?),
        9 => {
            if depth > 2 {
                return Err(bad("arrays nested too deep"));
            }
            let elem = read_u32(r)?;
            let n = read_len(r)?;
            let mut v = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                v.push(read_value(r, elem, depth + 1)?);
            }
            Value::Array(v)
        }
        10 => Value::Uint(read_u64(r)?),
        11 => Value::Int(i64::from_le_bytes(read_n(r)?)),
        12 => Value::Float(f64::from_le_bytes(read_n(r)?)),
        other => return Err(bad(format!("unknown value type {other}"))),
    })
}

/// Reads the metadata of a GGUF (versions 2 and 3) from its start.
pub fn read_metadata(r: &mut impl Read) -> io::Result<HashMap<String, Value>> {
    if &read_n::<4>(r)? != b"GGUF" {
        return Err(bad("not a GGUF file (bad magic)"));
    }
    let version = read_u32(r)?;
    if !(2..=3).contains(&version) {
        return Err(bad(format!("GGUF version {version} is not supported")));
    }
    let _tensors = read_u64(r)?;
    let n = read_u64(r)?;
    let mut kv = HashMap::new();
    for _ in 0..n {
        let key = read_string(r)?;
        let ty = read_u32(r)?;
        let value = read_value(r, ty, 0)?;
        kv.insert(key, value);
    }
    Ok(kv)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes a GGUF header with the given string, u32 and string-array keys.
    pub(crate) fn header(
        strings: &[(&str, &str)],
        u32s: &[(&str, u32)],
        arrays: &[(&str, &[&str])],
    ) -> Vec<u8> {
        fn s(out: &mut Vec<u8>, v: &str) {
            out.extend((v.len() as u64).to_le_bytes());
            out.extend(v.as_bytes());
        }
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend(((strings.len() + u32s.len() + arrays.len()) as u64).to_le_bytes());
        for (k, v) in strings {
            s(&mut out, k);
            out.extend(8u32.to_le_bytes());
            s(&mut out, v);
        }
        for (k, v) in u32s {
            s(&mut out, k);
            out.extend(4u32.to_le_bytes());
            out.extend(v.to_le_bytes());
        }
        for (k, v) in arrays {
            s(&mut out, k);
            out.extend(9u32.to_le_bytes());
            out.extend(8u32.to_le_bytes());
            out.extend((v.len() as u64).to_le_bytes());
            for x in *v {
                s(&mut out, x);
            }
        }
        out
    }

    #[test]
    fn reads_strings_numbers_and_arrays() {
        let bytes = header(
            &[("general.architecture", "qwen2")],
            &[("qwen2.context_length", 32768)],
            &[("tokenizer.ggml.tokens", &["a", "b", "ab"])],
        );
        let md = read_metadata(&mut bytes.as_slice()).unwrap();
        assert_eq!(md["general.architecture"].as_str(), Some("qwen2"));
        assert_eq!(md["qwen2.context_length"].as_u32(), Some(32768));
        assert_eq!(
            md["tokenizer.ggml.tokens"].as_strings(),
            Some(vec!["a".into(), "b".into(), "ab".into()])
        );
    }

    #[test]
    fn refuses_bad_magic_truncation_and_huge_lengths() {
        assert!(read_metadata(&mut &b"GGML\x03\0\0\0"[..]).is_err());
        let bytes = header(&[("k", "value")], &[], &[]);
        assert!(read_metadata(&mut &bytes[..bytes.len() - 2]).is_err());
        let mut huge = b"GGUF".to_vec();
        huge.extend(3u32.to_le_bytes());
        huge.extend(0u64.to_le_bytes());
        huge.extend(1u64.to_le_bytes());
        huge.extend(u64::MAX.to_le_bytes());
        let err = read_metadata(&mut huge.as_slice()).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }
}
