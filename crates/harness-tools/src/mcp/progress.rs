//! A tool call's progress, reported to the run that made the call, in order.
//!
//! rmcp hands notifications to the client's handler on tasks of their own, so a progress
//! notification can be handled after the answer it came before. Read here instead, at the
//! transport, every progress notification of a routed call reaches the call's [`Ctx`]
//! before its answer does.
//!
//! The route travels with the request: [`ProgressRoutes::register`] gives the call a marker
//! in its `_meta`; the transport takes it out before the request is sent and files the
//! call's context under the request's progress token.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use harness_core::Ctx;
use rmcp::RoleClient;
use rmcp::model::{
    GetMeta as _, JsonRpcMessage, ProgressToken, RequestMetaObject, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;

/// The `_meta` key carrying a route's marker from the call to the transport; never sent.
const ROUTE_KEY: &str = "io.github.deepharness/route";

/// The calls whose progress goes to a run.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    next: AtomicU64,
    /// Registered, not sent yet: by marker.
    pending: Mutex<HashMap<String, Ctx>>,
    /// Sent: by progress token, with the request's id and the marker.
    live: Mutex<HashMap<String, Live>>,
}

struct Live {
    request: String,
    marker: String,
    ctx: Ctx,
}

/// Keeps a call's route until the call is over, answered or not.
pub(crate) struct Registered {
    routes: Arc<ProgressRoutes>,
    marker: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.routes.pending).remove(&self.marker);
        lock(&self.routes.live).retain(|_, live| live.marker != self.marker);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A progress token as a map key.
fn key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

impl ProgressRoutes {
    /// Routes the progress of the request sent with the returned `_meta` to `ctx`, for as
    /// long as the returned guard lives.
    pub(crate) fn register(self: &Arc<Self>, ctx: Ctx) -> (RequestMetaObject, Registered) {
        let marker = self.next.fetch_add(1, Ordering::Relaxed).to_string();
        lock(&self.pending).insert(marker.clone(), ctx);
        let mut meta = RequestMetaObject::new();
        meta.0
            .0
            .insert(ROUTE_KEY.to_owned(), Value::from(marker.clone()));
        let registered = Registered {
            routes: Arc::clone(self),
            marker,
        };
        (meta, registered)
    }

    /// An outgoing message: a routed request loses its marker and is filed under its
    /// progress token.
    fn sending(&self, item: &mut TxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Request(request) = item else {
            return;
        };
        let id = request.id.to_string();
        let meta = request.request.get_meta_mut();
        let Some(marker) = meta.0.0.remove(ROUTE_KEY) else {
            return;
        };
        let marker = marker.as_str().unwrap_or_default().to_owned();
        let Some(ctx) = lock(&self.pending).remove(&marker) else {
            return;
        };
        if let Some(token) = meta.get_progress_token() {
            lock(&self.live).insert(
                key(&token),
                Live {
                    request: id,
                    marker,
                    ctx,
                },
            );
        }
    }

    /// An incoming message: progress on a routed call goes to its context; an answer ends
    /// its route.
    fn receiving(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let answered = match message {
            JsonRpcMessage::Notification(note) => {
                if let ServerNotification::ProgressNotification(progress) = &note.notification {
                    let params = &progress.params;
                    let ctx = lock(&self.live)
                        .get(&key(&params.progress_token))
                        .map(|live| live.ctx.clone());
                    if let Some(ctx) = ctx {
                        ctx.progress(params.progress, params.total, params.message.as_deref());
                    }
                }
                return;
            }
            JsonRpcMessage::Response(response) => response.id.to_string(),
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id.to_string(),
                None => return,
            },
            JsonRpcMessage::Request(_) => return,
        };
        lock(&self.live).retain(|_, live| live.request != answered);
    }
}

/// A transport that reports routed calls' progress as it arrives.
pub(crate) struct RouteProgress<T> {
    inner: T,
    routes: Arc<ProgressRoutes>,
}

impl<T> RouteProgress<T> {
    pub(crate) fn new(inner: T, routes: Arc<ProgressRoutes>) -> Self {
        Self { inner, routes }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for RouteProgress<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.routes.sending(&mut item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        self.routes.receiving(&message);
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
