//! The predictive quota breaker demo prints Squad's run, line for line.

#[path = "../examples/quota.rs"]
mod quota;

#[test]
fn quota_demo_prints_the_expected_run_exactly() {
    let expected = include_str!("../expected/quota.txt");
    let actual = quota::render();
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "line {} differs", i + 1);
        }
        assert_eq!(actual, expected, "same lines, different length or line ends");
    }
}
