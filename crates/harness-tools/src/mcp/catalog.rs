//! A server's resources and prompts: listing them (every page, with the same guards as
//! `tools/list`), reading a resource, subscribing to one, getting a prompt. Answers are read
//! from their JSON leniently, item by item, so one odd entry does not lose the others.
// `resources/subscribe` is legacy in the 2026 protocol (`subscriptions/listen`); the
// servers of 2025-11-25 this client speaks to use it.
#![allow(deprecated)]

use std::sync::Arc;

use harness_core::{Content, Ctx, Tool, ToolError, ToolSpec};
use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ListPromptsRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, ReadResourceRequest,
    ReadResourceRequestParams, ServerResult, SubscribeRequest, SubscribeRequestParams,
    UnsubscribeRequest, UnsubscribeRequestParams,
};
use serde_json::{Map, Value, json};

use super::content::content_item;
use super::{McpCallResult, McpContent, McpError, McpServer, next_cursor};

/// A resource a server offers (`resources/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpResource {
    /// Its URI, what [`McpServer::read_resource`] takes.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people, when the server gave one.
    pub title: Option<String>,
    /// What it holds, when the server said.
    pub description: Option<String>,
    /// Its MIME type, when the server gave one.
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server gave one.
    pub size: Option<u64>,
}

/// A family of resources a server can read, named by a URI template (RFC 6570), such as
/// `file:///{path}` (`resources/templates/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A title for people, when the server gave one.
    pub title: Option<String>,
    /// What its resources hold, when the server said.
    pub description: Option<String>,
    /// Their MIME type, when the server gave one.
    pub mime_type: Option<String>,
}

/// A prompt template a server offers (`prompts/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpPrompt {
    /// Its name, what [`McpServer::get_prompt`] takes.
    pub name: String,
    /// A title for people, when the server gave one.
    pub title: Option<String>,
    /// What it is for, when the server said.
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<McpPromptArgument>,
}

/// One argument of an [`McpPrompt`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// What it means, when the server said.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt filled in (`prompts/get`): its messages, ready for a model.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpPromptResult {
    /// What the prompt is for, when the server said.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<McpPromptMessage>,
}

/// One message of a filled-in prompt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpPromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// What it says: text, an image, audio, an embedded resource or a link.
    pub content: McpContent,
}

impl McpServer {
    /// The server's resources, every page of `resources/list`.
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) from the handshake
    /// or the listing (a server without resources answers it with an error).
    pub async fn list_resources(&self) -> harness_core::Result<Vec<McpResource>> {
        self.list_json(
            "resources/list",
            "resources",
            |params| ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(params)),
            |item| {
                Some(McpResource {
                    uri: text(item, "uri")?,
                    name: text(item, "name").unwrap_or_default(),
                    title: text(item, "title"),
                    description: text(item, "description"),
                    mime_type: text(item, "mimeType"),
                    size: item.get("size").and_then(Value::as_u64),
                })
            },
        )
        .await
        .map_err(harness_core::Error::from)
    }

    /// The server's resource templates, every page of `resources/templates/list`.
    ///
    /// # Errors
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_resource_templates(&self) -> harness_core::Result<Vec<McpResourceTemplate>> {
        self.list_json(
            "resources/templates/list",
            "resourceTemplates",
            |params| {
                ClientRequest::ListResourceTemplatesRequest(
                    ListResourceTemplatesRequest::with_param(params),
                )
            },
            |item| {
                Some(McpResourceTemplate {
                    uri_template: text(item, "uriTemplate")?,
                    name: text(item, "name").unwrap_or_default(),
                    title: text(item, "title"),
                    description: text(item, "description"),
                    mime_type: text(item, "mimeType"),
                })
            },
        )
        .await
        .map_err(harness_core::Error::from)
    }

    /// Reads the resource at `uri` (listed, or made from a template): its contents, each an
    /// [`McpContent::Resource`] with its text or its bytes (base64).
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) from the handshake
    /// or the read (an unknown URI is the server's error).
    pub async fn read_resource(&self, uri: &str) -> harness_core::Result<Vec<McpContent>> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        let answer = self.json(request, "resources/read").await?;
        Ok(items(&answer, "contents")
            .map(|item| McpContent::Resource {
                uri: text(item, "uri").unwrap_or_else(|| uri.to_owned()),
                mime_type: text(item, "mimeType"),
                text: text(item, "text"),
                blob: text(item, "blob"),
            })
            .collect())
    }

    /// Asks the server to say when the resource at `uri` changes
    /// (`resources/subscribe`).
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) from the handshake
    /// or the request.
    pub async fn subscribe(&self, uri: &str) -> harness_core::Result<()> {
        let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(
            SubscribeRequestParams::new(uri),
        ));
        Ok(self.json(request, "resources/subscribe").await.map(drop)?)
    }

    /// Takes back a [`subscribe`](Self::subscribe) (`resources/unsubscribe`).
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error ([`McpError`] its source) from the handshake
    /// or the request.
    pub async fn unsubscribe(&self, uri: &str) -> harness_core::Result<()> {
        let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(
            UnsubscribeRequestParams::new(uri),
        ));
        Ok(self
            .json(request, "resources/unsubscribe")
            .await
            .map(drop)?)
    }

    /// The server's prompts, every page of `prompts/list`.
    ///
    /// # Errors
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_prompts(&self) -> harness_core::Result<Vec<McpPrompt>> {
        self.list_json(
            "prompts/list",
            "prompts",
            |params| ClientRequest::ListPromptsRequest(ListPromptsRequest::with_param(params)),
            |item| {
                Some(McpPrompt {
                    name: text(item, "name")?,
                    title: text(item, "title"),
                    description: text(item, "description"),
                    arguments: items(item, "arguments")
                        .filter_map(|argument| {
                            Some(McpPromptArgument {
                                name: text(argument, "name")?,
                                description: text(argument, "description"),
                                required: argument.get("required").and_then(Value::as_bool)
                                    == Some(true),
                            })
                        })
                        .collect(),
                })
            },
        )
        .await
        .map_err(harness_core::Error::from)
    }

    /// The prompt `name` filled in with `arguments` (each a string, as the protocol says).
    ///
    /// # Errors
    /// An [`Mcp`](harness_core::ErrorKind::Mcp) error from the handshake or the request (an
    /// unknown prompt, a missing argument: the server's error), its [`McpError`] the source.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &[(&str, &str)],
    ) -> harness_core::Result<McpPromptResult> {
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            let map: Map<String, Value> = arguments
                .iter()
                .map(|(key, value)| ((*key).to_owned(), Value::from(*value)))
                .collect();
            params = params.with_arguments(map);
        }
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let answer = self.json(request, "prompts/get").await?;
        Ok(McpPromptResult {
            description: text(&answer, "description"),
            messages: items(&answer, "messages")
                .map(|message| McpPromptMessage {
                    role: text(message, "role").unwrap_or_else(|| "user".to_owned()),
                    content: message
                        .get("content")
                        .map_or(McpContent::Text(String::new()), content_item),
                })
                .collect(),
        })
    }

    /// A `read_resource` tool over this server's resources, for an agent: it takes a
    /// `uri` (listed, or made from a template) and returns the resource as the model reads
    /// a tool result (text as it is, bytes named with their size). Reading is not gated.
    /// One per agent: two servers' tools would share the name.
    pub fn read_resource_tool(&self) -> Arc<dyn Tool> {
        let spec = ToolSpec::new(
            "read_resource",
            format!(
                "Read a resource of the MCP server `{}` by its URI, such as one it listed.",
                self.label
            ),
            json!({"type": "object",
                   "properties": {"uri": {"type": "string",
                                          "description": "The resource's URI."}},
                   "required": ["uri"], "additionalProperties": false}),
        );
        Arc::new(ReadResourceTool {
            server: self.clone(),
            spec: Arc::new(spec),
        })
    }

    /// One request's answer as JSON, whatever type rmcp read it as.
    async fn json(&self, request: ClientRequest, method: &str) -> Result<Value, McpError> {
        let answer = self.request(request, method, self.timeout).await?;
        serde_json::to_value(&answer).map_err(|e| {
            McpError::protocol(format!(
                "MCP server `{}` answered {method} with a result that cannot be read: {e}",
                self.label
            ))
        })
    }

    /// Every page of a listing whose items are under `key`, each read by `read` (an item it
    /// cannot read is skipped).
    async fn list_json<T>(
        &self,
        method: &str,
        key: &str,
        request: impl Fn(rmcp::model::PaginatedRequestParams) -> ClientRequest,
        read: impl Fn(&Value) -> Option<T>,
    ) -> Result<Vec<T>, McpError> {
        let label = &self.label;
        self.list_all(method, request, |answer: ServerResult, found| {
            let page = serde_json::to_value(&answer).map_err(|e| {
                McpError::protocol(format!(
                    "MCP server `{label}` answered {method} with a result that cannot be read: {e}"
                ))
            })?;
            found.extend(items(&page, key).filter_map(&read));
            Ok(next_cursor(&page))
        })
        .await
    }
}

/// A string field.
fn text(item: &Value, key: &str) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The items of a list field; none when it is missing or not a list.
fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// [`McpServer::read_resource_tool`].
struct ReadResourceTool {
    server: McpServer,
    spec: Arc<ToolSpec>,
}

#[async_trait::async_trait]
impl Tool for ReadResourceTool {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
        let Some(uri) = arguments.get("uri").and_then(Value::as_str) else {
            return Err(ToolError::invalid_arguments(
                "read_resource needs `uri`, the resource's URI as a string",
            ));
        };
        let contents = self.server.read_resource(uri).await?;
        let text = McpCallResult {
            content: contents,
            structured_content: None,
            is_error: false,
        }
        .text();
        Ok(if text.is_empty() {
            format!("{uri} is empty")
        } else {
            text
        }
        .into())
    }
}
