//! Headless Chromium for the console's browser tests, through chromedriver (W3C WebDriver): the
//! few commands the tests use, over a plain HTTP/1.1 client here, with no browser-automation
//! crate to build for a dozen JSON calls. Used by `sundial serve`'s console tests
//! (crates/cli/tests/console.rs) and by the console served by the real `api` binary under the
//! local AWS run (crates/lambda-local/tests/e2e.rs).
//!
//! Without Chromium and chromedriver [`browser`] prints why and returns `None`, unless
//! `CI=true`, where it panics: CI installs Debian's `chromium` and `chromium-driver` (`.ci/run`).
//! Chromium only ever talks to 127.0.0.1. Every page can also be checked with axe-core (an exact
//! version from npm, which `.ci/run` installs into `~/.cache/sundial-ci/axe-core-<version>/` and
//! names in `SUNDIAL_AXE_JS`): its script is injected and `axe.run()` awaited, and any serious or
//! critical violation fails the test ([`Browser::check_accessibility`]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::TempDir;

/// Debian's Chromium (`SUNDIAL_CHROMIUM` names another).
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// The axe-core `.ci/run` installs (keep the two in step).
pub const AXE_VERSION: &str = "4.14.1";
/// Debian's chromedriver (`SUNDIAL_CHROMEDRIVER` names another).
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// chromedriver and one browser session; dropping it ends both.
pub struct Browser {
    driver: Child,
    addr: String,
    session: String,
    _profile: TempDir,
    screenshots: PathBuf,
}

/// The browser, or `None` (with a message) when none is installed and CI is not set. Its
/// screenshots go to `screenshots` (created when the first is taken).
pub fn browser(screenshots: impl Into<PathBuf>) -> Option<Browser> {
    let chromium = std::env::var("SUNDIAL_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
    let driver = std::env::var("SUNDIAL_CHROMEDRIVER").unwrap_or_else(|_| CHROMEDRIVER.into());
    if !std::path::Path::new(&chromium).exists() || !std::path::Path::new(&driver).exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {chromium} or {driver} is missing: install Debian's chromium and chromium-driver"
        );
        crate::skipped(&format!(
            "a console browser test: {chromium} or {driver} is not installed \
             (apt-get install chromium chromium-driver)"
        ));
        return None;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(&driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while request(&addr, "GET", "/status", &[], None)
        .map(|r| r.body["value"]["ready"] != json!(true))
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "chromedriver not ready in 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let profile = TempDir::new("chromium-profile");
    let capabilities = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-quic", "--window-size=1280,800",
                format!("--user-data-dir={}", profile.path().display()),
            ]
        }
    }}});
    let body = serde_json::to_vec(&capabilities).unwrap();
    let reply = request(&addr, "POST", "/session", &[], Some(&body)).expect("new session");
    let session = reply.body["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {:?}", reply.body))
        .to_string();
    Some(Browser {
        driver: child,
        addr,
        session,
        _profile: profile,
        screenshots: screenshots.into(),
    })
}

/// axe-core's `axe.min.js`: `SUNDIAL_AXE_JS`, else where `.ci/run` caches it. `None` (with a
/// message) when it is missing and CI is not set.
pub fn axe_source() -> Option<String> {
    let path = std::env::var("SUNDIAL_AXE_JS").unwrap_or_else(|_| {
        format!(
            "{}/.cache/sundial-ci/axe-core-{AXE_VERSION}/node_modules/axe-core/axe.min.js",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    match std::fs::read_to_string(&path) {
        Ok(source) => Some(source),
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but axe-core is missing at {path} ({e}): .ci/run installs it"
            );
            crate::skipped(&format!(
                "the accessibility checks of a console browser test: no axe-core at {path} ({e}); \
                 npm install --prefix ~/.cache/sundial-ci/axe-core-{AXE_VERSION} axe-core@{AXE_VERSION}"
            ));
            None
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = request(
            &self.addr,
            "DELETE",
            &format!("/session/{}", self.session),
            &[],
            None,
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// One WebDriver command of this session; its `value`. Panics unless it answers 200.
    pub fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let bytes = body.map(|b| serde_json::to_vec(&b).unwrap());
        let path = format!("/session/{}{path}", self.session);
        let reply = request(&self.addr, method, &path, &[], bytes.as_deref())
            .unwrap_or_else(|e| panic!("webdriver {path}: {e}"));
        assert_eq!(
            reply.status, 200,
            "webdriver {method} {path}: {:?}",
            reply.body
        );
        reply.body["value"].clone()
    }

    /// Opens `url`.
    pub fn go(&self, url: &str) {
        self.command("POST", "/url", Some(json!({ "url": url })));
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        self.command("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The WebDriver id of the first element `css` selects; panics, with the page's text, if none.
    pub fn find(&self, css: &str) -> String {
        let found = self.command(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found:?}\n{}", self.text()))
            .to_string()
    }

    /// How many elements `css` selects.
    pub fn count(&self, css: &str) -> usize {
        self.script(&format!(
            "return document.querySelectorAll({}).length",
            json!(css)
        ))
        .as_u64()
        .unwrap_or(0) as usize
    }

    /// Clicks the first element `css` selects.
    pub fn click(&self, css: &str) {
        let element = self.find(css);
        self.command(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    /// Clicks what submits a form or follows a link, and waits until the next page has loaded:
    /// WebDriver's click returns before a form's navigation completes, so reading the page right
    /// after it could read the old one.
    pub fn click_and_load(&self, css: &str) {
        self.script("window.__sundialOldPage = true");
        self.click(css);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let loaded = self
                .script(
                    "return window.__sundialOldPage === undefined \
                     && document.readyState === 'complete'",
                )
                .as_bool()
                .unwrap_or(false);
            if loaded {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "clicking {css} loaded no new page within 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs axe-core on the page and fails on any serious or critical violation; prints the
    /// others. `axe` is [`axe_source`]'s script (nothing is checked without it).
    pub fn check_accessibility(&self, axe: Option<&str>, page: &str) {
        let Some(axe) = axe else { return };
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({"script": format!("{axe}\n;return typeof axe;"), "args": []})),
        );
        let found = self.command(
            "POST",
            "/execute/async",
            Some(json!({"script": "const done = arguments[arguments.length - 1];
                axe.run(document, {resultTypes: ['violations']})
                  .then((r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                      nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' '))}))))
                  .catch((e) => done({error: String(e)}));", "args": []})),
        );
        let violations = found
            .as_array()
            .unwrap_or_else(|| panic!("axe on {page} failed: {found:?}"));
        let (serious, other): (Vec<&Value>, Vec<&Value>) = violations
            .iter()
            .partition(|v| v["impact"] == "serious" || v["impact"] == "critical");
        for v in &other {
            eprintln!(
                "axe on {page}: {} ({}): {} at {}",
                v["id"], v["impact"], v["help"], v["nodes"]
            );
        }
        assert!(
            serious.is_empty(),
            "axe-core found serious or critical violations on {page}: {}",
            serde_json::to_string_pretty(&serious).unwrap()
        );
        eprintln!(
            "axe on {page}: no serious or critical violations ({} minor or moderate)",
            other.len()
        );
    }

    /// The `data-job` ids of the jobs list's rows, in order.
    pub fn rows(&self) -> Vec<String> {
        self.script(
            "return [...document.querySelectorAll('tr[data-job]')].map((r) => r.dataset.job)",
        )
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
    }

    /// Types `text` into the field `css` selects, after clearing it.
    pub fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.command(
            "POST",
            &format!("/element/{element}/clear"),
            Some(json!({})),
        );
        self.command(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Runs `script` in the page; what it returns.
    pub fn script(&self, script: &str) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// The page's visible text.
    pub fn text(&self) -> String {
        self.script("return document.body.innerText")
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the page's text contains `needle` (pages that refresh themselves).
    pub fn wait_for_text(&self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} not on the page within {limit:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The browser's cookies (WebDriver's objects: `name`, `value`, `secure`, …).
    pub fn cookies(&self) -> Vec<Value> {
        self.command("GET", "/cookie", None)
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// A screenshot of the whole page: the window made as tall as the page for it.
    pub fn screenshot_whole(&self, name: &str) {
        let height = self
            .script("return document.documentElement.scrollHeight")
            .as_u64()
            .unwrap_or(800)
            .clamp(800, 4000)
            + 100;
        let size = |height: u64| json!({"width": 1280, "height": height});
        self.command("POST", "/window/rect", Some(size(height)));
        self.script("window.scrollTo(0, 0)");
        self.screenshot(name);
        self.command("POST", "/window/rect", Some(size(800)));
    }

    /// A screenshot of the window, saved as `<name>.png` in the screenshots folder.
    pub fn screenshot(&self, name: &str) {
        let data = self.command("GET", "/screenshot", None);
        let png = base64_decode(data.as_str().unwrap_or_default());
        std::fs::create_dir_all(&self.screenshots).unwrap();
        std::fs::write(self.screenshots.join(format!("{name}.png")), png).unwrap();
    }
}

/// Standard base64 (the screenshots WebDriver answers), padding and line breaks ignored.
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let digits: Vec<u8> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, d)| acc | u32::from(*d) << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

/// chromedriver's answer: its status and JSON body.
struct Reply {
    status: u16,
    body: Value,
}

/// One request to chromedriver at `addr` over a fresh connection.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Reply, String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{method} {path}: {what}: {e}");
    let mut stream = TcpStream::connect(addr).map_err(|e| fail("connecting", &e))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| fail("timeout", &e))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or_default();
    head.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).map_err(|e| fail("writing", &e))?;
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .map_err(|e| fail("reading the status line", &e))?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| fail("status line", &status_line))?;
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .map_err(|e| fail("reading a header", &e))?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse::<usize>().ok();
            }
            if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut content = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader
                .read_line(&mut size)
                .map_err(|e| fail("reading a chunk", &e))?;
            let size =
                usize::from_str_radix(size.trim(), 16).map_err(|e| fail("chunk size", &e))?;
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader
                .read_exact(&mut chunk)
                .map_err(|e| fail("reading a chunk", &e))?;
            content.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        content.resize(length, 0);
        reader
            .read_exact(&mut content)
            .map_err(|e| fail("reading the body", &e))?;
    } else {
        reader
            .read_to_end(&mut content)
            .map_err(|e| fail("reading the body", &e))?;
    }
    Ok(Reply {
        status,
        body: serde_json::from_slice(&content).unwrap_or(Value::Null),
    })
}
