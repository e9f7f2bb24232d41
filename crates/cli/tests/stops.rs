//! Issue 26 item 6 through the real `sundial serve`: a stop closes the run's call in flight, and the
//! target sees its request end (docs/engine.md, "Stopping a call"). The target here is a loopback
//! job service whose `/slow` requests never answer: it records when each arrives and when the
//! engine closes its connection, and how many were open at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::{start, Server};
use sundial_testkit::{read_request, TempDir};

/// What the target saw of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    /// A `/slow` request arrived (it is never answered).
    Started(String),
    /// The engine closed the connection of a `/slow` request before any answer.
    Closed(String),
    /// Any other request, answered `200 {"ok":true}` at once.
    Answered(String),
}

#[derive(Default)]
struct Log {
    seen: Vec<(Seen, Instant)>,
    open: usize,
    most_open: usize,
}

struct SlowTarget {
    port: u16,
    log: Arc<Mutex<Log>>,
}

impl SlowTarget {
    fn start() -> SlowTarget {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Log::default()));
        let shared = Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        SlowTarget { port, log }
    }

    fn seen(&self) -> Vec<Seen> {
        self.log
            .lock()
            .unwrap()
            .seen
            .iter()
            .map(|(s, _)| s.clone())
            .collect()
    }

    fn at(&self, what: &Seen) -> Instant {
        self.log
            .lock()
            .unwrap()
            .seen
            .iter()
            .find(|(s, _)| s == what)
            .map(|(_, at)| *at)
            .unwrap_or_else(|| panic!("{what:?} not seen"))
    }

    fn most_open(&self) -> usize {
        self.log.lock().unwrap().most_open
    }

    /// Waits (at most `limit`) until `what` was seen.
    fn wait_for(&self, what: &Seen, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.seen().contains(what) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

/// One connection: requests in turn; a `/slow` one is held until the peer closes the connection.
fn serve(stream: TcpStream, log: &Mutex<Log>) {
    let mut reader = BufReader::new(stream);
    while let Some(path) = read_request(&mut reader).map(|received| received.path) {
        if !path.starts_with("/slow") {
            log.lock()
                .unwrap()
                .seen
                .push((Seen::Answered(path), Instant::now()));
            let reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";
            if reader.get_mut().write_all(reply).is_err() {
                return;
            }
            continue;
        }
        {
            let mut log = log.lock().unwrap();
            log.seen.push((Seen::Started(path.clone()), Instant::now()));
            log.open += 1;
            log.most_open = log.most_open.max(log.open);
        }
        // Nothing more comes from the engine on this connection: a read returns when it closes.
        let mut rest = [0u8; 64];
        while matches!(reader.read(&mut rest), Ok(n) if n > 0) {}
        let mut log = log.lock().unwrap();
        log.open -= 1;
        log.seen.push((Seen::Closed(path), Instant::now()));
        return;
    }
}

fn serve_with(target: &SlowTarget, dir: &TempDir) -> Server {
    let services = format!("work=http://127.0.0.1:{}", target.port);
    start(dir, &[], &[("SUNDIAL_SERVICES", services.as_str())])
}

/// A job run only by triggers, whose request never answers.
fn slow_job(extra: Value) -> Value {
    let mut job = json!({
        "jobName": "slow", "creator": "001", "creatorName": "tests",
        "timer": {"period": "external"},
        "request": [{"method": "POST", "url": "service://work/slow/${jobId}?n=${executeNumber}"}],
    });
    for (key, value) in extra.as_object().unwrap() {
        job[key] = value.clone();
    }
    job
}

fn trigger(server: &Server, job: &str) -> String {
    let reply = server.call("POST", &format!("/jobs/{job}/trigger"), Some(&json!({})));
    reply.ok_envelope()["executionId"]
        .as_str()
        .expect("executionId")
        .to_string()
}

fn state(server: &Server, execution_id: &str) -> String {
    let execution = server
        .call("GET", &format!("/executions/{execution_id}"), None)
        .body;
    execution["state"].as_str().unwrap_or_default().to_string()
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn a_cancel_closes_the_call_in_flight() {
    let target = SlowTarget::start();
    let dir = TempDir::new("stop-cancel");
    let server = serve_with(&target, &dir);
    server
        .call("POST", "/jobs/held", Some(&slow_job(json!({}))))
        .ok_envelope();
    let id = trigger(&server, "held");
    let started = Seen::Started("/slow/held?n=1".into());
    assert!(
        target.wait_for(&started, WAIT),
        "log:\n{}",
        server.log_text()
    );
    let answer = server.call("POST", &format!("/executions/{id}/cancel"), None);
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let answered = Instant::now();
    let closed = Seen::Closed("/slow/held?n=1".into());
    assert!(
        target.wait_for(&closed, WAIT),
        "the target still holds the request; log:\n{}",
        server.log_text()
    );
    assert!(
        target.at(&closed) < answered + Duration::from_secs(1),
        "closed at once"
    );
    assert_eq!(state(&server, &id), "Cancelled");
}

#[test]
fn cancel_other_closes_the_old_call_before_the_new_call_starts() {
    let target = SlowTarget::start();
    let dir = TempDir::new("stop-cancel-other");
    let server = serve_with(&target, &dir);
    server
        .call(
            "POST",
            "/jobs/single",
            Some(&slow_job(json!({"overlap": "CancelOther"}))),
        )
        .ok_envelope();
    let first = trigger(&server, "single");
    assert!(target.wait_for(&Seen::Started("/slow/single?n=1".into()), WAIT));
    let second = trigger(&server, "single");
    let started = Seen::Started("/slow/single?n=2".into());
    assert!(
        target.wait_for(&started, WAIT),
        "log:\n{}",
        server.log_text()
    );
    assert_eq!(
        target.seen(),
        [
            Seen::Started("/slow/single?n=1".into()),
            Seen::Closed("/slow/single?n=1".into()),
            Seen::Started("/slow/single?n=2".into()),
        ]
    );
    assert_eq!(target.most_open(), 1, "never two calls of the job at once");
    assert_eq!(state(&server, &first), "Cancelled");
    assert_eq!(state(&server, &second), "Processing");
}

#[test]
fn a_timeout_closes_the_call() {
    let target = SlowTarget::start();
    let dir = TempDir::new("stop-timeout");
    let server = serve_with(&target, &dir);
    let job = slow_job(json!({"timeoutSeconds": 1}));
    server
        .call("POST", "/jobs/bounded", Some(&job))
        .ok_envelope();
    trigger(&server, "bounded");
    let started = Seen::Started("/slow/bounded?n=1".into());
    let closed = Seen::Closed("/slow/bounded?n=1".into());
    assert!(
        target.wait_for(&closed, WAIT),
        "log:\n{}",
        server.log_text()
    );
    let held = target.at(&closed) - target.at(&started);
    assert!(
        held >= Duration::from_millis(900) && held < Duration::from_secs(3),
        "closed at the 1 s deadline: {held:?}"
    );
}

#[test]
fn a_cancelled_async_run_calls_its_cancel_url() {
    let target = SlowTarget::start();
    let dir = TempDir::new("stop-cancel-url");
    let server = serve_with(&target, &dir);
    let job = json!({
        "jobName": "async", "creator": "001", "creatorName": "tests",
        "timer": {"period": "external"},
        "request": [{"method": "POST", "url": "service://work/submit/${jobId}?n=${executeNumber}"}],
        "async": true,
        "timeoutSeconds": 600,
        "cancelUrl": "service://work/cancel/${jobId}?n=${executeNumber}",
    });
    server
        .call("POST", "/jobs/remote", Some(&job))
        .ok_envelope();
    let id = trigger(&server, "remote");
    assert!(target.wait_for(&Seen::Answered("/submit/remote?n=1".into()), WAIT));
    // Waiting for the job's report.
    let deadline = Instant::now() + WAIT;
    while state(&server, &id) != "Processing" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let answer = server.call("POST", &format!("/executions/{id}/cancel"), None);
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert!(
        target.wait_for(&Seen::Answered("/cancel/remote?n=1".into()), WAIT),
        "log:\n{}",
        server.log_text()
    );
    assert_eq!(state(&server, &id), "Cancelled");
}
