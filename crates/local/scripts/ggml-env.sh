# Source this before building agentls-local (or the server with --features local).
# llama-cpp-sys-2 builds ggml for Rust's baseline target (SSE2 only on x86_64) unless
# told otherwise; this turns on the SIMD extensions this machine's CPU has, which makes
# inference several times faster. Keep it the same between builds: a change of these
# variables rebuilds llama.cpp.
if [ -r /proc/cpuinfo ]; then
    _flags=$(grep -m1 '^flags' /proc/cpuinfo)
    for _f in avx avx2 fma f16c bmi2 sse4_2; do
        case " $_flags " in
        *" $_f "*)
            case $_f in
            sse4_2) export GGML_SSE42=ON ;;
            *) export "GGML_$(echo "$_f" | tr '[:lower:]' '[:upper:]')=ON" ;;
            esac
            ;;
        esac
    done
    unset _f _flags
fi
# llamafile's sgemm serves batches with another summation order than single-token
# decoding: logits then differ in the last bits between the two, and a draft verified
# in a batch could pick another token than plain greedy decoding at a near tie.
# Without it every batch size goes through the same dot products.
export GGML_LLAMAFILE=OFF
# Optimised llama.cpp whatever the cargo profile (a Debug build makes tests crawl).
export LLAMA_LIB_PROFILE=RelWithDebInfo
