//! `DeepResearch`: plan, research each sub-question with its own agent, synthesize a report.

use std::sync::Arc;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use harness_core::{
    Agent, AgentEvent, AgentState, BoxStream, Budget, Error, IntoTool, Llm, Result, TokenUsage,
    Tool, Toolbox,
};
use serde::Deserialize;

use crate::prompts::{PLANNER_SYSTEM, RESEARCHER_SYSTEM, SYNTHESIZER_SYSTEM};

/// One sub-question and the answer a researcher reached for it (`""` when the researcher ran
/// out of steps without answering).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The sub-question.
    pub question: String,
    /// The researcher's answer.
    pub answer: String,
}

/// What a research run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ResearchResult {
    /// The question asked.
    pub query: String,
    /// The planned sub-questions (the question itself when the planner gave none).
    pub sub_questions: Vec<String>,
    /// The findings in the order they arrived: completion order when parallel, planned order
    /// when sequential.
    pub findings: Vec<Finding>,
    /// The synthesized report.
    pub report: String,
    /// Tokens used by every agent of the run: planner, researchers and synthesizer.
    pub usage: TokenUsage,
}

/// The progress of a research run, in this order: `Planning`, `Planned`, `Researching`, one
/// `Researched` per sub-question, `Synthesizing`, the report's `TextDelta`s, then
/// `ResearchFinished` last.
///
/// `ResearchFinished` is named apart from [`AgentEvent::Finished`] on purpose: the two wrap
/// different things (a research result, an agent's state).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResearchEvent {
    /// Planning has started for this question.
    Planning {
        /// The question.
        query: String,
    },
    /// The plan.
    Planned {
        /// The sub-questions, at most `max_sub_questions`.
        sub_questions: Vec<String>,
    },
    /// This many researchers are about to run.
    Researching {
        /// How many.
        count: usize,
    },
    /// A researcher finished.
    Researched {
        /// The sub-question's index in `sub_questions` (0-based).
        index: usize,
        /// The sub-question.
        question: String,
    },
    /// The synthesizer is about to write the report from this many findings.
    Synthesizing {
        /// How many findings it reads.
        findings: usize,
    },
    /// A piece of the report, as it is written.
    TextDelta(String),
    /// The run is over.
    ResearchFinished(Box<ResearchResult>),
}

/// The planner's structured output.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Plan {
    sub_questions: Vec<String>,
}

/// Plans a question into sub-questions, researches each with its own [`Agent`] (the tools
/// reach every researcher, not the planner or the synthesizer), then streams one report.
///
/// Every run makes fresh agents, so runs are independent and their usage is their own.
#[derive(Clone)]
pub struct DeepResearch {
    model: Arc<dyn Llm>,
    tools: Toolbox,
    max_sub_questions: usize,
    n_parallel: Option<usize>,
    sequential: bool,
    planner_system: String,
    researcher_system: String,
    synthesizer_system: String,
    budget: Option<Budget>,
}

impl std::fmt::Debug for DeepResearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeepResearch")
            .field("tools", &self.tools.names().collect::<Vec<_>>())
            .field("max_sub_questions", &self.max_sub_questions)
            .field("n_parallel", &self.n_parallel)
            .field("sequential", &self.sequential)
            .finish_non_exhaustive()
    }
}

/// Settings for a [`DeepResearch`]; [`DeepResearchBuilder::build`] checks them.
pub struct DeepResearchBuilder {
    research: DeepResearch,
    /// Tools given one by one, registered by `build` (which reports a duplicate name).
    extra_tools: Vec<Arc<dyn Tool>>,
}

impl DeepResearchBuilder {
    /// A tool every researcher gets: a value or an `Arc<dyn Tool>`.
    #[must_use]
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.extra_tools.push(tool.into_tool());
        self
    }

    /// The toolbox every researcher gets (its approval callback included); tools given with
    /// [`DeepResearchBuilder::tool`] join it.
    #[must_use]
    pub fn toolbox(mut self, tools: Toolbox) -> Self {
        self.research.tools = tools;
        self
    }

    /// The planner's cap on sub-questions (default 5, at least 1).
    #[must_use]
    pub fn max_sub_questions(mut self, max: usize) -> Self {
        self.research.max_sub_questions = max;
        self
    }

    /// At most this many researchers at once (at least 1; default: all of them).
    #[must_use]
    pub fn n_parallel(mut self, n: usize) -> Self {
        self.research.n_parallel = Some(n);
        self
    }

    /// Researchers one at a time in planned order, each seeing the earlier answers.
    #[must_use]
    pub fn sequential(mut self, sequential: bool) -> Self {
        self.research.sequential = sequential;
        self
    }

    /// Replaces the planner's system prompt (the cap on sub-questions is still appended).
    #[must_use]
    pub fn planner_system(mut self, prompt: impl Into<String>) -> Self {
        self.research.planner_system = prompt.into();
        self
    }

    /// Replaces the researchers' system prompt.
    #[must_use]
    pub fn researcher_system(mut self, prompt: impl Into<String>) -> Self {
        self.research.researcher_system = prompt.into();
        self
    }

    /// Replaces the synthesizer's system prompt.
    #[must_use]
    pub fn synthesizer_system(mut self, prompt: impl Into<String>) -> Self {
        self.research.synthesizer_system = prompt.into();
        self
    }

    /// Each researcher's budget (default: [`Budget::default`]).
    #[must_use]
    pub fn budget(mut self, budget: Budget) -> Self {
        self.research.budget = Some(budget);
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// A [`Configuration`](harness_core::ErrorKind::Configuration) error for `max_sub_questions` or
    /// `n_parallel` below 1, or `n_parallel` together with `sequential`, or two tools with one
    /// name.
    pub fn build(mut self) -> Result<DeepResearch> {
        if !self.extra_tools.is_empty() {
            let tools = std::mem::take(&mut self.research.tools);
            self.research.tools = tools
                .into_builder()
                .tools(self.extra_tools.drain(..))
                .build()?;
        }
        let r = &self.research;
        if r.max_sub_questions < 1 {
            return Err(Error::configuration(format!(
                "max_sub_questions must be at least 1, got {}",
                r.max_sub_questions
            )));
        }
        match r.n_parallel {
            Some(0) => Err(Error::configuration(
                "n_parallel must be at least 1 when set, got 0",
            )),
            Some(_) if r.sequential => Err(Error::configuration(
                "sequential research runs one researcher at a time, so n_parallel has nothing \
                 to cap; set one or the other",
            )),
            _ => Ok(self.research),
        }
    }
}

impl DeepResearch {
    /// Settings for a research workflow on `model` (any [`Llm`], or an `Arc<dyn Llm>` shared
    /// with other code).
    pub fn builder(model: impl Llm) -> DeepResearchBuilder {
        DeepResearchBuilder {
            research: Self {
                model: Arc::new(model),
                tools: Toolbox::new(),
                max_sub_questions: 5,
                n_parallel: None,
                sequential: false,
                planner_system: PLANNER_SYSTEM.to_owned(),
                researcher_system: RESEARCHER_SYSTEM.to_owned(),
                synthesizer_system: SYNTHESIZER_SYSTEM.to_owned(),
                budget: None,
            },
            extra_tools: Vec::new(),
        }
    }

    /// The researchers' tools.
    pub fn tools(&self) -> &Toolbox {
        &self.tools
    }

    /// The planner's cap on sub-questions.
    pub fn max_sub_questions(&self) -> usize {
        self.max_sub_questions
    }

    /// Whether researchers run one at a time, seeing earlier answers.
    pub fn sequential(&self) -> bool {
        self.sequential
    }

    /// The concurrency cap; `None` runs every researcher at once.
    pub fn n_parallel(&self) -> Option<usize> {
        self.n_parallel
    }

    /// Runs the workflow and returns its result (drains [`DeepResearch::stream`]).
    ///
    /// # Errors
    /// The first error of any agent of the run.
    pub async fn run(&self, query: impl Into<String>) -> Result<ResearchResult> {
        let mut events = self.stream(query);
        while let Some(event) = events.next().await {
            if let ResearchEvent::ResearchFinished(result) = event? {
                return Ok(*result);
            }
        }
        Err(Error::configuration(
            "the research stream ended without a result",
        ))
    }

    /// Runs the workflow as a stream of [`ResearchEvent`]s ending in
    /// [`ResearchEvent::ResearchFinished`], or an error as the last item. The run happens as
    /// the stream is polled; dropping it cancels the run.
    pub fn stream(&self, query: impl Into<String>) -> BoxStream<'static, Result<ResearchEvent>> {
        let research = self.clone();
        let query = query.into();
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let run = async move {
            let emit = |event: ResearchEvent| {
                let _ = sender.send(Ok(event));
            };
            if let Err(error) = research.drive(query, &emit).await {
                let _ = sender.send(Err(error));
            }
        };
        // The workflow polled beside the events it sends; both end when it has.
        let driver = futures_util::stream::once(run).filter_map(|()| std::future::ready(None));
        let events = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        Box::pin(futures_util::stream::select(driver, events))
    }

    async fn drive(&self, query: String, emit: &(dyn Fn(ResearchEvent) + Sync)) -> Result<()> {
        emit(ResearchEvent::Planning {
            query: query.clone(),
        });
        let mut usage = TokenUsage::default();
        let sub_questions = self.plan(&query, &mut usage).await?;
        emit(ResearchEvent::Planned {
            sub_questions: sub_questions.clone(),
        });
        emit(ResearchEvent::Researching {
            count: sub_questions.len(),
        });
        let findings = if self.sequential {
            self.research_sequentially(&sub_questions, &mut usage, emit)
                .await?
        } else {
            self.research_in_parallel(&sub_questions, &mut usage, emit)
                .await?
        };
        emit(ResearchEvent::Synthesizing {
            findings: findings.len(),
        });
        let report = self.synthesize(&query, &findings, &mut usage, emit).await?;
        emit(ResearchEvent::ResearchFinished(Box::new(ResearchResult {
            query,
            sub_questions,
            findings,
            report,
            usage,
        })));
        Ok(())
    }

    async fn plan(&self, query: &str, usage: &mut TokenUsage) -> Result<Vec<String>> {
        let planner = Agent::builder(Arc::clone(&self.model))
            .system(format!(
                "{}\n\nReturn at most {} sub-questions.",
                self.planner_system, self.max_sub_questions
            ))
            .name("planner")
            .output::<Plan>()
            .build()?;
        let state = planner.run(query).await?;
        *usage += state.usage;
        let mut sub_questions = if state.answered() {
            state.output_as::<Plan>()?.sub_questions
        } else {
            Vec::new()
        };
        sub_questions.truncate(self.max_sub_questions);
        if sub_questions.is_empty() {
            sub_questions.push(query.to_owned());
        }
        Ok(sub_questions)
    }

    fn researcher(&self, index: usize) -> Result<Agent> {
        Agent::builder(Arc::clone(&self.model))
            .system(self.researcher_system.clone())
            .name(format!("researcher-{}", index + 1))
            .toolbox(self.tools.clone())
            .budget(self.budget.unwrap_or_default())
            .build()
    }

    async fn research_in_parallel(
        &self,
        sub_questions: &[String],
        usage: &mut TokenUsage,
        emit: &(dyn Fn(ResearchEvent) + Sync),
    ) -> Result<Vec<Finding>> {
        let cap = tokio::sync::Semaphore::new(
            self.n_parallel
                .unwrap_or(sub_questions.len())
                .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
        );
        let mut running: FuturesUnordered<_> = sub_questions
            .iter()
            .enumerate()
            .map(|(index, question)| {
                let cap = &cap;
                async move {
                    let _permit = cap
                        .acquire()
                        .await
                        .map_err(|e| Error::configuration(e.to_string()))?;
                    let state = self.researcher(index)?.run(question.as_str()).await?;
                    Ok::<_, Error>((index, state))
                }
            })
            .collect();
        let mut findings = Vec::with_capacity(sub_questions.len());
        while let Some(done) = running.next().await {
            let (index, state) = done?;
            findings.push(Self::record(
                index,
                &sub_questions[index],
                &state,
                usage,
                emit,
            ));
        }
        Ok(findings)
    }

    async fn research_sequentially(
        &self,
        sub_questions: &[String],
        usage: &mut TokenUsage,
        emit: &(dyn Fn(ResearchEvent) + Sync),
    ) -> Result<Vec<Finding>> {
        let mut findings: Vec<Finding> = Vec::with_capacity(sub_questions.len());
        for (index, question) in sub_questions.iter().enumerate() {
            let prompt = if findings.is_empty() {
                question.clone()
            } else {
                format!(
                    "Already established by earlier research:\n\n{}\n\nNow answer this, using \
                     what is above where it helps: {question}",
                    answers(&findings)
                )
            };
            let state = self.researcher(index)?.run(prompt).await?;
            findings.push(Self::record(index, question, &state, usage, emit));
        }
        Ok(findings)
    }

    /// A researcher's finding, its usage counted and its `Researched` event sent.
    fn record(
        index: usize,
        question: &str,
        state: &AgentState,
        usage: &mut TokenUsage,
        emit: &(dyn Fn(ResearchEvent) + Sync),
    ) -> Finding {
        *usage += state.usage;
        emit(ResearchEvent::Researched {
            index,
            question: question.to_owned(),
        });
        Finding {
            question: question.to_owned(),
            answer: if state.answered() {
                state.output_text().to_owned()
            } else {
                String::new()
            },
        }
    }

    async fn synthesize(
        &self,
        query: &str,
        findings: &[Finding],
        usage: &mut TokenUsage,
        emit: &(dyn Fn(ResearchEvent) + Sync),
    ) -> Result<String> {
        let synthesizer = Agent::builder(Arc::clone(&self.model))
            .system(self.synthesizer_system.clone())
            .name("synthesizer")
            .build()?;
        let prompt = format!(
            "Research question: {query}\n\nFindings:\n\n{}",
            answers(findings)
        );
        let mut events = synthesizer.stream(prompt);
        while let Some(event) = events.next().await {
            match event? {
                AgentEvent::TextDelta(text) => emit(ResearchEvent::TextDelta(text)),
                AgentEvent::Finished(state) => {
                    *usage += state.usage;
                    return Ok(state.output_text().to_owned());
                }
                _ => {}
            }
        }
        Err(Error::configuration(
            "the synthesizer's stream ended without finishing",
        ))
    }
}

/// Findings as the blank-line-joined `Sub-question: …\nAnswer: …` blocks the prompts carry.
fn answers(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("Sub-question: {}\nAnswer: {}", f.question, f.answer))
        .collect::<Vec<_>>()
        .join("\n\n")
}
