//! A watched run (`Agent::stream`) over the REST providers, from recorded traffic on a
//! loopback server. The providers' streams are `'static` (`Llm::stream`), so a watched run
//! hands each one to the watcher, which reads it itself while the run waits for the turn:
//! what the watcher sees must be exactly what it sees when the run reads the model's stream
//! and passes each event on (as a journaled run does, inside the journal's step), for a tool
//! call and then an answer, for a body cut short, and for a watcher that goes away
//! mid-stream.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use futures_util::StreamExt as _;
use harness_core::agent::{Journal, RunError, RunInput, Step};
use harness_core::{
    Agent, AgentEvent, CompletionResponse, Content, Llm, Result, ToolCall, ToolError, async_trait,
};
use harness_providers::{Anthropic, Gemini, OpenAi};
use support::{Reply, Server, fixture};

mod tools {
    /// Get the capital of a country.
    ///
    /// * `country` - The country name.
    #[harness_core::tool]
    pub(crate) fn get_capital(country: String) -> String {
        format!("The capital of {country} is London.")
    }

    /// Get the user's country.
    #[harness_core::tool]
    pub(crate) fn get_country() -> String {
        "France".to_owned()
    }

    /// Look up the current exchange rate between two currencies.
    ///
    /// * `from_currency` - The currency to convert from.
    /// * `to_currency` - The currency to convert to.
    #[harness_core::tool]
    pub(crate) fn get_exchange_rate(from_currency: String, to_currency: String) -> String {
        format!("1 {from_currency} = 0.92 {to_currency}")
    }
}

/// A journal that runs every step as it comes: under it, a watched run reads the model's
/// stream itself, inside the step, and passes each event on, instead of handing the stream
/// to the watcher.
struct ReadByTheRun;

#[async_trait]
impl Journal for ReadByTheRun {
    async fn model_call(
        &self,
        _turn: usize,
        step: Step<'_, Result<CompletionResponse>>,
    ) -> Result<CompletionResponse> {
        step.await
    }

    async fn tool_call(
        &self,
        _call: &ToolCall,
        step: Step<'_, std::result::Result<Content, ToolError>>,
    ) -> std::result::Result<Content, ToolError> {
        step.await
    }
}

/// How a watched run reads the model: `relayed`, the run reads it and passes each event on.
fn input(prompt: &str, relayed: bool) -> RunInput<'static> {
    let input = RunInput::from(prompt);
    if relayed {
        input.with_journal(&ReadByTheRun)
    } else {
        input
    }
}

/// A server answering the first request with `first` and every later one with `second`.
async fn two_answers(first: &str, second: &str) -> Server {
    let (first, second) = (fixture(first), fixture(second));
    Server::start(move |n, _| {
        Reply::sse(if n == 0 {
            first.clone()
        } else {
            second.clone()
        })
    })
    .await
}

type Item = std::result::Result<AgentEvent, RunError>;

async fn watch(agent: &Agent, input: RunInput<'_>) -> Vec<Item> {
    agent.stream(input).collect().await
}

/// Runs `prompt` watched twice, each time against a fresh server with the two recorded
/// answers: the model's stream handed to the watcher, and read by the run. Returns both
/// event lists, and the requests each server received.
async fn both_ways<M: Llm + 'static>(
    first: &str,
    second: &str,
    model: impl Fn(&str) -> M,
    tool: impl Fn(harness_core::agent::AgentBuilder) -> harness_core::agent::AgentBuilder,
    prompt: &str,
) -> [(Vec<Item>, Vec<serde_json::Value>); 2] {
    let direct_server = two_answers(first, second).await;
    let direct = tool(Agent::builder(model(&direct_server.url)))
        .build()
        .unwrap();
    let direct_events = watch(&direct, input(prompt, false)).await;

    let relayed_server = two_answers(first, second).await;
    let relayed = tool(Agent::builder(model(&relayed_server.url)))
        .build()
        .unwrap();
    let relayed_events = watch(&relayed, input(prompt, true)).await;
    let bodies = |server: &Server| {
        server
            .requests()
            .iter()
            .map(support::Request::json)
            .collect()
    };
    [
        (direct_events, bodies(&direct_server)),
        (relayed_events, bodies(&relayed_server)),
    ]
}

/// The two ways saw the same events, in the same order, and sent the same requests; the
/// events are a whole two-step run whose deltas make its answer.
fn assert_same_run(
    [(direct, direct_requests), (relayed, relayed_requests)]: [(Vec<Item>, Vec<serde_json::Value>);
        2],
    tool: &str,
) {
    let direct: Vec<AgentEvent> = direct.into_iter().map(|e| e.unwrap()).collect();
    let relayed: Vec<AgentEvent> = relayed.into_iter().map(|e| e.unwrap()).collect();
    assert_eq!(direct, relayed);
    assert_eq!(direct_requests, relayed_requests);
    assert_eq!(direct_requests.len(), 2);

    let steps: Vec<usize> = direct
        .iter()
        .filter_map(|e| match e {
            AgentEvent::StepStarted { step } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [1, 2]);
    let started = direct
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolStarted { name, .. } if name == tool))
        .expect("the tool started");
    assert!(
        matches!(&direct[started + 1], AgentEvent::ToolFinished { name, failed: false, .. } if name == tool),
        "{:?}",
        direct[started + 1]
    );
    let second_step = direct
        .iter()
        .position(|e| matches!(e, AgentEvent::StepStarted { step: 2 }))
        .unwrap();
    assert!(second_step > started);
    let text: String = direct[second_step..]
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let Some(AgentEvent::Finished(state)) = direct.last() else {
        panic!("the run did not finish: {:?}", direct.last());
    };
    assert!(!text.is_empty());
    assert_eq!(state.output_text(), text);
}

#[tokio::test]
async fn openai_a_watched_run_reads_the_same_through_the_handed_stream() {
    let runs = both_ways(
        "openai/chat_stream_tool_call_include_usage.sse",
        "openai/chat_stream_text_after_tool_result_include_usage.sse",
        |url| {
            OpenAi::builder("gpt-4o-mini")
                .api_key("k")
                .base_url(url)
                .build()
                .unwrap()
        },
        |builder| builder.tool(tools::GetCapital),
        "What is the capital of the UK? Use the tool, then answer.",
    )
    .await;
    assert_same_run(runs, "get_capital");
}

#[tokio::test]
async fn anthropic_a_watched_run_reads_the_same_through_the_handed_stream() {
    let runs = both_ways(
        "anthropic/messages_stream_server_tool_search_then_tool_use_input_json_delta.sse",
        "anthropic/messages_stream_final_text_after_tool_result.sse",
        |url| {
            Anthropic::builder("claude-sonnet-4-6")
                .api_key("k")
                .base_url(url)
                .build()
                .unwrap()
        },
        |builder| builder.tool(tools::GetExchangeRate),
        "What is the current USD to EUR exchange rate?",
    )
    .await;
    assert_same_run(runs, "get_exchange_rate");
}

#[tokio::test]
async fn gemini_a_watched_run_reads_the_same_through_the_handed_stream() {
    let runs = both_ways(
        "gemini/stream_function_call_thought_signature.sse",
        "gemini/stream_text_after_function_response.sse",
        |url| {
            Gemini::builder("gemini-2.5-flash")
                .api_key("k")
                .base_url(url)
                .build()
                .unwrap()
        },
        |builder| builder.tool(tools::GetCountry),
        "What is the capital of the user country? Call the tool",
    )
    .await;
    assert_same_run(runs, "get_country");
}

/// A body cut short in the middle of the answer: the deltas that came stay seen, and the
/// stream ends with the provider's error carrying the run so far, as when the run read it.
#[tokio::test]
async fn a_cut_answer_ends_the_watched_run_with_the_same_error_and_state() {
    let first = fixture("openai/chat_stream_tool_call_include_usage.sse");
    let second = fixture("openai/chat_stream_text_after_tool_result_include_usage.sse");
    let cut = second[..second.len() / 2].to_vec();
    let mut outcomes = Vec::new();
    for relayed in [false, true] {
        let (first, cut) = (first.clone(), cut.clone());
        let server = Server::start(move |n, _| {
            if n == 0 {
                Reply::sse(first.clone())
            } else {
                Reply::sse(cut.clone()).cut_short()
            }
        })
        .await;
        let model = OpenAi::builder("gpt-4o-mini")
            .api_key("k")
            .base_url(&server.url)
            .build()
            .unwrap();
        let agent = Agent::builder(model)
            .tool(tools::GetCapital)
            .build()
            .unwrap();
        let events = watch(&agent, input("What is the capital of the UK?", relayed)).await;
        let (last, seen) = events.split_last().unwrap();
        let error = last.as_ref().expect_err("the cut answer is an error");
        let provider = error.provider().expect("a provider error");
        let state = error.state();
        assert_eq!(state.messages.len(), 3, "user, the call, its result");
        let seen: Vec<AgentEvent> = seen.iter().map(|e| e.as_ref().unwrap().clone()).collect();
        outcomes.push((seen, provider.kind(), state.messages.clone()));
    }
    assert_eq!(outcomes[0], outcomes[1]);
    assert!(
        outcomes[0]
            .0
            .iter()
            .any(|e| matches!(e, AgentEvent::TextDelta(_))),
        "some of the answer was seen before the cut"
    );
}

/// A watcher that stops reading mid-answer, while the model's stream is handed over, drops
/// the run and that stream with it, cleanly.
#[tokio::test]
async fn dropping_the_watcher_mid_answer_drops_the_model_stream() {
    let first = fixture("openai/chat_stream_tool_call_include_usage.sse");
    let second = fixture("openai/chat_stream_text_after_tool_result_include_usage.sse");
    let server = Server::start(move |n, _| {
        if n == 0 {
            Reply::sse(first.clone())
        } else {
            // The answer's head, then silence for longer than the test.
            Reply::sse(second[..second.len() / 3].to_vec())
                .cut_short()
                .delayed(Duration::ZERO)
        }
    })
    .await;
    let model = OpenAi::builder("gpt-4o-mini")
        .api_key("k")
        .base_url(&server.url)
        .build()
        .unwrap();
    let agent = Agent::builder(model)
        .tool(tools::GetCapital)
        .build()
        .unwrap();
    let mut events = agent.stream("What is the capital of the UK?");
    let mut seen_text = false;
    while let Some(event) = events.next().await {
        if matches!(event, Ok(AgentEvent::TextDelta(_))) {
            seen_text = true;
            break;
        }
    }
    assert!(seen_text);
    drop(events);
    // The agent serves the next watcher from scratch.
    assert_eq!(server.requests().len(), 2);
}
