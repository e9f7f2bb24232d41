//! Snapshot tests of the human views: answers shaped as the API returns them (docs/api.md), a fixed
//! "now" and no colour, so the snapshots in `snapshots/` are exactly what a user reads.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, Utc};
use insta::assert_snapshot;
use serde_json::{json, Value};

use super::*;

fn now() -> DateTime<Utc> {
    parse("2026-10-30T12:00:00Z").unwrap()
}

fn plain() -> Style {
    Style::plain()
}

/// A job as `GET /jobs/{jobId}` shows it: daily at 01:30 New York time, across the autumn change.
fn night_job() -> Value {
    json!({
        "active": 1,
        "createdAt": "2026-10-28T09:15:00.000Z",
        "creator": "u-1001",
        "creatorName": "Ana",
        "jobDescription": "builds yesterday's sales report",
        "jobId": "nightly-export",
        "jobName": "nightly export",
        "overlap": "BufferOne",
        "pausedNotes": null,
        "request": [
            {"method": "POST", "url": "https://exports.example.com/run?n=${executeNumber}"},
            {"method": "GET", "url": "https://exports.example.com/status"}
        ],
        "schedule": {"cron": ["30 1 * * *"], "timeZone": "America/New_York"},
        "state": "active",
        "timeoutSeconds": 120,
        "updatedAt": "2026-10-30T11:58:00.000Z"
    })
}

#[test]
fn job_list_table() {
    let page = json!({
        "jobs": [
            night_job(),
            {
                "active": 0, "createdAt": "2026-10-01T00:00:00.000Z", "creator": "billing",
                "creatorName": "Billing service", "jobId": "billing-nightly",
                "jobName": "nightly invoices", "pausedNotes": "waiting for the new warehouse",
                "request": [{"method": "POST", "url": "service://billing/main/invoices"}],
                "state": "paused", "timer": {"period": "0 0 2 * * ?"},
                "updatedAt": "2026-10-29T08:00:00.000Z"
            },
            {
                "active": 1, "createdAt": "2026-10-30T11:59:30.000Z", "creator": "001",
                "creatorName": "运维", "jobId": "20220125", "jobName": "定时任务",
                "request": [{"url": "service://oa/x"}], "state": "active",
                "timer": {"period": "external"}, "updatedAt": "2026-10-30T11:59:30.000Z"
            },
            {
                "active": 1, "createdAt": "2026-10-30T10:00:00.000Z", "creator": "ops",
                "creatorName": "ops", "jobId": "poll", "jobName": "poll",
                "target": {"sqs": {"queueUrl": "https://sqs.eu-west-1.amazonaws.com/1/q"}},
                "state": "active", "timer": {"dueTime": "10m", "period": "1h", "ttl": "30d"},
                "updatedAt": "2026-10-30T10:00:00.000Z"
            }
        ],
        "nextCursor": null
    });
    assert_snapshot!(job_list(&page, now(), plain()));
    assert_eq!(
        job_list(&json!({"jobs": [], "nextCursor": null}), now(), plain()),
        "No jobs.\n"
    );
}

#[test]
fn job_get() {
    assert_snapshot!(job(&night_job(), now(), plain()));
}

#[test]
fn describe_with_dst_notes() {
    let answer = json!({
        "job": night_job(),
        "schedule": {"cron": ["30 1 * * *"], "timeZone": "America/New_York", "dialect": "standard"},
        "info": {
            "actionCount": 2,
            "bufferDropped": 0,
            "bufferSize": 0,
            "futureActionTimes": [
                "2026-10-31T01:30:00-04:00",
                "2026-11-01T01:30:00-04:00",
                "2026-11-02T01:30:00-05:00",
                "2026-11-03T01:30:00-05:00"
            ],
            "missedCatchupWindow": 1,
            "overlapSkipped": 0,
            "pendingBackfills": 1,
            "recentActions": [
                {"actualTime": "2026-10-30T05:30:00.412Z", "executionId": "nightly-export~20261030T053000Z",
                 "scheduledTime": "2026-10-30T05:30:00Z", "state": "Succeeded"},
                {"actualTime": null, "executionId": "nightly-export~t~manual-1",
                 "scheduledTime": "2026-10-30T11:59:00.5Z", "state": "Processing"}
            ],
            "remainingActions": null,
            "runningExecutions": [
                {"executionId": "nightly-export~t~manual-1", "startedAt": "2026-10-30T11:59:01Z",
                 "state": "Processing"}
            ]
        }
    });
    assert_snapshot!(describe(&answer, now(), plain()));
}

#[test]
fn describe_of_a_paused_job_says_why_nothing_is_next() {
    let mut job = night_job();
    job["state"] = json!("paused");
    job["active"] = json!(0);
    job["pausedNotes"] = json!("maintenance");
    let answer = json!({"job": job, "info": {"futureActionTimes": [], "recentActions": [],
        "runningExecutions": [], "actionCount": 0, "overlapSkipped": 0,
        "missedCatchupWindow": 0, "bufferDropped": 0, "bufferSize": 0}});
    assert_snapshot!(describe(&answer, now(), plain()));
}

fn executions() -> Vec<Value> {
    vec![
        json!({
            "executionId": "nightly-export~t~manual-1", "jobId": "nightly-export", "executeNumber": 3,
            "state": "Processing", "scheduledTime": "2026-10-30T11:59:00.5Z",
            "scheduledById": "trigger:manual-1", "startedAt": "2026-10-30T11:59:01Z",
            "finishedAt": null, "attempts": 1, "progress": "40%", "error": null, "result": null,
            "arguments": {"region": "emea"}, "parentJob": null, "parentJobExecution": null
        }),
        json!({
            "executionId": "nightly-export~20261030T053000Z", "jobId": "nightly-export",
            "executeNumber": 2, "state": "Succeeded", "scheduledTime": "2026-10-30T05:30:00Z",
            "scheduledById": "schedule", "startedAt": "2026-10-30T05:30:00.412Z",
            "finishedAt": "2026-10-30T05:30:02.9Z", "attempts": 1, "progress": null,
            "error": null, "result": {"rows": 1200}, "arguments": null
        }),
        json!({
            "executionId": "nightly-export~20261029T053000Z", "jobId": "nightly-export",
            "executeNumber": 1, "state": "Terminated", "scheduledTime": "2026-10-29T05:30:00Z",
            "scheduledById": "schedule", "startedAt": "2026-10-29T05:30:00.1Z",
            "finishedAt": "2026-10-29T05:32:10Z", "attempts": 3, "error": "503",
            "result": null, "arguments": null
        }),
    ]
}

#[test]
fn execution_list_in_the_jobs_zone() {
    assert_snapshot!(execution_list(
        &executions(),
        chrono_tz::America::New_York,
        now(),
        plain()
    ));
}

#[test]
fn execution_with_its_events() {
    let mut run = executions()[2].clone();
    run["events"] = json!([
        {"at": "2026-10-29T05:30:00Z", "from": null, "to": "Enqueued", "message": "created by schedule"},
        {"at": "2026-10-29T05:31:00Z", "from": "Processing", "to": "Failed",
         "message": "https://exports.example.com/run?n=1: HTTP 503; retry 2 in 2s"},
        {"at": "2026-10-29T05:31:02Z", "from": "Failed", "to": "Processing", "message": "attempt 3"},
        {"at": "2026-10-29T05:32:10Z", "from": "Processing", "to": "Terminated",
         "message": "https://exports.example.com/run?n=1: HTTP 503; retries exhausted"}
    ]);
    run["droppedEvents"] = json!(2);
    assert_snapshot!(execution(
        &run,
        chrono_tz::America::New_York,
        now(),
        plain()
    ));
}

#[test]
fn watch_lines() {
    let zone = chrono_tz::America::New_York;
    let events = [
        json!({"at": "2026-10-30T11:59:00.5Z", "from": null, "to": "Enqueued", "message": "created by trigger:manual-1"}),
        json!({"at": "2026-10-30T11:59:01Z", "from": "Enqueued", "to": "Processing", "message": "started"}),
        json!({"at": "2026-10-30T11:59:03Z", "from": "Processing", "to": "Processing", "message": "progress 40%"}),
        json!({"at": "2026-10-30T11:59:04Z", "from": "Processing", "to": "Succeeded", "message": "HTTP 200"}),
    ];
    let lines: Vec<String> = events
        .iter()
        .map(|e| event_line(e, zone, plain()))
        .collect();
    assert_snapshot!(lines.join("\n"));
    // In colour, the new state is coloured and nothing else changes.
    let coloured = event_line(&events[3], zone, Style { color: true });
    assert_eq!(
        coloured,
        "2026-10-30 07:59:04 EDT  Processing → \u{1b}[32mSucceeded\u{1b}[0m  HTTP 200"
    );
}

#[test]
fn stats_health_and_timers() {
    let stats_answer = json!({"jobs": {"active": 3, "paused": 1},
        "executions": {"Cancelled": 1, "Enqueued": 4}, "debugMode": true});
    let health_answer = json!({"status": "ok", "engine": {"lastTick": "2026-10-30T11:59:58.001Z",
        "lastDispatch": "2026-10-30T11:59:59.312Z", "tickLateAfterSeconds": 10}});
    let sync = json!({"created": ["billing-nightly", "billing-reminders"], "removed": [],
        "resp_code": 200, "resp_msg": null, "unchanged": [], "updated": ["billing-old"],
        "changedFields": {"billing-old": ["timeoutSeconds", "timer"]}});
    assert_snapshot!(format!(
        "{}\n{}\n{}\n{}\n{}",
        stats(&stats_answer, plain()),
        stats(
            &json!({"jobs": {}, "executions": {}, "debugMode": true, "debugModeSetting": "triggers"}),
            plain()
        ),
        health(&health_answer, now(), plain()),
        health(&json!({"status": "ok"}), now(), plain()),
        timers_sync("billing", &sync, plain())
    ));
}

#[test]
fn schedule_summaries() {
    for (job, summary) in [
        (json!({}), "once, at creation"),
        (json!({"timer": {}}), "once, at creation"),
        (
            json!({"timer": {"dueTime": "2024-10-01 09:00:01"}}),
            "once, at 2024-10-01 09:00:01",
        ),
        (
            json!({"timer": {"period": "R4/PT3S", "dueTime": "10s"}}),
            "every R4/PT3S from 10s",
        ),
        (
            json!({"timer": {"period": "0 0/5 * * * ?", "ttl": "1d"}}),
            "cron 0 0/5 * * * ?, for 1d",
        ),
        (
            json!({"schedule": {"intervals": ["6h/5h", {"every": "1d"}], "calendars": [{"hour": "9"}]}}),
            "1 calendar every 6h/5h | 1d",
        ),
    ] {
        assert_eq!(schedule_summary(&job), summary, "{job}");
    }
}

#[test]
fn backfill_and_update_previews() {
    let backfill = json!({"resp_code": 200, "resp_msg": null, "count": 3, "dryRun": true, "times": [
        "2026-10-29T06:00:00+00:00", "2026-10-28T06:00:00+00:00", "2026-10-27T06:00:00+00:00"
    ]});
    let none = json!({"resp_code": 200, "resp_msg": null, "count": 0, "dryRun": true, "times": []});
    let update = json!({
        "resp_code": 200, "resp_msg": null, "dryRun": true,
        "nextFireTimes": {
            "before": ["2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00"],
            "after": ["2026-10-31T07:30:00+01:00"]
        },
        "affectedRuns": [
            {"executionId": "nightly-export~20261030T053000Z", "place": "waiting", "state": "Scheduled",
             "scheduledTime": "2026-10-30T05:30:00Z",
             "changes": ["overlap: BufferOne → Skip", "schedule: 2026-10-30T05:30:00+00:00 is not a fire time of the new schedule; the run still runs"]},
            {"executionId": "nightly-export~20261031T053000Z", "place": "planned", "state": null,
             "scheduledTime": "2026-10-31T05:30:00Z", "changes": ["timeoutSeconds: changed; the run uses the new value"]}
        ]
    });
    let nothing = json!({"resp_code": 200, "resp_msg": null, "dryRun": true,
        "nextFireTimes": {"before": [], "after": []}, "affectedRuns": []});
    assert_snapshot!(format!(
        "{}\n{}\n{}\n{}",
        backfill_preview("nightly-export", &backfill, plain()),
        backfill_preview("nightly-export", &none, plain()),
        update_preview("nightly-export", &update, plain()),
        update_preview("nightly-export", &nothing, plain()),
    ));
}

#[test]
fn occurrences_with_a_pause_a_dst_gap_and_ranges() {
    let answer = json!({
        "jobId": "ny-nightly", "from": "2027-03-12T00:00:00Z", "to": "2027-03-16T00:00:00Z",
        "count": 3,
        "occurrences": [
            {"time": "2027-03-12T07:30:00Z", "status": "ran",
             "executionId": "ny-nightly~20270312T073000Z", "state": "Succeeded"},
            {"time": "2027-03-13T07:30:00Z", "status": "paused", "notes": "warehouse move",
             "pausedAt": "2027-03-12T18:04:11.5Z"},
            {"time": "2027-03-14T07:00:00Z", "status": "dstGap", "wallTime": "2027-03-14T02:30:00",
             "count": 1, "policy": "skip"},
            {"time": "2027-03-14T07:00:00Z", "status": "dstGap", "wallTime": "2027-03-14T02:00:00",
             "count": 4, "policy": "transition", "movedTo": "2027-03-14T07:00:00Z"},
            {"time": "2027-03-15T06:30:00Z", "status": "missed"}
        ],
        "ranges": [{"kind": "missed", "from": "2027-03-15T06:30:00Z", "to": "2027-03-15T06:30:00Z", "count": 1}]
    });
    assert_snapshot!(occurrences(&answer, plain()));
}

/// Issue 26 item 9: `sundial settings debug-mode` and the debug mode in `sundial health`.
#[test]
fn debug_mode_and_health() {
    let answer = json!({"mode": "both", "source": "stored", "history": [
        {"at": "2026-11-27T19:40:00.000Z", "by": "alice", "from": "off", "to": "both", "reason": "load test"}]});
    let shown = debug_mode(&answer, plain());
    assert!(
        shown.starts_with(
            "Debug mode: both\nScheduled fires and runs triggered by programs do not run"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("alice") && shown.contains("load test"),
        "{shown}"
    );
    let startup = debug_mode(
        &json!({"mode": "off", "source": "startup", "history": []}),
        plain(),
    );
    assert_eq!(
        startup,
        "Debug mode: off (the start-up value; never switched)\nEvery run runs.\n"
    );
    let health_answer = json!({"status": "ok", "debugMode": "schedules"});
    assert!(health(&health_answer, now(), plain()).contains("Debug mode  schedules"));
}
