//! Moto server for a test binary, started by `infra/moto.py up` (which creates the template's
//! table, queues and bus) and stopped by itself when the test process exits: its standard input
//! is a pipe from us, and it stops when that reaches end of file.
//!
//! moto runs under [`crate::python::python`]: the pinned moto and boto3 in a virtual environment
//! the tests provision themselves on first use, so a machine with python3 needs nothing installed
//! by hand. Without python3 (or without a route to PyPI on the first run) the tests that need moto
//! skip with a `SKIPPED:` line, so `cargo test --workspace` still passes; under CI (`CI` set) or with
//! `SUNDIAL_REQUIRE_MOTO=1` a missing moto fails them instead ([`moto_or_skip`]), so CI cannot go
//! green by skipping.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;

/// A running moto server.
#[derive(Debug)]
pub struct MotoServer {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// What `infra/moto.py` printed as `env`: the AWS client settings (`AWS_ENDPOINT_URL`,
    /// `AWS_REGION`, test credentials) and the functions' environment for its resources.
    pub env: BTreeMap<String, String>,
    _process: Mutex<Child>,
}

/// `infra/moto.py`.
pub fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../infra/moto.py")
}

/// Whether a test that needs moto must fail without it: under CI or `SUNDIAL_REQUIRE_MOTO`.
pub fn required() -> bool {
    std::env::var_os("CI").is_some() || std::env::var_os("SUNDIAL_REQUIRE_MOTO").is_some()
}

/// Starts moto with the template's resources under `prefix`, or says why it cannot run here.
pub fn start(prefix: &str) -> Result<MotoServer, String> {
    let log =
        std::env::temp_dir().join(format!("sundial-moto-{prefix}-{}.log", std::process::id()));
    let stderr =
        std::fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let python = crate::python::python()?;
    let mut child = Command::new(&python)
        .arg(script())
        .args(["up", "--prefix", prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| format!("reading infra/moto.py's output: {e}"))?;
    let Ok(started) = serde_json::from_str::<Value>(&line) else {
        let _ = child.kill();
        let _ = child.wait();
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        return Err(format!("infra/moto.py did not start: {}", log.trim()));
    };
    Ok(MotoServer {
        endpoint: started["endpoint"].as_str().unwrap_or_default().to_owned(),
        env: env_of(&started),
        _process: Mutex::new(child),
    })
}

/// [`start`], or `None` after saying why when moto cannot run here and is not [`required`].
///
/// # Panics
/// When moto cannot run and is [`required`].
#[allow(clippy::panic)]
pub fn moto_or_skip(prefix: &str) -> Option<MotoServer> {
    match start(prefix) {
        Ok(moto) => Some(moto),
        Err(why) if required() => {
            panic!("moto is required here (CI or SUNDIAL_REQUIRE_MOTO): {why}")
        }
        Err(why) => {
            crate::skipped(&format!(
                "an AWS test: {why} (needs python3 with venv and pip, and PyPI on the first run; or set SUNDIAL_PYTHON to a python with moto[server] and boto3)"
            ));
            None
        }
    }
}

/// The `env` object of `infra/moto.py`'s line, as name → value.
pub fn env_of(started: &Value) -> BTreeMap<String, String> {
    started["env"]
        .as_object()
        .map(|env| {
            env.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}
