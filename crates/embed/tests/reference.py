"""Independent reference for crates/embed/tests/model.rs: all-MiniLM-L6-v2 as
sentence-transformers runs it, written out in numpy (no torch, no candle).

    pip install numpy safetensors tokenizers
    python3 crates/embed/tests/reference.py ~/.local/share/agentls/models/all-minilm-l6-v2

prints, per text, the first dims of the normalized embedding; the test pins them.
"""

import math
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

TEXTS = [
    "retry failed uploads",
    "fn upload_with_backoff(client: &Client, file: &Path) -> Result<()> { for attempt in 0..5 { if client.put(file).is_ok() { return Ok(()) } sleep(2u64.pow(attempt)) } }",
]
HEADS = 12
EPS = 1e-12
erf = np.vectorize(math.erf)


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def linear(t, name, x):
    return x @ t[name + ".weight"].T.astype(np.float64) + t[name + ".bias"]


def embed(t, tok, text):
    # Truncated at 256 tokens, [CLS] and [SEP] included, as sentence-transformers does.
    ids = [101] + tok.encode(text, add_special_tokens=False).ids[:254] + [102]
    n = len(ids)
    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][:n]
        + t["embeddings.token_type_embeddings.weight"][0]
    ).astype(np.float64)
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
    d = x.shape[1] // HEADS
    for i in range(6):
        p = f"encoder.layer.{i}."
        q = linear(t, p + "attention.self.query", x).reshape(n, HEADS, d).transpose(1, 0, 2)
        k = linear(t, p + "attention.self.key", x).reshape(n, HEADS, d).transpose(1, 0, 2)
        v = linear(t, p + "attention.self.value", x).reshape(n, HEADS, d).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, HEADS * d)
        a = linear(t, p + "attention.output.dense", ctx)
        x = layer_norm(a + x, t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
        h = linear(t, p + "intermediate.dense", x)
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        o = linear(t, p + "output.dense", h)
        x = layer_norm(o + x, t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])
    pooled = x.mean(0)
    return pooled / max(np.linalg.norm(pooled), 1e-12), n


def main():
    model = sys.argv[1]
    t = load_file(model + "/model.safetensors")
    tok = Tokenizer.from_file(model + "/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    vecs = []
    for text in TEXTS:
        e, n = embed(t, tok, text)
        vecs.append(e)
        print(n, "tokens", [round(float(v), 6) for v in e[:5]])
    print("cosine", float(vecs[0] @ vecs[1]))


main()
