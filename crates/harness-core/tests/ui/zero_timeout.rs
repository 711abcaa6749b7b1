use harness_core::tool;

/// Greet.
#[tool(timeout_secs = 0)]
fn hello(name: String) -> String {
    name
}

fn main() {}
