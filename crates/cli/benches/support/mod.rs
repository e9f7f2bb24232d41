//! What the cli benches share: their settings from the environment, percentiles, and a process's
//! memory from `/proc`.
#![allow(dead_code)]

/// `name` from the environment as a number, or `default`.
pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The `p`th percentile (nearest rank) of `sorted`; NaN when it is empty.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A field of `/proc/<pid>/status` in kB (`VmRSS:`, `VmHWM:`, `RssAnon:`, `Threads:` as a count),
/// `pid` `None` for this process; 0 when unreadable.
pub(crate) fn status_kb(pid: Option<u32>, field: &str) -> u64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// kB as MB.
pub(crate) fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}
