//! A parsed job as the world sees it: docs/api.md's example, the written body, the job state, the
//! store's document round trip, the API's JSON and its redaction of secret headers.

use super::*;

#[test]
fn seed_002_example_job() {
    let job_id = id("20220125");
    let def = JobDefinition::parse(&job_id, &seed_002_example(), created()).unwrap();
    assert_eq!(def.job_name(), "job测试2");
    assert_eq!(def.job_description(), Some("走起..."));
    assert_eq!(def.creator(), "001");
    assert_eq!(def.creator_name(), "service-client");
    assert!(def.active());
    assert!(def.is_async());
    assert_eq!(def.qos(), Qos::Normal);
    assert_eq!(def.timeout_seconds(), 15);
    assert_eq!(def.check_rate_seconds(), 4);
    assert_eq!(def.max_retries(), 5);

    let steps = def.requests();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].http.method, HttpMethod::Post);
    assert_eq!(
        steps[0].http.url.placeholders().collect::<Vec<_>>(),
        vec![("schedulingFeedbackUrl", false)]
    );
    assert_eq!(steps[0].http.headers["name"].as_str(), "chensc");
    assert_eq!(
        steps[0].http.body.as_ref().unwrap()["student"][1]["name"],
        "${jobId}"
    );
    assert_eq!(
        steps[1].http.body,
        Some(json!({"school": "${$.student}|json"}))
    );

    let rule = &def.notifications()[0];
    assert_eq!(rule.state_equals, None);
    assert_eq!(rule.http.method, HttpMethod::Post);
    assert_eq!(rule.http.body, Some(json!("${schedulingNotifyBody}|json")));
    assert_eq!(
        rule.http.url.placeholders().collect::<Vec<_>>(),
        vec![
            ("schedulingJobId", false),
            ("schedulingExecuteNumber", false)
        ]
    );

    let check = def.check_url().unwrap();
    assert_eq!(check.method, HttpMethod::Get);
    assert!(check
        .url
        .as_str()
        .starts_with("service://jobswork/main/provideCheckUrl/"));

    let codes: Vec<_> = def
        .retry_rules()
        .iter()
        .map(|r| {
            (
                r.error_equals.as_str(),
                r.interval_seconds,
                r.max_attempts,
                r.backoff_rate,
            )
        })
        .collect();
    assert_eq!(
        codes,
        vec![
            ("500", 2, 2, 1.5),
            ("timeout", 5, 2, 2.0),
            ("error1", 3, 2, 2.0)
        ]
    );

    // Cron period: every 5 minutes (dueTime ignored), none after creation + 5d3s.
    let schedule = def.schedule().unwrap();
    assert_eq!(
        schedule.preview(created(), 2),
        vec![at("2023-09-30T00:05:00Z"), at("2023-09-30T00:10:00Z")]
    );
    assert_eq!(
        schedule.next_after(at("2023-10-04T23:59:00Z")),
        Some(at("2023-10-05T00:00:00Z"))
    );
    assert_eq!(schedule.next_after(at("2023-10-05T00:00:00Z")), None);

    // The id in the body must match the path.
    let e = JobDefinition::parse(&id("other"), &seed_002_example(), created()).unwrap_err();
    assert_eq!(e.path, "jobId");
}

#[test]
fn set_active_updates_the_written_body() {
    let mut def = parse(&with(json!({"active": true}))).unwrap();
    def.set_active(false);
    assert!(!def.active());
    assert_eq!(def.as_written()["active"], json!(0));
    def.set_active(true);
    assert_eq!(def.as_written()["active"], json!(1));
    let again = parse(def.as_written()).unwrap();
    assert_eq!(again, def);
}

#[test]
fn job_state_defaults_and_json() {
    let state = JobState::default();
    assert_eq!(state.next_execute_number, 1);
    assert_eq!(state.remaining_actions, None);
    let json = serde_json::to_value(&state).unwrap();
    for key in [
        "pausedNotes",
        "remainingActions",
        "actionCount",
        "overlapSkipped",
        "missedCatchupWindow",
        "bufferDropped",
        "bufferSize",
        "nextExecuteNumber",
        "lastCompletionResult",
        "lastFailure",
        "lastScheduledTime",
        "pendingBackfills",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    assert_eq!(
        serde_json::from_value::<JobState>(json!({})).unwrap(),
        state
    );

    let def = parse(&with(json!({"remainingActions": 3}))).unwrap();
    assert_eq!(JobState::for_definition(&def).remaining_actions, Some(3));

    let backfill = Backfill {
        start_time: at("2024-01-01T00:00:00Z"),
        end_time: at("2024-01-02T00:00:00Z"),
        overlap: Some(OverlapPolicy::AllowAll),
        requested_at: at("2024-01-03T00:00:00Z"),
        planned_through: None,
        mode: BackfillMode::All,
        reverse: false,
    };
    // The defaults are not stored, so backfills stored before the mode read back the same.
    assert_eq!(
        serde_json::to_value(&backfill).unwrap(),
        json!({"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-02T00:00:00Z",
               "overlap": "AllowAll", "requestedAt": "2024-01-03T00:00:00Z"})
    );
    let failed = Backfill {
        mode: BackfillMode::Failed,
        reverse: true,
        ..backfill
    };
    let stored = serde_json::to_value(&failed).unwrap();
    assert_eq!(
        (&stored["mode"], &stored["reverse"]),
        (&json!("failed"), &json!(true))
    );
    assert_eq!(serde_json::from_value::<Backfill>(stored).unwrap(), failed);
}

#[test]
fn document_round_trip() {
    let def = JobDefinition::parse(&id("20220125"), &seed_002_example(), created()).unwrap();
    let mut job = Job::new(def);
    assert_eq!(job.created_at, created());
    job.pause(Some("maintenance".into()), at("2023-10-01T00:00:00Z"));
    job.state.action_count = 7;
    job.state.next_execute_number = 8;
    job.state.last_scheduled_time = Some(at("2023-09-30T00:35:00Z"));
    job.state.last_completion_result = Some(json!({"ok": true}));
    job.state.pending_backfills.push(Backfill {
        start_time: at("2023-09-01T00:00:00Z"),
        end_time: at("2023-09-02T00:00:00Z"),
        overlap: None,
        requested_at: at("2023-10-01T00:00:00Z"),
        planned_through: None,
        mode: BackfillMode::Missing,
        reverse: true,
    });
    // The declaration a service last sent (issue 26 item 2) is kept with the job.
    job.state.declaration = Some(json!({"jobId": "20220125", "timer": {"period": "5m"}}));
    let doc = job.to_document();
    assert_eq!(
        doc["state"]["declaration"]["timer"],
        json!({"period": "5m"})
    );
    assert_eq!(doc["definition"]["active"], json!(0));
    assert_eq!(doc["state"]["pausedNotes"], "maintenance");
    let back = Job::from_document(&id("20220125"), &doc, job.created_at, job.updated_at).unwrap();
    assert_eq!(back, job);
    // Through text too, as a store would keep it.
    let text = serde_json::to_string(&doc).unwrap();
    let reparsed: Value = serde_json::from_str(&text).unwrap();
    let back =
        Job::from_document(&id("20220125"), &reparsed, job.created_at, job.updated_at).unwrap();
    assert_eq!(back, job);

    let no_state = json!({"definition": minimal()});
    let fresh = Job::from_document(&id("job-1"), &no_state, created(), created()).unwrap();
    assert_eq!(fresh.state, JobState::default());

    let e = Job::from_document(
        &id("job-1"),
        &json!({"definition": minimal(), "state": {"actionCount": "x"}}),
        created(),
        created(),
    )
    .unwrap_err();
    assert_eq!(e.path, "state");
    let e =
        Job::from_document(&id("job-1"), &json!({"state": {}}), created(), created()).unwrap_err();
    assert_eq!(e.path, "definition");
    let e = Job::from_document(
        &id("job-1"),
        &json!({"definition": without("jobName")}),
        created(),
        created(),
    )
    .unwrap_err();
    assert_eq!(e.path, "jobName");
}

#[test]
fn api_json() {
    let mut job = Job::new(parse(&minimal()).unwrap());
    job.updated_at = at("2023-09-30T01:02:03Z");
    let api = job.to_api_json();
    assert_eq!(api["jobId"], "job-1");
    assert_eq!(api["active"], 1);
    assert_eq!(api["state"], "active");
    assert_eq!(api["pausedNotes"], Value::Null);
    assert_eq!(api["createdAt"], "2023-09-30T00:00:00Z");
    assert_eq!(api["updatedAt"], "2023-09-30T01:02:03Z");
    assert_eq!(api["jobName"], "job");
    assert_eq!(api["request"], minimal()["request"]);

    job.pause(Some("why".into()), at("2023-09-30T02:00:00Z"));
    let api = job.to_api_json();
    assert_eq!(api["active"], 0);
    assert_eq!(api["state"], "paused");
    assert_eq!(api["pausedNotes"], "why");
    assert_eq!(job.status().name(), "paused");
    job.unpause(None, at("2023-09-30T03:00:00Z"));
    assert_eq!(job.to_api_json()["state"], "active");
}

/// Issue 12 item 10: the API form hides sensitive header values; the stored form keeps them.
#[test]
fn api_json_redacts_sensitive_headers() {
    let body = with(json!({
        "sensitiveHeaders": ["X-My-Key-Id"],
        "request": [{"url": "https://a.example/", "headers": {
            "Authorization": "Bearer abc", "Cookie": "sid=1", "X-My-Key-Id": "mine", "Accept": "*/*"}}],
        "notification": [{"url": "https://n.example/", "headers": {"X-Api-Key": "k"}}],
        "async": true,
        "checkUrl": {"url": "https://c.example/", "headers": {"x-auth-token": "t"}}
    }));
    let job = Job::new(parse(&body).unwrap());
    assert_eq!(job.definition.sensitive_headers(), ["X-My-Key-Id"]);
    let api = job.to_api_json();
    assert_eq!(
        api["request"][0]["headers"],
        json!({"Authorization": "***", "Cookie": "***", "X-My-Key-Id": "***", "Accept": "*/*"})
    );
    assert_eq!(api["notification"][0]["headers"]["X-Api-Key"], "***");
    assert_eq!(api["checkUrl"]["headers"]["x-auth-token"], "***");
    assert_eq!(job.to_document()["definition"], body);
    let secret = job.definition.requests()[0].http.headers["Authorization"].clone();
    assert_eq!(
        secret,
        crate::template::Template::parse("Bearer abc").unwrap()
    );
}

/// Issue 12 item 10: a read job posted back keeps its secrets; on create the marker is refused.
#[test]
fn submitted_markers_keep_stored_secrets() {
    let body = with(json!({
        "request": [{"url": "https://a.example/", "headers": {"Authorization": "Bearer abc"}}]
    }));
    let stored = parse(&body).unwrap();
    let read = Job::new(stored.clone()).to_api_json();
    let mut sent = read.clone();
    for key in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        sent.as_object_mut().unwrap().remove(key);
    }
    let kept =
        JobDefinition::parse_submitted(&id("job-1"), &sent, created(), Some(&stored)).unwrap();
    assert_eq!(
        kept.requests()[0].http.headers,
        stored.requests()[0].http.headers
    );
    assert_eq!(
        kept.as_written()["request"][0]["headers"]["Authorization"],
        "Bearer abc"
    );
    let e = JobDefinition::parse_submitted(&id("job-1"), &sent, created(), None).unwrap_err();
    assert_eq!(e.path, "request[0].headers.Authorization");
}

/// A run riding on its job's wake-up: covered while the job's wake-up is no later than its
/// fallback time plus the slack, stored with its fallback time, given a fallback of its own when
/// the wake-up moves past, and taken once that time is within the tick's horizon.
#[test]
fn waiting_runs_ride_on_the_jobs_wakeup_while_it_covers_them() {
    let slack = chrono::Duration::seconds(80);
    let fallback = at("2024-01-01T00:03:30Z");
    assert!(covers(Some(at("2024-01-01T00:04:50Z")), fallback, slack));
    assert!(!covers(Some(at("2024-01-01T00:04:51Z")), fallback, slack));
    assert!(!covers(None, fallback, slack));

    let mut state = JobState::default();
    state.wait_in_line("j~2", at("2024-01-01T00:02:00Z"));
    state.wait_in_line("j~3", at("2024-01-01T00:03:00Z"));
    let wake = Some(at("2024-01-01T00:04:00Z"));
    assert!(state.ride_on_wakeup("j~2", fallback, wake, slack));
    assert!(
        !state.ride_on_wakeup("j~9", fallback, wake, slack),
        "not waiting"
    );
    assert!(
        !state.ride_on_wakeup("j~3", fallback, None, slack),
        "no wake-up"
    );
    assert_eq!(state.waiting[0].fallback_at, Some(fallback));
    assert_eq!(state.waiting[1].fallback_at, None);
    // Stored and read back with the job.
    let stored: JobState = serde_json::from_value(serde_json::to_value(&state).unwrap()).unwrap();
    assert_eq!(stored, state);

    assert!(state.uncovered_fallbacks(wake, slack).is_empty());
    let moved = Some(at("2024-01-01T01:00:00Z"));
    let uncovered = state.uncovered_fallbacks(moved, slack);
    assert_eq!(uncovered, [("j~2".to_string(), fallback)]);
    state.fallbacks_written(&["j~2".to_string()]);
    assert!(state.uncovered_fallbacks(moved, slack).is_empty());

    assert!(state.ride_on_wakeup("j~2", fallback, wake, slack));
    assert!(state.take_overdue(at("2024-01-01T00:03:29Z")).is_empty());
    assert_eq!(
        state.take_overdue(at("2024-01-01T00:03:30Z")),
        [("j~2".to_string(), fallback)]
    );
    assert!(
        state.take_overdue(at("2024-01-01T00:09:00Z")).is_empty(),
        "once"
    );
}
