//! Logs as Lambda wants them: one JSON object per line on stdout when the function's log format
//! is JSON (`AWS_LAMBDA_LOG_FORMAT`, set by template.yaml's `LoggingConfig`), plain text otherwise;
//! the level from `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG` (a plain level such as `debug`), else
//! `info`. No timestamps: Lambda adds its own.

use std::str::FromStr;

use tracing::level_filters::LevelFilter;

/// Installs the subscriber; a second call does nothing.
pub fn init() {
    let level = ["AWS_LAMBDA_LOG_LEVEL", "RUST_LOG"]
        .iter()
        .find_map(|name| std::env::var(name).ok())
        .and_then(|text| LevelFilter::from_str(text.trim()).ok())
        .unwrap_or(LevelFilter::INFO);
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_target(false)
        .without_time()
        .with_max_level(level)
        .with_writer(std::io::stdout);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
