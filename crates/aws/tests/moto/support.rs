//! Moto server for the whole test binary: started on first use by `infra/moto.py up`, which
//! creates the template's table, queues and bus, and stopped by itself when this process exits
//! (its standard input, a pipe from us, reaches end of file).
//!
//! Without Python and moto the tests skip with a message, so `cargo test --workspace` passes on a
//! machine with nothing installed; under CI (`CI` set) or with `SUNDIAL_REQUIRE_MOTO=1` a missing
//! moto fails them instead, so CI cannot go green by skipping.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, Region};
use serde_json::Value;
use sundial_testkit::moto::{self as server, MotoServer};

pub(crate) struct Moto {
    pub endpoint: String,
    /// The environment the template would give the functions, for the default resource set.
    pub env: BTreeMap<String, String>,
    _server: MotoServer,
}

static MOTO: OnceLock<Option<Moto>> = OnceLock::new();

/// The shared moto server, or `None` (after saying why) when it cannot run here.
pub(crate) fn moto() -> Option<&'static Moto> {
    MOTO.get_or_init(|| {
        server::moto_or_skip("sundial-test").map(|moto| Moto {
            endpoint: moto.endpoint.clone(),
            env: moto.env.clone(),
            _server: moto,
        })
    })
    .as_ref()
}

impl Moto {
    /// SDK settings pointing at moto, with dummy credentials.
    pub(crate) async fn sdk(&self) -> SdkConfig {
        self.sdk_at(&self.endpoint).await
    }

    /// SDK settings for `endpoint` (moto, or a proxy in front of it).
    pub(crate) async fn sdk_at(&self, endpoint: &str) -> SdkConfig {
        aws_config::defaults(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
            .http_client(sundial_aws::runtime::http_client())
            .load()
            .await
    }

    /// A fresh set of the template's resources (table, queues, bus) under a new prefix, and the
    /// function environment for it.
    pub(crate) fn fresh_resources(&self) -> BTreeMap<String, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let prefix = format!("t{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let python = sundial_testkit::python::python().expect("moto's python started this server");
        let output = Command::new(python)
            .args([
                &server::script().display().to_string(),
                "up",
                "--create-only",
                "--endpoint",
                &self.endpoint,
                "--prefix",
                &prefix,
            ])
            .stdin(Stdio::null())
            .output()
            .expect("running infra/moto.py --create-only");
        assert!(
            output.status.success(),
            "infra/moto.py --create-only failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = String::from_utf8_lossy(&output.stdout);
        let started: Value = serde_json::from_str(line.trim()).expect("infra/moto.py printed JSON");
        server::env_of(&started)
    }
}

/// A namespace no other store in this run uses.
pub(crate) fn namespace() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "ns{}-{}/",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The moto server, or return from the test (skipping) when there is none.
#[macro_export]
macro_rules! need_moto {
    () => {
        match $crate::support::moto() {
            Some(moto) => moto,
            None => return,
        }
    };
}
