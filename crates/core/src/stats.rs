//! Per-job statistics kept as rollups: what `GET /jobs/{jobId}/stats` and `GET /stats` report.
//!
//! Every run adds its outcome to an hourly bucket of its job with the write that records its end
//! (and a fire that did not run — skipped by overlap, dropped from a full buffer, missed the
//! catch-up window — with the write that records that), so reading a window's figures never
//! reads executions. A bucket is a flat map of named counters ([`Rollup::to_counters`]) because
//! every store can add to a named counter in place: SQLite inside its one writer, DynamoDB with
//! `ADD` in the same transaction as the run's final update. Two runs ending together add to the
//! same bucket without either reading it, so no count is lost to a race.
//!
//! Durations and fire lags are kept in [`LogHistogram`]s: log-scaled buckets whose counts add,
//! so the hours of a window and the jobs of `GET /stats` merge by adding, and a quantile read
//! from any merge is within [`RELATIVE_ERROR`] of the true value (DDSketch's scheme).
//!
//! A bucket is the hour in which the outcome was recorded (when the run ended; when the fire was
//! found skipped, dropped or missed). Inside it, `m.{minute}` and `mf.{minute}` count runs ended
//! and failed per minute, for the one-hour window's per-minute series.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound, Timelike, Utc};

use crate::execution::{Execution, ExecutionState};
use crate::job::FieldError;

/// The growth factor between histogram buckets.
const GAMMA: f64 = 1.1;

/// The largest relative error of a quantile read from a [`LogHistogram`]: (γ − 1) / (γ + 1).
pub const RELATIVE_ERROR: f64 = (GAMMA - 1.0) / (GAMMA + 1.0);

/// The largest bucket index: values past γ^4000 ms (never: 2^64 ms is γ^465) share it.
const MAX_INDEX: u32 = 4000;

/// A mergeable histogram of non-negative millisecond values in log-scaled buckets.
///
/// Index 0 holds zero; index `k + 1` holds the values in (γ^(k−1), γ^k]. Merging adds counts per
/// index, so it is associative and commutative, and merging then reading a quantile is the same
/// as reading it from one histogram of all the values. The counts are a dense vector up to the
/// highest index used (at most 467 for any `u64`): a 30-day read merges 720 of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogHistogram {
    /// Counts by index; never ends in a zero, so equal histograms are equal vectors.
    counts: Vec<u64>,
}

impl LogHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LogHistogram::default()
    }

    /// The bucket index of `value_ms`.
    pub fn index_of(value_ms: u64) -> u32 {
        if value_ms == 0 {
            return 0;
        }
        let k = ((value_ms as f64).ln() / GAMMA.ln()).ceil().max(0.0);
        (k as u32).saturating_add(1).min(MAX_INDEX)
    }

    /// The value a bucket stands for: the point whose relative distance to both of its ends is
    /// [`RELATIVE_ERROR`].
    pub fn value_of(index: u32) -> f64 {
        if index == 0 {
            return 0.0;
        }
        let upper = GAMMA.powi(index as i32 - 1);
        2.0 * upper / (GAMMA + 1.0)
    }

    /// Adds one value.
    pub fn record(&mut self, value_ms: u64) {
        self.add_at(Self::index_of(value_ms), 1);
    }

    /// Adds `count` to bucket `index` (reading counters back).
    pub fn add_at(&mut self, index: u32, count: u64) {
        if count == 0 {
            return;
        }
        let i = index.min(MAX_INDEX) as usize;
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] = self.counts[i].saturating_add(count);
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &LogHistogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine = mine.saturating_add(*theirs);
        }
    }

    /// How many values it holds.
    pub fn count(&self) -> u64 {
        self.counts.iter().fold(0, |a, c| a.saturating_add(*c))
    }

    /// The buckets that hold values: index and count, lowest first.
    pub fn buckets(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i as u32, *c))
    }

    /// The `q`-quantile (0 ≤ q ≤ 1; the value of rank ⌈q·n⌉, at least the first), within
    /// [`RELATIVE_ERROR`] of the true one; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for (index, count) in self.buckets() {
            seen = seen.saturating_add(count);
            if seen >= rank {
                return Some(Self::value_of(index));
            }
        }
        self.counts
            .len()
            .checked_sub(1)
            .map(|i| Self::value_of(i as u32))
    }
}

/// Why a fire did not run, as the rollups count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotRun {
    /// Skipped by the overlap policy (`Skip`, or `maxConcurrency` reached).
    Skipped,
    /// Missed the catch-up window.
    Missed,
    /// Dropped from a full buffer.
    Dropped,
}

/// One hour of one job's outcomes (or, merged, of a window or of many jobs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rollup {
    /// Runs ended, by final state name (`Succeeded`, `Terminated`, `Cancelled`, `Skipped`).
    pub states: BTreeMap<String, u64>,
    /// Attempts after the first, over the runs ended.
    pub retries: u64,
    /// Fires skipped by the overlap policy.
    pub skipped: u64,
    /// Fires that missed the catch-up window.
    pub missed: u64,
    /// Fires dropped from a full buffer.
    pub dropped: u64,
    /// Durations (first start to end) of the runs that started, in milliseconds.
    pub duration: LogHistogram,
    /// Fire lags (first start − due time, jitter included) of the runs that started.
    pub lag: LogHistogram,
    /// Runs ended per minute of the hour (0–59).
    pub minutes: BTreeMap<u32, u64>,
    /// Runs that ended `Terminated` per minute of the hour.
    pub failed_minutes: BTreeMap<u32, u64>,
}

fn add(map: &mut BTreeMap<String, u64>, key: String, n: u64) {
    if n > 0 {
        let at = map.entry(key).or_insert(0);
        *at = at.saturating_add(n);
    }
}

fn add_u32(map: &mut BTreeMap<u32, u64>, key: u32, n: u64) {
    if n > 0 {
        let at = map.entry(key).or_insert(0);
        *at = at.saturating_add(n);
    }
}

impl Rollup {
    /// What one finished run adds to its bucket, and the bucket's hour (the hour it ended in);
    /// `None` when the run has not ended. `not_run` says why a fire ended `Skipped` without
    /// running, when it did.
    pub fn of_run(
        execution: &Execution,
        not_run: Option<NotRun>,
    ) -> Option<(DateTime<Utc>, Rollup)> {
        let state = execution.state();
        if !state.is_final() {
            return None;
        }
        let ended = execution.finished_at()?;
        let mut rollup = Rollup::default();
        add(&mut rollup.states, state.name().to_owned(), 1);
        rollup.retries = u64::from(execution.attempts().saturating_sub(1));
        // A run admitted ahead of its fire time enters Processing early and makes its call at
        // that time: both figures count from the call when it is known. A start before the due
        // time (a trigger's or backfill's run reports an earlier time) is no lag.
        if let Some(started) = execution.run.first_call_at.or(execution.started_at()) {
            rollup.duration.record(millis(ended - started));
            rollup.lag.record(millis(started - execution.due_at()));
        }
        let minute = ended.minute();
        add_u32(&mut rollup.minutes, minute, 1);
        if state == ExecutionState::Terminated {
            add_u32(&mut rollup.failed_minutes, minute, 1);
        }
        if let Some(why) = not_run {
            rollup.add_not_run(why, 1);
        }
        Some((hour_of(ended), rollup))
    }

    /// A bucket holding only `count` fires that did not run for `why`.
    pub fn not_run(why: NotRun, count: u64) -> Rollup {
        let mut rollup = Rollup::default();
        rollup.add_not_run(why, count);
        rollup
    }

    fn add_not_run(&mut self, why: NotRun, count: u64) {
        let at = match why {
            NotRun::Skipped => &mut self.skipped,
            NotRun::Missed => &mut self.missed,
            NotRun::Dropped => &mut self.dropped,
        };
        *at = at.saturating_add(count);
    }

    /// Whether it counts nothing.
    pub fn is_empty(&self) -> bool {
        self.to_counters().is_empty()
    }

    /// Adds every count of `other`: associative and commutative.
    pub fn merge(&mut self, other: &Rollup) {
        for (state, n) in &other.states {
            add(&mut self.states, state.clone(), *n);
        }
        self.retries = self.retries.saturating_add(other.retries);
        self.skipped = self.skipped.saturating_add(other.skipped);
        self.missed = self.missed.saturating_add(other.missed);
        self.dropped = self.dropped.saturating_add(other.dropped);
        self.duration.merge(&other.duration);
        self.lag.merge(&other.lag);
        for (m, n) in &other.minutes {
            add_u32(&mut self.minutes, *m, *n);
        }
        for (m, n) in &other.failed_minutes {
            add_u32(&mut self.failed_minutes, *m, *n);
        }
    }

    /// The bucket as named counters, zeros left out: what a store adds to in place. Names are
    /// short ASCII (`s.Succeeded`, `retries`, `d.42`, `m.7`) so that they are also attribute names.
    pub fn to_counters(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (state, n) in &self.states {
            add(&mut out, format!("s.{state}"), *n);
        }
        add(&mut out, "retries".into(), self.retries);
        add(&mut out, "skipped".into(), self.skipped);
        add(&mut out, "missed".into(), self.missed);
        add(&mut out, "dropped".into(), self.dropped);
        for (i, n) in self.duration.buckets() {
            add(&mut out, format!("d.{i}"), n);
        }
        for (i, n) in self.lag.buckets() {
            add(&mut out, format!("l.{i}"), n);
        }
        for (m, n) in &self.minutes {
            add(&mut out, format!("m.{m}"), *n);
        }
        for (m, n) in &self.failed_minutes {
            add(&mut out, format!("mf.{m}"), *n);
        }
        out
    }

    /// A bucket read back from its counters. A name it does not know (a later build's) is left
    /// out rather than refused, so an older reader still reads what it knows.
    pub fn from_counters(counters: &BTreeMap<String, u64>) -> Rollup {
        let mut rollup = Rollup::default();
        for (name, n) in counters {
            let n = *n;
            let (kind, rest) = name.split_once('.').unwrap_or((name.as_str(), ""));
            let number = rest.parse::<u32>().ok();
            match (kind, number) {
                ("s", _) if !rest.is_empty() => add(&mut rollup.states, rest.to_owned(), n),
                ("retries", _) => rollup.retries = rollup.retries.saturating_add(n),
                ("skipped", _) => rollup.skipped = rollup.skipped.saturating_add(n),
                ("missed", _) => rollup.missed = rollup.missed.saturating_add(n),
                ("dropped", _) => rollup.dropped = rollup.dropped.saturating_add(n),
                ("d", Some(i)) => rollup.duration.add_at(i, n),
                ("l", Some(i)) => rollup.lag.add_at(i, n),
                ("m", Some(m)) if m < 60 => add_u32(&mut rollup.minutes, m, n),
                ("mf", Some(m)) if m < 60 => add_u32(&mut rollup.failed_minutes, m, n),
                _ => {}
            }
        }
        rollup
    }

    /// Runs ended, in any final state.
    pub fn runs(&self) -> u64 {
        self.states.values().fold(0, |a, n| a.saturating_add(*n))
    }

    /// Runs that ended in `state`.
    pub fn runs_in(&self, state: ExecutionState) -> u64 {
        self.states.get(state.name()).copied().unwrap_or(0)
    }

    /// Succeeded over succeeded plus terminated (runs that ran to an end of their own; cancelled
    /// and skipped runs are left out); `None` when there are none.
    pub fn success_rate(&self) -> Option<f64> {
        let (ok, ended) = self.success_counts();
        (ended > 0).then(|| ok as f64 / ended as f64)
    }

    /// The two sides of [`Rollup::success_rate`]: runs that succeeded, and runs that ran to an
    /// end of their own (succeeded or terminated).
    pub fn success_counts(&self) -> (u64, u64) {
        let ok = self.runs_in(ExecutionState::Succeeded);
        let failed = self.runs_in(ExecutionState::Terminated);
        (ok, ok.saturating_add(failed))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.num_milliseconds()).unwrap_or(0)
}

/// The start of the hour `t` is in: a bucket's key.
pub fn hour_of(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::hours(1)).unwrap_or(t)
}

/// The windows of `GET /jobs/{jobId}/stats?window=`, each with the step of its time series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatsWindow {
    /// `1h`: a point per minute.
    Hour,
    /// `24h`: a point per hour.
    Day,
    /// `7d`: a point per hour.
    Week,
    /// `30d`: a point per day.
    Month,
}

impl StatsWindow {
    /// Every window, shortest first.
    pub const ALL: [StatsWindow; 4] = [
        StatsWindow::Hour,
        StatsWindow::Day,
        StatsWindow::Week,
        StatsWindow::Month,
    ];

    /// The longest window: rollups older than this (and the hour it starts in) are never read.
    pub const LONGEST: Duration = Duration::days(30);

    /// The window's name in the API.
    pub fn name(self) -> &'static str {
        match self {
            StatsWindow::Hour => "1h",
            StatsWindow::Day => "24h",
            StatsWindow::Week => "7d",
            StatsWindow::Month => "30d",
        }
    }

    /// The window named `text`; the error names the field `window`.
    pub fn parse(text: &str) -> Result<StatsWindow, FieldError> {
        StatsWindow::ALL
            .into_iter()
            .find(|w| w.name() == text)
            .ok_or_else(|| {
                FieldError::new(
                    "window",
                    format!("must be 1h, 24h, 7d or 30d, not {text:?}"),
                )
            })
    }

    /// How far back it reaches.
    pub fn span(self) -> Duration {
        match self {
            StatsWindow::Hour => Duration::hours(1),
            StatsWindow::Day => Duration::hours(24),
            StatsWindow::Week => Duration::days(7),
            StatsWindow::Month => Duration::days(30),
        }
    }

    /// The step of its time series.
    pub fn step(self) -> Duration {
        match self {
            StatsWindow::Hour => Duration::minutes(1),
            StatsWindow::Day | StatsWindow::Week => Duration::hours(1),
            StatsWindow::Month => Duration::days(1),
        }
    }

    /// The hour buckets it reads at `now`: from the hour `now − span` is in to the hour of `now`,
    /// both included. The figures therefore cover up to an hour more than the span.
    pub fn hours(self, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        (hour_of(now - self.span()), hour_of(now))
    }
}

/// One point of a window's time series.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoint {
    /// The start of the point's minute, hour or day (UTC).
    pub at: DateTime<Utc>,
    /// Runs ended in it.
    pub runs: u64,
    /// Runs that ended `Terminated` in it.
    pub failed: u64,
    /// The 95th percentile duration of its runs (hour and day points only; `None` per minute,
    /// since durations are kept per hour, and when no run started).
    pub duration_p95_ms: Option<f64>,
}

/// The time series of `window` at `now` from a job's (or many jobs') hourly buckets: every step
/// from the one `now − span` falls in to the one of `now`, empty ones included.
pub fn series(
    window: StatsWindow,
    now: DateTime<Utc>,
    buckets: &[(DateTime<Utc>, Rollup)],
) -> Vec<SeriesPoint> {
    let step = window.step();
    let first = (now - window.span())
        .duration_trunc(step)
        .unwrap_or(now - window.span());
    let last = now.duration_trunc(step).unwrap_or(now);
    let mut points: BTreeMap<DateTime<Utc>, (u64, u64, Rollup)> = BTreeMap::new();
    let mut at = first;
    while at <= last {
        points.insert(at, (0, 0, Rollup::default()));
        at += step;
    }
    for (hour, rollup) in buckets {
        if window == StatsWindow::Hour {
            for (m, n) in &rollup.minutes {
                let minute = *hour + Duration::minutes(i64::from(*m));
                if let Some(point) = points.get_mut(&minute) {
                    point.0 = point.0.saturating_add(*n);
                    let failed = rollup.failed_minutes.get(m).copied().unwrap_or(0);
                    point.1 = point.1.saturating_add(failed);
                }
            }
            continue;
        }
        let key = hour.duration_trunc(step).unwrap_or(*hour);
        if let Some(point) = points.get_mut(&key) {
            point.0 = point.0.saturating_add(rollup.runs());
            point.1 = point
                .1
                .saturating_add(rollup.runs_in(ExecutionState::Terminated));
            point.2.duration.merge(&rollup.duration);
        }
    }
    points
        .into_iter()
        .map(|(at, (runs, failed, merged))| SeriesPoint {
            at,
            runs,
            failed,
            duration_p95_ms: merged.duration.quantile(0.95),
        })
        .collect()
}

/// Three quantiles of a histogram, in milliseconds; `None` when it holds nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Quantiles {
    /// The median.
    pub p50: Option<f64>,
    /// The 95th percentile.
    pub p95: Option<f64>,
    /// The 99th percentile.
    pub p99: Option<f64>,
}

impl Quantiles {
    /// The quantiles of `histogram`.
    pub fn of(histogram: &LogHistogram) -> Quantiles {
        Quantiles {
            p50: histogram.quantile(0.50),
            p95: histogram.quantile(0.95),
            p99: histogram.quantile(0.99),
        }
    }
}

/// The figures the API reports of a rollup (one job's window, or all jobs').
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Runs ended, in any final state.
    pub runs: u64,
    /// Runs ended, by final state.
    pub by_state: BTreeMap<String, u64>,
    /// [`Rollup::success_rate`].
    pub success_rate: Option<f64>,
    /// Durations of the runs that started.
    pub duration: Quantiles,
    /// Fire lags of the runs that started.
    pub lag: Quantiles,
    /// Attempts after the first.
    pub retries: u64,
    /// Fires skipped by the overlap policy.
    pub skipped: u64,
    /// Fires that missed the catch-up window.
    pub missed: u64,
    /// Fires dropped from a full buffer.
    pub dropped: u64,
}

impl Figures {
    /// The figures of `rollup`.
    pub fn of(rollup: &Rollup) -> Figures {
        Figures {
            runs: rollup.runs(),
            by_state: rollup.states.clone(),
            success_rate: rollup.success_rate(),
            duration: Quantiles::of(&rollup.duration),
            lag: Quantiles::of(&rollup.lag),
            retries: rollup.retries,
            skipped: rollup.skipped,
            missed: rollup.missed,
            dropped: rollup.dropped,
        }
    }

    /// Runs that ended `Terminated`.
    pub fn failed(&self) -> u64 {
        self.by_state
            .get(ExecutionState::Terminated.name())
            .copied()
            .unwrap_or(0)
    }
}

/// The jobs to name in `GET /stats`: the `n` with the most failed runs (then the lowest success
/// rate, then by id), only those with a failure; and the `n` slowest by p95 duration (then by id).
pub fn top_jobs(figures: &BTreeMap<String, Figures>, n: usize) -> (Vec<String>, Vec<String>) {
    let mut failing: Vec<(&String, &Figures)> =
        figures.iter().filter(|(_, f)| f.failed() > 0).collect();
    failing.sort_by(|(a, x), (b, y)| {
        y.failed()
            .cmp(&x.failed())
            .then_with(|| {
                let rate = |f: &Figures| f.success_rate.unwrap_or(1.0);
                rate(x).total_cmp(&rate(y))
            })
            .then_with(|| a.cmp(b))
    });
    let mut slowest: Vec<(&String, f64)> = figures
        .iter()
        .filter_map(|(id, f)| f.duration.p95.map(|p| (id, p)))
        .collect();
    slowest.sort_by(|(a, x), (b, y)| y.total_cmp(x).then_with(|| a.cmp(b)));
    (
        failing
            .into_iter()
            .take(n)
            .map(|(id, _)| id.clone())
            .collect(),
        slowest
            .into_iter()
            .take(n)
            .map(|(id, _)| id.clone())
            .collect(),
    )
}

/// The buckets merged into one.
pub fn merge_all<'a>(buckets: impl IntoIterator<Item = &'a Rollup>) -> Rollup {
    let mut total = Rollup::default();
    for rollup in buckets {
        total.merge(rollup);
    }
    total
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, h, m, 0).unwrap()
    }

    #[test]
    fn counters_round_trip() {
        let mut r = Rollup::default();
        r.states.insert("Succeeded".into(), 3);
        r.retries = 2;
        r.missed = 4;
        r.duration.record(1500);
        r.lag.record(0);
        r.minutes.insert(59, 3);
        r.failed_minutes.insert(1, 1);
        assert_eq!(Rollup::from_counters(&r.to_counters()), r);
        assert!(Rollup::default().is_empty());
    }

    #[test]
    fn window_names_parse_and_others_name_the_field() {
        for w in StatsWindow::ALL {
            assert_eq!(StatsWindow::parse(w.name()).unwrap(), w);
        }
        let err = StatsWindow::parse("2h").unwrap_err();
        assert!(err.to_string().contains("window"), "{err}");
    }

    #[test]
    fn hour_series_reads_minutes_and_day_series_reads_hours() {
        let mut r = Rollup::default();
        r.states.insert("Succeeded".into(), 2);
        r.states.insert("Terminated".into(), 1);
        r.minutes.insert(10, 2);
        r.minutes.insert(50, 1);
        r.failed_minutes.insert(50, 1);
        r.duration.record(100);
        let buckets = vec![(at(10, 0), r)];
        let minutes = series(StatsWindow::Hour, at(11, 15), &buckets);
        assert_eq!(minutes.len(), 61);
        let fifty = minutes.iter().find(|p| p.at == at(10, 50)).unwrap();
        assert_eq!((fifty.runs, fifty.failed), (1, 1));
        // Minute 10:10 is before the window (10:15 … 11:15).
        assert_eq!(minutes.iter().map(|p| p.runs).sum::<u64>(), 1);
        let hours = series(StatsWindow::Day, at(11, 5), &buckets);
        assert_eq!(hours.len(), 25);
        let ten = hours.iter().find(|p| p.at == at(10, 0)).unwrap();
        assert_eq!((ten.runs, ten.failed), (3, 1));
        assert!(ten.duration_p95_ms.is_some());
    }

    #[test]
    fn top_jobs_rank_by_failures_and_by_p95() {
        let mut figures = BTreeMap::new();
        for (id, failed, ok, ms) in [
            ("a", 1, 9, 10),
            ("b", 3, 0, 5),
            ("c", 0, 5, 900),
            ("d", 1, 1, 50),
        ] {
            let mut r = Rollup::default();
            r.states.insert("Terminated".into(), failed);
            r.states.insert("Succeeded".into(), ok);
            r.duration.record(ms);
            figures.insert(id.to_owned(), Figures::of(&r));
        }
        let (failing, slowest) = top_jobs(&figures, 2);
        // b fails most; a and d fail once each, d at the lower success rate.
        assert_eq!(failing, vec!["b", "d"]);
        assert_eq!(slowest, vec!["c", "d"]);
    }

    #[test]
    fn quantiles_of_known_values() {
        let mut h = LogHistogram::new();
        for v in 1..=100u64 {
            h.record(v * 10);
        }
        let p50 = h.quantile(0.5).unwrap();
        assert!(
            (p50 - 500.0).abs() <= 500.0 * RELATIVE_ERROR + 1e-9,
            "{p50}"
        );
        assert_eq!(LogHistogram::new().quantile(0.5), None);
        let mut zero = LogHistogram::new();
        zero.record(0);
        assert_eq!(zero.quantile(0.99), Some(0.0));
    }
}
