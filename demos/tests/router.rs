//! The router demo shows a sick tool substituted, a soft refusal and the recovery, every line as expected.

#[path = "../examples/router.rs"]
mod router;

#[test]
fn router_demo_prints_the_substitutions_and_the_recovery_exactly() {
    let expected = include_str!("../expected/router.txt");
    let actual = router::render();
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "line {} differs", i + 1);
        }
        assert_eq!(actual, expected, "same lines, different length or line ends");
    }
}
