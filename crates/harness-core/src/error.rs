//! The error type of harness-core.
//!
//! One enum for the whole crate, so a caller matches on a kind instead of juggling types, and
//! `is_*` predicates for the kinds callers usually branch on. Every message says what went
//! wrong and, where there is one, what to do about it.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

/// Everything that can go wrong in harness-core.
///
/// Errors raised *by a tool* (a failure, a refusal, a question for a human) travel through
/// this type too, because the agent loop hands them back to the model as the call's result
/// rather than ending the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Something was built or used the wrong way: a bad argument, a name collision, an
    /// unknown field. The message names the problem and the fix.
    #[error("{0}")]
    Configuration(String),

    /// [`Toolbox::get`](crate::Toolbox::get) or [`Toolbox::call`](crate::Toolbox::call)
    /// was asked for a name nothing is registered under.
    #[error("{}", unknown_tool_message(.name, .available))]
    ToolNotFound {
        /// The name that was asked for.
        name: String,
        /// The names that are registered, in registration order.
        available: Vec<String>,
    },

    /// The toolbox's approval callback refused a gated call.
    #[error("call to '{name}' was not approved")]
    ToolDenied {
        /// The tool that was refused.
        name: String,
        /// The arguments the call would have run with.
        arguments: Value,
    },

    /// A tool needs a human's answer before it can produce a result. The agent pauses the
    /// run; the human's answer becomes the call's result.
    #[error("{question}")]
    HumanInputRequired {
        /// What the tool wants to know.
        question: String,
    },

    /// The model sent arguments that do not fit the tool's parameters.
    #[error("invalid arguments for tool '{tool}': {message}")]
    InvalidArguments {
        /// The tool that was called.
        tool: String,
        /// What did not fit, as the deserialiser reported it.
        message: String,
    },

    /// A tool ran and failed (it returned `Err`, or panicked).
    #[error("tool '{tool}' failed: {message}")]
    ToolFailed {
        /// The tool that failed.
        tool: String,
        /// The tool's own error message.
        message: String,
    },

    /// A structured answer did not fit the requested type. The message lists every bad
    /// field, joined with `; `.
    #[error("{0}")]
    OutputValidation(String),

    /// A model provider failed: an HTTP error that survived the retries, or a response the
    /// provider could not read.
    #[error(transparent)]
    Provider(#[from] ProviderError),

    /// A run ended on an error after it had begun (a provider failure that survived its
    /// retries, a stream that broke off, ...): the error, and the run so far, so nothing of
    /// the transcript is lost. Displays as the error inside; the `is_*` predicates and
    /// [`Error::provider`] look through it. Run the [`state`](Error::state) again to
    /// continue: tools whose results are already in the transcript are not run again.
    #[error(transparent)]
    RunFailed(Box<RunFailure>),

    /// A file could not be read (for example by [`Image::from_path`](crate::Image::from_path)).
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file that was asked for.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
}

fn unknown_tool_message(name: &str, available: &[String]) -> String {
    if available.is_empty() {
        format!("Unknown tool: {name}. No tools are registered.")
    } else {
        format!(
            "Unknown tool: {name}. Registered tools: {}.",
            available.join(", ")
        )
    }
}

/// What [`Error::RunFailed`] carries: the error that ended a run, and the run so far.
#[derive(Debug)]
pub struct RunFailure {
    /// What ended the run.
    pub error: Error,
    /// The run so far: every message up to the failure, the usage, and the stop reason
    /// `Unfinished`. Passing it back to `Agent::run` continues the run.
    pub state: crate::agent::AgentState,
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RunFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

impl Error {
    /// The error itself, looking through [`Error::RunFailed`]: what the predicates ask.
    fn kind(&self) -> &Self {
        match self {
            Self::RunFailed(failure) => failure.error.kind(),
            other => other,
        }
    }

    /// Wraps `self` with the run so far, unless it already carries a state.
    pub(crate) fn with_state(self, state: impl FnOnce() -> crate::agent::AgentState) -> Self {
        match self {
            Self::RunFailed(_) => self,
            error => Self::RunFailed(Box::new(RunFailure {
                error,
                state: state(),
            })),
        }
    }

    /// A [`Error::Configuration`] with the given message.
    pub fn configuration(message: impl Into<String>) -> Self {
        Self::Configuration(message.into())
    }

    /// A [`Error::HumanInputRequired`]: return it from a tool to pause the run and ask a
    /// human `question`.
    ///
    /// ```
    /// use harness_core::{tool, Error};
    ///
    /// /// Ask the operator something.
    /// #[tool]
    /// fn confirm(question: String) -> Result<String, Error> {
    ///     Err(Error::human_input(question))
    /// }
    /// ```
    pub fn human_input(question: impl Into<String>) -> Self {
        Self::HumanInputRequired {
            question: question.into(),
        }
    }

    /// A [`Error::ToolFailed`] for `tool` with `message`.
    pub fn tool_failed(tool: impl Into<String>, message: impl Into<String>) -> Self {
        Self::ToolFailed {
            tool: tool.into(),
            message: message.into(),
        }
    }

    /// True for [`Error::Configuration`].
    pub fn is_configuration(&self) -> bool {
        matches!(self.kind(), Self::Configuration(_))
    }

    /// True for [`Error::ToolNotFound`].
    pub fn is_tool_not_found(&self) -> bool {
        matches!(self.kind(), Self::ToolNotFound { .. })
    }

    /// True for [`Error::ToolDenied`].
    pub fn is_tool_denied(&self) -> bool {
        matches!(self.kind(), Self::ToolDenied { .. })
    }

    /// True for [`Error::HumanInputRequired`].
    pub fn is_human_input_required(&self) -> bool {
        matches!(self.kind(), Self::HumanInputRequired { .. })
    }

    /// The run so far, for an error that ended a run ([`Error::RunFailed`]): run it again
    /// to continue.
    pub fn state(&self) -> Option<&crate::agent::AgentState> {
        match self {
            Self::RunFailed(failure) => Some(&failure.state),
            _ => None,
        }
    }

    /// The run so far, owned (see [`Error::state`]).
    pub fn into_state(self) -> Option<crate::agent::AgentState> {
        match self {
            Self::RunFailed(failure) => Some(failure.state),
            _ => None,
        }
    }

    /// The vendor's failure, when this is (or a failed run ended on) [`Error::Provider`].
    pub fn provider(&self) -> Option<&ProviderError> {
        match self.kind() {
            Self::Provider(provider) => Some(provider),
            _ => None,
        }
    }

    /// True for [`Error::Provider`].
    pub fn is_provider(&self) -> bool {
        matches!(self.kind(), Self::Provider(_))
    }

    /// The text a model reads when this error is a tool call's result: `Error: ` and the
    /// error's own message, without the "tool 'x' failed" wrapper the model already knows.
    pub fn tool_result_text(&self) -> String {
        match self.kind() {
            Self::ToolFailed { message, .. } => format!("Error: {message}"),
            other => format!("Error: {other}"),
        }
    }
}

/// What kind of failure a [`ProviderError`] is: what a caller may branch on (retry a
/// timeout, show a vendor's refusal, report a broken proxy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The vendor answered with an HTTP error status (see [`ProviderError::status`]).
    Status,
    /// The connection could not be opened, or broke (before or during a stream).
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

/// A model provider's failure, keeping what the vendor said.
///
/// Built by the providers (harness-providers) and by custom [`Llm`](crate::Llm)
/// implementations; read with the accessors. The body excerpt is bounded so a huge HTML
/// error page cannot flood a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    provider: String,
    message: String,
    kind: ProviderErrorKind,
    status: Option<u16>,
    error_type: Option<String>,
    body: Option<String>,
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
        }
    }

    /// Says what kind of failure this is.
    pub fn with_kind(mut self, kind: ProviderErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Records the HTTP status the vendor answered with (and, unless a kind was given, makes
    /// this a [`ProviderErrorKind::Status`] failure).
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        if self.kind == ProviderErrorKind::Other {
            self.kind = ProviderErrorKind::Status;
        }
        self
    }

    /// Records the vendor's own error type (for example `"rate_limit_error"`).
    pub fn with_error_type(mut self, error_type: impl Into<String>) -> Self {
        self.error_type = Some(error_type.into());
        self
    }

    /// Keeps an excerpt of the response body, cut to [`PROVIDER_BODY_EXCERPT_CHARS`].
    pub fn with_body(mut self, body: &str) -> Self {
        let mut excerpt: String = body.chars().take(PROVIDER_BODY_EXCERPT_CHARS).collect();
        if excerpt.len() < body.len() {
            excerpt.push_str("...");
        }
        self.body = Some(excerpt);
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

    /// True when the vendor answered with an HTTP status.
    pub fn is_status(&self) -> bool {
        self.status.is_some()
    }
}

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

impl std::error::Error for ProviderError {}

/// A shorthand for `Result<T, harness_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_lists_what_is_registered() {
        let err = Error::ToolNotFound {
            name: "serch".into(),
            available: vec!["search".into(), "read".into()],
        };
        assert_eq!(
            err.to_string(),
            "Unknown tool: serch. Registered tools: search, read."
        );
        assert!(err.is_tool_not_found());
    }

    #[test]
    fn provider_error_keeps_status_type_and_a_bounded_body() {
        let body = "x".repeat(PROVIDER_BODY_EXCERPT_CHARS + 10);
        let err = ProviderError::new("openai", "rate limited")
            .with_status(429)
            .with_error_type("rate_limit_error")
            .with_body(&body);
        assert_eq!(
            err.to_string(),
            "openai request failed with HTTP 429 (rate_limit_error): rate limited"
        );
        assert_eq!(
            err.body().map(str::len),
            Some(PROVIDER_BODY_EXCERPT_CHARS + 3)
        );
        assert!(Error::from(err).is_provider());
    }

    #[test]
    fn tool_result_text_drops_the_wrapper() {
        let err = Error::tool_failed("book", "airline API timed out");
        assert_eq!(err.tool_result_text(), "Error: airline API timed out");
        let denied = Error::ToolDenied {
            name: "wire".into(),
            arguments: Value::Null,
        };
        assert_eq!(
            denied.tool_result_text(),
            "Error: call to 'wire' was not approved"
        );
    }
}
