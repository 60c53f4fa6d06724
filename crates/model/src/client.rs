//! The provider interface and the HTTP client behind it: one request, streamed,
//! retried while nothing has been delivered, cancellable at any point.

use std::pin::Pin;
use std::sync::{Arc, Once};
use std::time::Duration;

use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span, warn};

use crate::error::{ErrorClass, ModelError};
use crate::event::StreamEvent;
use crate::profile::{ModelProfile, WireFormat};
use crate::retry::{RetryPolicy, retry_after};
use crate::secret::Secret;
use crate::sse::SseParser;
use crate::types::ChatRequest;
use crate::wire::{self, Decoder};

/// A stream of events; it ends after [`StreamEvent::Stop`] or after one `Err`.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send>>;

/// Something that answers chat requests with a stream of events.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The configured model name.
    fn name(&self) -> &str;
    /// The model's profile.
    fn profile(&self) -> &ModelProfile;
    /// Starts a request. Cancelling `cancel` ends the stream with a
    /// [`ErrorClass::UserAborted`] error; dropping the stream stops the request too.
    fn stream(&self, req: &ChatRequest, cancel: CancellationToken) -> EventStream;
    /// Whether the provider limits tool arguments to what [`ChatRequest::paths`]
    /// allows (so the session should fill it in).
    fn constrains_arguments(&self) -> bool {
        false
    }
    /// The log-likelihood (natural log, summed over tokens) of each of `continuations`
    /// as the answer to `req` begun with `prefix` (after the code block's opening
    /// when `req.code_block` asks for one), or `None` where the provider cannot score
    /// text (a chat-completions server returns no prompt log-probabilities). Small
    /// models judge which of several given outputs is right far better than they
    /// write it; see the solve pipeline's `judge`.
    fn score<'a>(
        &'a self,
        _req: &'a ChatRequest,
        _prefix: &'a str,
        _continuations: &'a [String],
        _cancel: CancellationToken,
    ) -> Option<ScoreFuture<'a>> {
        None
    }
    /// Several answers to one request at once, one per entry of `samplings` (which
    /// replace `req.sampling`; sequence `i` is `samplings[i]`), or `None` where the
    /// provider cannot decode them together (then call [`Self::stream`] per sample).
    /// The embedded engine reads the prompt once and decodes the answers as
    /// sequences of one batch, each with its own sampler and seed.
    ///
    /// Each sequence's events come in the order [`Self::stream`] gives them, tagged
    /// with its index ([`ManyEvent::Event`]); a sequence ends with its
    /// [`StreamEvent::Usage`], its [`ManyEvent::Stats`], then its
    /// [`StreamEvent::Stop`], while the others may still be decoding. Sequences
    /// interleave. An `Err` ends the whole stream (cancelling `cancel` gives a
    /// [`ErrorClass::UserAborted`] one at once); dropping the stream stops decoding.
    fn stream_many(
        &self,
        _req: &ChatRequest,
        _samplings: &[crate::Sampling],
        _cancel: CancellationToken,
    ) -> Option<ManyStream> {
        None
    }
}

/// What [`Provider::stream_many`] yields: the sequences' events, and a way to end one
/// sequence early ([`ManyStream::end`]) while the others go on.
pub struct ManyStream {
    events: Pin<Box<dyn Stream<Item = Result<ManyEvent, ModelError>> + Send>>,
    ends: SequenceEnds,
}

impl ManyStream {
    /// The stream of `events`, whose provider stops decoding a sequence once `ends`
    /// holds it.
    pub fn new(
        events: Pin<Box<dyn Stream<Item = Result<ManyEvent, ModelError>> + Send>>,
        ends: SequenceEnds,
    ) -> Self {
        Self { events, ends }
    }

    /// Tells the provider that sequence `index` is no longer wanted (its reader has
    /// what it needs), so its decoding stops and frees the batch for the others;
    /// events of it may still come before the provider sees this. Providers that
    /// cannot stop one sequence decode it to its end.
    pub fn end(&self, index: usize) {
        self.ends.end(index);
    }
}

impl Stream for ManyStream {
    type Item = Result<ManyEvent, ModelError>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.events.as_mut().poll_next(cx)
    }
}

/// The sequences of a [`ManyStream`] its reader has ended, shared with the provider
/// decoding them.
#[derive(Clone, Debug, Default)]
pub struct SequenceEnds(Arc<std::sync::Mutex<Vec<usize>>>);

impl SequenceEnds {
    /// Marks sequence `index` ended.
    pub fn end(&self, index: usize) {
        if let Ok(mut ended) = self.0.lock()
            && !ended.contains(&index)
        {
            ended.push(index);
        }
    }

    /// Whether sequence `index` has been ended by the reader.
    pub fn is_ended(&self, index: usize) -> bool {
        self.0.lock().is_ok_and(|ended| ended.contains(&index))
    }
}

/// One item of a [`ManyStream`]: an event of the sequence numbered by its index in
/// the `samplings` asked for, or that sequence's figures.
#[derive(Clone, Debug, PartialEq)]
pub enum ManyEvent {
    /// The sequence's next event, as [`Provider::stream`] would yield it.
    Event(usize, StreamEvent),
    /// How the sequence was decoded: sent once, after its `Usage` and before its
    /// `Stop`.
    Stats(usize, DecodeStats),
}

/// How one sequence of [`Provider::stream_many`] was decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Time to read the prompt (shared by every sequence of the call), in ms.
    pub prompt_ms: u64,
    /// Time from the prompt read to this sequence's end, in ms.
    pub decode_ms: u64,
    /// Tokens drafted for it by prompt lookup (greedy sequences only).
    pub drafted: u64,
    /// Drafted tokens the model kept.
    pub accepted: u64,
    /// Sequences decoded in the same batch (the width asked for).
    pub width: usize,
}

/// The future [`Provider::score`] returns.
pub type ScoreFuture<'a> =
    Pin<Box<dyn std::future::Future<Output = Result<Vec<f64>, ModelError>> + Send + 'a>>;

/// Timeouts and retries of the HTTP client.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientOptions {
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Time to connect.
    pub connect_timeout: Duration,
    /// Time from sending the request to the response headers (the "first byte").
    pub first_byte_timeout: Duration,
    /// Longest silence inside a streaming body.
    pub idle_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            // Reasoning models may think for minutes before their first token.
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// A model reached over HTTP in one of the [`WireFormat`]s.
pub struct HttpProvider {
    name: String,
    wire: WireFormat,
    base_url: String,
    model_id: String,
    key: Option<Secret>,
    profile: ModelProfile,
    options: ClientOptions,
    http: reqwest::Client,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("name", &self.name)
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("model_id", &self.model_id)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// Settings of one [`HttpProvider`].
#[derive(Clone, Debug)]
pub struct ProviderSpec {
    /// Name the user knows the model by.
    pub name: String,
    /// Wire format.
    pub wire: WireFormat,
    /// Base URL up to and including the API version (`…/v1`).
    pub base_url: String,
    /// Model id sent to the provider.
    pub model_id: String,
    /// API key, if the server wants one.
    pub key: Option<Secret>,
    /// Profile.
    pub profile: ModelProfile,
}

fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err means another thread installed one first: fine either way.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The HTTP client for a model at `base_url`: TLS set up, the connect timeout of
/// `options`, and no proxy from the environment for a loopback address.
pub(crate) fn http_client(
    base_url: &str,
    options: &ClientOptions,
) -> Result<reqwest::Client, ModelError> {
    install_crypto_provider();
    let loopback = reqwest::Url::parse(base_url)
        .map_err(|e| {
            ModelError::new(
                ErrorClass::InvalidArguments,
                format!("bad base URL {base_url:?}: {e}"),
            )
        })?
        .host_str()
        .is_some_and(|h| {
            h == "localhost"
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
    let mut builder = reqwest::Client::builder().connect_timeout(options.connect_timeout);
    if loopback {
        // A proxy from the environment must not capture local model servers.
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| {
        ModelError::new(
            ErrorClass::UnexpectedEnvironment,
            format!("cannot build HTTP client: {e}"),
        )
    })
}

impl HttpProvider {
    /// A client for `spec`.
    pub fn new(spec: ProviderSpec, options: ClientOptions) -> Result<Self, ModelError> {
        if !spec.wire.is_http() {
            return Err(wire::not_http());
        }
        let http = http_client(&spec.base_url, &options)?;
        Ok(Self {
            name: spec.name,
            wire: spec.wire,
            base_url: spec.base_url,
            model_id: spec.model_id,
            key: spec.key,
            profile: spec.profile,
            options,
            http,
        })
    }

    /// The wire format.
    pub fn wire(&self) -> WireFormat {
        self.wire
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn profile(&self) -> &ModelProfile {
        &self.profile
    }

    fn stream(&self, req: &ChatRequest, cancel: CancellationToken) -> EventStream {
        let (tx, rx) = mpsc::channel(64);
        if tokio::runtime::Handle::try_current().is_err() {
            let _ = tx.try_send(Err(ModelError::new(
                ErrorClass::Unknown,
                "model streams need a tokio runtime",
            )));
            return receiver_stream(rx);
        }
        match wire::build(
            self.wire,
            &self.base_url,
            &self.model_id,
            self.key.as_ref(),
            &self.profile,
            req,
        ) {
            Ok(w) => {
                let job = Job {
                    http: self.http.clone(),
                    wire: self.wire,
                    url: w.url,
                    headers: w.headers,
                    body: Arc::new(w.body),
                    key: self.key.clone(),
                    options: self.options.clone(),
                };
                let span = info_span!("model_call", model = %self.name, wire = ?self.wire);
                tokio::spawn(job.run(tx, cancel).instrument(span));
            }
            Err(e) => {
                let _ = tx.try_send(Err(e));
            }
        }
        receiver_stream(rx)
    }
}

type Tx = mpsc::Sender<Result<StreamEvent, ModelError>>;

fn receiver_stream(rx: mpsc::Receiver<Result<StreamEvent, ModelError>>) -> EventStream {
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

struct Job {
    http: reqwest::Client,
    wire: WireFormat,
    url: String,
    headers: reqwest::header::HeaderMap,
    body: Arc<Value>,
    key: Option<Secret>,
    options: ClientOptions,
}

/// Why an attempt stopped early.
enum Stop {
    /// The consumer is gone (stream dropped): stop quietly.
    Gone,
    Failed(ModelError),
}

impl From<ModelError> for Stop {
    fn from(e: ModelError) -> Self {
        Stop::Failed(e)
    }
}

impl Job {
    async fn run(self, tx: Tx, cancel: CancellationToken) {
        let mut delivered = false;
        let mut retry = 0;
        loop {
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(Stop::Failed(ModelError::aborted())),
                () = tx.closed() => Err(Stop::Gone),
                r = self.attempt(&tx, &mut delivered) => r,
            };
            let err = match outcome {
                Ok(()) | Err(Stop::Gone) => return,
                Err(Stop::Failed(e)) => e,
            };
            let mut err = self.redact(err);
            if err.retryable
                && !delivered
                && retry < self.options.retry.max_retries
                && let Some(delay) = self.options.retry.delay(retry, err.retry_after)
            {
                warn!(retry = retry + 1, ?delay, error = %err.message, "model call failed, retrying");
                tokio::select! {
                    () = cancel.cancelled() => {
                        let _ = tx.send(Err(ModelError::aborted())).await;
                        return;
                    }
                    () = tx.closed() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                retry += 1;
                continue;
            }
            if retry > 0 {
                err.message = format!("{} (after {retry} retries)", err.message);
            }
            warn!(class = ?err.class, error = %err.message, delivered, "model call failed");
            let _ = tx.send(Err(err)).await;
            return;
        }
    }

    fn redact(&self, mut e: ModelError) -> ModelError {
        if let Some(k) = &self.key {
            e.message = k.redact(&e.message);
        }
        e
    }

    async fn attempt(&self, tx: &Tx, delivered: &mut bool) -> Result<(), Stop> {
        // A key smuggled into the URL (query parameter) must not reach the log either.
        let url = self
            .key
            .as_ref()
            .map_or_else(|| self.url.clone(), |k| k.redact(&self.url));
        debug!(%url, "sending model request");
        let request = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .json(&*self.body)
            .send();
        let resp = match tokio::time::timeout(self.options.first_byte_timeout, request).await {
            Err(_) => {
                return Err(ModelError::timeout(format!(
                    "no answer from {} within {:?}",
                    self.url, self.options.first_byte_timeout
                ))
                .into());
            }
            Ok(Err(e)) => return Err(classify(&e, &self.url).into()),
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        if !status.is_success() {
            let after = retry_after(resp.headers());
            // OpenAI and Anthropic say outright whether a retry can help.
            let should_retry = match resp.headers().get("x-should-retry").map(|v| v.as_bytes()) {
                Some(b"true") => Some(true),
                Some(b"false") => Some(false),
                _ => None,
            };
            let body = tokio::time::timeout(self.options.idle_timeout, resp.text()).await;
            let text = match body {
                Ok(Ok(t)) => wire::error_message(&t),
                _ => status.canonical_reason().unwrap_or("").to_owned(),
            };
            let err = ModelError::http(status.as_u16(), &text, after);
            let retryable = should_retry.unwrap_or(err.retryable);
            return Err(err.retryable(retryable).into());
        }
        let mut decoder: Box<dyn Decoder> = wire::decoder(self.wire)?;
        let mut parser = SseParser::new();
        let mut body = resp.bytes_stream();
        loop {
            let chunk = match tokio::time::timeout(self.options.idle_timeout, body.next()).await {
                Err(_) => {
                    return Err(ModelError::timeout(format!(
                        "the stream stalled for {:?}",
                        self.options.idle_timeout
                    ))
                    .into());
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(ModelError::provider(format!(
                        "the stream broke: {}",
                        error_chain(&e)
                    ))
                    .retryable(true)
                    .into());
                }
                Ok(Some(Ok(c))) => c,
            };
            for ev in parser.feed(&chunk) {
                for out in decoder.event(&ev)? {
                    send(tx, out, delivered).await?;
                }
                if decoder.is_done() {
                    return Ok(());
                }
            }
        }
        match decoder.finish() {
            Some(events) => {
                for out in events {
                    send(tx, out, delivered).await?;
                }
                Ok(())
            }
            None => Err(
                ModelError::provider("the stream ended before the model finished")
                    .retryable(true)
                    .into(),
            ),
        }
    }
}

async fn send(tx: &Tx, ev: StreamEvent, delivered: &mut bool) -> Result<(), Stop> {
    *delivered = true;
    tx.send(Ok(ev)).await.map_err(|_| Stop::Gone)
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

pub(crate) fn classify(e: &reqwest::Error, url: &str) -> ModelError {
    let detail = error_chain(e);
    if e.is_timeout() {
        ModelError::timeout(format!("timed out talking to {url}: {detail}"))
    } else if e.is_connect() {
        ModelError::provider(format!("cannot connect to {url}: {detail}")).retryable(true)
    } else if e.is_builder() {
        ModelError::new(
            ErrorClass::InvalidArguments,
            format!("bad request to {url}: {detail}"),
        )
    } else {
        ModelError::provider(format!("request to {url} failed: {detail}")).retryable(true)
    }
}
