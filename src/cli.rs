//! The CLI face: clap's mirror of the flags, the step that turns them into tool parameters, and
//! the exit-code mapping. Each subcommand calls the same tool function as MCP.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use serde::Serialize;

mod graph;

use crate::engine::Engine;
use crate::tools::{self, FileReadParams, FileSearchParams, ToolError};
use crate::workspace::Workspace;

/// filepuff: one binary between editors, language servers and AI agents.
#[derive(Debug, Parser)]
#[command(name = "filepuff", version, about, max_term_width = 100)]
pub struct Cli {
    /// Workspace root; every path is relative to it (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdin/stdout (register this command with your MCP client).
    Mcp,
    /// Search file contents (the file_search tool).
    Search(SearchArgs),
    /// Read a file, or its symbol outline (the file_read tool).
    Read(ReadArgs),
    /// Build and query the persistent code knowledge graph.
    Graph(graph::GraphArgs),
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Regular expression (or literal text with -F).
    pub pattern: String,
    /// Files or directories to search (default: the root).
    pub paths: Vec<String>,
    /// Match case-insensitively.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Treat the pattern as literal text, not a regex.
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Only search files of this ripgrep type (repeatable): go, ts, py, c, cpp, rust, …
    #[arg(short = 't', long = "type", value_name = "TYPE")]
    pub file_types: Vec<String>,
    /// Context lines before and after each match (default 2).
    #[arg(short = 'C', long, value_name = "N")]
    pub context: Option<usize>,
    /// Matching lines to show (default 100); totals count all.
    #[arg(short = 'm', long, value_name = "N")]
    pub max_results: Option<usize>,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// File to read.
    pub file: String,
    /// First line (1-based).
    #[arg(long, value_name = "LINE")]
    pub start: Option<usize>,
    /// Last line (1-based, inclusive).
    #[arg(long, value_name = "LINE")]
    pub end: Option<usize>,
    /// Include the symbol outline.
    #[arg(long)]
    pub ast: bool,
    /// Print only the symbol outline.
    #[arg(long)]
    pub symbols_only: bool,
    /// Lines to print at most (default 2000).
    #[arg(long, value_name = "N")]
    pub max_lines: Option<usize>,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Exit status: success.
const EXIT_OK: u8 = 0;
/// Exit status: the search found nothing (as grep and ripgrep do).
const EXIT_NO_MATCH: u8 = 1;
/// Exit status: an error (printed to stderr with its code).
const EXIT_ERROR: u8 = 2;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let root = match cli.root.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(root) => root,
        Err(err) => {
            eprintln!("filepuff: cannot determine the current directory: {err}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let json = match &cli.command {
        Command::Mcp => false,
        Command::Search(args) => args.json,
        Command::Read(args) => args.json,
        Command::Graph(args) => args.json,
    };
    let workspace = match Workspace::open(&root) {
        Ok(workspace) => workspace,
        Err(err) => return report_error(&ToolError::from(err), json),
    };
    let engine = Arc::new(Engine::new(workspace));
    match cli.command {
        Command::Mcp => serve_mcp(engine),
        Command::Graph(args) => graph::run(&engine, args),
        Command::Search(args) => {
            let json = args.json;
            let params = FileSearchParams {
                pattern: args.pattern,
                paths: args.paths,
                file_types: args.file_types,
                ignore_case: args.ignore_case,
                regex: Some(!args.fixed_strings),
                context_lines: args.context,
                max_results: args.max_results,
            };
            match tools::file_search(&engine, params) {
                Ok(output) => {
                    print_output(&output, json, tools::render::file_search);
                    ExitCode::from(if output.total_matches == 0 { EXIT_NO_MATCH } else { EXIT_OK })
                }
                Err(err) => report_error(&err, json),
            }
        }
        Command::Read(args) => {
            let json = args.json;
            let params = FileReadParams {
                path: args.file,
                line_start: args.start,
                line_end: args.end,
                include_ast: args.ast,
                symbols_only: args.symbols_only,
                max_lines: args.max_lines,
            };
            match tools::file_read(&engine, params) {
                Ok(output) => {
                    print_output(&output, json, tools::render::file_read);
                    ExitCode::from(EXIT_OK)
                }
                Err(err) => report_error(&err, json),
            }
        }
    }
}

fn serve_mcp(engine: Arc<Engine>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("filepuff: cannot start the async runtime: {err}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    match runtime.block_on(crate::mcp::serve_stdio(engine)) {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(err) => {
            eprintln!("filepuff mcp: {err:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn print_output<O: Serialize>(output: &O, json: bool, render: fn(&O) -> String) {
    use std::io::Write;
    let text = if json {
        serde_json::to_string_pretty(output).unwrap_or_else(|err| format!("{{\"error\": \"{err}\"}}")) + "\n"
    } else {
        render(output)
    };
    // A closed pipe (`filepuff search … | head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn report_error(err: &ToolError, json: bool) -> ExitCode {
    if json {
        eprintln!("{}", serde_json::to_string_pretty(&err.to_json()).unwrap_or_default());
    } else {
        eprintln!("filepuff: {err}");
    }
    ExitCode::from(EXIT_ERROR)
}
