//! The quarterly report as a graph: three agents read the quarter's figures in parallel, a
//! writer drafts the report from their findings, a reviewer sends it back until it passes
//! (at most three drafts), and the last node publishes it. Prints the diagram, each wave as
//! it starts, and the report.
//!
//! ```text
//! cargo run --example graph
//! ```
//!
//! With no key set every agent runs on the offline `TestModel` (canned text, and a
//! schema-generated review); `model_from_env_or_test` picks a real provider when one is configured (and says when it falls back).

use std::collections::BTreeMap;
use std::sync::Arc;

use deepharness::Llm;
use deepharness::graph::{Graph, GraphEvent, GraphState, GraphUpdate, Place};
use deepharness::prelude::*;
use futures_util::StreamExt as _;
use schemars::JsonSchema;
use serde::Deserialize;

/// The drafts a reviewer may send back before the report goes out as it is.
const MAX_DRAFTS: u32 = 3;

/// What flows through the graph. Each node gets its own copy and returns it changed; the
/// three parallel readers all write `findings`, so that field merges their maps.
#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct QuarterlyReport {
    #[reducer(merge_maps)]
    findings: BTreeMap<String, String>,
    draft: String,
    drafts: u32,
    feedback: String,
    approved: bool,
    published: String,
}

/// The reviewer's verdict, as structured output.
#[derive(Debug, Deserialize, JsonSchema)]
struct Review {
    /// True when the draft can go out as it is.
    approved: bool,
    /// What to change, when it cannot.
    feedback: String,
}

/// The quarter's raw figures, one set per reader.
const FIGURES: [(&str, &str, &str); 3] = [
    (
        "read_sales",
        "sales",
        "Revenue 4.2M (Q2: 3.9M); 310 new customers; EMEA up 18%.",
    ),
    (
        "read_churn",
        "churn",
        "Monthly churn 2.1% (Q2: 2.6%); 14 enterprise renewals, 1 lost.",
    ),
    (
        "read_support",
        "support",
        "5,400 tickets (Q2: 6,100); median first reply 2h 10m.",
    ),
];

/// Runs a one-off agent: `system`, then `prompt`; its answer.
async fn ask(model: Arc<dyn Llm>, system: &str, prompt: String) -> Result<String, Error> {
    let agent = Agent::builder(model).system(system).build()?;
    Ok(agent.run(prompt).await?.output_text().to_owned())
}

// The nodes: each takes its own copy of the state and returns it changed.

async fn read_figures(
    model: Arc<dyn Llm>,
    topic: &'static str,
    figures: &'static str,
    mut report: QuarterlyReport,
) -> Result<QuarterlyReport, Error> {
    let finding = ask(
        model,
        "You are a financial analyst. Answer in one sentence.",
        format!("What stands out in this quarter's {topic} figures? {figures}"),
    )
    .await?;
    report.findings.insert(topic.to_owned(), finding);
    Ok(report)
}

async fn write_draft(
    model: Arc<dyn Llm>,
    mut report: QuarterlyReport,
) -> Result<QuarterlyReport, Error> {
    let findings: Vec<String> = report
        .findings
        .iter()
        .map(|(topic, finding)| format!("- {topic}: {finding}"))
        .collect();
    let revision = if report.feedback.is_empty() {
        String::new()
    } else {
        format!(
            "\n\nYour last draft:\n{}\n\nThe reviewer asked: {}",
            report.draft, report.feedback
        )
    };
    let prompt = format!(
        "Write a five-line quarterly report from these findings:\n{}{revision}",
        findings.join("\n")
    );
    report.draft = ask(model, "You write crisp board reports.", prompt).await?;
    report.drafts += 1;
    Ok(report)
}

async fn review(
    model: Arc<dyn Llm>,
    mut report: QuarterlyReport,
) -> Result<QuarterlyReport, Error> {
    let reviewer = Agent::builder(model)
        .system("You review board reports: accurate, specific, five lines at most.")
        .output::<Review>()
        .build()?;
    let state = reviewer
        .run(format!("Review this draft:\n\n{}", report.draft))
        .await?;
    // A reviewer that gave no verdict (out of steps) sends the draft back, saying so.
    let verdict = state.output_as::<Review>().unwrap_or_else(|error| Review {
        approved: false,
        feedback: format!("no verdict: {error}"),
    });
    report.approved = verdict.approved;
    report.feedback = verdict.feedback;
    Ok(report)
}

fn publish(mut report: QuarterlyReport) -> QuarterlyReport {
    let status = if report.approved {
        "approved"
    } else {
        "not approved; out of drafts"
    };
    report.published = format!(
        "QUARTERLY REPORT (draft {}, {status})\n\n{}",
        report.drafts, report.draft
    );
    report
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}\n");
    let model = choice.model;

    let mut graph = Graph::<QuarterlyReport>::new();
    // Three readers, all start nodes: they run in the same wave, concurrently.
    let mut readers = Vec::new();
    for (node, topic, figures) in FIGURES {
        let model = Arc::clone(&model);
        readers.push(graph.add_async(node, Place::START, move |report| {
            read_figures(Arc::clone(&model), topic, figures, report)
        })?);
    }
    let writer = Arc::clone(&model);
    let write = graph.add_async("write_draft", Place::MIDDLE, move |report| {
        write_draft(Arc::clone(&writer), report)
    })?;
    let reviewer = Arc::clone(&model);
    let check = graph.add_async("review", Place::MIDDLE, move |report| {
        review(Arc::clone(&reviewer), report)
    })?;
    let done = graph.add("publish", Place::END, publish)?;

    for reader in readers {
        graph.connect(reader, write);
    }
    graph.connect(write, check);
    graph
        .connect(check, write)
        .loop_back()
        .when("needs_revision", |r: &QuarterlyReport| {
            !r.approved && r.drafts < MAX_DRAFTS
        });
    graph
        .connect(check, done)
        .when("done", |r: &QuarterlyReport| {
            r.approved || r.drafts >= MAX_DRAFTS
        });
    let executor = graph.build()?;
    println!("{}\n", executor.diagram());

    // `stream` yields each wave and node as it runs, then the output: the final state and
    // why the run stopped.
    let mut updates = std::pin::pin!(executor.stream(QuarterlyReport::default()));
    while let Some(update) = updates.next().await {
        match update? {
            GraphUpdate::Progress(GraphEvent::WaveStarted { wave, nodes }) => {
                println!("wave {wave}: {}", nodes.join(", "));
            }
            GraphUpdate::Progress(_) => {}
            GraphUpdate::Finished(output) => println!("\n{}", output.state.published),
        }
    }
    Ok(())
}
