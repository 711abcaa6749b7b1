//! Cost: the price table and its override on every builder and through every wrapper, the
//! counting endpoints (Anthropic's `count_tokens`, Gemini's `countTokens`, recorded answers
//! replayed from a loopback server), and the prompt-cache settings in each vendor's body.

#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use harness_core::{
    CacheRetention, CacheTtl, ErrorKind, Llm, Message, ModelSettings, Prices, PromptCache,
    ProviderErrorKind, ReasoningLevel, Request, TokenCount, ToolCall, ToolChoice, ToolSpec, Usd,
};
use harness_providers::{
    Anthropic, Fallback, Gemini, Groq, LlmExt as _, Ollama, OpenAi, RetryPolicy,
};
use serde_json::{Value, json};
use support::{Reply, Server, fixture, fixture_json};

fn own_prices() -> Prices {
    Prices::per_million(1.0, 2.0)
        .with_cache_read(0.1)
        .with_cache_write(1.25)
}

// Prices ---------------------------------------------------------------------------------

#[test]
fn the_table_prices_known_models_and_the_builder_replaces_it_on_every_provider() {
    let gpt = OpenAi::builder("gpt-4o-mini").api_key("k").build().unwrap();
    let table = gpt.info().prices.unwrap();
    assert_eq!(
        (table.input, table.cache_read, table.output),
        (
            Usd::from_dollars(0.15),
            Usd::from_dollars(0.075),
            Usd::from_dollars(0.60)
        )
    );
    let claude = Anthropic::builder("claude-sonnet-4-5-20250929")
        .api_key("k")
        .build()
        .unwrap();
    let table = claude.info().prices.unwrap();
    assert_eq!(table.cache_write, Usd::from_dollars(3.75));
    let gemini = Gemini::builder("gemini-2.5-flash")
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(gemini.info().prices.unwrap().output, Usd::from_dollars(2.5));
    let groq = Groq::builder("llama-3.3-70b-versatile")
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(groq.info().prices.unwrap().output, Usd::from_dollars(0.79));
    // The same model at a service the table has no row for: no prices.
    let local = Ollama::builder("gpt-4o-mini").build().unwrap();
    assert_eq!(local.info().prices, None);

    // `prices(...)` replaces the table's entry, and gives one to a model it does not know.
    let p = own_prices();
    let models: Vec<Box<dyn Llm>> = vec![
        Box::new(
            OpenAi::builder("gpt-4o-mini")
                .api_key("k")
                .prices(p)
                .build()
                .unwrap(),
        ),
        Box::new(
            Anthropic::builder("claude-haiku-4-5")
                .api_key("k")
                .prices(p)
                .build()
                .unwrap(),
        ),
        Box::new(
            Gemini::builder("gemini-2.5-pro")
                .api_key("k")
                .prices(p)
                .build()
                .unwrap(),
        ),
        Box::new(
            Groq::builder("my-finetune")
                .api_key("k")
                .prices(p)
                .build()
                .unwrap(),
        ),
        Box::new(Ollama::builder("llama3.3").prices(p).build().unwrap()),
    ];
    for model in &models {
        assert_eq!(model.info().prices, Some(p), "{}", model.info().name());
    }
}

#[test]
fn prices_survive_every_wrapper_and_a_fallback_takes_the_highest_of_its_chain() {
    let p = own_prices();
    let base = OpenAi::builder("gpt-4o-mini")
        .api_key("k")
        .prices(p)
        .build()
        .unwrap();
    let wrapped = base
        .clone()
        .retrying(2)
        .rate_limited(Duration::from_millis(1))
        .cached();
    assert_eq!(wrapped.info().prices, Some(p));
    let shared: Arc<dyn Llm> = Arc::new(wrapped);
    assert_eq!(shared.info().prices, Some(p));

    // A fallback to a dearer model is priced at the dearer of each price.
    let dear = Prices::per_million(3.0, 1.0).with_cache_read(0.3);
    let other = Anthropic::builder("m")
        .api_key("k")
        .prices(dear)
        .build()
        .unwrap();
    let chain = Fallback::new(base.clone(), other);
    let prices = chain.info().prices.unwrap();
    assert_eq!(prices.input, Usd::from_dollars(3.0));
    assert_eq!(prices.output, Usd::from_dollars(2.0));
    assert_eq!(prices.cache_read, Usd::from_dollars(0.3));
    assert_eq!(prices.cache_write, Usd::from_dollars(3.0));
    // One model of the chain without prices: the chain has none (a money budget fails
    // closed rather than under-price the run).
    let unpriced = Ollama::builder("llama3.3").build().unwrap();
    assert_eq!(base.with_fallback(unpriced).info().prices, None);
}

/// Recorded answers with cache reads and writes, through the parser, the table and an agent:
/// a run's cost is each part of the recorded usage at the model's table prices.
#[tokio::test]
async fn recorded_cache_reads_and_writes_are_priced_by_the_table() {
    use harness_core::Agent;
    // Anthropic (pydantic-ai's cassette): 3 uncached, 1,111 read, 403 written, 33 out.
    let path = "anthropic/prompt_cache/messages_nonstream_cache_read_and_write.json";
    let server = Server::always(Reply::json(200, fixture(path))).await;
    let model = anthropic(&server.url, "claude-sonnet-4-5-20250929");
    let state = Agent::builder(model)
        .build()
        .unwrap()
        .run("?")
        .await
        .unwrap();
    assert_eq!(
        (
            state.usage.prompt_tokens,
            state.usage.cached_tokens,
            state.usage.cache_write_tokens
        ),
        (1_517, 1_111, 403)
    );
    assert_eq!(state.cost.input, Usd::from_dollars(3.0 * 3.0 / 1e6));
    assert_eq!(
        state.cost.cache_read,
        Usd::from_picodollars(1_111 * 300_000)
    );
    assert_eq!(
        state.cost.cache_write,
        Usd::from_picodollars(403 * 3_750_000)
    );
    assert_eq!(state.cost.output, Usd::from_picodollars(33 * 15_000_000));
    assert_eq!(state.cost.total().to_string(), "$0.00234855");

    // Gemini: 3,520 prompt tokens of which 3,512 cached, 2 answer and 42 thinking.
    let path = "gemini/generate_content_cached_content.json";
    let server = Server::always(Reply::json(200, fixture(path))).await;
    let model = gemini(&server.url, "gemini-2.5-flash");
    let state = Agent::builder(model)
        .build()
        .unwrap()
        .run("?")
        .await
        .unwrap();
    assert_eq!(state.cost.input, Usd::from_picodollars(8 * 300_000));
    assert_eq!(state.cost.cache_read, Usd::from_picodollars(3_512 * 30_000));
    assert_eq!(state.cost.output, Usd::from_picodollars(44 * 2_500_000));
    assert_eq!(state.cost.cache_write, Usd::ZERO);
}

// Counting: Anthropic --------------------------------------------------------------------

fn anthropic(url: &str, model: &str) -> Anthropic {
    Anthropic::builder(model)
        .api_key("k")
        .base_url(url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

fn final_result_tool() -> Arc<ToolSpec> {
    let recorded = fixture_json("anthropic/count_tokens/tools_thinking.request.json");
    let tool = &recorded["body"]["tools"][0];
    Arc::new(ToolSpec::new(
        tool["name"].as_str().unwrap(),
        tool["description"].as_str().unwrap(),
        tool["input_schema"].clone(),
    ))
}

/// The recorded exchange (pydantic-ai's cassette): what is sent is the prompt part of a
/// Messages request, and `input_tokens` is the count.
#[tokio::test]
async fn anthropic_counts_through_its_endpoint_with_the_prompt_alone() {
    let server = Server::always(Reply::json(
        200,
        fixture("anthropic/count_tokens/tools_thinking.json"),
    ))
    .await;
    let model = anthropic(&server.url, "claude-opus-4-6");
    let recorded = fixture_json("anthropic/count_tokens/tools_thinking.request.json");
    let body = &recorded["body"];
    let messages = [
        Message::system("Answer in one word."),
        Message::user(body["messages"][0]["content"][0]["text"].as_str().unwrap()),
    ];
    let tools = [final_result_tool()];
    let settings = ModelSettings::new()
        .with_tool_choice(ToolChoice::Required)
        .with_reasoning(ReasoningLevel::Low)
        .with_temperature(0.5)
        .with_max_tokens(100)
        .with_extra("metadata", json!({"user_id": "u"}));
    let request = Request::new(&messages)
        .with_tools(&tools)
        .with_settings(&settings);
    let count = model.count_tokens(request).await.unwrap();
    assert_eq!(count, TokenCount::counted(671));

    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.target, "/messages/count_tokens");
    assert_eq!(sent.header("x-api-key"), Some("k"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    let sent = sent.json();
    let keys: Vec<&str> = sent
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "messages",
            "system",
            "tools",
            "tool_choice",
            "thinking"
        ]
    );
    // As recorded: the tool and the tool choice, the model.
    assert_eq!(sent["tools"], body["tools"]);
    assert_eq!(sent["tool_choice"], body["tool_choice"]);
    assert_eq!(sent["model"], body["model"]);
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": "What is the capital of France?"}])
    );
    assert_eq!(sent["system"], "Answer in one word.");
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    // What it would generate with is the same prompt.
    let generated = model.request_body(&request, false);
    for key in ["messages", "system", "tools", "tool_choice", "thinking"] {
        assert_eq!(sent[key], generated[key], "{key}");
    }
}

/// The recorded 404 for a model that does not exist: a provider error that keeps the status,
/// the vendor's type and message.
#[tokio::test]
async fn anthropic_count_errors_are_the_vendors() {
    let server = Server::always(Reply::json(
        404,
        fixture("anthropic/count_tokens/model_not_found.json"),
    ))
    .await;
    let model = anthropic(&server.url, "claude-does-not-exist");
    let messages = [Message::user("hello")];
    let error = model
        .count_tokens(Request::new(&messages))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Provider);
    let provider = error.provider().unwrap();
    assert_eq!(provider.status(), Some(404));
    assert_eq!(provider.provider(), "anthropic");
    assert_eq!(provider.error_type(), Some("not_found_error"));
    assert!(
        provider
            .body()
            .unwrap()
            .contains("req_011CVEA3SF7rnb3DuBZytqQa")
    );
    assert!(
        error.to_string().contains("model: claude-does-not-exist"),
        "{error}"
    );
}

// Counting: Gemini -----------------------------------------------------------------------

fn gemini(url: &str, model: &str) -> Gemini {
    Gemini::builder(model)
        .api_key("k")
        .base_url(url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

/// The recorded answer (pydantic-ai's cassette, byte for byte): `totalTokens` is the count.
/// The request is the whole `generateContent` request, so the system instruction, the tools
/// and a cache are counted too.
#[tokio::test]
async fn gemini_counts_through_its_endpoint_with_the_whole_request() {
    let server = Server::always(Reply::json(200, fixture("gemini/count_tokens/text.json"))).await;
    let model = gemini(&server.url, "gemini-2.0-flash");
    let recorded = fixture_json("gemini/count_tokens/text.request.json");
    let text = recorded["body"]["contents"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let messages = [Message::system("Be brief."), Message::user(text)];
    let tools = [final_result_tool()];
    let settings =
        ModelSettings::new().with_prompt_cache(PromptCache::cached_content("cachedContents/abc"));
    let request = Request::new(&messages)
        .with_tools(&tools)
        .with_settings(&settings);
    assert_eq!(
        model.count_tokens(request).await.unwrap(),
        TokenCount::counted(10)
    );

    let sent = &server.requests()[0];
    assert_eq!(sent.target, "/models/gemini-2.0-flash:countTokens");
    assert_eq!(sent.header("x-goog-api-key"), Some("k"));
    let sent = sent.json();
    let inner = &sent["generateContentRequest"];
    assert_eq!(inner["model"], "models/gemini-2.0-flash");
    // The recorded contents, with the role ours always carries.
    assert_eq!(
        inner["contents"][0]["parts"],
        recorded["body"]["contents"][0]["parts"]
    );
    assert_eq!(inner["contents"][0]["role"], "user");
    let generated = model.request_body(&request).unwrap();
    let mut expected = generated.as_object().unwrap().clone();
    expected.insert("model".into(), json!("models/gemini-2.0-flash"));
    assert_eq!(inner, &Value::Object(expected));
    assert_eq!(inner["cachedContent"], "cachedContents/abc");
    assert_eq!(inner["systemInstruction"]["parts"][0]["text"], "Be brief.");
}

/// Faults on the counting paths, for both vendors: a body cut short, one that is not JSON,
/// one without the count, counts past `u64` or below zero, and a 429 retried after its
/// `Retry-After`. Each is a typed error or a saturated count, never a panic or a hang.
#[tokio::test]
async fn counting_faults_are_typed_errors() {
    let messages = [Message::user("hi")];
    let request = Request::new(&messages);
    for (count_key, path) in [("input_tokens", "anthropic"), ("totalTokens", "gemini")] {
        let answer = |body: String| async move {
            let server = Server::always(Reply::json(200, body)).await;
            let model: Box<dyn Llm> = if path == "anthropic" {
                Box::new(anthropic(&server.url, "m"))
            } else {
                Box::new(gemini(&server.url, "m"))
            };
            let messages = [Message::user("hi")];
            model.count_tokens(Request::new(&messages)).await
        };
        let cut = answer(format!("{{\"{count_key}\": 1")).await.unwrap_err();
        assert_eq!(
            cut.provider().map(harness_core::ProviderError::kind),
            Some(ProviderErrorKind::Incomplete),
            "{path}: {cut}"
        );
        let garbled = answer("<html>".to_owned()).await.unwrap_err();
        assert_eq!(
            garbled.provider().map(harness_core::ProviderError::kind),
            Some(ProviderErrorKind::Malformed),
            "{path}"
        );
        let missing = answer("{}".to_owned()).await.unwrap_err();
        assert!(missing.to_string().contains(count_key), "{path}: {missing}");
        let huge = answer(format!("{{\"{count_key}\": 1e30}}")).await.unwrap();
        assert_eq!(huge, TokenCount::counted(u64::MAX), "{path}");
        let negative = answer(format!("{{\"{count_key}\": -5}}")).await.unwrap();
        assert_eq!(negative, TokenCount::counted(0), "{path}");
        let in_band =
            answer(r#"{"error": {"type": "overloaded_error", "message": "busy"}}"#.into())
                .await
                .unwrap_err();
        assert!(in_band.to_string().contains("busy"), "{path}: {in_band}");
    }

    // A 429 is retried after the time it asks for, then counted.
    let server = Server::start(|i, _| {
        if i == 0 {
            Reply::json(
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            )
            .header("retry-after", "1")
        } else {
            Reply::json(200, fixture("anthropic/count_tokens/tools_thinking.json"))
        }
    })
    .await;
    let model = Anthropic::builder("m")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        model.count_tokens(request).await.unwrap(),
        TokenCount::counted(671)
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(server.requests().len(), 2);
}

/// Every wrapper forwards counting to the model it wraps (a fallback to its first), so a
/// count through them is the vendor's.
#[tokio::test]
async fn counting_goes_through_every_wrapper() {
    let server = Server::always(Reply::json(
        200,
        fixture("anthropic/count_tokens/tools_thinking.json"),
    ))
    .await;
    let model = anthropic(&server.url, "m");
    let messages = [Message::user("hi")];
    let request = Request::new(&messages);
    let wrapped = model
        .clone()
        .retrying(2)
        .rate_limited(Duration::from_secs(3600))
        .cached();
    assert_eq!(
        wrapped.count_tokens(request).await.unwrap(),
        TokenCount::counted(671)
    );
    // Counting is not a model call: the rate limit's slot is not taken by it.
    assert_eq!(
        wrapped.count_tokens(request).await.unwrap(),
        TokenCount::counted(671)
    );
    let chain = Fallback::new(
        model,
        OpenAi::builder("gpt-4o").api_key("k").build().unwrap(),
    );
    let shared: Arc<dyn Llm> = Arc::new(chain);
    assert_eq!(
        shared.count_tokens(request).await.unwrap(),
        TokenCount::counted(671)
    );
    assert_eq!(server.requests().len(), 3);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.target == "/messages/count_tokens")
    );
}

/// OpenAI's Chat Completions has no counting endpoint: nothing is sent, and the count is the
/// tokenizer's (feature `tokenizer`) or the estimate.
#[tokio::test]
async fn openai_counts_without_a_request() {
    let server = Server::always(Reply::json(500, "{}")).await;
    let model = OpenAi::builder("gpt-4o")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let messages = [Message::user("x".repeat(40))];
    let count = model.count_tokens(Request::new(&messages)).await.unwrap();
    if cfg!(feature = "tokenizer") {
        assert!(count.exact);
    } else {
        assert_eq!(count, TokenCount::estimated(10));
    }
    assert!(server.requests().is_empty());
}

// Prompt caching in each vendor's body ----------------------------------------------------

fn tools() -> [Arc<ToolSpec>; 2] {
    [
        Arc::new(ToolSpec::new("a", "A.", json!({"type": "object"}))),
        Arc::new(ToolSpec::new("b", "B.", json!({"type": "object"}))),
    ]
}

fn cached(cache: PromptCache) -> ModelSettings {
    ModelSettings::new().with_prompt_cache(cache)
}

#[test]
fn anthropic_marks_the_system_prompt_the_last_tool_and_the_last_message() {
    let model = Anthropic::builder("m").api_key("k").build().unwrap();
    let tools = tools();
    let hour = cached(PromptCache::breakpoints().with_ttl(CacheTtl::OneHour));
    let breakpoint = json!({"type": "ephemeral", "ttl": "1h"});

    // The last message a plain user prompt: it becomes one marked text block.
    let conversation = [Message::system("Be brief."), Message::user("go")];
    let request = Request::new(&conversation)
        .with_tools(&tools)
        .with_settings(&hour);
    let body = model.request_body(&request, false);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": breakpoint}])
    );
    assert_eq!(body["tools"][1]["cache_control"], breakpoint);
    assert_eq!(body["tools"][0].get("cache_control"), None);
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "go", "cache_control": breakpoint}]}])
    );

    // The last message a run of tool results: the last result is marked, nothing else.
    let conversation = [
        Message::user("go"),
        Message::assistant("calling").with_tool_calls(vec![
            ToolCall::new("a", json!({})).with_id("1"),
            ToolCall::new("b", json!({})).with_id("2"),
        ]),
        Message::tool("ra", "a").with_call_id("1"),
        Message::tool("rb", "b").with_call_id("2"),
    ];
    let five = cached(PromptCache::breakpoints());
    let request = Request::new(&conversation).with_settings(&five);
    let body = model.request_body(&request, false);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "go");
    assert!(!messages[1].to_string().contains("cache_control"));
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "1", "content": "ra"},
            {"type": "tool_result", "tool_use_id": "2", "content": "rb",
             "cache_control": {"type": "ephemeral"}},
        ])
    );
    assert_eq!(body.get("system"), None);
    assert_eq!(body.get("tools"), None);

    // The last message an assistant's tool calls (an empty answer after it is not sent):
    // its last tool_use is marked.
    let conversation = [
        Message::user("go"),
        Message::assistant("").with_tool_calls(vec![ToolCall::new("a", json!({})).with_id("1")]),
        Message::assistant(""),
    ];
    let request = Request::new(&conversation).with_settings(&five);
    let body = model.request_body(&request, false);
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "1", "name": "a", "input": {},
                "cache_control": {"type": "ephemeral"}}])
    );

    // Without breakpoints (other vendors' settings alone), nothing is marked.
    let other = cached(PromptCache::new().with_key("k").with_cached_content("c"));
    let request = Request::new(&conversation)
        .with_tools(&tools)
        .with_settings(&other);
    assert!(
        !model
            .request_body(&request, false)
            .to_string()
            .contains("cache_control")
    );
}

#[test]
fn openai_sends_its_cache_key_and_retention_and_the_gateways_do_not() {
    let messages = [Message::user("hi")];
    let settings = cached(
        PromptCache::breakpoints()
            .with_key("support-bot")
            .with_retention(CacheRetention::Extended),
    );
    let request = Request::new(&messages).with_settings(&settings);
    let openai = OpenAi::builder("gpt-4.1").api_key("k").build().unwrap();
    let body = openai.request_body(&request, false);
    assert_eq!(body["prompt_cache_key"], "support-bot");
    assert_eq!(body["prompt_cache_retention"], "24h");
    let in_memory = cached(PromptCache::new().with_retention(CacheRetention::InMemory));
    let body = openai.request_body(&Request::new(&messages).with_settings(&in_memory), false);
    assert_eq!(body["prompt_cache_retention"], "in_memory");
    assert_eq!(body.get("prompt_cache_key"), None);
    let groq = Groq::builder("llama-3.3-70b-versatile")
        .api_key("k")
        .build()
        .unwrap();
    let body = groq.request_body(&request, false);
    assert_eq!(body.get("prompt_cache_key"), None);
    assert_eq!(body.get("prompt_cache_retention"), None);
}

/// The recorded request (pydantic-ai's cassette) that read an explicit cache: ours for the
/// same prompt and cache has the same `cachedContent` and `contents`.
#[test]
fn gemini_reads_its_cache_by_name_as_recorded() {
    let recorded = fixture_json("gemini/generate_content_cached_content.request.json");
    let body = &recorded["body"];
    let name = body["cachedContent"].as_str().unwrap();
    let prompt = body["contents"][0]["parts"][0]["text"].as_str().unwrap();
    let model = Gemini::builder("gemini-2.5-flash")
        .api_key("k")
        .build()
        .unwrap();
    let messages = [Message::user(prompt)];
    let settings = cached(PromptCache::cached_content(name));
    let ours = model
        .request_body(&Request::new(&messages).with_settings(&settings))
        .unwrap();
    assert_eq!(ours["cachedContent"], body["cachedContent"]);
    assert_eq!(ours["contents"], body["contents"]);
    let plain = model.request_body(&Request::new(&messages)).unwrap();
    assert_eq!(plain.get("cachedContent"), None);
}

/// The provider's default settings carry the cache setting too, under the request's.
#[test]
fn a_providers_default_cache_setting_applies_unless_the_request_has_its_own() {
    let model = Anthropic::builder("m")
        .api_key("k")
        .settings(cached(PromptCache::breakpoints()))
        .build()
        .unwrap();
    let messages = [Message::system("s"), Message::user("u")];
    let body = model.request_body(&Request::new(&messages), false);
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let off = cached(PromptCache::new());
    let body = model.request_body(&Request::new(&messages).with_settings(&off), false);
    assert_eq!(body["system"], "s");
}
