//! `/calendars` (docs/api.md "Calendars", docs/spec.md §16): a named calendar is stored, jobs name
//! it in `onlyOn`, `exclude` and business-day rules, its change re-plans them (`replanned`), its
//! deletion is refused while they use it, and every change is recorded.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::{assert_error, ok, Api};

/// docs/spec.md §16.1's London calendar, less its one-off dates.
fn london() -> Value {
    json!({
        "description": "England and Wales bank holidays",
        "timeZone": "Europe/London",
        "rules": [
            {"month": 1, "day": 1, "observed": "nextWeekday", "comment": "New Year's Day"},
            {"easter": -2, "comment": "Good Friday"},
            {"easter": 1, "comment": "Easter Monday"},
            {"month": 5, "weekday": "MON", "nth": 1},
            {"month": 5, "weekday": "MON", "nth": -1},
            {"month": 8, "weekday": "MON", "nth": -1},
            {"month": 12, "day": 25, "observed": "nextWeekday"},
            {"month": 12, "day": 26, "observed": "nextWeekday"}]
    })
}

/// Payroll on the last business day of each month in London, at 18:00 (docs/spec.md §16.3).
fn payroll() -> Value {
    json!({
        "jobName": "payroll",
        "creator": "finance",
        "creatorName": "tests",
        "schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                     "timeZone": "Europe/London"},
        "request": [{"url": "http://127.0.0.1:9/pay", "method": "POST"}]
    })
}

async fn future(api: &Api, job_id: &str) -> Vec<String> {
    let (status, describe) = api.get(&format!("/jobs/{job_id}/describe")).await;
    assert_eq!(status, StatusCode::OK, "{describe}");
    describe["info"]["futureActionTimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_job_names_a_stored_calendar_and_its_change_replans_it() {
    let api = Api::new();
    // A job naming a calendar that does not exist: 400 naming the field and the calendar.
    let (status, body) = api.post("/jobs/payroll", &payroll()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["resp_msg"].as_str().unwrap();
    assert!(
        message.starts_with("schedule.calendars[0].calendar: unknown calendar \"london\""),
        "{message}"
    );

    let (status, put) = api.put("/calendars/london", Some(&london())).await;
    assert_eq!(status, StatusCode::CREATED, "{put}");
    assert_eq!(put["created"], json!(true));
    assert_eq!(put["queued"], json!(0));
    assert_eq!(put["replanned"], json!(0));
    assert_eq!(put["calendar"]["name"], json!("london"));
    assert_eq!(put["calendar"]["version"], json!(1));
    assert_eq!(put["calendar"]["weekend"], json!("SAT,SUN"));
    assert_eq!(put["calendar"]["updatedBy"], json!("anonymous"));

    api.create("payroll", &payroll()).await;
    // The clock stands at 2024-03-10: 29 March 2024 is Good Friday, so the 28th.
    let before = future(&api, "payroll").await;
    assert_eq!(before[0], "2024-03-28T18:00:00+00:00", "{before:?}");

    // 28 March becomes a holiday too: the job is re-planned to the 27th.
    let mut changed = london();
    changed["dates"] = json!(["2024-03-28"]);
    let (status, put) = api.put("/calendars/london", Some(&changed)).await;
    assert_eq!(status, StatusCode::OK, "{put}");
    // Re-planned in the request (no engine queues re-plans here).
    assert_eq!(put["queued"], json!(1));
    assert_eq!(put["replanned"], json!(1));
    assert_eq!(put["calendar"]["version"], json!(2));
    let after = future(&api, "payroll").await;
    assert_eq!(after[0], "2024-03-27T18:00:00+00:00", "{after:?}");
    assert_eq!(after[1..], before[1..], "other months unchanged");

    // The job's trail records the re-plan, by whom and why.
    let (_, history) = api.get("/jobs/payroll/history").await;
    let newest = &history["entries"][0];
    assert_eq!(newest["action"], json!("calendar:update"), "{history}");
    assert_eq!(newest["reason"], json!("calendar london changed"));
    assert_eq!(newest["actor"], json!("anonymous"));

    // The calendar lists its jobs; deleting it is refused naming them.
    let (status, got) = api.get("/calendars/london").await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(got["jobs"], json!(["payroll"]));
    assert_eq!(got["dates"], json!(["2024-03-28"]));
    assert_error(
        &api.delete("/calendars/london").await,
        409,
        "calendar london is used by 1 job(s): payroll",
    );

    // A job that stops naming it is no longer listed; then it can be deleted.
    let mut plain = payroll();
    plain["schedule"] = json!({"cron": ["0 18 * * *"], "timeZone": "Europe/London"});
    let (status, updated) = api.post("/jobs/payroll/update", &plain).await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(api.get("/calendars/london").await.1["jobs"], json!([]));
    assert_eq!(
        api.delete("/calendars/london").await,
        (StatusCode::OK, ok())
    );
    assert_eq!(api.get("/calendars/london").await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.get("/calendars").await.1, json!({"calendars": []}));

    // The calendar's own history outlives it: created, changed, deleted.
    let (status, trail) = api.get("/calendars/london/history").await;
    assert_eq!(status, StatusCode::OK, "{trail}");
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
}

#[tokio::test]
async fn only_on_and_exclude_name_calendars_and_deleting_a_job_unlists_it() {
    let api = Api::new();
    let mut cal = london();
    cal["dates"] = json!(["2024-03-12"]);
    assert_eq!(
        api.put("/calendars/london", Some(&cal)).await.0,
        StatusCode::CREATED
    );
    let job = |spec: Value| {
        json!({"jobName": "daily", "creator": "ops", "creatorName": "tests", "schedule": spec,
               "request": [{"url": "http://127.0.0.1:9/run"}]})
    };
    api.create(
        "daily",
        &job(json!({"cron": ["0 9 * * *"], "exclude": ["london"], "timeZone": "Europe/London"})),
    )
    .await;
    let times = future(&api, "daily").await;
    assert_eq!(
        times[..3],
        [
            "2024-03-11T09:00:00+00:00",
            "2024-03-13T09:00:00+00:00",
            "2024-03-14T09:00:00+00:00"
        ]
    );
    // The ledger names the calendar for the time it removed, beside the nominal times.
    let (status, ledger) = api
        .get("/jobs/daily/occurrences?from=2024-03-11T00:00:00Z&to=2024-03-14T00:00:00Z")
        .await;
    assert_eq!(status, StatusCode::OK, "{ledger}");
    assert_eq!(ledger["count"], json!(2), "nominal times only: {ledger}");
    assert_eq!(
        ledger["occurrences"][1],
        json!({"time": "2024-03-12T09:00:00Z", "status": "calendar", "calendar": "london", "rule": "exclude"}),
        "{ledger}"
    );
    api.create(
        "busy",
        &job(
            json!({"cron": ["0 9 * * *"], "onlyOn": [{"businessDaysOf": "london"}],
                    "timeZone": "Europe/London"}),
        ),
    )
    .await;
    assert_eq!(
        api.get("/calendars/london").await.1["jobs"],
        json!(["busy", "daily"])
    );
    assert_eq!(api.delete("/jobs/daily").await, (StatusCode::OK, ok()));
    assert_eq!(
        api.get("/calendars/london").await.1["jobs"],
        json!(["busy"])
    );
    // A missing name in onlyOn: 400 naming the field and the calendar.
    let (status, body) = api
        .post(
            "/jobs/other",
            &job(json!({"cron": ["0 9 * * *"], "onlyOn": ["paris"]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["resp_msg"]
            .as_str()
            .unwrap()
            .starts_with("schedule.onlyOn[0]: unknown calendar \"paris\"; known: london"),
        "{body}"
    );
}

#[tokio::test]
async fn a_bad_calendar_is_a_400_naming_the_field() {
    let api = Api::new();
    for (body, prefix) in [
        (
            json!({"rules": [{"month": 5, "weekday": "MON", "nth": 6}]}),
            "rules[0]: nth: 6",
        ),
        (
            json!({"dates": ["25/12/2024"]}),
            "dates[0]: expected a date",
        ),
        (
            json!({"weekend": "SAT-FRI"}),
            "weekend: \"SAT-FRI\": every day",
        ),
        (json!({"name": "paris"}), "name: the body says \"paris\""),
        (json!({"colour": "red"}), "colour: unknown field"),
        (json!([1]), "calendar: expected a JSON object"),
    ] {
        assert_error(
            &api.put("/calendars/london", Some(&body)).await,
            400,
            prefix,
        );
    }
    assert_error(
        &api.put("/calendars/bad%20name", Some(&json!({}))).await,
        400,
        "name: \"bad name\"",
    );
    assert_eq!(api.get("/calendars/nope").await.0, StatusCode::NOT_FOUND);
    assert_eq!(api.delete("/calendars/nope").await.0, StatusCode::NOT_FOUND);
}

/// The `ics` field: an iCalendar file's all-day events become the calendar's days.
#[tokio::test]
async fn an_ics_file_becomes_the_calendars_days() {
    let api = Api::new();
    let ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nX-WR-CALNAME:UK\r\n\
X-WR-TIMEZONE:Europe/London\r\n\
BEGIN:VEVENT\r\nUID:1\r\nDTSTART;VALUE=DATE:20241224\r\nSUMMARY:Christmas Eve\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:2\r\nDTSTART;VALUE=DATE:20241225\r\nRRULE:FREQ=YEARLY\r\nSUMMARY:Christmas Day\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";
    let (status, put) = api
        .put(
            "/calendars/uk",
            Some(&json!({"ics": ics, "weekend": "SAT,SUN"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{put}");
    let calendar = &put["calendar"];
    assert_eq!(calendar["dates"], json!(["2024-12-24"]));
    assert_eq!(
        calendar["rules"],
        json!([{"month": 12, "day": 25, "comment": "Christmas Day"}])
    );
    assert_eq!(calendar["timeZone"], json!("Europe/London"));
    assert_eq!(calendar["description"], json!("UK"));
    let timed = ics.replace("DTSTART;VALUE=DATE:20241224", "DTSTART:20241224T090000Z");
    assert_error(
        &api.put("/calendars/uk", Some(&json!({"ics": timed}))).await,
        400,
        "ics: event 0 (\"Christmas Eve\"): DTSTART",
    );
    assert_error(
        &api.put("/calendars/uk", Some(&json!({"ics": 5}))).await,
        400,
        "ics: expected the text",
    );
}

/// Issue 27: `POST /specs/preview` reads the stored calendars a spec names, as job creation does;
/// an unknown one is a 400 naming the field.
#[tokio::test]
async fn spec_preview_knows_stored_calendars() {
    let api = Api::new();
    let spec = json!({"schedule": {"cron": ["0 9 * * *"], "onlyOn": [{"businessDaysOf": "london"}],
                                   "timeZone": "Europe/London"},
                      "from": "2024-03-27T00:00:00Z", "count": 3});
    let (status, body) = api.post("/specs/preview", &spec).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["resp_msg"].as_str().unwrap();
    assert!(
        message.starts_with("schedule.onlyOn[0]: unknown calendar \"london\""),
        "{message}"
    );
    assert_eq!(
        api.put("/calendars/london", Some(&london())).await.0,
        StatusCode::CREATED
    );
    let (status, body) = api.post("/specs/preview", &spec).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Good Friday (29 March), the weekend and Easter Monday (1 April) are skipped.
    assert_eq!(
        body["times"],
        json!([
            "2024-03-27T09:00:00+00:00",
            "2024-03-28T09:00:00+00:00",
            "2024-04-02T09:00:00+01:00"
        ])
    );
    // An unknown name beside known ones: the message lists those there are.
    let (status, body) = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["0 9 * * *"], "exclude": ["paris"]}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["resp_msg"]
            .as_str()
            .unwrap()
            .starts_with("schedule.exclude[0]: unknown calendar \"paris\"; known: london"),
        "{body}"
    );
}
