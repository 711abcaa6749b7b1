use harness_core::tool;

/// Greet.
#[tool(nmae = "greet")]
fn hello(name: String) -> String {
    name
}

fn main() {}
