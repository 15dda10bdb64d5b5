//! The MCP face: an rmcp server whose tools call the functions in [`crate::tools`].
//!
//! Each tool runs on tokio's blocking pool (walks and parses are CPU and file-system work) and
//! inside `catch_unwind`, so a bug in one call becomes an `INTERNAL` tool error instead of
//! taking the server down. In `filepuff mcp`, whose session has a runtime thread of its own
//! ([`McpServer::on_own_thread`]), the tools that ask one language server (`find_definition`,
//! `find_references`, `symbol_at`, `hover`) run on that thread instead, awaiting the async ask
//! path ([`McpServer::run_on_session`]), panics caught all the same; sessions on the agent
//! socket (the editor proxy's thread) and over HTTP keep them on the blocking pool. Results
//! carry a readable text block and `structuredContent` matching the tool's `outputSchema`;
//! failures are `isError` results whose second text block is a JSON [`ToolError`] (code, name,
//! message, context, remediation).

pub mod attach;
mod graph;
pub mod http;
mod index;
mod local;
pub mod resources;
pub mod schema;
mod stdio;
mod structured;
mod toolsets;

pub use stdio::{GuardedTransport, Line, LineReader, MAX_LINE_BYTES};

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cancel::CancelFlag;
use crate::engine::Engine;
use crate::mcp::attach::DiskNotice;
use crate::tools::toolsets::ToolsetSelection;
use crate::tools::{
    self, AstQueryOutput, AstQueryParams, CallHierarchyOutput, CallHierarchyParams, DefinitionOutput,
    DiagnosticsOutput, DiagnosticsParams, DocumentSymbolsOutput, DocumentSymbolsParams, EditOutput, EditParams,
    FileReadOutput, FileReadParams, FileSearchOutput, FileSearchParams, HoverOutput, PositionParams, ReferencesOutput,
    ReferencesParams, RenameSymbolOutput, RenameSymbolParams, RunOn, SymbolAtOutput, ToolError, WorkspaceSymbolsOutput,
    WorkspaceSymbolsParams,
};

/// The MCP server: one Engine, the tool router.
#[derive(Clone)]
pub struct McpServer {
    engine: Arc<Engine>,
    tool_router: ToolRouter<McpServer>,
    toolsets: ToolsetSelection,
    /// Set when this server reads the disk while an editor may hold unsaved buffers of the
    /// same root (a standalone `filepuff mcp`): see [`McpServer::with_disk_notice`].
    disk_notice: Option<DiskNotice>,
    /// This session's resource subscriptions ([`resources`]).
    subscriptions: Arc<resources::Subscriptions>,
    /// Whether results carry `structuredContent` as JSON text for the transport to write
    /// ([`structured`]): set by [`McpServer::serve_lines`], whose transport does.
    deferred_structured: bool,
    /// Whether the tools that ask one language server run on the session's own thread
    /// ([`McpServer::run_on_session`]): set by [`McpServer::on_own_thread`].
    asks_inline: bool,
}

#[tool_router]
impl McpServer {
    /// A server over `engine` serving the default toolsets.
    pub fn new(engine: Arc<Engine>) -> McpServer {
        McpServer::with_toolsets(engine, ToolsetSelection::default())
    }

    /// A server over `engine` serving the tools of `toolsets` only.
    pub fn with_toolsets(engine: Arc<Engine>, toolsets: ToolsetSelection) -> McpServer {
        let tool_router = toolsets::filter(McpServer::all_tools(), &toolsets);
        toolsets::warm_up(&engine, &toolsets);
        McpServer {
            engine,
            tool_router,
            toolsets,
            disk_notice: None,
            subscriptions: Arc::default(),
            deferred_structured: false,
            asks_inline: false,
        }
    }

    /// The same server, for a session whose runtime thread serves nothing but it and its
    /// Engine's language-server clients (`filepuff mcp`: [`serve_stdio`] and the bridge's
    /// standalone server): the tools that ask one server (`find_definition`,
    /// `find_references`, `symbol_at`, `hover`) then run on that thread, awaiting the ask
    /// path there, and a call crosses no thread but the server's. Without it (the agent
    /// socket, whose sessions share the editor proxy's thread; Streamable HTTP, on the
    /// runtime's workers) they run on the blocking pool as every other tool does, so an
    /// answer's conversion (resolving and reading each referenced file) never holds the
    /// editor's traffic or an async worker.
    pub fn on_own_thread(mut self) -> McpServer {
        self.asks_inline = true;
        self
    }

    /// The same server, marking its results when an editor's `filepuff lsp` runs for the root
    /// without serving this agent ([`DiskNotice::note`], checked at every call): the result's
    /// `structuredContent` gets `"source": "disk"` (an error's JSON block too) and its readable
    /// text ends with the note. Results are unchanged while no editor runs.
    pub fn with_disk_notice(mut self, notice: DiskNotice) -> McpServer {
        self.disk_notice = Some(notice);
        self
    }

    /// Serves this server over newline-delimited JSON-RPC on `read` and `write` (stdio, the agent
    /// socket) through [`GuardedTransport`], which also writes each result's
    /// `structuredContent` from the JSON text the tool's worker made ([`structured`]).
    ///
    /// Errors: as rmcp's `serve` (the session could not be initialised).
    pub async fn serve_lines<R, W>(
        mut self,
        read: R,
        write: W,
    ) -> Result<rmcp::service::RunningService<rmcp::RoleServer, McpServer>, rmcp::service::ServerInitializeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        // A result rmcp keeps for a task (SEP-2663) is serialised by rmcp itself, later.
        self.deferred_structured = !self.get_info().capabilities.supports_tasks();
        self.serve(GuardedTransport::new(read, write)).await
    }

    /// The names of the tools this build implements (whatever the selection).
    pub fn implemented_tools() -> Vec<String> {
        McpServer::all_tools().list_all().into_iter().map(|tool| tool.name.to_string()).collect()
    }

    /// Every tool of every toolset, before filtering.
    fn all_tools() -> ToolRouter<McpServer> {
        let mut router = McpServer::tool_router()
            + McpServer::graph_tool_router()
            + McpServer::local_tool_router()
            + McpServer::index_tool_router();
        for route in router.map.values_mut() {
            route.attr.input_schema = Arc::new(schema::published(&route.attr.input_schema));
            if let Some(output) = &route.attr.output_schema {
                route.attr.output_schema = Some(Arc::new(with_source(schema::published(output))));
            }
        }
        router
    }

    #[tool(
        description = "Health check - returns pong to verify the server is running",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn ping(&self) -> String {
        tools::ping().to_owned()
    }

    #[tool(
        description = "Search for text patterns in files (ripgrep's engine, in process). Regex by default (regex=false for a literal), file type filtering with ripgrep's type names (go, ts, py, c, cpp, rust, js, ...), context lines (default 2), max_results (default 100). Respects .gitignore. Open editor buffers are searched in their unsaved text. Results are grouped by file with 1-based line and column (characters) and totals over the whole search. Output is bounded by max_chars (default 40000 characters) whatever max_results says; a cut result's hint names the offset to continue from.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FileSearchParams>(),
        output_schema = schema_for_output::<FileSearchOutput>()
    )]
    async fn file_search(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::file_search, tools::render::file_search).await)
    }

    #[tool(
        description = "Read a file's contents with optional line range (1-based, inclusive) and AST symbol summary. include_ast adds the outline (functions, methods with receiver/class, classes, structs, interfaces, types, enums, constants) with 1-based line ranges; symbols_only returns just the outline (token-efficient); max_lines (default 2000) truncates with a note saying where to continue. Open editor buffers are read in their unsaved text.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FileReadParams>(),
        output_schema = schema_for_output::<FileReadOutput>()
    )]
    async fn file_read(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::file_read, tools::render::file_read).await)
    }

    #[tool(
        description = "Search for AST patterns in code files (ast-grep pattern syntax, tree-sitter parsers). Placeholders: $NAME matches one node and captures it, $$$ARGS matches zero or more nodes (a list), $_ matches one node without capturing. Examples: 'func $NAME($$$ARGS) error' (go), 'class $NAME: $$$BODY' (python), 'function $NAME($PROPS) { $$$BODY }' (javascript). Filters: name_matches (regex) / name_exact on the $NAME capture or the node's declared name; kind_in (node kinds). Returns matches with 1-based lines and columns (characters; end exclusive), the matched text (cut at 1000 characters), the node kind and every capture. Files without the pattern's literal tokens are skipped unparsed; open editor buffers are searched in their unsaved text. Default max_results 100; totals count all. The output budget (40000 characters) applies whatever max_results says; a note names the offset to continue from.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<AstQueryParams>(),
        output_schema = schema_for_output::<AstQueryOutput>()
    )]
    async fn ast_query(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::ast_query, tools::render::ast_query).await)
    }

    #[tool(
        description = "Preview an edit without applying it: returns the unified diff, the chosen target and the would-be content hash. Selectors: AST mode for code files (selector_kind = tree-sitter node kind, selector_name = declared name incl. methods as Type.method, selector_line narrows), text mode for any file (selector_text exact, selector_pattern regex, selector_line + selector_line_end for a line range). Several matches without selector_index (0-based) is an error listing every candidate. Operations: replace, insert_before, insert_after, delete. new_content is taken verbatim (no unescaping); AST insertions are re-indented to the target; line endings follow the file. The edit is validated: one that adds syntax errors is refused.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<EditParams>(),
        output_schema = schema_for_output::<EditOutput>()
    )]
    async fn edit_preview(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::edit_preview, tools::render::edit).await)
    }

    #[tool(
        description = "Apply an edit to a file (same selectors and operations as edit_preview). Code files are parsed before and after: an edit that introduces syntax errors is refused with their positions and the file stays byte-identical. The write is atomic (temp file, fsync, rename), keeps permissions, and holds an OS file lock so concurrent edits from several processes serialize. Pass expected_hash (content_hash from file_read, or a preview's old_hash) to refuse the edit if the file changed since. A file open in the editor is edited in its buffer (undoable there). confirm=true asks the person first: the edit goes to their editor as a change that needs confirmation, and the result's confirmation says accepted or declined. Returns the diff and the new content hash, and, for a code file whose language server is installed, the diagnostics the edit introduced, the pre-existing ones and how many it resolved (the server is started if needed; status complete or timed_out after [lsp] edit_diagnostics_timeout_ms; diagnostics=false opts out).",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
        input_schema = schema_for_type::<EditParams>(),
        output_schema = schema_for_output::<EditOutput>()
    )]
    async fn edit_apply(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::edit_apply, tools::render::edit).await)
    }

    #[tool(
        description = "Point the person at code: show a file in their editor (the one this agent is attached to through filepuff lsp), with lines/columns selected (1-based; columns in characters; end_column is just past the selection, default the end of end_line). Uses LSP window/showDocument; the result says whether the editor showed it. Without an attached editor this is an error (EDITOR_NOT_AVAILABLE): nothing is shown.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<tools::ShowInEditorParams>(),
        output_schema = schema_for_output::<tools::ShowInEditorOutput>()
    )]
    async fn show_in_editor(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::show_in_editor, tools::render::show_in_editor).await)
    }

    #[tool(
        description = "What the person has open and is looking at in their editor (the one this agent is attached to through filepuff lsp): the open documents (path, language, version, unsaved or not, diagnostics counts the servers published) and the focused document with cursor, selection and visible range (1-based lines, columns in characters) where the editor reports them — the filepuff VS Code extension and Neovim plugin do; a plain LSP editor gives the open documents only, and `unknown` names what could not be known. Also readable and subscribable as the resource filepuff://editor.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<tools::EditorStateParams>(),
        output_schema = schema_for_output::<tools::EditorStateOutput>()
    )]
    async fn editor_state(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::editor_state, tools::render::editor_state).await)
    }

    #[tool(
        description = "Get information about the symbol at a position: its identifier, the language server's hover (type, signature, documentation) and its definition locations. line and column are 1-based; column counts characters. Give symbol (the identifier's text) and the column may be omitted or approximate. The answer names the server and its completeness (complete | indexing | timed_out).",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<PositionParams>(),
        output_schema = schema_for_output::<SymbolAtOutput>()
    )]
    async fn symbol_at(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        let call = |engine: Arc<Engine>, params: PositionParams, cancel: CancelFlag| async move {
            tools::symbol_at_on(&engine, &params, &cancel, RunOn::Session).await
        };
        Ok(self.run_on_session(arguments, call, tools::symbol_at, tools::render::symbol_at).await)
    }

    #[tool(
        description = "Find the definition of the symbol at a position, through the file's language server (gopls, clangd, basedpyright/pyright, typescript-language-server, rust-analyzer). Returns file, 1-based line and column (characters) and a code preview around each definition. Give symbol (the identifier's text) and the column may be omitted or approximate. Open editor buffers are sent to the server in their unsaved text.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<PositionParams>(),
        output_schema = schema_for_output::<DefinitionOutput>()
    )]
    async fn find_definition(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = |engine: Arc<Engine>, params: PositionParams, cancel: CancelFlag| async move {
            tools::find_definition_on(&engine, &params, &cancel, RunOn::Session).await
        };
        Ok(self.run_on_session(arguments, call, tools::find_definition, tools::render::find_definition).await)
    }

    #[tool(
        description = "Find all references to the symbol at a position, through the file's language server, grouped by file (1-based lines, character columns, the line's text). include_declaration defaults to true. Waits for the server to finish indexing (bounded) so the list is not silently partial; completeness says complete, indexing or timed_out. Paged: stops at the output budget (max_chars, default [limits] max_output_chars) or max_results; total says how many the whole answer has, and next_offset (also in hint) is the offset to pass for the next page.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<ReferencesParams>(),
        output_schema = schema_for_output::<ReferencesOutput>()
    )]
    async fn find_references(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let call = |engine: Arc<Engine>, params: ReferencesParams, cancel: CancelFlag| async move {
            tools::find_references_on(&engine, &params, &cancel, RunOn::Session).await
        };
        Ok(self.run_on_session(arguments, call, tools::find_references, tools::render::find_references).await)
    }

    #[tool(
        description = "The language server's diagnostics (errors, warnings) for a file's current text — the open editor buffer if there is one, else the disk — pulled where the server supports it, else the ones it published for exactly that text. current: false says the server did not report for the current text in time. 1-based lines, character columns. Paged: stops at the output budget (max_chars, default [limits] max_output_chars) or max_results; total says how many the whole answer has, and next_offset (also in hint) is the offset to pass for the next page.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<DiagnosticsParams>(),
        output_schema = schema_for_output::<DiagnosticsOutput>()
    )]
    async fn diagnostics(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::diagnostics, tools::render::diagnostics).await)
    }

    #[tool(
        description = "Rename the symbol at a position across the project through its language server. apply=false (default) returns every touched file and a unified diff; apply=true writes all files or none: open editor buffers are edited in place, files on disk are locked, re-checked, staged and then renamed into place, and reports the diagnostics the rename introduced (as edit_apply; diagnostics=false opts out). line/column 1-based (characters); give symbol to tolerate an approximate column.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
        input_schema = schema_for_type::<RenameSymbolParams>(),
        output_schema = schema_for_output::<RenameSymbolOutput>()
    )]
    async fn rename_symbol(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::rename_symbol, tools::render::rename_symbol).await)
    }

    #[tool(
        description = "The language server's hover at a position: type, signature and documentation (Markdown). line/column 1-based, column in characters; give symbol to tolerate an approximate column.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<PositionParams>(),
        output_schema = schema_for_output::<HoverOutput>()
    )]
    async fn hover(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        let call = |engine: Arc<Engine>, params: PositionParams, cancel: CancelFlag| async move {
            tools::hover_on(&engine, &params, &cancel).await.map(Some)
        };
        Ok(self.run_on_session(arguments, call, tools::hover, tools::render::hover).await)
    }

    #[tool(
        description = "The language server's symbols of one file (functions, methods, classes, fields, …) with kinds, details and 1-based positions, nested as the server nests them. Paged: stops at the output budget (max_chars, default [limits] max_output_chars) or max_results; total says how many the whole answer has, and next_offset (also in hint) is the offset to pass for the next page. Pages follow document order, depth first.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<DocumentSymbolsParams>(),
        output_schema = schema_for_output::<DocumentSymbolsOutput>()
    )]
    async fn document_symbols(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::document_symbols, tools::render::document_symbols).await)
    }

    #[tool(
        description = "Find symbols by name across the project through a language's server (workspace/symbol; servers match fuzzily). language picks the server: go, c, cpp, python, typescript, javascript, rust. max_results default 100. Paged: stops at the output budget (max_chars, default [limits] max_output_chars) or max_results; total says how many the whole answer has, and next_offset (also in hint) is the offset to pass for the next page.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<WorkspaceSymbolsParams>(),
        output_schema = schema_for_output::<WorkspaceSymbolsOutput>()
    )]
    async fn workspace_symbols(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::workspace_symbols, tools::render::workspace_symbols).await)
    }

    #[tool(
        description = "Who calls the function at a position (direction=incoming, default) or what it calls (outgoing), through the language server's call hierarchy: each caller/callee with its declaration and the lines of the calls. Paged: stops at the output budget (max_chars, default [limits] max_output_chars) or max_results; total says how many the whole answer has, and next_offset (also in hint) is the offset to pass for the next page.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<CallHierarchyParams>(),
        output_schema = schema_for_output::<CallHierarchyOutput>()
    )]
    async fn call_hierarchy(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, tools::call_hierarchy, tools::render::call_hierarchy).await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        if let Some(refused) = toolsets::disabled_tool_result(&self.toolsets, &request.name) {
            return Ok(rmcp::model::CallToolResponse::Complete(refused));
        }
        // The call's cancellation token (cancelled on `notifications/cancelled`) reaches `run`,
        // which stops the tool's loops with it.
        let token = context.ct.clone();
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let mut response = CALL_CANCELLED.scope(token, self.tool_router.call(call)).await?;
        if let rmcp::model::CallToolResponse::Complete(result) = &mut response
            && let Some(note) = self.disk_notice.as_ref().and_then(DiskNotice::note)
        {
            mark_disk_source(result, &note);
        }
        Ok(response)
    }

    async fn list_tools(
        &self,
        request: Option<rmcp::model::PaginatedRequestParams>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        // Every tool is on one page and no nextCursor is ever given, so any cursor is one this
        // server did not issue: -32602 (MCP 2025-11-25, "Pagination": invalid cursors SHOULD be
        // Invalid params).
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            return Err(ErrorData::invalid_params(
                "invalid cursor: tools/list returns every tool on one page and gives no nextCursor",
                Some(serde_json::json!({ "cursor": cursor })),
            ));
        }
        let cache_hints =
            context.protocol_version().is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools: self.tool_router.list_all(),
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(rmcp::model::CacheScope::Public),
        })
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || resources::list(&engine))
            .await
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        resources::read(&self.engine, &request.uri).await.map(Into::into)
    }

    // `resources/subscribe` is what MCP 2025-11-25 clients (the Python SDK's ClientSession
    // among them) use; rmcp marks it legacy in favour of 2026-07-28's `subscriptions/listen`.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.subscribe(&self.engine, &request.uri, context.peer.clone()).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_resources_subscribe().build(),
        )
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

tokio::task_local! {
    /// The cancellation token of the tool call being handled (set by `call_tool`).
    static CALL_CANCELLED: tokio_util::sync::CancellationToken;
}

/// The cancellation of one tool call ([`call_flag`]): raises its [`CancelFlag`] when dropped
/// before [`CancelOnDrop::finished`], so a call whose handler is dropped (its client gone) stops
/// its work too; `watcher` is the task that raises it on the client's `notifications/cancelled`.
struct CancelOnDrop {
    flag: Option<CancelFlag>,
    watcher: Option<tokio::task::JoinHandle<()>>,
}

impl CancelOnDrop {
    /// The call ended: nothing is raised, and the watching task ends.
    fn finished(mut self) {
        self.flag = None;
        if let Some(watcher) = self.watcher.take() {
            watcher.abort();
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(flag) = self.flag.take() {
            flag.cancel();
        }
    }
}

impl McpServer {
    /// Parses a tool's arguments, runs the tool on the blocking pool and turns its outcome into
    /// a tool result. Arguments are parsed here rather than by rmcp so that a wrong argument is
    /// a structured `PARAMS_INVALID` error like every other failure. The output becomes the
    /// result's `structuredContent` on the tool's thread: as JSON text for this session's
    /// transport to write ([`structured`]) when it does, else as a `Value`.
    ///
    /// The tool runs under a [`CancelFlag`] ([`CancelFlag::scope`]) raised when the client
    /// cancels the request (`notifications/cancelled`) or the handler is dropped: its walks stop
    /// at the next file, and the (unsent) answer is whatever it had.
    async fn run<P, O>(
        &self,
        arguments: JsonObject,
        call: fn(&Engine, P) -> Result<O, ToolError>,
        render: fn(&O) -> String,
    ) -> CallToolResult
    where
        P: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
    {
        match parse_arguments::<P>(arguments) {
            Ok(params) => self.run_blocking(params, call, render).await,
            Err(err) => error_result(&err),
        }
    }

    /// [`McpServer::run`] of parsed arguments.
    async fn run_blocking<P, O>(
        &self,
        params: P,
        call: fn(&Engine, P) -> Result<O, ToolError>,
        render: fn(&O) -> String,
    ) -> CallToolResult
    where
        P: Send + 'static,
        O: Serialize + Send + 'static,
    {
        let engine = self.engine.clone();
        let deferred = self.deferred_structured;
        let (flag, call_cancel) = call_flag();
        let joined = tokio::task::spawn_blocking(move || {
            flag.scope(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let output = call(&engine, params)?;
                    Ok(finish_output(&output, deferred, render))
                }))
            })
        })
        .await;
        call_cancel.finished();
        let outcome = match joined {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(panic)) => Err(panicked(&panic)),
            Err(err) => Err(ToolError::internal(format!("the tool's worker failed: {err}"))),
        };
        tool_result(outcome)
    }

    /// A tool that asks a language server, run on the session's own thread (the one its
    /// language-server clients read on, for `filepuff mcp`): awaiting the server costs no hand-off
    /// to the blocking pool and back, and none between that pool and the clients (two thread
    /// wake-ups fewer on each side, about 0.1 ms and 20% of the CPU of a `find_definition`).
    /// `call` is the tool's [`tools::RunOn::Session`] variant: when it answers `Ok(None)` (a
    /// tree-sitter fallback, which reads many files), the tool runs as `blocking` on the
    /// blocking pool ([`McpServer::run`]). Cancelled and guarded against panics as `run` is.
    /// A server not [`McpServer::on_own_thread`] runs `blocking` on the pool straight away.
    async fn run_on_session<P, O, Fut>(
        &self,
        arguments: JsonObject,
        call: impl FnOnce(Arc<Engine>, P, CancelFlag) -> Fut,
        blocking: fn(&Engine, P) -> Result<O, ToolError>,
        render: fn(&O) -> String,
    ) -> CallToolResult
    where
        P: DeserializeOwned + schemars::JsonSchema + Clone + Send + 'static,
        O: Serialize + Send + 'static,
        Fut: std::future::Future<Output = Result<Option<O>, ToolError>>,
    {
        use futures::FutureExt;
        let params = match parse_arguments::<P>(arguments) {
            Ok(params) => params,
            Err(err) => return error_result(&err),
        };
        if !self.asks_inline {
            return self.run_blocking(params, blocking, render).await;
        }
        let (flag, call_cancel) = call_flag();
        let asked = std::panic::AssertUnwindSafe(call(self.engine.clone(), params.clone(), flag)).catch_unwind().await;
        call_cancel.finished();
        let outcome = match asked {
            Ok(Ok(None)) => return self.run_blocking(params, blocking, render).await,
            Ok(Ok(Some(output))) => {
                let deferred = self.deferred_structured;
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| finish_output(&output, deferred, render)))
                    .map_err(|panic| panicked(&panic))
            }
            Ok(Err(err)) => Err(err),
            Err(panic) => Err(panicked(&panic)),
        };
        tool_result(outcome)
    }
}

/// A tool's arguments as its parameters (scalars given as strings coerced where the schema
/// wants numbers or booleans). Errors: `PARAMS_INVALID`.
fn parse_arguments<P: DeserializeOwned + schemars::JsonSchema + 'static>(
    mut arguments: JsonObject,
) -> Result<P, ToolError> {
    coerce_scalars(&mut arguments, &schema_for_type::<P>());
    serde_json::from_value::<P>(serde_json::Value::Object(arguments))
        .map_err(|err| ToolError::invalid_params(&err.to_string()))
}

/// The [`CancelFlag`] of one tool call and its [`CancelOnDrop`]: raised when the client cancels
/// the request (a task watches the call's token) or when the guard is dropped with the handler.
fn call_flag() -> (CancelFlag, CancelOnDrop) {
    let flag = CancelFlag::new();
    let watcher = CALL_CANCELLED.try_with(|token| token.clone()).ok().map(|token| {
        let flag = flag.clone();
        tokio::spawn(async move {
            token.cancelled().await;
            flag.cancel();
        })
    });
    let guard = CancelOnDrop { flag: Some(flag.clone()), watcher };
    (flag, guard)
}

/// The `INTERNAL` error of a tool call that panicked.
fn panicked(panic: &Box<dyn std::any::Any + Send>) -> ToolError {
    ToolError::internal(format!("the tool panicked: {}", panic_message(panic)))
}

/// A tool's readable text and its `structuredContent`: JSON text for the session's transport
/// to write when `deferred` ([`structured`]), else a `Value`.
fn finish_output<O: Serialize + 'static>(
    output: &O,
    deferred: bool,
    render: fn(&O) -> String,
) -> (String, Result<serde_json::Value, serde_json::Error>) {
    let structured =
        if deferred { tools::structured_json(output).map(structured::deferred) } else { serde_json::to_value(output) };
    (render(output), structured)
}

/// The tool result of a tool's outcome.
fn tool_result(outcome: Result<(String, Result<serde_json::Value, serde_json::Error>), ToolError>) -> CallToolResult {
    match outcome {
        Ok((text, Ok(structured))) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(structured);
            result
        }
        Ok((_, Err(err))) => error_result(&ToolError::internal(format!("cannot serialise the result: {err}"))),
        Err(err) => error_result(&err),
    }
}

/// The top-level `source` of every object output schema that has none (`file_read` has its
/// own, `buffer` or `disk`): see [`mark_disk_source`].
fn with_source(mut schema: JsonObject) -> JsonObject {
    if schema.get("type").and_then(serde_json::Value::as_str) != Some("object") {
        return schema;
    }
    if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "editor_note".to_owned(),
            serde_json::json!({
                "description": "Present only when an editor's filepuff lsp runs for this workspace but this agent is not attached to it: why, and that the result comes from the files on disk without the editor's unsaved buffers. (file_read's own `source` says `disk` for any file not open in an editor; this says the editor could not be asked.)",
                "type": "string",
            }),
        );
        properties.entry("source").or_insert_with(|| {
            serde_json::json!({
                "description": "`disk` when an editor's filepuff lsp runs for this workspace but this agent is not attached to it: the result was computed from the files on disk, without the editor's unsaved buffers (the text says why). Absent otherwise.",
                "type": "string",
                "enum": ["disk"],
            })
        });
    }
    schema
}

/// Marks `result` as served from disk (see [`McpServer::with_disk_notice`]): `source: "disk"`
/// in `structuredContent` (or in an error's JSON block) and `note` appended to the first text
/// block, so the number and order of blocks stay as clients expect.
fn mark_disk_source(result: &mut CallToolResult, note: &str) {
    structured::materialize(result);
    let disk = serde_json::Value::String("disk".to_owned());
    if let Some(serde_json::Value::Object(structured)) = &mut result.structured_content {
        structured.insert("source".to_owned(), disk.clone());
        structured.insert("editor_note".to_owned(), serde_json::Value::String(note.to_owned()));
    }
    let is_error = result.is_error == Some(true);
    let texts: Vec<usize> = result
        .content
        .iter()
        .enumerate()
        .filter(|(_, block)| matches!(block, ContentBlock::Text(_)))
        .map(|(i, _)| i)
        .collect();
    if is_error
        && texts.len() >= 2
        && let Some(&last) = texts.last()
        && let ContentBlock::Text(text) = &mut result.content[last]
        && let Ok(serde_json::Value::Object(mut error)) = serde_json::from_str::<serde_json::Value>(&text.text)
    {
        error.insert("source".to_owned(), disk);
        text.text = serde_json::Value::Object(error).to_string();
    }
    match texts.first() {
        Some(&first) => {
            if let ContentBlock::Text(text) = &mut result.content[first] {
                text.text = format!("{}\n\nNote: {note}.", text.text.trim_end());
            }
        }
        None => result.content.push(ContentBlock::text(format!("Note: {note}."))),
    }
}

/// Turns top-level string arguments into the integer, number or boolean their schema asks for
/// (`"10"` → 10, `"true"` → true). Some clients — the MCP Inspector's CLI among them — send every
/// `key=value` as a string unless the property's type is exactly `"integer"`; filepuff's optional
/// parameters are nullable (`["integer", "null"]` here, `anyOf` as published: [`schema`]).
/// Anything that does not parse is left for the deserializer to refuse with a clear 1008.
fn coerce_scalars(arguments: &mut JsonObject, schema: &JsonObject) {
    let Some(serde_json::Value::Object(properties)) = schema.get("properties") else { return };
    for (name, value) in arguments.iter_mut() {
        let serde_json::Value::String(text) = value else { continue };
        let Some(property) = properties.get(name) else { continue };
        let types: Vec<&str> = match property.get("type") {
            Some(serde_json::Value::String(t)) => vec![t.as_str()],
            Some(serde_json::Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str()).collect(),
            _ => continue,
        };
        if types.contains(&"string") {
            continue;
        }
        let trimmed = text.trim();
        let coerced = if types.contains(&"integer") {
            trimmed.parse::<i64>().ok().map(serde_json::Value::from)
        } else if types.contains(&"number") {
            trimmed.parse::<f64>().ok().map(serde_json::Value::from)
        } else if types.contains(&"boolean") {
            trimmed.parse::<bool>().ok().map(serde_json::Value::from)
        } else {
            None
        };
        if let Some(coerced) = coerced {
            *value = coerced;
        }
    }
}

/// An `isError` result: the readable error, then the structured error (code, name, message,
/// context, remediation) as a JSON text block. Not as `structuredContent`: that must match the
/// tool's `outputSchema` (MCP 2025-11-25, "Structured Content"), and clients that validate it
/// even on errors (the TypeScript SDK does) would replace the real error with a schema error.
pub(crate) fn error_result(err: &ToolError) -> CallToolResult {
    let json = serde_json::to_string(&err.to_json()).unwrap_or_default();
    CallToolResult::error(vec![ContentBlock::text(err.to_string()), ContentBlock::text(json)])
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Longest wait, at the end of a stdio session, for its last answers to reach stdout.
pub(crate) const STDOUT_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves MCP over stdin/stdout (polled by the runtime, or each on a thread of its own:
/// [`stdio::threads`]), with the tools of `toolsets`, until the client disconnects;
/// with `notice`, results say when they come from disk while an editor runs
/// ([`McpServer::with_disk_notice`]). The stream is read through [`GuardedTransport`]:
/// malformed lines are answered, messages before `initialize` that need no answer are ignored,
/// and neither ends the session.
pub async fn serve_stdio(
    engine: Arc<Engine>,
    toolsets: ToolsetSelection,
    notice: Option<DiskNotice>,
) -> anyhow::Result<()> {
    let mut server = McpServer::with_toolsets(engine, toolsets).on_own_thread();
    if let Some(notice) = notice {
        server = server.with_disk_notice(notice);
    }
    let (stdin, stdout, writer) = stdio::threads::open();
    let service = server.serve_lines(stdin, stdout).await?;
    service.waiting().await?;
    // The answers flushed last reach stdout before the process exits.
    tokio::task::spawn_blocking(move || writer.wait(STDOUT_DRAIN)).await.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The MCP tool surface is a compatibility promise: its snapshot is a reviewed diff.

    use super::*;

    /// The thread each path of [`McpServer::run_on_session`] ran on, in the test below.
    static RAN: parking_lot::Mutex<Vec<(&'static str, std::thread::ThreadId)>> = parking_lot::Mutex::new(Vec::new());

    #[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
    struct NoParams {}

    fn on_pool(_engine: &Engine, _params: NoParams) -> Result<String, ToolError> {
        RAN.lock().push(("pool", std::thread::current().id()));
        Ok("pool".to_owned())
    }

    /// A session that shares its thread (the agent socket's sessions run on the editor proxy's
    /// one thread) runs the ask-path tools on the blocking pool, never inline; one on its own
    /// thread (`filepuff mcp`) runs them inline there.
    #[test]
    fn ask_path_tools_run_inline_only_on_a_thread_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::new(crate::workspace::Workspace::open(dir.path()).unwrap()));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let session = std::thread::current().id();
        let call = |_: Arc<Engine>, _: NoParams, _: CancelFlag| async {
            RAN.lock().push(("inline", std::thread::current().id()));
            Ok(Some("inline".to_owned()))
        };
        let text = |result: CallToolResult| result.content[0].as_text().unwrap().text.clone();
        let shared = McpServer::new(engine.clone());
        let result = runtime.block_on(shared.run_on_session(JsonObject::new(), call, on_pool, String::clone));
        assert_eq!(text(result), "pool");
        let ran = std::mem::take(&mut *RAN.lock());
        assert!(matches!(ran[..], [("pool", thread)] if thread != session), "{ran:?}");

        let own = McpServer::new(engine).on_own_thread();
        let result = runtime.block_on(own.run_on_session(JsonObject::new(), call, on_pool, String::clone));
        assert_eq!(text(result), "inline");
        assert_eq!(*RAN.lock(), [("inline", session)]);
    }

    /// `tests/snapshots/mcp_tools.json` holds `tools/list` (names, descriptions, input and
    /// output schemas, annotations). Regenerate with `UPDATE_SNAPSHOTS=1 cargo test`.
    #[test]
    fn tool_list_matches_the_snapshot() {
        let mut tools = McpServer::all_tools().list_all();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let actual = serde_json::to_string_pretty(&tools).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/mcp_tools.json");
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &actual).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(actual == expected, "the MCP tool list changed; review and run UPDATE_SNAPSHOTS=1 cargo test");
        // Portable for single-`type` dialects (schema::PortableNullable): no type arrays anywhere.
        let arrays: Vec<String> = tools
            .iter()
            .flat_map(|tool| {
                let schemas = [Some(tool.input_schema.clone()), tool.output_schema.clone()];
                schemas.into_iter().flatten().map(move |schema| (tool.name.clone(), schema))
            })
            .filter(|(_, schema)| serde_json::to_string(schema.as_ref()).unwrap().contains("\"type\":["))
            .map(|(name, _)| name.to_string())
            .collect();
        assert!(arrays.is_empty(), "type arrays in the schemas of {arrays:?}");
        let names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "add_component",
                "add_relationship",
                "analyze_code",
                "ast_query",
                "call_hierarchy",
                "continue_implementation",
                "diagnostics",
                "document_symbols",
                "edit_apply",
                "edit_preview",
                "editor_state",
                "file_read",
                "file_search",
                "files_get_info",
                "files_list",
                "files_search",
                "find_definition",
                "find_next_tasks",
                "find_references",
                "find_related_components",
                "get_component",
                "get_implementation_plan",
                "get_project_status",
                "hover",
                "localFindFiles",
                "localGetFileContent",
                "localSearchCode",
                "localViewStructure",
                "ping",
                "prepare_context",
                "rename_symbol",
                "search_code",
                "show_in_editor",
                "symbol_at",
                "update_component",
                "update_status",
                "workspace_symbols"
            ]
        );
    }
}
