//! Temporary directories for tests that need real files (SQLite databases, a server's data
//! directory and logs).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh directory under the system temp dir, removed with everything in it on drop, so a
/// failing test leaves nothing behind either.
///
/// Its name holds the tag, the process id, the time and a counter: tests running in parallel, in
/// one process or several, never share one.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `sundial-<tag>-<pid>-<nanos>-<n>` under [`std::env::temp_dir`].
    ///
    /// # Panics
    /// When the directory cannot be created: the test cannot run without it.
    #[allow(clippy::panic)]
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("sundial-{tag}-{}-{nanos}-{n}", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&path) {
            panic!("creating the test directory {}: {e}", path.display());
        }
        TempDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name` inside the directory.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_dir_is_fresh_and_removed_on_drop() {
        let (first, second) = (TempDir::new("kit"), TempDir::new("kit"));
        assert_ne!(first.path(), second.path());
        assert!(first.path().is_dir());
        std::fs::create_dir_all(first.join("a/b")).unwrap();
        std::fs::write(first.join("a/b/file"), "x").unwrap();
        let path = first.path().to_path_buf();
        drop(first);
        assert!(!path.exists());
        assert!(second.path().is_dir());
    }
}
