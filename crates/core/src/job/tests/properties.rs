//! Properties: no JSON makes the parser panic; whatever parses survives the store's round trip;
//! a read job posted back is the same job.

use proptest::prelude::*;

use super::*;

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
    "catchup",
    "policy",
    "window",
    "maxRuns",
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
        (
            "catchup",
            mostly(object(vec![
                (
                    "policy",
                    strings(&["skip", "latest", "all", "All", "never"]),
                ),
                ("window", durations()),
                ("maxRuns", ints(&[1, 3, 1000, 0, 1001])),
            ])),
        ),
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
