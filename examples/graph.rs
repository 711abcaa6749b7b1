//! The quarterly report as a graph: two agents research in parallel branches, a third node
//! joins their answers. Prints the graph's diagram, then the report.
//!
//! ```text
//! cargo run --example graph
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use deepharness::graph::{Graph, GraphState, Place};
use deepharness::prelude::*;

#[derive(Debug, Clone, Default, PartialEq, GraphState)]
struct Quarter {
    #[reducer(merge_maps)]
    findings: BTreeMap<String, String>,
    report: String,
}

/// A node that asks an agent about `topic` and files the answer under it.
fn researcher(
    model: Arc<dyn Llm>,
    topic: &'static str,
) -> impl Fn(
    Quarter,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Quarter, deepharness::errors::CoreError>> + Send>,
> + Send
+ Sync {
    move |mut quarter: Quarter| {
        let model = Arc::clone(&model);
        Box::pin(async move {
            let agent = Agent::builder()
                .shared_model(model)
                .system("Answer in one sentence.")
                .build()?;
            let state = agent
                .run(format!("How did {topic} do this quarter?"))
                .await?;
            quarter
                .findings
                .insert(topic.to_owned(), state.output_text().to_owned());
            Ok(quarter)
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let choice = model_from_env()?;
    println!("model: {} ({})\n", choice.model.name(), choice.reason);

    let mut graph = Graph::<Quarter>::new();
    let sales = graph.add_async(
        "fetch_sales",
        Place::START,
        researcher(Arc::clone(&choice.model), "sales"),
    )?;
    let churn = graph.add_async(
        "fetch_churn",
        Place::START,
        researcher(Arc::clone(&choice.model), "churn"),
    )?;
    let summarize = graph.add("summarize", Place::END, |mut q: Quarter| {
        q.report = q
            .findings
            .iter()
            .map(|(topic, finding)| format!("{topic}: {finding}"))
            .collect::<Vec<_>>()
            .join("\n");
        q
    })?;
    graph.connect(sales, summarize)?;
    graph.connect(churn, summarize)?;
    let executor = graph.build()?;

    println!("{}\n", executor.diagram());
    let quarter = executor.run_default().await?;
    println!("{}", quarter.report);
    Ok(())
}
