//! The `filepuff` binary: parse arguments, set up logging (to stderr), dispatch, exit.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FILEPUFF_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_ansi(false)
        .init();
    filepuff::cli::run(filepuff::cli::Cli::parse())
}
