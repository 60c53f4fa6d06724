//! Keeps one panicking handler from taking the server down.
//!
//! tower-lsp polls handler futures on the task that reads stdin; a panic there would end
//! the whole server. Every handler runs under [`guard`], which turns a panic into an LSP
//! internal error (requests) or a logged error (notifications), as rust-analyzer does.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use tower_lsp::jsonrpc;

/// Runs a request handler; a panic becomes an `InternalError` naming the method.
pub async fn guard<T>(
    method: &'static str,
    fut: impl Future<Output = jsonrpc::Result<T>>,
) -> jsonrpc::Result<T> {
    // Handlers only share state through the document store and locks that poisoning or
    // dashmap shards keep consistent, so unwinding past them is sound.
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            tracing::error!(method, %message, "handler panicked");
            Err(jsonrpc::Error {
                code: jsonrpc::ErrorCode::InternalError,
                message: format!("agentls bug: {method} panicked: {message}").into(),
                data: None,
            })
        }
    }
}

/// Runs a notification handler; a panic is logged and swallowed.
pub async fn guard_notification(method: &'static str, fut: impl Future<Output = ()>) {
    if let Err(payload) = AssertUnwindSafe(fut).catch_unwind().await {
        let message = panic_message(payload.as_ref());
        tracing::error!(method, %message, "notification handler panicked");
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_request_becomes_an_internal_error() {
        let r: jsonrpc::Result<()> = guard("test/boom", async { panic!("kaboom") }).await;
        let e = r.err().map(|e| (e.code, e.message.to_string()));
        assert_eq!(
            e,
            Some((
                jsonrpc::ErrorCode::InternalError,
                "agentls bug: test/boom panicked: kaboom".to_owned()
            ))
        );
        assert_eq!(guard("test/fine", async { Ok(7) }).await.ok(), Some(7));
    }

    #[tokio::test]
    async fn a_panicking_notification_is_swallowed() {
        guard_notification("test/boom", async { panic!("kaboom") }).await;
    }
}
