//! Parsing a definition: ids, defaults at every level, explicit values, when, targets, templates
//! and URLs; every rejection names the path of the field at fault; the size limits.

use super::*;

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
    // No timer and no schedule: docs/api.md's one_time, one run at creation.
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

/// `catchup` beside the older `catchupWindow`: either gives the window, both may when they agree
/// (as durations: `60s` is `1m`).
#[test]
fn catch_up_policy_and_window() {
    use crate::job::{Catchup, CatchupPolicy};
    let default = parse(&minimal()).unwrap();
    assert_eq!(
        *default.catchup(),
        Catchup {
            policy: CatchupPolicy::All,
            window: Duration::from_secs(60),
            max_runs: None
        }
    );
    let latest = parse(&with(
        json!({"catchup": {"policy": "Latest", "window": "1h"}}),
    ))
    .unwrap();
    assert_eq!(latest.catchup().policy, CatchupPolicy::Latest);
    assert_eq!(latest.catchup_window(), Duration::from_secs(3600));
    assert_eq!(latest.catchup().cap(), Some(1));
    let legacy = parse(&with(
        json!({"catchupWindow": "5m", "catchup": {"policy": "skip"}}),
    ))
    .unwrap();
    assert_eq!(legacy.catchup_window(), Duration::from_secs(300));
    assert_eq!(legacy.catchup().cap(), Some(0));
    let agreeing = parse(&with(
        json!({"catchupWindow": "60s", "catchup": {"window": "1m", "maxRuns": 1000}}),
    ))
    .unwrap();
    assert_eq!(agreeing.catchup().max_runs, Some(1000));
    assert_eq!(agreeing.catchup().cap(), Some(1000));
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
            with(json!({"cancelUrl": {"method": "FETCH", "url": "http://a"}})),
            "cancelUrl.method",
            "expected GET, HEAD, POST",
        ),
        (
            with(json!({"cancelUrl": {"url": "x"}})),
            "cancelUrl.url",
            "got \"x\"",
        ),
        (with(json!({"cancelUrl": "x"})), "cancelUrl", "got \"x\""),
        (with(json!({"cancelUrl": 7})), "cancelUrl", "expected"),
        (
            with(json!({"cancelUrl": {"url": "http://a", "respEnvName": "r"}})),
            "cancelUrl.respEnvName",
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
            with(json!({"catchup": {"policy": "sometimes"}})),
            "catchup.policy",
            "expected skip, latest or all, got \"sometimes\"",
        ),
        (
            with(json!({"catchup": {"window": "5s"}})),
            "catchup.window",
            "shorter than the minimum of 10s",
        ),
        (
            with(json!({"catchup": {"window": "2m"}, "catchupWindow": "1m"})),
            "catchup.window",
            "2m disagrees with catchupWindow 1m",
        ),
        (
            with(json!({"catchup": {"maxRuns": 1001}})),
            "catchup.maxRuns",
            "got 1001",
        ),
        (
            with(json!({"catchup": {"maxRuns": 0}})),
            "catchup.maxRuns",
            "got 0",
        ),
        (
            with(json!({"catchup": {"policy": "latest", "maxRuns": 2}})),
            "catchup.maxRuns",
            "only applies to policy \"all\"",
        ),
        (
            with(json!({"catchup": {"polcy": "skip"}})),
            "catchup.polcy",
            "unknown field",
        ),
        (
            with(json!({"catchup": "latest"})),
            "catchup",
            "expected an object",
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

/// Issue 26 item 6: `cancelUrl`, read as `checkUrl` is; a bare URL is a `POST`, an object may
/// name any method, headers and a body.
#[test]
fn cancel_url_is_a_url_or_a_call_of_any_method() {
    let def = parse(&with(json!({
        "async": true,
        "cancelUrl": "https://jobs.example/cancel/${executionId}",
    })))
    .unwrap();
    let cancel = def.cancel_url().unwrap();
    assert_eq!(cancel.method, HttpMethod::Post);
    assert_eq!(
        cancel.url.as_str(),
        "https://jobs.example/cancel/${executionId}"
    );
    let def = parse(&with(json!({
        "async": true,
        "cancelUrl": {"method": "DELETE", "url": "service:/runs/${executionId}",
                      "headers": {"X-Why": "stopped"}, "body": {"id": "${executionId}"}},
    })))
    .unwrap();
    let cancel = def.cancel_url().unwrap();
    assert_eq!(cancel.method, HttpMethod::Delete);
    assert_eq!(cancel.headers["X-Why"].as_str(), "stopped");
    assert!(cancel.body.is_some());
    assert!(parse(&with(json!({}))).unwrap().cancel_url().is_none());
}
