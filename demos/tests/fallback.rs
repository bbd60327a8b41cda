//! The fallback demo prints loopctl's model breaker table as a run, every line as expected.

#[path = "../examples/fallback.rs"]
mod fallback;

#[test]
fn fallback_demo_prints_the_model_breaker_table_as_a_run_exactly() {
    let expected = include_str!("../expected/fallback.txt");
    let actual = fallback::render();
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "line {} differs", i + 1);
        }
        assert_eq!(actual, expected, "same lines, different length or line ends");
    }
}
