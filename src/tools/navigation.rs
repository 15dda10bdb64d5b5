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
use super::page::{self, Limits, PageInfo, PageParams};
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
    engine.backends().block_on(hover_on(engine, &params, &crate::cancel::CancelFlag::current()))
}

/// [`hover`], awaited: runs on any thread (it has no fallback that reads files), the MCP
/// session's own included (see [`super::lsp::RunOn`]).
pub async fn hover_on(
    engine: &Engine,
    params: &PositionParams,
    cancel: &crate::cancel::CancelFlag,
) -> Result<HoverOutput, ToolError> {
    let target = Target::resolve(engine, params)?;
    let timeout = request_timeout(engine);
    let (hover, answer, _) = target
        .ask_async(engine, "textDocument/hover", Needs::Document, cancel, move |client, position| {
            let params =
                HoverParams { text_document_position_params: position, work_done_progress_params: client.work_done() };
            async move { client.request::<HoverRequest>(params, timeout).await }
        })
        .await?;
    Ok(HoverOutput { symbol: target.identifier(), hover: hover.map(|h| hover_text(h.contents)), answer })
}

/// Parameters of `document_symbols`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DocumentSymbolsParams {
    /// The file.
    pub file: String,
    /// Paging over the symbols in document order (a symbol, then its children, depth first).
    #[serde(flatten)]
    pub page: PageParams,
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

/// Result of `document_symbols`: one page of the server's outline.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DocumentSymbolsOutput {
    pub file: String,
    /// This page's symbols, nested as the server nests them; a symbol whose parent is on an
    /// earlier page is at the top level with the parent's name in `container`.
    pub symbols: Vec<SymbolEntry>,
    /// `total` counts every symbol at every depth.
    #[serde(flatten)]
    pub page: PageInfo,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// Runs `document_symbols`: the server's outline of a file (nested where the server nests).
/// Errors: as `find_definition`.
pub fn document_symbols(engine: &Engine, params: DocumentSymbolsParams) -> Result<DocumentSymbolsOutput, ToolError> {
    let target = Target::file(engine, &params.file)?;
    let timeout = request_timeout(engine);
    let (response, answer, encoding) =
        target.ask(engine, "textDocument/documentSymbol", Needs::Document, move |client, position| {
            let params = DocumentSymbolParams {
                text_document: position.text_document,
                work_done_progress_params: client.work_done(),
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
    let limits = Limits::new(&params.page, usize::MAX, engine.workspace().config().limits.max_output_chars);
    let (symbols, page) = page_outline(symbols, limits);
    Ok(DocumentSymbolsOutput { file: target.relative().to_owned(), symbols, page, answer })
}

/// A symbol of an outline flattened depth first: the symbol without its children, and the index
/// of its parent in the flat list.
#[derive(Serialize)]
struct FlatSymbol {
    #[serde(flatten)]
    entry: SymbolEntry,
    #[serde(skip)]
    parent: Option<usize>,
}

/// One page of an outline: flattened depth first, paged, and nested again within the page.
fn page_outline(symbols: Vec<SymbolEntry>, limits: Limits) -> (Vec<SymbolEntry>, PageInfo) {
    fn flatten(symbols: Vec<SymbolEntry>, parent: Option<usize>, out: &mut Vec<FlatSymbol>) {
        for mut entry in symbols {
            let children = std::mem::take(&mut entry.children);
            let index = out.len();
            out.push(FlatSymbol { entry, parent });
            flatten(children, Some(index), out);
        }
    }
    let mut flat = Vec::new();
    flatten(symbols, None, &mut flat);
    let names: Vec<String> = flat.iter().map(|f| f.entry.name.clone()).collect();
    let first = limits.offset;
    // Besides its own JSON, a symbol may cost a `children` list (when its children are on the
    // page) or its parent's name as `container` (when they are not).
    let (kept, page) = page::page(flat, limits, "symbols", |f: &FlatSymbol| {
        16 + f.parent.and_then(|p| names.get(p)).map_or(0, |name| name.len() + 16)
    });
    // Nest again: a kept symbol goes under its parent when the parent is on this page.
    let mut slots: Vec<Option<SymbolEntry>> = Vec::with_capacity(kept.len());
    let mut parents: Vec<Option<usize>> = Vec::with_capacity(kept.len());
    for item in kept {
        let mut entry = item.entry;
        let on_page = item.parent.filter(|&p| p >= first).map(|p| p - first);
        if on_page.is_none() && entry.container.is_none() {
            entry.container = item.parent.and_then(|p| names.get(p).cloned());
        }
        slots.push(Some(entry));
        parents.push(on_page);
    }
    // Last to first, so each symbol has its children before it moves under its own parent;
    // children arrive last first and are put back in order at the end.
    for index in (0..slots.len()).rev() {
        if let Some(parent) = parents[index]
            && let Some(child) = slots[index].take()
            && let Some(Some(parent)) = slots.get_mut(parent)
        {
            parent.children.push(child);
        }
    }
    fn reverse_children(symbols: &mut [SymbolEntry]) {
        for symbol in symbols {
            symbol.children.reverse();
            reverse_children(&mut symbol.children);
        }
    }
    let mut symbols: Vec<SymbolEntry> = slots.into_iter().flatten().collect();
    reverse_children(&mut symbols);
    (symbols, page)
}

/// Parameters of `workspace_symbols`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WorkspaceSymbolsParams {
    /// The name (or part of it; servers match fuzzily) to look for.
    pub query: String,
    /// Which language's server to ask: go, c, cpp, python, typescript, javascript, rust, …
    pub language: String,
    /// Paging over the symbols in the servers' order (their ranking); `max_results` defaults
    /// to 100.
    #[serde(flatten)]
    pub page: PageParams,
}

/// Result of `workspace_symbols`: one page of the servers' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkspaceSymbolsOutput {
    pub symbols: Vec<SymbolEntry>,
    /// `total`: symbols the servers returned (a server may cap its own answer: gopls returns at
    /// most 100).
    #[serde(flatten)]
    pub page: PageInfo,
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
                    work_done_progress_params: worker.work_done(),
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
    let limits = Limits::new(&params.page, 100, engine.workspace().config().limits.max_output_chars);
    let (symbols, page) = page::page(symbols, limits, "symbols", |_| 0);
    servers.dedup();
    Ok(WorkspaceSymbolsOutput {
        symbols,
        page,
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
    /// Paging over the callers or callees, in file (path) then line order.
    #[serde(flatten)]
    pub page: PageParams,
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
    /// This page's callers or callees.
    pub calls: Vec<CallEntry>,
    #[serde(flatten)]
    pub page: PageInfo,
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
        target.ask(engine, "textDocument/prepareCallHierarchy", Needs::Index, move |client, position| async move {
            let prepare = CallHierarchyPrepareParams {
                text_document_position_params: position,
                work_done_progress_params: client.work_done(),
            };
            let items = client.request::<CallHierarchyPrepare>(prepare, timeout).await?.unwrap_or_default();
            let Some(item) = items.into_iter().next() else { return Ok((None, Vec::new())) };
            let calls = if incoming {
                let params = CallHierarchyIncomingCallsParams {
                    item: item.clone(),
                    work_done_progress_params: client.work_done(),
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
                    work_done_progress_params: client.work_done(),
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
    let limits = Limits::new(&params.page, usize::MAX, engine.workspace().config().limits.max_output_chars);
    let (calls, page) = page::page(calls, limits, "calls", |_| 0);
    Ok(CallHierarchyOutput { item: item.name, direction, calls, page, answer })
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
    out.push_str(&output.page.text_line("symbols").unwrap_or_default());
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
    out.push_str(&format!("{} symbol(s) [{}: {}]\n", output.page.total, output.server, output.completeness));
    out.push_str(&output.page.text_line("symbols").unwrap_or_default());
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
    out.push_str(&output.page.text_line("calls").unwrap_or_default());
    out.push_str(&answer_line(&output.answer));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbol(name: &str, line: usize, children: Vec<SymbolEntry>) -> SymbolEntry {
        SymbolEntry {
            name: name.to_owned(),
            kind: "function".to_owned(),
            detail: None,
            container: None,
            location: LocationInfo {
                file: "a.go".into(),
                line,
                column: 1,
                end_line: line,
                end_column: 2,
                outside_root: false,
                text: None,
            },
            children,
        }
    }

    /// (depth, name, container) of an outline, depth first.
    fn flat(symbols: &[SymbolEntry], depth: usize, out: &mut Vec<(usize, String, Option<String>)>) {
        for s in symbols {
            out.push((depth, s.name.clone(), s.container.clone()));
            flat(&s.children, depth + 1, out);
        }
    }

    #[test]
    fn outline_pages_add_up_to_the_outline_and_keep_nesting_within_a_page() {
        let outline = vec![
            symbol("A", 1, vec![symbol("A.x", 2, vec![symbol("A.x.i", 3, vec![])]), symbol("A.y", 4, vec![])]),
            symbol("B", 5, vec![]),
            symbol("C", 6, vec![symbol("C.z", 7, vec![])]),
        ];
        let (whole, info) = page_outline(outline.clone(), Limits { offset: 0, max_results: 100, max_chars: 40_000 });
        assert_eq!(info.total, 7);
        let mut all = Vec::new();
        flat(&whole, 0, &mut all);
        let names: Vec<&str> = all.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(names, ["A", "A.x", "A.x.i", "A.y", "B", "C", "C.z"]);
        assert_eq!(all[2].0, 2);

        // Pages of two: a child whose parent is on an earlier page names it in `container`.
        let mut union = Vec::new();
        let mut offset = 0;
        loop {
            let (symbols, info) = page_outline(outline.clone(), Limits { offset, max_results: 2, max_chars: 40_000 });
            flat(&symbols, 0, &mut union);
            match info.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        let names: Vec<&str> = union.iter().map(|(_, n, _)| n.as_str()).collect();
        assert_eq!(names, ["A", "A.x", "A.x.i", "A.y", "B", "C", "C.z"]);
        assert_eq!(union[2], (0, "A.x.i".to_owned(), Some("A.x".to_owned())));
        assert_eq!(union[3], (0, "A.y".to_owned(), Some("A".to_owned())));
        assert_eq!(union[5], (0, "C".to_owned(), None));
        assert_eq!(union[6], (0, "C.z".to_owned(), Some("C".to_owned())));
    }
}
