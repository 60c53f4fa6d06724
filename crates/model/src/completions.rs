//! [`HttpCompleter`]: fill-in-the-middle through an OpenAI-compatible legacy
//! `/completions` endpoint, with `prompt` and `suffix` (Ollama, OpenAI's instruct
//! models, and other servers that take a suffix).
//!
//! The request streams (`stream: true`) unless told otherwise, and the answer is read
//! either way: SSE chunks of `choices[0].text`, or one JSON body. [`StopRules`] judge
//! the text as it grows; once they cut it, the response is dropped, which stops the
//! server generating. No retries: a completion is worth something only now, and the
//! next keystroke asks again.
//!
//! The context chunks go before the prefix as commented blocks headed by their path
//! (`// Path: src/util.rs`), since a plain completions endpoint has no place of its own
//! for other files.

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::client::{ClientOptions, classify, error_chain, http_client};
use crate::complete::{Completer, FimAnswer, FimFuture, FimRequest, FimStop, StopRules};
use crate::error::{ErrorClass, ModelError};
use crate::secret::Secret;
use crate::sse::SseParser;

/// Settings of one [`HttpCompleter`].
#[derive(Clone, Debug)]
pub struct CompleterSpec {
    /// The configured model name.
    pub name: String,
    /// Base URL up to and including the API version (`…/v1`); requests go to
    /// `{base_url}/completions`.
    pub base_url: String,
    /// Model id sent to the server.
    pub model_id: String,
    /// API key, if the server wants one.
    pub key: Option<Secret>,
    /// Ask for a streamed answer (`stream: true`).
    pub stream: bool,
}

/// A completer over HTTP (see the module docs).
pub struct HttpCompleter {
    spec: CompleterSpec,
    url: String,
    options: ClientOptions,
    http: reqwest::Client,
}

impl std::fmt::Debug for HttpCompleter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCompleter")
            .field("name", &self.spec.name)
            .field("url", &self.url)
            .field("model_id", &self.spec.model_id)
            .field("key", &self.spec.key)
            .field("stream", &self.spec.stream)
            .finish_non_exhaustive()
    }
}

impl HttpCompleter {
    /// A completer for `spec`; `options` gives the timeouts (retries are not made).
    pub fn new(spec: CompleterSpec, options: ClientOptions) -> Result<Self, ModelError> {
        let http = http_client(&spec.base_url, &options)?;
        let url = format!("{}/completions", spec.base_url.trim_end_matches('/'));
        Ok(Self {
            spec,
            url,
            options,
            http,
        })
    }

    /// The request body for `req`.
    pub fn body(&self, req: &FimRequest) -> Value {
        json!({
            "model": self.spec.model_id,
            "prompt": prompt(req),
            "suffix": req.suffix,
            "max_tokens": req.max_tokens,
            "temperature": 0,
            "stream": self.spec.stream,
        })
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.spec.key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    ModelError::new(
                        ErrorClass::InvalidArguments,
                        "the API key holds characters not allowed in a header",
                    )
                })?;
            value.set_sensitive(true);
            headers.insert("authorization", value);
        }
        Ok(headers)
    }

    fn redact(&self, mut e: ModelError) -> ModelError {
        if let Some(k) = &self.spec.key {
            e.message = k.redact(&e.message);
        }
        e
    }

    async fn call(&self, req: &FimRequest, rules: &StopRules) -> Result<FimAnswer, ModelError> {
        debug!(url = %self.url, model = %self.spec.name, "completion request");
        let send = self
            .http
            .post(&self.url)
            .headers(self.headers()?)
            .json(&self.body(req))
            .send();
        let resp = match tokio::time::timeout(self.options.first_byte_timeout, send).await {
            Err(_) => {
                return Err(ModelError::timeout(format!(
                    "no answer from {} within {:?}",
                    self.url, self.options.first_byte_timeout
                )));
            }
            Ok(Err(e)) => return Err(classify(&e, &self.url)),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            let text = tokio::time::timeout(self.options.idle_timeout, resp.text()).await;
            let text = match text {
                Ok(Ok(t)) => crate::wire::error_message(&t),
                _ => status.canonical_reason().unwrap_or("").to_owned(),
            };
            return Err(ModelError::http(status.as_u16(), &text, None));
        }
        let streamed = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut growing = Growing::new(rules);
        if !streamed {
            let body = tokio::time::timeout(self.options.idle_timeout, resp.bytes())
                .await
                .map_err(|_| stalled(self.options.idle_timeout))?
                .map_err(|e| {
                    ModelError::provider(format!("the answer broke: {}", error_chain(&e)))
                })?;
            let value: Value = serde_json::from_slice(&body).map_err(|e| {
                ModelError::provider(format!("the completion answer is not JSON: {e}"))
            })?;
            growing.chunk(&value)?;
            return Ok(growing.answer());
        }
        let mut parser = SseParser::new();
        let mut body = resp.bytes_stream();
        loop {
            let chunk = match tokio::time::timeout(self.options.idle_timeout, body.next()).await {
                Err(_) => return Err(stalled(self.options.idle_timeout)),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(ModelError::provider(format!(
                        "the stream broke: {}",
                        error_chain(&e)
                    )));
                }
                Ok(Some(Ok(c))) => c,
            };
            for event in parser.feed(&chunk) {
                if event.data.trim() == "[DONE]" {
                    return Ok(growing.answer());
                }
                let value: Value = serde_json::from_str(&event.data).map_err(|e| {
                    ModelError::provider(format!("a completion chunk is not JSON: {e}"))
                })?;
                if growing.chunk(&value)? {
                    // Cut by a rule: dropping the body stops the server.
                    return Ok(growing.answer());
                }
            }
        }
        if growing.finished {
            Ok(growing.answer())
        } else {
            Err(ModelError::provider(
                "the stream ended before the model finished",
            ))
        }
    }
}

fn stalled(idle: Duration) -> ModelError {
    ModelError::timeout(format!("the completion stalled for {idle:?}"))
}

/// The text of a completion as it arrives, judged by the rules.
struct Growing<'a> {
    rules: &'a StopRules,
    text: String,
    cut: bool,
    finished: bool,
    stop: FimStop,
    tokens: u32,
    prompt_tokens: u32,
    cached_tokens: u32,
}

impl<'a> Growing<'a> {
    fn new(rules: &'a StopRules) -> Self {
        Self {
            rules,
            text: String::new(),
            cut: false,
            finished: false,
            stop: FimStop::EndOfText,
            tokens: 0,
            prompt_tokens: 0,
            cached_tokens: 0,
        }
    }

    /// Takes one chunk (or the whole answer); `true` once a rule cut the text.
    fn chunk(&mut self, value: &Value) -> Result<bool, ModelError> {
        if let Some(error) = value.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(ModelError::provider(message));
        }
        let choice = value.pointer("/choices/0");
        if let Some(text) = choice.and_then(|c| c.get("text")).and_then(Value::as_str) {
            self.text.push_str(text);
            self.tokens += 1;
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            let n = |p: &str| {
                usage
                    .pointer(p)
                    .and_then(Value::as_u64)
                    .and_then(|v| u32::try_from(v).ok())
            };
            self.prompt_tokens = n("/prompt_tokens").unwrap_or(self.prompt_tokens);
            self.tokens = n("/completion_tokens").unwrap_or(self.tokens);
            self.cached_tokens = n("/prompt_tokens_details/cached_tokens").unwrap_or(0);
        }
        match choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
        {
            Some("length") => {
                self.finished = true;
                self.stop = FimStop::Budget;
            }
            Some(_) => self.finished = true,
            None => {}
        }
        if let Some(at) = self.rules.cut(&self.text) {
            self.text.truncate(at);
            self.cut = true;
            self.stop = FimStop::Rule;
            return Ok(true);
        }
        Ok(false)
    }

    fn answer(self) -> FimAnswer {
        let text = self.rules.finish(&self.text);
        let stop = if !self.cut && text.len() < self.text.trim_end().len() {
            FimStop::Rule
        } else {
            self.stop
        };
        FimAnswer {
            text,
            tokens: self.tokens,
            cached_tokens: self.cached_tokens,
            prompt_tokens: self.prompt_tokens,
            stop,
        }
    }
}

impl Completer for HttpCompleter {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn complete<'a>(
        &'a self,
        req: &'a FimRequest,
        rules: &'a StopRules,
        cancel: CancellationToken,
    ) -> FimFuture<'a> {
        Box::pin(async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => Err(ModelError::aborted()),
                r = self.call(req, rules) => r.map_err(|e| self.redact(e)),
            }
        })
    }
}

/// The prompt: the context chunks as commented blocks, then the prefix.
fn prompt(req: &FimRequest) -> String {
    if req.context.is_empty() {
        return req.prefix.clone();
    }
    let comment = comment_prefix(req.language.as_deref().unwrap_or(""));
    let mut out = String::new();
    for chunk in &req.context {
        out.push_str(&format!("{comment} Path: {}\n", chunk.path));
        for line in chunk.text.lines() {
            out.push_str(comment);
            out.push(' ');
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&format!("{comment} Path: {}\n", req.path));
    out.push_str(&req.prefix);
    out
}

/// The line-comment marker of a language id (`//` when unknown).
fn comment_prefix(language: &str) -> &'static str {
    match language {
        "python" | "ruby" | "shellscript" | "bash" | "sh" | "toml" | "yaml" | "perl" | "r"
        | "elixir" | "julia" | "nix" | "dockerfile" | "makefile" | "cmake" => "#",
        "lua" | "sql" | "haskell" | "elm" => "--",
        "lisp" | "clojure" | "scheme" => ";",
        _ => "//",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complete::ContextChunk;

    #[test]
    fn context_goes_before_the_prefix_as_comments() {
        let req = FimRequest {
            path: "src/main.py".into(),
            language: Some("python".into()),
            prefix: "def f():\n    ".into(),
            suffix: "\n".into(),
            context: vec![ContextChunk {
                path: "src/util.py".into(),
                text: "def g():\n    return 1".into(),
            }],
            max_tokens: 32,
        };
        assert_eq!(
            prompt(&req),
            "# Path: src/util.py\n# def g():\n#     return 1\n\n# Path: src/main.py\ndef f():\n    "
        );
        let alone = FimRequest {
            context: vec![],
            ..req
        };
        assert_eq!(prompt(&alone), alone.prefix);
    }

    #[test]
    fn chunks_are_cut_by_the_rules_and_finish_reasons_read() {
        let rules = StopRules::new("fn f() {\n    ", "\n}\n", 16);
        let mut g = Growing::new(&rules);
        assert!(
            !g.chunk(&json!({"choices": [{"text": "let a = 1;"}]}))
                .unwrap()
        );
        assert!(
            g.chunk(&json!({"choices": [{"text": "\n\nfn g() {}\n"}]}))
                .unwrap()
        );
        let answer = g.answer();
        assert_eq!(
            (answer.text.as_str(), answer.stop),
            ("let a = 1;", FimStop::Rule)
        );

        let mut g = Growing::new(&rules);
        g.chunk(&json!({"choices": [{"text": "x", "finish_reason": "length"}], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}))
            .unwrap();
        let answer = g.answer();
        assert_eq!(
            (
                answer.text.as_str(),
                answer.stop,
                answer.tokens,
                answer.prompt_tokens
            ),
            ("x", FimStop::Budget, 4, 9)
        );
        let mut g = Growing::new(&rules);
        let e = g
            .chunk(&json!({"error": {"message": "model not loaded"}}))
            .unwrap_err();
        assert_eq!(e.message, "model not loaded");
    }
}
