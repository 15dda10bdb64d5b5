//! The LSP face: `filepuff lsp`, one stdio language server for the editor in front of every
//! language server the workspace needs (DESIGN.md "The faces", "Data flow").
//!
//! The Engine owns the documents and the backends; this face only translates. In order:
//! - **Lifecycle** (LSP 3.17 "Server lifetime"): `initialize` opens the workspace (the first
//!   workspace folder, else `rootUri`, else `--root`, else the current directory), negotiates
//!   `positionEncoding` (utf-8 when the editor offers it, else utf-16), starts the servers for
//!   the languages found in the workspace and answers with the union of their capabilities
//!   ([`capabilities`]); what servers that start later add is registered with the editor
//!   ([`late`]). `shutdown` stops every server; `exit` ends the session. Agents attach through
//!   the [`AgentDoor`] the composition root gives (`cli.rs`: the MCP face's workspace socket,
//!   taken over from a previous `filepuff lsp` of the root when it exits).
//! - **Text sync**: `didOpen`/`didChange`/`didSave`/`didClose` update the documents store in
//!   arrival order (async-lsp runs notification handlers one at a time, in order) and are
//!   mirrored at once to every server of the document's language, each in its own encoding
//!   ([`crate::documents::DocumentStore::apply_changes`]).
//! - **Requests** are routed by the document's language ([`route`]); positions are translated
//!   only where a server's encoding differs from the editor's ([`translate`]), and each server
//!   is offered the editor's encoding first, so usually nothing is translated and methods
//!   filepuff does not know pass through safely.
//! - **Server→editor traffic** (diagnostics, progress, messages, `workspace/applyEdit`,
//!   registrations, refreshes) is merged and passed on by [`upstream`].
//! - A server that dies is restarted and the editor's documents are opened on it again; the
//!   editor sees a `window/logMessage`.

mod capabilities;
mod completion;
mod fan;
mod fit;
mod frame;
mod late;
mod route;
mod spelling;
mod translate;
mod upstream;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_lsp::concurrency::ConcurrencyLayer;
use async_lsp::panic::CatchUnwindLayer;
use async_lsp::{AnyEvent, AnyNotification, AnyRequest, ClientSocket, ErrorCode, LspService, MainLoop, ResponseError};
use futures::future::BoxFuture;
use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams, Url,
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tower::ServiceBuilder;

use crate::documents::{Encoding, Language, TextChange};
use crate::engine::Engine;
use crate::workspace::Workspace;

pub use translate::{LegendMap, Translator};

use crate::engine::agents::{AgentDoor, AnnouncedDoor, OpenDoor};

/// Runs `filepuff lsp` on stdin/stdout until the editor sends `exit` or closes the pipe.
/// `root` is used when `initialize` names no workspace. Errors: the runtime could not start,
/// or the editor's stream failed (not: malformed messages, which are answered and skipped).
pub fn serve_stdio(root: Option<PathBuf>, agents: Arc<dyn AgentDoor>) -> anyhow::Result<()> {
    // One thread for the editor's main loop, the servers' clients and the agents' sessions
    // (tools run on the blocking pool): messages pass between them without thread wake-ups.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let result = runtime.block_on(serve(Box::new(std::io::stdin()), Box::new(std::io::stdout()), root, agents));
    // The stdin thread may still sit in a blocking read: do not wait for it.
    runtime.shutdown_background();
    result
}

/// What the writer thread writes: bytes, or a request to say when all before it are written.
enum Out {
    Bytes(Vec<u8>),
    Flushed(std::sync::mpsc::Sender<()>),
}

/// Serves one editor session over `input`/`output` (see [`serve_stdio`]).
///
/// The editor's stream is read and checked ([`frame`]) on a thread of its own, with blocking
/// reads, and written on another: no async stdio (which hops through tokio's blocking pool on
/// every read and write) sits on the request path.
pub async fn serve(
    input: Box<dyn std::io::Read + Send>,
    output: Box<dyn std::io::Write + Send>,
    root: Option<PathBuf>,
    agents: Arc<dyn AgentDoor>,
) -> anyhow::Result<()> {
    let (out_tx, out_rx) = std::sync::mpsc::channel::<Out>();
    let (in_tx, in_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let errors = out_tx.clone();
    std::thread::Builder::new().name("filepuff-lsp-in".into()).spawn(move || {
        let mut input = frame::FrameReader::new(input);
        loop {
            match input.next() {
                Ok(Some(frame::Frame::Message(body))) => {
                    if in_tx.send(frame::encode(&body)).is_err() {
                        break;
                    }
                }
                Ok(Some(frame::Frame::Invalid { id, code, message })) => {
                    tracing::warn!("editor sent an invalid message: {message}");
                    let _ = errors.send(Out::Bytes(frame::Frame::error_response(&id, code, &message)));
                }
                Ok(Some(frame::Frame::Dropped { why, replacement })) => {
                    tracing::warn!("editor sent {why}; dropped it");
                    if let Some(replacement) = replacement
                        && in_tx.send(replacement).is_err()
                    {
                        break;
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    })?;
    std::thread::Builder::new().name("filepuff-lsp-out".into()).spawn(move || {
        let mut output = output;
        while let Ok(out) = out_rx.recv() {
            match out {
                Out::Bytes(bytes) => {
                    if output.write_all(&bytes).and_then(|()| output.flush()).is_err() {
                        break;
                    }
                }
                Out::Flushed(done) => {
                    let _ = done.send(());
                }
            }
        }
    })?;

    let shared = Arc::new_cyclic(|weak| Shared {
        editor: OnceLock::new(),
        root_hint: root,
        session: OnceLock::new(),
        upstream: Mutex::new(upstream::State::default()),
        starting: Mutex::new(HashMap::new()),
        agents,
        listener: Mutex::new(None),
        editor_progress: tokio::sync::watch::Sender::new((false, 0)),
        me: weak.clone(),
    });
    let service_shared = shared.clone();
    let (mainloop, editor) = MainLoop::new_server(move |_| {
        ServiceBuilder::new()
            .layer(CatchUnwindLayer::default())
            .layer(ConcurrencyLayer::new(NonZeroUsize::new(1024).expect("nonzero")))
            .service(Proxy { shared: service_shared, state: Lifecycle::Uninitialized })
    });
    let _ = shared.editor.set(editor);
    let reader = ChannelReader { rx: in_rx, current: Vec::new(), at: 0 };
    let writer = ChannelWriter { buffer: Vec::new(), tx: out_tx.clone() };
    // SIGTERM/SIGINT end the session like the editor's `exit`: the socket, the presence file
    // and the servers are cleaned up below.
    let result = tokio::select! {
        result = mainloop.run_buffered(reader.compat(), writer.compat_write()) => result,
        () = crate::signals::stop_signal() => {
            tracing::info!("stopped by a signal");
            Ok(())
        }
    };
    drop(shared.listener.lock().take());
    if let Some(session) = shared.session.get() {
        let engine = session.engine.clone();
        let _ = tokio::task::spawn_blocking(move || engine.backends().stop_all()).await;
    }
    // Let the last answers (to `shutdown`) reach the editor.
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    if out_tx.send(Out::Flushed(done_tx)).is_ok() {
        let _ = tokio::task::spawn_blocking(move || done_rx.recv_timeout(Duration::from_secs(2))).await;
    }
    match result {
        Ok(()) => Ok(()),
        // The editor closed its end without `exit`: a normal way for a session to end.
        Err(async_lsp::Error::Io(err)) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
        Err(async_lsp::Error::Eof) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// The main loop's input: checked frames from the reader thread.
struct ChannelReader {
    rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl AsyncRead for ChannelReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        while self.at >= self.current.len() {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(bytes)) => {
                    self.current = bytes;
                    self.at = 0;
                }
                Poll::Ready(None) => return Poll::Ready(Ok(())), // end of input
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = buf.remaining().min(self.current.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.current[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// The main loop's output: bytes gathered until the loop flushes (after whole messages), then
/// handed to the writer thread in one piece, so error answers from the reader thread never land
/// inside a message.
struct ChannelWriter {
    buffer: Vec<u8>,
    tx: std::sync::mpsc::Sender<Out>,
}

impl AsyncWrite for ChannelWriter {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.buffer.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if !self.buffer.is_empty() {
            let bytes = std::mem::take(&mut self.buffer);
            if self.tx.send(Out::Bytes(bytes)).is_err() {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// What the service, the request futures and the upstream share.
pub(crate) struct Shared {
    /// The editor's socket (set right after the main loop is built).
    editor: OnceLock<ClientSocket>,
    root_hint: Option<PathBuf>,
    session: OnceLock<Session>,
    upstream: Mutex<upstream::State>,
    /// When servers for a language were last started for a document (so a language without an
    /// installed server is not retried on every keystroke).
    starting: Mutex<HashMap<Language, Instant>>,
    /// Where agents attach (given by the composition root).
    agents: Arc<dyn AgentDoor>,
    /// The agents' door once open (the socket, owned or waited for, removed with it, and this
    /// session's presence file).
    listener: Mutex<Option<Box<dyn OpenDoor>>>,
    /// What the editor has done since `initialize`: (`initialized` sent, `didOpen`s so far).
    /// Agents are served only once the editor has opened its documents again (see
    /// [`host_agents_when_settled`]).
    editor_progress: tokio::sync::watch::Sender<(bool, u64)>,
    me: std::sync::Weak<Shared>,
}

/// One initialized editor session.
pub(crate) struct Session {
    engine: Arc<Engine>,
    /// The negotiated `positionEncoding` on the editor's side.
    encoding: Encoding,
    /// The editor's `ClientCapabilities` JSON.
    editor_capabilities: Value,
    /// True once the `initialize` answer is on its way: server traffic is forwarded from then
    /// (server requests made before wait for it).
    ready: tokio::sync::watch::Sender<bool>,
    /// The capabilities the editor was given in the `initialize` answer.
    advertised: OnceLock<Value>,
    /// The semantic-token legend the editor was given (in the `initialize` answer, or in the
    /// first late registration of semantic tokens: [`late`]).
    legend: OnceLock<Value>,
    /// Per server name, how its legend maps onto [`Session::legend`].
    legend_maps: Mutex<HashMap<String, LegendMap>>,
    /// The editor's spelling of URIs (servers see canonical ones).
    spellings: Arc<spelling::Spellings>,
}

impl Session {
    fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }
}

impl Shared {
    fn editor(&self) -> ClientSocket {
        self.editor.get().cloned().unwrap_or_else(ClientSocket::new_closed)
    }

    fn ready_session(&self) -> Option<&Session> {
        self.session.get().filter(|s| s.is_ready())
    }

    /// Sends a notification to the editor.
    fn notify_editor(&self, method: &str, params: Value) {
        let notification: AnyNotification = match serde_json::from_value(json!({ "method": method, "params": params }))
        {
            Ok(notification) => notification,
            Err(_) => return,
        };
        let _ = LspService::notify(&mut self.editor(), notification);
    }

    /// Sends a request to the editor and returns its answer. Within [`EDITOR_SETTLING`] of the
    /// editor's `initialized`, a `MethodNotFound` answer means the editor may not have
    /// registered its handler yet: the request is sent again (after 10 ms, doubling to 200 ms)
    /// until it is answered otherwise or that time is over. An unhandled request was not acted
    /// on, so sending it again is safe.
    fn request_editor(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, ResponseError>> {
        let first = self.send_request_to_editor(method, params.clone());
        let (me, method) = (self.me.clone(), method.to_owned());
        Box::pin(async move {
            let mut answer = first.await;
            let mut pause = Duration::from_millis(10);
            loop {
                let refused = matches!(&answer, Err(err) if err.code == ErrorCode::METHOD_NOT_FOUND);
                let Some(shared) = me.upgrade().filter(|_| refused) else { return answer };
                if !shared.editor_settling() {
                    return answer;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
                answer = shared.send_request_to_editor(&method, params.clone()).await;
            }
        })
    }

    fn send_request_to_editor(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, ResponseError>> {
        use tower::Service;
        let request: AnyRequest = match serde_json::from_value(json!({ "id": 0, "method": method, "params": params })) {
            Ok(request) => request,
            Err(err) => return Box::pin(std::future::ready(Err(internal(err)))),
        };
        Box::pin(self.editor().call(request))
    }

    /// Whether the editor sent `initialized` (server requests are held until then).
    fn editor_initialized(&self) -> bool {
        self.editor_progress.borrow().0
    }

    /// Whether the editor's `initialized` came less than [`EDITOR_SETTLING`] ago.
    fn editor_settling(&self) -> bool {
        let at = self.upstream.lock().initialized_at;
        at.is_some_and(|at| at.elapsed() < EDITOR_SETTLING)
    }

    /// Sends the [`STATUS`] notification (after `initialize` only).
    fn send_status(&self) {
        if let Some(session) = self.ready_session() {
            self.notify_editor(STATUS, status(self, session));
        }
    }

    /// Logs `message` in the editor's output (`window/logMessage`, LSP `MessageType`).
    fn log_to_editor(&self, typ: i32, message: String) {
        self.notify_editor("window/logMessage", json!({ "type": typ, "message": message }));
    }

    /// Starts the servers `path` needs in the background, at most once per language every
    /// 30 seconds; each new server opens the editor's documents itself (see
    /// [`upstream::EditorLink`]'s `started`).
    fn start_servers_for(&self, session: &Session, path: &Path, language: Language) {
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

/// Where the session is in the LSP lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Uninitialized,
    Initializing,
    ShuttingDown,
}

/// The editor-facing service.
struct Proxy {
    shared: Arc<Shared>,
    state: Lifecycle,
}

fn error(code: ErrorCode, message: impl std::fmt::Display) -> ResponseError {
    ResponseError::new(code, message)
}

fn internal(err: impl std::fmt::Display) -> ResponseError {
    error(ErrorCode::INTERNAL_ERROR, err)
}

fn ready<T: Send + 'static>(result: Result<T, ResponseError>) -> BoxFuture<'static, Result<T, ResponseError>> {
    Box::pin(std::future::ready(result))
}

impl tower::Service<AnyRequest> for Proxy {
    type Response = Value;
    type Error = ResponseError;
    type Future = BoxFuture<'static, Result<Value, ResponseError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: AnyRequest) -> Self::Future {
        match (self.state, request.method.as_str()) {
            (Lifecycle::Uninitialized, "initialize") => {
                self.state = Lifecycle::Initializing;
                Box::pin(initialize(self.shared.clone(), request.params))
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
                        Ok(Value::Null)
                    });
                }
                if method == STATUS {
                    return ready(Ok(status(&self.shared, session)));
                }
                if method == RESTART {
                    return restart(&self.shared, session, &request.params);
                }
                route::request(&self.shared, session, request)
            }
        }
    }
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

/// Handles one editor notification (see the module documentation): text sync goes through the
/// Engine's document API, keyed by the [`crate::workspace::DocumentId`] the workspace makes of
/// the editor's URI. Errors are reported to the editor's log; the session goes on.
fn text_sync(shared: &Shared, session: &Session, notification: AnyNotification) -> Result<(), String> {
    let engine = &session.engine;
    let parse_error = |err: serde_json::Error| format!("invalid params: {err}");
    let id_of = |uri: &Url| session.spellings.id(engine.workspace(), uri).map_err(|err| err.to_string());
    match notification.method.as_str() {
        "initialized" | "$/cancelRequest" => {}
        "textDocument/didOpen" => {
            let params: DidOpenTextDocumentParams = serde_json::from_value(notification.params).map_err(parse_error)?;
            let item = params.text_document;
            let id = id_of(&item.uri)?;
            session.spellings.opened(&id, &item.uri);
            let opened = engine.open_document(id.clone(), item.language_id, item.version, &item.text);
            if opened.reload {
                tracing::debug!("{} opened again: a reload", item.uri);
            }
            if opened.missing
                && let Some(language) = opened.language
            {
                shared.start_servers_for(session, id.path(), language);
            }
            if opened.servers.is_empty()
                && let Some(language) = opened.language
                && let Err(err @ crate::backends::BackendError::NotInstalled { .. }) =
                    engine.backends().specs_for(language)
                && shared.starting.lock().insert(language, Instant::now()).is_none()
            {
                // Said once per language: its documents get no answers until it is installed.
                shared.log_to_editor(2, format!("filepuff: {err}"));
            }
        }
        "textDocument/didChange" => {
            let params: DidChangeTextDocumentParams =
                serde_json::from_value(notification.params).map_err(parse_error)?;
            let id = id_of(&params.text_document.uri)?;
            let changes: Vec<TextChange> = params
                .content_changes
                .into_iter()
                .map(|change| TextChange {
                    range: change.range.map(|range| (from_lsp(range.start), from_lsp(range.end))),
                    text: change.text,
                })
                .collect();
            engine
                .change_document(&id, params.text_document.version, session.encoding, &changes)
                .map_err(|err| err.to_string())?;
        }
        "textDocument/didSave" => {
            let params: DidSaveTextDocumentParams = serde_json::from_value(notification.params).map_err(parse_error)?;
            engine.save_document(&id_of(&params.text_document.uri)?);
        }
        "textDocument/didClose" => {
            let params: DidCloseTextDocumentParams =
                serde_json::from_value(notification.params).map_err(parse_error)?;
            let id = id_of(&params.text_document.uri)?;
            // The same file may be open under another spelling still: then it stays open.
            if session.spellings.closed(&id, &params.text_document.uri) {
                engine.close_document(&id);
            }
        }
        EDITOR_FOCUS => {
            let report = focus_report(&notification.params, |uri| id_of(uri))?;
            engine.report_focus(report, session.encoding);
        }
        method => {
            // Anything else goes to the servers of its document, or to every server.
            let mut params = notification.params;
            let uri = params
                .get("textDocument")
                .and_then(|d| d.get("uri"))
                .and_then(Value::as_str)
                .and_then(|u| Url::parse(u).ok());
            session.spellings.to_servers(engine.workspace(), &mut params);
            let clients = match uri.map(|uri| id_of(&uri)) {
                Some(Ok(id)) => {
                    let language = engine
                        .documents()
                        .get(&id)
                        .and_then(|d| Language::from_name(&d.language_id))
                        .or_else(|| Language::from_path(id.path()));
                    engine.backends().clients_of(&id, language).0
                }
                _ => engine.backends().running(),
            };
            for client in clients {
                let _ = client.notify_any(method, params.clone());
            }
        }
    }
    Ok(())
}

/// filepuff's own notification from the editor: what the person is looking at. Params
/// `{"textDocument": {"uri", "version"?} | null, "cursor"?: Position, "selection"?: Range,
/// "visibleRange"?: Range}`, positions in the negotiated `positionEncoding` (0-based); a null
/// `textDocument` (or a URI that names no file, such as `untitled:`) says no file has the
/// focus. The VS Code extension and the Neovim plugin send
/// it, debounced, when the focused editor, its cursor, selection or scroll position change
/// (docs/lsp.md); it feeds [`Engine::report_focus`].
pub const EDITOR_FOCUS: &str = "filepuff/editorFocus";

/// The [`EDITOR_FOCUS`] params as a [`crate::engine::FocusReport`]. Errors: malformed params
/// (a missing or unparsable URI, positions that are not LSP `Position`s, half a range).
fn focus_report(
    params: &Value,
    id_of: impl Fn(&Url) -> Result<crate::workspace::DocumentId, String>,
) -> Result<crate::engine::FocusReport, String> {
    let document = params.get("textDocument").filter(|d| !d.is_null());
    let Some(document) = document else { return Ok(crate::engine::FocusReport::default()) };
    let uri = document.get("uri").and_then(Value::as_str).ok_or("textDocument.uri is missing")?;
    let uri = Url::parse(uri).map_err(|err| format!("textDocument.uri: {err}"))?;
    let position = |value: Option<&Value>| -> Result<Option<crate::documents::Position>, String> {
        match value.filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(value) => serde_json::from_value::<lsp_types::Position>(value.clone())
                .map(|p| Some(from_lsp(p)))
                .map_err(|err| format!("invalid position: {err}")),
        }
    };
    let range = |name: &str| -> Result<Option<_>, String> {
        let value = params.get(name).filter(|v| !v.is_null());
        let Some(value) = value else { return Ok(None) };
        match (position(value.get("start"))?, position(value.get("end"))?) {
            (Some(start), Some(end)) => Ok(Some((start.min(end), start.max(end)))),
            _ => Err(format!("{name}: a range needs start and end")),
        }
    };
    // A buffer that is not a file (`untitled:`, a remote scheme) is no file to point at.
    let Ok(id) = id_of(&uri) else { return Ok(crate::engine::FocusReport::default()) };
    Ok(crate::engine::FocusReport {
        id: Some(id),
        version: document.get("version").and_then(Value::as_i64).and_then(|v| i32::try_from(v).ok()),
        cursor: position(params.get("cursor"))?,
        selection: range("selection")?,
        visible_range: range("visibleRange")?,
    })
}

fn from_lsp(position: lsp_types::Position) -> crate::documents::Position {
    crate::documents::Position { line: position.line, character: position.character }
}

/// filepuff's own request, and notification: the language servers behind this session. The
/// notification (same payload as the request's answer) is sent when the set or state of the
/// servers changes: after `initialize`, when one starts, exits or is restarted, and when one
/// begins or ends work in progress — for an editor's status bar.
pub const STATUS: &str = "filepuff/status";

/// filepuff's own request: restart a server reported broken (a crash loop) without waiting for
/// `[lsp] broken_cooldown_secs`. Params `{"server": NAME}` (every broken server when absent);
/// the answer is the [`STATUS`] payload after the attempt.
pub const RESTART: &str = "filepuff/restart";

fn restart(
    shared: &Arc<Shared>,
    session: &Session,
    params: &Value,
) -> BoxFuture<'static, Result<Value, ResponseError>> {
    let name = params.get("server").and_then(Value::as_str).map(str::to_owned);
    let engine = session.engine.clone();
    let me = shared.clone();
    Box::pin(async move {
        let outcomes =
            tokio::task::spawn_blocking(move || engine.backends().reset(name.as_deref())).await.map_err(internal)?;
        for outcome in outcomes {
            match outcome {
                Ok(acquired) => me.log_to_editor(3, format!("filepuff: restarted {}", acquired.client.name)),
                Err(err) => me.log_to_editor(1, format!("filepuff: {err}")),
            }
        }
        let session = me.ready_session().ok_or_else(|| internal("no session"))?;
        Ok(status(&me, session))
    })
}

/// The answer to [`STATUS`]: `{"positionEncoding", "servers": [{name, version, root, pid,
/// positionEncoding, state: "ready" | "busy" | "exited", documents}], "agents": {"socket",
/// "serving"}}`, where `documents` counts the documents the server has open, `busy` means it
/// reports work in progress (loading, indexing), and `serving` says whether this session owns
/// the agents' socket now (false while another `filepuff lsp` of the root holds it). A broken
/// server (a crash loop, not running) has `{name, root, state: "broken", retryInSecs,
/// message}`: it is tried again after `retryInSecs`, or on [`RESTART`].
fn status(shared: &Shared, session: &Session) -> Value {
    let mut servers: Vec<Value> = session
        .engine
        .backends()
        .running()
        .iter()
        .map(|client| {
            let state = if !client.is_alive() {
                "exited"
            } else if client.busy() {
                "busy"
            } else {
                "ready"
            };
            json!({
                "name": client.name,
                "version": client.server_info,
                "root": client.root,
                "pid": client.pid,
                "positionEncoding": client.encoding.lsp_name(),
                "state": state,
                "documents": client.synced_count(),
            })
        })
        .collect();
    servers.extend(session.engine.backends().broken().into_iter().map(|broken| {
        json!({
            "name": broken.name,
            "root": broken.root,
            "state": "broken",
            "retryInSecs": broken.retry_in.as_secs_f64().ceil() as u64,
            "message": broken.last,
        })
    }));
    let serving = shared.listener.lock().as_ref().is_some_and(|h| h.is_serving());
    let socket = shared.agents.address(session.engine.workspace().root());
    json!({
        "positionEncoding": session.encoding.lsp_name(),
        "servers": servers,
        "agents": { "socket": socket, "serving": serving },
    })
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

/// How long after the editor's `initialized` a `MethodNotFound` answer to a server's request is
/// taken for a handler the editor has not registered yet (see [`Shared::request_editor`]).
pub(crate) const EDITOR_SETTLING: Duration = Duration::from_secs(3);

/// How long the editor must have sent no `didOpen` after `initialized` before agents are served.
const DOCUMENTS_SETTLE: Duration = Duration::from_millis(250);
/// The longest wait for that, after `initialize`.
const DOCUMENTS_SETTLE_LIMIT: Duration = Duration::from_secs(3);

/// Opens the agents' door ([`AgentDoor`]) once the editor has sent `initialized`
/// and then opened its documents (no `didOpen` for [`DOCUMENTS_SETTLE`]; at most
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
