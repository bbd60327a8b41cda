//! The predictive quota breaker demo prints Squad's run, line for line, and draws it as a
//! timeline.

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

/// The run's timeline, as `--svg PATH` writes it: both processes' transitions, the three
/// predicted or failed openings of the second outage with their backoff windows growing
/// 2m, 4m, 8m, and the two recoveries.
#[test]
fn quota_demo_draws_its_run_as_a_timeline() {
    let (_, svg) = quota::render_with_timeline();
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"), "{svg}");
    assert!(svg.contains(r#"data-phase="closed""#), "it ends closed: {svg}");
    let cooldowns: Vec<&str> = svg
        .split(r#"<g class="cooldown"><title>cooldown "#)
        .skip(1)
        .map(|s| s.split('<').next().unwrap())
        .collect();
    assert_eq!(cooldowns, ["2m", "2m", "4m", "8m"]);
    assert_eq!(svg.matches(r#"<g class="failure">"#).count(), 4);
    assert_eq!(svg.matches(r#"<g class="recovery">"#).count(), 2);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("quota-timeline.svg");
    std::fs::write(&path, &svg).unwrap();
    eprintln!("timeline: {}", path.display());
}
