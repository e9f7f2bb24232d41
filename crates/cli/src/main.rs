//! The `sundial` command line (BRIEF §2.3). Arguments are parsed by hand: there are few commands,
//! and each command module parses its own flags.

use std::process::ExitCode;

use chrono::Utc;

mod http_server;
mod preview;
mod serve;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
sundial — the Sundial job scheduler

Usage:
  sundial serve [--addr HOST:PORT] [--data DIR] [--debug-mode]
      run the API on the embedded store (see `sundial serve --help`)
  sundial spec preview [--from RFC3339] [--count N] [--job-id ID] SPEC_JSON
      print the next fire times of a schedule spec as JSON
  sundial help
      print this help

Run `sundial spec preview --help` for the details of a command.
";

/// Exit code for a bad command line or an invalid spec.
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["help" | "--help" | "-h"] | ["spec", "help" | "--help" | "-h"] => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        ["spec", "preview", rest @ ..] => {
            if rest.iter().any(|a| *a == "--help" || *a == "-h") {
                print!("{}", preview::USAGE);
                return ExitCode::SUCCESS;
            }
            match preview::run_preview(&args[2..], Utc::now()) {
                Ok(line) => {
                    println!("{line}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(USAGE_ERROR)
                }
            }
        }
        ["serve", rest @ ..] => {
            if rest.iter().any(|a| *a == "--help" || *a == "-h") {
                print!("{}", serve::USAGE);
                return ExitCode::SUCCESS;
            }
            let options = match serve::parse(&args[1..], |key| std::env::var(key).ok()) {
                Ok(options) => options,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(USAGE_ERROR);
                }
            };
            match serve::run(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        [] => {
            eprint!("{USAGE}");
            ExitCode::from(USAGE_ERROR)
        }
        _ => {
            eprintln!("error: unknown command {:?}\n", words.join(" "));
            eprint!("{USAGE}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}
