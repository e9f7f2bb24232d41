//! The command line, declared with clap's derive API: `serve` and `spec preview` run locally; the
//! client commands (`job`, `execution`, `timers`, `stats`, `health`) call a running API.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

use crate::output::Format;

const AFTER_HELP: &str = "\
Local commands:
  sundial serve [--addr HOST:PORT] [--data DIR] [--debug-mode] [--api-only]
  sundial spec preview [--from RFC3339] [--count N] [--job-id ID] SPEC_JSON

Client commands call the API at --server (a `sundial serve`, or the API on AWS):
  sundial job create report --cron '0 12 * * MON-FRI' --tz Europe/London --url http://127.0.0.1:9000/run
  sundial job describe report
  sundial job trigger report --arg region=emea --watch

Exit status: 0 ok; 1 a watched execution did not succeed; 2 bad command line or input;
3 not found; 4 refused by the server (invalid, unauthorized, conflict); 5 server error or
unreachable. See docs/cli.md.";

/// sundial — the Sundial job scheduler
#[derive(Debug, Parser)]
#[command(
    name = "sundial",
    version,
    about = "sundial — the Sundial job scheduler",
    after_help = AFTER_HELP,
    arg_required_else_help = true,
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub client: ClientArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// How the client commands reach the API.
#[derive(Debug, Args)]
#[command(next_help_heading = "Client options")]
pub(crate) struct ClientArgs {
    /// Base URL of the Sundial API
    #[arg(
        long,
        global = true,
        env = "SUNDIAL_SERVER",
        default_value = "http://127.0.0.1:8080",
        value_name = "URL"
    )]
    pub server: String,

    /// Bearer token: SUNDIAL_API_TOKEN of `sundial serve`, or a JWT for the API on AWS (AuthMode=JWT)
    #[arg(
        long,
        global = true,
        env = "SUNDIAL_API_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,

    /// How to authenticate: auto = the token if given, else SigV4 for an execute-api host
    #[arg(
        long,
        global = true,
        env = "SUNDIAL_AUTH",
        value_enum,
        default_value_t = AuthMode::Auto
    )]
    pub auth: AuthMode,

    /// AWS region for SigV4 (default: the execute-api host's, else AWS_REGION or the profile's)
    #[arg(long, global = true, value_name = "REGION")]
    pub region: Option<String>,

    /// Output format
    #[arg(
        short,
        long,
        global = true,
        value_enum,
        default_value_t = Format::Table,
        value_name = "FORMAT"
    )]
    pub output: Format,
}

/// `--auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum AuthMode {
    /// A bearer token when --token is given; SigV4 for an *.execute-api.*.amazonaws.com host; else none
    Auto,
    /// No credentials
    None,
    /// Authorization: Bearer <--token>
    Bearer,
    /// SigV4-signed requests from the standard AWS credential chain (AuthMode=IAM)
    Iam,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the API and the execution engine on the embedded store
    Serve(ServeArgs),
    /// Schedule specs, evaluated locally
    #[command(subcommand, arg_required_else_help = true)]
    Spec(SpecCommand),
    /// Create, read, change and run jobs
    #[command(subcommand, arg_required_else_help = true)]
    Job(JobCommand),
    /// Read, cancel and follow executions (runs of a job)
    #[command(subcommand, arg_required_else_help = true)]
    Execution(ExecutionCommand),
    /// A service's declared timer list
    #[command(subcommand, arg_required_else_help = true)]
    Timers(TimersCommand),
    /// Write jobs as files without state (a YAML stream; -o json: a JSON array), for apply
    #[command(after_help = "Example: sundial export --label team:payments > jobs/payments.yaml")]
    Export(ExportArgs),
    /// Create, update and (with --prune) delete jobs to match job files, keeping operators' pauses and edits
    #[command(
        after_help = "Examples:\n  sundial apply -f jobs/ --dry-run\n  sundial apply -f jobs/ --prune --label team:payments --change-id \"git:$(git rev-parse --short HEAD)\""
    )]
    Apply(ApplyArgs),
    /// Show how the server differs from job files (a dry-run apply); exit code 1 when it does
    #[command(after_help = "Example: sundial diff -f jobs/ --prune --label team:payments")]
    Diff(DiffArgs),
    /// Pause, unpause, trigger, delete or backfill every job a filter selects, with a reason
    #[command(
        after_help = "Example: sundial bulk pause --label team:payments --reason \"ledger migration\" --dry-run"
    )]
    Bulk(BulkArgs),
    /// Jobs and executions by state, debug mode, and all jobs' figures over a window
    Stats(WindowArgs),
    /// Whether the server and its engine are running, and the debug mode
    Health,
    /// Settings switched at run time: the debug mode
    #[command(subcommand)]
    Settings(SettingsCommand),
    /// Named business calendars that schedules refer to (onlyOn, exclude, business days)
    #[command(subcommand, arg_required_else_help = true)]
    Calendar(CalendarCommand),
    /// Print a shell completion script
    #[command(
        after_help = "Example: sundial completions bash > ~/.local/share/bash-completion/completions/sundial"
    )]
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// `sundial serve`. Values are checked by `serve::options`, whose messages name the flag.
#[derive(Debug, Args)]
#[command(
    args_override_self = true,
    help_template = "{usage-heading} {usage}\n\n{about}\n\n{all-args}{after-help}",
    after_help = SERVE_ENVIRONMENT
)]
pub(crate) struct ServeArgs {
    /// Listen address; port 0 picks a free port
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub addr: String,

    /// Data directory, created if missing
    #[arg(long, value_name = "DIR", default_value = "sundial-data")]
    pub data: PathBuf,

    /// Debug mode (docs/api.md): no automatic runs, manual triggers still work (also SUNDIAL_DEBUG_MODE=1)
    #[arg(long)]
    pub debug_mode: bool,

    /// Serve the API only; jobs run in another `sundial serve` on the same --data
    #[arg(long)]
    pub api_only: bool,

    /// Send jobs' sqs and eventbridge targets to AWS with the AWS SDK's standard configuration
    /// (AWS_REGION, credentials, AWS_ENDPOINT_URL for LocalStack or moto); without it such jobs are
    /// refused (also SUNDIAL_AWS_TARGETS=1; needs the aws-targets cargo feature)
    #[arg(long)]
    pub aws_targets: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SpecCommand {
    /// Print the next fire times of a schedule spec as one line of JSON
    #[command(
        help_template = "{usage-heading} {usage}\n\n{about}\n\n{all-args}{after-help}",
        after_help = PREVIEW_ABOUT
    )]
    Preview(PreviewArgs),
}

/// `sundial spec preview`. Values are checked by `preview::run_preview`, whose messages name the
/// flag or the spec field.
#[derive(Debug, Args)]
pub(crate) struct PreviewArgs {
    /// List times strictly after this instant (default: now); relative timer due times are counted from it too
    #[arg(long, value_name = "RFC3339")]
    pub from: Option<String>,

    /// How many times to list, 1 to 10000 (default: 10)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub count: Option<String>,

    /// List the jittered times this job would actually run at, instead of the nominal times
    #[arg(long, value_name = "ID")]
    pub job_id: Option<String>,

    /// The schedule spec as JSON
    #[arg(value_name = "SPEC_JSON")]
    pub spec: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum JobCommand {
    /// Create a job from -f FILE and/or flags
    #[command(
        after_help = "Example:\n  sundial job create report --name 'Noon report' --cron '0 12 * * MON-FRI' --tz Europe/London \\\n      --url 'http://127.0.0.1:9000/run?n=${executeNumber}' --method POST\n  sundial job create -f report.yaml"
    )]
    Create(CreateArgs),
    /// Change a job (flags change the stored definition; -f replaces it) and run it once now
    Update(UpdateArgs),
    /// Show a job as written
    Get(JobId),
    /// Show a job, its next fire times with DST notes, counters and recent executions
    Describe(JobId),
    /// List jobs
    List(ListArgs),
    /// Delete a job (its executions stay until retention)
    Delete(JobId),
    /// Pause a job's schedule, until resumed or until a time
    #[command(
        after_help = "Example: sundial job pause nightly-report --notes \"vendor maintenance\" --until 2h"
    )]
    Pause(PauseArgs),
    /// Resume a paused job
    Unpause(UnpauseArgs),
    /// Run a job once now
    Trigger(TriggerArgs),
    /// Run every fire time of a job's schedule in a past range
    Backfill(BackfillArgs),
    /// List a job's changes, newest first: who, what, why, and an update's changed fields
    History(HistoryArgs),
    /// A job's runs, success rate, duration and fire-lag percentiles over a window
    #[command(after_help = "Example:\n  sundial job stats report --window 24h")]
    Stats(JobStatsArgs),
    /// What became of each nominal time of a job's schedule in a range: ran, skipped, dropped, missed, paused, …
    #[command(
        after_help = "Example:\n  sundial job occurrences report --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z"
    )]
    Occurrences(OccurrencesArgs),
    /// What a job would do over a range of time against a synthetic target: runs, skips, retries, missed fires, with totals
    #[command(
        after_help = "Example:\n  sundial job simulate -f job.yaml --from 2026-12-24T00:00 --to 2026-12-26T00:00 \\\n      --target-duration p50=2s,p99=30s --failure-rate 0.05 --outage 2026-12-24T10:00/2h"
    )]
    Simulate(SimulateArgs),
}

/// `sundial job simulate`.
#[derive(Debug, Args)]
pub(crate) struct SimulateArgs {
    /// The first fire time considered: RFC 3339, or UTC without a zone (2026-12-24T10:00)
    #[arg(long, value_name = "TIME")]
    pub from: String,

    /// Fires at or after it are not planned; at most 366 days after --from
    #[arg(long, value_name = "TIME")]
    pub to: String,

    /// How long calls take: p50=DURATION,p99=DURATION (log-normal through both; default p50=1s)
    #[arg(long, value_name = "p50=D,p99=D")]
    pub target_duration: Option<String>,

    /// The share of calls that answer HTTP 500, 0 to 1 (default 0)
    #[arg(long, value_name = "RATE")]
    pub failure_rate: Option<f64>,

    /// The seed of the draws: the same seed gives the same answer (default 1)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// The target is down: START/LENGTH (2026-12-24T10:00/2h); calls fail at once, or hang until
    /// their timeout with START/LENGTH/timeout. Repeatable
    #[arg(long = "outage", value_name = "START/LENGTH[/timeout]")]
    pub outages: Vec<String>,

    /// Sundial itself is down: START/LENGTH; what falls due happens when it is back. Repeatable
    #[arg(long = "down", value_name = "START/LENGTH")]
    pub downtime: Vec<String>,

    /// How many rows to list, 0 to 10000 (default 200; the totals count everything)
    #[arg(long, value_name = "N")]
    pub rows: Option<u32>,

    #[command(flatten)]
    pub definition: DefinitionArgs,
}

/// `sundial job occurrences`.
#[derive(Debug, Args)]
pub(crate) struct OccurrencesArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
    /// Start of the range, inclusive (RFC 3339)
    #[arg(long, value_name = "RFC3339")]
    pub from: String,
    /// End of the range, exclusive (RFC 3339); at most 10,000 nominal times
    #[arg(long, value_name = "RFC3339")]
    pub to: String,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// The job id (a deleted job's history stays until retention)
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
    /// Entries per page, 1 to 1000
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    /// Follow nextCursor and list every page
    #[arg(long)]
    pub all: bool,
}

/// `--window` of the statistics commands.
#[derive(Debug, Args)]
pub(crate) struct WindowArgs {
    /// How far back: 1h, 24h, 7d or 30d (default: 24h)
    #[arg(long, value_name = "WINDOW")]
    pub window: Option<String>,
}

/// `sundial job stats`.
#[derive(Debug, Args)]
pub(crate) struct JobStatsArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,

    #[command(flatten)]
    pub window: WindowArgs,
}

#[derive(Debug, Args)]
pub(crate) struct JobId {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// The job id (default: jobId in the file)
    #[arg(value_name = "JOB_ID")]
    pub job_id: Option<String>,

    #[command(flatten)]
    pub definition: DefinitionArgs,
}

#[derive(Debug, Args)]
pub(crate) struct UpdateArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,

    /// Change nothing and run nothing: show the next fire times before and after, and the runs not yet started the change would affect
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub definition: DefinitionArgs,
}

/// The fields of a job definition as flags; `-f` reads a whole definition, flags then change it.
#[derive(Clone, Debug, Args, Default)]
pub(crate) struct DefinitionArgs {
    /// A job definition (the API's JSON, or the same as YAML; `-` reads stdin)
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// jobName (create default: the job id)
    #[arg(long, help_heading = "Job")]
    pub name: Option<String>,
    /// jobDescription
    #[arg(long, help_heading = "Job")]
    pub description: Option<String>,
    /// creator (create default: $USER)
    #[arg(long, help_heading = "Job")]
    pub creator: Option<String>,
    /// creatorName (create default: the creator)
    #[arg(long, help_heading = "Job")]
    pub creator_name: Option<String>,

    /// A URL to call; repeat for a request chain (replaces the stored chain)
    #[arg(long = "url", value_name = "URL", help_heading = "Action")]
    pub urls: Vec<String>,
    /// HTTP method of the --url requests
    #[arg(long, help_heading = "Action")]
    pub method: Option<String>,
    /// A header of the --url requests; repeatable
    #[arg(long = "header", value_name = "NAME:VALUE", help_heading = "Action")]
    pub headers: Vec<String>,
    /// JSON body of the --url requests
    #[arg(long, value_name = "JSON", help_heading = "Action")]
    pub body: Option<String>,

    /// A cron expression; repeatable (a schedule spec)
    #[arg(long, value_name = "EXPR", help_heading = "Schedule")]
    pub cron: Vec<String>,
    /// A calendar as JSON, e.g. '{"hour": "9", "dayOfWeek": "MON-FRI"}'; repeatable
    #[arg(long = "calendar", value_name = "JSON", help_heading = "Schedule")]
    pub calendars: Vec<String>,
    /// An interval, EVERY or EVERY/OFFSET, e.g. 6h or 6h/5h; repeatable
    #[arg(
        long = "interval",
        value_name = "EVERY[/OFFSET]",
        help_heading = "Schedule"
    )]
    pub intervals: Vec<String>,
    /// The schedule's IANA time zone, e.g. Europe/London
    #[arg(long, value_name = "ZONE", help_heading = "Schedule")]
    pub tz: Option<String>,
    /// Cron dialect: standard, temporal, quartz, eventbridge
    #[arg(long, help_heading = "Schedule")]
    pub dialect: Option<String>,
    /// Deterministic jitter, e.g. 30s
    #[arg(long, value_name = "DURATION", help_heading = "Schedule")]
    pub jitter: Option<String>,
    /// The schedule's start (RFC 3339)
    #[arg(long, value_name = "RFC3339", help_heading = "Schedule")]
    pub start: Option<String>,
    /// The schedule's end (RFC 3339)
    #[arg(long, value_name = "RFC3339", help_heading = "Schedule")]
    pub end: Option<String>,
    /// A `timer` (docs/api.md): JSON ('{"dueTime": "10m", "period": "1h"}') or its period ("external", "0 0/5 * * * ?", "R4/PT3S")
    #[arg(long, value_name = "TIMER", help_heading = "Schedule")]
    pub timer: Option<String>,
    /// The timer's dueTime (a duration from creation, or "2024-10-01 09:00:01")
    #[arg(long, value_name = "WHEN", help_heading = "Schedule")]
    pub due_time: Option<String>,
    /// The timer's ttl
    #[arg(long, value_name = "DURATION", help_heading = "Schedule")]
    pub ttl: Option<String>,

    /// Overlap policy
    #[arg(long, value_enum, help_heading = "Policies")]
    pub overlap: Option<Overlap>,
    /// maxConcurrency
    #[arg(long, value_name = "N", help_heading = "Policies")]
    pub max_concurrency: Option<u32>,
    /// catchupWindow, e.g. 10m
    #[arg(long, value_name = "DURATION", help_heading = "Policies")]
    pub catchup_window: Option<String>,
    /// pauseOnFailure
    #[arg(long, value_name = "BOOL", help_heading = "Policies")]
    pub pause_on_failure: Option<bool>,
    /// remainingActions
    #[arg(long, value_name = "N", help_heading = "Policies")]
    pub remaining_actions: Option<u64>,
    /// timeoutSeconds of one attempt
    #[arg(long, value_name = "SECONDS", help_heading = "Policies")]
    pub timeout_seconds: Option<u64>,
    /// maxRetries
    #[arg(long, value_name = "N", help_heading = "Policies")]
    pub max_retries: Option<u32>,
    /// Create or keep the job paused (active 0)
    #[arg(long, help_heading = "Policies")]
    pub paused: bool,

    /// A label, KEY=VALUE (e.g. team=payments); repeatable; added to the job's labels, replacing a label of that key
    #[arg(long = "label", value_name = "KEY=VALUE", help_heading = "Job")]
    pub labels: Vec<String>,

    /// Any other field: FIELD=JSON (a plain word is a string); dots reach into objects, e.g. timeouts.heartbeat=30s
    #[arg(long = "set", value_name = "FIELD=JSON")]
    pub set: Vec<String>,
}

/// The overlap policies (docs/engine.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "PascalCase")]
pub(crate) enum Overlap {
    Skip,
    BufferOne,
    BufferAll,
    CancelOther,
    TerminateOther,
    AllowAll,
}

impl Overlap {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Overlap::Skip => "Skip",
            Overlap::BufferOne => "BufferOne",
            Overlap::BufferAll => "BufferAll",
            Overlap::CancelOther => "CancelOther",
            Overlap::TerminateOther => "TerminateOther",
            Overlap::AllowAll => "AllowAll",
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub filter: JobFilterArgs,
    /// The order: by id (default), soonest next fire first, or latest run first (not on AWS)
    #[arg(long, value_parser = ["id", "nextFire", "lastRun"])]
    pub sort: Option<String>,
    /// Jobs per page, 1 to 1000
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
    /// Follow nextCursor and list every page
    #[arg(long)]
    pub all: bool,
}

/// The filters of `job list` and `bulk`.
#[derive(Debug, Args)]
pub(crate) struct JobFilterArgs {
    /// Only jobs in this state
    #[arg(long, value_parser = ["active", "paused"])]
    pub state: Option<String>,
    /// Only jobs of this creator
    #[arg(long)]
    pub creator: Option<String>,
    /// Only children of this job
    #[arg(long, value_name = "JOB_ID")]
    pub parent: Option<String>,
    /// Only jobs declared by this service's timer list
    #[arg(long)]
    pub service: Option<String>,
    /// Only jobs with this label, KEY:VALUE; repeatable (all must match)
    #[arg(long = "label", value_name = "KEY:VALUE")]
    pub labels: Vec<String>,
    /// Only jobs whose id starts with this
    #[arg(long, value_name = "PREFIX")]
    pub id_prefix: Option<String>,
}

/// `sundial bulk ACTION`.
#[derive(Debug, Args)]
pub(crate) struct BulkArgs {
    /// What to do to each selected job
    #[arg(value_parser = ["pause", "unpause", "trigger", "delete", "backfill"])]
    pub action: String,
    /// Why (required; recorded with every change, and the pause notes unless --notes)
    #[arg(long)]
    pub reason: String,
    /// Only list the jobs that would be acted on; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Exactly these jobs instead of filters; repeatable
    #[arg(long = "job", value_name = "JOB_ID", conflicts_with_all = ["state", "creator", "parent", "service", "labels", "id_prefix"])]
    pub jobs: Vec<String>,
    #[command(flatten)]
    pub filter: JobFilterArgs,
    /// Act on every matching job, following the server's cursor past 1,000 per request
    #[arg(long)]
    pub all: bool,
    /// pause, unpause: the notes (default: the reason)
    #[arg(long, help_heading = "Action parameters")]
    pub notes: Option<String>,
    /// pause: end every pause by itself, at an RFC 3339 instant or a duration from now (2h)
    #[arg(
        long,
        value_name = "TIME_OR_DURATION",
        help_heading = "Action parameters"
    )]
    pub until: Option<String>,
    /// trigger: an argument for the request templates, ${KEY}; repeatable
    #[arg(
        long = "arg",
        value_name = "KEY=VALUE",
        help_heading = "Action parameters"
    )]
    pub args: Vec<String>,
    /// trigger: all arguments as a JSON object (--arg adds to it)
    #[arg(long = "args", value_name = "JSON", help_heading = "Action parameters")]
    pub args_json: Option<String>,
    /// trigger: each job's run is {jobId}~t~{KEY}, so a retried bulk trigger finds its runs
    #[arg(long, value_name = "KEY", help_heading = "Action parameters")]
    pub idempotency_key: Option<String>,
    /// backfill: start of the range, inclusive (RFC 3339)
    #[arg(long, value_name = "RFC3339", help_heading = "Action parameters")]
    pub from: Option<String>,
    /// backfill: end of the range, inclusive (RFC 3339)
    #[arg(long, value_name = "RFC3339", help_heading = "Action parameters")]
    pub to: Option<String>,
    /// backfill: AllowAll runs them in parallel (the default), BufferAll in order
    #[arg(long, value_enum, help_heading = "Action parameters")]
    pub overlap: Option<Overlap>,
    /// backfill: which times run
    #[arg(long, value_enum, help_heading = "Action parameters")]
    pub mode: Option<BackfillMode>,
}

#[derive(Debug, Args)]
pub(crate) struct PauseArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
    /// Why (kept in pausedNotes)
    #[arg(long)]
    pub notes: Option<String>,
    /// End the pause by itself: an RFC 3339 instant or a duration from now (2h, 30m, PT1H)
    #[arg(long, value_name = "TIME_OR_DURATION")]
    pub until: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct UnpauseArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
    /// Why (replaces pausedNotes)
    #[arg(long)]
    pub notes: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct TriggerArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
    /// An argument for the request templates, ${KEY}; repeatable
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// All arguments as a JSON object (--arg adds to it)
    #[arg(long = "args", value_name = "JSON")]
    pub args_json: Option<String>,
    /// Idempotency-Key: the same key returns the same execution instead of a second run
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Override the job's overlap policy for this run
    #[arg(long, value_enum)]
    pub overlap: Option<Overlap>,
    /// The nominal time the run reports (scheduledTime, ${scheduledTime}), e.g. 2024-06-01T06:00:00Z
    #[arg(long, value_name = "RFC3339")]
    pub scheduled_time: Option<String>,
    /// Start the run this much later (e.g. 10m); it is Scheduled until then
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Follow the run until it ends, as `execution watch`
    #[arg(long)]
    pub watch: bool,
    /// Poll interval of --watch
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub poll: String,
}

#[derive(Debug, Args)]
pub(crate) struct BackfillArgs {
    /// The job id
    #[arg(value_name = "JOB_ID")]
    pub job_id: String,
    /// Start of the range, inclusive (RFC 3339)
    #[arg(long, value_name = "RFC3339")]
    pub from: String,
    /// End of the range, inclusive (RFC 3339)
    #[arg(long, value_name = "RFC3339")]
    pub to: String,
    /// AllowAll runs them in parallel (the default), BufferAll in order
    #[arg(long, value_enum)]
    pub overlap: Option<Overlap>,
    /// Which times run: all, missing (no run at all), failed (the latest run was Terminated)
    #[arg(long, value_enum)]
    pub mode: Option<BackfillMode>,
    /// Newest first (with --overlap BufferAll they run strictly in that order)
    #[arg(long)]
    pub reverse: bool,
    /// Only list the times that would run; record nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `--mode` of a backfill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackfillMode {
    All,
    Missing,
    Failed,
}

impl BackfillMode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            BackfillMode::All => "all",
            BackfillMode::Missing => "missing",
            BackfillMode::Failed => "failed",
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum ExecutionCommand {
    /// List executions, newest first: a job's, or of every job with filters (GET /executions)
    #[command(
        after_help = "Examples:\n  sundial execution list nightly-report\n  sundial execution list --state Failed --since 24h --label team=payments --source schedule --limit 50"
    )]
    List(ExecutionListArgs),
    /// Show an execution and its event log
    Get(ExecutionId),
    /// Cancel an execution that has not finished
    Cancel(ReasonArgs),
    /// End a Processing or Failed execution for good
    Terminate(ReasonArgs),
    /// Follow an execution's event log until it ends; exits 1 unless it Succeeded
    Watch(WatchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ExecutionListArgs {
    /// The job id; alone, lists the job's executions by execute number. With any filter below, or
    /// without it, searches executions across jobs, newest scheduled first
    #[arg(value_name = "JOB_ID")]
    pub job_id: Option<String>,
    /// Only executions of this job (as JOB_ID, but always a search)
    #[arg(long = "job", value_name = "JOB_ID", conflicts_with = "job_id")]
    pub job: Option<String>,
    /// Only executions in this state (Failed, Succeeded, …); repeatable or comma-separated
    #[arg(long = "state", value_name = "STATE")]
    pub states: Vec<String>,
    /// Only executions of jobs with this label, KEY:VALUE or KEY=VALUE; repeatable (all must match)
    #[arg(long = "label", value_name = "KEY:VALUE")]
    pub labels: Vec<String>,
    /// Only executions of jobs of this creator
    #[arg(long)]
    pub creator: Option<String>,
    /// Only executions started so: schedule, trigger, backfill or parent
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// Only executions scheduled at or after this: RFC 3339 or a duration back from now (24h)
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only executions scheduled before this: RFC 3339 or a duration back from now
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Only executions that ended at or after this: RFC 3339 or a duration back from now
    #[arg(long, value_name = "TIME")]
    pub ended_since: Option<String>,
    /// Only executions that ended before this: RFC 3339 or a duration back from now
    #[arg(long, value_name = "TIME")]
    pub ended_until: Option<String>,
    /// Executions per page, 1 to 1000
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    /// Follow nextCursor and list every page
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ExecutionId {
    /// The execution id
    #[arg(value_name = "EXECUTION_ID")]
    pub execution_id: String,
}

#[derive(Debug, Args)]
pub(crate) struct ReasonArgs {
    /// The execution id
    #[arg(value_name = "EXECUTION_ID")]
    pub execution_id: String,
    /// Why (kept in the event log)
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// The execution id
    #[arg(value_name = "EXECUTION_ID")]
    pub execution_id: String,
    /// Poll interval
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub poll: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SettingsCommand {
    /// Show the debug mode and its switches, or switch it: off, schedules (scheduled fires do not
    /// run), triggers (runs programs trigger do not run) or both; console triggers always run
    #[command(
        after_help = "Examples:\n  sundial settings debug-mode\n  sundial settings debug-mode schedules --reason \"load test of billing\"\n  sundial settings debug-mode off"
    )]
    DebugMode {
        /// The mode to switch to; without it, show the mode in force
        #[arg(value_enum, value_name = "MODE")]
        mode: Option<DebugModeArg>,
        /// Why, kept with the switch
        #[arg(long, requires = "mode")]
        reason: Option<String>,
    },
}

/// The debug modes (docs/api.md, "Debug mode").
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lowercase")]
pub(crate) enum DebugModeArg {
    Off,
    Schedules,
    Triggers,
    Both,
}

impl DebugModeArg {
    /// The API's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            DebugModeArg::Off => "off",
            DebugModeArg::Schedules => "schedules",
            DebugModeArg::Triggers => "triggers",
            DebugModeArg::Both => "both",
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum TimersCommand {
    /// Reconcile SERVICE's jobs with the timer list in FILE: create, update and remove to match
    Sync {
        /// The service that owns the list
        #[arg(value_name = "SERVICE")]
        service: String,
        /// {"timer": [job, …]} or a bare list, as JSON or YAML (`-` reads stdin)
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// The environment of `sundial serve`, shown after its flags in `sundial serve --help`.
const SERVE_ENVIRONMENT: &str = "\
Environment:
  SUNDIAL_API_TOKEN       bearer token required on every route but /health, the feedback
                          route, /openapi.json and /docs; mandatory (or SUNDIAL_API_TOKENS)
                          when --addr is not a loopback address; at least 16 visible ASCII
                          characters; its changes are recorded as the actor default
  SUNDIAL_API_TOKENS      named tokens with a scope: name:scope:secret,… (scope read or
                          write); the name is the actor the history records; read tokens
                          change nothing (403); with SUNDIAL_API_TOKEN too, that one is
                          one more token, default, of scope write
  SUNDIAL_CONSOLE_SESSION_SECONDS
                          how long a console login lasts (default 28800, 8 hours)
  SUNDIAL_DEBUG_MODE      1 for --debug-mode
  SUNDIAL_AWS_TARGETS     1 for --aws-targets; the SDK then reads AWS_REGION, AWS_PROFILE,
                          AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, …
  SUNDIAL_SERVICES        service map for service:// URLs: main=http://127.0.0.1:9000,oa=…
  SUNDIAL_PUBLIC_URL      base of schedulingFeedbackUrl (default http://ADDR)
  SUNDIAL_SIGNING_SECRET  HMAC secret for feedback tokens and webhook signatures, at least 32
                          bytes (default: a random one kept in DATA/signing-secret, mode 0600)
  SUNDIAL_OUTBOUND_ALLOW  hosts, IPs or CIDRs jobs may call beyond public addresses and loopback
  SUNDIAL_VAR_*           variables job templates may read as ${SUNDIAL_VAR_NAME}
  RUST_LOG                log filter (default info)
";

/// What `sundial spec preview --help` says beside the flags.
const PREVIEW_ABOUT: &str = "\
Prints one line of JSON:
  {\"times\": [RFC 3339 times with the schedule zone's offset], \"schedule\": <canonical spec>}

SPEC_JSON is a schedule object ({\"cron\": [\"0 12 * * MON-FRI\"]}), {\"schedule\": {...}}
or a job timer {\"timer\": {\"dueTime\": \"10s\", \"period\": \"R4/PT3S\"}}.

Exit status: 0 on success; 2 on an invalid spec or argument, with `error: ...` on stderr.";

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}

/// `sundial export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// Only jobs with this label, KEY:VALUE; repeatable (all must match)
    #[arg(long = "label", value_name = "KEY:VALUE")]
    pub labels: Vec<String>,
}

/// The job files and the prune of `sundial apply` and `sundial diff`.
#[derive(Debug, Args)]
pub(crate) struct FilesArgs {
    /// A job file (one job, a list, or a YAML stream) or a directory of .yaml, .yml and .json files; repeatable
    #[arg(short = 'f', long = "file", value_name = "PATH", required = true)]
    pub files: Vec<PathBuf>,
    /// Also delete the jobs an earlier apply wrote that match --label and the files no longer list
    #[arg(long, requires = "labels")]
    pub prune: bool,
    /// With --prune: the jobs it may delete, KEY:VALUE or KEY=VALUE; repeatable (all must match)
    #[arg(long = "label", value_name = "KEY:VALUE", requires = "prune")]
    pub labels: Vec<String>,
}

/// `sundial apply`.
#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
    #[command(flatten)]
    pub files: FilesArgs,
    /// Only show what would change
    #[arg(long)]
    pub dry_run: bool,
    /// The change's id in the audit trail (default: the time of the apply)
    #[arg(long, value_name = "ID")]
    pub change_id: Option<String>,
}

/// `sundial diff`.
#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    #[command(flatten)]
    pub files: FilesArgs,
}

/// `sundial calendar …` (docs/cli.md, "Calendars").
#[derive(Debug, Subcommand)]
pub(crate) enum CalendarCommand {
    /// Create or replace a calendar from a JSON, YAML or iCalendar (.ics) file; the jobs that use
    /// it are re-planned
    #[command(
        after_help = "Examples:\n  sundial calendar put london -f london.yaml\n  sundial calendar put uk -f uk-holidays.ics\n\nThe file is docs/spec.md §16.1's calendar: description, timeZone, weekend, dates, ranges, rules; an .ics file's all-day events become its dates, ranges and yearly rules."
    )]
    Put {
        /// The calendar's name
        name: String,
        /// The calendar (JSON or YAML, `-` for stdin; or an .ics file of all-day events)
        #[arg(short = 'f', long = "file", value_name = "FILE")]
        file: PathBuf,
    },
    /// Show a calendar and the jobs that use it
    Get {
        /// The calendar's name
        name: String,
    },
    /// List the calendars
    List,
    /// Delete a calendar (refused while jobs use it)
    Delete {
        /// The calendar's name
        name: String,
    },
}
