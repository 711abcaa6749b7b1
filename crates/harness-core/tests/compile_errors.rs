//! What cannot be a tool fails to compile, with an error at the offending token that says why.

#[test]
fn tool_misuse_is_a_readable_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
