use harness_core::tool;

/// Show anything.
#[tool]
fn show(value: impl std::fmt::Display) -> String {
    value.to_string()
}

fn main() {}
