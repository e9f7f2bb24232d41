//! Issue 12, items 3 and 8: definitions that were accepted and failed later are refused when
//! parsed, and schedules that never fire are warned about.

use super::*;

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
    // What stays valid: a description may have line breaks; docs/api.md's zero period with a due time
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

/// Found by schemathesis through the API: counts beyond a signed 64-bit integer (the OpenAPI
/// document's `int64`) were accepted.
#[test]
fn counts_stay_within_a_signed_64_bit_integer() {
    let largest = 9_223_372_036_854_775_807_u64;
    assert!(parse(&with(json!({"remainingActions": largest}))).is_ok());
    let error = parse(&with(json!({"remainingActions": largest + 1}))).unwrap_err();
    assert_eq!(error.path, "remainingActions");
    let error = parse(&with(
        json!({"parentJob": "p", "parentJobExecution": largest + 1}),
    ))
    .unwrap_err();
    assert_eq!(error.path, "parentJobExecution");
}
