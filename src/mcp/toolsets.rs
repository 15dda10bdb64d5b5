//! Toolset filtering for the MCP face: the combined router loses the routes of disabled
//! toolsets (so they are neither listed nor served, whichever router they came from), and a call
//! to one of them gets a typed error naming the toolset to enable.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::CallToolResult;

use super::McpServer;
use crate::engine::Engine;
use crate::tools::toolsets::{Toolset, ToolsetSelection, toolset_of};
use crate::tools::{ErrorCode, ToolError};

/// Removes every route whose tool is not served by `selection`.
pub(crate) fn filter(mut router: ToolRouter<McpServer>, selection: &ToolsetSelection) -> ToolRouter<McpServer> {
    let names: Vec<String> = router.list_all().into_iter().map(|tool| tool.name.to_string()).collect();
    for name in names {
        if !selection.serves(&name) {
            router.remove_route(&name);
        }
    }
    router
}

/// The error result for a call to a known tool whose toolset is off; `None` for any other name.
pub(crate) fn disabled_tool_result(selection: &ToolsetSelection, name: &str) -> Option<CallToolResult> {
    let toolset = toolset_of(name)?;
    if selection.contains(toolset) {
        return None;
    }
    let enabled = selection.names().join(",");
    let with = if enabled.is_empty() { toolset.name().to_owned() } else { format!("{enabled},{}", toolset.name()) };
    let err = ToolError::new(
        ErrorCode::ToolsetDisabled,
        format!("tool {name} belongs to the toolset {:?}, which this server does not serve", toolset.name()),
        format!(
            "Start the server with `filepuff mcp --toolsets {with}`, or add \"{}\" to [mcp] toolsets in filepuff.toml.",
            toolset.name()
        ),
    )
    .with("tool", name)
    .with("toolset", toolset.name())
    .with("enabled", enabled);
    Some(super::error_result(&err))
}

/// Starts building the file index in the background when the `index` toolset is served, so the
/// first `files_*` call does not pay for the walk (a call that arrives first waits for it).
pub(crate) fn warm_up(engine: &Arc<Engine>, selection: &ToolsetSelection) {
    if !selection.contains(Toolset::Index) {
        return;
    }
    let engine = engine.clone();
    let spawned = std::thread::Builder::new().name("file-index".to_owned()).spawn(move || {
        if let Err(err) = engine.file_index() {
            tracing::warn!("file index: {err}");
        }
    });
    if let Err(err) = spawned {
        tracing::warn!("file index: cannot start the build thread: {err}");
    }
}
