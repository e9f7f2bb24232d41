use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::duration::Duration;
use crate::template::Part;

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

/// Seed 002's "timer 列表" example job, without its `"timer": [...]` wrapper.
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

#[test]
fn job_ids() {
    for good in ["a", "20220125", "job_1.v2-x", &"x".repeat(128)] {
        assert_eq!(JobId::parse(good).unwrap().as_str(), good);
    }
    for bad in ["", "a~b", "a/b", "a b", "é", &"x".repeat(129)] {
        let e = JobId::parse(bad).unwrap_err();
        assert_eq!(e.path, "jobId", "{bad:?}");
        assert!(e.message.contains("expected 1-128 characters"), "{e}");
    }
    let job = id("job-1");
    assert_eq!(job.to_string(), "job-1");
    assert_eq!(serde_json::to_value(&job).unwrap(), json!("job-1"));
    assert_eq!(
        serde_json::from_value::<JobId>(json!("job-1")).unwrap(),
        job
    );
    assert!(serde_json::from_value::<JobId>(json!("a~b")).is_err());
    assert!(serde_json::from_value::<JobId>(json!(5)).is_err());
}

#[test]
fn every_default() {
    let def = parse(&minimal()).unwrap();
    assert_eq!(def.job_id().as_str(), "job-1");
    assert_eq!(def.job_name(), "job");
    assert_eq!(def.job_description(), None);
    assert_eq!(def.creator(), "001");
    assert_eq!(def.creator_name(), "client");
    assert!(def.notifications().is_empty());
    assert!(def.active());
    // No timer and no schedule: seed 002's one_time, one run at creation.
    let schedule = def.schedule().unwrap();
    assert_eq!(
        schedule.preview(created() - chrono::Duration::seconds(1), 5),
        vec![created()]
    );
    let steps = def.requests();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].http.method, HttpMethod::Get);
    assert_eq!(steps[0].http.url.as_str(), "http://example.com/run");
    assert!(steps[0].http.headers.is_empty());
    assert_eq!(steps[0].http.body, None);
    assert_eq!(steps[0].resp_env_name, None);
    assert_eq!(steps[0].service_name, None);
    assert_eq!(def.target(), None);
    assert!(!def.is_async());
    assert_eq!(def.check_url(), None);
    assert_eq!(def.check_rate_seconds(), 1);
    assert_eq!(def.timeout_seconds(), 60);
    assert!(def.retry_rules().is_empty());
    assert_eq!(def.max_retries(), 5);
    assert_eq!(def.qos(), Qos::Normal);
    assert_eq!(def.parent_job(), None);
    assert_eq!(def.parent_job_execution(), None);
    assert_eq!(def.overlap(), OverlapPolicy::Skip);
    assert_eq!(def.max_concurrency(), Some(1));
    assert_eq!(def.catchup_window(), Duration::from_secs(60));
    assert!(!def.pause_on_failure());
    assert_eq!(def.remaining_actions(), None);
    assert_eq!(def.retry_policy(), None);
    assert_eq!(def.timeouts(), &Timeouts::default());
    assert_eq!(def.parent_close_policy(), ParentClosePolicy::Abandon);
    assert_eq!(def.created_at(), created());
    assert_eq!(def.as_written(), &minimal());
}

#[test]
fn nested_defaults() {
    let def = parse(&with(json!({
        "notification": [{"url": "http://n.example/x"}],
        "retry": [{"errorEquals": "500"}],
        "retryPolicy": {},
        "timeouts": {},
        "checkUrl": {"url": "service:/check"},
    })))
    .unwrap();
    let rule = &def.notifications()[0];
    assert_eq!(rule.state_equals, None);
    assert_eq!(rule.http.method, HttpMethod::Post);
    assert_eq!(rule.http.body, None);
    let retry = &def.retry_rules()[0];
    assert_eq!(
        retry,
        &RetryRule {
            error_equals: "500".into(),
            interval_seconds: 1,
            max_attempts: 2,
            backoff_rate: 2.0
        }
    );
    let policy = def.retry_policy().unwrap();
    assert_eq!(
        policy,
        &RetryPolicy {
            initial_interval: Duration::from_secs(1),
            backoff_coefficient: 2.0,
            maximum_interval: Duration::from_secs(100),
            maximum_attempts: 0,
            non_retryable_errors: vec![]
        }
    );
    assert_eq!(def.timeouts(), &Timeouts::default());
    assert_eq!(def.check_url().unwrap().method, HttpMethod::Get);

    let policy = parse(&with(json!({"retryPolicy": {"initialInterval": "250ms"}})))
        .unwrap()
        .retry_policy()
        .cloned()
        .unwrap();
    assert_eq!(policy.maximum_interval, Duration::from_millis(25_000));
}

#[test]
fn explicit_values() {
    let def = parse(&with(json!({
        "jobId": "job-1",
        "jobDescription": "d",
        "active": 0,
        "async": true,
        "checkUrl": "https://check.example/${jobId}",
        "checkRateSeconds": 3600,
        "timeoutSeconds": 86400.0,
        "maxRetries": 0,
        "qos": 1,
        "parentJob": "parent",
        "parentJobExecution": 7,
        "overlap": "BufferAll",
        "maxConcurrency": 3,
        "catchupWindow": "10s",
        "pauseOnFailure": true,
        "remainingActions": 0,
        "retryPolicy": {
            "initialInterval": "PT2S", "backoffCoefficient": 1, "maximumInterval": "1m",
            "maximumAttempts": 10, "nonRetryableErrors": ["404", 400, "bad"]
        },
        "timeouts": {"scheduleToStart": "1m", "scheduleToClose": "1h", "heartbeat": "30s"},
        "parentClosePolicy": "TERMINATE",
        "notification": [{"stateEquals": "500", "url": "http://n/x", "method": "get"}],
        "retry": [{"errorEquals": 502, "intervalSeconds": 0, "maxAttempts": 0, "backoffRate": 1}],
    })))
    .unwrap();
    assert_eq!(def.job_description(), Some("d"));
    assert!(!def.active());
    assert!(def.is_async());
    assert_eq!(
        def.check_url().unwrap().url.as_str(),
        "https://check.example/${jobId}"
    );
    assert_eq!(def.check_rate_seconds(), 3600);
    assert_eq!(def.timeout_seconds(), 86400);
    assert_eq!(def.max_retries(), 0);
    assert_eq!(def.qos(), Qos::Reliable);
    assert_eq!(def.parent_job(), Some(&id("parent")));
    assert_eq!(def.parent_job_execution(), Some(7));
    assert_eq!(def.overlap(), OverlapPolicy::BufferAll);
    assert_eq!(def.max_concurrency(), Some(3));
    assert_eq!(def.catchup_window(), Duration::from_secs(10));
    assert!(def.pause_on_failure());
    assert_eq!(def.remaining_actions(), Some(0));
    let policy = def.retry_policy().unwrap();
    assert_eq!(policy.initial_interval, Duration::from_secs(2));
    assert_eq!(policy.backoff_coefficient, 1.0);
    assert_eq!(policy.maximum_interval, Duration::from_secs(60));
    assert_eq!(policy.maximum_attempts, 10);
    assert_eq!(policy.non_retryable_errors, vec!["404", "400", "bad"]);
    assert_eq!(
        def.timeouts(),
        &Timeouts {
            schedule_to_start: Some(Duration::from_secs(60)),
            schedule_to_close: Some(Duration::from_secs(3600)),
            heartbeat: Some(Duration::from_secs(30)),
        }
    );
    assert_eq!(def.parent_close_policy(), ParentClosePolicy::Terminate);
    assert_eq!(def.notifications()[0].state_equals.as_deref(), Some("500"));
    assert_eq!(def.notifications()[0].http.method, HttpMethod::Get);
    assert_eq!(def.retry_rules()[0].error_equals, "502");
    assert_eq!(def.retry_rules()[0].interval_seconds, 0);
    assert_eq!(def.retry_rules()[0].max_attempts, 0);
    assert_eq!(def.retry_rules()[0].backoff_rate, 1.0);
}

#[test]
fn active_accepts_numbers_and_booleans() {
    for (value, expected) in [
        (json!(1), true),
        (json!(0), false),
        (json!(true), true),
        (json!(false), false),
        (Value::Null, true),
    ] {
        assert_eq!(
            parse(&with(json!({ "active": value }))).unwrap().active(),
            expected
        );
    }
}

#[test]
fn allow_all_concurrency_is_unbounded_by_default() {
    let def = parse(&with(json!({"overlap": "AllowAll"}))).unwrap();
    assert_eq!(def.overlap(), OverlapPolicy::AllowAll);
    assert_eq!(def.max_concurrency(), None);
    let def = parse(&with(json!({"overlap": "AllowAll", "maxConcurrency": 4}))).unwrap();
    assert_eq!(def.max_concurrency(), Some(4));
    for policy in OverlapPolicy::ALL {
        let def = parse(&with(json!({"overlap": policy.name()}))).unwrap();
        assert_eq!(def.overlap(), policy);
        assert_eq!(serde_json::to_value(policy).unwrap(), json!(policy.name()));
    }
    assert_eq!(
        parse(&with(json!({"overlap": "cancelother"})))
            .unwrap()
            .overlap(),
        OverlapPolicy::CancelOther
    );
}

#[test]
fn when_from_timer_and_schedule() {
    let external = parse(&with(
        json!({"timer": {"dueTime": "0s", "period": "external"}}),
    ))
    .unwrap();
    assert_eq!(external.when(), &When::TriggeredOnly);
    assert_eq!(external.schedule(), None);

    let as_text = parse(&with(
        json!({"timer": "{\"dueTime\": \"10s\", \"period\": \"R4/PT3S\"}"}),
    ))
    .unwrap();
    let times = as_text.schedule().unwrap().preview(created(), 10);
    assert_eq!(times.len(), 4);
    assert_eq!(times[0], at("2023-09-30T00:00:10Z"));
    assert_eq!(
        as_text.as_written()["timer"],
        json!("{\"dueTime\": \"10s\", \"period\": \"R4/PT3S\"}"),
        "kept as written"
    );

    let empty_text = parse(&with(json!({"timer": ""}))).unwrap();
    assert_eq!(
        empty_text
            .schedule()
            .unwrap()
            .preview(created() - chrono::Duration::seconds(1), 3),
        vec![created()]
    );

    let schedule = parse(&with(json!({"schedule": {"cron": ["0 12 * * *"]}}))).unwrap();
    assert_eq!(
        schedule.schedule().unwrap().next_after(created()),
        Some(at("2023-09-30T12:00:00Z"))
    );
}

#[test]
fn targets() {
    let sqs = parse(&json!({
        "jobName": "j", "creator": "c", "creatorName": "n",
        "target": {"sqs": {"queueUrl": "https://sqs.us-east-1.amazonaws.com/1/q"}}
    }))
    .unwrap();
    assert_eq!(
        sqs.target(),
        Some(&Target::Sqs {
            queue_url: "https://sqs.us-east-1.amazonaws.com/1/q".into()
        })
    );
    assert!(sqs.requests().is_empty());
    let bus = parse(&json!({
        "jobName": "j", "creator": "c", "creatorName": "n",
        "target": {"eventbridge": {"source": "my.app", "detailType": "Tick"}}
    }))
    .unwrap();
    assert_eq!(
        bus.action(),
        &Action::Target(Target::EventBridge {
            bus_name: "default".into(),
            source: "my.app".into(),
            detail_type: "Tick".into()
        })
    );
}

#[test]
fn templates_are_parsed_everywhere() {
    let def = parse(&with(json!({
        "request": [{
            "method": "post",
            "url": "service://main/request1?aaa=${$.aaa}&callback=${schedulingFeedbackUrl}",
            "body": {"data": "${ENV_VALUE}|json", "n": [1, "${x}"]},
            "headers": {"Cookie": "c=${token}"},
            "respEnvName": "ENV_VALUE",
            "serviceName": "entry"
        }]
    })))
    .unwrap();
    let step = &def.requests()[0];
    assert_eq!(step.http.method, HttpMethod::Post);
    assert_eq!(
        step.http.url.placeholders().collect::<Vec<_>>(),
        vec![("$.aaa", false), ("schedulingFeedbackUrl", false)]
    );
    assert_eq!(
        step.http.headers["Cookie"].parts(),
        &[
            Part::Literal("c=".into()),
            Part::Placeholder {
                expr: "token".into(),
                json: false
            }
        ]
    );
    assert_eq!(step.resp_env_name.as_deref(), Some("ENV_VALUE"));
    assert_eq!(step.service_name.as_deref(), Some("entry"));
}

#[test]
fn url_forms() {
    for good in [
        "http://a",
        "HTTPS://a.example/x?y=${z}",
        "http://${host}/x",
        "service://oa/main/api",
        "service://main",
        "service:/main/api",
    ] {
        assert!(
            parse(&with(json!({"request": [{"url": good}]}))).is_ok(),
            "{good}"
        );
    }
    for bad in [
        "ftp://a",
        "a.example/x",
        "${base}/x",
        "http://",
        "http:///x",
        "service://",
        "service:/",
        "service:main",
        "http://a b",
        "http://a/\tb",
    ] {
        let e = parse(&with(json!({"request": [{"url": bad}]}))).unwrap_err();
        assert_eq!(e.path, "request[0].url", "{bad}");
    }
}

#[test]
fn rejections_name_their_path() {
    let long = |n: usize| "x".repeat(n);
    let big_body = json!({"a": long(40 * 1024), "b": long(40 * 1024)});
    let cases: Vec<(Value, &str, &str)> = vec![
        (without("jobName"), "jobName", "is required"),
        (with(json!({"jobName": ""})), "jobName", "must not be empty"),
        (
            with(json!({"jobName": "  "})),
            "jobName",
            "must not be empty",
        ),
        (
            with(json!({"jobName": long(257)})),
            "jobName",
            "257 bytes long",
        ),
        (
            with(json!({"jobName": 5})),
            "jobName",
            "expected a string, got 5",
        ),
        (without("creator"), "creator", "is required"),
        (
            with(json!({"creator": long(257)})),
            "creator",
            "limit is 256",
        ),
        (without("creatorName"), "creatorName", "is required"),
        (
            with(json!({"jobDescription": long(8193)})),
            "jobDescription",
            "limit is 8192",
        ),
        (
            with(json!({"jobId": "other"})),
            "jobId",
            "the body says \"other\"",
        ),
        (with(json!({"jobId": 5})), "jobId", "the body says 5"),
        (
            with(json!({"jobname": "x"})),
            "jobname",
            "did you mean \"jobName\"",
        ),
        (
            with(json!({"timeoutSecond": 5})),
            "timeoutSecond",
            "did you mean \"timeoutSeconds\"",
        ),
        (
            with(json!({"frobnicate": 1})),
            "frobnicate",
            "unknown field \"frobnicate\"",
        ),
        (
            with(json!({"notification": {}})),
            "notification",
            "expected an array",
        ),
        (
            with(json!({"notification": [{"method": "POST"}]})),
            "notification[0].url",
            "is required",
        ),
        (
            with(json!({"notification": [{"url": "x"}]})),
            "notification[0].url",
            "got \"x\"",
        ),
        (
            with(json!({"notification": [{"url": "http://a", "stateEquals": true}]})),
            "notification[0].stateEquals",
            "expected a string",
        ),
        (
            with(json!({"notification": [{"url": "http://a", "body": "${a}|json${b}|json"}]})),
            "notification[0].body",
            "second \"|json\"",
        ),
        (
            with(json!({"notification": [{"url": "http://a", "when": 1}]})),
            "notification[0].when",
            "unknown field",
        ),
        (with(json!({"active": 2})), "active", "got 2"),
        (with(json!({"active": "1"})), "active", "got \"1\""),
        (
            with(json!({"timer": {"period": "5x"}})),
            "timer.period",
            "5x",
        ),
        (
            with(json!({"timer": {"dueTime": "tomorrow", "period": "5m"}})),
            "timer.dueTime",
            "tomorrow",
        ),
        (with(json!({"timer": "{bad"})), "timer", "timer object"),
        (with(json!({"timer": 5})), "timer", "expected an object"),
        (
            with(json!({"timer": {}, "schedule": {"cron": ["* * * * *"]}})),
            "schedule",
            "not both",
        ),
        (
            with(json!({"schedule": {"cron": ["61 * * * *"]}})),
            "schedule.cron[0]",
            "",
        ),
        (with(json!({"schedule": "daily"})), "schedule", ""),
        (without("request"), "request", "is required"),
        (with(json!({"request": []})), "request", "at least one"),
        (
            with(json!({"request": "http://a"})),
            "request",
            "expected an array",
        ),
        (
            with(json!({"request": vec![json!({"url": "http://a"}); 21]})),
            "request",
            "limit is 20",
        ),
        (
            with(json!({"request": [5]})),
            "request[0]",
            "expected an object, got 5",
        ),
        (
            with(json!({"request": [{"method": "GET"}]})),
            "request[0].url",
            "is required",
        ),
        (
            with(json!({"request": [{"url": "http://a"}, {"url": "ftp://b"}]})),
            "request[1].url",
            "\"ftp://b\"",
        ),
        (
            with(json!({"request": [{"url": "http://a/${x"}]})),
            "request[0].url",
            "unclosed",
        ),
        (
            with(json!({"request": [{"url": "http://a", "method": "FETCH"}]})),
            "request[0].method",
            "\"FETCH\"",
        ),
        (
            with(json!({"request": [{"url": "http://a", "body": {"data": "${}"}}]})),
            "request[0].body.data",
            "empty placeholder",
        ),
        (
            with(json!({"request": [{"url": "http://a", "body": {"a": [{"b": "${x"}]}}]})),
            "request[0].body.a[0].b",
            "unclosed",
        ),
        (
            with(json!({"request": [{"url": "http://a", "body": {"a b": "${"}}]})),
            "request[0].body[\"a b\"]",
            "unclosed",
        ),
        (
            with(json!({"request": [{"url": "http://a", "body": big_body}]})),
            "request[0].body",
            "limit is 65536",
        ),
        (
            with(json!({"request": [{"url": "http://a", "headers": {"Bad Name": "x"}}]})),
            "request[0].headers[\"Bad Name\"]",
            "not a valid header name",
        ),
        (
            with(json!({"request": [{"url": "http://a", "headers": {"X-N": 1}}]})),
            "request[0].headers.X-N",
            "expected a string, got 1",
        ),
        (
            with(json!({"request": [{"url": "http://a", "headers": {"X": "a\r\nY: b"}}]})),
            "request[0].headers.X",
            "line breaks",
        ),
        (
            with(json!({"request": [{"url": "http://a", "headers": {"X": "${"}}]})),
            "request[0].headers.X",
            "unclosed",
        ),
        (
            // The second spelling, in document order, is the one named.
            with(json!({"request": [{"url": "http://a", "headers": {"a": "1", "A": "2"}}]})),
            "request[0].headers.A",
            "twice",
        ),
        (
            with(json!({"request": [{"url": "http://a", "headers": []}]})),
            "request[0].headers",
            "expected an object",
        ),
        (
            with(json!({"request": [{"url": "http://a", "respEnvName": "1abc"}]})),
            "request[0].respEnvName",
            "\"1abc\"",
        ),
        (
            with(json!({"request": [{"url": "http://a", "serviceName": "a/b"}]})),
            "request[0].serviceName",
            "\"a/b\"",
        ),
        (
            with(json!({"request": [{"url": "http://a", "extra": 1}]})),
            "request[0].extra",
            "unknown field",
        ),
        (
            with(json!({"target": {"sqs": {"queueUrl": "https://q"}}})),
            "target",
            "not both",
        ),
        (
            json!({"jobName": "j", "creator": "c", "creatorName": "n", "target": {}}),
            "target",
            "expected {\"sqs\"",
        ),
        (
            json!({"jobName": "j", "creator": "c", "creatorName": "n", "target": {"sqs": {}}}),
            "target.sqs.queueUrl",
            "is required",
        ),
        (
            json!({"jobName": "j", "creator": "c", "creatorName": "n", "target": {"sqs": {"queueUrl": "ftp://q"}}}),
            "target.sqs.queueUrl",
            "\"ftp://q\"",
        ),
        (
            json!({"jobName": "j", "creator": "c", "creatorName": "n", "target": {"sqs": {"queueUrl": "https://q"}, "eventbridge": {}}}),
            "target",
            "exactly one",
        ),
        (
            json!({"jobName": "j", "creator": "c", "creatorName": "n", "target": {"eventbridge": {"busName": "b", "detailType": "t"}}}),
            "target.eventbridge.source",
            "is required",
        ),
        (
            json!({"jobName": "j", "creator": "c", "creatorName": "n", "target": {"kafka": {}}}),
            "target.kafka",
            "unknown field",
        ),
        (
            with(json!({"async": "yes"})),
            "async",
            "expected true or false, got \"yes\"",
        ),
        (
            with(json!({"checkUrl": {"method": "POST", "url": "http://a"}})),
            "checkUrl.method",
            "only supports GET",
        ),
        (
            with(json!({"checkUrl": {"url": "x"}})),
            "checkUrl.url",
            "got \"x\"",
        ),
        (with(json!({"checkUrl": "x"})), "checkUrl", "got \"x\""),
        (
            with(json!({"checkUrl": {"url": "http://a", "body": {}}})),
            "checkUrl.body",
            "unknown field",
        ),
        (
            with(json!({"checkRateSeconds": 0})),
            "checkRateSeconds",
            "from 1 to 3600, got 0",
        ),
        (
            with(json!({"checkRateSeconds": 3601})),
            "checkRateSeconds",
            "got 3601",
        ),
        (
            with(json!({"timeoutSeconds": 0})),
            "timeoutSeconds",
            "from 1 to 86400",
        ),
        (
            with(json!({"timeoutSeconds": 86401})),
            "timeoutSeconds",
            "got 86401",
        ),
        (
            with(json!({"timeoutSeconds": -1})),
            "timeoutSeconds",
            "got -1",
        ),
        (
            with(json!({"timeoutSeconds": 1.5})),
            "timeoutSeconds",
            "got 1.5",
        ),
        (
            with(json!({"timeoutSeconds": "60"})),
            "timeoutSeconds",
            "got \"60\"",
        ),
        (with(json!({"retry": {}})), "retry", "expected an array"),
        (
            with(json!({"retry": [{}]})),
            "retry[0].errorEquals",
            "is required",
        ),
        (
            with(json!({"retry": [{"errorEquals": ""}]})),
            "retry[0].errorEquals",
            "is required",
        ),
        (
            with(
                json!({"retry": [{"errorEquals": "500"}, {"errorEquals": "500", "backoffRate": 0.5}]}),
            ),
            "retry[1].backoffRate",
            "got 0.5",
        ),
        (
            with(json!({"retry": [{"errorEquals": "500", "maxAttempts": -1}]})),
            "retry[0].maxAttempts",
            "got -1",
        ),
        (
            with(json!({"retry": [{"errorEquals": "500", "intervalSeconds": "2"}]})),
            "retry[0].intervalSeconds",
            "got \"2\"",
        ),
        (
            with(json!({"retry": [{"errorEquals": "500", "errorequals": "x"}]})),
            "retry[0].errorequals",
            "did you mean \"errorEquals\"",
        ),
        (
            with(json!({"maxRetries": 101})),
            "maxRetries",
            "from 0 to 100, got 101",
        ),
        (with(json!({"qos": 2})), "qos", "from 0 to 1, got 2"),
        (with(json!({"parentJob": "a~b"})), "parentJob", "\"a~b\""),
        (
            with(json!({"parentJob": "job-1"})),
            "parentJob",
            "its own parent",
        ),
        (
            with(json!({"parentJobExecution": 3})),
            "parentJobExecution",
            "only allowed with parentJob",
        ),
        (
            with(json!({"parentJob": "p", "parentJobExecution": 0})),
            "parentJobExecution",
            "got 0",
        ),
        (
            with(json!({"overlap": "Sometimes"})),
            "overlap",
            "\"Sometimes\"",
        ),
        (
            with(json!({"maxConcurrency": 0})),
            "maxConcurrency",
            "got 0",
        ),
        (
            with(json!({"catchupWindow": "5s"})),
            "catchupWindow",
            "shorter than the minimum of 10s",
        ),
        (
            with(json!({"catchupWindow": "soon"})),
            "catchupWindow",
            "\"soon\"",
        ),
        (
            with(json!({"catchupWindow": 60})),
            "catchupWindow",
            "expected a string, got 60",
        ),
        (
            with(json!({"pauseOnFailure": 1})),
            "pauseOnFailure",
            "got 1",
        ),
        (
            with(json!({"remainingActions": -1})),
            "remainingActions",
            "got -1",
        ),
        (
            with(json!({"retryPolicy": []})),
            "retryPolicy",
            "expected an object",
        ),
        (
            with(json!({"retryPolicy": {"backoffCoefficient": 0.5}})),
            "retryPolicy.backoffCoefficient",
            "got 0.5",
        ),
        (
            with(json!({"retryPolicy": {"initialInterval": "10s", "maximumInterval": "1s"}})),
            "retryPolicy.maximumInterval",
            "shorter than initialInterval",
        ),
        (
            with(json!({"retryPolicy": {"initialInterval": "0s"}})),
            "retryPolicy.initialInterval",
            "shorter than the minimum",
        ),
        (
            with(json!({"retryPolicy": {"maximumAttempts": -1}})),
            "retryPolicy.maximumAttempts",
            "got -1",
        ),
        (
            with(json!({"retryPolicy": {"nonRetryableErrors": ["ok", ""]}})),
            "retryPolicy.nonRetryableErrors[1]",
            "got \"\"",
        ),
        (
            with(json!({"timeouts": {"heartbeat": "0s"}})),
            "timeouts.heartbeat",
            "shorter than the minimum of 1s",
        ),
        (
            with(json!({"timeouts": {"startToClose": "1m"}})),
            "timeouts.startToClose",
            "unknown field",
        ),
        (
            with(json!({"parentClosePolicy": "kill"})),
            "parentClosePolicy",
            "\"kill\"",
        ),
        (json!([]), "$", "expected an object, got an array"),
        (json!("job"), "$", "expected an object"),
    ];
    for (body, path, message) in cases {
        match parse(&body) {
            Ok(_) => panic!("expected an error at {path}"),
            Err(e) => {
                assert_eq!(e.path, path, "{e}");
                assert!(
                    e.message.contains(message),
                    "{path}: {:?} lacks {message:?}",
                    e.message
                );
            }
        }
    }
}

#[test]
fn size_limits() {
    let deep = (0..40).fold(json!("x"), |v, _| json!([v]));
    let e = parse(&with(
        json!({"request": [{"url": "http://a", "body": deep}]}),
    ))
    .unwrap_err();
    assert!(e.path.starts_with("request[0].body[0]"), "{e}");
    assert!(e.message.contains("nests deeper than 32"), "{e}");

    let body = json!({"blob": "x".repeat(60 * 1024)});
    let requests: Vec<Value> = (0..5)
        .map(|_| json!({"url": "http://a", "body": body}))
        .collect();
    let e = parse(&with(json!({"request": requests}))).unwrap_err();
    assert_eq!(e.path, "$");
    assert!(e.message.contains("limit is 262144"), "{e}");

    let e = parse(&with(
        json!({"request": [{"url": format!("http://a/{}", "x".repeat(9000))}]}),
    ))
    .unwrap_err();
    assert_eq!(e.path, "request[0].url");
    let e = parse(&with(json!({"timer": " ".repeat(9000)}))).unwrap_err();
    assert_eq!(e.path, "timer");
}

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
    };
    assert_eq!(
        serde_json::to_value(&backfill).unwrap(),
        json!({"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-02T00:00:00Z",
               "overlap": "AllowAll", "requestedAt": "2024-01-03T00:00:00Z"})
    );
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
    });
    let doc = job.to_document();
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
    assert_eq!(job.status(), "paused");
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

/// Keys the parser knows at any level, so random objects reach deep into it.
const KEYS: &[&str] = &[
    "jobId",
    "jobName",
    "jobDescription",
    "creator",
    "creatorName",
    "notification",
    "active",
    "timer",
    "request",
    "async",
    "checkUrl",
    "checkRateSeconds",
    "timeoutSeconds",
    "retry",
    "maxRetries",
    "qos",
    "parentJob",
    "parentJobExecution",
    "schedule",
    "overlap",
    "maxConcurrency",
    "catchupWindow",
    "pauseOnFailure",
    "remainingActions",
    "retryPolicy",
    "timeouts",
    "parentClosePolicy",
    "target",
    "method",
    "url",
    "body",
    "headers",
    "respEnvName",
    "serviceName",
    "stateEquals",
    "errorEquals",
    "intervalSeconds",
    "maxAttempts",
    "backoffRate",
    "initialInterval",
    "backoffCoefficient",
    "maximumInterval",
    "maximumAttempts",
    "nonRetryableErrors",
    "scheduleToStart",
    "scheduleToClose",
    "heartbeat",
    "sqs",
    "eventbridge",
    "queueUrl",
    "busName",
    "source",
    "detailType",
    "dueTime",
    "period",
    "ttl",
    "cron",
    "intervals",
    "calendars",
    "every",
    "Content-Type",
    "x",
];

const STRINGS: &[&str] = &[
    "",
    " ",
    "job-1",
    "a~b",
    "1m",
    "5s",
    "0s",
    "R4/PT3S",
    "0 0/5 * * * ?",
    "external",
    "* * * * *",
    "${x}",
    "${",
    "${}",
    "${a}|json${b}|json",
    "http://a/${b}",
    "service:/x",
    "service://s/p",
    "ftp://x",
    "GET",
    "POST",
    "AllowAll",
    "Skip",
    "cancel",
    "500",
    "timeout",
    "{\"period\": \"5m\"}",
    "https://sqs.example/q",
    "é",
    "\u{0}",
];

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        (0i64..5).prop_map(Value::from),
        prop::sample::select(STRINGS).prop_map(|s| Value::String(s.to_string())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS), inner, 0..8).prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #![proptest_config(sundial_testkit::proptest_config(512, concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/job.txt")))]

    #[test]
    fn parse_never_panics_on_arbitrary_json(body in arbitrary_json()) {
        let _ = parse(&body);
    }

    #[test]
    fn whatever_parses_survives_the_store_round_trip(body in plausible_job()) {
        if let Ok(def) = parse(&body) {
            let job = Job::new(def);
            let doc: Value = serde_json::from_str(&job.to_document().to_string()).unwrap();
            let back = Job::from_document(job.job_id(), &doc, job.created_at, job.updated_at);
            prop_assert_eq!(back.ok(), Some(job));
        }
    }

    /// Issue 12 item 10: whatever a read shows, posted back as an update, is the same job, and
    /// shows no sensitive value.
    #[test]
    fn a_read_job_posted_back_is_the_same_job(body in plausible_job()) {
        if let Ok(def) = parse(&body) {
            let mut shown = Job::new(def.clone()).to_api_json();
            for key in ["state", "pausedNotes", "createdAt", "updatedAt"] {
                shown.as_object_mut().unwrap().remove(key);
            }
            prop_assert!(!shown.to_string().contains("Bearer t"));
            let back = JobDefinition::parse_submitted(&id("job-1"), &shown, created(), Some(&def));
            let mut expected = def.as_written().clone();
            expected["jobId"] = json!("job-1");
            expected["active"] = json!(u8::from(def.active()));
            prop_assert_eq!(back.map(|d| d.as_written().clone()), Ok(expected));
        }
    }
}

fn pick(values: Vec<Value>) -> BoxedStrategy<Value> {
    prop::sample::select(values).boxed()
}

/// An object with each of `fields` present or not.
fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    fields
        .into_iter()
        .map(|(key, value)| prop::option::weighted(0.6, value).prop_map(move |v| (key, v)))
        .collect::<Vec<_>>()
        .prop_map(|entries| {
            Value::Object(
                entries
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
                    .collect(),
            )
        })
        .boxed()
}

fn mostly(valid: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![8 => valid, 1 => arbitrary_json()].boxed()
}

fn url() -> BoxedStrategy<Value> {
    pick(vec![
        json!("http://a.example/x"),
        json!("https://a.example/${jobId}?n=${executeNumber}"),
        json!("service://jobswork/main/x?cb=${schedulingFeedbackUrl}"),
        json!("service:/main/api"),
        json!("ftp://x"),
        json!("http://a/${"),
    ])
}

fn headers() -> BoxedStrategy<Value> {
    mostly(pick(vec![
        json!({}),
        json!({"Accept": "application/json", "X-Token": "${token}"}),
        json!({"Authorization": "Bearer t", "X-Mine": "m", "Accept": "***"}),
        json!({"bad name": "x"}),
    ]))
}

fn body() -> BoxedStrategy<Value> {
    prop_oneof![
        pick(vec![
            json!("${schedulingNotifyBody}|json"),
            json!({"data": "${ENV_VALUE}|json", "list": [1, "${x}"]}),
            json!({"a": {"b": [true, null, 1.5]}}),
        ]),
        arbitrary_json(),
    ]
    .boxed()
}

fn strings(values: &[&str]) -> BoxedStrategy<Value> {
    pick(values.iter().map(|s| json!(s)).collect())
}

fn numbers(values: &[f64]) -> BoxedStrategy<Value> {
    pick(values.iter().map(|n| json!(n)).collect())
}

fn ints(values: &[i64]) -> BoxedStrategy<Value> {
    pick(values.iter().map(|n| json!(n)).collect())
}

fn durations() -> BoxedStrategy<Value> {
    strings(&["1s", "10s", "1m", "PT2H", "0s", "5x", "250ms"])
}

/// Jobs whose fields are mostly plausible, so that a good share parse and the round trip is tested.
fn plausible_job() -> BoxedStrategy<Value> {
    let request = object(vec![
        ("method", strings(&["GET", "post", "PUT", "FETCH"])),
        ("url", url()),
        ("body", body()),
        ("headers", headers()),
        ("respEnvName", strings(&["ENV_VALUE", "", "1x"])),
        ("serviceName", strings(&["entry", "a/b"])),
    ]);
    let notification = object(vec![
        ("method", strings(&["GET", "POST"])),
        (
            "stateEquals",
            pick(vec![json!("500"), json!(500), json!("timeout"), json!("")]),
        ),
        ("url", url()),
        ("body", body()),
        ("headers", headers()),
    ]);
    let retry = object(vec![
        (
            "errorEquals",
            pick(vec![json!("500"), json!(502), json!("timeout")]),
        ),
        ("intervalSeconds", ints(&[0, 1, 5, -1])),
        ("maxAttempts", ints(&[0, 2, 100])),
        ("backoffRate", numbers(&[1.0, 1.5, 2.0, 0.5])),
    ]);
    let fields: Vec<(&'static str, BoxedStrategy<Value>)> = vec![
        ("jobId", strings(&["job-1", "other"])),
        ("jobName", mostly(strings(&["job", "名字", ""]))),
        ("jobDescription", strings(&["d", ""])),
        ("creator", mostly(strings(&["001"]))),
        ("creatorName", mostly(strings(&["client"]))),
        (
            "notification",
            mostly(
                prop::collection::vec(notification, 0..3)
                    .prop_map(Value::Array)
                    .boxed(),
            ),
        ),
        (
            "active",
            pick(vec![
                json!(0),
                json!(1),
                json!(true),
                json!(false),
                json!(2),
            ]),
        ),
        (
            "timer",
            mostly(object(vec![
                (
                    "dueTime",
                    strings(&["0s", "10s", "2023-10-01 09:00:01", "", "soon"]),
                ),
                (
                    "period",
                    strings(&["5m", "R4/PT3S", "0 0/5 * * * ?", "external", "0s", ""]),
                ),
                ("ttl", strings(&["5d3s", "1h"])),
            ])),
        ),
        (
            "schedule",
            mostly(pick(vec![
                json!({"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"}),
                json!({"intervals": ["6h/5h"], "jitter": "30s"}),
                json!({"cron": ["61 * * * *"]}),
            ])),
        ),
        (
            "request",
            mostly(
                prop::collection::vec(request, 1..3)
                    .prop_map(Value::Array)
                    .boxed(),
            ),
        ),
        ("async", pick(vec![json!(true), json!(false)])),
        (
            "checkUrl",
            mostly(object(vec![
                ("method", strings(&["GET", "POST"])),
                ("url", url()),
                ("headers", headers()),
            ])),
        ),
        ("checkRateSeconds", ints(&[1, 4, 3600, 0])),
        ("timeoutSeconds", ints(&[1, 15, 86400, 0])),
        (
            "retry",
            mostly(
                prop::collection::vec(retry, 0..3)
                    .prop_map(Value::Array)
                    .boxed(),
            ),
        ),
        ("maxRetries", ints(&[0, 5, 100, 101])),
        ("qos", ints(&[0, 1])),
        ("parentJob", strings(&["parent", "a~b"])),
        ("parentJobExecution", ints(&[1, 7])),
        (
            "overlap",
            strings(&["Skip", "BufferOne", "AllowAll", "allowall", "Never"]),
        ),
        ("maxConcurrency", ints(&[1, 3, 0])),
        ("catchupWindow", durations()),
        ("pauseOnFailure", pick(vec![json!(true), json!(false)])),
        ("remainingActions", ints(&[0, 3])),
        (
            "retryPolicy",
            mostly(object(vec![
                ("initialInterval", durations()),
                ("backoffCoefficient", numbers(&[1.0, 2.0, 0.5])),
                ("maximumInterval", durations()),
                ("maximumAttempts", ints(&[0, 3])),
                (
                    "nonRetryableErrors",
                    pick(vec![json!(["404", 400]), json!([""])]),
                ),
            ])),
        ),
        (
            "timeouts",
            mostly(object(vec![
                ("scheduleToStart", durations()),
                ("scheduleToClose", durations()),
                ("heartbeat", durations()),
            ])),
        ),
        (
            "parentClosePolicy",
            strings(&["abandon", "cancel", "terminate", "kill"]),
        ),
        (
            "target",
            pick(vec![
                json!({"sqs": {"queueUrl": "https://sqs.example/q"}}),
                json!({"eventbridge": {"source": "s", "detailType": "d"}}),
            ]),
        ),
        (
            "sensitiveHeaders",
            pick(vec![json!([]), json!(["X-Mine"]), json!(["x-mine", 1])]),
        ),
    ];
    // Each optional field is present with probability 0.6 in `object`; lower that for the many
    // top-level fields by wrapping them once more, so that typical jobs have a handful of fields.
    let sparse: Vec<(&'static str, BoxedStrategy<Value>)> = fields
        .into_iter()
        .map(|(k, v)| (k, prop_oneof![3 => Just(Value::Null), 1 => v].boxed()))
        .collect();
    (object(sparse), prop::bool::weighted(0.9))
        .prop_map(|(mut body, keep_required)| {
            if let Value::Object(map) = &mut body {
                map.retain(|_, v| !v.is_null());
                if keep_required {
                    for (key, value) in [
                        ("jobName", json!("job")),
                        ("creator", json!("001")),
                        ("creatorName", json!("c")),
                    ] {
                        map.entry(key).or_insert(value);
                    }
                    if !map.contains_key("target") {
                        map.entry("request").or_insert(json!([{"url": "http://a"}]));
                    }
                }
            }
            body
        })
        .boxed()
}

/// Issue 12, items 3 and 8: each definition that was accepted and failed later (or never ran) is
/// refused when it is parsed, with the path of the field at fault.
#[test]
fn bad_definitions_are_refused_at_the_door() {
    let header = |name: &str| json!({"request": [{"url": "http://example.com/run", "headers": {name: "5"}}]});
    let timer = |timer: Value| json!({ "timer": timer });
    let schedule = |schedule: Value| json!({ "schedule": schedule });
    let cases: Vec<(Value, &str, &str)> = vec![
        // Item 3: hop-by-hop, framing and Sundial's own headers, in any case.
        (
            header("Content-Length"),
            "request[0].headers.Content-Length",
            "cannot be set by a job",
        ),
        (
            header("transfer-encoding"),
            "request[0].headers.transfer-encoding",
            "cannot be set",
        ),
        (header("HOST"), "request[0].headers.HOST", "cannot be set"),
        (
            header("Connection"),
            "request[0].headers.Connection",
            "cannot be set",
        ),
        (
            header("Upgrade"),
            "request[0].headers.Upgrade",
            "cannot be set",
        ),
        (
            header("Keep-Alive"),
            "request[0].headers.Keep-Alive",
            "cannot be set",
        ),
        (
            header("Proxy-Authorization"),
            "request[0].headers.Proxy-Authorization",
            "cannot be set",
        ),
        (
            header("proxy-connection"),
            "request[0].headers.proxy-connection",
            "cannot be set",
        ),
        (header("TE"), "request[0].headers.TE", "cannot be set"),
        (
            header("Trailer"),
            "request[0].headers.Trailer",
            "cannot be set",
        ),
        (
            header("Expect"),
            "request[0].headers.Expect",
            "cannot be set",
        ),
        (
            header("idempotency-key"),
            "request[0].headers.idempotency-key",
            "cannot be set",
        ),
        (
            header("Sundial-Signature"),
            "request[0].headers.Sundial-Signature",
            "cannot be set",
        ),
        // Item 10: `sensitiveHeaders` is a list of header names.
        (
            json!({"sensitiveHeaders": "X-My-Key"}),
            "sensitiveHeaders",
            "expected a list of header names",
        ),
        (
            json!({"sensitiveHeaders": ["X-Ok", 5]}),
            "sensitiveHeaders[1]",
            "expected a header name",
        ),
        (
            json!({"sensitiveHeaders": ["bad name"]}),
            "sensitiveHeaders[0]",
            "expected a header name",
        ),
        (
            json!({"sensitiveHeaders": [""]}),
            "sensitiveHeaders[0]",
            "expected a header name",
        ),
        (
            json!({"sensitiveHeaders": vec!["X-A"; 101]}),
            "sensitiveHeaders",
            "the limit is 100",
        ),
        (
            json!({"notification": [{"url": "http://example.com/n", "headers": {"Content-Length": "1"}}]}),
            "notification[0].headers.Content-Length",
            "cannot be set",
        ),
        (
            json!({"async": true, "checkUrl": {"url": "http://example.com/c", "headers": {"Host": "x"}}}),
            "checkUrl.headers.Host",
            "cannot be set",
        ),
        // Item 8: URLs.
        (
            json!({"request": [{"url": "http://example.com:99999/run"}]}),
            "request[0].url",
            "port \"99999\" is not a number from 1 to 65535",
        ),
        (
            json!({"request": [{"url": "https://example.com:0/"}]}),
            "request[0].url",
            "port \"0\"",
        ),
        (
            json!({"request": [{"url": "http://[fe80::1%25eth0]:8080/run"}]}),
            "request[0].url",
            "IPv6 zone ids are not allowed",
        ),
        (
            json!({"notification": [{"url": "http://[fe80::1%eth0]/n"}]}),
            "notification[0].url",
            "zone ids",
        ),
        // Item 8: JSONPath in templates, wherever a template is.
        (
            json!({"request": [{"url": "http://example.com/run", "body": {"s": "${$..s}"}}]}),
            "request[0].body.s",
            "recursive descent",
        ),
        (
            json!({"request": [{"url": "http://example.com/run?x=${$.a[?(@.b)]}"}]}),
            "request[0].url",
            "filters",
        ),
        (
            json!({"request": [{"url": "http://example.com/run", "headers": {"X-A": "${responses[0:1]}"}}]}),
            "request[0].headers.X-A",
            "unsupported selector",
        ),
        // Item 8: zero timer periods that would silently mean "one run now".
        (timer(json!({"period": "0s"})), "timer.period", "is zero"),
        (timer(json!({"period": "PT0S"})), "timer.period", "is zero"),
        (
            timer(json!({"dueTime": "10s", "period": ""})),
            "timer.period",
            "is empty",
        ),
        (
            timer(json!({"dueTime": "10s", "period": "R3/PT0S"})),
            "timer.period",
            "zero period",
        ),
        (
            timer(json!({"dueTime": "10s", "period": "R/0s"})),
            "timer.period",
            "zero period",
        ),
        // Item 8: durations over the 100-year maximum, wherever a duration is.
        (
            schedule(json!({"cron": ["* * * * *"], "jitter": "36501d"})),
            "schedule.jitter",
            "exceeds the maximum of 36500d",
        ),
        (
            schedule(json!({"intervals": ["876001h"]})),
            "schedule.intervals[0]",
            "exceeds the maximum",
        ),
        (
            schedule(json!({"intervals": [{"every": "P36501D"}]})),
            "schedule.intervals[0]",
            "exceeds the maximum",
        ),
        (
            schedule(json!({"dialect": "eventbridge", "cron": ["rate(36501 days)"]})),
            "schedule.cron[0]",
            "exceeds the maximum",
        ),
        (
            timer(json!({"dueTime": "36501d", "period": "1h"})),
            "timer.dueTime",
            "exceeds the maximum",
        ),
        (
            timer(json!({"dueTime": "1s", "period": "R2/36501d"})),
            "timer.period",
            "exceeds the maximum",
        ),
        (
            timer(json!({"ttl": "36501d"})),
            "timer.ttl",
            "exceeds the maximum",
        ),
        (
            json!({"timeouts": {"scheduleToClose": "36501d"}}),
            "timeouts.scheduleToClose",
            "exceeds the maximum",
        ),
        (
            json!({"catchupWindow": "36501d"}),
            "catchupWindow",
            "exceeds the maximum",
        ),
        // Item 8: a calendar range with step 0 (as `*/0` in cron).
        (
            schedule(json!({"calendars": [{"minute": [{"start": 0, "end": 59, "step": 0}]}]})),
            "schedule.calendars[0].minute",
            "step: must be at least 1",
        ),
        // Item 8: years outside the dialect's range, or outside what the engine evaluates.
        (
            schedule(json!({"dialect": "temporal", "cron": ["0 12 * * * 2150"]})),
            "schedule.cron[0]",
            "2150 is out of range 2000-2100",
        ),
        (
            schedule(json!({"dialect": "temporal", "cron": ["0 12 * * * 1999"]})),
            "schedule.cron[0]",
            "1999 is out of range 2000-2100",
        ),
        (
            schedule(json!({"calendars": [{"year": "2150"}]})),
            "schedule.calendars[0].year",
            "2150 is out of range 2000-2100",
        ),
        (
            schedule(json!({"dialect": "quartz", "calendars": [{"year": [{"start": 1999}]}]})),
            "schedule.calendars[0].year",
            "outside 2000-2100",
        ),
        (
            schedule(json!({"cron": ["* * * * *"], "exclude": [{"year": "2101"}]})),
            "schedule.exclude[0].year",
            "out of range 2000-2100",
        ),
        (
            schedule(json!({"cron": ["0 0 12 1 1 * 2101"]})),
            "schedule.cron[0]",
            "selects no year from 2000 to 2100",
        ),
        (
            schedule(json!({"dialect": "quartz", "cron": ["0 0 12 ? * 2 1970-1999"]})),
            "schedule.cron[0]",
            "selects no year",
        ),
        (
            schedule(json!({"dialect": "eventbridge", "cron": ["0 12 * * ? 2101/5"]})),
            "schedule.cron[0]",
            "selects no year",
        ),
        // Item 8: stateEquals is text.
        (
            json!({"notification": [{"url": "http://example.com/n", "stateEquals": 5}]}),
            "notification[0].stateEquals",
            "expected a string, got 5",
        ),
        // Item 8: control characters in names; ids that are `.` or `..`.
        (
            json!({"jobName": "a\u{0}b"}),
            "jobName",
            "control character '\\0'",
        ),
        (
            json!({"creator": "x\u{1b}[31m"}),
            "creator",
            "control character",
        ),
        (
            json!({"creatorName": "line\nbreak"}),
            "creatorName",
            "control character",
        ),
        (
            json!({"jobDescription": "nul \u{0}"}),
            "jobDescription",
            "control character",
        ),
        (
            json!({"parentJob": ".."}),
            "parentJob",
            "other than \".\" and \"..\"",
        ),
        (
            json!({"request": [{"url": "http://example.com/run", "serviceName": ".."}]}),
            "request[0].serviceName",
            "other than",
        ),
    ];
    // Every case is tried and every miss listed, so one run shows the whole table's state.
    let misses: Vec<String> = cases
        .iter()
        .filter_map(|(patch, path, message)| match parse(&with(patch.clone())) {
            Ok(_) => Some(format!("{patch}: accepted; expected an error at {path}")),
            Err(e) if e.path != *path || !e.message.contains(message) => {
                Some(format!("{patch}: {e}; expected {path}: …{message}…"))
            }
            Err(_) => None,
        })
        .collect();
    assert!(
        misses.is_empty(),
        "{} of {} cases missed:\n{}",
        misses.len(),
        cases.len(),
        misses.join("\n")
    );
    for (text, ok) in [
        (".", false),
        ("..", false),
        ("...", true),
        ("a.b", true),
        (".a", true),
    ] {
        assert_eq!(JobId::parse(text).is_ok(), ok, "jobId {text:?}");
        assert_eq!(ServiceName::parse(text).is_ok(), ok, "serviceName {text:?}");
    }
    for text in ["../", "a/b", "", "svc\u{0}"] {
        assert_eq!(
            ServiceName::parse(text).map_err(|e| e.path),
            Err("serviceName".into())
        );
    }
    // What stays valid: a description may have line breaks; seed 002's zero period with a due time
    // is one run then; both timer fields blank is one run now; 36500d is the maximum itself.
    for patch in [
        json!({"jobDescription": "two\nlines\twith a tab"}),
        timer(json!({"dueTime": "2023-10-01 09:00:01", "period": "0s"})),
        timer(json!({"dueTime": "", "period": ""})),
        timer(json!({"dueTime": "36500d", "period": "1h"})),
        json!({"request": [{"url": "http://[::1]:65535/x?y=${$.a[0]}", "headers": {"X-Proxy": "1"}}]}),
        json!({"request": [{"url": "http://${host}:${port}/x"}]}),
        schedule(json!({"dialect": "quartz", "cron": ["0 0 12 ? * 2 1970-2000"]})),
        schedule(json!({"calendars": [{"year": [{"start": 2000, "end": 2100, "step": 5}]}]})),
    ] {
        if let Err(e) = parse(&with(patch.clone())) {
            panic!("{patch} was refused: {e}");
        }
    }
}

/// Issue 12 item 8: a schedule that can never fire is accepted, with a warning naming the field.
#[test]
fn schedules_that_never_fire_are_warned_about() {
    let now = created();
    let warnings = |patch: Value| {
        parse(&with(patch))
            .map(|d| d.warnings(now))
            .unwrap_or_default()
    };
    let w =
        warnings(json!({"timer": {"dueTime": "2150-01-01 00:00:00", "period": "1h", "ttl": "1d"}}));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("timer: it never fires"), "{w:?}");
    let w =
        warnings(json!({"schedule": {"cron": ["* * * * *"], "startTime": "2150-01-01T00:00:00Z"}}));
    assert!(
        w[0].starts_with("schedule: it never fires: it starts at 2150-01-01"),
        "{w:?}"
    );
    let w =
        warnings(json!({"schedule": {"cron": ["* * * * *"], "endTime": "2020-01-01T00:00:00Z"}}));
    assert!(w[0].contains("it ended at 2020-01-01"), "{w:?}");
    let w = warnings(json!({"schedule": {"cron": ["0 0 30 2 *"]}}));
    assert!(
        w[0].starts_with("schedule: it has no fire time after"),
        "{w:?}"
    );
    for fine in [
        json!({}),
        json!({"timer": {"dueTime": "10s", "period": "5m"}}),
        json!({"timer": {"period": "external"}}),
        json!({"schedule": {"cron": ["0 12 * * *"]}}),
    ] {
        assert_eq!(warnings(fine.clone()), Vec::<String>::new(), "{fine}");
    }
}
