//! `calls` relationships from language servers.
//!
//! For each analysed file whose language has a server, the server is asked once for the file's
//! symbols (`textDocument/documentSymbol`), then, at every function, method and constructor it
//! lists, for the call hierarchy (`textDocument/prepareCallHierarchy` +
//! `callHierarchy/outgoingCalls`, LSP 3.16) — or, from a server without call hierarchy, for the
//! references of the function (`textDocument/references`), each reference inside another
//! function counting as a call from it. Every caller and callee location is mapped back to the
//! analysed component whose file and line range contain it ([`CallTargets`]), so a call into
//! another file, directory or package resolves to the component the server named, not to a
//! component that merely has the same name.
//!
//! Lines are 0-based in LSP and count the same line breaks as filepuff's ropes (LF, CR, CRLF),
//! whatever the position encoding; columns are never needed here.
//!
//! Limits: files are asked about [`LspCallsLimits::files_in_flight`] at a time, each with up to
//! [`LspCallsLimits::requests_per_file`] requests in flight, and a file that takes longer than
//! [`LspCallsLimits::file_timeout`] is given up on (its calls then come from syntax, marked
//! approximate, like files whose language has no server).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::db::{Db, sql_params};
use futures::StreamExt;
use lsp_types::request::{
    CallHierarchyOutgoingCalls, CallHierarchyPrepare, DocumentSymbolRequest, References, Request,
};
use lsp_types::{
    CallHierarchyOutgoingCallsParams, CallHierarchyPrepareParams, CallHierarchyServerCapability, DocumentSymbol,
    DocumentSymbolParams, DocumentSymbolResponse, OneOf, Position, ReferenceContext, ReferenceParams, SymbolKind,
    TextDocumentIdentifier, TextDocumentPositionParams, Url,
};
use ropey::Rope;
use serde_json::json;

use super::apply::link;
use super::{GraphError, RelationshipType, source};
use crate::backends::{BackendError, Backends, LspClient, Needs, ask_on};
use crate::documents::position::{self, Encoding};
use crate::documents::{DocumentStore, Language};
use crate::workspace::Workspace;

/// Where `calls` relationships come from (`filepuff graph index --calls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallsMode {
    /// The language server where one is configured and installed, else syntax.
    #[default]
    Auto,
    /// The language server; a configured server that is missing or fails is an error.
    Lsp,
    /// Syntax only: calls by name, marked approximate. No server is started.
    Syntax,
}

impl CallsMode {
    /// `auto`, `lsp` or `syntax` (case-insensitive).
    pub fn parse(text: &str) -> Option<CallsMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(CallsMode::Auto),
            "lsp" => Some(CallsMode::Lsp),
            "syntax" => Some(CallsMode::Syntax),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallsMode::Auto => "auto",
            CallsMode::Lsp => "lsp",
            CallsMode::Syntax => "syntax",
        }
    }
}

/// Bounds of the language-server pass.
#[derive(Debug, Clone)]
pub struct LspCallsLimits {
    /// Longest time spent on one file (sync, symbols and every call request).
    pub file_timeout: Duration,
    /// Longest wait for one answer.
    pub request_timeout: Duration,
    /// Longest wait for a server to finish loading before the first file is asked about.
    pub ready_timeout: Duration,
    /// Files asked about at once, per server.
    pub files_in_flight: usize,
    /// Requests in flight for one file.
    pub requests_per_file: usize,
}

impl Default for LspCallsLimits {
    fn default() -> Self {
        LspCallsLimits {
            file_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(10),
            ready_timeout: Duration::from_secs(20),
            files_in_flight: 4,
            requests_per_file: 4,
        }
    }
}

impl LspCallsLimits {
    /// The limits `[graph]` and `[lsp]` configure.
    pub fn from_config(graph: &crate::workspace::GraphConfig, lsp: &crate::workspace::LspConfig) -> LspCallsLimits {
        LspCallsLimits {
            file_timeout: Duration::from_millis(graph.lsp_file_timeout_ms.max(100)),
            request_timeout: Duration::from_millis(lsp.request_timeout_ms.max(100)),
            ready_timeout: Duration::from_millis(lsp.ready_timeout_ms),
            files_in_flight: graph.lsp_files_in_flight.max(1),
            ..LspCallsLimits::default()
        }
    }
}

/// How a server's calls were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallsMethod {
    /// `prepareCallHierarchy` + `outgoingCalls`: what each function of the file calls.
    CallHierarchy,
    /// `references` of each function of the file: who refers to it (calls and other uses).
    References,
}

/// A call a server reported: from the function declared at `caller_line` of `caller_uri` to the
/// one declared at `callee_line` of `callee_uri` (0-based lines).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerCall {
    pub caller_uri: Url,
    pub caller_line: u32,
    pub callee_uri: Url,
    pub callee_line: u32,
}

/// What a server said about one file.
#[derive(Debug, Clone)]
pub struct FileCalls {
    /// The server's name (`gopls`, `basedpyright`, …).
    pub server: String,
    pub method: CallsMethod,
    pub calls: Vec<ServerCall>,
}

/// One file to ask about.
#[derive(Debug, Clone)]
pub struct CallsJob {
    /// Workspace-relative path.
    pub relative: String,
    pub absolute: PathBuf,
    pub language: Language,
}

/// Why a file's calls did not come from its server.
#[derive(Debug, Clone)]
pub enum NotAnswered {
    /// The server could not be had for the file (not installed, failed to start).
    Unavailable(String),
    /// The server was asked and failed (timeout, crash, error answer) or the file could not be
    /// read.
    Failed(String),
}

/// Asks the servers about every job (bounded, see the module doc). Returns one outcome per job,
/// in job order. Call from a synchronous context (it runs on the backends' runtime).
pub fn ask_servers(
    backends: &Backends,
    documents: &DocumentStore,
    jobs: &[CallsJob],
    limits: &LspCallsLimits,
    max_bytes: u64,
) -> Vec<Result<FileCalls, NotAnswered>> {
    let mut outcomes: Vec<Option<Result<FileCalls, NotAnswered>>> = vec![None; jobs.len()];
    // Jobs by client (server and project root), each with the text to sync.
    let mut groups: Vec<(Arc<LspClient>, Vec<FileToAsk>)> = Vec::new();
    // A server that cannot be had for one file is not tried again for the others (each failed
    // start would wait out the backends' backoff).
    let mut unavailable: HashMap<Language, String> = HashMap::new();
    for (idx, job) in jobs.iter().enumerate() {
        let key = job.language;
        if let Some(message) = unavailable.get(&key) {
            outcomes[idx] = Some(Err(NotAnswered::Unavailable(message.clone())));
            continue;
        }
        let client = match backends.acquire(&job.absolute, job.language) {
            Ok(acquired) => acquired.client,
            Err(err) => {
                unavailable.insert(key, err.to_string());
                outcomes[idx] = Some(Err(NotAnswered::Unavailable(err.to_string())));
                continue;
            }
        };
        let text = match documents.text(&crate::workspace::DocumentId::from_canonical(&job.absolute), max_bytes) {
            Ok(source) => source.text,
            Err(err) => {
                outcomes[idx] = Some(Err(NotAnswered::Failed(format!("{}: {err}", job.relative))));
                continue;
            }
        };
        let Ok(uri) = Url::from_file_path(&job.absolute) else {
            outcomes[idx] = Some(Err(NotAnswered::Failed(format!("{}: no file URI", job.relative))));
            continue;
        };
        let entry = (idx, uri, job.language.lsp_id(), text);
        match groups.iter_mut().find(|(c, _)| Arc::ptr_eq(c, &client)) {
            Some((_, group)) => group.push(entry),
            None => groups.push((client, vec![entry])),
        }
    }
    for (client, group) in groups {
        let texts: HashMap<usize, FileToAsk> = group.iter().map(|file| (file.0, file.clone())).collect();
        let answered = {
            let (client, limits) = (client.clone(), limits.clone());
            backends.run(async move { ask_one_server(client, group, limits).await })
        };
        // A server that died on the way (a crash, killed for memory) is restarted once, with the
        // backends' backoff, for the files it did not answer.
        let mut again = Vec::new();
        for (idx, outcome) in answered {
            match outcome {
                Err((true, _)) if !client.is_alive() => again.push(texts[&idx].clone()),
                outcome => outcomes[idx] = Some(outcome.map_err(|(_, message)| NotAnswered::Failed(message))),
            }
        }
        let Some(first) = again.first() else { continue };
        let job = &jobs[first.0];
        tracing::warn!(server = %client.name, "the server stopped; restarting it for {} file(s)", again.len());
        let answered = match backends.acquire(&job.absolute, job.language) {
            Ok(acquired) => {
                let limits = limits.clone();
                backends.run(async move { ask_one_server(acquired.client, again, limits).await })
            }
            Err(err) => again.into_iter().map(|file| (file.0, Err((false, err.to_string())))).collect(),
        };
        for (idx, outcome) in answered {
            outcomes[idx] = Some(outcome.map_err(|(_, message)| NotAnswered::Failed(message)));
        }
    }
    outcomes.into_iter().map(|o| o.unwrap_or_else(|| Err(NotAnswered::Failed("not asked".to_owned())))).collect()
}

/// A job's index, its URI, LSP language id and the text to sync.
type FileToAsk = (usize, Url, &'static str, Rope);

/// Asks one server about its files, `files_in_flight` at a time. A failure says whether the
/// server stopped (`true`) and why.
async fn ask_one_server(
    client: Arc<LspClient>,
    files: Vec<FileToAsk>,
    limits: LspCallsLimits,
) -> Vec<(usize, Result<FileCalls, (bool, String)>)> {
    // Futures built up front from owned values (a stream `map` closure over borrowed ones is not
    // provably `Send` for every lifetime, which the backends' runtime needs).
    let tasks: Vec<_> = files
        .into_iter()
        .map(|(idx, uri, language_id, text)| {
            let client = client.clone();
            let limits = limits.clone();
            async move {
                let started = Instant::now();
                // The one ask path: synced, ready, asked again on ContentModified or when the
                // server began indexing meanwhile.
                let documents = vec![(uri.clone(), language_id.to_owned(), text.clone())];
                let conversation = || file_calls(&client, &uri, language_id, &text, &limits);
                let asked = tokio::time::timeout(
                    limits.file_timeout,
                    ask_on(
                        &client,
                        documents,
                        &uri,
                        Needs::Index,
                        limits.ready_timeout,
                        conversation(),
                        conversation(),
                    ),
                );
                let outcome = match asked.await {
                    Ok(Ok((calls, _))) => Ok(calls),
                    Ok(Err(err)) => Err((matches!(err, BackendError::Crashed { .. }), err.to_string())),
                    Err(_) => Err((
                        false,
                        format!(
                            "{} gave no complete answer for {} within {} ms",
                            client.name,
                            uri.path(),
                            started.elapsed().as_millis()
                        ),
                    )),
                };
                (idx, outcome)
            }
        })
        .collect();
    futures::stream::iter(tasks).buffer_unordered(limits.files_in_flight.max(1)).collect().await
}

/// Whether `client` offers the call hierarchy (LSP 3.16 `callHierarchyProvider`).
fn has_call_hierarchy(client: &LspClient) -> bool {
    match &client.capabilities.call_hierarchy_provider {
        Some(CallHierarchyServerCapability::Simple(enabled)) => *enabled,
        Some(CallHierarchyServerCapability::Options(_)) => true,
        None => false,
    }
}

fn has_references(client: &LspClient) -> bool {
    match &client.capabilities.references_provider {
        Some(OneOf::Left(enabled)) => *enabled,
        Some(OneOf::Right(_)) => true,
        None => false,
    }
}

/// The calls of one file: its current text synced to the server, its callables from
/// `documentSymbol`, then call hierarchy (or references) at each.
///
/// Errors: the server's ([`BackendError`]); a server with neither call hierarchy nor references
/// is [`BackendError::Server`].
pub async fn file_calls(
    client: &LspClient,
    uri: &Url,
    language_id: &str,
    text: &Rope,
    limits: &LspCallsLimits,
) -> Result<FileCalls, BackendError> {
    let method = if has_call_hierarchy(client) {
        CallsMethod::CallHierarchy
    } else if has_references(client) {
        CallsMethod::References
    } else {
        return Err(BackendError::Server {
            server: client.name.clone(),
            method: CallHierarchyPrepare::METHOD,
            message: "the server offers neither call hierarchy nor references".to_owned(),
        });
    };
    client.sync(uri, language_id, text).await?;
    let params = DocumentSymbolParams {
        text_document: TextDocumentIdentifier { uri: uri.clone() },
        work_done_progress_params: client.work_done(),
        partial_result_params: Default::default(),
    };
    let symbols = client.request::<DocumentSymbolRequest>(params, limits.request_timeout).await?;
    let positions = callable_positions(symbols, text, client.encoding);
    let timeout = limits.request_timeout;
    let tasks: Vec<_> = positions
        .into_iter()
        .map(|position| {
            let at =
                TextDocumentPositionParams { text_document: TextDocumentIdentifier { uri: uri.clone() }, position };
            async move {
                match method {
                    CallsMethod::CallHierarchy => outgoing_calls(client, at, timeout).await,
                    CallsMethod::References => references_as_calls(client, at, timeout).await,
                }
            }
        })
        .collect();
    let asked: Vec<Result<Vec<ServerCall>, BackendError>> =
        futures::stream::iter(tasks).buffer_unordered(limits.requests_per_file.max(1)).collect().await;
    // A server that refuses one position (gopls: "x is not a function" for a function-typed
    // variable) has still answered for the others; a timeout or a crash loses the file.
    let mut calls = Vec::new();
    for answer in asked {
        match answer {
            Ok(found) => calls.extend(found),
            Err(BackendError::Server { message, .. }) => tracing::debug!("{}: {message}", uri.path()),
            Err(err) => return Err(err),
        }
    }
    calls.sort_by(|a, b| {
        (a.caller_uri.as_str(), a.caller_line, a.callee_uri.as_str(), a.callee_line).cmp(&(
            b.caller_uri.as_str(),
            b.caller_line,
            b.callee_uri.as_str(),
            b.callee_line,
        ))
    });
    calls.dedup();
    Ok(FileCalls { server: client.name.clone(), method, calls })
}

/// What the function at `at` calls.
async fn outgoing_calls(
    client: &LspClient,
    at: TextDocumentPositionParams,
    timeout: Duration,
) -> Result<Vec<ServerCall>, BackendError> {
    let prepare =
        CallHierarchyPrepareParams { text_document_position_params: at, work_done_progress_params: client.work_done() };
    let items = client.request::<CallHierarchyPrepare>(prepare, timeout).await?.unwrap_or_default();
    let mut calls = Vec::new();
    for item in items {
        let (caller_uri, caller_line) = (item.uri.clone(), item.selection_range.start.line);
        let params = CallHierarchyOutgoingCallsParams {
            item,
            work_done_progress_params: client.work_done(),
            partial_result_params: Default::default(),
        };
        for call in client.request::<CallHierarchyOutgoingCalls>(params, timeout).await?.unwrap_or_default() {
            calls.push(ServerCall {
                caller_uri: caller_uri.clone(),
                caller_line,
                callee_uri: call.to.uri,
                callee_line: call.to.selection_range.start.line,
            });
        }
    }
    Ok(calls)
}

/// Who refers to the function at `at`: each reference is a call from the function around it.
async fn references_as_calls(
    client: &LspClient,
    at: TextDocumentPositionParams,
    timeout: Duration,
) -> Result<Vec<ServerCall>, BackendError> {
    let (callee_uri, callee_line) = (at.text_document.uri.clone(), at.position.line);
    let params = ReferenceParams {
        text_document_position: at,
        work_done_progress_params: client.work_done(),
        partial_result_params: Default::default(),
        context: ReferenceContext { include_declaration: false },
    };
    let locations = client.request::<References>(params, timeout).await?.unwrap_or_default();
    Ok(locations
        .into_iter()
        .map(|location| ServerCall {
            caller_uri: location.uri,
            caller_line: location.range.start.line,
            callee_uri: callee_uri.clone(),
            callee_line,
        })
        .collect())
}

/// The name positions of the functions, methods and constructors in a `documentSymbol` answer
/// (nested ones included), in the server's encoding.
fn callable_positions(response: Option<DocumentSymbolResponse>, text: &Rope, encoding: Encoding) -> Vec<Position> {
    let callable =
        |kind: SymbolKind| matches!(kind, SymbolKind::FUNCTION | SymbolKind::METHOD | SymbolKind::CONSTRUCTOR);
    let mut out = Vec::new();
    match response {
        None => {}
        Some(DocumentSymbolResponse::Nested(symbols)) => {
            let mut stack: Vec<DocumentSymbol> = symbols;
            while let Some(symbol) = stack.pop() {
                if callable(symbol.kind) {
                    out.push(symbol.selection_range.start);
                }
                stack.extend(symbol.children.unwrap_or_default());
            }
        }
        // Flat symbols have no name range: find the name from the start of the declaration.
        #[allow(deprecated)]
        Some(DocumentSymbolResponse::Flat(symbols)) => {
            for symbol in symbols.into_iter().filter(|s| callable(s.kind)) {
                let name = symbol.name.rsplit(['.', ':']).next().unwrap_or(&symbol.name).to_owned();
                out.push(name_position(text, symbol.location.range.start, &name, encoding));
            }
        }
    }
    out.sort_by_key(|p| (p.line, p.character));
    out.dedup();
    out
}

/// The position of the first whole-word `name` at or after `start` (within 5 lines), else
/// `start`.
fn name_position(text: &Rope, start: Position, name: &str, encoding: Encoding) -> Position {
    let (offset, _) = position::position_to_offset(
        text,
        position::Position { line: start.line, character: start.character },
        encoding,
    );
    let end = position::line_to_offset(text, start.line as usize + 5);
    let window = text.byte_slice(offset.min(end)..end).to_string();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let found = window.match_indices(name).find(|(at, _)| {
        let before = window[..*at].chars().next_back();
        let after = window[at + name.len()..].chars().next();
        before.is_none_or(|c| !is_ident(c)) && after.is_none_or(|c| !is_ident(c))
    });
    match found {
        Some((at, _)) => {
            let (pos, _) = position::offset_to_position(text, offset + at, encoding);
            Position { line: pos.line, character: pos.character }
        }
        None => start,
    }
}

/// Analysed components by file and line range, for mapping server locations back to the graph.
/// Files are loaded from the store on first use; URIs outside the workspace map to nothing.
pub struct CallTargets<'w> {
    /// Like `paths`, kept for one analysis run.
    resolver: crate::workspace::Resolver<'w>,
    paths: HashMap<Url, Option<String>>,
    /// Per file: (start line, end line, id, is a function or method), 1-based inclusive, files
    /// and modules left out.
    ranges: HashMap<String, Vec<(u32, u32, String, bool)>>,
}

impl<'w> CallTargets<'w> {
    pub fn new(workspace: &'w Workspace) -> CallTargets<'w> {
        CallTargets { resolver: workspace.resolver(), paths: HashMap::new(), ranges: HashMap::new() }
    }

    /// The id of the innermost analysed component (not a file or module; with `callables_only`,
    /// a function or method) of `uri` whose lines contain the 0-based `line`.
    pub fn component_at(
        &mut self,
        conn: &dyn Db,
        uri: &Url,
        line: u32,
        callables_only: bool,
    ) -> Result<Option<String>, GraphError> {
        let resolver = &mut self.resolver;
        let path = self
            .paths
            .entry(uri.clone())
            .or_insert_with(|| resolver.resolve_uri(uri).ok().map(|resolved| resolved.relative))
            .clone();
        let Some(path) = path else { return Ok(None) };
        if !self.ranges.contains_key(&path) {
            let found = conn.query(
                "SELECT start_line, end_line, id, type IN ('function', 'method') FROM components \
                 WHERE file_path = ?1 AND origin = 'analysis' AND type NOT IN ('file', 'module') \
                 AND start_line IS NOT NULL AND end_line IS NOT NULL",
                &sql_params![path.as_str()],
            )?;
            let mut rows: Vec<(u32, u32, String, bool)> = Vec::with_capacity(found.len());
            for row in found {
                if let (Some(start), Some(end)) = (row.opt_u32(0)?, row.opt_u32(1)?) {
                    rows.push((start, end, row.text(2)?, row.opt_bool(3)?.unwrap_or(false)));
                }
            }
            self.ranges.insert(path.clone(), rows);
        }
        let line = position::one_based(line);
        Ok(self.ranges[&path]
            .iter()
            .filter(|(start, end, _, callable)| *start <= line && line <= *end && (*callable || !callables_only))
            .min_by_key(|(start, end, _, _)| (end - start, std::cmp::Reverse(*start)))
            .map(|(_, _, id, _)| id.clone()))
    }
}

/// Writes the `calls` relationships a server gave for the file `relative` (each end mapped to
/// its component; calls whose ends are not analysed components are left out) and records that
/// the file's calls came from that server. Returns the relationships written.
pub fn write_file_calls(
    conn: &dyn Db,
    targets: &mut CallTargets<'_>,
    relative: &str,
    calls: &FileCalls,
) -> Result<usize, GraphError> {
    let metadata = lsp_metadata(calls);
    // A reference's place is any use: only one inside a function or method is a call from it.
    let callers_only = calls.method == CallsMethod::References;
    let mut written = 0;
    for call in &calls.calls {
        let caller = targets.component_at(conn, &call.caller_uri, call.caller_line, callers_only)?;
        let callee = targets.component_at(conn, &call.callee_uri, call.callee_line, false)?;
        if let (Some(caller), Some(callee)) = (caller, callee) {
            written += link(conn, &caller, &callee, RelationshipType::Calls, &metadata)?;
        }
    }
    source::set_calls_from(conn, relative, &format!("lsp:{}", calls.server))?;
    Ok(written)
}

/// The metadata of a relationship a server reported.
pub fn lsp_metadata(calls: &FileCalls) -> serde_json::Value {
    match calls.method {
        CallsMethod::CallHierarchy => json!({ "source": "lsp", "server": calls.server }),
        CallsMethod::References => json!({ "source": "lsp", "server": calls.server, "via": "references" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_their_wire_names() {
        for mode in [CallsMode::Auto, CallsMode::Lsp, CallsMode::Syntax] {
            assert_eq!(CallsMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(CallsMode::parse(" LSP "), Some(CallsMode::Lsp));
        assert_eq!(CallsMode::parse("tree-sitter"), None);
    }

    /// Two analysed Python files; calls as a server would report them, mapped to components.
    #[test]
    fn server_locations_map_to_the_innermost_component_by_file_and_line() {
        use crate::graph::analyze::extract;
        use crate::graph::apply::{Anchor, apply};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = [
            (
                "lib/text.py",
                "def shout(s):\n    return s.upper()\n\n\nclass Box:\n    def put(self, x):\n        return shout(x)\n",
            ),
            (
                "app/main.py",
                "from lib.text import shout\n\nVALUE = shout('a')\n\n\ndef run():\n    return shout('b')\n",
            ),
        ];
        let store = crate::graph::GraphStore::open(&root.join(".filepuff/graph.db")).unwrap();
        for (path, text) in files {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
            let parsed = crate::syntax::parse(Language::Python, &Rope::from_str(text)).unwrap();
            let analysis = extract(&parsed, path);
            store.write(|tx| apply(tx, &analysis, Anchor::File, None)).unwrap();
        }
        let workspace = Workspace::open(&root).unwrap();
        let uri = |path: &str| Url::from_file_path(root.join(path)).unwrap();
        let call = |caller: &str, caller_line: u32, callee: &str, callee_line: u32| ServerCall {
            caller_uri: uri(caller),
            caller_line,
            callee_uri: uri(callee),
            callee_line,
        };
        let outside = Url::parse("file:///usr/lib/python3/os.py").unwrap();
        let calls = |method, calls| FileCalls { server: "pyls".to_owned(), method, calls };
        let edges = |found: &FileCalls| {
            store
                .write(|tx| {
                    let mut targets = CallTargets::new(&workspace);
                    write_file_calls(tx, &mut targets, "app/main.py", found)
                })
                .unwrap();
            let mut edges: Vec<(String, String, serde_json::Value)> = Vec::new();
            for name in ["run", "Box.put", "VALUE"] {
                let source = store.find_component(name).unwrap();
                for r in store.relationships_of(&source.id, &[crate::graph::RelationshipType::Calls]).unwrap() {
                    if r.source_id == source.id {
                        let target = store.component(&r.target_id).unwrap().unwrap();
                        edges.push((name.to_owned(), target.qualified_name, r.metadata));
                    }
                }
            }
            edges
        };
        // Call hierarchy: `run` (line 5) calls shout (line 0 of lib/text.py) and something outside
        // the workspace; `Box.put` (line 5 of lib/text.py, inside class Box) calls shout; a call
        // of `run` by itself is no edge.
        let hierarchy = calls(
            CallsMethod::CallHierarchy,
            vec![
                call("app/main.py", 5, "lib/text.py", 0),
                ServerCall { callee_uri: outside, ..call("app/main.py", 5, "lib/text.py", 3) },
                call("lib/text.py", 5, "lib/text.py", 0),
                call("app/main.py", 5, "app/main.py", 6),
            ],
        );
        let lsp = json!({"source": "lsp", "server": "pyls"});
        assert_eq!(
            edges(&hierarchy),
            [("run".to_owned(), "shout".to_owned(), lsp.clone()), ("Box.put".to_owned(), "shout".to_owned(), lsp)]
        );
        // References of shout: the one in `run` is a call; the one in VALUE's initialiser is not
        // inside a function.
        store.write(|tx| tx.execute("DELETE FROM relationships WHERE type = 1", &[])).unwrap();
        let references = calls(
            CallsMethod::References,
            vec![call("app/main.py", 2, "lib/text.py", 0), call("app/main.py", 6, "lib/text.py", 0)],
        );
        let via = json!({"source": "lsp", "server": "pyls", "via": "references"});
        assert_eq!(edges(&references), [("run".to_owned(), "shout".to_owned(), via)]);
        let kept: Option<String> = store
            .read(|conn| {
                conn.query_one("SELECT calls_from FROM sources WHERE source_key = 'app/main.py'", &[])?.opt_text(0)
            })
            .unwrap();
        assert_eq!(kept.as_deref(), Some("lsp:pyls"));
    }

    #[test]
    fn flat_symbols_are_asked_at_their_name() {
        let text = Rope::from_str("package p\n\n// doc\nfunc (r *Reader) Read(p []byte) {}\nfunc Reader2() {}\n");
        let uri = Url::parse("file:///w/p.go").unwrap();
        #[allow(deprecated)]
        let symbol = |name: &str, line: u32, kind: SymbolKind| lsp_types::SymbolInformation {
            name: name.to_owned(),
            kind,
            tags: None,
            deprecated: None,
            location: lsp_types::Location {
                uri: uri.clone(),
                range: lsp_types::Range::new(Position::new(line, 0), Position::new(line, 10)),
            },
            container_name: None,
        };
        let response = DocumentSymbolResponse::Flat(vec![
            symbol("(*Reader).Read", 3, SymbolKind::METHOD),
            symbol("Reader2", 4, SymbolKind::FUNCTION),
            symbol("Reader", 2, SymbolKind::STRUCT),
        ]);
        let positions = callable_positions(Some(response), &text, Encoding::Utf16);
        // `Read` after the receiver (not inside `Reader`), `Reader2` at its name.
        assert_eq!(positions, [Position::new(3, 17), Position::new(4, 5)]);
    }
}
