//! The outage demo prints the captured run row for row.

#[path = "../examples/outage.rs"]
mod outage;

#[test]
fn outage_demo_prints_the_captured_run_exactly() {
    let expected = include_str!("../expected/outage.txt");
    let actual = outage::render();
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "line {} differs", i + 1);
        }
        assert_eq!(actual, expected, "same lines, different length or line ends");
    }
}
