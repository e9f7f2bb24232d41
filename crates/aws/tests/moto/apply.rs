//! Job files applied on DynamoDB (issue 30 item 5), end to end through the API handler: the
//! three-way merge keeps an operator's pause, and a prune by label reads the label index (no
//! scan) and deletes only what an apply wrote.

use serde_json::json;

use crate::lambda::{at, job, Rig};
use crate::need_moto;
use crate::requests::{counting_proxy, take};

#[tokio::test(flavor = "multi_thread")]
async fn an_apply_merges_and_prunes_by_label_on_dynamodb() {
    let moto = need_moto!();
    let (proxy, counts) = counting_proxy(&moto.endpoint).await;
    let Some(rig) = Rig::start_via(at("2029-12-31T23:59:30Z"), Some(&proxy)).await else {
        return;
    };
    let file = |id: &str| {
        let mut spec = job(rig.port);
        spec["jobId"] = json!(id);
        spec["notification"] = json!([]);
        spec["schedule"]["startTime"] = json!("2030-01-01T00:01:00Z");
        spec["labels"] = json!({"team": "payments"});
        spec
    };
    let mut by_hand = file("by-hand");
    by_hand.as_object_mut().map(|m| m.remove("jobId"));
    let (status, body) = rig.api("POST", "/jobs/by-hand", Some(by_hand)).await;
    assert_eq!(status, 200, "{body}");

    let files = json!({"jobs": [file("f-a"), file("f-b")], "changeId": "git:1"});
    let (status, body) = rig.api("POST", "/apply", Some(files.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["created"], json!(["f-a", "f-b"]), "{body}");

    let (status, body) = rig
        .api(
            "POST",
            "/jobs/f-a/pause",
            Some(json!({"notes": "incident 3"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let mut renamed = file("f-a");
    renamed["jobName"] = json!("renamed");
    let only_a =
        json!({"jobs": [renamed], "prune": {"labels": {"team": "payments"}}, "changeId": "git:2"});
    take(&counts);
    let (status, body) = rig.api("POST", "/apply", Some(only_a)).await;
    assert_eq!(status, 200, "{body}");
    let requests = take(&counts);
    assert_eq!(
        body["updated"]["f-a"][0]["path"],
        json!("/jobName"),
        "{body}"
    );
    assert_eq!(body["deleted"], json!(["f-b"]), "{body}");
    assert_eq!(
        requests.get("DynamoDB_20120810.Scan"),
        None,
        "a prune by label never scans: {requests:?}"
    );
    let (_, a) = rig.api("GET", "/jobs/f-a", None).await;
    assert_eq!(
        (&a["jobName"], &a["state"], &a["pausedNotes"]),
        (&json!("renamed"), &json!("paused"), &json!("incident 3"))
    );
    let (status, _) = rig.api("GET", "/jobs/f-b", None).await;
    assert_eq!(status, 404);
    let (status, _) = rig.api("GET", "/jobs/by-hand", None).await;
    assert_eq!(status, 200, "a job made by hand is never pruned");
}
