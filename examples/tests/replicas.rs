//! The replicas demo prints the same run every time: three replicas in step on a manual
//! clock, their breaker in a real Redis (which the demo starts and kills itself).

#[path = "../examples/replicas.rs"]
mod replicas;

#[test]
fn replicas_demo_prints_its_run_exactly() {
    let Some(binary) = std::env::var_os("BREAKER_REDIS_SERVER").filter(|p| !p.is_empty()) else {
        eprintln!(
            "replicas_demo_prints_its_run_exactly: skipped: no redis-server to start \
             (set BREAKER_REDIS_SERVER=/path/to/redis-server, as scripts/test.sh does)"
        );
        return;
    };
    let expected = include_str!("../expected/replicas.txt");
    let actual = replicas::render(binary.into());
    if actual != expected {
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "line {} differs", i + 1);
        }
        assert_eq!(actual, expected, "same lines, different length or line ends");
    }
}
