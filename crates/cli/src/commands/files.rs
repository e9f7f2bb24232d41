//! Schedules kept in git: `sundial export` writes jobs as files without state, `sundial apply`
//! merges a set of job files into the server (`POST /apply`), `sundial diff` says whether they
//! differ. The merge and the prune are the server's; this reads files and shows answers.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::definition::{read_document, READ_ONLY_FIELDS};
use super::{pages, Context};
use crate::cli::{ApplyArgs, DiffArgs, ExportArgs, FilesArgs};
use crate::client::Request;
use crate::error::{Class, CliError};
use crate::output::{views, Format};

/// One job read from the files, with where it came from.
struct FileJob {
    file: PathBuf,
    definition: Value,
}

/// `sundial export`: the jobs the filters select, as a YAML stream (one document per job) or,
/// with `-o json`, a JSON array; without state (`state`, `pausedNotes`, `pausedUntil`,
/// `createdAt`, `updatedAt`, `active`).
pub(crate) async fn export(args: ExportArgs, context: &Context) -> Result<(), CliError> {
    let query = args.labels.into_iter().map(|l| ("label", l)).collect();
    let answer = pages(context, &["jobs"], query, "jobs", true).await?;
    let jobs: Vec<Value> = answer["jobs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(without_state)
        .collect();
    let text = match context.format {
        Format::Json => crate::output::data(Format::Json, &Value::Array(jobs))?,
        Format::Yaml | Format::Table => yaml_stream(&jobs)?,
    };
    super::out(&text);
    Ok(())
}

/// A read job as a file holds it: its definition only.
fn without_state(job: Value) -> Value {
    match job {
        Value::Object(mut map) => {
            for key in READ_ONLY_FIELDS.iter().chain(&["active"]) {
                map.remove(*key);
            }
            Value::Object(map)
        }
        other => other,
    }
}

fn yaml_stream(jobs: &[Value]) -> Result<String, CliError> {
    let mut text = String::new();
    for job in jobs {
        text.push_str("---\n");
        text.push_str(
            &serde_yaml_ng::to_string(job)
                .map_err(|e| CliError::new(Class::Server, format!("writing YAML: {e}")))?,
        );
    }
    Ok(text)
}

/// `sundial apply`.
pub(crate) async fn apply(args: ApplyArgs, context: &Context) -> Result<(), CliError> {
    send(
        &args.files,
        args.dry_run,
        args.change_id.as_deref(),
        false,
        context,
    )
    .await
}

/// `sundial diff`: a dry-run apply that fails with exit code 1 when the server differs from the
/// files.
pub(crate) async fn diff(args: DiffArgs, context: &Context) -> Result<(), CliError> {
    send(&args.files, true, None, true, context).await
}

async fn send(
    args: &FilesArgs,
    dry_run: bool,
    change_id: Option<&str>,
    only_diff: bool,
    context: &Context,
) -> Result<(), CliError> {
    let jobs = read_jobs(&args.files)?;
    let mut body = Map::new();
    body.insert(
        "jobs".into(),
        Value::Array(jobs.iter().map(|j| j.definition.clone()).collect()),
    );
    if args.prune {
        body.insert(
            "prune".into(),
            serde_json::json!({"labels": label_map(&args.labels)?}),
        );
    } else if !args.labels.is_empty() {
        return Err(CliError::usage(
            "--label selects the jobs --prune may delete: give --prune too",
        ));
    }
    if dry_run {
        body.insert("dryRun".into(), Value::Bool(true));
    }
    if let Some(id) = change_id {
        body.insert("changeId".into(), Value::from(id));
    }
    let body = Value::Object(body);
    let answer = context
        .client
        .call(Request::post(&["apply"], Some(&body)))
        .await
        .map_err(|e| locate(e, &jobs))?;
    context.show(&answer, || views::applied(&answer, context.style))?;
    if only_diff && differs(&answer) {
        return Err(CliError::new(
            Class::Failed,
            "the server differs from the files",
        ));
    }
    Ok(())
}

fn differs(answer: &Value) -> bool {
    let some = |key: &str| match &answer[key] {
        Value::Array(list) => !list.is_empty(),
        Value::Object(map) => !map.is_empty(),
        _ => false,
    };
    some("created") || some("updated") || some("deleted")
}

/// `--label` selectors as the API's `{key: value}`; `KEY:VALUE` or `KEY=VALUE` (a key has neither
/// character).
fn label_map(labels: &[String]) -> Result<Map<String, Value>, CliError> {
    if labels.is_empty() {
        return Err(CliError::usage(
            "--prune needs --label KEY:VALUE: the jobs it may delete",
        ));
    }
    let mut map = Map::new();
    for label in labels {
        let (key, value) = label
            .split_once([':', '='])
            .ok_or_else(|| CliError::usage(format!("--label {label}: expected KEY:VALUE")))?;
        map.insert(key.into(), Value::from(value));
    }
    Ok(map)
}

/// A 400 naming `jobs[i]…` also names the file and job it came from.
fn locate(mut error: CliError, jobs: &[FileJob]) -> CliError {
    let index = error
        .message
        .split("jobs[")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .and_then(|i| i.parse::<usize>().ok());
    if let Some(job) = index.and_then(|i| jobs.get(i)) {
        let id = job.definition["jobId"].as_str().unwrap_or("?");
        error.message = format!("job {id} in {}: {}", job.file.display(), error.message);
    }
    error
}

/// The jobs of `paths`: each a file or a directory (its `.yaml`, `.yml` and `.json` files, at any
/// depth, in path order). A file holds one job, a list of jobs, or a YAML stream of them.
fn read_jobs(paths: &[PathBuf]) -> Result<Vec<FileJob>, CliError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            collect_files(path, &mut files)?;
        } else {
            files.push(path.clone());
        }
    }
    let mut jobs = Vec::new();
    for file in files {
        for definition in read_file_jobs(&file)? {
            if !definition.is_object() {
                return Err(CliError::usage(format!(
                    "{}: expected job definitions (objects)",
                    file.display()
                )));
            }
            jobs.push(FileJob {
                file: file.clone(),
                definition,
            });
        }
    }
    Ok(jobs)
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError::usage(format!("{}: cannot read: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_files(&path, files)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            files.push(path);
        }
    }
    Ok(())
}

/// The jobs of one file: a YAML stream's documents (each a job or a list), or one JSON value.
fn read_file_jobs(file: &Path) -> Result<Vec<Value>, CliError> {
    let is_json = file.extension().and_then(|e| e.to_str()) == Some("json");
    let documents = if is_json || file.as_os_str() == "-" {
        vec![read_document(file)?]
    } else {
        use serde::Deserialize;
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::usage(format!("{}: cannot read: {e}", file.display())))?;
        let mut documents = Vec::new();
        for document in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = Value::deserialize(document)
                .map_err(|e| CliError::usage(format!("{}: invalid YAML: {e}", file.display())))?;
            if !value.is_null() {
                documents.push(value);
            }
        }
        documents
    };
    Ok(documents
        .into_iter()
        .flat_map(|document| match document {
            Value::Array(list) => list,
            one => vec![one],
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_yields_its_files_jobs_in_path_order() {
        let dir = sundial_testkit::TempDir::new("apply-files");
        let root = dir.path();
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::fs::write(root.join("a.yaml"), "---\njobId: one\n---\njobId: two\n").unwrap();
        std::fs::write(root.join("b/c.json"), r#"[{"jobId": "three"}]"#).unwrap();
        std::fs::write(root.join("notes.txt"), "not a job").unwrap();
        let jobs = read_jobs(&[root.to_path_buf()]).unwrap();
        let ids: Vec<&str> = jobs
            .iter()
            .map(|j| j.definition["jobId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["one", "two", "three"]);
        assert!(jobs[2].file.ends_with("b/c.json"));
    }

    #[test]
    fn an_error_naming_a_job_names_its_file() {
        let jobs = vec![FileJob {
            file: PathBuf::from("jobs/a.yaml"),
            definition: serde_json::json!({"jobId": "one"}),
        }];
        let error = locate(
            CliError::new(Class::Refused, "jobs[0].timeoutSeconds: expected a number"),
            &jobs,
        );
        assert_eq!(
            error.message,
            "job one in jobs/a.yaml: jobs[0].timeoutSeconds: expected a number"
        );
    }

    #[test]
    fn labels_take_either_separator_and_prune_needs_one() {
        let map = label_map(&["team:payments".into(), "tier=gold".into()]).unwrap();
        assert_eq!(
            Value::Object(map),
            serde_json::json!({"team": "payments", "tier": "gold"})
        );
        assert!(label_map(&[]).is_err());
        assert!(label_map(&["team".into()]).is_err());
    }

    #[test]
    fn an_exported_job_has_no_state() {
        let job = serde_json::json!({"jobId": "a", "state": "paused", "active": 0, "pausedNotes": "x", "createdAt": "t", "updatedAt": "t", "jobName": "A"});
        assert_eq!(
            without_state(job),
            serde_json::json!({"jobId": "a", "jobName": "A"})
        );
    }
}
