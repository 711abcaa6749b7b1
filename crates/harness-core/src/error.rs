//! The errors of deepharness, in families.
//!
//! - [`ToolError`]: what a tool returns and what the model reads as the call's result (a
//!   failure, arguments that do not fit, a refusal, an unknown tool, a question for a
//!   human). A run goes on after one; a question pauses it.
//! - Run limits and pauses are not errors at all: a run ends `Ok`, with its
//!   [`StopReason`](crate::StopReason).
//! - [`Error`]: everything else, one opaque type for every crate of the workspace (a kind,
//!   a message that says what went wrong and what to do, the source kept), read through
//!   predicates and accessors, as `reqwest::Error` is. A run that fails hands its state back
//!   beside the error ([`RunError`](crate::agent::RunError)).
//! - [`ProviderError`]: a model vendor's failure, kept whole inside an [`Error`] of kind
//!   [`ErrorKind::Provider`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// A source error kept inside another.
type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Something was built or used the wrong way: a bad setting, a name collision, an
    /// unknown field. The message names the problem and the fix.
    Configuration,
    /// A model provider failed: see [`Error::provider`].
    Provider,
    /// A tool failed where no model reads the failure (a [`Toolbox`](crate::Toolbox) call
    /// outside a run): see [`Error::tool`].
    Tool,
    /// A structured answer did not fit the type asked for, or there was none to read.
    Output,
    /// A file could not be read or written.
    Io,
    /// A workspace refused a path or an operation (harness-tools).
    Workspace,
    /// An MCP server failed (harness-tools): downcast the source to its `McpError`.
    Mcp,
    /// A graph failed to run (harness-graph): a node failed (its own error is the source),
    /// or branches of one wave wrote a field that declares no reducer.
    Graph,
}

impl ErrorKind {
    /// A short name: `configuration`, `provider`, `tool`, `output`, `io`, `workspace`, `mcp`
    /// or `graph`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Configuration => "configuration",
            Self::Provider => "provider",
            Self::Tool => "tool",
            Self::Output => "output",
            Self::Io => "io",
            Self::Workspace => "workspace",
            Self::Mcp => "mcp",
            Self::Graph => "graph",
        }
    }

    /// The kind named `name` (as [`ErrorKind::as_str`] writes it); an unknown name reads as
    /// `Configuration`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "provider" => Self::Provider,
            "tool" => Self::Tool,
            "output" => Self::Output,
            "io" => Self::Io,
            "workspace" => Self::Workspace,
            "mcp" => Self::Mcp,
            "graph" => Self::Graph,
            _ => Self::Configuration,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of deepharness: opaque, read through its kind, its predicates and accessors.
///
/// It displays as what went wrong and what to do; [`source`](std::error::Error::source)
/// gives the error underneath, kept whole (a `reqwest::Error` inside a provider failure, an
/// MCP server's `McpError`, a graph node's own error), and [`Error::downcast_ref`] reaches
/// it.
///
/// ```
/// use harness_core::{Error, ErrorKind, ProviderError};
///
/// let err: Error = ProviderError::new("openai", "rate limited").with_status(429).into();
/// assert!(err.is_provider() && !err.is_timeout());
/// assert_eq!(err.kind(), ErrorKind::Provider);
/// assert_eq!(err.status(), Some(429));
/// assert_eq!(err.to_string(), "openai request failed with HTTP 429: rate limited");
/// ```
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    message: String,
    source: Option<Source>,
    timeout: bool,
    connect: bool,
}

impl Error {
    /// An error of `kind` that says `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self(Box::new(Inner {
            kind,
            message: message.into(),
            source: None,
            timeout: false,
            connect: false,
        }))
    }

    /// An error of `kind` standing for `source`: it displays as the source does and keeps it.
    pub fn from_source(
        kind: ErrorKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        let message = source.to_string();
        Self::new(kind, message).with_source(source)
    }

    /// A [`ErrorKind::Configuration`] error.
    pub fn configuration(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Configuration, message)
    }

    /// Keeps `source` as the error underneath this one: an error, or one already boxed.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<Source>) -> Self {
        self.0.source = Some(source.into());
        self
    }

    /// Marks the error as a timeout: nothing arrived in time (see [`Error::is_timeout`]).
    #[must_use]
    pub fn timed_out(mut self) -> Self {
        self.0.timeout = true;
        self
    }

    /// Marks the error as a connection that could not be opened (see
    /// [`Error::is_connect`]).
    #[must_use]
    pub fn connect_failed(mut self) -> Self {
        self.0.connect = true;
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// True for [`ErrorKind::Configuration`].
    pub fn is_configuration(&self) -> bool {
        self.0.kind == ErrorKind::Configuration
    }

    /// True for a model provider's failure ([`ErrorKind::Provider`]).
    pub fn is_provider(&self) -> bool {
        self.0.kind == ErrorKind::Provider
    }

    /// True when nothing arrived in time: a request's or a stream's timeout, an MCP server
    /// that did not answer. Worth retrying later.
    pub fn is_timeout(&self) -> bool {
        self.0.timeout
    }

    /// True when a connection could not be opened (a server down, a wrong address).
    pub fn is_connect(&self) -> bool {
        self.0.connect
    }

    /// The HTTP status a provider answered with, when that is what failed.
    pub fn status(&self) -> Option<u16> {
        self.provider().and_then(ProviderError::status)
    }

    /// How long the provider asked to wait before trying again (`Retry-After`), when it
    /// said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.provider().and_then(ProviderError::retry_after)
    }

    /// The provider's failure, for an [`ErrorKind::Provider`] error.
    pub fn provider(&self) -> Option<&ProviderError> {
        self.downcast_ref()
    }

    /// The tool's failure, for an [`ErrorKind::Tool`] error.
    pub fn tool(&self) -> Option<&ToolError> {
        self.downcast_ref()
    }

    /// The error underneath, as a `T`, when it is one (an `McpError`, a graph node's error,
    /// a `reqwest::Error`...).
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.0.source.as_deref().and_then(|s| s.downcast_ref())
    }

    /// A [`ErrorKind::Io`] error reading or writing `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        Self::new(ErrorKind::Io, format!("{}: {source}", path.display())).with_source(source)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.0.kind)
            .field("message", &self.0.message);
        if let Some(source) = &self.0.source {
            d.field("source", source);
        }
        if self.0.timeout {
            d.field("timeout", &true);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<ProviderError> for Error {
    fn from(error: ProviderError) -> Self {
        let timeout = error.kind() == ProviderErrorKind::Timeout;
        let connect = error.kind() == ProviderErrorKind::Connect;
        let mut wrapped = Self::from_source(ErrorKind::Provider, error);
        wrapped.0.timeout = timeout;
        wrapped.0.connect = connect;
        wrapped
    }
}

impl From<ToolError> for Error {
    fn from(error: ToolError) -> Self {
        Self::from_source(ErrorKind::Tool, error)
    }
}

/// A library error met inside a tool (a workspace refusing a path, a server failing): the
/// call fails saying what the error says, the error kept as its source.
impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::failed(error.to_string()).with_source(error)
    }
}

/// What kind of failure a [`ToolError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// No tool is registered under the name called.
    NotFound,
    /// The arguments do not fit the tool's parameters.
    InvalidArguments,
    /// The call was refused (the approval callback said no).
    Denied,
    /// The tool ran and failed (it returned an error, or panicked).
    Failed,
    /// The tool needs a human's answer before it can produce a result: the run pauses and
    /// the answer becomes the call's result.
    NeedsHuman,
    /// The tool did not finish within its timeout ([`ToolSpec::with_timeout`],
    /// [`ToolboxBuilder::tool_timeout`](crate::tool::ToolboxBuilder::tool_timeout)) and was
    /// stopped: its future was dropped.
    ///
    /// [`ToolSpec::with_timeout`]: crate::tool::ToolSpec::with_timeout
    TimedOut,
}

impl ToolErrorKind {
    /// A short name: `not_found`, `invalid_arguments`, `denied`, `failed`, `needs_human` or
    /// `timed_out` (the `error.type` of a tool call's span).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::InvalidArguments => "invalid_arguments",
            Self::Denied => "denied",
            Self::Failed => "failed",
            Self::NeedsHuman => "needs_human",
            Self::TimedOut => "timed_out",
        }
    }

    /// The kind named `name` (as [`ToolErrorKind::as_str`] writes it); an unknown name reads
    /// as `Failed`.
    pub fn from_name(name: &str) -> Self {
        match name {
            "not_found" => Self::NotFound,
            "invalid_arguments" => Self::InvalidArguments,
            "denied" => Self::Denied,
            "needs_human" => Self::NeedsHuman,
            "timed_out" => Self::TimedOut,
            _ => Self::Failed,
        }
    }
}

/// A tool error as data: `{"kind", "tool", "message", "arguments"}`, what a journal records
/// so a replayed run hands the model the same result. The source, if any, is not kept.
impl serde::Serialize for ToolError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut record = serializer.serialize_struct("ToolError", 4)?;
        record.serialize_field("kind", self.0.kind.as_str())?;
        record.serialize_field("tool", &self.0.tool)?;
        record.serialize_field("message", &self.0.message)?;
        record.serialize_field("arguments", &self.0.arguments)?;
        record.end()
    }
}

impl<'de> serde::Deserialize<'de> for ToolError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Record {
            kind: String,
            #[serde(default)]
            tool: Option<String>,
            message: String,
            #[serde(default)]
            arguments: Option<Value>,
        }
        let record = Record::deserialize(deserializer)?;
        let mut error = ToolError::new(ToolErrorKind::from_name(&record.kind), record.message);
        error.0.tool = record.tool;
        error.0.arguments = record.arguments;
        Ok(error)
    }
}

/// What a tool returns when it does not produce a result, and what the model then reads
/// as the call's result ([`ToolError::model_text`]): a run goes on after one, except
/// [`ToolErrorKind::NeedsHuman`], which pauses it.
///
// The example names `#[tool]`, of the `macros` feature.
#[cfg_attr(feature = "macros", doc = " ```")]
#[cfg_attr(not(feature = "macros"), doc = " ```ignore")]
/// use harness_core::{tool, ToolError};
///
/// /// Book a flight.
/// #[tool]
/// fn book(to: String) -> Result<String, ToolError> {
///     if to.is_empty() {
///         return Err(ToolError::invalid_arguments("`to` must name a city"));
///     }
///     Err(ToolError::needs_human(format!("Book the 06:10 to {to}?")))
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ToolError(Box<ToolInner>);

// Boxed so that a `Result<_, ToolError>` stays one pointer wide on its error side.
#[derive(Debug, Clone)]
struct ToolInner {
    kind: ToolErrorKind,
    tool: Option<String>,
    message: String,
    arguments: Option<Value>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolError {
    fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self(Box::new(ToolInner {
            kind,
            tool: None,
            message: message.into(),
            arguments: None,
            source: None,
        }))
    }

    /// The tool ran and failed, saying `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Failed, message)
    }

    /// The arguments do not fit; `message` says how.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::InvalidArguments, message)
    }

    /// The tool asks a human `question`: inside a run the run pauses, and the answer
    /// becomes the call's result.
    pub fn needs_human(question: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::NeedsHuman, question)
    }

    /// The call of `tool` with `arguments` was refused.
    pub fn denied(tool: impl Into<String>, arguments: Value) -> Self {
        let tool = tool.into();
        let mut error = Self::new(
            ToolErrorKind::Denied,
            format!("call to '{tool}' was not approved"),
        );
        error.0.tool = Some(tool);
        error.0.arguments = Some(arguments);
        error
    }

    /// The call of `tool` did not finish within `limit` and was stopped.
    pub fn timed_out(tool: impl Into<String>, limit: std::time::Duration) -> Self {
        let tool = tool.into();
        let mut error = Self::new(
            ToolErrorKind::TimedOut,
            format!(
                "tool '{tool}' did not finish within {} and was stopped; try it with less \
                 work, or another way",
                Seconds(limit)
            ),
        );
        error.0.tool = Some(tool);
        error
    }

    /// No tool is registered as `name`; `available` are the names that are.
    pub fn not_found(name: &str, available: &[&str]) -> Self {
        let message = if available.is_empty() {
            format!("Unknown tool: {name}. No tools are registered.")
        } else {
            format!(
                "Unknown tool: {name}. Registered tools: {}.",
                available.join(", ")
            )
        };
        let mut error = Self::new(ToolErrorKind::NotFound, message);
        error.0.tool = Some(name.to_owned());
        error
    }

    /// Keeps `source` as the error underneath (a library error a tool met, say).
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.0.source = Some(Arc::new(source));
        self
    }

    /// Names the tool that failed, unless it is named already.
    #[must_use]
    pub fn for_tool(mut self, tool: &str) -> Self {
        if self.0.tool.is_none() {
            self.0.tool = Some(tool.to_owned());
        }
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ToolErrorKind {
        self.0.kind
    }

    /// The tool, when known.
    pub fn tool(&self) -> Option<&str> {
        self.0.tool.as_deref()
    }

    /// The message: for a [`ToolErrorKind::NeedsHuman`] error, the question.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The arguments of a refused call.
    pub fn arguments(&self) -> Option<&Value> {
        self.0.arguments.as_ref()
    }

    /// True for [`ToolErrorKind::NeedsHuman`].
    pub fn is_needs_human(&self) -> bool {
        self.0.kind == ToolErrorKind::NeedsHuman
    }

    /// True for [`ToolErrorKind::Denied`].
    pub fn is_denied(&self) -> bool {
        self.0.kind == ToolErrorKind::Denied
    }

    /// True for [`ToolErrorKind::TimedOut`].
    pub fn is_timed_out(&self) -> bool {
        self.0.kind == ToolErrorKind::TimedOut
    }

    /// True for [`ToolErrorKind::NotFound`].
    pub fn is_not_found(&self) -> bool {
        self.0.kind == ToolErrorKind::NotFound
    }

    /// The text a model reads as the call's result: `Error: ` and what went wrong.
    pub fn model_text(&self) -> String {
        match (self.0.kind, self.0.tool.as_deref()) {
            (ToolErrorKind::InvalidArguments, Some(tool)) => {
                format!(
                    "Error: invalid arguments for tool '{tool}': {}",
                    self.0.message
                )
            }
            _ => format!("Error: {}", self.0.message),
        }
    }
}

/// A duration as a person writes a timeout: `30s`, `1.5s`, `250ms`.
struct Seconds(std::time::Duration);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.as_millis();
        if millis < 1000 {
            write!(f, "{millis}ms")
        } else if millis.is_multiple_of(1000) {
            write!(f, "{}s", millis / 1000)
        } else {
            write!(f, "{}s", self.0.as_secs_f64())
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0.kind, self.0.tool.as_deref()) {
            (ToolErrorKind::InvalidArguments, Some(tool)) => {
                write!(f, "invalid arguments for tool '{tool}': {}", self.0.message)
            }
            (ToolErrorKind::Failed, Some(tool)) => {
                write!(f, "tool '{tool}' failed: {}", self.0.message)
            }
            _ => f.write_str(&self.0.message),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// What kind of failure a [`ProviderError`] is: what a caller may branch on (retry a
/// timeout, show a vendor's refusal, report a broken proxy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The vendor answered with an HTTP error status (see [`ProviderError::status`]).
    Status,
    /// The connection could not be opened.
    Connect,
    /// The connection broke (before or during a stream).
    Transport,
    /// Nothing arrived in time: the request's timeout, a stream's idle timeout (no byte for
    /// too long) or its total timeout.
    Timeout,
    /// The answer ended before it was complete: a stream without the vendor's end mark, an
    /// empty body.
    Incomplete,
    /// The answer could not be read: not JSON, not an event stream, a required field
    /// missing, more bytes than the client accepts.
    Malformed,
    /// The vendor reported an error inside an answer that started as a success (an error
    /// event in a stream, an error object in a 200 body).
    Vendor,
    /// Anything else (the kind a custom [`Llm`](crate::Llm) gets from [`ProviderError::new`]).
    Other,
}

impl ProviderErrorKind {
    /// A short name: `status`, `connect`, `transport`, `timeout`, `incomplete`, `malformed`,
    /// `vendor` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Connect => "connect",
            Self::Transport => "transport",
            Self::Timeout => "timeout",
            Self::Incomplete => "incomplete",
            Self::Malformed => "malformed",
            Self::Vendor => "vendor",
            Self::Other => "other",
        }
    }
}

/// A model provider's failure, keeping what the vendor said.
///
/// Built by the providers (harness-providers) and by custom [`Llm`](crate::Llm)
/// implementations; read with the accessors. The body excerpt is bounded so a huge HTML
/// error page cannot flood a log; the transport's own error is kept as the source.
#[derive(Debug, Clone)]
pub struct ProviderError {
    provider: String,
    message: String,
    kind: ProviderErrorKind,
    status: Option<u16>,
    error_type: Option<String>,
    body: Option<String>,
    retry_after: Option<Duration>,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// How much of a vendor's error body a [`ProviderError`] keeps, in characters.
pub const PROVIDER_BODY_EXCERPT_CHARS: usize = 2000;

impl ProviderError {
    /// A failure of `provider` (a short id such as `"openai"`) described by `message`.
    pub fn new(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            message: message.into(),
            kind: ProviderErrorKind::Other,
            status: None,
            error_type: None,
            body: None,
            retry_after: None,
            source: None,
        }
    }

    /// Says what kind of failure this is.
    #[must_use]
    pub fn with_kind(mut self, kind: ProviderErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Records the HTTP status the vendor answered with (and, unless a kind was given, makes
    /// this a [`ProviderErrorKind::Status`] failure).
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        if self.kind == ProviderErrorKind::Other {
            self.kind = ProviderErrorKind::Status;
        }
        self
    }

    /// Records the vendor's own error type (for example `"rate_limit_error"`).
    #[must_use]
    pub fn with_error_type(mut self, error_type: impl Into<String>) -> Self {
        self.error_type = Some(error_type.into());
        self
    }

    /// Keeps an excerpt of the response body, cut to [`PROVIDER_BODY_EXCERPT_CHARS`].
    #[must_use]
    pub fn with_body(mut self, body: &str) -> Self {
        let mut excerpt: String = body.chars().take(PROVIDER_BODY_EXCERPT_CHARS).collect();
        if excerpt.len() < body.len() {
            excerpt.push_str("...");
        }
        self.body = Some(excerpt);
        self
    }

    /// Records how long the vendor asked to wait before trying again (`Retry-After`).
    #[must_use]
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Keeps the error underneath (the HTTP client's, say) whole.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Names the provider: a wrapper or a shared reader names the vendor it serves.
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// The provider's short id.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ProviderErrorKind {
        self.kind
    }

    /// True when nothing arrived in time (a request's timeout, a stream's idle or total
    /// timeout).
    pub fn is_timeout(&self) -> bool {
        self.kind == ProviderErrorKind::Timeout
    }

    /// The HTTP status, when the failure was an HTTP answer.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The vendor's error type, when its body named one.
    pub fn error_type(&self) -> Option<&str> {
        self.error_type.as_deref()
    }

    /// An excerpt of the vendor's response body.
    pub fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }

    /// How long the vendor asked to wait before trying again, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// True when the vendor answered with an HTTP status.
    pub fn is_status(&self) -> bool {
        self.status.is_some()
    }
}

/// Two provider errors are equal when they say the same: the source underneath is not
/// compared.
impl PartialEq for ProviderError {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.provider,
            &self.message,
            self.kind,
            self.status,
            &self.error_type,
            &self.body,
            self.retry_after,
        ) == (
            &other.provider,
            &other.message,
            other.kind,
            other.status,
            &other.error_type,
            &other.body,
            other.retry_after,
        )
    }
}

impl Eq for ProviderError {}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} request failed", self.provider)?;
        if let Some(status) = self.status {
            write!(f, " with HTTP {status}")?;
        }
        if let Some(kind) = &self.error_type {
            write!(f, " ({kind})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// A shorthand for `Result<T, harness_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_lists_what_is_registered() {
        let err = ToolError::not_found("serch", &["search", "read"]);
        assert_eq!(
            err.to_string(),
            "Unknown tool: serch. Registered tools: search, read."
        );
        assert!(err.is_not_found());
        assert_eq!(
            err.model_text(),
            "Error: Unknown tool: serch. Registered tools: search, read."
        );
    }

    #[test]
    fn provider_error_keeps_status_type_a_bounded_body_and_its_source() {
        let body = "x".repeat(PROVIDER_BODY_EXCERPT_CHARS + 10);
        let io = std::io::Error::other("connection reset");
        let err = ProviderError::new("openai", "rate limited")
            .with_status(429)
            .with_error_type("rate_limit_error")
            .with_retry_after(Duration::from_secs(7))
            .with_body(&body)
            .with_source(io);
        assert_eq!(
            err.to_string(),
            "openai request failed with HTTP 429 (rate_limit_error): rate limited"
        );
        assert_eq!(
            err.body().map(str::len),
            Some(PROVIDER_BODY_EXCERPT_CHARS + 3)
        );
        let wrapped = Error::from(err);
        assert!(wrapped.is_provider());
        assert_eq!(wrapped.status(), Some(429));
        assert_eq!(wrapped.retry_after(), Some(Duration::from_secs(7)));
        // The chain: Error -> ProviderError -> io::Error.
        let provider = std::error::Error::source(&wrapped).unwrap();
        let io = provider.source().unwrap();
        assert_eq!(io.to_string(), "connection reset");
    }

    #[test]
    fn timeouts_and_connection_failures_are_flagged() {
        let timeout: Error = ProviderError::new("x", "slow")
            .with_kind(ProviderErrorKind::Timeout)
            .into();
        assert!(timeout.is_timeout() && !timeout.is_connect());
        let refused: Error = ProviderError::new("x", "refused")
            .with_kind(ProviderErrorKind::Connect)
            .into();
        assert!(refused.is_connect() && !refused.is_timeout());
    }

    #[test]
    fn the_model_reads_a_tool_error_without_the_wrapper() {
        let err = ToolError::failed("airline API timed out").for_tool("book");
        assert_eq!(err.to_string(), "tool 'book' failed: airline API timed out");
        assert_eq!(err.model_text(), "Error: airline API timed out");
        let denied = ToolError::denied("wire", Value::Null);
        assert_eq!(
            denied.model_text(),
            "Error: call to 'wire' was not approved"
        );
        let bad = ToolError::invalid_arguments("missing field `a`").for_tool("add");
        assert_eq!(
            bad.model_text(),
            "Error: invalid arguments for tool 'add': missing field `a`"
        );
    }
}
