//! The two approvers that need nobody: [`DenyAll`] (a session with nobody to ask) and
//! [`AllowAll`] (`agentls run --approve always`). Forbidden commands stay forbidden
//! with either: the policy refuses them before anyone is asked.

use async_trait::async_trait;

use crate::Approver;

/// Says no to everything: nobody to ask.
#[derive(Debug, Default)]
pub struct DenyAll;

#[async_trait]
impl Approver for DenyAll {
    async fn approve(&self, what: &str) -> bool {
        tracing::info!("refused approval for {what}: nobody to ask");
        false
    }
}

/// Says yes to everything the policy marks `ask`.
#[derive(Debug, Default)]
pub struct AllowAll;

#[async_trait]
impl Approver for AllowAll {
    async fn approve(&self, what: &str) -> bool {
        tracing::info!("approved {what}");
        true
    }
}
