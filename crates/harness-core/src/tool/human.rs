//! `Human`: the person a run turns to in the middle of a call, for an approval or an answer.
//!
//! One channel for both, so an application wires its user in once: a toolbox given a
//! [`Human`] asks it to rule on gated calls, and hands it to every tool's [`Ctx`](crate::Ctx),
//! where a tool (or an MCP server behind one, through elicitation) can put a question to it.

use std::sync::Arc;

use serde_json::{Map, Value};

/// A question put to a person in the middle of a call: by a tool through
/// [`Ctx::ask`](crate::Ctx::ask), or by an MCP server (the protocol calls it an elicitation).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// Who asks, as errors and logs name it: the tool, or the MCP server.
    pub source: String,
    /// What is needed, to show the person.
    pub message: String,
    /// How the person answers: a form, or a page to visit.
    pub mode: ElicitationMode,
}

impl ElicitationRequest {
    /// A question from `source`: `message`, answered as `mode` says.
    pub fn new(
        source: impl Into<String>,
        message: impl Into<String>,
        mode: ElicitationMode,
    ) -> Self {
        Self {
            source: source.into(),
            message: message.into(),
            mode,
        }
    }

    /// A form question from `source`: `message`, answered with the fields of `schema` (an
    /// object schema of flat, primitive-typed properties, each perhaps with a `default`).
    pub fn form(source: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        Self {
            source: source.into(),
            message: message.into(),
            mode: ElicitationMode::Form { schema },
        }
    }

    /// A page for the person to visit (a sign-in, a payment), from `source`.
    pub fn url(
        source: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        Self {
            source: source.into(),
            message: message.into(),
            mode: ElicitationMode::Url {
                url: url.into(),
                id: String::new(),
            },
        }
    }
}

/// How a person answers an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationMode {
    /// Fill in a form: an object schema of flat, primitive-typed properties (strings,
    /// numbers, booleans, enums), each perhaps with a `default`.
    Form {
        /// The requested schema, as the asker sent it.
        schema: Value,
    },
    /// Visit a page (a sign-in, a payment) whose result the asker learns by itself; the
    /// answer carries no content.
    Url {
        /// The page to open.
        url: String,
        /// The asker's id for this request (empty when it sent none).
        id: String,
    },
}

/// What a person did with an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationResponse {
    /// The person answered: the form's fields (for an MCP server, a field left out takes
    /// the schema's default, if it has one), or nothing for a URL.
    Accept(Map<String, Value>),
    /// The person said no; the operation goes on without the input.
    Decline,
    /// The person dismissed the request; the operation is cancelled.
    Cancel,
}

/// The person a run turns to during a call: rules on gated calls and answers questions.
///
/// Give it to a toolbox with [`ToolboxBuilder::human`](crate::ToolboxBuilder::human): each
/// gated call is put to [`Human::approve`] before it runs, and each tool's
/// [`Ctx::ask`](crate::Ctx::ask) (and each MCP server's elicitation during a call the run
/// made) reaches [`Human::ask`]. A toolbox without one leaves the agent to pause the run
/// instead, for the answer to come later, perhaps in another process.
///
// The example names `#[tool]`, of the `macros` feature.
#[cfg_attr(feature = "macros", doc = " ```")]
#[cfg_attr(not(feature = "macros"), doc = " ```ignore")]
/// use harness_core::{Ctx, ElicitationRequest, ElicitationResponse, Human, Toolbox, tool};
/// use serde_json::{Value, json};
///
/// /// Someone at a terminal, here scripted.
/// struct Operator;
///
/// #[harness_core::async_trait]
/// impl Human for Operator {
///     async fn approve(&self, name: &str, _arguments: &Value) -> bool {
///         name != "drop_table"
///     }
///     async fn ask(&self, _question: ElicitationRequest) -> ElicitationResponse {
///         let mut fields = serde_json::Map::new();
///         fields.insert("account".into(), json!("ops"));
///         ElicitationResponse::Accept(fields)
///     }
/// }
///
/// /// Bill the account the operator names.
/// #[tool]
/// async fn bill(ctx: &Ctx) -> Result<String, harness_core::ToolError> {
///     let form = json!({"type": "object", "properties": {"account": {"type": "string"}}});
///     match ctx.ask(ElicitationRequest::form("bill", "Which account?", form)).await? {
///         ElicitationResponse::Accept(fields) => Ok(format!("billed {}", fields["account"])),
///         _ => Ok("not billed".into()),
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tools = Toolbox::builder().tool(Bill).human(Operator).build()?;
/// let billed = tools.call("bill", json!({}), harness_core::CallOptions::new()).await?;
/// assert_eq!(billed.text(), r#"billed "ops""#);
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait::async_trait]
pub trait Human: Send + Sync {
    /// Rules on the gated call `name(arguments)`: `true` runs it, `false` refuses it (the
    /// model reads a [`ToolError::denied`](crate::ToolError::denied)).
    async fn approve(&self, name: &str, arguments: &Value) -> bool;

    /// Answers a question. The default declines it, for a human that only approves.
    async fn ask(&self, question: ElicitationRequest) -> ElicitationResponse {
        let _ = question;
        ElicitationResponse::Decline
    }
}

/// A [`Human`] that only approves, from a callback taking each gated call's name and
/// arguments: `true` runs the call, `false` refuses it ([`ToolError::denied`]). Questions
/// are declined. (A human that asks someone over a network implements [`Human`], whose
/// methods are async.)
///
/// [`ToolError::denied`]: crate::ToolError::denied
///
// The example names `#[tool]`, of the `macros` feature.
#[cfg_attr(feature = "macros", doc = " ```")]
#[cfg_attr(not(feature = "macros"), doc = " ```ignore")]
/// use harness_core::{approve_fn, tool, CallOptions, Toolbox};
/// use serde_json::json;
///
/// /// Wire money.
/// #[tool(requires_approval)]
/// fn wire(amount: u32) -> String {
///     format!("sent {amount}")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tools = Toolbox::builder()
///     .tool(Wire)
///     .human(approve_fn(|_name, arguments| arguments["amount"].as_u64() < Some(100)))
///     .build()?;
/// let small = tools.call("wire", json!({"amount": 50}), CallOptions::new()).await?;
/// assert_eq!(small.text(), "sent 50");
/// let large = tools.call("wire", json!({"amount": 500}), CallOptions::new()).await;
/// assert!(large.is_err_and(|e| e.is_denied()));
/// # Ok::<(), harness_core::Error>(())
/// # }).unwrap();
/// ```
pub fn approve_fn<F>(approve: F) -> ApproveFn<F>
where
    F: Fn(&str, &Value) -> bool + Send + Sync + 'static,
{
    ApproveFn(approve)
}

/// A human that only approves, by a callback: what [`approve_fn`] makes.
#[derive(Clone, Copy)]
pub struct ApproveFn<F>(F);

impl<F> std::fmt::Debug for ApproveFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApproveFn")
    }
}

#[async_trait::async_trait]
impl<F> Human for ApproveFn<F>
where
    F: Fn(&str, &Value) -> bool + Send + Sync + 'static,
{
    async fn approve(&self, name: &str, arguments: &Value) -> bool {
        (self.0)(name, arguments)
    }
}

/// A shared human is a human: one person behind several toolboxes, or an MCP server's
/// elicitation and a run's approvals.
#[async_trait::async_trait]
impl<H: Human + ?Sized> Human for Arc<H> {
    async fn approve(&self, name: &str, arguments: &Value) -> bool {
        (**self).approve(name, arguments).await
    }

    async fn ask(&self, question: ElicitationRequest) -> ElicitationResponse {
        (**self).ask(question).await
    }
}
