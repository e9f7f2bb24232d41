//! The Python interpreter the AWS tests run moto (and boto3) with, provisioned by the tests
//! themselves so that `cargo test --workspace` tests the AWS path on any machine with python3.
//!
//! The packages and their pins are `infra/moto-requirements.txt` (one place; `.ci/run` reads it
//! too). The interpreter is, in order:
//! 1. `SUNDIAL_PYTHON` when set (an interpreter the user chose, used as it is);
//! 2. a virtual environment under the cache directory named after the pins
//!    (`$SUNDIAL_CACHE_DIR`, else `$XDG_CACHE_HOME/sundial`, else `~/.cache/sundial`), created and
//!    filled by the first test process that needs it — under an exclusive file lock, so parallel
//!    test binaries provision it once and the others wait and reuse it;
//! 3. when that cannot be made (no `venv` module, no route to PyPI), `python3` if it already
//!    imports moto and boto3 (an offline machine with the packages installed by hand).
//!
//! Otherwise the reasons are returned and the caller skips (or fails, under CI) saying so.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The environment variable naming an interpreter to use as it is.
pub const PYTHON_VARIABLE: &str = "SUNDIAL_PYTHON";

/// The file the virtual environment is complete with; written last, under the lock.
const COMPLETE_MARKER: &str = "sundial-provisioned";

/// `infra/moto-requirements.txt`.
pub fn requirements_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../infra/moto-requirements.txt")
}

/// The requirement lines of a requirements file: comments and blank lines dropped.
pub fn requirements(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The virtual environment's directory name for these pins: a change of pin is a new directory,
/// so an old environment is never reused for new pins (`moto-server-5.2.1_boto3-1.43.11`).
pub fn environment_name(requirements: &[String]) -> String {
    let joined = requirements
        .iter()
        .map(|line| {
            line.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
                .split('-')
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join("-")
        })
        .collect::<Vec<_>>()
        .join("_");
    format!("python-{joined}")
}

/// Where provisioned environments are kept.
pub fn cache_dir() -> Option<PathBuf> {
    let from = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    from("SUNDIAL_CACHE_DIR")
        .or_else(|| from("XDG_CACHE_HOME").map(|dir| dir.join("sundial")))
        .or_else(|| from("HOME").map(|dir| dir.join(".cache/sundial")))
}

/// The interpreter for moto, provisioning it on first use (see the module's documentation).
/// Computed once per test process.
pub fn python() -> Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON.get_or_init(find_python).clone()
}

fn find_python() -> Result<PathBuf, String> {
    if let Some(chosen) = std::env::var_os(PYTHON_VARIABLE).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(chosen));
    }
    let provisioned = provision_default();
    match provisioned {
        Ok(python) => Ok(python),
        Err(why) if imports_moto(Path::new("python3")) => {
            crate::skipped(&format!(
                "not the pinned moto ({why}); using python3's own moto and boto3 instead"
            ));
            Ok(PathBuf::from("python3"))
        }
        Err(why) => Err(why),
    }
}

fn provision_default() -> Result<PathBuf, String> {
    let pins_path = requirements_file();
    let text = std::fs::read_to_string(&pins_path)
        .map_err(|e| format!("reading {}: {e}", pins_path.display()))?;
    let pins = requirements(&text);
    let cache = cache_dir().ok_or("no cache directory (HOME is not set)")?;
    let dir = cache.join(environment_name(&pins));
    provisioned(&dir, |dir| install(dir, &pins_path))
}

/// The interpreter of the environment at `dir`, made by `make` if it is not complete yet. Only
/// one process makes it: the others wait on the lock file beside it and then find it complete.
pub fn provisioned(
    dir: &Path,
    make: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let python = dir.join("bin/python");
    if dir.join(COMPLETE_MARKER).exists() {
        return Ok(python);
    }
    let parent = dir
        .parent()
        .ok_or("the environment has no parent directory")?;
    create_private_dir(parent)?;
    // Beside the environment, named after it whole (its name has dots: no `with_extension`).
    let name = dir.file_name().ok_or("the environment has no name")?;
    let lock_path = parent.join(format!("{}.lock", name.to_string_lossy()));
    let lock = File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("locking {}: {e}", lock_path.display()))?;
    // Another process may have finished it while this one waited.
    if !dir.join(COMPLETE_MARKER).exists() {
        if dir.exists() {
            // A half-made environment from an interrupted run: start again.
            std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        make(dir)?;
        let mut marker = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(dir.join(COMPLETE_MARKER))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let _ = writeln!(marker, "made by sundial-testkit");
    }
    drop(lock);
    Ok(python)
}

/// Creates `dir` (and its parents) readable by its owner only: nothing here is for other users.
fn create_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// `python3 -m venv DIR` and `DIR/bin/pip install -r requirements`: the one download of a fresh
/// machine, said on an uncaptured line since it takes a minute.
fn install(dir: &Path, requirements: &Path) -> Result<(), String> {
    crate::notice(&format!(
        "provisioning moto for the AWS tests in {} from {} (first run only, about a minute)",
        dir.display(),
        requirements.display()
    ));
    run(
        Command::new("python3").args(["-m", "venv"]).arg(dir),
        "python3 -m venv",
    )?;
    run(
        Command::new(dir.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(requirements),
        "pip install -r infra/moto-requirements.txt",
    )
    .inspect_err(|_| {
        let _ = std::fs::remove_dir_all(dir);
    })
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default();
        Err(format!("{what} failed: {}", last.trim()))
    }
}

/// Whether `python` imports moto and boto3.
fn imports_moto(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import moto, boto3"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn the_pins_name_the_environment() {
        let pins = requirements("# a comment\nmoto[server]==5.2.1\n\nboto3==1.43.11  # pinned\n");
        assert_eq!(pins, ["moto[server]==5.2.1", "boto3==1.43.11"]);
        assert_eq!(
            environment_name(&pins),
            "python-moto-server-5.2.1_boto3-1.43.11"
        );
    }

    #[test]
    fn the_repository_pins_moto_and_boto3_exactly() {
        let text = std::fs::read_to_string(requirements_file()).unwrap();
        let pins = requirements(&text);
        assert!(
            pins.iter().any(|p| p.starts_with("moto[server]==")),
            "{pins:?}"
        );
        assert!(pins.iter().any(|p| p.starts_with("boto3==")), "{pins:?}");
        assert!(
            pins.iter().all(|p| p.contains("==")),
            "every pin exact: {pins:?}"
        );
    }

    #[test]
    fn parallel_provisioners_make_the_environment_once() {
        let cache = crate::TempDir::new("python-provision");
        let dir = cache.path().join("python-moto-1.2.3");
        let made = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (dir, made) = (dir.clone(), Arc::clone(&made));
                std::thread::spawn(move || {
                    provisioned(&dir, |dir| {
                        made.fetch_add(1, Ordering::SeqCst);
                        // Slow enough that the others reach the lock while this one holds it.
                        std::thread::sleep(std::time::Duration::from_millis(200));
                        std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())
                    })
                })
            })
            .collect();
        for worker in workers {
            let python = worker.join().unwrap().unwrap();
            assert_eq!(python, dir.join("bin/python"));
        }
        assert_eq!(
            made.load(Ordering::SeqCst),
            1,
            "made once, reused by the others"
        );
        assert!(dir.join(COMPLETE_MARKER).exists());
        assert!(
            cache.path().join("python-moto-1.2.3.lock").exists(),
            "the lock is named after the environment"
        );
    }

    #[test]
    fn a_failed_or_interrupted_make_is_made_again() {
        let cache = crate::TempDir::new("python-provision-retry");
        let dir = cache.path().join("env");
        let failed = provisioned(&dir, |dir| {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            Err("no route to PyPI".to_owned())
        });
        assert_eq!(failed, Err("no route to PyPI".to_owned()));
        assert!(
            !dir.join(COMPLETE_MARKER).exists(),
            "a failure is not complete"
        );
        let again = provisioned(&dir, |dir| {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())
        });
        assert_eq!(again, Ok(dir.join("bin/python")));
    }

    #[cfg(unix)]
    #[test]
    fn the_cache_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt as _;
        let cache = crate::TempDir::new("python-provision-mode");
        let dir = cache.path().join("nested/cache/env");
        provisioned(&dir, |dir| {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())
        })
        .unwrap();
        let mode = std::fs::metadata(cache.path().join("nested/cache"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
}
