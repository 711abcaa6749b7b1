//! Tools with dependencies: a typed value handed to one run reaches every tool through
//! `Ctx`, so tools stay plain functions, with no globals and no captured handles. One agent
//! serves many customers; each run brings its own.
//!
//! ```text
//! cargo run --example deps
//! ```
//!
//! With no key set it runs on the offline `TestModel`, which calls every tool once;
//! `deepharness::model_from_env_or_test` picks a real provider when one is configured.

use std::collections::BTreeMap;
use std::sync::Mutex;

use deepharness::Ctx;
use deepharness::agent::RunInput;
use deepharness::prelude::*;

/// What the tools need: who is signed in, and the order book they may touch.
struct Shop {
    customer: String,
    orders: Mutex<BTreeMap<String, &'static str>>,
}

impl Shop {
    fn orders(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<String, &'static str>>, String> {
        self.orders
            .lock()
            .map_err(|_| "the order book is unavailable; try again".to_owned())
    }
}

/// The shop a run was given. A missing dependency is the call's error, which the model reads.
fn shop(ctx: &Ctx) -> Result<&Shop, String> {
    ctx.deps::<Shop>()
        .ok_or_else(|| "this run was started without a shop".to_owned())
}

/// List the signed-in customer's orders and their status.
#[tool]
fn list_orders(ctx: &Ctx) -> Result<String, String> {
    let shop = shop(ctx)?;
    let orders = shop.orders()?;
    let lines: Vec<String> = orders
        .iter()
        .map(|(id, status)| format!("{id}: {status}"))
        .collect();
    Ok(format!(
        "Orders of {}:\n{}",
        shop.customer,
        lines.join("\n")
    ))
}

/// Cancel one of the signed-in customer's orders, if it has not shipped.
///
/// # Arguments
/// * `order_id` - The order's id, as `list_orders` shows it.
#[tool]
fn cancel_order(ctx: &Ctx, order_id: String) -> Result<String, String> {
    let shop = shop(ctx)?;
    let mut orders = shop.orders()?;
    match orders.get_mut(&order_id) {
        None => Err(format!(
            "no order `{order_id}`; the customer's orders are: {}",
            orders.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        Some(status) if *status == "shipped" => Err(format!(
            "order {order_id} has shipped and cannot be cancelled"
        )),
        Some(status) => {
            *status = "cancelled";
            Ok(format!("order {order_id} cancelled"))
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let choice = model_from_env_or_test().await?;
    println!("model: {choice}");

    let agent = Agent::builder(choice.model)
        .system("You are a shop's support assistant. Use the tools; never guess an order id.")
        .tool(ListOrders)
        .tool(CancelOrder)
        .build()?;

    // Two customers, one agent: each run carries its own dependencies.
    for (customer, orders) in [
        ("ada", [("A-1", "processing"), ("A-2", "shipped")]),
        ("grace", [("G-7", "processing"), ("G-8", "processing")]),
    ] {
        let shop = Shop {
            customer: customer.to_owned(),
            orders: Mutex::new(
                orders
                    .iter()
                    .map(|(id, s)| ((*id).to_owned(), *s))
                    .collect(),
            ),
        };
        let input = RunInput::from("Cancel my order that has not shipped yet.").with_deps(shop);
        let state = agent.run(input).await?;
        println!("\n{customer}:");
        for message in state.messages.iter().filter(|m| m.tool_call_id.is_some()) {
            println!("  tool result: {}", message.text().replace('\n', "\n    "));
        }
        println!("  answer: {}", state.output_text());
    }
    Ok(())
}
