//! Prebuilt workflows for deepharness.
//!
//! [`DeepResearch`] plans a question into sub-questions, researches each with its own
//! [`Agent`](harness_core::Agent) holding the tools, then writes one report from the answers,
//! streamed as it is written. Its progress is a stream of typed [`ResearchEvent`]s.
//!
//! ```
//! use harness_core::testing::TestModel;
//! use harness_prebuilt::DeepResearch;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let research = DeepResearch::builder(TestModel::new()).max_sub_questions(3).build()?;
//! let result = research.run("Which Rust async runtimes exist?").await?;
//! assert!(!result.report.is_empty());
//! # Ok::<(), harness_core::Error>(())
//! # }).unwrap();
//! ```
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-research.md"))]

mod prompts;
mod research;

pub use prompts::{PLANNER_SYSTEM, RESEARCHER_SYSTEM, SYNTHESIZER_SYSTEM};
pub use research::{DeepResearch, DeepResearchBuilder, Finding, ResearchEvent, ResearchResult};
