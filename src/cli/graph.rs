//! `filepuff graph …`: build and query the knowledge graph from the command line (`index`,
//! `search`, `status`, `show`, `plan`). Each subcommand except `index` calls the same tool
//! function as MCP.

use std::process::ExitCode;

use clap::Subcommand;
use serde::Serialize;

use super::{EXIT_ERROR, EXIT_NO_MATCH, EXIT_OK, print_output, report_error};
use crate::engine::Engine;
use crate::graph::calls::{CallsMode, LspCallsLimits};
use crate::graph::index::IndexOptions;
use crate::tools::ToolError;
use crate::tools::graph::{self as graph, render};

/// `filepuff graph` and its subcommand.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    #[command(subcommand)]
    pub command: GraphCommand,
    /// Print the JSON result instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Analyse every parsed file under PATHS (default: the root) into the graph; files that
    /// vanished are removed, changed ones updated in place.
    Index {
        /// Files or directories, relative to the root.
        paths: Vec<String>,
        /// Where `calls` come from: auto (the file's language server when one is installed,
        /// else syntax), lsp (a configured server that is missing or fails is an error, exit 2),
        /// syntax (by name, marked approximate; starts no server). Default: [graph] calls, auto.
        #[arg(long, value_name = "SOURCE", value_parser = ["auto", "lsp", "syntax"])]
        calls: Option<String>,
    },
    /// Ranked search of the graph (the search_code tool).
    Search {
        query: String,
        /// Only these component types (repeatable): file, class, function, method, …
        #[arg(short = 't', long = "type", value_name = "TYPE")]
        component_types: Vec<String>,
        /// Results to show (default 10).
        #[arg(short = 'm', long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Implementation status (the get_project_status tool).
    Status {
        /// Group counts by type, status, file or language.
        #[arg(long, value_name = "BY")]
        grouping: Option<String>,
    },
    /// One component by id or name, with its relationships (the get_component tool).
    Show { identifier: String },
    /// The implementation plan of everything not yet implemented (get_implementation_plan).
    Plan,
    /// Copy this workspace's SQLite graph (ids, metadata, times, relationships, status history)
    /// into an empty PostgreSQL database and verify the counts (exit 2 when they differ).
    Migrate {
        /// postgres://user:password@host:port/dbname (the password is never printed).
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// The `index` result as `--json` prints it.
#[derive(Debug, Serialize)]
struct IndexOutput {
    database: String,
    files_analyzed: usize,
    files_skipped: usize,
    files_removed: usize,
    components_added: usize,
    components_updated: usize,
    components_unchanged: usize,
    components_removed: usize,
    relationships_written: usize,
    total_components: usize,
    total_relationships: usize,
    elapsed_ms: u128,
    errors: Vec<String>,
    error_count: usize,
    /// `auto`, `lsp` or `syntax`.
    calls_mode: &'static str,
    /// Where each language's calls came from in this run.
    calls: Vec<CallsOutput>,
    /// `calls` relationships in the graph afterwards, from language servers and from syntax.
    total_calls_lsp: usize,
    total_calls_syntax: usize,
}

/// One language's calls in the `index` result.
#[derive(Debug, Serialize)]
struct CallsOutput {
    language: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    /// Files (with functions or methods) whose calls the server gave.
    lsp_files: usize,
    /// Files whose calls come from syntax, by name (approximate).
    syntax_files: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    failed: bool,
}

fn render_index(output: &IndexOutput) -> String {
    let mut out = format!(
        "indexed {} files in {} ms ({} skipped, {} removed): components {} added, {} updated, {} unchanged, {} removed; {} relationships written\ngraph {}: {} components, {} relationships\n",
        output.files_analyzed,
        output.elapsed_ms,
        output.files_skipped,
        output.files_removed,
        output.components_added,
        output.components_updated,
        output.components_unchanged,
        output.components_removed,
        output.relationships_written,
        output.database,
        output.total_components,
        output.total_relationships
    );
    for calls in output.calls.iter().filter(|c| c.lsp_files + c.syntax_files > 0 || c.failed) {
        let from_server = match &calls.server {
            Some(server) => format!("{} file(s) from {server}, ", calls.lsp_files),
            None => String::new(),
        };
        out.push_str(&format!(
            "calls, {}: {from_server}{} file(s) by name from syntax (approximate){}\n",
            calls.language,
            calls.syntax_files,
            calls.note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "calls in the graph: {} from language servers, {} from syntax\n",
        output.total_calls_lsp, output.total_calls_syntax
    ));
    for error in &output.errors {
        out.push_str(&format!("skipped: {error}\n"));
    }
    out
}

/// Runs `filepuff graph …`.
pub fn run(engine: &Engine, args: GraphArgs) -> ExitCode {
    let json = args.json;
    match args.command {
        GraphCommand::Index { paths, calls } => match index(engine, &paths, calls.as_deref()) {
            Ok(output) => {
                print_output(&output, json, render_index);
                let failed: Vec<&CallsOutput> = output.calls.iter().filter(|c| c.failed).collect();
                if failed.is_empty() {
                    return ExitCode::from(EXIT_OK);
                }
                for calls in failed {
                    eprintln!(
                        "filepuff: --calls lsp: {} calls of {} file(s) did not come from its server: {}",
                        calls.language,
                        calls.syntax_files,
                        calls.note.as_deref().unwrap_or("")
                    );
                }
                ExitCode::from(EXIT_ERROR)
            }
            Err(err) => report_error(&err, json),
        },
        GraphCommand::Search { query, component_types, limit } => {
            let params = graph::SearchCodeParams { query, component_types, limit };
            match graph::search_code(engine, params) {
                Ok(output) => {
                    print_output(&output, json, render::search_code);
                    ExitCode::from(if output.count == 0 { EXIT_NO_MATCH } else { EXIT_OK })
                }
                Err(err) => report_error(&err, json),
            }
        }
        GraphCommand::Status { grouping } => {
            let params = graph::ProjectStatusParams { filters: None, grouping };
            finish(graph::get_project_status(engine, params), json, render::get_project_status)
        }
        GraphCommand::Show { identifier } => {
            let params = graph::GetComponentParams { identifier, include_related: true };
            finish(graph::get_component(engine, params), json, render::get_component)
        }
        GraphCommand::Migrate { to } => migrate(engine, &to, json),
        GraphCommand::Plan => {
            let params = graph::ImplementationPlanParams { component_ids: None, dependencies_depth: None };
            finish(graph::get_implementation_plan(engine, params), json, render::get_implementation_plan)
        }
    }
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

fn index(engine: &Engine, paths: &[String], calls: Option<&str>) -> Result<IndexOutput, ToolError> {
    let workspace = engine.workspace();
    let config = &workspace.config().graph;
    let mode_name = calls.unwrap_or(&config.calls);
    let mode = CallsMode::parse(mode_name).ok_or_else(|| {
        ToolError::invalid_params(&format!("[graph] calls must be auto, lsp or syntax, not {mode_name:?}"))
    })?;
    let options = IndexOptions { calls: mode, limits: LspCallsLimits::from_config(config, engine.backends().config()) };
    let mut resolved = Vec::new();
    for path in paths {
        let path = workspace.resolve(path)?;
        if !path.absolute.exists() {
            return Err(ToolError::new(
                crate::tools::ErrorCode::FileNotFound,
                format!("file not found: {}", path.relative),
                "Give files or directories that exist, relative to the workspace root.",
            )
            .with("path", path.relative));
        }
        resolved.push(path);
    }
    let store = graph_store(engine)?;
    let report =
        crate::graph::index::index(&store, workspace, engine.documents(), engine.backends(), &resolved, &options)
            .map_err(|err| crate::tools::graph::graph_error(err, engine))?;
    Ok(IndexOutput {
        database: store.location(),
        files_analyzed: report.files_analyzed,
        files_skipped: report.files_skipped,
        files_removed: report.files_removed,
        components_added: report.counts.added,
        components_updated: report.counts.updated,
        components_unchanged: report.counts.unchanged,
        components_removed: report.counts.removed,
        relationships_written: report.counts.relationships,
        total_components: report.total_components,
        total_relationships: report.total_relationships,
        elapsed_ms: report.elapsed_ms,
        errors: report.errors,
        error_count: report.error_count,
        calls_mode: mode.as_str(),
        calls: report
            .calls
            .into_iter()
            .map(|c| CallsOutput {
                language: c.language,
                server: c.server,
                lsp_files: c.lsp_files,
                syntax_files: c.syntax_files,
                note: c.note,
                failed: c.failed,
            })
            .collect(),
        total_calls_lsp: report.total_calls_lsp,
        total_calls_syntax: report.total_calls_syntax,
    })
}

/// `graph migrate --to URL`: the SQLite graph of the workspace into the PostgreSQL database.
fn migrate(engine: &Engine, url: &str, json: bool) -> ExitCode {
    use crate::graph::{GraphStore, migrate};
    let opened = engine
        .graph_path()
        .and_then(|path| {
            // Opening creates a graph; migrating a graph that was never made would copy nothing.
            if !path.is_file() {
                return Err(crate::graph::GraphError::Open {
                    message: "there is no SQLite graph here to migrate; `filepuff graph index` (or the graph tools) \
                              make one"
                        .to_owned(),
                    path,
                });
            }
            GraphStore::open(&path)
        })
        .and_then(|from| Ok((from, GraphStore::open_postgres(url)?)));
    let (from, to) = match opened {
        Ok(stores) => stores,
        Err(err) => return report_error(&crate::tools::graph::graph_error(err, engine), json),
    };
    let copied = match migrate::copy(&from, &to) {
        Ok(copied) => copied,
        Err(err) => return report_error(&crate::tools::graph::graph_error(err, engine), json),
    };
    let output = MigrateOutput {
        from: from.location(),
        to: to.location(),
        verified: copied.verified(),
        tables: copied
            .source
            .0
            .iter()
            .zip(&copied.target.0)
            .map(|((table, source), (_, target))| MigrateTable { table, source: *source, target: *target })
            .collect(),
    };
    print_output(&output, json, |o: &MigrateOutput| {
        let mut out = format!("copied {} -> {}\n", o.from, o.to);
        for t in &o.tables {
            out.push_str(&format!(
                "  {:<15} {:>8} -> {:>8}{}\n",
                t.table,
                t.source,
                t.target,
                if t.source == t.target { "" } else { "  DIFFERS" }
            ));
        }
        out.push_str(if o.verified { "counts verified\n" } else { "COUNTS DIFFER\n" });
        out
    });
    ExitCode::from(if output.verified { EXIT_OK } else { EXIT_ERROR })
}

/// The `migrate` result as `--json` prints it.
#[derive(Debug, Serialize)]
struct MigrateOutput {
    /// The SQLite file.
    from: String,
    /// The PostgreSQL URL without its password.
    to: String,
    /// Every table has as many rows in the target as in the source.
    verified: bool,
    tables: Vec<MigrateTable>,
}

#[derive(Debug, Serialize)]
struct MigrateTable {
    table: &'static str,
    source: usize,
    target: usize,
}

fn graph_store(engine: &Engine) -> Result<std::sync::Arc<crate::graph::GraphStore>, ToolError> {
    engine.graph().map_err(|err| crate::tools::graph::graph_error(err, engine))
}
