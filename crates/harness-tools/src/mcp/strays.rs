//! Replies to requests this client never sent are junk, skipped like a line that is not
//! JSON. rmcp drops them once the connection is up, but during the handshake a reply with
//! the wrong id ends the connection at once; skipped here, a server that answers only with
//! wrong ids meets the same timeout in the handshake as in any call.
//!
//! A reply's id must equal its request's exactly, as JSON-RPC says: `"7"` does not answer
//! request 7 (rmcp would take it as the answer). A number written `7.0` is read by rmcp as
//! 7 before it gets here: the stdio reader skips it (see `lines`); over HTTP rmcp reads the
//! body itself, so there it cannot be told from 7.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A transport that lets through only the replies to requests it saw go out.
pub(crate) struct SkipStrays<T> {
    inner: T,
    /// The ids of requests sent and not yet answered or cancelled.
    outstanding: Arc<Mutex<HashSet<RequestId>>>,
}

impl<T> SkipStrays<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            outstanding: Arc::default(),
        }
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.outstanding
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for SkipStrays<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(request) => {
                self.ids().insert(request.id.clone());
            }
            JsonRpcMessage::Notification(note) => {
                // A cancelled request's late answer is a stray too.
                if let ClientNotification::CancelledNotification(cancel) = &note.notification
                    && let Some(id) = &cancel.params.request_id
                {
                    self.ids().remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            let id: Option<&RequestId> = match &message {
                JsonRpcMessage::Response(response) => Some(&response.id),
                // An error without an id could not name its request: rmcp decides.
                JsonRpcMessage::Error(error) => error.id.as_ref(),
                JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
            };
            match id {
                Some(id) if !self.ids().remove(id) => {
                    tracing::warn!(%id, "skipped an MCP reply to no request of this client");
                }
                _ => return Some(message),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
