//! A toolbox served over MCP under the official conformance suite's server scenarios
//! (`cargo xtask conformance`): the tools the scenarios call, with the answers they expect.
//! Serves streamable HTTP on the address given (default 127.0.0.1:0) and prints its URL.

use std::sync::Arc;
use std::time::Duration;

use deepharness::agent::{LogLevel, Tool, ToolSpec};
use deepharness::errors::ToolError;
use deepharness::providers::{Block, Content, Document, Image, async_trait};
use deepharness::tools::McpToolServer;
use deepharness::{Ctx, Toolbox, tool};
use serde_json::{Value, json};

/// A 1x1 red PNG.
const RED_PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// Returns simple text.
#[tool]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Always fails.
#[tool]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".to_owned())
}

/// Logs three messages while it runs.
#[tool]
async fn test_tool_with_logging(ctx: Ctx) -> String {
    ctx.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully".to_owned()
}

/// Reports progress 0, 50 and 100 of 100.
#[tool]
async fn test_tool_with_progress(ctx: Ctx) -> String {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.progress(step, Some(100.0), None);
    }
    "Tool with progress executed successfully".to_owned()
}

/// A tool with a spec of its own and a fixed answer: for the image (`#[tool]` functions
/// return text) and for a schema written by hand.
struct Fixed {
    spec: Arc<ToolSpec>,
    answer: Content,
}

impl Fixed {
    fn new(spec: ToolSpec, answer: Content) -> Self {
        Self {
            spec: Arc::new(spec),
            answer,
        }
    }
}

#[async_trait]
impl Tool for Fixed {
    fn spec(&self) -> &Arc<ToolSpec> {
        &self.spec
    }

    async fn call(&self, _arguments: Value, _ctx: Ctx) -> Result<Content, ToolError> {
        Ok(self.answer.clone())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let image = Fixed::new(
        ToolSpec::new(
            "test_image_content",
            "Returns an image.",
            json!({"type": "object", "properties": {}}),
        ),
        Content::Blocks(vec![Block::Image(Image::from_base64(
            RED_PIXEL,
            "image/png",
        ))]),
    );
    // A document goes out as an embedded resource (its bytes, its media type).
    let document = || Block::Document(Document::pdf("JVBERi0xLjQK").with_name("report.pdf"));
    let embedded = Fixed::new(
        ToolSpec::new(
            "test_embedded_resource",
            "Returns a document.",
            json!({"type": "object", "properties": {}}),
        ),
        Content::Blocks(vec![document()]),
    );
    let mixed = Fixed::new(
        ToolSpec::new(
            "test_multiple_content_types",
            "Returns text, an image and a document.",
            json!({"type": "object", "properties": {}}),
        ),
        Content::Blocks(vec![
            Block::text("Multiple content types test:"),
            Block::Image(Image::from_base64(RED_PIXEL, "image/png")),
            document(),
        ]),
    );
    // Listed with its JSON Schema 2020-12 keywords as written (SEP-1613).
    let schema_2020_12 = Fixed::new(
        ToolSpec::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"type": "object", "properties": {
                    "street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"},
                               "address": {"$ref": "#/$defs/address"}},
                "additionalProperties": false
            }),
        ),
        Content::Text("ok".to_owned()),
    );
    let toolbox = Toolbox::builder()
        .tool(TestSimpleText)
        .tool(TestErrorHandling)
        .tool(TestToolWithLogging)
        .tool(TestToolWithProgress)
        .tool(image)
        .tool(schema_2020_12)
        .tool(embedded)
        .tool(mixed)
        .build()?;
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("http://{}/mcp", listener.local_addr()?);
    McpToolServer::new(toolbox)
        .with_name("deepharness-conformance")
        .serve_http(listener, &[])
        .await?;
    Ok(())
}
