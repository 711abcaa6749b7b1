//! One run of the loop (spec §6.2): settle a resumed pause, then up to `Budget::steps`
//! model calls, each followed by a round of the tool calls it asked for.

use std::borrow::Cow;
use std::sync::{Arc, PoisonError};

use futures_util::StreamExt as _;
use futures_util::future::join_all;
use serde_json::Value;
use tracing::Instrument as _;

use super::events::AgentEvent;
use super::inner::{AgentInner, ToolMode};
use super::input::RunInput;
#[cfg(feature = "output")]
use super::output::{ANSWER_DOES_NOT_FIT, ASK_FOR_FINAL_ANSWER, FINAL_TOOL, OutputType};
use super::permissions::Decision;
use super::report::Events;
use super::run_error::RunError;
use super::state::{AgentState, PendingHumanInput, StopReason};
use crate::content::Block;
use crate::cost::Cost;
use crate::error::{Error, ProviderError, Result, ToolError};
use crate::llm::LlmEvent;
use crate::message::{Content, Message, Role, ToolCall};
use crate::request::{ModelSettings, Request};
use crate::response::{CompletionResponse, FinishReason, TokenUsage};
use crate::telemetry;
use crate::tool::{CallOptions, Ctx, Gate};

/// The transcript text for a call a permission rule denied.
const DENIED_BY_POLICY: &str = "Denied by policy: this call is not permitted.";
/// The transcript text for calls left unrun because their turn paused on another call.
const NOT_RUN_PAUSED: &str = "Not run: the turn stopped for approval of another call.";
/// The transcript text for a call a human rejected.
const DENIED_BY_USER: &str = "Denied by the user.";
/// The transcript text for a call the middleware refused.
const REFUSED_BY_MIDDLEWARE: &str =
    "Refused before running: the agent's middleware declined this call.";
/// The transcript text for calls a budget stopped before they ran.
const NOT_RUN_BUDGET: &str = "Not run: the run's budget is spent.";
/// The transcript text for calls made in the same turn as `final_answer`.
#[cfg(feature = "output")]
const NOT_RUN_FINAL: &str = "Not run: final_answer ended the turn.";
/// The transcript text that answers an accepted `final_answer` call, so the transcript stays
/// valid if the conversation goes on.
#[cfg(feature = "output")]
const FINAL_ANSWER_ACCEPTED: &str = "Final answer accepted.";

/// The transcript as the loop holds it: shared with the `Ctx` of running tools, so a tool
/// sees it without a copy, and copied on write only if a tool kept it.
type Transcript = Arc<Vec<Message>>;

/// What one run has spent: the budget's measure, and the usage and cost its state reports.
#[derive(Debug, Clone, Copy, Default)]
struct Spent {
    /// The usage of the state the run started from (a resumed run goes on counting).
    before: TokenUsage,
    /// The cost of the state the run started from.
    cost_before: Cost,
    /// This run's model calls.
    tokens: TokenUsage,
    /// What this run's model calls cost.
    cost: Cost,
    /// This run's tool calls.
    tool_calls: usize,
}

impl Spent {
    /// The usage the state reports: the resumed state's and this run's.
    fn usage(&self) -> TokenUsage {
        self.before + self.tokens
    }

    /// The cost the state reports: the resumed state's and this run's.
    fn cost(&self) -> Cost {
        self.cost_before + self.cost
    }

    /// The run so far, unfinished: what a middleware's `after_step` sees and what a
    /// [`RunError`] carries.
    fn snapshot(&self, transcript: &[Message]) -> AgentState {
        AgentState {
            messages: transcript.to_vec(),
            output: Value::Null,
            usage: self.usage(),
            cost: self.cost(),
            stop_reason: StopReason::Unfinished,
            paused: Vec::new(),
        }
    }

    /// The state a run ends with.
    fn finish(
        &self,
        transcript: Transcript,
        output: impl Into<Value>,
        reason: StopReason,
        paused: Vec<PendingHumanInput>,
    ) -> AgentState {
        AgentState {
            messages: Arc::try_unwrap(transcript).unwrap_or_else(|shared| (*shared).clone()),
            output: output.into(),
            usage: self.usage(),
            cost: self.cost(),
            stop_reason: reason,
            paused,
        }
    }
}

/// What became of one dispatched call.
enum Outcome {
    /// Its result, after middleware and truncation: the text, and any images or documents
    /// the tool returned beside it.
    Finished(Content),
    /// The tool asked a human a question; the answer becomes its result.
    Question(String),
}

impl AgentInner {
    // The input comes boxed: an async fn keeps room for its arguments for its whole life,
    // and a `RunInput` inline would be carried, unused after the start, by every run in
    // flight, once per level of the run's future.
    pub(crate) async fn drive(
        &self,
        input: Box<RunInput<'_>>,
        mode: ToolMode,
        events: &Events<'_>,
    ) -> Result<AgentState, RunError> {
        let span = telemetry::agent_span(&self.name, &self.model_names);
        let result = match self.unpriced_budget() {
            // The run does not start: its state goes back as it came.
            Some(error) => Err(RunError::new(error, input.state)),
            None => {
                self.drive_in_span(input, mode, events)
                    .instrument(span.clone())
                    .await
            }
        };
        if let Err(failed) = &result {
            telemetry::record_error(&span, failed.error());
        }
        result
    }

    async fn drive_in_span(
        &self,
        input: Box<RunInput<'_>>,
        mode: ToolMode,
        events: &Events<'_>,
    ) -> Result<AgentState, RunError> {
        // Taken apart in a block of its own, so that nothing of the input but what the loop
        // uses is held across its waits.
        let (messages, usage, cost, paused, deps, settings) = {
            let RunInput {
                state,
                deps,
                settings,
                journal: _,
            } = *input;
            let AgentState {
                messages,
                usage,
                cost,
                paused,
                ..
            } = state;
            let settings = settings.over(&self.settings);
            (messages, usage, cost, paused, deps, settings)
        };
        let (messages, paused) = self.check_rulings(messages, usage, cost, paused)?;
        let mut transcript = self.transcript(messages);
        let ctx = Ctx::new().with_raw_deps(deps);
        let mut spent = Spent {
            before: usage,
            cost_before: cost,
            ..Spent::default()
        };
        // The tool rounds' futures are boxed: inline, the largest of them would size the
        // whole run's future, held by every run in flight while it waits on the model.
        let settled = if paused.is_empty() {
            None
        } else {
            Box::pin(self.settle(&mut transcript, paused, &ctx, mode, events)).await
        };
        if let Some(pending) = settled {
            return Ok(spent.finish(transcript, "", StopReason::Paused, pending));
        }

        for step in 1..=self.budget.steps() {
            events.emit(|| AgentEvent::StepStarted { step });
            let response = match self.ask_model(step, &transcript, &settings, events).await {
                Ok(response) => response,
                Err(error) => return Err(RunError::new(error, spent.snapshot(&transcript))),
            };
            let crossed = self.account(&response, &mut spent);
            let text = response.content().to_owned();
            let dropped_call = dropped_call_notice(&response);
            let (blocks, calls, _, finish_reason) = response.into_parts();
            let content = Content::from_blocks(blocks);

            if let Some((reason, crossed)) = crossed {
                // The turn is kept, its calls answered "not run", so nothing is lost and
                // the transcript stays one a vendor accepts.
                tracing::info!(agent = %self.name, %crossed, "{} reached", reason.as_str());
                record_not_run(&mut transcript, content, &calls);
                return Ok(spent.finish(transcript, text, reason, Vec::new()));
            }

            #[cfg(feature = "output")]
            if self.output.is_some() && calls.iter().any(|c| c.name == FINAL_TOOL) {
                let record = Message::assistant(content).with_tool_calls(calls.clone());
                Arc::make_mut(&mut transcript).push(record);
                if let Some(value) = self.accept_final_answer(&mut transcript, &calls) {
                    let reason = StopReason::Answer;
                    return Ok(spent.finish(transcript, value, reason, Vec::new()));
                }
                continue;
            }

            if calls.is_empty() {
                Arc::make_mut(&mut transcript).push(Message::assistant(content));
                match self.answer(&mut transcript, text, finish_reason, dropped_call) {
                    Some((output, reason)) => {
                        return Ok(spent.finish(transcript, output, reason, Vec::new()));
                    }
                    None => continue,
                }
            }

            if self.tools.is_empty() {
                let error = Error::configuration(format!(
                    "{} received tool calls but has no tools registered",
                    self.name
                ));
                return Err(RunError::new(error, spent.snapshot(&transcript)));
            }
            if !self.budget.allows_tool_calls(spent.tool_calls, calls.len()) {
                record_not_run(&mut transcript, content, &calls);
                let reason = StopReason::ToolCallBudget;
                return Ok(spent.finish(transcript, "", reason, Vec::new()));
            }
            spent.tool_calls += calls.len();
            // The turn is recorded first; the round reads its calls from there.
            Arc::make_mut(&mut transcript).push(Message::assistant(content).with_tool_calls(calls));
            let round = Box::pin(self.tool_round(finish_reason, &transcript, &ctx, mode, events));
            let (results, pending) = round.await;
            record_in_order(&mut transcript, results);
            if let Some(pending) = pending {
                return Ok(spent.finish(transcript, "", StopReason::Paused, pending));
            }
            if let Some(middleware) = &self.middleware
                && !middleware.after_step(step, &spent.snapshot(&transcript))
            {
                let reason = StopReason::Stopped;
                return Ok(spent.finish(transcript, "", reason, Vec::new()));
            }
        }
        let reason = StopReason::StepBudget;
        Ok(spent.finish(transcript, "", reason, Vec::new()))
    }

    /// The run's transcript: the messages, with the system prompt first when they have none.
    fn transcript(&self, mut messages: Vec<Message>) -> Transcript {
        if let Some(system) = &self.system
            && !messages.iter().any(|m| m.role == Role::System)
        {
            messages.insert(0, Message::system(system.clone()));
        }
        Arc::new(messages)
    }

    /// A pause not ruled on cannot go on: the state goes back as it came, pending calls and
    /// all, to be ruled on. Otherwise the transcript and the pause, to settle.
    fn check_rulings(
        &self,
        messages: Vec<Message>,
        usage: TokenUsage,
        cost: Cost,
        paused: Vec<PendingHumanInput>,
    ) -> Result<(Vec<Message>, Vec<PendingHumanInput>), RunError> {
        let Some(undecided) = paused
            .iter()
            .find(|p| p.needs_approval() && p.approved.is_none())
        else {
            return Ok((messages, paused));
        };
        let error = Error::configuration(format!(
            "{} is paused on {}; call state.approve() or state.reject() before running it again",
            self.name, undecided.name
        ));
        let state = AgentState {
            messages,
            output: Value::Null,
            usage,
            cost,
            stop_reason: StopReason::Paused,
            paused,
        };
        Err(RunError::new(error, state))
    }

    /// A money limit with nothing to price the run by fails closed: the error the run does
    /// not start with, naming the model and how to give it prices.
    fn unpriced_budget(&self) -> Option<Error> {
        let limit = self.budget.max_cost()?;
        if self.prices.is_some() {
            return None;
        }
        Some(Error::configuration(format!(
            "{}'s budget has a money limit ({limit}) but its model {} has no prices, so the \
             run cannot be priced: set them on the provider's builder with \
             .prices(Prices::per_million(input, output)), or return them from the model's \
             Llm::info with ModelInfo::with_prices",
            self.name, self.model_name
        )))
    }

    /// A turn without tool calls, already recorded: the run's output and why it ends, or
    /// `None` when the model is asked again (for a structured answer in the right shape, or
    /// for the call the vendor dropped, told in `dropped_call`).
    // Without the output feature the agent has nothing to say about an answer.
    #[cfg_attr(not(feature = "output"), allow(clippy::unused_self))]
    fn answer(
        &self,
        transcript: &mut Transcript,
        text: String,
        finish_reason: FinishReason,
        dropped_call: Option<String>,
    ) -> Option<(Value, StopReason)> {
        // The vendor dropped a broken call: the text before it is no answer. The model is
        // told and asked again, as for arguments that are not JSON.
        if let Some(notice) = dropped_call {
            Arc::make_mut(transcript).push(Message::user(notice));
            return None;
        }
        let complete = finish_reason == FinishReason::Stop;
        #[cfg(feature = "output")]
        if let Some(output) = &self.output {
            return self.structured_answer(transcript, output, text, complete);
        }
        let reason = if complete {
            StopReason::Answer
        } else {
            StopReason::Truncated
        };
        Some((Value::from(text), reason))
    }

    /// A turn without tool calls when a structured answer is asked for: the answer, when the
    /// schema went with the request and the text fits it; otherwise the model is asked
    /// again (`None`), to call `final_answer` or to mend what does not fit.
    #[cfg(feature = "output")]
    fn structured_answer(
        &self,
        transcript: &mut Transcript,
        output: &OutputType,
        text: String,
        complete: bool,
    ) -> Option<(Value, StopReason)> {
        let ask = if !self.native_output {
            ASK_FOR_FINAL_ANSWER.to_owned()
        } else if !complete {
            // A structured answer cut at the output limit cannot be read.
            return Some((Value::from(text), StopReason::Truncated));
        } else {
            // The schema went with the request: the answer is the JSON text.
            match read_native_answer(output, &text) {
                Ok(value) => return Some((value, StopReason::Answer)),
                Err(problems) => format!("{ANSWER_DOES_NOT_FIT} {problems}"),
            }
        };
        Arc::make_mut(transcript).push(Message::user(ask));
        None
    }

    /// One model call: middleware's view, then the context policy's, then the model,
    /// streamed when someone is watching.
    async fn ask_model(
        &self,
        step: usize,
        transcript: &[Message],
        settings: &ModelSettings,
        events: &Events<'_>,
    ) -> Result<CompletionResponse> {
        let prepared = self
            .middleware
            .as_ref()
            .and_then(|m| m.before_model(transcript));
        let request = prepared.as_deref().unwrap_or(transcript);
        let view = self.context.prune(request);
        let span = telemetry::chat_span(&self.model_names, settings);
        let response = async {
            let request = Request::new(&view)
                .with_tools(&self.specs)
                .with_settings(settings);
            #[cfg(feature = "output")]
            let request = match self.output.as_ref().filter(|_| self.native_output) {
                Some(output) => request.with_output(&output.schema),
                None => request,
            };
            let journal = events.journal().filter(|j| j.watches_text());
            if !events.is_streaming() && journal.is_none() {
                // Through the model itself, not `Arc<dyn Llm>`'s forwarding impl, which would
                // box the call's future a second time.
                return (*self.model).generate(request).await;
            }
            let stream = Arc::clone(&self.model).stream(request);
            // The watcher reads the stream itself; the loop waits for the turn.
            if let Some(handoff) = events.handoff() {
                let answer = handoff.hand_over(stream, span.clone()).await;
                return answer.unwrap_or_else(|| Err(self.no_turn()));
            }
            // A journaled run reads it here, inside the journal's step.
            let mut stream = stream;
            while let Some(event) = stream.next().await {
                match event? {
                    LlmEvent::TextDelta(text) => {
                        if let Some(journal) = journal {
                            journal.text_delta(&text);
                        }
                        events.emit(|| AgentEvent::TextDelta(text));
                    }
                    LlmEvent::ThinkingDelta(text) => {
                        events.emit(|| AgentEvent::ThinkingDelta(text));
                    }
                    LlmEvent::HostedCall(call) => {
                        events.emit(|| AgentEvent::HostedCall(call));
                    }
                    LlmEvent::Completed(response) => return Ok(*response),
                }
            }
            Err(self.no_turn())
        }
        .instrument(span.clone());
        let response = match events.journal() {
            Some(journal) => journal.model_call(step, Box::pin(response)).await,
            None => response.await,
        };
        match &response {
            Ok(response) => telemetry::record_response(&span, response),
            Err(error) => telemetry::record_error(&span, error),
        }
        response
    }

    /// A model stream that ended without its turn.
    fn no_turn(&self) -> Error {
        Error::from(ProviderError::new(
            self.model_name.clone(),
            "the model's stream ended without a completed turn",
        ))
    }

    /// Adds the response's usage to the agent's lifetime total and to the run's, and its
    /// cost to the run's; says which limit of the budget (a token limit, then the money
    /// limit) the run has now crossed, if any, before any tool of the turn runs.
    fn account(
        &self,
        response: &CompletionResponse,
        spent: &mut Spent,
    ) -> Option<(StopReason, String)> {
        let usage = *response.usage()?;
        *self
            .total_usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += usage;
        spent.tokens += usage;
        if let Some(prices) = &self.prices {
            spent.cost += usage.cost(prices);
        }
        if let Some(crossed) = self.budget.tokens_crossed(&spent.tokens) {
            return Some((StopReason::TokenBudget, crossed));
        }
        let crossed = self.budget.cost_crossed(&spent.cost)?;
        Some((StopReason::CostBudget, crossed))
    }

    /// Checks a `final_answer` call. Accepted: its value, with every call of the turn
    /// answered so the transcript stays valid. Refused: every bad field goes back to the model
    /// as the call's result, in one message.
    #[cfg(feature = "output")]
    fn accept_final_answer(
        &self,
        transcript: &mut Transcript,
        calls: &[ToolCall],
    ) -> Option<Value> {
        let output = self.output.as_ref()?;
        let position = calls.iter().position(|c| c.name == FINAL_TOOL)?;
        let value = calls[position].arguments_value();
        let verdict = match calls[position].arguments_error() {
            Some(problem) => Err(format!(
                "the arguments are not one JSON object ({problem}); call {FINAL_TOOL} again \
                 with the answer as a JSON object"
            )),
            None => output.check(&value),
        };
        let transcript = Arc::make_mut(transcript);
        for (i, call) in calls.iter().enumerate() {
            let text = match (&verdict, i == position) {
                (Ok(()), true) => FINAL_ANSWER_ACCEPTED.to_owned(),
                (Err(problems), true) => format!("Error: {problems}"),
                (_, false) => NOT_RUN_FINAL.to_owned(),
            };
            transcript.push(tool_message(call, text));
        }
        verdict.ok().map(|()| value)
    }

    /// One round of tool calls, those of the transcript's last message: middleware, then
    /// permissions, then dispatch. Returns each call's result, in call order, to record,
    /// and the calls to pause on, if any.
    async fn tool_round(
        &self,
        finish_reason: FinishReason,
        transcript: &Transcript,
        ctx: &Ctx,
        mode: ToolMode,
        events: &Events<'_>,
    ) -> (Vec<Option<Content>>, Option<Vec<PendingHumanInput>>) {
        let calls = transcript.last().map_or(&[][..], |m| &m.tool_calls[..]);
        let mut results: Vec<Option<Content>> = vec![None; calls.len()];
        let mut runs: Vec<(usize, Cow<'_, ToolCall>, Gate)> = Vec::new();
        let mut asks: Vec<(usize, Cow<'_, ToolCall>)> = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            if let Some(problem) = unreadable_arguments(call, finish_reason) {
                // Nothing the model did not send is run: no middleware, no policy, no tool.
                results[i] = Some(problem.into());
                continue;
            }
            // A middleware may rewrite the call, so it gets its own copy; without one the
            // call is run as the transcript holds it.
            let call = match &self.middleware {
                Some(middleware) => match middleware.before_tool(call.clone()) {
                    Some(call) => Cow::Owned(call),
                    None => {
                        results[i] = Some(REFUSED_BY_MIDDLEWARE.into());
                        continue;
                    }
                },
                None => Cow::Borrowed(call),
            };
            match self.decide(&call) {
                Decision::Deny => results[i] = Some(DENIED_BY_POLICY.into()),
                Decision::Allow => runs.push((i, call, Gate::Open)),
                Decision::Ask if self.tools.can_ask() => runs.push((i, call, Gate::Ask)),
                Decision::Ask => asks.push((i, call)),
            }
        }

        if !asks.is_empty() {
            // Nothing in a turn runs until the human rules; the calls that would have run
            // are recorded as not run, so the transcript stays one vendors accept.
            for (i, _, _) in &runs {
                results[*i] = Some(NOT_RUN_PAUSED.into());
            }
            let pending = asks
                .into_iter()
                .map(|(_, call)| approval(call.into_owned()));
            return (results, Some(pending.collect()));
        }

        let outcomes = self.dispatch(&runs, transcript, ctx, mode, events).await;
        let mut questions = Vec::new();
        for ((i, call, _), outcome) in runs.into_iter().zip(outcomes) {
            match outcome {
                Outcome::Finished(content) => results[i] = Some(content),
                Outcome::Question(question) => questions.push(question_for(&call, question)),
            }
        }
        (results, (!questions.is_empty()).then_some(questions))
    }

    /// What the policy says about a call; with no policy or no matching rule, the tool's own
    /// gate. An unknown tool is allowed, to fail with `ToolNotFound` as its result.
    fn decide(&self, call: &ToolCall) -> Decision {
        self.permissions
            .as_ref()
            .and_then(|p| p.decide(&call.name, &call.arguments))
            .unwrap_or_else(|| match self.tools.get(&call.name) {
                Ok(spec) if spec.requires_approval => Decision::Ask,
                _ => Decision::Allow,
            })
    }

    /// Runs calls, concurrently or one at a time, reporting events; outcomes in call order.
    async fn dispatch(
        &self,
        runs: &[(usize, Cow<'_, ToolCall>, Gate)],
        transcript: &Transcript,
        ctx: &Ctx,
        mode: ToolMode,
        events: &Events<'_>,
    ) -> Vec<Outcome> {
        let ctx = ctx.clone().with_shared_messages(Arc::clone(transcript));
        let started = |call: &ToolCall| {
            events.emit(|| AgentEvent::ToolStarted {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                call_id: call.id.clone(),
            });
        };
        match mode {
            ToolMode::Concurrent if runs.len() > 1 => {
                for (_, call, _) in runs {
                    started(call);
                }
                events.deliver().await;
                let raw = join_all(runs.iter().map(|(_, call, gate)| {
                    let options = call_options(events.tool_ctx(&ctx, call), call, *gate);
                    self.tools.call(&call.name, call.arguments_value(), options)
                }))
                .await;
                runs.iter()
                    .zip(raw)
                    .map(|((_, call, _), result)| self.conclude(call, result, events))
                    .collect()
            }
            // One call runs the same either way, without the joining.
            ToolMode::Concurrent | ToolMode::Sequential => {
                let mut outcomes = Vec::with_capacity(runs.len());
                for (_, call, gate) in runs {
                    started(call);
                    events.deliver().await;
                    let options = call_options(events.tool_ctx(&ctx, call), call, *gate);
                    let result = self.tools.call(&call.name, call.arguments_value(), options);
                    let result = match events.journal() {
                        Some(journal) => journal.tool_call(call, Box::pin(result)).await,
                        None => result.await,
                    };
                    outcomes.push(self.conclude(call, result, events));
                }
                outcomes
            }
        }
    }

    /// A call's raw result as the model will read it: a question stays a question;
    /// anything else passes the middleware, is rendered, cut to the context policy and
    /// reported. Middleware and the policy work on the text; images and documents the tool
    /// returned beside it are kept as they are.
    fn conclude(
        &self,
        call: &ToolCall,
        result: Result<Content, ToolError>,
        events: &Events<'_>,
    ) -> Outcome {
        if let Err(error) = &result
            && error.is_needs_human()
        {
            return Outcome::Question(error.message().to_owned());
        }
        let (text, media) = match result {
            // The common case, taken as it is rather than copied.
            Ok(Content::Text(text)) => (Ok(text), Vec::new()),
            Ok(content) => {
                let media: Vec<Block> = content
                    .blocks()
                    .iter()
                    .filter(|b| matches!(b, Block::Image(_) | Block::Document(_)))
                    .cloned()
                    .collect();
                (Ok(content.text().into_owned()), media)
            }
            Err(error) => (Err(error), Vec::new()),
        };
        let result = match &self.middleware {
            Some(middleware) => middleware.after_tool(call, text),
            None => text,
        };
        let (text, failed) = match result {
            Ok(text) => (text, false),
            Err(error) => (error.model_text(), true),
        };
        let text = self.context.truncate_tool_result(text);
        events.emit(|| AgentEvent::ToolFinished {
            name: call.name.clone(),
            result: text.clone(),
            failed,
            call_id: call.id.clone(),
        });
        if media.is_empty() {
            return Outcome::Finished(Content::Text(text));
        }
        let mut blocks = vec![Block::text(text)];
        blocks.extend(media);
        Outcome::Finished(Content::Blocks(blocks))
    }

    /// Settles a resumed pause before any model call: rejected calls are told so, approved
    /// ones run now (the approval callback is not asked again); every approval is ruled on
    /// (the run checked). Returns the calls still to pause on, when an approved call asked a
    /// question.
    async fn settle(
        &self,
        transcript: &mut Transcript,
        paused: Vec<PendingHumanInput>,
        ctx: &Ctx,
        mode: ToolMode,
        events: &Events<'_>,
    ) -> Option<Vec<PendingHumanInput>> {
        let approvals: Vec<PendingHumanInput> = paused
            .into_iter()
            .filter(PendingHumanInput::needs_approval)
            .collect();
        if approvals.is_empty() {
            return None;
        }
        let mut results: Vec<(ToolCall, Option<Content>)> = Vec::new();
        let mut runs: Vec<(usize, Cow<'_, ToolCall>, Gate)> = Vec::new();
        for (i, pending) in approvals.into_iter().enumerate() {
            let mut call = ToolCall::new(
                pending.name,
                Value::Object(pending.arguments.unwrap_or_default()),
            );
            call.id = pending.call_id;
            if pending.approved == Some(true) {
                runs.push((i, Cow::Owned(call.clone()), Gate::Open));
                results.push((call, None));
            } else {
                results.push((call, Some(DENIED_BY_USER.into())));
            }
        }
        let outcomes = self.dispatch(&runs, transcript, ctx, mode, events).await;
        let mut questions = Vec::new();
        for ((i, call, _), outcome) in runs.into_iter().zip(outcomes) {
            match outcome {
                Outcome::Finished(content) => results[i].1 = Some(content),
                Outcome::Question(question) => questions.push(question_for(&call, question)),
            }
        }
        let messages = results
            .into_iter()
            .filter_map(|(call, text)| text.map(|t| tool_message(&call, t)));
        insert_in_call_order(Arc::make_mut(transcript), messages);
        (!questions.is_empty()).then_some(questions)
    }
}

/// How the loop runs `call`: with its run's `ctx`, its id, and the gate the policy chose.
fn call_options(ctx: Ctx, call: &ToolCall, gate: Gate) -> CallOptions {
    let options = CallOptions::new().with_ctx(ctx).with_gate(gate);
    match &call.id {
        Some(id) => options.with_call_id(id.clone()),
        None => options,
    }
}

/// What the model is told when the vendor dropped a tool call it could not use
/// ([`FinishReason::MalformedToolCall`] and no calls), the vendor's words included; `None`
/// for every other turn.
fn dropped_call_notice(response: &CompletionResponse) -> Option<String> {
    if response.finish_reason() != FinishReason::MalformedToolCall
        || !response.tool_calls().is_empty()
    {
        return None;
    }
    let said = response
        .finish_message()
        .map(|m| format!(" The service said: {}", m.trim()))
        .unwrap_or_default();
    Some(format!(
        "Error: your last tool call could not be read by the service, so it was dropped and \
         not run.{said} Call a tool you were given again, with arguments that are one JSON \
         object matching its parameters, or answer without a tool."
    ))
}

/// How much of arguments that are not one JSON object the model is shown again.
const QUOTED_ARGUMENTS_CHARS: usize = 500;

/// The result a call gets when its arguments are not one JSON object: what was wrong, the
/// parser's words, and what to do. The call is not run.
fn unreadable_arguments(call: &ToolCall, finish_reason: FinishReason) -> Option<String> {
    let problem = call.arguments_error()?;
    Some(if finish_reason == FinishReason::Length {
        format!(
            "Error: the reply reached the output token limit in the middle of this call to \
             '{}', so its arguments are cut off ({problem}). The call was not run; send it \
             again with shorter arguments.",
            call.name
        )
    } else {
        // Vendors are sent `{}` for such a call (some refuse a history holding text that is
        // not JSON), so the model reads here what it wrote.
        let sent = call.raw_arguments.as_deref().unwrap_or_default();
        let mut quoted: String = sent.chars().take(QUOTED_ARGUMENTS_CHARS).collect();
        if quoted.len() < sent.len() {
            quoted.push_str("...");
        }
        format!(
            "Error: the arguments for '{}' are not one JSON object ({problem}). You sent:\n\
             {quoted}\nThe call was not run; send the arguments again as a JSON object.",
            call.name
        )
    })
}

/// A structured answer given as JSON text (the schema went with the request): its value, or
/// every problem with it in words the model can act on.
#[cfg(feature = "output")]
fn read_native_answer(output: &OutputType, text: &str) -> std::result::Result<Value, String> {
    // A model that wraps its JSON in a Markdown fence still sent the JSON.
    let text = text.trim();
    let unfenced = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(text);
    let value: Value = serde_json::from_str(unfenced.trim())
        .map_err(|e| format!("the answer is not JSON ({e})"))?;
    output.check(&value).map(|()| value)
}

/// Records a turn whose calls the budget stops: the model's turn, and "not run" for each
/// call, so the transcript stays one a vendor accepts.
fn record_not_run(transcript: &mut Transcript, content: Content, calls: &[ToolCall]) {
    let transcript = Arc::make_mut(transcript);
    transcript.push(Message::assistant(content).with_tool_calls(calls.to_vec()));
    transcript.extend(calls.iter().map(|call| tool_message(call, NOT_RUN_BUDGET)));
}

/// A pause on a question a running tool asked a human.
fn question_for(call: &ToolCall, question: String) -> PendingHumanInput {
    PendingHumanInput {
        call_id: call.id.clone(),
        name: call.name.clone(),
        question,
        arguments: None,
        approved: None,
    }
}

/// An approval pause for a gated call, asking in plain words with the arguments as JSON.
fn approval(call: ToolCall) -> PendingHumanInput {
    PendingHumanInput {
        question: format!(
            "Run {} with {}?",
            call.name,
            serde_json::to_string(&call.arguments).unwrap_or_default()
        ),
        call_id: call.id,
        name: call.name,
        arguments: Some(call.arguments),
        approved: None,
    }
}

fn tool_message(call: &ToolCall, content: impl Into<Content>) -> Message {
    let message = Message::tool(content, call.name.clone());
    match &call.id {
        Some(id) => message.with_call_id(id.clone()),
        None => message,
    }
}

/// Records a round's results in the order the model asked for the calls: the calls of the
/// transcript's last message, the round's request (each result names its call as the model
/// sent it, whatever the middleware made of it).
fn record_in_order(transcript: &mut Transcript, results: Vec<Option<Content>>) {
    let transcript = Arc::make_mut(transcript);
    let Some(request) = transcript.len().checked_sub(1) else {
        return;
    };
    for (i, text) in results.into_iter().enumerate() {
        let (Some(text), Some(call)) = (text, transcript[request].tool_calls.get(i)) else {
            continue;
        };
        let message = tool_message(call, text);
        transcript.push(message);
    }
}

/// Adds results of a resumed turn so that the turn's results stand in call order: when the
/// transcript ends with the paused turn's request and its results so far, the new results
/// are merged in by call id; otherwise they are appended.
fn insert_in_call_order(transcript: &mut Vec<Message>, new: impl Iterator<Item = Message>) {
    let request_at = transcript
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty());
    let tail_is_results =
        request_at.is_some_and(|at| transcript[at + 1..].iter().all(|m| m.role == Role::Tool));
    transcript.extend(new);
    let Some(at) = request_at.filter(|_| tail_is_results) else {
        return;
    };
    let order: Vec<Option<String>> = transcript[at]
        .tool_calls
        .iter()
        .map(|c| c.id.clone())
        .collect();
    let rank = |m: &Message| {
        m.tool_call_id
            .as_ref()
            .and_then(|id| order.iter().position(|o| o.as_ref() == Some(id)))
            .unwrap_or(usize::MAX)
    };
    transcript[at + 1..].sort_by_key(rank);
}
