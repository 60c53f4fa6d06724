"""llama.cpp reference for `examples/bench.rs`: same GGUF, same thread count, same
512-token prompt and 128 greedy tokens. Needs `llama-cpp-python` (built from source
by pip). Usage: python3 bench_reference.py MODEL.gguf THREADS"""
import sys, time
from llama_cpp import Llama

path, threads = sys.argv[1], int(sys.argv[2])
llm = Llama(model_path=path, n_threads=threads, n_threads_batch=threads,
            n_ctx=2048, n_batch=256, verbose=False)
filler = "fn add(a: i32, b: i32) -> i32 { a + b }\n" * 64
prompt = llm.tokenize(filler.encode(), add_bos=False, special=False)[:512]
llm.reset()
t = time.perf_counter()
llm.eval(prompt)
pp = time.perf_counter() - t
print(f"reference prompt: {len(prompt)} tokens, {len(prompt) / pp:.1f} tok/s")
n = 128
t = time.perf_counter()
for _ in range(n):
    tok = llm.sample(temp=0.0)
    llm.eval([tok])
tg = time.perf_counter() - t
print(f"reference generation: {n} tokens, {n / tg:.1f} tok/s")
