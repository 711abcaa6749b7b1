//! The Responses request, written straight from the borrowed [`Request`]: keys in the order
//! OpenAI documents them, the unset ones left out; the transcript as input items.

use harness_core::hosted::{CodeInterpreter, FileSearch, RemoteMcp, WebSearch};
use harness_core::{
    Block, Content, HostedTool, Message, OutputSchema, Request, Role, ToolCall, ToolChoice,
    ToolSpec,
};
use serde::ser::{SerializeMap as _, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use super::FORMAT;
use super::model::OpenAiResponses;
use crate::wire::{
    ContentText, DataUrl, DocumentUrl, Joined, JsonText, Parameters, Settings, strict_schema,
};

impl OpenAiResponses {
    /// The request body, borrowed from the request.
    pub(super) fn body<'a>(&'a self, request: &Request<'a>, stream: bool) -> Body<'a> {
        let settings = Settings::merge(request.settings, &self.defaults);
        let (cache_key, cache_retention) = settings.openai_cache();
        let hosted = settings.hosted_tools;
        let tools = !request.tools.is_empty() || !hosted.is_empty();
        // The leading system messages are the instructions; a later one stays in its place.
        let leading = request
            .messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let (system, rest) = request.messages.split_at(leading);
        let mut include = Vec::new();
        // Without it a reasoning model's chain cannot be sent back when nothing is stored;
        // a model that does not reason refuses it.
        if !self.store && (self.reasons || settings.reasoning.is_some()) {
            include.push("reasoning.encrypted_content");
        }
        for tool in hosted {
            match tool {
                HostedTool::WebSearch(_) => include.push("web_search_call.action.sources"),
                HostedTool::FileSearch(_) => include.push("file_search_call.results"),
                HostedTool::CodeInterpreter(_) => include.push("code_interpreter_call.outputs"),
                _ => {}
            }
        }
        Body {
            model: &self.model,
            extra: settings.extra,
            instructions: (!system.is_empty()).then_some(Instructions(system)),
            input: Input {
                messages: crate::wire::with_call_ids(rest),
                store: self.store,
            },
            tools: tools.then_some(Tools {
                functions: request.tools,
                hosted,
            }),
            tool_choice: settings.tool_choice.filter(|_| tools).map(ChoiceWire::from),
            parallel_tool_calls: settings.parallel_tool_calls.filter(|_| tools),
            temperature: settings.temperature,
            top_p: settings.top_p,
            max_output_tokens: settings.max_tokens,
            reasoning: settings.reasoning.map(|level| ReasoningWire {
                effort: level.as_str(),
                summary: "auto",
            }),
            text: request
                .output
                .filter(|_| self.native_output)
                .map(|output| TextWire {
                    format: Format::new(output),
                }),
            prompt_cache_key: cache_key,
            prompt_cache_retention: cache_retention,
            store: self.store,
            include,
            stream: stream.then_some(true),
        }
    }
}

/// A Responses request, borrowed from the [`Request`]: keys in this order, the unset ones
/// left out.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    /// Vendor fields merged in last as the body is sent ([`with_extra`](crate::rest::with_extra)).
    #[serde(skip)]
    pub(super) extra: Cow<'a, Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<Instructions<'a>>,
    input: Input<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ChoiceWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningWire>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'static str>,
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

#[derive(Serialize)]
struct ReasoningWire {
    effort: &'static str,
    summary: &'static str,
}

/// `text: {"format": {"type": "json_schema", name, schema, strict}}`.
#[derive(Serialize)]
struct TextWire<'a> {
    format: Format<'a>,
}

#[derive(Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> Format<'a> {
    fn new(output: &'a OutputSchema) -> Self {
        Self {
            kind: "json_schema",
            name: &output.name,
            schema: &output.schema,
            strict: output.strict,
        }
    }
}

/// The leading system messages' text, joined with newlines.
struct Instructions<'a>(&'a [Message]);

impl Serialize for Instructions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        crate::wire::SystemText(self.0).serialize(serializer)
    }
}

/// `tool_choice` as the Responses API takes it.
#[derive(Serialize)]
#[serde(untagged)]
enum ChoiceWire<'a> {
    Mode(&'static str),
    Tool {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
}

impl<'a> From<&'a ToolChoice> for ChoiceWire<'a> {
    fn from(choice: &'a ToolChoice) -> Self {
        match choice {
            ToolChoice::None => Self::Mode("none"),
            ToolChoice::Required => Self::Mode("required"),
            ToolChoice::Tool(name) => Self::Tool {
                kind: "function",
                name,
            },
            _ => Self::Mode("auto"),
        }
    }
}

/// The function tools, each `{"type": "function", name, description, parameters, strict}`
/// (strict when the schema meets strict mode's rules: the service holds a function tool to
/// strict mode unless told otherwise), then the hosted tools.
struct Tools<'a> {
    functions: &'a [Arc<ToolSpec>],
    hosted: &'a [HostedTool],
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            name: &'a str,
            description: &'a str,
            parameters: Parameters<'a>,
            strict: bool,
        }
        let mut seq = serializer.serialize_seq(Some(self.functions.len() + self.hosted.len()))?;
        for tool in self.functions {
            seq.serialize_element(&Function {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: Parameters::of(&tool.parameters),
                strict: tool.parameters.is_object() && strict_schema(&tool.parameters),
            })?;
        }
        for tool in self.hosted {
            seq.serialize_element(&HostedWire(tool))?;
        }
        seq.end()
    }
}

/// A hosted tool as the Responses API takes it.
struct HostedWire<'a>(&'a HostedTool);

impl Serialize for HostedWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.0.kind())?;
        match self.0 {
            HostedTool::WebSearch(search) => web_search(&mut map, search)?,
            HostedTool::FileSearch(FileSearch {
                vector_store_ids,
                max_results,
                ..
            }) => {
                map.serialize_entry("vector_store_ids", vector_store_ids)?;
                if let Some(n) = max_results {
                    map.serialize_entry("max_num_results", n)?;
                }
            }
            HostedTool::CodeInterpreter(CodeInterpreter {
                container,
                file_ids,
                ..
            }) => match container {
                Some(id) => map.serialize_entry("container", id)?,
                None => {
                    #[derive(Serialize)]
                    struct Auto<'a> {
                        #[serde(rename = "type")]
                        kind: &'static str,
                        #[serde(skip_serializing_if = "<[String]>::is_empty")]
                        file_ids: &'a [String],
                    }
                    map.serialize_entry(
                        "container",
                        &Auto {
                            kind: "auto",
                            file_ids,
                        },
                    )?;
                }
            },
            HostedTool::Mcp(mcp) => remote_mcp(&mut map, mcp)?,
            HostedTool::Custom { config, .. } => {
                for (key, value) in config.iter().filter(|(k, _)| *k != "type") {
                    map.serialize_entry(key, value)?;
                }
            }
            // A hosted tool added to the core later: its type alone.
            _ => {}
        }
        map.end()
    }
}

fn web_search<M: serde::ser::SerializeMap>(
    map: &mut M,
    search: &WebSearch,
) -> std::result::Result<(), M::Error> {
    if let Some(size) = search.context_size {
        map.serialize_entry("search_context_size", size.as_str())?;
    }
    if let Some(location) = &search.user_location {
        #[derive(Serialize)]
        struct Location<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            country: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            region: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            city: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            timezone: Option<&'a str>,
        }
        map.serialize_entry(
            "user_location",
            &Location {
                kind: "approximate",
                country: location.country.as_deref(),
                region: location.region.as_deref(),
                city: location.city.as_deref(),
                timezone: location.timezone.as_deref(),
            },
        )?;
    }
    if !search.allowed_domains.is_empty() {
        #[derive(Serialize)]
        struct Filters<'a> {
            allowed_domains: &'a [String],
        }
        map.serialize_entry(
            "filters",
            &Filters {
                allowed_domains: &search.allowed_domains,
            },
        )?;
    }
    Ok(())
}

fn remote_mcp<M: serde::ser::SerializeMap>(
    map: &mut M,
    mcp: &RemoteMcp,
) -> std::result::Result<(), M::Error> {
    map.serialize_entry("server_label", &mcp.server_label)?;
    map.serialize_entry("server_url", &mcp.server_url)?;
    if let Some(description) = &mcp.server_description {
        map.serialize_entry("server_description", description)?;
    }
    if !mcp.allowed_tools.is_empty() {
        map.serialize_entry("allowed_tools", &mcp.allowed_tools)?;
    }
    if let Some(approval) = mcp.require_approval {
        map.serialize_entry("require_approval", approval.as_str())?;
    }
    if !mcp.headers.is_empty() {
        struct Headers<'a>(&'a [(String, String)]);
        impl Serialize for Headers<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
            }
        }
        map.serialize_entry("headers", &Headers(&mcp.headers))?;
    }
    Ok(())
}

/// The transcript (its leading system messages left out) as input items: a user message,
/// an assistant turn as its reasoning, text, hosted calls and function calls in order, a
/// tool result as a `function_call_output`. Every call and result carries an id here
/// ([`crate::wire::with_call_ids`]).
struct Input<'a> {
    messages: Cow<'a, [Message]>,
    store: bool,
}

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for message in self.messages.iter() {
            match message.role {
                Role::Assistant => assistant_items(&mut seq, message, self.store)?,
                Role::Tool => seq.serialize_element(&CallOutput(message))?,
                role => seq.serialize_element(&Said {
                    role: role.as_str(),
                    content: &message.content,
                })?,
            }
        }
        seq.end()
    }
}

/// A user's (or a later system) message: its text as a string when it is only text, else
/// its parts.
struct Said<'a> {
    role: &'a str,
    content: &'a Content,
}

impl Serialize for Said<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", self.role)?;
        map.serialize_entry("content", &ContentWire(self.content))?;
        map.end()
    }
}

/// Whether content holds an image or a document: then it is sent as parts.
fn has_media(content: &Content) -> bool {
    match content {
        Content::Text(_) => false,
        Content::Blocks(blocks) => blocks
            .iter()
            .any(|b| matches!(b, Block::Image(_) | Block::Document(_))),
    }
}

/// Content as the Responses API takes it from a user or a tool: a string, or input parts.
struct ContentWire<'a>(&'a Content);

impl Serialize for ContentWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Content::Blocks(blocks) if has_media(self.0) => {
                serializer.collect_seq(blocks.iter().filter_map(InputPart::of))
            }
            content => ContentText(content).serialize(serializer),
        }
    }
}

/// One input part: text, an image (a URL or a `data:` URL) or a file.
#[derive(Serialize)]
#[serde(tag = "type")]
enum InputPart<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    #[serde(rename = "input_image")]
    Image { image_url: DataUrl<'a> },
    #[serde(rename = "input_file")]
    File {
        filename: &'a str,
        file_data: DocumentUrl<'a>,
    },
}

impl<'a> InputPart<'a> {
    fn of(block: &'a Block) -> Option<Self> {
        match block {
            Block::Text(t) if !t.text.is_empty() => Some(Self::Text { text: &t.text }),
            Block::Image(image) => Some(Self::Image {
                image_url: DataUrl(image.source()),
            }),
            Block::Document(doc) => Some(Self::File {
                filename: doc.name.as_deref().unwrap_or("document"),
                file_data: DocumentUrl(doc),
            }),
            _ => None,
        }
    }
}

/// A tool's result: `{"type": "function_call_output", call_id, output}`, the output text, or
/// its parts when it holds images or documents.
struct CallOutput<'a>(&'a Message);

impl Serialize for CallOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("type", "function_call_output")?;
        map.serialize_entry("call_id", self.0.tool_call_id.as_deref().unwrap_or(""))?;
        map.serialize_entry("output", &ContentWire(&self.0.content))?;
        map.end()
    }
}

/// An assistant turn's items, in order: its reasoning (this API's own), its text as one
/// message per run of text, its hosted calls (this API's own, when the service stores what it
/// answers and can take them back), then its function calls.
///
/// Reasoning goes back as the service can use it: stored, by reference to its id; not
/// stored, whole, with the encrypted content it came with (reasoning without it is of no use
/// to a service that kept nothing, and is left out). A function call goes back without its
/// item id, so the service pairs it by `call_id` alone.
fn assistant_items<S: SerializeSeq>(
    seq: &mut S,
    message: &Message,
    store: bool,
) -> std::result::Result<(), S::Error> {
    let blocks: &[Block] = match &message.content {
        Content::Text(text) => {
            if !text.is_empty() {
                seq.serialize_element(&AssistantText(&[text.as_str()]))?;
            }
            &[]
        }
        Content::Blocks(blocks) => blocks,
    };
    let mut text: Vec<&str> = Vec::new();
    for block in blocks {
        match block {
            Block::Text(t) if !t.text.is_empty() => text.push(&t.text),
            Block::Thinking(thinking) if thinking.provider.as_deref() == Some(FORMAT) => {
                let wire = match (store, thinking.id.as_deref(), thinking.redacted.as_deref()) {
                    (true, Some(id), _) => ReasoningItem::Reference(id),
                    (_, id, Some(encrypted)) => ReasoningItem::Whole {
                        id,
                        text: &thinking.text,
                        encrypted,
                    },
                    _ => continue,
                };
                flush(seq, &mut text)?;
                seq.serialize_element(&wire)?;
            }
            Block::HostedCall(call)
                if store && call.provider.as_deref() == Some(FORMAT) && call.raw.is_object() =>
            {
                flush(seq, &mut text)?;
                seq.serialize_element(&call.raw)?;
            }
            _ => {}
        }
    }
    flush(seq, &mut text)?;
    for call in &message.tool_calls {
        seq.serialize_element(&FunctionCall(call))?;
    }
    Ok(())
}

fn flush<S: SerializeSeq>(seq: &mut S, text: &mut Vec<&str>) -> std::result::Result<(), S::Error> {
    if !text.is_empty() {
        seq.serialize_element(&AssistantText(text))?;
        text.clear();
    }
    Ok(())
}

/// `{"role": "assistant", "content": text}`.
struct AssistantText<'a, 'b>(&'b [&'a str]);

impl Serialize for AssistantText<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "assistant")?;
        map.serialize_entry(
            "content",
            &Joined {
                pieces: self.0.iter().copied(),
                separator: "",
            },
        )?;
        map.end()
    }
}

/// A reasoning item sent back: a reference to a stored one, or the whole item.
enum ReasoningItem<'a> {
    Reference(&'a str),
    Whole {
        id: Option<&'a str>,
        text: &'a str,
        encrypted: &'a str,
    },
}

impl Serialize for ReasoningItem<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match *self {
            Self::Reference(id) => {
                map.serialize_entry("type", "item_reference")?;
                map.serialize_entry("id", id)?;
            }
            Self::Whole {
                id,
                text,
                encrypted,
            } => {
                #[derive(Serialize)]
                struct Summary<'a> {
                    #[serde(rename = "type")]
                    kind: &'static str,
                    text: &'a str,
                }
                map.serialize_entry("type", "reasoning")?;
                if let Some(id) = id {
                    map.serialize_entry("id", id)?;
                }
                // The summary parts, joined with blank lines when read, go back as one.
                let parts: &[Summary<'_>] = if text.is_empty() {
                    &[]
                } else {
                    &[Summary {
                        kind: "summary_text",
                        text,
                    }]
                };
                map.serialize_entry("summary", parts)?;
                map.serialize_entry("encrypted_content", encrypted)?;
            }
        }
        map.end()
    }
}

/// `{"type": "function_call", call_id, name, arguments}`, the arguments as JSON text of an
/// object (`{}` for a call whose arguments were not one, which was never run).
struct FunctionCall<'a>(&'a ToolCall);

impl Serialize for FunctionCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let call = self.0;
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("type", "function_call")?;
        map.serialize_entry("call_id", call.id.as_deref().unwrap_or(""))?;
        map.serialize_entry("name", &call.name)?;
        map.serialize_entry("arguments", &JsonText(&call.arguments))?;
        map.end()
    }
}
