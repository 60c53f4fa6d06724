//! `agentls bench model`'s requests on the real Qwen2.5-Coder-0.5B (built only with
//! the `local` feature; `.ci/run` runs it). Without the weights it prints SKIPPED
//! (fails under CI).

mod common;

use agentls_eval::bench_model::{edit_request, free_request, timed_call};
use agentls_local::LocalProvider;
use agentls_local::speculate::Lookup;

/// Speculation must not change what the model writes. With llama.cpp's repacked
/// weight kernels built in (its default), a verifying batch summed in another order
/// than one token, and `agentls bench model` printed TEXT DIFFERS for both of these
/// requests on this model; `.cargo/config.toml` builds them out. The bench's own
/// requests, each answered by a fresh engine with speculation off and on.
#[tokio::test(flavor = "multi_thread")]
async fn speculation_leaves_the_coder_models_text_unchanged() {
    let Some(path) = common::coder_model("speculation_leaves_the_coder_models_text_unchanged")
    else {
        return;
    };
    for (label, req) in [
        ("edit-like", edit_request(400)),
        ("free text", free_request(256)),
    ] {
        let plain = LocalProvider::load("qwen2.5-coder-0.5b", &path)
            .unwrap()
            .with_speculation(None);
        let drafted = LocalProvider::load("qwen2.5-coder-0.5b", &path)
            .unwrap()
            .with_speculation(Some(Lookup::default()));
        let (a, na, _, _) = timed_call(&plain, &req).await.unwrap();
        let (b, nb, _, _) = timed_call(&drafted, &req).await.unwrap();
        assert!(na > 50, "{label}: only {na} tokens");
        assert_eq!(a, b, "{label}: the drafted answer differs");
        assert_eq!(na, nb, "{label}");
    }
}
