//! The Chat Completions request, written straight from the borrowed [`Request`]: keys in
//! the order OpenAI documents them, the unset ones left out.

use harness_core::{
    Block, Content, Message, OutputSchema, Request, Role, ToolCall, ToolChoice, ToolSpec,
};
use serde::ser::{SerializeMap as _, SerializeSeq as _};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use crate::wire::{ContentText, DataUrl, DocumentUrl, JsonText, Parameters, Settings};

use super::model::OpenAi;

impl OpenAi {
    /// The request body, borrowed from the request.
    pub(super) fn body<'a>(&'a self, request: &Request<'a>, stream: bool) -> Body<'a> {
        let settings = Settings::merge(request.settings, &self.defaults);
        let (cache_key, cache_retention) = settings.openai_cache();
        let tools = !request.tools.is_empty();
        let max_tokens = settings.max_tokens;
        Body {
            model: &self.model,
            extra: settings.extra,
            messages: Messages(crate::wire::with_call_ids(request.messages)),
            tools: tools.then_some(Tools(request.tools)),
            tool_choice: settings.tool_choice.filter(|_| tools).map(ChoiceWire::from),
            parallel_tool_calls: settings.parallel_tool_calls.filter(|_| tools),
            temperature: settings.temperature,
            top_p: settings.top_p,
            max_completion_tokens: max_tokens.filter(|_| self.max_completion_tokens),
            max_tokens: max_tokens.filter(|_| !self.max_completion_tokens),
            stop: settings.stop,
            reasoning_effort: settings.reasoning.map(harness_core::ReasoningLevel::as_str),
            // OpenAI's own fields; a gateway might refuse them.
            prompt_cache_key: cache_key.filter(|_| self.id == "openai"),
            prompt_cache_retention: cache_retention.filter(|_| self.id == "openai"),
            response_format: request
                .output
                .filter(|_| self.native_output)
                .map(ResponseFormat::new),
            stream: stream.then_some(true),
            stream_options: (stream && self.stream_usage).then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

/// A Chat Completions request, borrowed from the [`Request`]: keys in this order, the unset
/// ones left out.
#[derive(Serialize)]
pub(super) struct Body<'a> {
    model: &'a str,
    /// Vendor fields merged in last as the body is sent ([`with_extra`](crate::rest::with_extra)).
    #[serde(skip)]
    pub(super) extra: Cow<'a, Map<String, Value>>,
    messages: Messages<'a>,
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
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `response_format` `json_schema`.
#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: SchemaWire<'a>,
}

#[derive(Serialize)]
struct SchemaWire<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> ResponseFormat<'a> {
    fn new(output: &'a OutputSchema) -> Self {
        Self {
            kind: "json_schema",
            json_schema: SchemaWire {
                name: &output.name,
                schema: &output.schema,
                strict: output.strict,
            },
        }
    }
}

/// `tool_choice` as Chat Completions takes it.
#[derive(Serialize)]
#[serde(untagged)]
enum ChoiceWire<'a> {
    Mode(&'static str),
    Tool {
        #[serde(rename = "type")]
        kind: &'static str,
        function: Named<'a>,
    },
}

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
}

impl<'a> From<&'a ToolChoice> for ChoiceWire<'a> {
    fn from(choice: &'a ToolChoice) -> Self {
        match choice {
            ToolChoice::None => Self::Mode("none"),
            ToolChoice::Required => Self::Mode("required"),
            ToolChoice::Tool(name) => Self::Tool {
                kind: "function",
                function: Named { name },
            },
            _ => Self::Mode("auto"),
        }
    }
}

/// The tools, each `{"type": "function", "function": {name, description, parameters}}`.
struct Tools<'a>(&'a [Arc<ToolSpec>]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: Parameters<'a>,
        }
        serializer.collect_seq(self.0.iter().map(|tool| Tool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: Parameters::of(&tool.parameters),
            },
        }))
    }
}

/// The transcript in Chat Completions form. A tool message carries text only there, so the
/// images and documents of a run of tool results follow it in one user message, after the
/// last result (a message between the results would break the tool-call pairing).
///
/// Every call and result carries an id here ([`crate::wire::with_call_ids`]).
struct Messages<'a>(Cow<'a, [Message]>);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        // The first tool result with media of the run of results being written.
        let mut media_from: Option<usize> = None;
        for (i, message) in self.0.iter().enumerate() {
            if message.role != Role::Tool
                && let Some(from) = media_from.take()
            {
                seq.serialize_element(&ToolMedia(&self.0[from..i]))?;
            }
            if message.role == Role::Tool && media_from.is_none() && has_media(&message.content) {
                media_from = Some(i);
            }
            seq.serialize_element(&MessageWire(message))?;
        }
        if let Some(from) = media_from {
            seq.serialize_element(&ToolMedia(&self.0[from..]))?;
        }
        seq.end()
    }
}

/// Whether content holds more than text, thinking and hosted calls: then it is sent as parts.
fn has_media(content: &Content) -> bool {
    match content {
        Content::Text(_) => false,
        Content::Blocks(blocks) => blocks.iter().any(|b| {
            !matches!(
                b,
                Block::Text(_) | Block::Thinking(_) | Block::HostedCall(_)
            )
        }),
    }
}

/// The user message that carries the images and documents of a run of tool results.
struct ToolMedia<'a>(&'a [Message]);

impl Serialize for ToolMedia<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Parts<'a>(&'a [Message]);
        impl Serialize for Parts<'_> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                let mut seq = serializer.serialize_seq(None)?;
                for message in self.0.iter().filter(|m| m.role == Role::Tool) {
                    let Content::Blocks(blocks) = &message.content else {
                        continue;
                    };
                    if !has_media(&message.content) {
                        continue;
                    }
                    let name = message.name.as_deref().unwrap_or("a tool");
                    seq.serialize_element(&TextPart(&format_args!(
                        "The result of {name} includes:"
                    )))?;
                    for block in blocks {
                        if !matches!(block, Block::Text(_))
                            && let Some(part) = Part::of(block)
                        {
                            seq.serialize_element(&part)?;
                        }
                    }
                }
                seq.end()
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("role", "user")?;
        map.serialize_entry("content", &Parts(self.0))?;
        map.end()
    }
}

/// `{"type": "text", "text": ...}` from anything that displays.
struct TextPart<'a, T: std::fmt::Display + ?Sized>(&'a T);

impl<T: std::fmt::Display + ?Sized> Serialize for TextPart<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Collected<'a, T: ?Sized>(&'a T);
        impl<T: std::fmt::Display + ?Sized> Serialize for Collected<'_, T> {
            fn serialize<S: Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                serializer.collect_str(self.0)
            }
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", &Collected(self.0))?;
        map.end()
    }
}

/// One content part: text, an image (as a URL or a `data:` URL) or a document (as a file).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url<'a> },
    File { file: File<'a> },
}

#[derive(Serialize)]
struct Url<'a> {
    url: DataUrl<'a>,
}

#[derive(Serialize)]
struct File<'a> {
    filename: &'a str,
    file_data: DocumentUrl<'a>,
}

impl<'a> Part<'a> {
    /// The part for a block; thinking and hosted calls are not sent.
    fn of(block: &'a Block) -> Option<Self> {
        match block {
            Block::Text(t) => Some(Self::Text { text: &t.text }),
            Block::Image(image) => Some(Self::ImageUrl {
                image_url: Url {
                    url: DataUrl(image.source()),
                },
            }),
            Block::Document(doc) => Some(Self::File {
                file: File {
                    filename: doc.name.as_deref().unwrap_or("document"),
                    file_data: DocumentUrl(doc),
                },
            }),
            Block::Thinking(_) | Block::HostedCall(_) => None,
        }
    }
}

/// A message's content: its text as a string when it is only text (and thinking), else
/// its parts.
struct ContentWire<'a>(&'a Content);

impl Serialize for ContentWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Content::Blocks(blocks) if has_media(self.0) => {
                serializer.collect_seq(blocks.iter().filter_map(Part::of))
            }
            content => ContentText(content).serialize(serializer),
        }
    }
}

/// One transcript message in Chat Completions form.
struct MessageWire<'a>(&'a Message);

impl Serialize for MessageWire<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let message = self.0;
        match message.role {
            Role::Assistant if !message.tool_calls.is_empty() => {
                let text = ContentText(&message.content);
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("role", "assistant")?;
                map.serialize_entry("content", &(!text.is_empty()).then_some(text))?;
                map.serialize_entry("tool_calls", &Calls(&message.tool_calls))?;
                map.end()
            }
            Role::Tool => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry(
                    "tool_call_id",
                    message.tool_call_id.as_deref().unwrap_or(""),
                )?;
                map.serialize_entry("content", &ContentText(&message.content))?;
                map.end()
            }
            role => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("role", role.as_str())?;
                map.serialize_entry("content", &ContentWire(&message.content))?;
                if let Some(name) = &message.name {
                    map.serialize_entry("name", name)?;
                }
                map.end()
            }
        }
    }
}

/// An assistant turn's calls, each with its arguments as JSON text of an object. A call whose
/// arguments were not one ([`ToolCall::raw_arguments`]; never run) is sent with `{}`, as
/// Anthropic and Gemini need it: vLLM and SGLang parse every call of the history and refuse
/// the whole request (a 500, every turn after) when one is not JSON. The model reads what it
/// wrote in that call's result.
struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: JsonText<'a, Map<String, Value>>,
        }
        serializer.collect_seq(self.0.iter().map(|call| Call {
            id: call.id.as_deref().unwrap_or(""),
            kind: "function",
            function: Function {
                name: &call.name,
                arguments: JsonText(&call.arguments),
            },
        }))
    }
}
