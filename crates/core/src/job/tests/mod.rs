//! The job model's tests, one module per area; the helpers and the docs/api.md example they share
//! are here.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::*;
use crate::duration::Duration;
use crate::template::Part;

mod documents;
mod parse;
mod properties;
mod refusals;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn created() -> DateTime<Utc> {
    at("2023-09-30T00:00:00Z")
}

fn id(s: &str) -> JobId {
    JobId::parse(s).unwrap()
}

fn minimal() -> Value {
    json!({
        "jobName": "job",
        "creator": "001",
        "creatorName": "client",
        "request": [{"url": "http://example.com/run"}]
    })
}

fn parse(body: &Value) -> Result<JobDefinition, FieldError> {
    JobDefinition::parse(&id("job-1"), body, created())
}

fn with(patch: Value) -> Value {
    let mut body = minimal();
    if let (Value::Object(map), Value::Object(patch)) = (&mut body, patch) {
        map.extend(patch);
    }
    body
}

fn without(key: &str) -> Value {
    let mut body = minimal();
    if let Value::Object(map) = &mut body {
        map.remove(key);
    }
    body
}

/// docs/api.md's "timer 列表" example job, without its `"timer": [...]` wrapper.
fn seed_002_example() -> Value {
    json!({
        "jobName": "job测试2",
        "request": [{
            "headers": {"name": "chensc"},
            "method": "POST",
            "body": {
                "classSize": 2,
                "teacher": "陈世超",
                "student": [
                    {"number": 1, "name": "${jobId}", "age": 40},
                    {"number": 8, "name": "${jobId}", "age": 30}
                ],
                "describe": "云师大附中..."
            },
            "url": "service://jobswork/main/resultHandleSchool?feedbackUrl=${schedulingFeedbackUrl}"
        }, {
            "headers": {"name": "chensc"},
            "method": "POST",
            "body": {"school": "${$.student}|json"},
            "url": "service://jobswork/main/workHandleStr?feedbackUrl=${schedulingFeedbackUrl}"
        }],
        "creator": "001",
        "creatorName": "service-client",
        "active": 1,
        "async": true,
        "jobId": "20220125",
        "notification": [{
            "headers": {"name": "chensc"},
            "body": "${schedulingNotifyBody}|json",
            "method": "POST",
            "url": "service://jobsclient/main/notifierClient/${schedulingJobId}?executeNumber=${schedulingExecuteNumber}"
        }],
        "timer": {"period": "0 0/5 * * * ?", "dueTime": "2s", "ttl": "5d3s"},
        "qos": 0,
        "timeoutSeconds": 15,
        "jobDescription": "走起...",
        "checkRateSeconds": 4,
        "checkUrl": {
            "headers": {"name": "chensc"},
            "method": "GET",
            "url": "service://jobswork/main/provideCheckUrl/${schedulingJobId}?executeNumber=${schedulingExecuteNumber}"
        },
        "retry": [
            {"maxAttempts": 2, "backoffRate": 1.5, "errorEquals": "500", "intervalSeconds": 2},
            {"maxAttempts": 2, "backoffRate": 2.0, "errorEquals": "timeout", "intervalSeconds": 5},
            {"maxAttempts": 2, "backoffRate": 2.0, "errorEquals": "error1", "intervalSeconds": 3}
        ]
    })
}
