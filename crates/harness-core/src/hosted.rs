//! Hosted tools: tools the vendor runs on its own side (a web search, a search of the
//! vendor's vector stores, a code sandbox, a remote MCP server), offered through
//! [`ModelSettings::hosted_tools`](crate::ModelSettings::hosted_tools), and what their calls
//! leave in a transcript ([`HostedCall`]).
//!
//! A hosted tool is not a [`Tool`](crate::Tool): the agent never runs it. The model calls it,
//! the vendor runs it and answers in the same turn, and the call and its result come back as a
//! [`Block::HostedCall`](crate::Block::HostedCall) beside the text (and, in a stream, as an
//! [`LlmEvent::HostedCall`](crate::LlmEvent::HostedCall) when it completes).
//!
//! Only a provider that can offer them sends them (the OpenAI Responses API does); every other
//! provider refuses a request that carries one with a
//! [`Configuration`](crate::ErrorKind::Configuration) error naming itself and the tool, rather
//! than quietly running without it.
//!
//! ```
//! use harness_core::ModelSettings;
//! use harness_core::hosted::{McpApproval, RemoteMcp, SearchContextSize, WebSearch};
//!
//! let settings = ModelSettings::new()
//!     .with_hosted_tool(WebSearch::new().with_context_size(SearchContextSize::Low))
//!     .with_hosted_tool(
//!         RemoteMcp::new("docs", "https://mcp.example.com/sse")
//!             .with_allowed_tools(["search_docs"])
//!             .with_require_approval(McpApproval::Never),
//!     );
//! let kinds: Vec<&str> = settings.hosted_tools.iter().map(|t| t.kind()).collect();
//! assert_eq!(kinds, ["web_search", "mcp"]);
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool the vendor runs on its own side. Built from its options type ([`WebSearch`],
/// [`FileSearch`], [`CodeInterpreter`], [`RemoteMcp`]) or, for a hosted tool this library does
/// not type, with [`HostedTool::custom`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HostedTool {
    /// A web search.
    WebSearch(WebSearch),
    /// A search of the vendor's vector stores.
    FileSearch(FileSearch),
    /// A code sandbox.
    CodeInterpreter(CodeInterpreter),
    /// A remote MCP server the vendor calls.
    Mcp(RemoteMcp),
    /// A hosted tool this library does not type: its `type` and the rest of its object, sent
    /// as they are.
    Custom {
        /// The tool's `type` on the wire, such as `image_generation`.
        kind: String,
        /// The tool's other fields.
        config: Map<String, Value>,
    },
}

impl HostedTool {
    /// A hosted tool this library does not type: `{"type": kind, ...config}` on the wire
    /// (`config`'s own `type`, if any, is overridden; a `config` that is not an object adds
    /// nothing).
    ///
    /// ```
    /// use harness_core::hosted::HostedTool;
    /// use serde_json::json;
    ///
    /// let tool = HostedTool::custom("image_generation", json!({"quality": "low"}));
    /// assert_eq!(tool.kind(), "image_generation");
    /// ```
    pub fn custom(kind: impl Into<String>, config: Value) -> Self {
        let config = match config {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self::Custom {
            kind: kind.into(),
            config,
        }
    }

    /// The tool's type as the OpenAI Responses API names it: `web_search`, `file_search`,
    /// `code_interpreter`, `mcp`, or a custom tool's kind. Errors name a tool by it.
    pub fn kind(&self) -> &str {
        match self {
            Self::WebSearch(_) => "web_search",
            Self::FileSearch(_) => "file_search",
            Self::CodeInterpreter(_) => "code_interpreter",
            Self::Mcp(_) => "mcp",
            Self::Custom { kind, .. } => kind,
        }
    }
}

impl From<WebSearch> for HostedTool {
    fn from(value: WebSearch) -> Self {
        Self::WebSearch(value)
    }
}

impl From<FileSearch> for HostedTool {
    fn from(value: FileSearch) -> Self {
        Self::FileSearch(value)
    }
}

impl From<CodeInterpreter> for HostedTool {
    fn from(value: CodeInterpreter) -> Self {
        Self::CodeInterpreter(value)
    }
}

impl From<RemoteMcp> for HostedTool {
    fn from(value: RemoteMcp) -> Self {
        Self::Mcp(value)
    }
}

/// How much of what a web search finds the model is given: more costs more and takes longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SearchContextSize {
    /// The least context.
    Low,
    /// The service's default.
    Medium,
    /// The most context.
    High,
}

impl SearchContextSize {
    /// The wire name: `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Where the user roughly is, so a web search finds what is near: each part optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UserLocation {
    /// The country, as an ISO 3166-1 alpha-2 code (`GB`).
    pub country: Option<String>,
    /// The region or state (`England`).
    pub region: Option<String>,
    /// The city (`London`).
    pub city: Option<String>,
    /// The IANA time zone (`Europe/London`).
    pub timezone: Option<String>,
}

impl UserLocation {
    /// No part known.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the country (ISO 3166-1 alpha-2).
    #[must_use]
    pub fn with_country(mut self, country: impl Into<String>) -> Self {
        self.country = Some(country.into());
        self
    }

    /// Sets the region.
    #[must_use]
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Sets the city.
    #[must_use]
    pub fn with_city(mut self, city: impl Into<String>) -> Self {
        self.city = Some(city.into());
        self
    }

    /// Sets the IANA time zone.
    #[must_use]
    pub fn with_timezone(mut self, timezone: impl Into<String>) -> Self {
        self.timezone = Some(timezone.into());
        self
    }
}

/// The vendor's web search. Unset options are not sent: the service's defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebSearch {
    /// How much of what the search finds the model is given.
    pub context_size: Option<SearchContextSize>,
    /// Where the user roughly is.
    pub user_location: Option<UserLocation>,
    /// Only these domains are searched (`filters.allowed_domains`); empty for all.
    pub allowed_domains: Vec<String>,
}

impl WebSearch {
    /// A web search with the service's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how much of what the search finds the model is given.
    #[must_use]
    pub fn with_context_size(mut self, size: SearchContextSize) -> Self {
        self.context_size = Some(size);
        self
    }

    /// Sets where the user roughly is.
    #[must_use]
    pub fn with_user_location(mut self, location: UserLocation) -> Self {
        self.user_location = Some(location);
        self
    }

    /// Searches only these domains (`example.com` covers its subdomains).
    #[must_use]
    pub fn with_allowed_domains(
        mut self,
        domains: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_domains = domains.into_iter().map(Into::into).collect();
        self
    }
}

/// A search of the vendor's vector stores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileSearch {
    /// The vector stores searched.
    pub vector_store_ids: Vec<String>,
    /// The most results the model is given, when set.
    pub max_results: Option<u32>,
}

impl FileSearch {
    /// A search of these vector stores.
    pub fn new(vector_store_ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            vector_store_ids: vector_store_ids.into_iter().map(Into::into).collect(),
            max_results: None,
        }
    }

    /// Gives the model at most `n` results (`max_num_results`).
    #[must_use]
    pub fn with_max_results(mut self, n: u32) -> Self {
        self.max_results = Some(n);
        self
    }
}

/// The vendor's code sandbox: a container the service makes for the request (with the files
/// given), or one made before and named by its id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeInterpreter {
    /// The container's id; `None` for one the service makes (`{"type": "auto"}`).
    pub container: Option<String>,
    /// Files put in a container the service makes.
    pub file_ids: Vec<String>,
}

impl CodeInterpreter {
    /// A sandbox the service makes for the request.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sandbox made before, with this id.
    pub fn in_container(id: impl Into<String>) -> Self {
        Self {
            container: Some(id.into()),
            file_ids: Vec::new(),
        }
    }

    /// Puts these files in the sandbox the service makes.
    #[must_use]
    pub fn with_file_ids(mut self, ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.file_ids = ids.into_iter().map(Into::into).collect();
        self
    }
}

/// Whether the service asks before it calls a remote MCP server's tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpApproval {
    /// Ask before every call. The turn then ends with an `mcp_approval_request`
    /// [`HostedCall`], which the agent does not answer.
    Always,
    /// Call without asking.
    Never,
}

impl McpApproval {
    /// The wire name: `always` or `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Never => "never",
        }
    }
}

/// A remote MCP server the vendor calls on the model's behalf.
///
/// Its headers (an `Authorization` token, usually) are sent to the vendor with every request;
/// `Debug` shows their names, never their values.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteMcp {
    /// The label the model and the transcript know the server by.
    pub server_label: String,
    /// The server's URL.
    pub server_url: String,
    /// What the server is for, for the model, when said.
    pub server_description: Option<String>,
    /// The only tools of the server the model may call; empty for all.
    pub allowed_tools: Vec<String>,
    /// Whether the service asks before a call; `None` leaves the service's default (it asks).
    pub require_approval: Option<McpApproval>,
    /// Headers the service sends to the server.
    pub headers: Vec<(String, String)>,
}

impl RemoteMcp {
    /// The server at `url`, known as `label`.
    pub fn new(label: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            server_label: label.into(),
            server_url: url.into(),
            ..Self::default()
        }
    }

    /// Says what the server is for.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.server_description = Some(description.into());
        self
    }

    /// Lets the model call only these tools of the server.
    #[must_use]
    pub fn with_allowed_tools(
        mut self,
        tools: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Sets whether the service asks before a call.
    #[must_use]
    pub fn with_require_approval(mut self, approval: McpApproval) -> Self {
        self.require_approval = Some(approval);
        self
    }

    /// Adds a header the service sends to the server.
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl fmt::Debug for RemoteMcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("RemoteMcp")
            .field("server_label", &self.server_label)
            .field("server_url", &self.server_url)
            .field("server_description", &self.server_description)
            .field("allowed_tools", &self.allowed_tools)
            .field("require_approval", &self.require_approval)
            .field("headers", &headers)
            .finish()
    }
}

/// One call of a hosted tool, and its result, as a turn carries it
/// ([`Block::HostedCall`](crate::Block::HostedCall)): what a reader wants typed, and the item
/// as the vendor sent it, which is what goes back to that vendor when the transcript is
/// replayed (a request to any other vendor leaves it out, as it does another vendor's
/// reasoning).
///
/// `kind` is the vendor's item type: `web_search_call`, `file_search_call`,
/// `code_interpreter_call`, `mcp_call`, `mcp_list_tools`, `mcp_approval_request`,
/// `image_generation_call`, ... Which of the typed fields are set depends on it:
///
/// | kind | fields |
/// | --- | --- |
/// | `web_search_call` | `query`; `results`: the sources, when asked for |
/// | `file_search_call` | `query` (the queries, one per line); `results`, when asked for |
/// | `code_interpreter_call` | `code`; `output`: the logs; `results`: the outputs, when asked for |
/// | `mcp_call` | `server`, `tool`, `arguments` (JSON text), `output` or `error` |
/// | `mcp_list_tools` | `server`; `results`: the tools |
/// | `mcp_approval_request` | `server`, `tool`, `arguments` |
///
/// The citations of the answer's text (`url_citation`, `file_citation`, ...) are kept on the
/// call the text drew on: the last hosted call before the message that carries them, in
/// `citations`, as the vendor sent them (each with its `url` or `file_id`, its `title` and the
/// character range of the text it supports).
///
/// Two calls are equal when everything but [`provider`](HostedCall::provider) is.
#[derive(Debug, Clone, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostedCall {
    /// The vendor's id for the call.
    pub id: String,
    /// The vendor's item type, such as `web_search_call`.
    pub kind: String,
    /// The vendor's status for it (`completed`, `failed`, `incomplete`, ...), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// What was searched for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The code that was run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The remote MCP server's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The tool called on the MCP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The call's arguments, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// What the call returned as text (an MCP tool's output, the sandbox's logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why the call failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The structured results, as the vendor sent them (search results or sources, the
    /// sandbox's outputs, an MCP server's tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<Value>,
    /// The citations of the answer's text that point at what this call found, as the vendor
    /// sent them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Value>,
    /// The item as the vendor sent it, replayed to that vendor as it came.
    #[serde(default)]
    pub raw: Value,
    /// The wire format of the vendor that ran the call (`"openai-responses"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl PartialEq for HostedCall {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.kind == other.kind
            && self.status == other.status
            && self.query == other.query
            && self.code == other.code
            && self.server == other.server
            && self.tool == other.tool
            && self.arguments == other.arguments
            && self.output == other.output
            && self.error == other.error
            && self.results == other.results
            && self.citations == other.citations
            && self.raw == other.raw
    }
}

impl HostedCall {
    /// A call of kind `kind` with the vendor's id `id`, nothing else known; the provider that
    /// reads one fills in the rest.
    pub fn new(kind: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: kind.into(),
            status: None,
            query: None,
            code: None,
            server: None,
            tool: None,
            arguments: None,
            output: None,
            error: None,
            results: Vec::new(),
            citations: Vec::new(),
            raw: Value::Null,
            provider: None,
        }
    }

    /// The same call, marked as run by `provider`'s service.
    #[must_use]
    pub fn from_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// The same call, with the item as the vendor sent it.
    #[must_use]
    pub fn with_raw(mut self, raw: Value) -> Self {
        self.raw = raw;
        self
    }

    /// True when `provider` may be sent this call back: its service ran it, or no one is
    /// named.
    pub fn is_for(&self, provider: &str) -> bool {
        self.provider.as_deref().is_none_or(|p| p == provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_name_the_wire_types_and_mcp_headers_stay_out_of_debug() {
        let mcp = RemoteMcp::new("docs", "https://x").with_header("authorization", "Bearer s3cret");
        let tools: Vec<HostedTool> = vec![
            WebSearch::new().into(),
            FileSearch::new(["vs_1"]).with_max_results(3).into(),
            CodeInterpreter::in_container("cntr_1").into(),
            mcp.clone().into(),
            HostedTool::custom("image_generation", json!({"quality": "low"})),
        ];
        let kinds: Vec<&str> = tools.iter().map(HostedTool::kind).collect();
        assert_eq!(
            kinds,
            [
                "web_search",
                "file_search",
                "code_interpreter",
                "mcp",
                "image_generation"
            ]
        );
        let shown = format!("{mcp:?}");
        assert!(
            shown.contains("authorization") && !shown.contains("s3cret"),
            "{shown}"
        );
        assert_eq!(
            HostedTool::custom("x", json!(7)),
            HostedTool::Custom {
                kind: "x".into(),
                config: Map::new()
            }
        );
    }

    #[test]
    fn a_hosted_call_round_trips_and_ignores_its_provider_in_equality() {
        let mut call = HostedCall::new("web_search_call", "ws_1")
            .with_raw(json!({"type": "web_search_call", "id": "ws_1"}))
            .from_provider("openai-responses");
        call.query = Some("rust".into());
        let json = serde_json::to_value(&call).unwrap_or_default();
        assert_eq!(
            json,
            json!({"id": "ws_1", "kind": "web_search_call", "query": "rust",
                "raw": {"type": "web_search_call", "id": "ws_1"}, "provider": "openai-responses"})
        );
        let back: HostedCall = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, call);
        let mut elsewhere = call.clone();
        elsewhere.provider = None;
        assert_eq!(elsewhere, call);
        assert!(call.is_for("openai-responses") && !call.is_for("anthropic"));
        assert!(elsewhere.is_for("anthropic"));
    }
}
