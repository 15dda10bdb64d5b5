//! The MCP face: an rmcp server whose tools call the functions in [`crate::tools`].
//!
//! Each tool runs on tokio's blocking pool (walks and parses are CPU and file-system work) and
//! inside `catch_unwind`, so a bug in one call becomes an `INTERNAL` tool error instead of
//! taking the server down. Results carry a readable text block and `structuredContent` matching
//! the tool's `outputSchema`; failures are `isError` results whose `structuredContent` is a
//! [`ToolError`] (code, name, message, context, remediation).

mod graph;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::engine::Engine;
use crate::tools::{self, FileReadOutput, FileReadParams, FileSearchOutput, FileSearchParams, ToolError};

/// The MCP server: one Engine, the tool router.
#[derive(Clone)]
pub struct McpServer {
    engine: Arc<Engine>,
    tool_router: ToolRouter<McpServer>,
}

#[tool_router]
impl McpServer {
    /// A server over `engine`.
    pub fn new(engine: Arc<Engine>) -> McpServer {
        McpServer { engine, tool_router: McpServer::tool_router() + McpServer::graph_tool_router() }
    }

    #[tool(
        description = "Health check - returns pong to verify the server is running",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn ping(&self) -> String {
        tools::ping().to_owned()
    }

    #[tool(
        description = "Search for text patterns in files (ripgrep's engine, in process). Regex by default (regex=false for a literal), file type filtering with ripgrep's type names (go, ts, py, c, cpp, rust, js, ...), context lines (default 2), max_results (default 100). Respects .gitignore. Open editor buffers are searched in their unsaved text. Results are grouped by file with 1-based line and column (characters) and totals over the whole search.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FileSearchParams>(),
        output_schema = schema_for_output::<FileSearchOutput>()
    )]
    async fn file_search(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(run(&self.engine, arguments, tools::file_search, tools::render::file_search).await)
    }

    #[tool(
        description = "Read a file's contents with optional line range (1-based, inclusive) and AST symbol summary. include_ast adds the outline (functions, methods with receiver/class, classes, structs, interfaces, types, enums, constants) with 1-based line ranges; symbols_only returns just the outline (token-efficient); max_lines (default 2000) truncates with a note saying where to continue. Open editor buffers are read in their unsaved text.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FileReadParams>(),
        output_schema = schema_for_output::<FileReadOutput>()
    )]
    async fn file_read(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(run(&self.engine, arguments, tools::file_read, tools::render::file_read).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("filepuff", env!("CARGO_PKG_VERSION"))
                    .with_title("filepuff: the editor's live code, for agents"),
            )
            .with_instructions(format!(
                "filepuff serves the workspace at {}. Paths are relative to it. Lines are 1-based; columns are 1-based and count characters.",
                self.engine.workspace().root().display()
            ))
    }
}

/// Parses a tool's arguments, runs the tool on the blocking pool and turns its outcome into a
/// tool result. Arguments are parsed here rather than by rmcp so that a wrong argument is a
/// structured `PARAMS_INVALID` error like every other failure.
async fn run<P, O>(
    engine: &Arc<Engine>,
    arguments: JsonObject,
    call: fn(&Engine, P) -> Result<O, ToolError>,
    render: fn(&O) -> String,
) -> CallToolResult
where
    P: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
{
    let params = match serde_json::from_value::<P>(serde_json::Value::Object(arguments)) {
        Ok(params) => params,
        Err(err) => return error_result(&ToolError::invalid_params(&err.to_string())),
    };
    let engine = engine.clone();
    let joined = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(&engine, params)))
    })
    .await;
    let outcome = match joined {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(panic)) => Err(ToolError::internal(format!("the tool panicked: {}", panic_message(&panic)))),
        Err(err) => Err(ToolError::internal(format!("the tool's worker failed: {err}"))),
    };
    match outcome {
        Ok(output) => match serde_json::to_value(&output) {
            Ok(structured) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(render(&output))]);
                result.structured_content = Some(structured);
                result
            }
            Err(err) => error_result(&ToolError::internal(format!("cannot serialise the result: {err}"))),
        },
        Err(err) => error_result(&err),
    }
}

fn error_result(err: &ToolError) -> CallToolResult {
    let mut result = CallToolResult::structured_error(err.to_json());
    result.content = vec![ContentBlock::text(err.to_string())];
    result
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Serves MCP over stdin/stdout until the client disconnects.
pub async fn serve_stdio(engine: Arc<Engine>) -> anyhow::Result<()> {
    let service = McpServer::new(engine).serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The MCP tool surface is a compatibility promise: its snapshot is a reviewed diff.

    use super::*;

    /// `tests/snapshots/mcp_tools.json` holds `tools/list` (names, descriptions, input and
    /// output schemas, annotations). Regenerate with `UPDATE_SNAPSHOTS=1 cargo test`.
    #[test]
    fn tool_list_matches_the_snapshot() {
        let mut tools = (McpServer::tool_router() + McpServer::graph_tool_router()).list_all();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let actual = serde_json::to_string_pretty(&tools).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/mcp_tools.json");
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &actual).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(actual == expected, "the MCP tool list changed; review and run UPDATE_SNAPSHOTS=1 cargo test");
        let names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "add_component",
                "add_relationship",
                "analyze_code",
                "continue_implementation",
                "file_read",
                "file_search",
                "find_next_tasks",
                "find_related_components",
                "get_component",
                "get_implementation_plan",
                "get_project_status",
                "ping",
                "prepare_context",
                "search_code",
                "update_component",
                "update_status",
            ]
        );
    }
}
