//! Property: no JSON body makes a mutation route answer 5xx.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

/// xorshift64*: deterministic, so a failure names a seed that reproduces it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Keys of nested objects (targets, requests, timers, specs, rules); the top-level fields come
/// from core's table of the job document ([`sundial_core::job::document::JOB_FIELDS`]), so a
/// new field is sent here as soon as it exists.
const NESTED_KEYS: &[&str] = &[
    "sqs",
    "queueUrl",
    "eventbridge",
    "url",
    "method",
    "headers",
    "body",
    "stateEquals",
    "dueTime",
    "period",
    "ttl",
    "cron",
    "calendars",
    "intervals",
    "every",
    "offset",
    "exclude",
    "startTime",
    "endTime",
    "jitter",
    "timeZone",
    "dialect",
    "dst",
    "gap",
    "second",
    "minute",
    "hour",
    "dayOfMonth",
    "month",
    "year",
    "dayOfWeek",
    "from",
    "count",
    "notes",
    "errorEquals",
    "backoffRate",
    "initialInterval",
    "",
];

/// Every key the generator picks from: the job document's fields, then the nested ones.
fn all_keys() -> &'static [&'static str] {
    static KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        sundial_core::job::document::field_names()
            .chain(NESTED_KEYS.iter().copied())
            .collect()
    })
}

const STRINGS: &[&str] = &[
    "",
    " ",
    "0 0/5 * * * ?",
    "*/5 * * * *",
    "0 12 * * MON-FRI",
    "@hourly",
    "@every 14h/3h",
    "CRON_TZ=Asia/Kolkata 0 2 * * *",
    "0 0 L * ?",
    "0 0 ? * 6#3",
    "59-0 * * * *",
    "*/0 * * * *",
    "R4/PT3S",
    "R0/PT1S",
    "R999999999/PT1S",
    "PT0S",
    "0s",
    "1s",
    "1d2h0m2s",
    "P1DT1H20M10S",
    "99999999999d",
    "-5s",
    "external",
    "2s",
    "5d3s",
    "2023-10-1 09:00:01",
    "2024-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2100-12-31T23:59:59+14:00",
    "0000-01-01T00:00:00Z",
    "America/New_York",
    "Europe/Nowhere",
    "standard",
    "temporal",
    "quartz",
    "eventbridge",
    "skip",
    "shift",
    "auto",
    "both",
    "Skip",
    "AllowAll",
    "BufferOne",
    "cancel",
    "http://127.0.0.1:9/x",
    "https://127.0.0.1:9/${jobId}?x=${$.a[0]}",
    "service://jobswork/main",
    "service:/x",
    "ftp://x",
    "${",
    "${}",
    "${$.}",
    "|json",
    "GET",
    "post",
    "FETCH",
    "500",
    "timeout",
    "é✓ 陈世超",
    "\u{0}",
    "1,15",
    "11-14",
    "*/5",
    "MON",
    "L",
    "6h/5h",
    "x~y",
    "../..",
];

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth >= 4 { 5 } else { 7 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => match rng.below(8) {
            0 => json!(0),
            1 => json!(-1),
            2 => json!(u64::MAX),
            3 => json!(i64::MIN),
            4 => json!(1.5),
            5 => json!(1e308),
            6 => json!(rng.below(100)),
            _ => json!(rng.next() % 100_000),
        },
        3 | 4 => {
            let mut text = (*rng.pick(STRINGS)).to_owned();
            if rng.below(10) == 0 {
                text = text.repeat(1 + rng.below(300));
            }
            json!(text)
        }
        5 => (0..rng.below(4))
            .map(|_| random_value(rng, depth + 1))
            .collect(),
        _ => Value::Object(
            (0..rng.below(5))
                .map(|_| {
                    (
                        (*rng.pick(all_keys())).to_owned(),
                        random_value(rng, depth + 1),
                    )
                })
                .collect(),
        ),
    }
}

/// A random edit somewhere inside `value`: replace, remove or add a member.
fn mutate(rng: &mut Rng, value: &mut Value, depth: usize) {
    let descend = depth < 4 && rng.below(3) != 0;
    match value {
        Value::Object(obj) if !obj.is_empty() => {
            let keys: Vec<String> = obj.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            if descend {
                mutate(rng, obj.get_mut(&key).unwrap(), depth + 1);
            } else {
                match rng.below(3) {
                    0 => drop(obj.remove(&key)),
                    1 => drop(obj.insert(key, random_value(rng, depth))),
                    _ => drop(
                        obj.insert((*rng.pick(all_keys())).to_owned(), random_value(rng, depth)),
                    ),
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len());
            if descend {
                mutate(rng, &mut items[i], depth + 1);
            } else if rng.below(2) == 0 {
                items.remove(i);
            } else {
                items[i] = random_value(rng, depth);
            }
        }
        other => *other = random_value(rng, depth),
    }
}

/// A valid body edited up to twice, or (one time in four) a random value.
fn body_from(rng: &mut Rng, bases: &[Value]) -> Value {
    if rng.below(4) == 0 {
        return random_value(rng, 0);
    }
    let mut body = rng.pick(bases).clone();
    for _ in 0..rng.below(3) {
        mutate(rng, &mut body, 0);
    }
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn arbitrary_json_never_yields_a_server_error() {
    let api = Api::new();
    api.create("cron-job", &seed_job_as("cron-job")).await;
    api.create("ondemand", &triggered_job("001")).await;

    let mut scheduled = triggered_job("001");
    scheduled.as_object_mut().unwrap().remove("timer");
    scheduled["schedule"] = json!({
        "cron": ["0 12 * * MON-FRI"], "intervals": ["6h/5h"], "jitter": "30s",
        "timeZone": "America/New_York", "startTime": "2024-01-01T00:00:00Z",
        "exclude": [{"month": "12", "dayOfMonth": "25"}]
    });
    let create_bases = [seed_job(), triggered_job("002"), scheduled.clone()];
    let trigger_bases = [
        json!({}),
        json!({"date": "2024-03-10", "list": [1, 2, {"x": null}]}),
    ];
    let backfill_bases = [
        json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z"}),
        json!({"startTime": "2024-03-01T00:00:00Z", "endTime": "2024-03-31T00:00:00Z", "overlap": "BufferAll"}),
        json!({"ranges": [{"startTime": "2024-03-01T00:00:00Z", "endTime": "2024-03-02T00:00:00Z"}, {"startTime": "2024-03-05T00:00:00Z", "endTime": "2024-03-06T00:00:00Z"}], "mode": "failed", "reverse": true, "dryRun": true}),
        json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z", "mode": "missing"}),
    ];
    let preview_bases = [
        json!({"schedule": scheduled["schedule"].clone(), "from": "2024-01-01T00:00:00Z", "count": 20}),
        json!({"timer": seed_job()["timer"].clone(), "count": 5, "jobId": "x"}),
        json!({"timer": {"dueTime": "10s", "period": "R3/PT5S"}, "from": NOW}),
    ];

    let mut rng = Rng(0x5EED_0002_D1A1_2024);
    let mut created = 0;
    for i in 0..300 {
        let seed = rng.0;
        let check = |route: &str, body: &Value, status: StatusCode| {
            assert!(
                !status.is_server_error(),
                "iteration {i} (rng state {seed:#x}): {route} answered {status} for {body}"
            );
        };

        let job_id = format!("fuzz-{i}");
        let mut body = body_from(&mut rng, &create_bases);
        if body.get("jobId").is_some() && rng.below(4) != 0 {
            body["jobId"] = json!(job_id);
        }
        let (status, answer) = api.post(&format!("/jobs/{job_id}"), &body).await;
        check("create", &body, status);
        assert!(
            answer["resp_code"].is_u64(),
            "create answered without an envelope: {answer}"
        );
        if status == StatusCode::OK {
            created += 1;
            // What was accepted must read back.
            for uri in [
                format!("/jobs/{job_id}"),
                format!("/jobs/{job_id}/describe"),
            ] {
                let (status, answer) = api.get(&uri).await;
                assert_eq!(
                    status,
                    StatusCode::OK,
                    "iteration {i}: GET {uri} after creating {body}: {answer}"
                );
            }
            let update = body_from(&mut rng, &create_bases);
            let (status, _) = api.post(&format!("/jobs/{job_id}/update"), &update).await;
            check("update", &update, status);
        }

        let target = *rng.pick(&["cron-job", "ondemand", "ghost"]);
        let body = body_from(&mut rng, &trigger_bases);
        let (status, _) = api.post(&format!("/jobs/{target}/trigger"), &body).await;
        check("trigger", &body, status);

        let body = body_from(&mut rng, &backfill_bases);
        let (status, _) = api.post(&format!("/jobs/{target}/backfill"), &body).await;
        check("backfill", &body, status);

        let body = body_from(&mut rng, &preview_bases);
        let (status, _) = api.post("/specs/preview", &body).await;
        check("preview", &body, status);
    }
    assert!(
        created > 10,
        "the generator should produce some valid jobs, made {created}"
    );
    for uri in [
        "/jobs?limit=1000",
        "/stats",
        "/jobs/cron-job/describe",
        "/jobs/ondemand/executions",
    ] {
        assert_eq!(
            api.get(uri).await.0,
            StatusCode::OK,
            "{uri} after the fuzzing"
        );
    }
}
