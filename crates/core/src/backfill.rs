//! A backfill request (docs/api.md, "Backfill"): which ranges of a job's fire times run now, in
//! which order, which of their times (the mode) and under which overlap policy. Read here, with
//! every rule that does not need the store; the planner ([`crate::plan::plan_backfills`]) turns
//! what is recorded into runs, window by window.

use chrono::{DateTime, Utc};
use serde_json::Value;

use std::collections::HashMap;

use crate::job::{quote, Backfill, BackfillMode, FieldError, Job, OverlapPolicy};
use crate::plan::{with_planned, RunsOfTime, MAX_BACKFILL_FIRES};
use crate::spec::Schedule;

/// The most ranges one request holds (a job keeps at most this many backfills waiting).
pub const MAX_BACKFILL_RANGES: usize = 100;

/// The fields of a request.
const FIELDS: &str = "startTime, endTime, ranges, overlap, mode, reverse, dryRun";

/// One range of fire times, inclusive at both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackfillRange {
    /// The first time.
    pub start: DateTime<Utc>,
    /// The last time.
    pub end: DateTime<Utc>,
}

/// A backfill request, read and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackfillRequest {
    /// The ranges, oldest first; they do not overlap.
    pub ranges: Vec<BackfillRange>,
    /// Whether they came as `ranges` (errors about the whole then name it) rather than as
    /// `startTime` and `endTime`.
    pub listed: bool,
    /// The overlap policy of the runs; `None` runs them `AllowAll`.
    pub overlap: Option<OverlapPolicy>,
    /// Which times run.
    pub mode: BackfillMode,
    /// Newest first.
    pub reverse: bool,
    /// Only say which times would run.
    pub dry_run: bool,
    /// The request as the caller sent it, which the audit trail records.
    pub as_sent: Value,
}

impl BackfillRequest {
    /// Reads `{"startTime", "endTime", "overlap", "mode", "reverse", "dryRun"}`, or `ranges:
    /// [{"startTime", "endTime"}, …]` in place of the two times (Temporal's several ranges in one
    /// request). Errors name the field.
    pub fn parse(body: &Value) -> Result<BackfillRequest, FieldError> {
        let Value::Object(obj) = body else {
            return Err(FieldError::new(
                "body",
                format!("expected an object of {FIELDS}"),
            ));
        };
        if let Some(key) = obj
            .keys()
            .find(|k| !FIELDS.split(", ").any(|f| f == k.as_str()))
        {
            return Err(FieldError::new(
                key,
                format!("unknown field; expected {FIELDS}"),
            ));
        }
        let present = |key: &str| obj.get(key).is_some_and(|v| !v.is_null());
        let (ranges, listed) = if present("ranges") {
            if present("startTime") || present("endTime") {
                return Err(FieldError::new(
                    "ranges",
                    "give either startTime and endTime, or ranges, not both",
                ));
            }
            (parse_ranges(&obj["ranges"])?, true)
        } else {
            (vec![parse_range(body, "")?], false)
        };
        let overlap = match obj.get("overlap") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_str().and_then(OverlapPolicy::parse).ok_or_else(|| {
                FieldError::new(
                    "overlap",
                    format!("expected Skip, BufferOne, BufferAll, CancelOther, TerminateOther or AllowAll, got {v}"),
                )
            })?),
        };
        let mode = match obj.get("mode") {
            None | Some(Value::Null) => BackfillMode::default(),
            Some(v) => v.as_str().and_then(BackfillMode::parse).ok_or_else(|| {
                FieldError::new("mode", format!("expected all, missing or failed, got {v}"))
            })?,
        };
        let flag = |key: &str| match obj.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(FieldError::new(
                key,
                format!("expected true or false, got {v}"),
            )),
        };
        Ok(BackfillRequest {
            ranges,
            listed,
            overlap,
            mode,
            reverse: flag("reverse")?,
            dry_run: flag("dryRun")?,
            as_sent: body.clone(),
        })
    }

    /// The fire times of `schedule` the ranges hold, in the order they run: oldest first, or
    /// newest first when `reverse`. More than [`MAX_BACKFILL_FIRES`] in all is an error naming
    /// `endTime` (or `ranges`).
    pub fn times(&self, schedule: &Schedule) -> Result<Vec<DateTime<Utc>>, FieldError> {
        let mut times = Vec::new();
        for range in &self.ranges {
            let left = MAX_BACKFILL_FIRES - times.len();
            let found: Vec<DateTime<Utc>> = schedule
                .preview(range.start - chrono::Duration::seconds(1), left + 1)
                .into_iter()
                // Fires are whole seconds: a second before a sub-second start is not in range.
                .skip_while(|t| *t < range.start)
                .take_while(|t| *t <= range.end)
                .collect();
            if found.len() > left {
                return Err(if self.listed {
                    FieldError::new(
                        "ranges",
                        format!("the ranges hold more than {MAX_BACKFILL_FIRES} fire times in all; split the request"),
                    )
                } else {
                    FieldError::new(
                        "endTime",
                        format!(
                            "the range holds more than {MAX_BACKFILL_FIRES} fire times; split it"
                        ),
                    )
                });
            }
            times.extend(found);
        }
        if self.reverse {
            times.reverse();
        }
        Ok(times)
    }

    /// Of `times` (in the order they run), those this request's mode runs, given what ran of each
    /// (`runs`, as the store holds it; a time it does not hold never ran) and what `job` has
    /// planned. Mode `all` runs every one.
    pub fn select(
        &self,
        job: &Job,
        times: Vec<DateTime<Utc>>,
        runs: &HashMap<DateTime<Utc>, RunsOfTime>,
    ) -> Vec<DateTime<Utc>> {
        if self.mode == BackfillMode::All {
            return times;
        }
        times
            .into_iter()
            .filter(|t| {
                let stored = runs.get(t).copied().unwrap_or_default();
                let of_time = with_planned(&job.state, job.job_id(), *t, stored);
                of_time.selected_by(self.mode)
            })
            .collect()
    }

    /// The backfills to record for this request, made at `requested_at`: one per range, in the
    /// order the planner takes them (newest range first when `reverse`).
    pub fn backfills(&self, requested_at: DateTime<Utc>) -> Vec<Backfill> {
        let mut backfills: Vec<Backfill> = self
            .ranges
            .iter()
            .map(|range| Backfill {
                start_time: range.start,
                end_time: range.end,
                overlap: self.overlap,
                requested_at,
                planned_through: None,
                mode: self.mode,
                reverse: self.reverse,
            })
            .collect();
        if self.reverse {
            backfills.reverse();
        }
        backfills
    }
}

fn parse_ranges(value: &Value) -> Result<Vec<BackfillRange>, FieldError> {
    let Value::Array(items) = value else {
        return Err(FieldError::new(
            "ranges",
            "expected a list of {\"startTime\", \"endTime\"}",
        ));
    };
    if items.is_empty() || items.len() > MAX_BACKFILL_RANGES {
        return Err(FieldError::new(
            "ranges",
            format!(
                "has {} ranges; give 1 to {MAX_BACKFILL_RANGES}",
                items.len()
            ),
        ));
    }
    let mut ranges = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("ranges[{i}]");
        let Value::Object(obj) = item else {
            return Err(FieldError::new(
                path,
                "expected {\"startTime\", \"endTime\"}",
            ));
        };
        if let Some(key) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "startTime" | "endTime"))
        {
            return Err(FieldError::new(
                format!("{path}.{key}"),
                "unknown field; expected startTime, endTime",
            ));
        }
        ranges.push((i, parse_range(item, &path)?));
    }
    // Times in two ranges would run twice under one request's ids: refused.
    ranges.sort_by_key(|(_, range)| range.start);
    for pair in ranges.windows(2) {
        let ((i, earlier), (j, later)) = (&pair[0], &pair[1]);
        if later.start <= earlier.end {
            let (first, second) = if i < j { (i, j) } else { (j, i) };
            return Err(FieldError::new(
                format!("ranges[{second}]"),
                format!("overlaps ranges[{first}]; give ranges that do not overlap"),
            ));
        }
    }
    Ok(ranges.into_iter().map(|(_, range)| range).collect())
}

/// `startTime` and `endTime` of `value`; `path` is where it is (empty at the top).
fn parse_range(value: &Value, path: &str) -> Result<BackfillRange, FieldError> {
    let field = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    let time = |key: &str| {
        let text = value
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| FieldError::new(field(key), "required: an RFC 3339 time"))?;
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                FieldError::new(
                    field(key),
                    format!(
                        "expected an RFC 3339 time like \"2024-01-01T00:00:00Z\", got {}",
                        quote(text)
                    ),
                )
            })
    };
    let start = time("startTime")?;
    let end = time("endTime")?;
    if end < start {
        return Err(FieldError::new(field("endTime"), "is before startTime"));
    }
    Ok(BackfillRange { start, end })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn one_range_or_several() {
        let one = BackfillRequest::parse(&json!({
            "startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T02:00:00Z",
            "overlap": "bufferall", "mode": "Failed", "reverse": true, "dryRun": true,
        }))
        .unwrap();
        assert_eq!(
            one.ranges,
            [BackfillRange {
                start: at("2024-06-01T00:00:00Z"),
                end: at("2024-06-01T02:00:00Z")
            }]
        );
        assert_eq!(one.overlap, Some(OverlapPolicy::BufferAll));
        assert_eq!(one.mode, BackfillMode::Failed);
        assert!(one.reverse && one.dry_run && !one.listed);

        let hourly = Schedule::from_json(&json!({"cron": ["0 * * * *"]})).unwrap();
        let two = BackfillRequest::parse(&json!({"ranges": [
            {"startTime": "2024-06-02T00:00:00Z", "endTime": "2024-06-02T01:00:00Z"},
            {"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T00:30:00Z"},
        ], "reverse": true}))
        .unwrap();
        assert_eq!(two.ranges[0].start, at("2024-06-01T00:00:00Z"), "sorted");
        assert_eq!(
            two.times(&hourly).unwrap(),
            [
                at("2024-06-02T01:00:00Z"),
                at("2024-06-02T00:00:00Z"),
                at("2024-06-01T00:00:00Z")
            ]
        );
        let recorded = two.backfills(at("2024-06-03T00:00:00Z"));
        assert_eq!(
            recorded[0].start_time,
            at("2024-06-02T00:00:00Z"),
            "newest range first"
        );
        assert!(recorded
            .iter()
            .all(|b| b.reverse && b.mode == BackfillMode::All));
    }

    #[test]
    fn every_refusal_names_its_field() {
        let range = json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T01:00:00Z"});
        for (body, path) in [
            (json!([1]), "body"),
            (
                json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "x"}),
                "endTime",
            ),
            (json!({"endTime": "2024-06-01T00:00:00Z"}), "startTime"),
            (
                json!({"startTime": "2024-06-01T01:00:00Z", "endTime": "2024-06-01T00:00:00Z"}),
                "endTime",
            ),
            (
                json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T01:00:00Z", "mode": "some"}),
                "mode",
            ),
            (
                json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T01:00:00Z", "reverse": "yes"}),
                "reverse",
            ),
            (
                json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T01:00:00Z", "dryRun": 1}),
                "dryRun",
            ),
            (
                json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T01:00:00Z", "extra": 1}),
                "extra",
            ),
            (
                json!({"startTime": "2024-06-01T00:00:00Z", "ranges": [range.clone()]}),
                "ranges",
            ),
            (json!({"ranges": []}), "ranges"),
            (json!({"ranges": "2024"}), "ranges"),
            (json!({"ranges": [range.clone(), 5]}), "ranges[1]"),
            (
                json!({"ranges": [{"startTime": "2024-06-01T00:00:00Z"}]}),
                "ranges[0].endTime",
            ),
            (
                json!({"ranges": [{"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T00:00:00Z", "step": 1}]}),
                "ranges[0].step",
            ),
            (
                json!({"ranges": [range.clone(), {"startTime": "2024-06-01T00:30:00Z", "endTime": "2024-06-01T03:00:00Z"}]}),
                "ranges[1]",
            ),
            (
                json!({"ranges": [{"startTime": "2024-06-01T00:30:00Z", "endTime": "2024-06-01T03:00:00Z"}, range]}),
                "ranges[1]",
            ),
        ] {
            let e = BackfillRequest::parse(&body).unwrap_err();
            assert_eq!(e.path, path, "{body}: {e}");
        }
        let every_second = Schedule::from_json(&json!({"intervals": ["1s"]})).unwrap();
        let long = BackfillRequest::parse(
            &json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T03:00:00Z"}),
        )
        .unwrap();
        assert_eq!(long.times(&every_second).unwrap_err().path, "endTime");
        let listed = BackfillRequest::parse(&json!({"ranges": [
            {"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T02:00:00Z"},
            {"startTime": "2024-06-02T00:00:00Z", "endTime": "2024-06-02T02:00:00Z"},
        ]}))
        .unwrap();
        assert_eq!(listed.times(&every_second).unwrap_err().path, "ranges");
        let exactly = BackfillRequest::parse(
            &json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-01T02:46:39Z"}),
        )
        .unwrap();
        assert_eq!(
            exactly.times(&every_second).unwrap().len(),
            MAX_BACKFILL_FIRES
        );
    }
}
