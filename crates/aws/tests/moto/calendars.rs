//! Named calendars through the API Lambda handler on moto (docs/api.md "Calendars"): create, get,
//! list, a job using one, a change answered at once with the jobs queued for re-planning
//! (`queued`) and re-planned by the notify function, a duplicate delivery that writes nothing,
//! a refused delete, the history, then the delete.

use serde_json::{json, Value};
use sundial_aws::handlers::{self, QueueKind};

use crate::lambda::{at, Rig};
use crate::need_moto;

fn london(dates: &[&str]) -> Value {
    json!({"description": "England and Wales bank holidays", "timeZone": "Europe/London",
           "rules": [{"easter": -2, "comment": "Good Friday"}, {"easter": 1},
                     {"month": 12, "day": 25, "observed": "nextWeekday"}],
           "dates": dates})
}

/// Payroll on the last business day of each month in London, at 18:00.
fn payroll(port: u16) -> Value {
    json!({
        "jobName": "payroll", "creator": "001", "creatorName": "tests",
        "request": [{"method": "POST", "url": format!("http://127.0.0.1:{port}/pay")}],
        "schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                     "timeZone": "Europe/London"},
    })
}

async fn next_fire(rig: &Rig) -> Value {
    let (status, describe) = rig.api("GET", "/jobs/payroll/describe", None).await;
    assert_eq!(status, 200, "{describe}");
    describe["info"]["futureActionTimes"][0].clone()
}

async fn job_replans(rig: &Rig) -> usize {
    let (status, history) = rig.api("GET", "/jobs/payroll/history", None).await;
    assert_eq!(status, 200, "{history}");
    history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "calendar:update")
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn calendar_routes_through_the_api_handler_with_queued_replans() {
    let _moto = need_moto!();
    let Some(rig) = Rig::start_via(at("2024-03-10T00:00:00Z"), None).await else {
        return;
    };
    let (status, put) = rig.api("PUT", "/calendars/london", Some(london(&[]))).await;
    assert_eq!(status, 201, "{put}");
    assert_eq!(
        (put["queued"].clone(), put["replanned"].clone()),
        (json!(0), json!(0))
    );
    let (status, got) = rig.api("GET", "/calendars/london", None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        (got["version"].clone(), got["jobs"].clone()),
        (json!(1), json!([]))
    );
    let (status, list) = rig.api("GET", "/calendars", None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["calendars"][0]["name"], "london", "{list}");

    let (status, created) = rig
        .api("POST", "/jobs/payroll", Some(payroll(rig.port)))
        .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(next_fire(&rig).await, "2024-03-28T18:00:00+00:00");
    let (_, got) = rig.api("GET", "/calendars/london", None).await;
    assert_eq!(got["jobs"], json!(["payroll"]));

    // The change answers at once: one job queued, none re-planned yet.
    let (status, put) = rig
        .api("PUT", "/calendars/london", Some(london(&["2024-03-28"])))
        .await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(
        (put["queued"].clone(), put["replanned"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(next_fire(&rig).await, "2024-03-28T18:00:00+00:00");

    // The notify function takes the re-plan message.
    let event = rig.poll_notify().await;
    assert_eq!(event.records.len(), 1, "{event:?}");
    let body: Value = serde_json::from_str(event.records[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(body["replanCalendar"], "london");
    assert_eq!(body["jobs"], json!(["payroll"]));
    let response = handlers::batch(&rig.sundial, QueueKind::Notify, event.clone()).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    rig.delete_notify(&event).await;
    assert_eq!(next_fire(&rig).await, "2024-03-27T18:00:00+00:00");
    assert_eq!(job_replans(&rig).await, 1);

    // SQS delivers it again: the job is left as it is, no second entry.
    let response = handlers::batch(&rig.sundial, QueueKind::Notify, event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(job_replans(&rig).await, 1);
    assert_eq!(next_fire(&rig).await, "2024-03-27T18:00:00+00:00");

    // In use: the delete is refused naming the job.
    let (status, refused) = rig.api("DELETE", "/calendars/london", None).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["resp_msg"].as_str().unwrap().contains("payroll"),
        "{refused}"
    );

    // The job stops using it: the delete goes through.
    let mut plain = payroll(rig.port);
    plain["schedule"] = json!({"cron": ["0 18 * * *"], "timeZone": "Europe/London"});
    let (status, updated) = rig.api("POST", "/jobs/payroll/update", Some(plain)).await;
    assert_eq!(status, 200, "{updated}");
    let (status, deleted) = rig.api("DELETE", "/calendars/london", None).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(rig.api("GET", "/calendars/london", None).await.0, 404);

    // Its history, written with each change: created, changed (one job queued), deleted.
    let (status, trail) = rig.api("GET", "/calendars/london/history", None).await;
    assert_eq!(status, 200, "{trail}");
    let actions: Vec<&str> = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["calendar:delete", "calendar:update", "calendar:create"]
    );
    assert_eq!(trail["entries"][1]["queued"], json!(1));
    assert_eq!(
        trail["entries"][1]["definition"]["dates"],
        json!(["2024-03-28"])
    );
}
