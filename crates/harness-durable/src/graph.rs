//! [`DurableGraph`]: a graph served as a Restate service, each node's run a journaled step.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use harness_core::async_trait;
use harness_graph::{
    DEFAULT_MAX_STEPS, Executor, GraphInput, GraphState, GraphStopReason, NodeError, NodeFuture,
    NodeJournal,
};
use restate_sdk::context::{Context, ContextSideEffects as _, RunFuture as _};
use restate_sdk::discovery;
use restate_sdk::endpoint::{self, ContextInternal, ServiceOptions};
use restate_sdk::errors::{HandlerError, TerminalError};
use restate_sdk::serde::Json;
use restate_sdk::service::macro_support::{ServiceBoxFuture, service_definition};
use restate_sdk::service::{Service, ServiceDefinition};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::journal::step_retries;
use crate::session::{handler, service_name};

/// Runs each node of a journaled graph run ([`GraphInput::with_journal`]) as a Restate
/// `ctx.run` step named
/// `wave {wave} {node}`: the state the node returned is journaled, so on a retry (the
/// worker died mid-wave) the wave's finished nodes are read back and only the node in
/// flight runs again. A node that fails is retried under the step's retry policy, then
/// fails the graph.
pub struct RestateNodeJournal<'a> {
    ctx: &'a Context<'a>,
    retries: u32,
}

impl<'a> RestateNodeJournal<'a> {
    /// A journal over the service context `ctx`; a failing node is tried `retries` times
    /// in all (at least 1).
    pub fn new(ctx: &'a Context<'a>, retries: u32) -> Self {
        Self {
            ctx,
            retries: retries.max(1),
        }
    }
}

#[async_trait]
impl<S> NodeJournal<S> for RestateNodeJournal<'_>
where
    S: GraphState + Serialize + DeserializeOwned,
{
    async fn node(&self, wave: usize, node: &str, run: NodeFuture<S>) -> Result<S, NodeError> {
        let policy = step_retries(self.retries);
        let state = self
            .ctx
            .run(|| async {
                run.await
                    .map(Json)
                    .map_err(|e| HandlerError::from(e.to_string()))
            })
            .name(format!("wave {wave} {node}"))
            .retry_policy(policy)
            .await;
        state
            .map(Json::into_inner)
            .map_err(|terminal| NodeError::from(terminal.message().to_owned()))
    }
}

/// An [`Executor`] served as a Restate service named `name`, whose `run` handler takes the
/// starting state as JSON and answers the final state: every node's run is a journaled
/// step ([`RestateNodeJournal`]), so a graph whose worker dies mid-wave resumes in that
/// wave on another worker, without running the wave's finished nodes again.
///
/// Call it over the ingress (`POST /<name>/run` with the state), with an idempotency key
/// to start a graph once however often the request is retried.
pub struct DurableGraph<S: GraphState> {
    name: discovery::ServiceName,
    executor: Arc<Executor<S>>,
    max_steps: usize,
    node_retries: u32,
    abort_timeout: Duration,
    state: PhantomData<fn() -> S>,
}

impl<S> DurableGraph<S>
where
    S: GraphState + Serialize + DeserializeOwned,
{
    /// Serves `executor` as the service `name`.
    ///
    /// # Errors
    /// A configuration error naming the problem when `name` is not a valid service name.
    pub fn new(name: impl Into<String>, executor: Executor<S>) -> harness_core::Result<Self> {
        let name = service_name(name.into())?;
        Ok(Self {
            name,
            executor: Arc::new(executor),
            max_steps: DEFAULT_MAX_STEPS,
            node_retries: 3,
            abort_timeout: Duration::from_secs(30 * 60),
            state: PhantomData,
        })
    }

    /// The wave limit of each run (50 by default). The service answers with the state of a
    /// finished graph only: a run that reaches the limit with nodes still to run answers
    /// with a terminal error saying so, as a caller over HTTP cannot read a stop reason
    /// from a bare state.
    #[must_use]
    pub fn with_max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// How many times a failing node is tried before the graph fails (3 by default).
    #[must_use]
    pub fn with_node_retries(mut self, attempts: u32) -> Self {
        self.node_retries = attempts.max(1);
        self
    }

    /// How long a node may still run after Restate's inactivity timeout before the attempt
    /// is aborted (and the node run again): bound it above your slowest node. 30 minutes by
    /// default.
    #[must_use]
    pub fn with_abort_timeout(mut self, timeout: Duration) -> Self {
        self.abort_timeout = timeout;
        self
    }

    /// The Restate service definition, to `bind` on an endpoint or hand to
    /// [`serve`](crate::serve).
    #[must_use]
    pub fn definition(self) -> ServiceDefinition {
        let options = ServiceOptions::new().abort_timeout(self.abort_timeout);
        let discovery = discovery::Service {
            ty: discovery::ServiceType::Service,
            name: self.name.clone(),
            handlers: vec![handler("run", false, true)],
            documentation: Some("A deepharness graph; `run` takes the starting state.".into()),
            metadata: HashMap::default(),
            abort_timeout: None,
            inactivity_timeout: None,
            journal_retention: None,
            idempotency_retention: None,
            enable_lazy_state: None,
            ingress_private: None,
            retry_policy_initial_interval: None,
            retry_policy_max_interval: None,
            retry_policy_max_attempts: None,
            retry_policy_exponentiation_factor: None,
            retry_policy_on_max_attempts: None,
        };
        service_definition(GraphDispatcher(Arc::new(self)), discovery).options(options)
    }
}

struct GraphDispatcher<S: GraphState>(Arc<DurableGraph<S>>);

impl<S> Service for GraphDispatcher<S>
where
    S: GraphState + Serialize + DeserializeOwned,
{
    type Future = ServiceBoxFuture;

    fn handle(&self, ctx: ContextInternal) -> Self::Future {
        let graph = Arc::clone(&self.0);
        Box::pin(async move {
            if ctx.handler_name() != "run" {
                return Err(endpoint::Error::unknown_handler(
                    ctx.service_name(),
                    ctx.handler_name(),
                ));
            }
            let (Json(state), meta) = ctx.input::<Json<S>>().await;
            let context: Context<'_> = (&ctx, meta).into();
            let journal = RestateNodeJournal::new(&context, graph.node_retries);
            let input = GraphInput::new(state)
                .with_max_steps(graph.max_steps)
                .with_journal(&journal);
            let result = match graph.executor.run(input).await {
                Ok(output) if output.stop_reason == GraphStopReason::Done => Ok(Json(output.state)),
                // A caller of the service reads a state only from a finished graph.
                Ok(_) => Err(HandlerError::from(TerminalError::new(format!(
                    "Graph exceeded its limit of {} steps; raise max_steps or check the loop \
                     conditions",
                    graph.max_steps
                )))),
                Err(e) => Err(HandlerError::from(TerminalError::new(e.to_string()))),
            };
            ctx.handle_handler_result(result);
            ctx.end();
            Ok(())
        })
    }
}
