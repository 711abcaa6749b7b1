//! # deepharness-durable
//!
//! Agent runs that outlive their process, on [Restate](https://restate.dev), a durable
//! execution engine: a worker crash in the middle of a run costs the step that was in
//! flight, not the run; an approval can wait for days with no worker holding it; many
//! workers share the runs.
//!
//! - [`DurableAgent`] serves an [`Agent`](harness_core::Agent) as a Restate virtual
//!   object: one object per session, its transcript in the object's state, one run at a
//!   time per session and sessions in parallel. Every model call and every tool call is a
//!   journaled step ([`RestateJournal`]); a retried invocation reads finished steps back from
//!   the journal instead of running them again.
//! - A call that needs a human (a gated call, a tool's question) suspends the run on an
//!   awakeable; the object's `approve` / `answer` handlers settle it from any process.
//! - [`DurableGraph`] serves a graph's [`Executor`](harness_graph::Executor) as a Restate
//!   service: every node's run is a journaled step, so a graph whose worker dies mid-wave
//!   resumes in that wave without running its finished nodes again.
//! - [`serve`] runs a worker; [`register`] tells a Restate server where it is.
//!
//! What a tool must do to be safe when its step runs again (the worker died after the tool
//! acted, before the step was journaled): derive an idempotency key from
//! [`Ctx::call_id`](harness_core::Ctx::call_id), which is the same on every attempt, and
//! hand it to whatever the tool changes (a payment API's idempotency key, a unique row).
//!
//! The guide's `durable` chapter shows a worker, the server and the calls over curl.

mod elicit;
mod graph;
mod journal;
mod session;
mod worker;

pub use elicit::Question;
pub use graph::{DurableGraph, RestateNodeJournal};
pub use journal::{EventSink, RestateJournal};
pub use session::{Answer, Approval, DurableAgent, RunReply, RunRequest, Waiting};
pub use worker::{register, serve, serve_until};

/// The Restate SDK this crate is built on, for binding other services beside an agent.
pub use restate_sdk;
