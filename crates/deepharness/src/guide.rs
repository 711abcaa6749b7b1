//! The user guide: how the pieces fit together, with examples that are compiled and run as
//! tests.
#![doc = include_str!("../guide/README.md")]

/// Agents: the loop, running and streaming, state, budgets, context, structured output,
/// human approval and sessions, middleware, sub-agents.
pub mod agents {
    #![doc = include_str!("../guide/agents.md")]
}

/// Tools: `#[tool]`, `Ctx` and dependencies, `Toolbox`, permissions, the file and shell
/// tools, MCP servers, web search.
pub mod tools {
    #![doc = include_str!("../guide/tools.md")]
}

/// Providers: the `Llm` trait, the providers, choosing one from the environment,
/// reasoning, HTTP settings, wrappers, images and documents.
pub mod providers {
    #![doc = include_str!("../guide/providers.md")]
}

/// Cost: prices and the built-in table, overriding it, money budgets, prompt caching per
/// vendor, counting tokens before a request.
pub mod cost {
    #![doc = include_str!("../guide/cost.md")]
}

/// OpenAI's Responses API: reasoning carried across turns, storage, structured output,
/// hosted tools and their calls.
#[cfg(feature = "providers")]
pub mod openai_responses {
    #![doc = include_str!("../guide/openai-responses.md")]
}

/// Azure OpenAI: endpoints, deployments and API versions, keys and Microsoft Entra ID, the
/// environment, what each API does there, content filters.
#[cfg(feature = "providers")]
pub mod azure {
    #![doc = include_str!("../guide/azure.md")]
}

/// Google Vertex AI: a connection handing out Gemini and Claude models, credentials
/// (Application Default Credentials with feature `vertex`), project and location, model
/// names.
#[cfg(feature = "vertex")]
pub mod vertex {
    #![doc = include_str!("../guide/vertex.md")]
}

/// AWS Bedrock: credentials, regions, model ids and inference profiles, what Converse
/// supports (feature `bedrock`).
#[cfg(feature = "bedrock")]
pub mod bedrock {
    #![doc = include_str!("../guide/bedrock.md")]
}

/// Graphs: typed state, reducers, nodes and edges, loops, running and streaming, diagrams.
pub mod graphs {
    #![doc = include_str!("../guide/graphs.md")]
}

/// Deep research: the prebuilt plan, research and report workflow.
pub mod research {
    #![doc = include_str!("../guide/research.md")]
}

/// Building a coding agent step by step: workspace, file and shell tools, permissions,
/// approval on a terminal, budgets, sessions.
pub mod coding_agent {
    #![doc = include_str!("../guide/coding-agent.md")]
}

/// Testing agents, tools and graphs offline with the test models.
pub mod testing {
    #![doc = include_str!("../guide/testing.md")]
}

/// Durable runs on Restate: journaled steps, sessions, approvals that wait for days, many
/// workers (feature `durable`).
#[cfg(feature = "durable")]
pub mod durable {
    #![doc = include_str!("../guide/durable.md")]
}
