//! BERT's encoder (what `transformers`' `BertModel` computes, without the pooler),
//! written out over matrixmultiply's sgemm: embeddings, then per layer self-attention
//! and a GELU feed-forward block, each closed by a residual LayerNorm.
//!
//! Sequences are never padded: the linear layers run over every token of a batch at
//! once (a row per token), and attention runs per sequence over its own rows, so no
//! mask is needed and no work is spent on padding.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::ModelError;

/// The fields of the model's `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    layer_norm_eps: f64,
    hidden_act: String,
}

/// A dense layer as PyTorch stores it: `weight` is `outputs × inputs`, row-major.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    /// `x · weightᵀ + bias` for `rows` rows of `inputs` floats.
    fn apply(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let mut y = Vec::with_capacity(rows * self.outputs);
        for _ in 0..rows {
            y.extend_from_slice(&self.bias);
        }
        gemm(
            x,
            rows,
            self.inputs,
            Right::Transposed(&self.weight),
            self.outputs,
            &mut y,
        );
        y
    }
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    /// Normalizes each row of `x` in place (biased variance, as PyTorch does).
    fn apply(&self, x: &mut [f32]) {
        let width = self.weight.len();
        for row in x.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let scale = 1.0 / (var + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    up: Linear,
    down: Linear,
    output_norm: LayerNorm,
}

/// The encoder's weights, read into memory (about 90 MB for all-MiniLM-L6-v2).
pub(crate) struct Encoder {
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's row: every token of a single-segment input has it.
    segment: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    config: Config,
}

impl Encoder {
    /// Reads `config.json` and the safetensors weights. Only BERT with exact (erf)
    /// GELU and float32 weights is accepted: anything else is refused by name rather
    /// than run wrongly.
    pub(crate) fn load(config_path: &Path, weights_path: &Path) -> Result<Encoder, ModelError> {
        let config_text =
            std::fs::read_to_string(config_path).map_err(|source| ModelError::Io {
                context: format!("cannot read {}", config_path.display()),
                source,
            })?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|e| ModelError::Format {
                path: config_path.to_owned(),
                detail: e.to_string(),
            })?;
        let refuse = |detail: String| ModelError::Format {
            path: config_path.to_owned(),
            detail,
        };
        if config.hidden_act != "gelu" {
            return Err(refuse(format!(
                "hidden_act {:?}: only \"gelu\" is supported",
                config.hidden_act
            )));
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(refuse(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size, config.num_attention_heads
            )));
        }
        let bytes = std::fs::read(weights_path).map_err(|source| ModelError::Io {
            context: format!("cannot read {}", weights_path.display()),
            source,
        })?;
        let weights = Weights {
            tensors: SafeTensors::deserialize(&bytes).map_err(|e| ModelError::Format {
                path: weights_path.to_owned(),
                detail: e.to_string(),
            })?,
            path: weights_path,
        };
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let eps = config.layer_norm_eps as f32;
        let norm = |name: &str| -> Result<LayerNorm, ModelError> {
            Ok(LayerNorm {
                weight: weights.get(&format!("{name}.weight"), &[hidden])?,
                bias: weights.get(&format!("{name}.bias"), &[hidden])?,
                eps,
            })
        };
        let linear = |name: &str, inputs: usize, outputs: usize| -> Result<Linear, ModelError> {
            Ok(Linear {
                weight: weights.get(&format!("{name}.weight"), &[outputs, inputs])?,
                bias: weights.get(&format!("{name}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            layers.push(Layer {
                query: linear(&format!("{p}.attention.self.query"), hidden, hidden)?,
                key: linear(&format!("{p}.attention.self.key"), hidden, hidden)?,
                value: linear(&format!("{p}.attention.self.value"), hidden, hidden)?,
                attention_out: linear(&format!("{p}.attention.output.dense"), hidden, hidden)?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                up: linear(&format!("{p}.intermediate.dense"), hidden, inner)?,
                down: linear(&format!("{p}.output.dense"), inner, hidden)?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let segments = weights.get("embeddings.token_type_embeddings.weight", &[0, hidden])?;
        Ok(Encoder {
            word: weights.get(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            position: weights.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            segment: segments.get(..hidden).map(<[f32]>::to_vec).ok_or_else(|| {
                ModelError::Format {
                    path: weights_path.to_owned(),
                    detail: "embeddings.token_type_embeddings.weight has no row".into(),
                }
            })?,
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            config,
        })
    }

    /// Tokens a sequence may hold (512).
    pub(crate) fn positions(&self) -> usize {
        self.config.max_position_embeddings
    }

    /// Width of a token's state (384).
    pub(crate) fn hidden(&self) -> usize {
        self.config.hidden_size
    }

    /// The last layer's states of `seqs`' tokens, concatenated: one row of
    /// [`Encoder::hidden`] floats per token, the sequences one after another. Each
    /// sequence attends only to itself. Ids must be below the vocabulary size and no
    /// sequence longer than the position table (the caller's tokenizer sees to both).
    pub(crate) fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<f32>, ModelError> {
        let hidden = self.hidden();
        let rows: usize = seqs.iter().map(|s| s.len()).sum();
        let mut x = Vec::with_capacity(rows * hidden);
        for seq in seqs {
            if seq.len() > self.config.max_position_embeddings {
                return Err(ModelError::Input(format!(
                    "{} tokens, the model has {} positions",
                    seq.len(),
                    self.config.max_position_embeddings
                )));
            }
            for (pos, &id) in seq.iter().enumerate() {
                let start = id as usize * hidden;
                let word = self.word.get(start..start + hidden).ok_or_else(|| {
                    ModelError::Input(format!(
                        "token id {id} is outside the vocabulary of {}",
                        self.config.vocab_size
                    ))
                })?;
                let position = &self.position[pos * hidden..(pos + 1) * hidden];
                x.extend(
                    word.iter()
                        .zip(position)
                        .zip(&self.segment)
                        .map(|((w, p), s)| w + p + s),
                );
            }
        }
        self.embedding_norm.apply(&mut x);
        for layer in &self.layers {
            let context = self.attention(layer, &x, seqs);
            let mut attended = layer.attention_out.apply(&context, rows);
            add(&mut attended, &x);
            layer.attention_norm.apply(&mut attended);
            let mut inner = layer.up.apply(&attended, rows);
            inner.iter_mut().for_each(|v| *v = gelu(*v));
            let mut out = layer.down.apply(&inner, rows);
            add(&mut out, &attended);
            layer.output_norm.apply(&mut out);
            x = out;
        }
        Ok(x)
    }

    /// Multi-head self-attention's context vectors (before the output projection),
    /// each sequence attending over its own tokens.
    fn attention(&self, layer: &Layer, x: &[f32], seqs: &[&[u32]]) -> Vec<f32> {
        let hidden = self.hidden();
        let heads = self.config.num_attention_heads;
        let d = hidden / heads;
        let rows = x.len() / hidden;
        let (q, k, v) = (
            layer.query.apply(x, rows),
            layer.key.apply(x, rows),
            layer.value.apply(x, rows),
        );
        let scale = 1.0 / (d as f32).sqrt();
        let mut context = vec![0.0f32; rows * hidden];
        let (mut qh, mut kh, mut vh, mut scores, mut ch) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut first = 0;
        for seq in seqs {
            let n = seq.len();
            for h in 0..heads {
                // One head's slices, made contiguous for sgemm.
                for (dst, src) in [(&mut qh, &q), (&mut kh, &k), (&mut vh, &v)] {
                    dst.clear();
                    for r in first..first + n {
                        dst.extend_from_slice(&src[r * hidden + h * d..r * hidden + (h + 1) * d]);
                    }
                }
                scores.clear();
                scores.resize(n * n, 0.0);
                gemm(&qh, n, d, Right::Transposed(&kh), n, &mut scores);
                for row in scores.chunks_exact_mut(n) {
                    let max = row.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
                    let mut sum = 0.0;
                    for s in row.iter_mut() {
                        *s = ((*s - max) * scale).exp();
                        sum += *s;
                    }
                    row.iter_mut().for_each(|s| *s /= sum);
                }
                ch.clear();
                ch.resize(n * d, 0.0);
                gemm(&scores, n, n, Right::Plain(&vh), d, &mut ch);
                for (i, r) in (first..first + n).enumerate() {
                    context[r * hidden + h * d..r * hidden + (h + 1) * d]
                        .copy_from_slice(&ch[i * d..(i + 1) * d]);
                }
            }
            first += n;
        }
        context
    }
}

/// The safetensors file being read, for errors that name it.
struct Weights<'a> {
    tensors: SafeTensors<'a>,
    path: &'a Path,
}

impl Weights<'_> {
    /// Tensor `name` as float32s, its shape checked against `shape` (a 0 there
    /// matches any length).
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let refuse = |detail: String| ModelError::Format {
            path: self.path.to_owned(),
            detail: format!("{name}: {detail}"),
        };
        let view = self
            .tensors
            .tensor(name)
            .map_err(|e| refuse(e.to_string()))?;
        if view.dtype() != Dtype::F32 {
            return Err(refuse(format!(
                "dtype {:?}, only F32 is supported",
                view.dtype()
            )));
        }
        let fits = view.shape().len() == shape.len()
            && view
                .shape()
                .iter()
                .zip(shape)
                .all(|(&got, &want)| want == 0 || got == want);
        if !fits {
            return Err(refuse(format!(
                "shape {:?}, expected {shape:?}",
                view.shape()
            )));
        }
        Ok(view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// The right operand of [`gemm`], row-major either way.
enum Right<'a> {
    /// `k × n`.
    Plain(&'a [f32]),
    /// `n × k`, used transposed (a PyTorch `Linear` weight, or keys).
    Transposed(&'a [f32]),
}

/// `c += a · b`, `a` being `m × k` and `c` `m × n`, all row-major.
fn gemm(a: &[f32], m: usize, k: usize, b: Right<'_>, n: usize, c: &mut [f32]) {
    let (b, rsb, csb) = match b {
        Right::Plain(b) => (b, n, 1),
        Right::Transposed(b) => (b, 1, k),
    };
    assert!(
        a.len() == m * k && b.len() == k * n && c.len() == m * n,
        "gemm: operand lengths do not match {m}×{k}·{k}×{n}"
    );
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // SAFETY: the assert above makes every element the strides reach lie inside `a`
    // (m×k, strides k and 1), `b` (k×n, strides rsb and csb over k*n floats) and `c`
    // (m×n, strides n and 1); `c` is borrowed mutably, so it aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            rsb as isize,
            csb as isize,
            1.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

/// GELU as BERT defines it, with the exact erf (not the tanh approximation).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_multiplies_plain_and_transposed_right_operands() {
        // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]
        let a = [1.0, 2.0, 3.0, 4.0];
        let mut c = [0.0; 4];
        gemm(&a, 2, 2, Right::Plain(&[5.0, 6.0, 7.0, 8.0]), 2, &mut c);
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        // The same right operand stored transposed, and accumulated onto c.
        gemm(
            &a,
            2,
            2,
            Right::Transposed(&[5.0, 7.0, 6.0, 8.0]),
            2,
            &mut c,
        );
        assert_eq!(c, [38.0, 44.0, 86.0, 100.0]);
        // 1×3 · (2×3)ᵀ: a row against two rows.
        let mut d = [0.0; 2];
        gemm(
            &[1.0, 2.0, 3.0],
            1,
            3,
            Right::Transposed(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]),
            2,
            &mut d,
        );
        assert_eq!(d, [4.0, 2.0]);
    }

    #[test]
    fn layer_norm_centres_and_scales_each_row() {
        let norm = LayerNorm {
            weight: vec![2.0, 2.0],
            bias: vec![0.5, 0.5],
            eps: 1e-12,
        };
        let mut x = [1.0, 3.0, -2.0, -2.0];
        norm.apply(&mut x);
        // Mean 2, variance 1: (-1, 1) scaled by 2 and shifted by 0.5.
        assert!(
            (x[0] + 1.5).abs() < 1e-6 && (x[1] - 2.5).abs() < 1e-6,
            "{x:?}"
        );
        // A constant row has no variance: eps keeps it finite, at the bias.
        assert_eq!(&x[2..], &[0.5, 0.5]);
    }

    #[test]
    fn gelu_matches_known_values() {
        assert_eq!(gelu(0.0), 0.0);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-1.0) + 0.158_655_3).abs() < 1e-6);
    }
}
