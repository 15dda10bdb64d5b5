//! The CLI face: clap's mirror of the flags, the step that turns them into tool parameters, and
//! the exit-code mapping. Each subcommand calls the same tool function as MCP.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use serde::Serialize;

mod generate;
mod graph;

use crate::edits::Operation;
use crate::engine::Engine;
use crate::tools::toolsets::{TOOLS, ToolsetSelection};
use crate::tools::{
    self, AstQueryParams, EditParams, FileReadParams, FileSearchParams, PositionParams, ReferencesParams, ToolError,
};
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
    /// Serve the editor over stdin/stdout as one language server in front of gopls, clangd,
    /// basedpyright, typescript-language-server, … (configure your editor to run this).
    Lsp,
    /// Serve MCP over stdin/stdout (register this command with your MCP client). While a
    /// `filepuff lsp` (an editor) serves this workspace, attach to its Engine: live buffers,
    /// the same language servers (also when the editor starts, or restarts, later).
    Mcp(McpServeArgs),
    /// Serve MCP over Streamable HTTP (loopback only, a bearer token per start).
    Serve(ServeArgs),
    /// List every tool with its toolset and whether this configuration serves it.
    Tools(McpArgs),
    /// Search file contents (the file_search tool).
    Search(SearchArgs),
    /// Read a file, or its symbol outline (the file_read tool).
    Read(ReadArgs),
    /// Structural search with an ast-grep pattern (the ast_query tool).
    Query(QueryArgs),
    /// Edit a file by AST node, text, regex or line range (edit_apply; edit_preview with --dry-run).
    Edit(EditArgs),
    /// Go to the definition of the symbol at FILE:LINE[:COLUMN] (find_definition).
    Def(PositionArgs),
    /// List the references of the symbol at FILE:LINE[:COLUMN] (find_references).
    Refs(RefsArgs),
    /// Hover and definition of the symbol at FILE:LINE[:COLUMN] (symbol_at).
    Hover(PositionArgs),
    /// Rename the symbol at FILE:LINE[:COLUMN] across the project (rename_symbol; --apply writes).
    Rename(RenameArgs),
    /// The language server's symbols of a file (document_symbols).
    Symbols {
        /// The file.
        file: String,
        /// Print the tool's JSON result instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Callers (or with --outgoing, callees) of the function at FILE:LINE[:COLUMN] (call_hierarchy).
    Calls {
        #[command(flatten)]
        position: PositionArgs,
        /// What it calls instead of who calls it.
        #[arg(long)]
        outgoing: bool,
        #[command(flatten)]
        page: PageArgs,
    },
    /// The language server's diagnostics for a file (diagnostics).
    Diag {
        /// The file.
        file: String,
        /// Print the tool's JSON result instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        page: PageArgs,
    },
    /// Which language servers are installed, their versions, and what each serves; without
    /// --json also the graph store (exit status 2 when the configured one cannot be used).
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Build and query the persistent code knowledge graph.
    Graph(graph::GraphArgs),
    /// Print a shell completion script (e.g. `filepuff completions bash > ~/.local/share/bash-completion/completions/filepuff`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page filepuff(1) in roff (e.g. `filepuff man > ~/.local/share/man/man1/filepuff.1`).
    Man,
}

#[derive(Debug, clap::Args)]
pub struct PositionArgs {
    /// FILE:LINE[:COLUMN] (1-based; the column counts characters).
    pub location: String,
    /// The identifier's text: the column may then be omitted or approximate.
    #[arg(long, value_name = "NAME")]
    pub symbol: Option<String>,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RenameArgs {
    #[command(flatten)]
    pub position: PositionArgs,
    /// The new name.
    pub new_name: String,
    /// Write the change (default: show the diff only).
    #[arg(long)]
    pub apply: bool,
}

#[derive(Debug, clap::Args)]
pub struct RefsArgs {
    #[command(flatten)]
    pub position: PositionArgs,
    /// Leave the declaration out.
    #[arg(long)]
    pub no_declaration: bool,
    #[command(flatten)]
    pub page: PageArgs,
}

/// Paging of a list-returning LSP command (the tools' `offset`, `max_results`, `max_chars`).
#[derive(Debug, Clone, clap::Args)]
pub struct PageArgs {
    /// Items to skip first (a previous page's next_offset).
    #[arg(long)]
    pub offset: Option<usize>,
    /// Most items to print.
    #[arg(long)]
    pub max_results: Option<usize>,
    /// Most characters of JSON (default `[limits] max_output_chars`).
    #[arg(long)]
    pub max_chars: Option<usize>,
}

impl PageArgs {
    fn params(&self) -> tools::PageParams {
        tools::PageParams { offset: self.offset, max_results: self.max_results, max_chars: self.max_chars }
    }
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, e.g. 127.0.0.1:8765 (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    pub http: std::net::SocketAddr,
    /// Accept a non-loopback ADDR (other machines can then reach it; the token still guards it).
    #[arg(long)]
    pub allow_remote: bool,
    #[command(flatten)]
    pub toolsets: McpArgs,
}

#[derive(Debug, clap::Args)]
pub struct McpServeArgs {
    #[command(flatten)]
    pub toolsets: McpArgs,
    /// Never attach to an editor's Engine: serve the files on disk with language servers of
    /// this process.
    #[arg(long)]
    pub standalone: bool,
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Toolsets to serve, comma-separated: core, lsp, local, index, graph, all, default
    /// (default: `[mcp] toolsets` in filepuff.toml, else core,lsp).
    #[arg(long, value_name = "LIST")]
    pub toolsets: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// ast-grep pattern, e.g. 'func $NAME($$$ARGS) error'.
    pub pattern: String,
    /// Language of the pattern: go, typescript, tsx, javascript, python, c, cpp, rust, …
    #[arg(short = 'l', long = "lang", value_name = "LANG")]
    pub language: String,
    /// Files or directories to search (default: the root).
    pub paths: Vec<String>,
    /// Keep matches whose name ($NAME, or the declared name) matches this regex.
    #[arg(long, value_name = "REGEX")]
    pub name_matches: Option<String>,
    /// Keep matches whose name is exactly this.
    #[arg(long, value_name = "NAME")]
    pub name_exact: Option<String>,
    /// Keep matches of this node kind (repeatable).
    #[arg(long = "kind", value_name = "KIND")]
    pub kind_in: Vec<String>,
    /// Matches to show (default 100); totals count all.
    #[arg(short = 'm', long, value_name = "N")]
    pub max_results: Option<usize>,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
}

/// An edit operation on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CliOperation {
    Replace,
    #[value(alias = "insert_before")]
    InsertBefore,
    #[value(alias = "insert_after")]
    InsertAfter,
    Delete,
}

#[derive(Debug, clap::Args)]
pub struct EditArgs {
    /// File to edit.
    pub file: String,
    /// What to do with the selected target.
    #[arg(long = "op", value_enum, value_name = "OP")]
    pub operation: CliOperation,
    /// New content, verbatim (no escapes are interpreted).
    #[arg(long, value_name = "TEXT", conflicts_with = "content_file")]
    pub content: Option<String>,
    /// Read the new content from a file ('-' for stdin).
    #[arg(long, value_name = "PATH")]
    pub content_file: Option<PathBuf>,
    /// AST node kind to select (code files).
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Declared name to select: function, method (also qualified: Type.method, ns::T::f), class, type (code files).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// 1-based line: narrows AST selection; starts a line range in text mode.
    #[arg(long, value_name = "LINE")]
    pub line: Option<usize>,
    /// Last line of a line range (1-based, inclusive).
    #[arg(long, value_name = "LINE")]
    pub line_end: Option<usize>,
    /// 0-based index among several candidates.
    #[arg(long, value_name = "N")]
    pub index: Option<usize>,
    /// Exact text to select.
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
    /// Regex to select.
    #[arg(long, value_name = "REGEX")]
    pub pattern: Option<String>,
    /// Refuse unless the file's content hash is this (sha256:…).
    #[arg(long, value_name = "HASH")]
    pub expected_hash: Option<String>,
    /// Show the diff without writing (edit_preview).
    #[arg(long)]
    pub dry_run: bool,
    /// Report the language server's diagnostics introduced by the edit (the default when the
    /// file's language has an installed server).
    #[arg(long, conflicts_with = "no_diagnostics")]
    pub diagnostics: bool,
    /// Do not ask the language server for diagnostics.
    #[arg(long)]
    pub no_diagnostics: bool,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
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
    /// Character column (1-based) of the first line to start from: continues a cut line.
    #[arg(long, value_name = "COL")]
    pub column: Option<usize>,
    /// Characters of content to print at most (default 100000, `[read] max_chars`).
    #[arg(long, value_name = "N")]
    pub max_chars: Option<usize>,
    /// Top-level outline symbols to skip: continues a cut outline.
    #[arg(long, value_name = "N")]
    pub symbols_offset: Option<usize>,
    /// Print the tool's JSON result instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Whether `command` reads or edits the workspace's files (a tool as a subcommand), where an
/// editor's unsaved buffers would differ from the disk.
fn reads_the_workspace(command: &Command) -> bool {
    !matches!(command, Command::Lsp | Command::Mcp(_) | Command::Serve(_) | Command::Tools(_) | Command::Doctor { .. })
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
    match cli.command {
        Command::Completions { shell } => {
            return finish_write(generate::write_completions(shell, &mut std::io::stdout()));
        }
        Command::Man => return finish_write(generate::write_man_page(&mut std::io::stdout())),
        _ => {}
    }
    if let Command::Lsp = cli.command {
        // The workspace comes from the editor's `initialize`; --root (or the current
        // directory) is the fallback.
        return match crate::proxy::serve_stdio(cli.root.clone(), Arc::new(crate::mcp::attach::SocketDoor)) {
            Ok(()) => ExitCode::from(EXIT_OK),
            Err(err) => {
                eprintln!("filepuff lsp: {err:#}");
                ExitCode::from(EXIT_ERROR)
            }
        };
    }
    let json = match &cli.command {
        Command::Lsp
        | Command::Mcp(_)
        | Command::Serve(_)
        | Command::Tools(_)
        | Command::Completions { .. }
        | Command::Man => false,
        Command::Search(args) => args.json,
        Command::Read(args) => args.json,
        Command::Query(args) => args.json,
        Command::Edit(args) => args.json,
        Command::Def(args) | Command::Hover(args) => args.json,
        Command::Refs(args) => args.position.json,
        Command::Rename(args) => args.position.json,
        Command::Doctor { json } | Command::Diag { json, .. } | Command::Symbols { json, .. } => *json,
        Command::Calls { position, .. } => position.json,
        Command::Graph(args) => args.json,
    };
    let workspace = match Workspace::open(&root) {
        Ok(workspace) => workspace,
        Err(err) => return report_error(&ToolError::from(err), json),
    };
    let engine = Arc::new(match cli.command {
        // Sessions: a second question reuses the first one's parse trees.
        Command::Mcp(_) | Command::Serve(_) => Engine::new(workspace),
        _ => Engine::one_shot(workspace),
    });
    if reads_the_workspace(&cli.command) {
        // The CLI reads and writes the disk: say so when an editor may hold unsaved text.
        let notice = crate::mcp::attach::DiskNotice::new(engine.workspace().root(), "the CLI runs on its own");
        if let Some(note) = notice.note() {
            eprintln!("filepuff: note: {}", note.replacen("this agent is", "this command is", 1));
        }
    }
    match cli.command {
        Command::Lsp | Command::Completions { .. } | Command::Man => ExitCode::from(EXIT_OK),
        Command::Mcp(args) => match toolset_selection(&engine, args.toolsets.toolsets.as_deref()) {
            Ok(toolsets) if args.standalone => {
                let notice = crate::mcp::attach::DiskNotice::new(
                    engine.workspace().root(),
                    "filepuff mcp was started with --standalone",
                );
                serve_mcp(engine, toolsets, notice)
            }
            Ok(_) => bridge_mcp(engine, args.toolsets.toolsets),
            Err(err) => report_error(&err, false),
        },
        Command::Serve(args) => match toolset_selection(&engine, args.toolsets.toolsets.as_deref()) {
            Ok(toolsets) => serve_http(engine, args, toolsets),
            Err(err) => report_error(&err, false),
        },
        Command::Tools(args) => match toolset_selection(&engine, args.toolsets.as_deref()) {
            Ok(toolsets) => {
                print_tools(&toolsets);
                ExitCode::from(EXIT_OK)
            }
            Err(err) => report_error(&err, false),
        },
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
                offset: None,
                max_chars: None,
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
                column_start: args.column,
                max_chars: args.max_chars,
                symbols_offset: args.symbols_offset,
            };
            match tools::file_read(&engine, params) {
                Ok(output) => {
                    print_output(&output, json, tools::render::file_read);
                    ExitCode::from(EXIT_OK)
                }
                Err(err) => report_error(&err, json),
            }
        }
        Command::Query(args) => {
            let json = args.json;
            let params = AstQueryParams {
                pattern: args.pattern,
                language: args.language,
                paths: args.paths,
                name_matches: args.name_matches,
                name_exact: args.name_exact,
                kind_in: args.kind_in,
                max_results: args.max_results,
                offset: None,
            };
            match tools::ast_query(&engine, params) {
                Ok(output) => {
                    print_output(&output, json, tools::render::ast_query);
                    ExitCode::from(if output.total_matches == 0 { EXIT_NO_MATCH } else { EXIT_OK })
                }
                Err(err) => report_error(&err, json),
            }
        }
        Command::Edit(args) => run_edit(&engine, args),
        Command::Doctor { json } => {
            let reports = crate::backends::doctor(engine.backends());
            print_output(&reports, json, render_doctor);
            // The JSON stays the list of servers (editors read it); the text adds the graph, and
            // a configured store that cannot be used is an error (exit status 2), as it is for
            // every graph tool.
            if !json {
                let (line, usable) = graph_doctor_line(&engine);
                println!("{line}");
                if !usable {
                    return ExitCode::from(EXIT_ERROR);
                }
            }
            ExitCode::from(EXIT_OK)
        }
        Command::Rename(args) => match position_params(&args.position) {
            Ok(position) => {
                let params = tools::RenameSymbolParams {
                    position,
                    new_name: args.new_name,
                    apply: args.apply,
                    confirm: false,
                    diagnostics: None,
                };
                finish(tools::rename_symbol(&engine, params), args.position.json, tools::render::rename_symbol)
            }
            Err(err) => report_error(&err, args.position.json),
        },
        Command::Symbols { file, json, page } => finish(
            tools::document_symbols(&engine, tools::DocumentSymbolsParams { file, page: page.params() }),
            json,
            tools::render::document_symbols,
        ),
        Command::Calls { position, outgoing, page } => match position_params(&position) {
            Ok(params) => {
                let direction = Some(if outgoing { "outgoing" } else { "incoming" }.to_owned());
                let params = tools::CallHierarchyParams { position: params, direction, page: page.params() };
                finish(tools::call_hierarchy(&engine, params), position.json, tools::render::call_hierarchy)
            }
            Err(err) => report_error(&err, position.json),
        },
        Command::Diag { file, json, page } => finish(
            tools::diagnostics(&engine, tools::DiagnosticsParams { file: Some(file), page: page.params() }),
            json,
            tools::render::diagnostics,
        ),
        Command::Def(args) => match position_params(&args) {
            Ok(params) => finish(tools::find_definition(&engine, params), args.json, tools::render::find_definition),
            Err(err) => report_error(&err, args.json),
        },
        Command::Hover(args) => match position_params(&args) {
            Ok(params) => finish(tools::symbol_at(&engine, params), args.json, tools::render::symbol_at),
            Err(err) => report_error(&err, args.json),
        },
        Command::Refs(args) => match position_params(&args.position) {
            Ok(position) => {
                let params = ReferencesParams {
                    position,
                    include_declaration: Some(!args.no_declaration),
                    page: args.page.params(),
                };
                finish(tools::find_references(&engine, params), args.position.json, tools::render::find_references)
            }
            Err(err) => report_error(&err, args.position.json),
        },
    }
}

/// The exit status of printing generated text: a reader that stopped early (`| head`, a closed
/// pipe) is not an error, as in ripgrep; any other failed write is.
fn finish_write(result: std::io::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(EXIT_OK),
        Err(err) => {
            eprintln!("filepuff: cannot write the output: {err}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Which graph store is in use and whether it is reachable, and whether it can be used. A
/// PostgreSQL store is connected to (and migrated, as on any first use); the SQLite file is only
/// looked at, not created.
fn graph_doctor_line(engine: &Engine) -> (String, bool) {
    let location = engine.graph_location();
    if engine.graph_url().is_none() {
        let (state, usable) = match engine.graph_path() {
            Ok(path) if path.is_file() => ("exists".to_owned(), true),
            Ok(_) => ("not created yet (on the first graph tool call)".to_owned(), true),
            Err(err) => (format!("unusable: {err}"), false),
        };
        return (format!("graph store: sqlite {location} — {state}"), usable);
    }
    match engine.graph().and_then(|store| store.counts()) {
        Ok((components, relationships)) => (
            format!(
                "graph store: postgres {location} — reachable, {components} components, {relationships} relationships"
            ),
            true,
        ),
        Err(err) => (format!("graph store: postgres {location} — unreachable: {err}"), false),
    }
}

fn render_doctor(reports: &Vec<crate::backends::ServerReport>) -> String {
    let mut out = String::new();
    for r in reports {
        let state = match (&r.path, r.disabled) {
            (_, true) => "disabled".to_owned(),
            (Some(path), _) => match &r.version {
                Some(version) => format!("found {} ({version})", path.display()),
                None => format!("found {}, but its version command failed: it may not run", path.display()),
            },
            (None, _) => match &r.unusable {
                Some(why) => format!("missing: {why} — install: {}", r.install_hint),
                None => format!("missing — install: {}", r.install_hint),
            },
        };
        let serves = if r.serves.is_empty() { "-".to_owned() } else { r.serves.join(", ") };
        out.push_str(&format!("{:<28} {:<40} serves: {serves}\n  {state}\n", r.name, r.command.join(" ")));
        if r.serves.is_empty() && r.version.is_some() && !r.disabled {
            // Installed and runnable, but another server comes first for its languages.
            let languages = r.languages.join(", ");
            out.push_str(&format!(
                "  not used: another server comes first for {languages}; list it in [languages.NAME] servers to run it beside that one\n"
            ));
        }
    }
    out
}

/// `FILE:LINE[:COLUMN]` into position parameters.
fn position_params(args: &PositionArgs) -> Result<PositionParams, ToolError> {
    let bad = || ToolError::invalid_params(&format!("expected FILE:LINE[:COLUMN], got {:?}", args.location));
    let mut parts = args.location.rsplitn(3, ':').collect::<Vec<_>>();
    parts.reverse();
    let (file, line, column) = match parts.as_slice() {
        [file, line, column] if column.parse::<usize>().is_ok() => (file.to_string(), *line, Some(*column)),
        [file, line] => (file.to_string(), *line, None),
        [file, rest, line] => (format!("{file}:{rest}"), *line, None),
        _ => return Err(bad()),
    };
    Ok(PositionParams {
        file,
        line: line.parse().map_err(|_| bad())?,
        column: column.map(|c| c.parse()).transpose().map_err(|_| bad())?,
        symbol: args.symbol.clone(),
    })
}

fn finish<O: Serialize>(result: Result<O, ToolError>, json: bool, render: fn(&O) -> String) -> ExitCode {
    match result {
        Ok(output) => {
            print_output(&output, json, render);
            ExitCode::from(EXIT_OK)
        }
        Err(err) => report_error(&err, json),
    }
}

fn run_edit(engine: &Engine, args: EditArgs) -> ExitCode {
    let json = args.json;
    let content = match &args.content_file {
        Some(path) => {
            let read = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            };
            match read {
                Ok(content) => Some(content),
                Err(err) => {
                    let error =
                        ToolError::invalid_params(&format!("cannot read --content-file {}: {err}", path.display()));
                    return report_error(&error, json);
                }
            }
        }
        None => args.content,
    };
    let params = EditParams {
        file: args.file,
        operation: match args.operation {
            CliOperation::Replace => Operation::Replace,
            CliOperation::InsertBefore => Operation::InsertBefore,
            CliOperation::InsertAfter => Operation::InsertAfter,
            CliOperation::Delete => Operation::Delete,
        },
        new_content: content,
        selector_kind: args.kind,
        selector_name: args.name,
        selector_line: args.line,
        selector_index: args.index,
        selector_line_end: args.line_end,
        selector_text: args.text,
        selector_pattern: args.pattern,
        expected_hash: args.expected_hash,
        // The CLI runs an Engine of its own, without an editor to ask.
        confirm: None,
        diagnostics: match (args.diagnostics, args.no_diagnostics) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
    };
    let result = if args.dry_run { tools::edit_preview(engine, params) } else { tools::edit_apply(engine, params) };
    match result {
        Ok(output) => {
            print_output(&output, json, tools::render::edit);
            ExitCode::from(EXIT_OK)
        }
        Err(err) => report_error(&err, json),
    }
}

/// The toolsets to serve: `--toolsets`, else `[mcp] toolsets`, else the default.
fn toolset_selection(engine: &Engine, flag: Option<&str>) -> Result<ToolsetSelection, ToolError> {
    crate::mcp::attach::toolsets(engine, flag).map_err(|message| {
        if flag.is_some() {
            ToolError::invalid_params(&message)
        } else {
            ToolError::new(
                crate::tools::ErrorCode::ConfigInvalid,
                message,
                "Fix filepuff.toml; every key is described in docs/configuration.md.",
            )
        }
    })
}

/// `filepuff tools`: one line per tool, grouped by toolset, marked served or not.
fn print_tools(toolsets: &ToolsetSelection) {
    use std::io::Write;
    let implemented = crate::mcp::McpServer::implemented_tools();
    let mut out = String::new();
    for (name, toolset) in TOOLS {
        let state = match (toolsets.contains(*toolset), implemented.iter().any(|t| t == name)) {
            (true, true) => "enabled",
            (true, false) => "enabled (not in this build yet)",
            (false, _) => "disabled",
        };
        out.push_str(&format!("{:<26} {:<6} {state}\n", name, toolset.name()));
    }
    out.push_str(&format!("\nserved toolsets: {}\n", toolsets.names().join(", ")));
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
}

/// `filepuff serve --http ADDR` (see `http`).
fn serve_http(engine: Arc<Engine>, args: ServeArgs, toolsets: ToolsetSelection) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("filepuff: cannot start the async runtime: {err}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let result = runtime.block_on(crate::mcp::http::serve(engine, args.http, args.allow_remote, toolsets));
    // Stopped by a signal: do not wait for tool calls still running on the blocking pool.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(err) => {
            eprintln!("filepuff serve: {err:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// `filepuff mcp`: attached to the editor's Engine while a `filepuff lsp` serves the root,
/// standalone otherwise (see `attach::bridge`).
fn bridge_mcp(engine: Arc<Engine>, toolsets: Option<String>) -> ExitCode {
    let root = engine.workspace().root().to_path_buf();
    run_stdio_session(engine, |engine| async move { crate::mcp::attach::bridge(&root, toolsets, engine).await })
}

/// `filepuff mcp --standalone`: never attaches; results say so while an editor runs.
fn serve_mcp(engine: Arc<Engine>, toolsets: ToolsetSelection, notice: crate::mcp::attach::DiskNotice) -> ExitCode {
    run_stdio_session(engine, |engine| crate::mcp::serve_stdio(engine, toolsets, Some(notice)))
}

/// Runs one stdio MCP session (`filepuff mcp`) to its end on a runtime of one thread for the
/// session, the bridge and `engine`'s language-server clients, as the editor proxy has (tools
/// run on its blocking pool): a request passes between them without thread wake-ups, so the
/// stdin and stdout threads, the tool's thread and this one are all it crosses. Then stops the
/// language servers (on that runtime, while it still runs its tasks).
fn run_stdio_session<F, Fut>(engine: Arc<Engine>, session: F) -> ExitCode
where
    F: FnOnce(Arc<Engine>) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("filepuff: cannot start the async runtime: {err}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    engine.backends().adopt_runtime(runtime.handle().clone());
    let result = runtime.block_on(session(engine.clone()));
    // Dropping the Engine on this runtime's thread could not wait for its servers to stop.
    runtime.block_on(async move {
        let _ = tokio::task::spawn_blocking(move || engine.backends().stop_all()).await;
    });
    // The stdin thread may still sit in a blocking read, a cancelled tool on the blocking pool.
    runtime.shutdown_background();
    match result {
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
