//! Procedural macros of [deepharness](https://docs.rs/deepharness).
//!
//! Use them through `harness-core` or `deepharness`, which re-export them and document them
//! with examples. The generated code names the runtime crate it needs with
//! `proc-macro-crate`, so it works whichever of the two a program depends on; pass
//! `#[tool(crate = path)]` to point it elsewhere (a renamed re-export, say).
#![cfg_attr(not(doctest), doc = include_str!("../GUIDE-tools.md"))]

mod docs;
mod graph_state;
mod tool;

use proc_macro::TokenStream;

/// Turns a plain `fn` or `async fn` into a tool a model can call.
///
/// The function stays as it was and callable as plain Rust. Beside it the macro adds a unit
/// struct named after it in UpperCamelCase (`get_weather` → `GetWeather`) that implements
/// `Tool`: register that struct with a `Toolbox` or an agent.
///
/// - **Name**: the function's name, or `#[tool(name = "...")]`.
/// - **Description**: the doc comment as written, or `#[tool(description = "...")]`.
/// - **Parameters**: one per function parameter, each described by its type's
///   `schemars::JsonSchema`; a parameter's description comes from a bullet in the doc
///   comment such as ``* `city` - The city's name``.
/// - **Required**: every parameter except `Option<T>` ones (which keep `T`'s schema) and
///   those given a default with `#[default(expr)]` (the default appears in the schema, so
///   its type must be `Serialize`, and is used when the model leaves the argument out).
/// - **`Ctx`**: a parameter of type `Ctx` or `&Ctx` is filled in by the runtime and is not
///   part of the schema.
/// - **References**: `&str`, `&[T]` and `&T` parameters are read as `String`, `Vec<T>` and
///   `T` and lent to the function.
/// - **Result**: any `Display` value is sent as its text, any other `Serialize` value as
///   JSON, `()` as nothing. A `Result<T, E>`'s `Err` becomes the call's error result with
///   `E`'s text; a harness-core `Error` keeps its kind (so `Error::human_input` pauses the
///   run).
/// - **Gating**: `#[tool(requires_approval)]` makes every call wait for approval.
/// - **Timeout**: `#[tool(timeout_secs = 30)]` (or `2.5`) stops a call still running after
///   that long; the model reads a timed-out error as the call's result. An `async fn` is
///   stopped where it waits; a plain `fn` cannot be interrupted on its thread, so its late
///   result is dropped.
/// - **Blocking**: a plain `fn` runs on tokio's blocking pool, so it never stalls the other
///   calls of its turn.
///
/// A method (`self`), a pattern parameter, a generic function or an `unsafe fn` cannot be a
/// tool, and the compile error points at the token and says why.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Derives `harness_graph::GraphState` for a struct with named fields: the field-by-field
/// merge of a graph's concurrent branches.
///
/// After a wave, each field takes the value its branches wrote: untouched if none changed
/// it, the new value if one did (or several wrote the same value), and for several distinct
/// values the field's reducer, `#[reducer(concat)]`, `#[reducer(merge_maps)]` or
/// `#[reducer(path::to::function)]` (called with the snapshot's value and the written
/// values in ready order). Several writers and no reducer is a `ConcurrentUpdate` error
/// naming the field. Fields must be `Clone + PartialEq`.
#[proc_macro_derive(GraphState, attributes(reducer))]
pub fn derive_graph_state(input: TokenStream) -> TokenStream {
    graph_state::expand(input.into()).into()
}
