//! The session's lifecycle (LSP 3.17 "Server lifetime"): the editor-facing service ([`Proxy`])
//! and its state ([`Lifecycle`]: requests before `initialize` or after `shutdown` are refused),
//! `initialize` (workspace, `positionEncoding` negotiation, server start, the capability union
//! of [`super::capabilities`]), `initialized` (late registrations, [`super::late`]),
//! `shutdown` (every server stopped) and `exit`; the servers a document's language needs
//! ([`Shared::start_servers_for`]), and the agents' door opened once the editor has settled.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_lsp::{AnyEvent, AnyNotification, AnyRequest, AnyResult, ErrorCode, LspService, ResponseError};
use futures::future::BoxFuture;
use lsp_types::Url;
use serde_json::{Value, json};

use super::text_sync::text_sync;
use super::{
    LegendMap, RESTART, STATUS, Session, Shared, capabilities, error, internal, late, ready, restart, route, spelling,
    status, upstream,
};
use crate::documents::{Encoding, Language};
use crate::engine::Engine;
use crate::engine::agents::AnnouncedDoor;
use crate::workspace::Workspace;

/// Where the session is in the LSP lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Uninitialized,
    Initializing,
    ShuttingDown,
}

/// The editor-facing service.
pub(super) struct Proxy {
    shared: Arc<Shared>,
    state: Lifecycle,
}

impl Proxy {
    /// The service of a session that has not been initialized yet.
    pub(super) fn new(shared: Arc<Shared>) -> Proxy {
        Proxy { shared, state: Lifecycle::Uninitialized }
    }
}

/// Answers are [`AnyResult`]s: a server's answer that nothing here changes stays the JSON text
/// the server sent and is written to the editor as it is (`route`); answers made here are
/// `Value`s.
impl tower::Service<AnyRequest> for Proxy {
    type Response = AnyResult;
    type Error = ResponseError;
    type Future = BoxFuture<'static, Result<AnyResult, ResponseError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: AnyRequest) -> Self::Future {
        match (self.state, request.method.as_str()) {
            (Lifecycle::Uninitialized, "initialize") => {
                self.state = Lifecycle::Initializing;
                values(initialize(self.shared.clone(), request.params))
            }
            (Lifecycle::Uninitialized, _) => {
                ready(Err(error(ErrorCode::SERVER_NOT_INITIALIZED, "the editor must send initialize first")))
            }
            (_, "initialize") => ready(Err(error(ErrorCode::INVALID_REQUEST, "initialize was already sent"))),
            (Lifecycle::ShuttingDown, _) => {
                ready(Err(error(ErrorCode::INVALID_REQUEST, "the server is shutting down")))
            }
            (Lifecycle::Initializing, method) => {
                let Some(session) = self.shared.ready_session() else {
                    return ready(Err(error(ErrorCode::SERVER_NOT_INITIALIZED, "initialize has not finished")));
                };
                if method == "shutdown" {
                    self.state = Lifecycle::ShuttingDown;
                    let engine = session.engine.clone();
                    return Box::pin(async move {
                        let _ = tokio::task::spawn_blocking(move || engine.backends().stop_all()).await;
                        Ok(Value::Null.into())
                    });
                }
                if method == STATUS {
                    return ready(Ok(status(&self.shared, session).into()));
                }
                if method == RESTART {
                    return values(restart(&self.shared, session, &request.params));
                }
                route::request(&self.shared, session, request)
            }
        }
    }
}

/// An answer made here, as the main loop takes it.
fn values(
    answer: impl std::future::Future<Output = Result<Value, ResponseError>> + Send + 'static,
) -> BoxFuture<'static, Result<AnyResult, ResponseError>> {
    Box::pin(async move { answer.await.map(AnyResult::from) })
}

impl LspService for Proxy {
    fn notify(&mut self, notification: AnyNotification) -> ControlFlow<async_lsp::Result<()>> {
        if notification.method == "exit" {
            return ControlFlow::Break(Ok(()));
        }
        let Some(session) = self.shared.ready_session() else {
            return ControlFlow::Continue(());
        };
        if notification.method == "initialized" {
            // Servers that started after the `initialize` answer can be registered now.
            {
                let mut upstream = self.shared.upstream.lock();
                upstream.editor_initialized = true;
                upstream.initialized_at = Some(Instant::now());
            }
            late::reconcile(&self.shared, session);
            self.shared.editor_progress.send_modify(|progress| progress.0 = true);
        }
        if notification.method == "textDocument/didOpen" {
            self.shared.editor_progress.send_modify(|progress| progress.1 += 1);
        }
        let method = notification.method.clone();
        if let Err(message) = text_sync(&self.shared, session, notification) {
            tracing::warn!("{method}: {message}");
            self.shared.log_to_editor(2, format!("filepuff: {method}: {message}"));
        }
        ControlFlow::Continue(())
    }

    fn emit(&mut self, _event: AnyEvent) -> ControlFlow<async_lsp::Result<()>> {
        ControlFlow::Continue(())
    }
}

impl Shared {
    /// Starts the servers `path` needs in the background, at most once per language every
    /// 30 seconds; each new server opens the editor's documents itself (see
    /// [`upstream::EditorLink`]'s `started`).
    pub(super) fn start_servers_for(&self, session: &Session, path: &Path, language: Language) {
        {
            let mut starting = self.starting.lock();
            if starting.get(&language).is_some_and(|at| at.elapsed() < Duration::from_secs(30)) {
                return;
            }
            starting.insert(language, Instant::now());
        }
        let engine = session.engine.clone();
        let path = path.to_path_buf();
        let me = self.me.clone();
        tokio::task::spawn_blocking(move || {
            let result = engine.backends().acquire_all(&path, language);
            if let Some(shared) = me.upgrade() {
                match result {
                    Ok(_) => {
                        shared.starting.lock().remove(&language);
                    }
                    Err(err) => shared.log_to_editor(2, format!("filepuff: {err}")),
                }
            }
        });
    }
}

/// The editor's `initialize` (LSP 3.17 "Initialize Request").
async fn initialize(shared: Arc<Shared>, params: Value) -> Result<Value, ResponseError> {
    let editor_capabilities = params.get("capabilities").cloned().unwrap_or_else(|| json!({}));
    let root = workspace_root(&params)
        .or_else(|| shared.root_hint.clone())
        .or_else(|| std::env::current_dir().ok())
        .ok_or_else(|| error(ErrorCode::INVALID_PARAMS, "no workspace root"))?;
    let open_failed = |err: &dyn std::fmt::Display| {
        error(ErrorCode::INVALID_PARAMS, format!("cannot open the workspace {}: {err}", root.display()))
    };
    let workspace = Workspace::open(&root).map_err(|err| open_failed(&err))?;
    // The editor package's server overrides (`initializationOptions`) over filepuff.toml.
    let options = params.get("initializationOptions").cloned().unwrap_or(Value::Null);
    let config = workspace
        .config()
        .clone()
        .with_editor_options(&options)
        .map_err(|err| error(ErrorCode::INVALID_PARAMS, format!("initializationOptions: {err}")))?;
    let workspace = Workspace::with_config(workspace.root(), config).map_err(|err| open_failed(&err))?;
    let offered: Vec<String> = editor_capabilities
        .pointer("/general/positionEncodings")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let encoding = if offered.iter().any(|e| e == "utf-8") { Encoding::Utf8 } else { Encoding::Utf16 };
    let engine = Arc::new(Engine::new(workspace));
    engine.backends().adopt_runtime(tokio::runtime::Handle::current());
    engine.backends().attach_upstream(
        Arc::new(upstream::EditorLink(Arc::downgrade(&shared))),
        editor_capabilities.clone(),
        encoding,
    );
    let editor_root = workspace_root_uri(&params);
    let session = Session {
        spellings: Arc::new(spelling::Spellings::new(editor_root.as_ref(), engine.workspace().root())),
        engine: engine.clone(),
        encoding,
        accepts: super::fit::Accepts::from_capabilities(&editor_capabilities),
        editor_capabilities,
        ready: tokio::sync::watch::Sender::new(false),
        advertised: OnceLock::new(),
        legend: OnceLock::new(),
        legend_maps: Mutex::new(HashMap::new()),
    };
    if shared.session.set(session).is_err() {
        return Err(error(ErrorCode::INVALID_REQUEST, "initialize was already sent"));
    }
    // Agents' edits to open documents go through this editor; agents attach on the socket.
    engine.attach_editor(Arc::new(upstream::EditorLink(Arc::downgrade(&shared))));
    // Announced now (agents of a just-ended session wait for it), serving once settled.
    let announced = shared.agents.announce(engine.clone());
    tokio::spawn(host_agents_when_settled(Arc::downgrade(&shared), announced));

    // Start the servers of the languages the workspace holds, concurrently.
    let detect = engine.clone();
    let languages = tokio::task::spawn_blocking(move || {
        crate::search::workspace_languages(detect.workspace(), DETECT_DEPTH, DETECT_FILES).unwrap_or_else(|err| {
            tracing::warn!("finding the workspace's languages: {err}");
            Vec::new()
        })
    })
    .await
    .unwrap_or_default();
    let starts = languages.into_iter().map(|(language, sample)| {
        let engine = engine.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(err) = engine.backends().acquire_all(&sample, language) {
                tracing::info!("{}: {err}", language.name());
            }
        })
    });
    let config = engine.backends().config();
    let limit = Duration::from_millis(config.initialize_wait_ms.unwrap_or(config.request_timeout_ms.max(1000)));
    let _ = tokio::time::timeout(limit, futures::future::join_all(starts)).await;

    let session = shared.session.get().ok_or_else(|| internal("no session"))?;
    let mut clients = engine.backends().running();
    let order: Vec<String> = engine.backends().server_specs().iter().map(|s| s.name.clone()).collect();
    clients.sort_by_key(|c| order.iter().position(|n| *n == c.name));
    let capabilities: Vec<Value> = clients.iter().map(|c| c.capabilities_json.clone()).collect();
    let mut legend = json!({ "tokenTypes": [], "tokenModifiers": [] });
    for caps in &capabilities {
        if let Some(server_legend) = caps.pointer("/semanticTokensProvider/legend") {
            capabilities::merge(&mut legend, server_legend);
        }
    }
    let mut delta = true;
    for (client, caps) in clients.iter().zip(&capabilities) {
        if let Some(server_legend) = caps.pointer("/semanticTokensProvider/legend") {
            let map = LegendMap::new(server_legend, &legend);
            delta &= map.is_identity() && client.encoding == encoding;
            session.legend_maps.lock().insert(client.name.clone(), map);
        }
    }
    let refs: Vec<&Value> = capabilities.iter().collect();
    let mut union = capabilities::union(&refs, encoding, delta);
    if let Some(tokens) = union.get_mut("semanticTokensProvider").and_then(Value::as_object_mut) {
        // Without tokens now, the legend is the first late server's ([`late`]).
        let _ = session.legend.set(legend.clone());
        tokens.insert("legend".into(), legend);
    }
    let _ = session.advertised.set(union.clone());
    let servers: Vec<String> = clients
        .iter()
        .map(|c| format!("{} ({})", c.server_info.clone().unwrap_or_else(|| c.name.clone()), c.encoding.lsp_name()))
        .collect();
    tracing::info!("serving {} with {}", engine.workspace().root().display(), servers.join(", "));
    session.ready.send_replace(true);
    let me = shared.clone();
    tokio::spawn(async move { me.send_status() });
    Ok(json!({
        "capabilities": union,
        "serverInfo": { "name": "filepuff", "version": env!("CARGO_PKG_VERSION") }
    }))
}

/// The URI of the workspace root as the editor spelt it: the first workspace folder, else
/// `rootUri`, else `rootPath`.
fn workspace_root_uri(params: &Value) -> Option<Url> {
    let folder = params.pointer("/workspaceFolders/0/uri").and_then(Value::as_str);
    let root_uri = params.get("rootUri").and_then(Value::as_str);
    if let Some(uri) = folder.or(root_uri).and_then(|u| Url::parse(u).ok()) {
        return Some(uri);
    }
    params.get("rootPath").and_then(Value::as_str).and_then(|p| Url::from_directory_path(p).ok())
}

/// How long the editor must have sent no `didOpen` after `initialized` before agents are served.
const DOCUMENTS_SETTLE: Duration = Duration::from_millis(250);
/// The longest wait for that, after `initialize`.
const DOCUMENTS_SETTLE_LIMIT: Duration = Duration::from_secs(3);

/// Opens the agents' door ([`crate::engine::agents::AgentDoor`]) once the editor has sent
/// `initialized` and then opened its documents (no `didOpen` for [`DOCUMENTS_SETTLE`]; at most
/// [`DOCUMENTS_SETTLE_LIMIT`] in all). A restarted `filepuff lsp` that took the socket at once
/// would serve agents from disk until the editor re-opened its buffers — and an agent's edit in
/// that moment would be written under the person's unsaved text. Agents attached to the previous
/// session wait for the new owner meanwhile (the bridge looks for one for a few seconds).
async fn host_agents_when_settled(shared: std::sync::Weak<Shared>, announced: Box<dyn AnnouncedDoor>) {
    let Some(mut progress) = shared.upgrade().map(|s| s.editor_progress.subscribe()) else { return };
    let deadline = tokio::time::Instant::now() + DOCUMENTS_SETTLE_LIMIT;
    let _ = tokio::time::timeout_at(deadline, progress.wait_for(|(initialized, _)| *initialized)).await;
    loop {
        let quiet = (tokio::time::Instant::now() + DOCUMENTS_SETTLE).min(deadline);
        match tokio::time::timeout_at(quiet, progress.changed()).await {
            Ok(Ok(())) if tokio::time::Instant::now() < deadline => continue,
            Ok(Err(_)) => return,
            _ => break,
        }
    }
    let host = announced.open().await;
    if let Some(shared) = shared.upgrade() {
        *shared.listener.lock() = Some(host);
    }
}

/// The workspace root `initialize` names: the first workspace folder, else `rootUri`, else
/// `rootPath`.
fn workspace_root(params: &Value) -> Option<PathBuf> {
    let from_uri = |uri: &str| Url::parse(uri).ok()?.to_file_path().ok();
    params
        .pointer("/workspaceFolders/0/uri")
        .and_then(Value::as_str)
        .and_then(from_uri)
        .or_else(|| params.get("rootUri").and_then(Value::as_str).and_then(from_uri))
        .or_else(|| params.get("rootPath").and_then(Value::as_str).map(PathBuf::from))
}

/// Files looked at to find the workspace's languages, and how deep.
const DETECT_FILES: usize = 20_000;
const DETECT_DEPTH: usize = 8;
