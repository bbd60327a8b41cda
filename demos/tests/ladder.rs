//! The retry-ladder demo prints loopctl's comparison, computed on a manual clock, exactly.

#[path = "../examples/ladder.rs"]
mod ladder;

#[test]
fn ladder_demo_prints_the_computed_comparison_exactly() {
    let expected = include_str!("../expected/ladder.txt");
    let actual = ladder::render();
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "line {} differs", i + 1);
        }
        assert_eq!(actual, expected, "same lines, different length or line ends");
    }
}
