//! Hardening of `sundial serve` against hostile clients and other users of the machine (issue 12):
//! private data files, credential rules, and connection limits under a low open-file limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{refused_start, start, TempDir};

/// The data directory `serve` creates is its owner's only (0700); the database, its `-wal` and
/// `-shm` files and the generated signing secret (32 random bytes) are 0600. A kept secret that
/// others can read stops the next start with a message saying how to fix it.
#[cfg(unix)]
#[test]
fn data_files_are_private_and_a_shared_secret_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("modes");
    let mut server = start(&dir, &[], &[("SUNDIAL_SIGNING_SECRET", "")]);
    server
        .call("POST", "/jobs/private", Some(&serde_json::json!({
            "jobName": "private", "creator": "001", "creatorName": "tests",
            "request": [{"url": "http://127.0.0.1:9/", "headers": {"Authorization": "Bearer x"}}],
            "timer": {"period": "external"}
        })))
        .ok_envelope();
    let mode = |name: &str| {
        std::fs::metadata(dir.data().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(""), 0o700, "the data directory");
    for name in [
        "sundial.db",
        "sundial.db-wal",
        "sundial.db-shm",
        "signing-secret",
    ] {
        assert_eq!(mode(name), 0o600, "{name}");
    }
    let secret = std::fs::read(dir.data().join("signing-secret")).expect("the secret");
    assert!(secret.len() >= 32, "{} bytes", secret.len());
    server.terminate();

    let path = dir.data().join("signing-secret");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, stdout, stderr) = refused_start(&dir, &[], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stdout, "", "it never listened");
    let fix = format!("chmod 600 {}", path.display());
    assert!(stderr.contains(&fix), "{stderr}");
    assert_eq!(
        std::fs::read(&path).expect("kept"),
        secret,
        "the secret is left as it was"
    );

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let server = start(&dir, &[], &[("SUNDIAL_SIGNING_SECRET", "")]);
    assert_eq!(server.call("GET", "/jobs/private", None).status, 200);
}

/// Weak credentials stop the start with a message naming the variable and the rule.
#[test]
fn weak_credentials_are_refused_at_start() {
    let dir = TempDir::new("creds");
    for (flags, key, value) in [
        (
            ["--addr", "0.0.0.0:0"],
            "SUNDIAL_API_TOKEN",
            "                ",
        ),
        (
            ["--addr", "0.0.0.0:0"],
            "SUNDIAL_API_TOKEN",
            "   padded-token-0123   ",
        ),
        (["--addr", "0.0.0.0:0"], "SUNDIAL_API_TOKEN", "x"),
        (
            ["--addr", "0.0.0.0:0"],
            "SUNDIAL_API_TOKEN",
            "пароль-пароль-пароль",
        ),
        (["--addr", "127.0.0.1:0"], "SUNDIAL_SIGNING_SECRET", "k"),
    ] {
        let (code, stdout, stderr) = refused_start(&dir, &flags, &[(key, value)]);
        assert_eq!(code, Some(2), "{key}={value:?}: {stderr}");
        assert_eq!(stdout, "");
        assert!(stderr.starts_with(&format!("error: {key}: ")), "{stderr}");
        assert!(
            !stderr.contains(value.trim()) || value.trim().len() < 2,
            "the value is not echoed: {stderr}"
        );
    }
}
