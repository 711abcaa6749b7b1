//! DeepResearch on `FunctionModel`: the event order, parallel against sequential researchers,
//! the planner's fallback and cap, summed usage, and the settings refused at construction.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use harness_core::testing::{FunctionModel, RequestRecord};
use harness_core::{
    BoxStream, CompletionResponse, Llm, LlmEvent, Message, Request, Role, TokenUsage, ToolCall,
};
use harness_prebuilt::{DeepResearch, Finding, ResearchEvent};
use serde_json::json;

fn system_of(messages: &[Message]) -> String {
    messages
        .iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.text().to_string())
        .unwrap_or_default()
}

fn last_user(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.text().to_string())
        .unwrap_or_default()
}

/// Plans `plan`; each researcher answers "A(<its prompt>)" after `delay` (three times as long
/// for "q1", so it finishes last when run alongside others), recording when it ran; the synthesizer writes "REPORT". Every call uses 10 input and 1 output token.
fn model(plan: Vec<&'static str>, delay: Duration, log: Arc<Mutex<Vec<String>>>) -> FunctionModel {
    let usage = TokenUsage::new(10, 1, 11);
    FunctionModel::from_async(move |request: RequestRecord| {
        let plan = plan.clone();
        let log = Arc::clone(&log);
        async move {
            let messages = request.messages;
            let system = system_of(&messages);
            if system.contains("sub-questions that, answered together") {
                let call =
                    ToolCall::new("final_answer", json!({ "sub_questions": plan })).with_id("plan");
                return Ok(CompletionResponse::from_tool_calls(vec![call]).with_usage(usage));
            }
            if system.contains("Write one thorough") {
                log.lock()
                    .unwrap()
                    .push(format!("synth:{}", last_user(&messages)));
                return Ok(CompletionResponse::text("REPORT").with_usage(usage));
            }
            let prompt = last_user(&messages);
            log.lock().unwrap().push(format!("start:{prompt}"));
            tokio::time::sleep(if prompt == "q1" { delay * 3 } else { delay }).await;
            log.lock().unwrap().push(format!("end:{prompt}"));
            Ok(CompletionResponse::text(format!("A({prompt})")).with_usage(usage))
        }
    })
}

/// Every event of a run, which must not fail.
async fn events_of(research: &DeepResearch, query: &str) -> Vec<ResearchEvent> {
    research.stream(query).map(Result::unwrap).collect().await
}

#[tokio::test]
async fn events_come_in_order_and_usage_covers_every_agent() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let research = DeepResearch::builder(model(vec!["q1", "q2"], Duration::ZERO, log))
        .build()
        .unwrap();
    let events = events_of(&research, "big question").await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            ResearchEvent::Planning { .. } => "Planning",
            ResearchEvent::Planned { .. } => "Planned",
            ResearchEvent::Researching { .. } => "Researching",
            ResearchEvent::Researched { .. } => "Researched",
            ResearchEvent::Synthesizing { .. } => "Synthesizing",
            ResearchEvent::TextDelta(_) => "TextDelta",
            ResearchEvent::ResearchFinished(_) => "ResearchFinished",
            other => panic!("an event this test does not know: {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "Planning",
            "Planned",
            "Researching",
            "Researched",
            "Researched",
            "Synthesizing",
            "TextDelta",
            "ResearchFinished"
        ]
    );
    assert_eq!(
        events[0],
        ResearchEvent::Planning {
            query: "big question".into()
        }
    );
    assert_eq!(events[2], ResearchEvent::Researching { count: 2 });
    assert_eq!(events[5], ResearchEvent::Synthesizing { findings: 2 });
    assert_eq!(events[6], ResearchEvent::TextDelta("REPORT".into()));
    let ResearchEvent::ResearchFinished(result) = &events[7] else {
        panic!("last event: {:?}", events[7]);
    };
    assert_eq!(result.query, "big question");
    assert_eq!(result.sub_questions, ["q1", "q2"]);
    assert_eq!(result.report, "REPORT");
    // The planner (one final_answer call), two researchers, the synthesizer: four model
    // calls of 11 tokens each.
    assert_eq!(result.usage, TokenUsage::new(40, 4, 44));
    let mut answers: Vec<&str> = result.findings.iter().map(|f| f.answer.as_str()).collect();
    answers.sort_unstable();
    assert_eq!(answers, ["A(q1)", "A(q2)"]);
}

#[tokio::test]
async fn parallel_researchers_overlap_and_findings_arrive_in_completion_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let research = DeepResearch::builder(model(
        vec!["q1", "q2"],
        Duration::from_millis(50),
        Arc::clone(&log),
    ))
    .build()
    .unwrap();
    let events = events_of(&research, "big question").await;
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log[..4],
        ["start:q1", "start:q2", "end:q2", "end:q1"],
        "both researchers start before either ends"
    );
    let researched: Vec<&ResearchEvent> = events
        .iter()
        .filter(|e| matches!(e, ResearchEvent::Researched { .. }))
        .collect();
    assert_eq!(
        researched,
        [
            &ResearchEvent::Researched {
                index: 1,
                question: "q2".into()
            },
            &ResearchEvent::Researched {
                index: 0,
                question: "q1".into()
            }
        ]
    );
    let Some(ResearchEvent::ResearchFinished(result)) = events.last() else {
        panic!("no result: {events:?}");
    };
    let order: Vec<&str> = result
        .findings
        .iter()
        .map(|f| f.question.as_str())
        .collect();
    assert_eq!(order, ["q2", "q1"], "completion order, not planned order");
}

#[tokio::test]
async fn sequential_researchers_run_one_at_a_time_and_see_earlier_answers() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let research = DeepResearch::builder(model(
        vec!["q1", "q2"],
        Duration::from_millis(20),
        Arc::clone(&log),
    ))
    .sequential(true)
    .build()
    .unwrap();
    let result = research.run("big question").await.unwrap();
    let log = log.lock().unwrap().clone();
    let second = "Already established by earlier research:\n\nSub-question: q1\nAnswer: A(q1)\n\n\
                  Now answer this, using what is above where it helps: q2";
    assert_eq!(log[0], "start:q1");
    assert_eq!(
        log[1], "end:q1",
        "the second researcher waits for the first: {log:?}"
    );
    assert_eq!(log[2], format!("start:{second}"));
    assert_eq!(
        result.findings,
        [
            Finding {
                question: "q1".into(),
                answer: "A(q1)".into()
            },
            Finding {
                question: "q2".into(),
                answer: format!("A({second})")
            },
        ]
    );
    assert_eq!(
        log[4],
        format!(
            "synth:Research question: big question\n\nFindings:\n\nSub-question: q1\nAnswer: A(q1)\n\n\
             Sub-question: q2\nAnswer: A({second})"
        )
    );
}

#[tokio::test]
async fn an_empty_plan_falls_back_to_the_question_and_the_cap_holds() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let research = DeepResearch::builder(model(vec![], Duration::ZERO, Arc::clone(&log)))
        .build()
        .unwrap();
    let result = research.run("just this").await.unwrap();
    assert_eq!(result.sub_questions, ["just this"]);
    assert_eq!(result.findings[0].answer, "A(just this)");

    let research = DeepResearch::builder(model(
        vec!["a", "b", "c", "d"],
        Duration::ZERO,
        Arc::new(Mutex::new(Vec::new())),
    ))
    .max_sub_questions(2)
    .build()
    .unwrap();
    let result = research.run("q").await.unwrap();
    assert_eq!(result.sub_questions, ["a", "b"]);
    assert_eq!(result.findings.len(), 2);
}

#[tokio::test]
async fn the_cap_reaches_the_planner_and_n_parallel_limits_concurrency() {
    let seen = Arc::new(Mutex::new(String::new()));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (s, f, p) = (Arc::clone(&seen), Arc::clone(&in_flight), Arc::clone(&peak));
    let model = FunctionModel::from_async(move |request: RequestRecord| {
        let (s, f, p) = (Arc::clone(&s), Arc::clone(&f), Arc::clone(&p));
        async move {
            let messages = request.messages;
            let system = system_of(&messages);
            if system.starts_with("PLAN {braces}") {
                *s.lock().unwrap() = system;
                let call = ToolCall::new("final_answer", json!({"sub_questions": ["a", "b", "c"]}));
                return Ok(CompletionResponse::from_tool_calls(vec![call.with_id("p")]));
            }
            let now = f.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            f.fetch_sub(1, Ordering::SeqCst);
            Ok(CompletionResponse::text("ok"))
        }
    });
    let research = DeepResearch::builder(model)
        .planner_system("PLAN {braces}")
        .max_sub_questions(3)
        .n_parallel(1)
        .build()
        .unwrap();
    research.run("q").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        "PLAN {braces}\n\nReturn at most 3 sub-questions."
    );
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "n_parallel(1) runs one researcher at a time"
    );
}

#[test]
fn invalid_settings_are_refused_at_construction() {
    let model = || FunctionModel::new(|_| CompletionResponse::text("x"));
    let err = DeepResearch::builder(model())
        .max_sub_questions(0)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "max_sub_questions must be at least 1, got 0"
    );
    let err = DeepResearch::builder(model())
        .n_parallel(0)
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("n_parallel must be at least 1 when set, got 0")
    );
    let err = DeepResearch::builder(model())
        .sequential(true)
        .n_parallel(2)
        .build()
        .unwrap_err();
    assert!(err.is_configuration());
    assert!(
        err.to_string().contains("n_parallel has nothing to cap"),
        "{err}"
    );
}

/// Plans one sub-question, answers it with "A", and streams the report as `REPORT_DELTAS`
/// one-character deltas all ready at once.
struct BurstySynthesizer;

const REPORT_DELTAS: usize = 10_000;

impl BurstySynthesizer {
    /// The planner's plan, or a researcher's answer.
    fn answer(messages: &[Message]) -> CompletionResponse {
        if system_of(messages).contains("sub-questions that, answered together") {
            let call =
                ToolCall::new("final_answer", json!({ "sub_questions": ["q1"] })).with_id("plan");
            return CompletionResponse::from_tool_calls(vec![call]);
        }
        CompletionResponse::text("A")
    }
}

#[harness_core::async_trait]
impl Llm for BurstySynthesizer {
    async fn generate(&self, request: Request<'_>) -> harness_core::Result<CompletionResponse> {
        Ok(Self::answer(request.messages))
    }

    fn stream(
        self: Arc<Self>,
        request: Request<'_>,
    ) -> BoxStream<'static, harness_core::Result<LlmEvent>> {
        if !system_of(request.messages).contains("Write one thorough") {
            let answer = Self::answer(request.messages);
            return Box::pin(futures_util::stream::once(async move {
                Ok(LlmEvent::Completed(Box::new(answer)))
            }));
        }
        let deltas = (0..REPORT_DELTAS).map(|_| Ok(LlmEvent::TextDelta("x".to_owned())));
        let whole = CompletionResponse::text("x".repeat(REPORT_DELTAS));
        Box::pin(futures_util::stream::iter(deltas.chain(std::iter::once(
            Ok(LlmEvent::Completed(Box::new(whole))),
        ))))
    }
}

/// A synthesizer that streams 10,000 deltas in one burst: every one reaches the research
/// stream, then `ResearchFinished`, on the current-thread and the multi-thread runtime.
/// Before the fix the nested streams ended silently after tokio's cooperative budget.
#[test]
fn a_report_of_ten_thousand_deltas_streams_whole() {
    let research = DeepResearch::builder(BurstySynthesizer).build().unwrap();
    for runtime in [
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    ] {
        let events: Vec<ResearchEvent> =
            runtime.block_on(async { research.stream("why?").map(|e| e.unwrap()).collect().await });
        let deltas = events
            .iter()
            .filter(|e| matches!(e, ResearchEvent::TextDelta(_)))
            .count();
        assert_eq!(deltas, REPORT_DELTAS);
        let Some(ResearchEvent::ResearchFinished(result)) = events.last() else {
            panic!("the stream must end with ResearchFinished");
        };
        assert_eq!(result.report.len(), REPORT_DELTAS);
    }
}
