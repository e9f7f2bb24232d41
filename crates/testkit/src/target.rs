//! A job service on loopback for the engine end to end: the real HTTP client of the engine calls
//! it, and the test reads what arrived.
//!
//! Plain threads and a hand-written HTTP/1.1 reader, so it works under any runtime or none (the
//! `sundial serve` tests drive a child process from a plain thread; the Lambda handler tests run on
//! tokio) and shows exactly what went over the wire.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request the target received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The request target as sent: path and query.
    pub path: String,
    /// Header names in lower case, values trimmed, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body as JSON; a body that is not JSON is kept as a JSON string, an empty one is `null`.
    pub body: Value,
    /// When the request had arrived whole.
    pub at: Instant,
}

impl Received {
    /// The value of header `name` (lower case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How long the target waits before it answers a request (recorded on arrival): `None` answers at
/// once. A wait longer than the test outlives the caller: a killed caller never gets its answer.
pub type Delay = Arc<dyn Fn(&Received) -> Option<Duration> + Send + Sync>;

/// A job service on 127.0.0.1: records every request on arrival and answers `200 {"ok":true}`,
/// at once or after the wait its [`Delay`] says. It serves until the test process ends.
pub struct Target {
    /// The port it listens on.
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Target {
    /// A target that answers every request at once.
    pub fn start() -> Target {
        Target::with_delay(Arc::new(|_: &Received| None))
    }

    /// A target that waits `delay(request)` before answering.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    #[allow(clippy::panic)]
    pub fn with_delay(delay: Delay) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("binding the target on loopback: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("the target's address: {e}"))
            .port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                let delay = Arc::clone(&delay);
                std::thread::spawn(move || answer(stream, &log, &delay));
            }
        });
        Target { port, received }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests received so far whose path starts with `prefix`, in order of arrival.
    pub fn received(&self, prefix: &str) -> Vec<Received> {
        lock(&self.received)
            .iter()
            .filter(|r| r.path.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// How many requests under `prefix` arrived so far, without copying them (for large runs).
    pub fn count(&self, prefix: &str) -> usize {
        lock(&self.received)
            .iter()
            .filter(|r| r.path.starts_with(prefix))
            .count()
    }

    /// Waits (at most 20 s) until `count` requests under `prefix` arrived; returns those there are.
    pub fn wait_for(&self, prefix: &str, count: usize) -> Vec<Received> {
        self.wait_for_within(prefix, count, Duration::from_secs(20))
    }

    /// Waits (at most `limit`) until `count` requests under `prefix` arrived; returns those there
    /// are.
    pub fn wait_for_within(&self, prefix: &str, count: usize, limit: Duration) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        loop {
            let got = self.received(prefix);
            if got.len() >= count || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A panicking test thread must not hide what the target received from the others.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves one connection: requests one after the other (keep-alive) until the peer closes it.
fn answer(stream: TcpStream, log: &Mutex<Vec<Received>>, delay: &Delay) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream);
    while let Some(received) = read_request(&mut reader) {
        let wait = delay(&received);
        lock(log).push(received);
        if let Some(wait) = wait {
            std::thread::sleep(wait);
        }
        let reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";
        if reader.get_mut().write_all(reply).is_err() {
            return;
        }
    }
}

/// One request with a `Content-Length` body (what the engine's client sends); `None` once the
/// connection is closed or broken. Public for targets of their own (tests that hold requests
/// open).
pub fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = match serde_json::from_slice(&body) {
        Ok(json) => json,
        Err(_) if body.is_empty() => Value::Null,
        Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
    };
    Some(Received {
        path,
        headers,
        body,
        at: Instant::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends one request and returns the status line and the body of the answer.
    fn post(port: u16, path: &str, body: &str) -> (String, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k-1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            match header.trim_end().split_once(": ") {
                Some(("Content-Length", value)) => length = value.parse().unwrap(),
                Some(_) => {}
                None => break,
            }
        }
        let mut answer = vec![0; length];
        reader.read_exact(&mut answer).unwrap();
        (status, String::from_utf8(answer).unwrap())
    }

    #[test]
    fn the_target_records_what_arrives_and_answers_ok() {
        let target = Target::start();
        let (status, answer) = post(target.port, "/run/a?n=1", r#"{"n": 1}"#);
        assert_eq!(status, "HTTP/1.1 200 OK\r\n");
        assert_eq!(answer, r#"{"ok":true}"#);
        post(target.port, "/notify/a", "not json");
        post(target.port, "/run/b", "");

        let runs = target.wait_for("/run/", 2);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].path, "/run/a?n=1");
        assert_eq!(runs[0].header("idempotency-key"), Some("k-1"));
        assert_eq!(
            runs[0].header("Idempotency-Key"),
            None,
            "names are lower case"
        );
        assert_eq!(runs[0].body, serde_json::json!({"n": 1}));
        assert_eq!(runs[1].body, Value::Null);
        let notes = target.received("/notify/");
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].body, Value::String("not json".into()));
        assert!(runs[0].at <= notes[0].at && notes[0].at <= runs[1].at);
    }

    #[test]
    fn a_delay_holds_the_answer() {
        let target = Target::with_delay(Arc::new(|r: &Received| {
            r.path
                .starts_with("/slow")
                .then_some(Duration::from_millis(300))
        }));
        let started = Instant::now();
        post(target.port, "/fast", "{}");
        assert!(started.elapsed() < Duration::from_millis(300));
        let started = Instant::now();
        post(target.port, "/slow", "{}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(target.received("/").len(), 2);
        assert!(target
            .wait_for_within("/never", 1, Duration::from_millis(50))
            .is_empty());
    }
}
