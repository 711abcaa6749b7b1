//! A watched run (`Agent::stream_events`) over the REST providers, from recorded traffic on a
//! loopback server. The REST providers return owned streams (`Llm::stream_events_owned`),
//! which the watcher reads itself while the run waits for the turn: what the watcher sees
//! must be exactly what it saw when the run read the model's stream and passed each event
//! on (the path every other model takes), for a tool call and then an answer, for a body cut
//! short, and for a watcher that goes away mid-stream.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use futures_util::StreamExt as _;
use harness_core::{
    Agent, AgentEvent, BoxStream, CompletionResponse, Llm, LlmEvent, Request, Result, async_trait,
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

/// The same model, but without an owned stream: the run reads it and passes each event on.
struct ReadByTheRun<M>(M);

#[async_trait]
impl<M: Llm> Llm for ReadByTheRun<M> {
    async fn generate(&self, request: Request<'_>) -> Result<CompletionResponse> {
        self.0.generate(request).await
    }

    fn stream_events<'a>(&'a self, request: Request<'a>) -> BoxStream<'a, Result<LlmEvent>> {
        self.0.stream_events(request)
    }

    fn name(&self) -> String {
        self.0.name()
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

async fn watch(agent: &Agent, prompt: &str) -> Vec<Result<AgentEvent>> {
    agent.stream_events(prompt).collect().await
}

/// Runs `prompt` watched twice, each time against a fresh server with the two recorded
/// answers: the model as it is (its owned stream read by the watcher) and the model read by
/// the run. Returns both event lists, and the requests each server received.
async fn both_ways<M: Llm + 'static>(
    first: &str,
    second: &str,
    model: impl Fn(&str) -> M,
    tool: impl Fn(harness_core::agent::AgentBuilder) -> harness_core::agent::AgentBuilder,
    prompt: &str,
) -> [(Vec<Result<AgentEvent>>, Vec<serde_json::Value>); 2] {
    let direct_server = two_answers(first, second).await;
    let direct = tool(Agent::builder(model(&direct_server.url)))
        .build()
        .unwrap();
    assert!(
        model(&direct_server.url)
            .stream_events_owned(Request::new(&[]))
            .is_some(),
        "the provider returns an owned stream"
    );
    let direct_events = watch(&direct, prompt).await;

    let relayed_server = two_answers(first, second).await;
    let relayed = tool(Agent::builder(ReadByTheRun(model(&relayed_server.url))))
        .build()
        .unwrap();
    let relayed_events = watch(&relayed, prompt).await;
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
    [(direct, direct_requests), (relayed, relayed_requests)]: [(Vec<Result<AgentEvent>>, Vec<serde_json::Value>);
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
async fn openai_a_watched_run_reads_the_same_through_the_owned_stream() {
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
async fn anthropic_a_watched_run_reads_the_same_through_the_owned_stream() {
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
async fn gemini_a_watched_run_reads_the_same_through_the_owned_stream() {
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
        let builder = if relayed {
            Agent::builder(ReadByTheRun(model))
        } else {
            Agent::builder(model)
        };
        let agent = builder.tool(tools::GetCapital).build().unwrap();
        let events = watch(&agent, "What is the capital of the UK?").await;
        let (last, seen) = events.split_last().unwrap();
        let error = last.as_ref().expect_err("the cut answer is an error");
        let provider = error.provider().expect("a provider error");
        let state = error.state().expect("the run so far");
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
    let mut events = agent.stream_events("What is the capital of the UK?");
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
