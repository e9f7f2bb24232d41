//! Crash recovery end to end: the real `sundial serve` on a temp data dir is killed with SIGKILL
//! (`Child::kill`) at different points — a request in flight, between the fires of a schedule, in
//! the middle of a burst of triggers — and restarted on the same data dir. What must hold is what
//! docs/engine.md ("Delivery guarantees") promises: nothing lost, nothing run twice. The target may
//! see a request twice (at-least-once), but then with the same `Idempotency-Key`, and there is
//! exactly one execution per fire or trigger key, finished.
//!
//! Timing: the restarted process holds the data directory's engine lock, so every lease of the
//! killed process is a dead one and every message it had received comes back at once
//! (engine.md, "Leases"): an orphaned run repeats its call within 2 s of the restart. The tests
//! poll with deadlines instead of sleeping.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use common::{is_final, request, start, wait_final_within, Server, ServerFiles};
use sundial_testkit::{Received, Target, TempDir};

/// How long an orphaned run may take to repeat its call after the restart (issue 11's goal).
const RESUME: Duration = Duration::from_secs(2);

/// A bound for everything to become final, with room for a loaded machine.
const RECOVERY: Duration = Duration::from_secs(60);

fn time(value: &Value) -> DateTime<Utc> {
    let text = value.as_str().unwrap_or_else(|| panic!("a time: {value}"));
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text:?} is not RFC 3339: {e}"))
        .with_timezone(&Utc)
}

/// A job calling `service://work/run/{jobId}` with its number and scheduled time, a short attempt
/// timeout (so a lost worker's lease ends soon) and no retries: a second attempt would show as a
/// second key at the target.
fn job(extra: Value) -> Value {
    let mut job = json!({
        "jobName": "crash", "creator": "001", "creatorName": "tests",
        "timeoutSeconds": 3,
        "request": [{"method": "POST", "url": "service://work/run/${jobId}?n=${executeNumber}",
                     "body": {"n": "${executeNumber}|json", "id": "${executionId}",
                              "scheduled": "${scheduledTime}"}}],
    });
    for (key, value) in extra.as_object().unwrap() {
        job[key] = value.clone();
    }
    job
}

/// Kills the server as a crash would and checks it died of SIGKILL.
fn crash(server: &mut Server) {
    let status = server.kill();
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status:?}");
}

/// The `Idempotency-Key` of every call the target received, in order.
fn keys(calls: &[Received]) -> Vec<String> {
    calls
        .iter()
        .map(|r| {
            r.header("idempotency-key")
                .unwrap_or_else(|| panic!("no Idempotency-Key on {r:?}"))
                .to_string()
        })
        .collect()
}

/// Polls the job's executions until every one is final (at most `limit`), then once more after the
/// tick horizon, so fires planned just before the last read are in the answer too.
fn wait_all_final(server: &Server, job_id: &str, at_least: usize, limit: Duration) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let all = server.executions(job_id);
        let done = all.len() >= at_least && all.iter().all(is_final);
        if done {
            std::thread::sleep(Duration::from_millis(2500));
            let again = server.executions(job_id);
            if again.len() == all.len() && again.iter().all(is_final) {
                return again;
            }
        } else if Instant::now() > deadline {
            return all;
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `state` of every execution that is not `want`, for failure messages.
fn not_in_state<'a>(executions: &'a [Value], want: &str) -> Vec<&'a Value> {
    executions.iter().filter(|e| e["state"] != want).collect()
}

/// Case 1: a request is in flight when the process dies: the target holds the first call without
/// answering. Right after the restart the same attempt runs again with the same
/// `Idempotency-Key` (the restarted engine knows the lease's holder is dead), succeeds, and the
/// fire has exactly one execution.
#[test]
fn a_request_in_flight_at_a_crash_is_run_again_with_the_same_key() {
    let first = Arc::new(AtomicUsize::new(0));
    let target = Target::with_delay(Arc::new(move |r: &Received| {
        // The first call is never answered while the test runs; later ones at once.
        (r.path.starts_with("/run/inflight") && first.fetch_add(1, Ordering::SeqCst) == 0)
            .then_some(Duration::from_secs(120))
    }));
    let dir = TempDir::new("crash-inflight");
    let services = format!("work=http://127.0.0.1:{}", target.port);
    let env = [("SUNDIAL_SERVICES", services.as_str())];
    let mut server = start(&dir, &[], &env);

    // A one-time fire 1 s from now.
    let body = job(json!({"timer": {"dueTime": "1s", "period": "0s"}}));
    server
        .call("POST", "/jobs/inflight", Some(&body))
        .ok_envelope();
    let calls = target.wait_for("/run/inflight", 1);
    assert_eq!(
        calls.len(),
        1,
        "the fire reached the target; log:\n{}",
        dir.logs()
    );
    crash(&mut server);
    let killed = Instant::now();

    let restarted = Instant::now();
    let server = start(&dir, &[], &env);
    let executions = server.executions("inflight");
    assert_eq!(executions.len(), 1, "{executions:?}");
    let id = executions[0]["executionId"].as_str().unwrap().to_string();
    assert!(
        id.starts_with("inflight~") && !id.contains("~t~"),
        "a scheduled fire's id: {id}"
    );
    // Killed mid-call; the restarted engine may already have run it again.
    assert!(
        ["Processing", "Succeeded"].contains(&executions[0]["state"].as_str().unwrap_or("")),
        "killed mid-call: {executions:?}"
    );

    let calls = target.wait_for_within("/run/inflight", 2, RECOVERY);
    assert_eq!(
        calls.len(),
        2,
        "the attempt runs again; log:\n{}",
        dir.logs()
    );
    let resumed = calls[1].at - restarted;
    assert!(
        resumed < RESUME,
        "the orphaned call repeats within {RESUME:?} of the restart, not when its lease ends: {resumed:?}"
    );
    let done = wait_final_within(&server, &id, Duration::from_secs(20));
    eprintln!(
        "in flight: re-run {:.1} s after the kill",
        (calls[1].at - killed).as_secs_f64()
    );
    assert_eq!(done["state"], "Succeeded", "{done:#}\nlog:\n{}", dir.logs());
    assert_eq!(
        done["attempts"], 1,
        "the same attempt, not a retry: {done:#}"
    );
    assert_eq!(done["result"], json!({"ok": true}), "{done:#}");
    assert_eq!(done["executeNumber"], 1, "{done:#}");
    let events = done["events"].to_string();
    assert!(
        events.contains("worker running this attempt was lost"),
        "the log says why the attempt ran again: {done:#}"
    );

    // Same key on both calls: the first attempt's first step.
    let expected = format!("{id}:1:0");
    assert_eq!(keys(&calls), [expected.clone(), expected], "{calls:?}");
    assert_eq!(calls[0].body, calls[1].body, "the same request again");
    assert_eq!(calls[1].body["n"], 1);
    assert_eq!(calls[1].body["id"], id.as_str());

    // Exactly one execution for the fire, and no further call.
    std::thread::sleep(Duration::from_millis(1500));
    let executions = server.executions("inflight");
    assert_eq!(executions.len(), 1, "{executions:?}");
    assert_eq!(target.received("/run/inflight").len(), 2);
    let info = &server.call("GET", "/jobs/inflight/describe", None).body["info"];
    assert_eq!(info["actionCount"], 1, "{info}");
    assert_eq!(info["runningExecutions"], json!([]), "{info}");
}

/// Case 1b (issue 11): a one-second `Skip` job with `qos: 1` whose run is killed in its call. After
/// the restart the orphan repeats its call within 2 s, its slot is free again at once, no fire
/// two seconds or more after the restart is skipped because of the dead run, and nothing stays
/// `Processing`.
#[test]
fn a_crashed_run_of_a_skip_job_resumes_at_once_and_blocks_no_fire() {
    let first = Arc::new(AtomicUsize::new(0));
    let target = Target::with_delay(Arc::new(move |r: &Received| {
        (r.path.starts_with("/run/every-second") && first.fetch_add(1, Ordering::SeqCst) == 0)
            .then_some(Duration::from_secs(120))
    }));
    let dir = TempDir::new("crash-skip");
    let services = format!("work=http://127.0.0.1:{}", target.port);
    let env = [("SUNDIAL_SERVICES", services.as_str())];
    let mut server = start(&dir, &[], &env);
    let body = job(json!({"timer": {"dueTime": "0s", "period": "1s"}, "qos": 1,
                           "timeoutSeconds": 600}));
    server
        .call("POST", "/jobs/every-second", Some(&body))
        .ok_envelope();
    let held = target.wait_for("/run/every-second", 1);
    assert_eq!(held.len(), 1, "log:\n{}", dir.logs());
    std::thread::sleep(Duration::from_millis(1500));
    crash(&mut server);
    std::thread::sleep(Duration::from_secs(1));

    let restarted = Instant::now();
    let restarted_at = Utc::now();
    let server = start(&dir, &[], &env);
    let calls = target.wait_for_within("/run/every-second", 2, RECOVERY);
    assert!(calls.len() >= 2, "log:\n{}", dir.logs());
    let resumed = calls[1].at - restarted;
    assert_eq!(keys(&calls)[1], keys(&calls)[0], "the orphan's call again");
    assert!(
        resumed < RESUME,
        "the orphan resumes within {RESUME:?}: {resumed:?}"
    );
    std::thread::sleep(Duration::from_secs(4));
    // The pause ends the fires planned ahead and not started as Skipped (docs/engine.md, "A
    // pause"): those are the pause's, not a blocked job's.
    let paused_at = chrono::Utc::now();
    server
        .call(
            "POST",
            "/jobs/every-second/pause",
            Some(&json!({"notes": "check"})),
        )
        .ok_envelope();
    let executions = wait_all_final(&server, "every-second", 1, RECOVERY);
    let unfinished: Vec<&Value> = executions.iter().filter(|e| !is_final(e)).collect();
    assert!(
        unfinished.is_empty(),
        "nothing stays Processing: {unfinished:#?}"
    );
    let blocked: Vec<&Value> = executions
        .iter()
        .filter(|e| {
            e["state"] == "Skipped"
                && time(&e["scheduledTime"]) >= restarted_at + chrono::Duration::seconds(2)
                && time(&e["finishedAt"]) < paused_at
        })
        .collect();
    assert!(
        blocked.is_empty(),
        "no fire after the restart is skipped: {blocked:#?}"
    );
    let orphan = executions
        .iter()
        .find(|e| e["executionId"].as_str() == keys(&calls)[0].split(':').next())
        .unwrap_or_else(|| panic!("the orphan is listed: {executions:#?}"));
    assert_eq!(orphan["state"], "Succeeded", "{orphan:#}");
    eprintln!(
        "skip job: orphan resumed {:.2} s after the restart",
        resumed.as_secs_f64()
    );
}

/// Case 2: an every-second schedule: ~3 s of fires, a crash, ~2 s down, a restart, ~3 s more,
/// pause.
/// The downtime (a few seconds) is well inside the default catch-up window (1 minute), so per
/// engine.md every fire in it runs late, at once, and none is counted as missed: the scheduled
/// times form an unbroken run of seconds, each with exactly one execution, numbered 1..N.
#[test]
fn a_crash_between_fires_loses_and_duplicates_no_fire() {
    let target = Target::start();
    let dir = TempDir::new("crash-ticker");
    let services = format!("work=http://127.0.0.1:{}", target.port);
    let env = [("SUNDIAL_SERVICES", services.as_str())];
    let mut server = start(&dir, &[], &env);

    // AllowAll: fires run late after the restart all at once, and none is skipped for overlap.
    let body = job(json!({"schedule": {"intervals": ["1s"]}, "overlap": "AllowAll"}));
    server
        .call("POST", "/jobs/ticker", Some(&body))
        .ok_envelope();
    let before = target.wait_for("/run/ticker", 3);
    assert!(before.len() >= 3, "log:\n{}", dir.logs());
    std::thread::sleep(Duration::from_millis(300));
    crash(&mut server);
    let killed_at = Utc::now();
    let seen_at_kill = target.received("/run/ticker").len();

    std::thread::sleep(Duration::from_secs(2));
    let restarted_at = Utc::now();
    let server = start(&dir, &[], &env);
    let after = target.wait_for("/run/ticker", seen_at_kill + 3);
    assert!(after.len() >= seen_at_kill + 3, "log:\n{}", dir.logs());
    std::thread::sleep(Duration::from_secs(2));
    // The fires planned ahead and not started when the pause is answered end Skipped (the
    // pause's, docs/engine.md): every other run succeeds.
    let paused_at = chrono::Utc::now();
    server
        .call(
            "POST",
            "/jobs/ticker/pause",
            Some(&json!({"notes": "check"})),
        )
        .ok_envelope();

    let mut executions = wait_all_final(&server, "ticker", 1, RECOVERY);
    let unfinished: Vec<&Value> = executions.iter().filter(|e| !is_final(e)).collect();
    assert!(
        unfinished.is_empty(),
        "every execution is final: {unfinished:#?}\nlog:\n{}",
        dir.logs()
    );
    executions.sort_by_key(|e| e["executeNumber"].as_u64());
    let n = executions.len();
    let failed: Vec<&Value> = not_in_state(&executions, "Succeeded")
        .into_iter()
        .filter(|e| !(e["state"] == "Skipped" && time(&e["finishedAt"]) >= paused_at))
        .collect();
    assert!(failed.is_empty(), "all succeeded: {failed:#?}");

    // Numbers 1..=N, unique ids, unique scheduled times one second apart.
    let numbers: Vec<u64> = executions
        .iter()
        .map(|e| e["executeNumber"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (1..=n as u64).collect::<Vec<_>>(), "contiguous");
    let ids: BTreeSet<&str> = executions
        .iter()
        .map(|e| e["executionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), n, "unique execution ids");
    let times: Vec<DateTime<Utc>> = executions
        .iter()
        .map(|e| time(&e["scheduledTime"]))
        .collect();
    let unique: BTreeSet<_> = times.iter().collect();
    assert_eq!(
        unique.len(),
        n,
        "each scheduled time at most once: {times:?}"
    );
    for pair in times.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            chrono::Duration::seconds(1),
            "no fire lost between {} and {}: {times:?}",
            pair[0],
            pair[1]
        );
    }
    for e in executions.iter().filter(|e| e["state"] == "Succeeded") {
        assert_eq!(e["attempts"], 1, "{e}");
    }

    // The fires of the downtime ran, late, after the restart.
    let downtime: Vec<&Value> = executions
        .iter()
        .filter(|e| {
            let t = time(&e["scheduledTime"]);
            t > killed_at && t < restarted_at
        })
        .collect();
    assert!(
        downtime.len() >= 2,
        "fires fell in the downtime {killed_at} – {restarted_at}: {times:?}"
    );
    for e in &downtime {
        assert!(
            time(&e["startedAt"]) >= restarted_at,
            "a downtime fire ran after the restart: {e}"
        );
    }

    // The counters: nothing missed (the downtime is inside the 1-minute window), nothing skipped.
    let info = &server.call("GET", "/jobs/ticker/describe", None).body["info"];
    assert_eq!(info["missedCatchupWindow"], 0, "{info}");
    assert_eq!(info["overlapSkipped"], 0, "{info}");
    let ran: Vec<&str> = executions
        .iter()
        .filter(|e| e["state"] == "Succeeded")
        .map(|e| e["executionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        info["actionCount"],
        ran.len(),
        "the runs the pause left: {info}"
    );
    assert_eq!(info["runningExecutions"], json!([]), "{info}");

    // The target saw every execution, each under its first attempt's key, and nothing else.
    let calls = target.received("/run/ticker");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for key in keys(&calls) {
        *seen.entry(key).or_default() += 1;
    }
    let expected: BTreeSet<String> = ran.iter().map(|id| format!("{id}:1:0")).collect();
    assert_eq!(
        seen.keys().cloned().collect::<BTreeSet<_>>(),
        expected,
        "one key per execution"
    );
    let twice: Vec<_> = seen.iter().filter(|(_, &c)| c > 1).collect();
    eprintln!(
        "ticker: {n} fires, {} in the downtime, {} called twice (at-least-once): {twice:?}",
        downtime.len(),
        twice.len()
    );
}

/// The `Idempotency-Key` of the burst's trigger `i`.
fn key(i: usize) -> String {
    format!("burst-{i:02}")
}

/// `POST /jobs/burst/trigger` with trigger `i`'s key and arguments; `Err` when the server is gone.
fn trigger(addr: &str, i: usize) -> Result<Value, String> {
    let k = key(i);
    let arguments = serde_json::to_vec(&json!({"i": i})).unwrap();
    let reply = request(
        addr,
        "POST",
        "/jobs/burst/trigger",
        &[("Idempotency-Key", k.as_str())],
        Some(&arguments),
    )?;
    Ok(reply.ok_envelope().clone())
}

/// Case 3: a burst of 50 triggers (each with its own `Idempotency-Key`) of an `AllowAll` job, and a
/// crash once the target has received some of them, possibly while triggers are still being sent.
/// The client then does what any client of an at-least-once API does: it sends every trigger again
/// with the same key. In the end there are exactly 50 executions, all `Succeeded`, and the target
/// saw each execution's key at least once.
#[test]
fn a_crash_during_a_burst_of_triggers_loses_and_duplicates_no_run() {
    const RUNS: usize = 50;
    // A slow target, so that the crash finds calls in flight.
    let target = Target::with_delay(Arc::new(|_: &Received| Some(Duration::from_millis(150))));
    let dir = TempDir::new("crash-burst");
    let services = format!("work=http://127.0.0.1:{}", target.port);
    let env = [("SUNDIAL_SERVICES", services.as_str())];
    let mut server = start(&dir, &[], &env);
    let body =
        job(json!({"timer": {"dueTime": "0s", "period": "external"}, "overlap": "AllowAll"}));
    server
        .call("POST", "/jobs/burst", Some(&body))
        .ok_envelope();

    // Send the triggers on a thread until the first one fails (the server died under it).
    let addr = server.addr.clone();
    let sender = std::thread::spawn(move || {
        let mut acknowledged = Vec::new();
        for i in 0..RUNS {
            match trigger(&addr, i) {
                Ok(answer) => acknowledged.push(answer),
                Err(_) => break,
            }
        }
        acknowledged
    });
    let reached = target.wait_for("/run/burst", 10);
    assert!(reached.len() >= 10, "log:\n{}", dir.logs());
    crash(&mut server);
    let acknowledged = sender.join().unwrap();
    let seen_at_kill = target.received("/run/burst").len();

    // Restart and send every trigger again with its key: the acknowledged ones answer with the
    // execution they created, the rest are created now.
    let server = start(&dir, &[], &env);
    for i in 0..RUNS {
        let answer = trigger(&server.addr, i).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            answer["executionId"],
            format!("burst~t~{}", key(i)),
            "{answer}"
        );
        if let Some(first) = acknowledged.get(i) {
            assert_eq!(
                (&answer["executionId"], &answer["executeNumber"]),
                (&first["executionId"], &first["executeNumber"]),
                "the same key is the same execution across the crash"
            );
        }
    }

    let executions = wait_all_final(&server, "burst", RUNS, RECOVERY);
    eprintln!(
        "burst: {} triggers acknowledged and {seen_at_kill} calls made before the crash",
        acknowledged.len()
    );
    assert_eq!(
        executions.len(),
        RUNS,
        "{executions:#?}\nlog:\n{}",
        dir.logs()
    );
    let failed = not_in_state(&executions, "Succeeded");
    assert!(
        failed.is_empty(),
        "all succeeded: {failed:#?}\nlog:\n{}",
        dir.logs()
    );
    let ids: BTreeSet<String> = executions
        .iter()
        .map(|e| e["executionId"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = (0..RUNS).map(|i| format!("burst~t~{}", key(i))).collect();
    assert_eq!(ids, expected);
    for e in &executions {
        assert_eq!(e["attempts"], 1, "{e}");
        let i = e["executionId"]
            .as_str()
            .unwrap()
            .trim_start_matches("burst~t~burst-");
        assert_eq!(
            e["arguments"],
            json!({"i": i.parse::<usize>().unwrap()}),
            "{e}"
        );
    }
    let numbers: BTreeSet<u64> = executions
        .iter()
        .map(|e| e["executeNumber"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers.len(), RUNS, "unique execute numbers: {numbers:?}");
    // Known gap (not a lost or duplicated run): a trigger takes its execute number in one write on
    // the job and creates its execution in a second one, so a crash between the two — or two
    // requests with the same key racing — uses up a number that no execution gets, and the
    // numbers after it shift by one. Reported, not asserted, so the test checks what engine.md
    // promises; see the report of this test's author.
    let last = *numbers.iter().last().unwrap();
    if last != RUNS as u64 {
        let missing: Vec<u64> = (1..=last).filter(|n| !numbers.contains(n)).collect();
        let shifted: Vec<String> = executions
            .iter()
            .filter(|e| e["executeNumber"].as_u64().unwrap() > missing[0])
            .map(|e| format!("{}={}", e["executionId"], e["executeNumber"]))
            .take(3)
            .collect();
        eprintln!(
            "burst: NOTE execute numbers have a gap after the crash: {missing:?} unused; \
             e.g. {shifted:?}"
        );
    }
    let info = &server.call("GET", "/jobs/burst/describe", None).body["info"];
    assert_eq!(info["actionCount"], RUNS, "{info}");
    assert_eq!(info["runningExecutions"], json!([]), "{info}");

    // Every execution's key reached the target at least once, and no other key did.
    let calls = target.received("/run/burst");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for key in keys(&calls) {
        *seen.entry(key).or_default() += 1;
    }
    let expected_keys: BTreeSet<String> = expected.iter().map(|id| format!("{id}:1:0")).collect();
    assert_eq!(
        seen.keys().cloned().collect::<BTreeSet<_>>(),
        expected_keys,
        "one key per execution"
    );
    let twice = seen.values().filter(|&&c| c > 1).count();
    eprintln!(
        "burst: {} calls for {RUNS} executions, {twice} keys seen twice; numbers {}..={}",
        calls.len(),
        numbers.iter().next().unwrap(),
        numbers.iter().last().unwrap(),
    );
}
