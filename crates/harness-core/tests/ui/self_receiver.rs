use harness_core::tool;

struct Weather;

impl Weather {
    /// Look up the weather.
    #[tool]
    fn get(&self, city: String) -> String {
        city
    }
}

fn main() {}
