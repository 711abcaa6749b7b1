//! `Ctx`: what a running tool can reach of its run.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::human::{ElicitationRequest, ElicitationResponse, Human};
use crate::error::{Result, ToolError};
use crate::message::Message;

/// The run a tool call belongs to: its dependencies and its transcript so far.
///
/// A tool parameter of type `Ctx` (or `&Ctx`) is filled in by the runtime and never appears
/// in the tool's schema, so a tool can reach a database handle or a tenant without a global.
/// Outside a run, a tool gets an empty `Ctx`: [`Ctx::deps`] is `None`, never a panic.
///
/// ```
/// use harness_core::Ctx;
///
/// struct Deps { tenant: &'static str }
///
/// let ctx = Ctx::new().with_deps(Deps { tenant: "acme" });
/// assert_eq!(ctx.deps::<Deps>().map(|d| d.tenant), Some("acme"));
/// assert!(ctx.deps::<String>().is_none()); // the wrong type is None, not a panic
/// assert!(Ctx::new().deps::<Deps>().is_none());
/// ```
#[derive(Clone, Default)]
pub struct Ctx {
    deps: Option<Deps>,
    messages: Arc<Vec<Message>>,
    updates: Option<Arc<dyn UpdateSink>>,
    human: Option<Arc<dyn Human>>,
    call: Option<Arc<Call>>,
}

/// The call a context was handed to: set by the toolbox as it runs a tool.
#[derive(Debug)]
struct Call {
    tool: String,
    id: Option<String>,
}

/// Where a tool's [`ToolUpdate`]s go, each with the call it came from: a watched run's
/// events (the agent sets one per run, so a call costs no closure and no copy of its name
/// and id until a tool reports something), or a caller's callback.
pub(crate) trait UpdateSink: Send + Sync {
    /// `tool`'s call `call_id` reported `update`.
    fn update(&self, tool: &str, call_id: Option<&str>, update: ToolUpdate);
}

/// A caller's callback, set by [`Ctx::with_updates`]: the update alone.
struct Callback<F>(F);

impl<F: Fn(ToolUpdate) + Send + Sync> UpdateSink for Callback<F> {
    fn update(&self, _tool: &str, _call_id: Option<&str>, update: ToolUpdate) {
        (self.0)(update);
    }
}

/// What a running tool reports before it returns: how far along it is, or a log message.
/// Sent with [`Ctx::progress`] and [`Ctx::log`]; a run that is watched hands each on as
/// [`AgentEvent::ToolUpdate`](crate::AgentEvent::ToolUpdate), a toolbox served over MCP
/// as the protocol's progress and log notifications. With no one listening they go nowhere.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolUpdate {
    /// Progress: `progress` of `total` (when known), with what it is doing.
    Progress {
        /// How far along; grows with each update.
        progress: f64,
        /// Where it will end, when known.
        total: Option<f64>,
        /// What it is doing, if it says.
        message: Option<String>,
    },
    /// A log message.
    Log {
        /// How much it matters.
        level: LogLevel,
        /// What it says.
        message: String,
    },
}

/// The severity of a [`ToolUpdate::Log`], MCP's eight levels (RFC 5424's), least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Ordinary information.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed badly.
    Critical,
    /// Action is needed at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// The wire name: `debug`, `info`, `notice`, `warning`, `error`, `critical`, `alert`,
    /// `emergency`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// A run's dependencies, type-erased so one agent serves runs with any.
pub(crate) type Deps = Arc<dyn Any + Send + Sync>;

impl Ctx {
    /// An empty context: no dependencies, no transcript.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives the run `deps`, whatever the tools need: a database pool, a tenant, a request
    /// scope. They belong to the run, not to the agent, so one agent serves many requests.
    /// Read them back as a reference ([`Ctx::deps`]) or a shared handle
    /// ([`Ctx::shared_deps`]).
    #[must_use]
    pub fn with_deps<D: Any + Send + Sync>(mut self, deps: D) -> Self {
        self.deps = Some(Arc::new(deps));
        self
    }

    /// Sets the transcript a tool sees.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = Arc::new(messages);
        self
    }

    /// Sends the tool's [`ToolUpdate`]s to `updates`: what a runtime that listens sets (the
    /// agent loop for a watched run, an MCP server for a call with a progress token).
    #[must_use]
    pub fn with_updates(mut self, updates: impl Fn(ToolUpdate) + Send + Sync + 'static) -> Self {
        self.updates = Some(Arc::new(Callback(updates)));
        self
    }

    /// Sends the tool's updates to `sink`, tagged with the call set by
    /// [`with_call`](Self::with_call).
    pub(crate) fn with_update_sink(mut self, sink: Arc<dyn UpdateSink>) -> Self {
        self.updates = Some(sink);
        self
    }

    /// Reports `update` to whoever listens; nothing happens when no one does.
    pub fn report(&self, update: ToolUpdate) {
        if let Some(sink) = &self.updates {
            sink.update(self.tool_name(), self.call_id(), update);
        }
    }

    /// Reports progress: `progress` of `total` (when known), with an optional message.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use harness_core::{Ctx, ToolUpdate};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = Arc::clone(&seen);
    /// let ctx = Ctx::new().with_updates(move |u| sink.lock().unwrap().push(u));
    /// ctx.progress(1.0, Some(4.0), Some("reading"));
    /// assert_eq!(
    ///     seen.lock().unwrap()[0],
    ///     ToolUpdate::Progress { progress: 1.0, total: Some(4.0), message: Some("reading".into()) }
    /// );
    /// Ctx::new().progress(1.0, None, None); // no one listens: nothing happens
    /// ```
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if self.updates.is_some() {
            self.report(ToolUpdate::Progress {
                progress,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Reports a log message of `level`.
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        if self.updates.is_some() {
            self.report(ToolUpdate::Log {
                level,
                message: message.into(),
            });
        }
    }

    /// True when someone listens to [`ToolUpdate`]s.
    pub fn has_updates(&self) -> bool {
        self.updates.is_some()
    }

    /// Gives the tool a [`Human`] to put questions to, for [`Ctx::ask`] (an `Arc` of one
    /// is one too, to share it). A toolbox built with
    /// [`ToolboxBuilder::human`](crate::ToolboxBuilder::human) sets its own on every call
    /// whose context has none.
    #[must_use]
    pub fn with_human(self, human: impl Human + 'static) -> Self {
        self.with_human_arc(Arc::new(human))
    }

    /// Sets a human already behind an `Arc<dyn Human>`, without wrapping it again.
    pub(crate) fn with_human_arc(mut self, human: Arc<dyn Human>) -> Self {
        self.human = Some(human);
        self
    }

    /// The [`Human`] this call may turn to, if any.
    pub fn human(&self) -> Option<&Arc<dyn Human>> {
        self.human.as_ref()
    }

    /// True when a [`Human`] is reachable: [`Ctx::ask`] will reach a person during the call.
    pub fn has_human(&self) -> bool {
        self.human.is_some()
    }

    /// Asks the run's [`Human`] `question` and waits for the answer.
    ///
    /// # Errors
    /// With no human reachable, [`ToolError::needs_human`] with the question's message:
    /// returned from the tool with `?`, it pauses an agent's run for the answer to come
    /// later (pushed as the call's result), the same channel as an approval.
    pub async fn ask(
        &self,
        question: ElicitationRequest,
    ) -> Result<ElicitationResponse, ToolError> {
        match &self.human {
            Some(human) => Ok(human.ask(question).await),
            None => Err(ToolError::needs_human(question.message)),
        }
    }

    /// The name of the tool this context was handed to; empty outside a toolbox's call.
    pub fn tool_name(&self) -> &str {
        self.call.as_ref().map_or("", |call| call.tool.as_str())
    }

    /// The model's id for this call, when it gave one: stable across a resumed or replayed
    /// run, so a tool with effects outside the process can derive an idempotency key from it.
    pub fn call_id(&self) -> Option<&str> {
        self.call.as_ref().and_then(|call| call.id.as_deref())
    }

    /// Records the call this context is handed to.
    pub(crate) fn with_call(self, tool: &str, id: Option<&str>) -> Self {
        self.with_call_id(tool, id.map(str::to_owned))
    }

    /// As [`with_call`](Self::with_call), keeping the id it is given rather than a copy.
    pub(crate) fn with_call_id(mut self, tool: &str, id: Option<String>) -> Self {
        // A watched run's loop records the call before the toolbox does (its updates are
        // tagged with it): once is enough.
        if self
            .call
            .as_ref()
            .is_some_and(|call| call.tool == tool && call.id == id)
        {
            return self;
        }
        self.call = Some(Arc::new(Call {
            tool: tool.to_owned(),
            id,
        }));
        self
    }

    /// Shares the run's transcript without copying it.
    pub(crate) fn with_shared_messages(mut self, messages: Arc<Vec<Message>>) -> Self {
        self.messages = messages;
        self
    }

    /// Passes type-erased dependencies on (a sub-agent inherits its caller's).
    pub(crate) fn with_raw_deps(mut self, deps: Option<Deps>) -> Self {
        self.deps = deps;
        self
    }

    /// The type-erased dependencies.
    pub(crate) fn raw_deps(&self) -> Option<Deps> {
        self.deps.clone()
    }

    /// The run's dependencies, when they are a `D`.
    pub fn deps<D: Any + Send + Sync>(&self) -> Option<&D> {
        self.deps.as_deref().and_then(|d| d.downcast_ref::<D>())
    }

    /// The run's dependencies as a shared handle, when they are a `D`.
    pub fn shared_deps<D: Any + Send + Sync>(&self) -> Option<Arc<D>> {
        self.deps.clone().and_then(|d| d.downcast::<D>().ok())
    }

    /// True when the run was given dependencies of any type.
    pub fn has_deps(&self) -> bool {
        self.deps.is_some()
    }

    /// The run's transcript up to the turn that made this call, the model's request
    /// included. Empty outside a run.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("has_deps", &self.has_deps())
            .field("messages", &self.messages.len())
            .field("has_human", &self.has_human())
            .field("call", &self.call)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_deps_and_messages_are_reachable() {
        let deps = Arc::new(7_u32);
        let ctx = Ctx::new()
            .with_deps(Arc::clone(&deps))
            .with_messages(vec![Message::user("hi")]);
        assert_eq!(ctx.deps::<Arc<u32>>().map(|d| **d), Some(7));
        let ctx = ctx.with_deps(7_u32);
        assert_eq!(ctx.shared_deps::<u32>().as_deref(), Some(&7));
        assert!(ctx.shared_deps::<i64>().is_none());
        assert_eq!(ctx.messages(), &[Message::user("hi")]);
        assert_eq!(
            format!("{ctx:?}"),
            "Ctx { has_deps: true, messages: 1, has_human: false, call: None, .. }"
        );
    }
}
