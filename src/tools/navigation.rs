//! The `lsp` toolset beyond the seed's three tools: `hover`, `document_symbols`,
//! `workspace_symbols` and `call_hierarchy`, each one request to the file's language server
//! (LSP 3.17 `textDocument/hover`, `textDocument/documentSymbol`, `workspace/symbol`,
//! `textDocument/prepareCallHierarchy` + `callHierarchy/incomingCalls|outgoingCalls`).
//! Units as everywhere: 1-based lines, 1-based character columns.

use lsp_types::request::{
    CallHierarchyIncomingCalls, CallHierarchyOutgoingCalls, CallHierarchyPrepare, DocumentSymbolRequest, HoverRequest,
    WorkspaceSymbolRequest,
};
use lsp_types::{
    CallHierarchyIncomingCallsParams, CallHierarchyItem, CallHierarchyOutgoingCallsParams, CallHierarchyPrepareParams,
    DocumentSymbolParams, DocumentSymbolResponse, HoverParams, Location, OneOf, SymbolKind, WorkspaceSymbolParams,
    WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::lsp::{
    AnswerInfo, LocationInfo, Locator, PositionParams, Target, answer_line, hover_text, location_info, request_timeout,
};
use super::{ErrorCode, ToolError};
use crate::backends::Needs;
use crate::documents::{Language, position};
use crate::engine::Engine;

/// Result of `hover`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HoverOutput {
    /// The identifier at the position.
    pub symbol: String,
    /// The server's hover (type, signature, documentation), Markdown; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hover: Option<String>,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// Runs `hover`. Errors: as `find_definition`.
pub fn hover(engine: &Engine, params: PositionParams) -> Result<HoverOutput, ToolError> {
    let target = Target::resolve(engine, &params)?;
    let timeout = request_timeout(engine);
    let (hover, answer, _) = target.ask(engine, Needs::Document, move |client, position| {
        let params =
            HoverParams { text_document_position_params: position, work_done_progress_params: Default::default() };
        async move { client.request::<HoverRequest>(params, timeout).await }
    })?;
    Ok(HoverOutput { symbol: target.identifier(), hover: hover.map(|h| hover_text(h.contents)), answer })
}

/// Parameters of `document_symbols`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DocumentSymbolsParams {
    /// The file.
    pub file: String,
}

/// A symbol of a document or the workspace.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolEntry {
    pub name: String,
    /// LSP symbol kind in lower case: function, method, class, struct, interface, variable, …
    pub kind: String,
    /// The server's detail (a signature or type), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The enclosing symbol's name (workspace symbols).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[serde(flatten)]
    pub location: LocationInfo,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<SymbolEntry>,
}

/// Result of `document_symbols`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DocumentSymbolsOutput {
    pub file: String,
    pub symbols: Vec<SymbolEntry>,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// Runs `document_symbols`: the server's outline of a file (nested where the server nests).
/// Errors: as `find_definition`.
pub fn document_symbols(engine: &Engine, params: DocumentSymbolsParams) -> Result<DocumentSymbolsOutput, ToolError> {
    let target = Target::file(engine, &params.file)?;
    let timeout = request_timeout(engine);
    let (response, answer, encoding) = target.ask(engine, Needs::Document, move |client, position| {
        let params = DocumentSymbolParams {
            text_document: position.text_document,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        async move { client.request::<DocumentSymbolRequest>(params, timeout).await }
    })?;
    let uri = target.uri()?;
    let convert_nested = |symbols: Vec<lsp_types::DocumentSymbol>| -> Vec<SymbolEntry> {
        fn walk(
            engine: &Engine,
            uri: &lsp_types::Url,
            encoding: crate::documents::position::Encoding,
            symbols: Vec<lsp_types::DocumentSymbol>,
        ) -> Vec<SymbolEntry> {
            symbols
                .into_iter()
                .map(|s| SymbolEntry {
                    name: s.name,
                    kind: kind_name(s.kind),
                    detail: s.detail.filter(|d| !d.is_empty()),
                    container: None,
                    location: location_info(engine, &Location { uri: uri.clone(), range: s.selection_range }, encoding)
                        .0,
                    children: walk(engine, uri, encoding, s.children.unwrap_or_default()),
                })
                .collect()
        }
        walk(engine, &uri, encoding, symbols)
    };
    let symbols = match response {
        None => Vec::new(),
        Some(DocumentSymbolResponse::Nested(symbols)) => convert_nested(symbols),
        #[allow(deprecated)]
        Some(DocumentSymbolResponse::Flat(symbols)) => symbols
            .into_iter()
            .map(|s| SymbolEntry {
                name: s.name,
                kind: kind_name(s.kind),
                detail: None,
                container: s.container_name,
                location: location_info(engine, &s.location, encoding).0,
                children: Vec::new(),
            })
            .collect(),
    };
    Ok(DocumentSymbolsOutput { file: target.relative().to_owned(), symbols, answer })
}

/// Parameters of `workspace_symbols`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WorkspaceSymbolsParams {
    /// The name (or part of it; servers match fuzzily) to look for.
    pub query: String,
    /// Which language's server to ask: go, c, cpp, python, typescript, javascript, rust, …
    pub language: String,
    /// Symbols to return (default 100).
    pub max_results: Option<usize>,
}

/// Result of `workspace_symbols`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkspaceSymbolsOutput {
    pub symbols: Vec<SymbolEntry>,
    /// Symbols the server returned, before max_results.
    pub total: usize,
    pub truncated: bool,
    pub server: String,
    /// complete, indexing or timed_out (see find_references).
    pub completeness: String,
}

/// Runs `workspace_symbols` against the language's server for the workspace root. Waits for the
/// server to finish indexing first (bounded). Errors: 6002 unknown language; 4001–4006.
pub fn workspace_symbols(engine: &Engine, params: WorkspaceSymbolsParams) -> Result<WorkspaceSymbolsOutput, ToolError> {
    let language = Language::from_name(&params.language).ok_or_else(|| {
        ToolError::new(
            ErrorCode::QueryLanguageUnknown,
            format!("unknown language {:?}", params.language),
            "Use go, c, cpp, python, typescript, javascript, rust or elixir.",
        )
    })?;
    let backends = engine.backends();
    // The servers already running for the language (one per project root); else one for the
    // workspace root.
    let mut clients = backends.running_for(language);
    if clients.is_empty() {
        let anchor = engine.workspace().root().join(".filepuff-workspace-symbols");
        clients.push(backends.acquire(&anchor, language).map_err(super::lsp::backend_error)?.client);
    }
    let timeout = request_timeout(engine);
    let mut symbols: Vec<SymbolEntry> = Vec::new();
    let mut servers = Vec::new();
    let (mut all_settled, mut any_busy) = (true, false);
    for client in clients {
        let query = params.query.clone();
        let worker = client.clone();
        let settled = backends.wait_ready(&client);
        let (response, busy) = backends
            .run(async move {
                let params = WorkspaceSymbolParams {
                    query,
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                };
                let response = worker.request::<WorkspaceSymbolRequest>(params, timeout).await?;
                Ok::<_, crate::backends::BackendError>((response, worker.busy_for(None)))
            })
            .map_err(super::lsp::backend_error)?;
        all_settled &= settled;
        any_busy |= busy;
        servers.push(client.server_info.clone().unwrap_or_else(|| client.name.clone()));
        symbols.extend(convert_symbols(engine, response, client.encoding));
    }
    let total = symbols.len();
    let max = params.max_results.unwrap_or(100);
    symbols.truncate(max);
    servers.dedup();
    Ok(WorkspaceSymbolsOutput {
        symbols,
        total,
        truncated: total > max,
        server: servers.join(", "),
        completeness: match (all_settled, any_busy) {
            (false, _) => "timed_out",
            (_, true) => "indexing",
            _ => "complete",
        }
        .to_owned(),
    })
}

fn convert_symbols(
    engine: &Engine,
    response: Option<WorkspaceSymbolResponse>,
    encoding: crate::documents::position::Encoding,
) -> Vec<SymbolEntry> {
    let mut locator = Locator::new(engine, encoding);
    match response {
        None => Vec::new(),
        #[allow(deprecated)]
        Some(WorkspaceSymbolResponse::Flat(symbols)) => symbols
            .into_iter()
            .map(|s| SymbolEntry {
                name: s.name,
                kind: kind_name(s.kind),
                detail: None,
                container: s.container_name,
                location: locator.info(&s.location).0,
                children: Vec::new(),
            })
            .collect(),
        Some(WorkspaceSymbolResponse::Nested(symbols)) => symbols
            .into_iter()
            .filter_map(|s| {
                let location = match s.location {
                    OneOf::Left(location) => location,
                    OneOf::Right(_) => return None,
                };
                Some(SymbolEntry {
                    name: s.name,
                    kind: kind_name(s.kind),
                    detail: None,
                    container: s.container_name,
                    location: locator.info(&location).0,
                    children: Vec::new(),
                })
            })
            .collect(),
    }
}

/// Parameters of `call_hierarchy`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CallHierarchyParams {
    #[serde(flatten)]
    pub position: PositionParams,
    /// `incoming` (who calls it, the default) or `outgoing` (what it calls).
    pub direction: Option<String>,
}

/// One caller or callee.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CallEntry {
    pub name: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Where the caller or callee is declared.
    #[serde(flatten)]
    pub location: LocationInfo,
    /// 1-based lines of the calls (in the caller's file for incoming, in the item's file for
    /// outgoing).
    pub call_lines: Vec<usize>,
}

/// Result of `call_hierarchy`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CallHierarchyOutput {
    /// The function or method at the position.
    pub item: String,
    pub direction: String,
    pub calls: Vec<CallEntry>,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// Runs `call_hierarchy`. Errors: as `find_definition`; 1008 for a direction other than
/// incoming or outgoing; 4006 when no callable is at the position.
pub fn call_hierarchy(engine: &Engine, params: CallHierarchyParams) -> Result<CallHierarchyOutput, ToolError> {
    let direction = params.direction.clone().unwrap_or_else(|| "incoming".to_owned());
    let incoming = match direction.as_str() {
        "incoming" => true,
        "outgoing" => false,
        other => {
            return Err(ToolError::invalid_params(&format!("direction must be incoming or outgoing, not {other:?}")));
        }
    };
    let target = Target::resolve(engine, &params.position)?;
    let timeout = request_timeout(engine);
    type Calls = (Option<CallHierarchyItem>, Vec<(CallHierarchyItem, Vec<lsp_types::Range>)>);
    let (found, answer, encoding): (Calls, _, _) =
        target.ask(engine, Needs::Index, move |client, position| async move {
            let prepare = CallHierarchyPrepareParams {
                text_document_position_params: position,
                work_done_progress_params: Default::default(),
            };
            let items = client.request::<CallHierarchyPrepare>(prepare, timeout).await?.unwrap_or_default();
            let Some(item) = items.into_iter().next() else { return Ok((None, Vec::new())) };
            let calls = if incoming {
                let params = CallHierarchyIncomingCallsParams {
                    item: item.clone(),
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                };
                client
                    .request::<CallHierarchyIncomingCalls>(params, timeout)
                    .await?
                    .unwrap_or_default()
                    .into_iter()
                    .map(|call| (call.from, call.from_ranges))
                    .collect()
            } else {
                let params = CallHierarchyOutgoingCallsParams {
                    item: item.clone(),
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                };
                client
                    .request::<CallHierarchyOutgoingCalls>(params, timeout)
                    .await?
                    .unwrap_or_default()
                    .into_iter()
                    .map(|call| (call.to, call.from_ranges))
                    .collect()
            };
            Ok((Some(item), calls))
        })?;
    let (Some(item), calls) = found else {
        return Err(ToolError::new(
            ErrorCode::LspServerError,
            "no function or method at this position",
            "Point at a function or method name (or pass symbol).",
        ));
    };
    let mut calls: Vec<CallEntry> = calls
        .into_iter()
        .map(|(other, ranges)| {
            let location =
                location_info(engine, &Location { uri: other.uri.clone(), range: other.selection_range }, encoding).0;
            let mut call_lines: Vec<usize> =
                ranges.iter().map(|r| position::one_based(r.start.line as usize)).collect();
            call_lines.sort_unstable();
            call_lines.dedup();
            CallEntry { name: other.name, kind: kind_name(other.kind), detail: other.detail, location, call_lines }
        })
        .collect();
    calls.sort_by(|a, b| (&a.location.file, a.location.line).cmp(&(&b.location.file, b.location.line)));
    Ok(CallHierarchyOutput { item: item.name, direction, calls, answer })
}

/// LSP `SymbolKind` as a lower-case word.
fn kind_name(kind: SymbolKind) -> String {
    let name = match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum_member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type_parameter",
        _ => "unknown",
    };
    name.to_owned()
}

/// Readable text of `hover`.
pub fn render_hover(output: &HoverOutput) -> String {
    format!(
        "{}\n{}\n{}",
        output.symbol,
        output.hover.as_deref().unwrap_or("(no hover)").trim_end(),
        answer_line(&output.answer)
    )
}

/// Readable text of `document_symbols`.
pub fn render_document_symbols(output: &DocumentSymbolsOutput) -> String {
    fn walk(out: &mut String, symbols: &[SymbolEntry], depth: usize) {
        for s in symbols {
            let detail = s.detail.as_deref().map(|d| format!("  {d}")).unwrap_or_default();
            out.push_str(&format!(
                "{:indent$}{} {} {}{detail}\n",
                "",
                s.location.line,
                s.kind,
                s.name,
                indent = depth * 2
            ));
            walk(out, &s.children, depth + 1);
        }
    }
    let mut out = format!("{}\n", output.file);
    walk(&mut out, &output.symbols, 1);
    out.push_str(&answer_line(&output.answer));
    out
}

/// Readable text of `workspace_symbols`.
pub fn render_workspace_symbols(output: &WorkspaceSymbolsOutput) -> String {
    let mut out = String::new();
    for s in &output.symbols {
        let container = s.container.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
        out.push_str(&format!(
            "{}:{}:{} {} {}{container}\n",
            s.location.file, s.location.line, s.location.column, s.kind, s.name
        ));
    }
    let more = if output.truncated { format!(" (showing {})", output.symbols.len()) } else { String::new() };
    out.push_str(&format!("{} symbol(s){more} [{}: {}]\n", output.total, output.server, output.completeness));
    out
}

/// Readable text of `call_hierarchy`.
pub fn render_call_hierarchy(output: &CallHierarchyOutput) -> String {
    let mut out = format!("{} calls of {}\n", output.direction, output.item);
    for c in &output.calls {
        let lines: Vec<String> = c.call_lines.iter().map(|l| l.to_string()).collect();
        out.push_str(&format!(
            "  {} {} at {}:{} (calls on lines {})\n",
            c.kind,
            c.name,
            c.location.file,
            c.location.line,
            lines.join(", ")
        ));
    }
    out.push_str(&answer_line(&output.answer));
    out
}
