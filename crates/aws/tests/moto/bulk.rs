//! Bulk actions on DynamoDB: a bulk pause selected by label, end to end through the API handler,
//! with its AWS requests counted (the counting proxy of `requests`). Prints the figure the
//! report quotes and fails if a job costs more requests than its single-job pause does.

use serde_json::json;

use crate::lambda::{at, job, Rig};
use crate::need_moto;
use crate::requests::{counting_proxy, take, total};

#[tokio::test(flavor = "multi_thread")]
async fn a_bulk_pause_by_label_reads_the_label_index_and_costs_a_pause_per_job() {
    let moto = need_moto!();
    let (proxy, counts) = counting_proxy(&moto.endpoint).await;
    let Some(rig) = Rig::start_via(at("2029-12-31T23:59:30Z"), Some(&proxy)).await else {
        return;
    };
    // More than one page of the label index (100 jobs), and jobs of another label beside them.
    const JOBS: u64 = 120;
    for i in 0..JOBS + 10 {
        let mut spec = job(rig.port);
        spec["notification"] = json!([]);
        spec["schedule"]["startTime"] = json!("2030-01-01T00:01:00Z");
        spec["labels"] = json!({"team": if i < JOBS { "payments" } else { "reports" }});
        let (status, body) = rig
            .api("POST", &format!("/jobs/bulk-{i:03}"), Some(spec))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    take(&counts);

    let (status, body) = rig
        .api(
            "POST",
            "/jobs/bulk-000/pause",
            Some(json!({"notes": "one"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let single = take(&counts);

    let (status, body) = rig
        .api(
            "POST",
            "/bulk/jobs/pause",
            Some(json!({"labels": {"team": "payments"}, "reason": "freeze"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["matched"], JOBS, "{body}");
    assert_eq!(body["failed"], 0, "{body}");
    let bulk = take(&counts);
    assert_eq!(
        bulk.get("DynamoDB_20120810.Scan"),
        None,
        "a selection by label never scans: {bulk:?}"
    );
    let pages = bulk.get("DynamoDB_20120810.Query").copied().unwrap_or(0);
    println!(
        "single pause: {} requests {single:?}\nbulk pause of {JOBS} jobs by label: {} requests ({:.2} per job; {pages} label-index queries) {bulk:?}",
        total(&single),
        total(&bulk),
        total(&bulk) as f64 / JOBS as f64
    );
    // Per job: the single pause's requests; per 100 jobs: one Query and one BatchGetItem.
    let bound = JOBS * total(&single) + 2 * JOBS.div_ceil(100) + 2;
    assert!(
        total(&bulk) <= bound,
        "{} > {bound}: {bulk:?}",
        total(&bulk)
    );
    let (_, paused) = rig
        .api("GET", "/jobs?state=paused&label=team:payments", None)
        .await;
    assert_eq!(
        paused["jobs"].as_array().map(Vec::len),
        Some(100),
        "first page of the paused"
    );
}
