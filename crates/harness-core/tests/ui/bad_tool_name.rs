use harness_core::tool;

/// Greet.
#[tool(name = "say hello")]
fn hello(name: String) -> String {
    name
}

fn main() {}
