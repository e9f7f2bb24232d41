//! Job definitions (the body of `POST /jobs/{id}`), as JSON text, through `JobDefinition::parse`:
//! no panic; whatever parses gives its warnings, survives the store's round trip
//! (`Job::to_document` / `Job::from_document`) unchanged, and its schedule, if any, previews within
//! bounds (`check_schedule`).
#![no_main]

use chrono::DateTime;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sundial_core::job::{Job, JobDefinition, JobId, When};
use sundial_fuzz::{check_schedule, created_for, rfc};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // The path's id: the body's own `jobId` when it is a valid id, so that bodies get past the
    // id check; otherwise a fixed one (and a body naming another id is refused).
    let job_id = body
        .get("jobId")
        .and_then(Value::as_str)
        .and_then(|s| JobId::parse(s).ok())
        .or_else(|| JobId::parse("fuzz-job").ok());
    let Some(job_id) = job_id else {
        panic!("\"fuzz-job\" is not a valid job id");
    };
    let created = created_for(data);
    let Ok(def) = JobDefinition::parse(&job_id, &body, created) else {
        return;
    };
    let what = || format!("created {}, body {body}", rfc(created));
    let _ = def.warnings(created);
    if let When::Scheduled(schedule) = def.when() {
        let just_before = DateTime::from_timestamp(created.timestamp() - 1, 0).unwrap_or(created);
        check_schedule(schedule, just_before, true, &what);
    }
    let again = JobDefinition::parse(&job_id, def.as_written(), created);
    assert_eq!(
        again.as_ref(),
        Ok(&def),
        "parsing as_written() differs; {}",
        what()
    );
    let job = Job::new(def);
    let doc: Value = serde_json::from_str(&job.to_document().to_string())
        .unwrap_or_else(|e| panic!("the stored document is not JSON: {e}; {}", what()));
    let back = Job::from_document(job.job_id(), &doc, job.created_at, job.updated_at);
    assert_eq!(
        back.as_ref().ok(),
        Some(&job),
        "store round trip; {}",
        what()
    );
});
