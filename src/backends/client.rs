//! One LSP client: a language-server process, its async-lsp main loop, the negotiated
//! position encoding and capabilities, the documents synced to it, its progress and its
//! published diagnostics.
//!
//! The server→client traffic (the requests servers send, progress, diagnostics, messages) is
//! handled by [`router`], document sync (`didOpen`/`didChange`/`didSave`/`didClose` and the
//! text last sent) by [`sync`], the server's file-watcher registrations by [`watched`]; this
//! module holds the client's lifecycle (start, `initialize`, shutdown and `exit`), its requests,
//! its readiness and its published diagnostics.
//!
//! When an editor is attached (`filepuff lsp`, see [`super::Upstream`]), the same traffic is
//! also handed to the editor side: notifications after the client's own bookkeeping, requests
//! (`workspace/applyEdit`, `window/showMessageRequest`, refreshes, registrations, …) answered by
//! the editor. Documents the editor has open are *pinned*: they are synced with the editor's
//! version numbers and changes ([`LspClient::change_editor_document`]) and never closed for
//! idleness or disk changes.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_lsp::concurrency::ConcurrencyLayer;
use async_lsp::panic::CatchUnwindLayer;
use async_lsp::{AnyResult, LanguageServer, MainLoop, ServerSocket};
use lsp_types::{
    ClientCapabilities, Diagnostic, GeneralClientCapabilities, InitializeParams, InitializedParams, NumberOrString,
    PositionEncodingKind, ServerCapabilities, Url, WorkspaceFolder,
};
use serde_json::Value;
use tokio_util::compat::TokioAsyncWriteCompatExt;
use tower::ServiceBuilder;

mod router;
mod sync;
mod watched;

pub use sync::{incremental_change, lsp_change};
pub use watched::{WatchError, WatchedFiles};

use super::transport::{BoundedReader, FrameLimits};
use super::{BackendError, ServerSpec};
use crate::documents::position::Encoding;
use router::{Answer, Relay};
use sync::Synced;

/// One `$/progress` token begun and not yet ended.
#[derive(Debug, Clone, Copy)]
struct Work {
    /// Its place in the order tokens began ([`Shared::progress_begun`] when it began).
    seq: u64,
    /// Background work (loading, indexing) rather than the progress of one request: it began
    /// while none of our requests was in flight, or it outlived the request it began under.
    background: bool,
}

/// Wakes readiness waiters: bumped on every progress and status notification.
#[derive(Debug)]
struct Signal(tokio::sync::watch::Sender<u64>);

impl Default for Signal {
    fn default() -> Signal {
        Signal(tokio::sync::watch::channel(0).0)
    }
}

impl Signal {
    fn bump(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// What the router handlers share with the client handle.
#[derive(Debug, Default)]
struct Shared {
    /// `$/progress` tokens begun and not yet ended.
    active_progress: HashMap<String, Work>,
    /// When a progress token last began, reported or ended.
    last_progress: Option<Instant>,
    /// How many progress tokens ever began.
    progress_begun: u64,
    /// Our requests to the server in flight (tools' and the editor's): progress that begins
    /// meanwhile is taken for that request's own until it outlives it.
    in_flight: usize,
    /// The server settled once after its start (see [`LspClient::wait_ready`]): from then on
    /// only background work the server reports makes a request wait.
    settled: bool,
    signal: Signal,
    /// rust-analyzer's `experimental/serverStatus` `quiescent` (false while it is busy).
    quiescent: Option<bool>,
    /// clangd's `textDocument/clangd.fileStatus` per document: anything but `idle` is busy.
    file_status: HashMap<String, String>,
    /// Latest `publishDiagnostics` per document, with the version it was published for.
    diagnostics: HashMap<Url, (Option<i32>, Vec<Diagnostic>, Instant)>,
    /// When the server last published a list with a document version, per document: after
    /// one for the synced text, an unversioned list (basedpyright sends one after
    /// `didChangeWatchedFiles`) is not known to be for that text.
    versioned_at: HashMap<Url, Instant>,
    /// `workspace/configuration` answers by section.
    settings: Value,
    folders: Vec<WorkspaceFolder>,
    /// The server's `workspace/didChangeWatchedFiles` registrations.
    watched: WatchedFiles,
}

/// `initialize` with the answer kept as JSON, so capabilities lsp-types does not model survive.
enum InitializeRaw {}

impl lsp_types::request::Request for InitializeRaw {
    type Params = InitializeParams;
    type Result = Value;
    const METHOD: &'static str = "initialize";
}

/// A server notification taken as raw JSON: async-lsp's router ends the main loop when a
/// typed notification's params do not decode, and one malformed `$/progress` must not stop a
/// server. [`decode`] logs and skips it instead.
struct Lenient<N>(std::marker::PhantomData<N>);

impl<N: lsp_types::notification::Notification + 'static> lsp_types::notification::Notification for Lenient<N> {
    type Params = Value;
    const METHOD: &'static str = N::METHOD;
}

/// The params of notification `N`, or `None` (logged) when the server sent them malformed.
fn decode<N: lsp_types::notification::Notification>(params: Value) -> Option<N::Params> {
    serde_json::from_value(params)
        .map_err(|err| tracing::warn!("skipped a malformed {} from a server: {err}", N::METHOD))
        .ok()
}

impl Shared {
    /// Loading or indexing: a `$/progress` running, rust-analyzer not quiescent, or clangd
    /// working on a file.
    fn is_busy(&self) -> bool {
        !self.active_progress.is_empty() || self.quiescent == Some(false) || !self.file_status.is_empty()
    }

    /// Busy with work a request about `target` must wait for: background progress (not a
    /// request's own), rust-analyzer not quiescent, clangd working on `target`.
    fn busy_for(&self, target: Option<&str>) -> bool {
        self.active_progress.values().any(|work| work.background)
            || self.quiescent == Some(false)
            || target.is_some_and(|uri| self.file_status.contains_key(uri))
    }
}

/// A running language server.
pub struct LspClient {
    pub name: String,
    /// The project root the server was started in.
    pub root: PathBuf,
    server: ServerSocket,
    /// The encoding of `Position.character` on this connection (LSP 3.17 `positionEncoding`).
    pub encoding: Encoding,
    pub capabilities: ServerCapabilities,
    /// The capabilities exactly as the server sent them (fields lsp-types does not model
    /// included), for the editor proxy's capability union and routing.
    pub capabilities_json: Value,
    /// `serverInfo` name and version, when the server gave them.
    pub server_info: Option<String>,
    shared: Arc<Mutex<Shared>>,
    synced: Mutex<HashMap<Url, Synced>>,
    mainloop: tokio::task::JoinHandle<()>,
    /// Becomes true when the main loop ends (the process closed its stdout or died).
    exited: tokio::sync::watch::Receiver<bool>,
    /// Unique among the clients of this process (restarts get a new one).
    pub serial: u64,
    /// Shared with the main loop's task, which kills the process when the loop ends.
    child: Arc<Mutex<Option<tokio::process::Child>>>,
    /// Why the main loop ended, when it ended with an error (a frame over the limits, a
    /// message async-lsp could not decode, the pipe failing).
    exit_reason: Arc<Mutex<Option<String>>>,
    /// Set by [`LspClient::stop`]: the server's output ending is then expected, not a failure.
    stopping: Arc<std::sync::atomic::AtomicBool>,
    /// Process id, for tests and `doctor`.
    pub pid: Option<u32>,
    /// Served in this process over in-memory streams (unit tests), not by a child process.
    in_process: bool,
    pub started: Instant,
    last_used: Mutex<Instant>,
    /// The JSON-RPC id the main loop gives our next request (see [`LspClient::request`]).
    next_id: Mutex<i32>,
    /// The number of the next [`LspClient::work_done`] token.
    next_token: std::sync::atomic::AtomicU64,
    /// Watches the project root for changes on disk (see [`LspClient::disk_changed`]).
    watcher: Mutex<Option<Arc<parking_lot::Mutex<notify::RecommendedWatcher>>>>,
}

impl std::fmt::Debug for LspClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LspClient")
            .field("name", &self.name)
            .field("serial", &self.serial)
            .field("root", &self.root)
            .field("pid", &self.pid)
            .finish()
    }
}

/// Client capabilities filepuff honestly supports on its own (LSP 3.17 "initialize"), with
/// `encodings` offered as `general.positionEncodings` in preference order.
fn own_capabilities(encodings: &[Encoding]) -> Value {
    serde_json::json!({
        "general": {
            "positionEncodings": encodings.iter().map(|e| e.lsp_name()).collect::<Vec<_>>()
        },
        "workspace": {
            "applyEdit": false,
            "workspaceEdit": { "documentChanges": true, "resourceOperations": ["create", "rename", "delete"] },
            "configuration": true,
            "workspaceFolders": true,
            "didChangeWatchedFiles": { "dynamicRegistration": true, "relativePatternSupport": true },
            "symbol": { "dynamicRegistration": false },
            "diagnostics": { "refreshSupport": false }
        },
        "textDocument": {
            "synchronization": { "dynamicRegistration": false, "didSave": true },
            "definition": { "linkSupport": true },
            "declaration": { "linkSupport": true },
            "typeDefinition": { "linkSupport": true },
            "implementation": { "linkSupport": true },
            "references": {},
            "hover": { "contentFormat": ["markdown", "plaintext"] },
            "documentSymbol": { "hierarchicalDocumentSymbolSupport": true },
            "publishDiagnostics": { "relatedInformation": true, "versionSupport": true },
            "diagnostic": { "dynamicRegistration": false },
            "rename": { "prepareSupport": true },
            "callHierarchy": {}
        },
        "window": { "workDoneProgress": true, "showMessage": {} },
        "experimental": { "serverStatusNotification": true }
    })
}

/// The capabilities sent to a server behind an editor: the editor's own (so servers produce
/// what the editor can show — snippets, markdown, links), with what the proxy itself handles
/// forced on (`workspace/configuration`, folders, file watching, progress) and pull
/// diagnostics removed, so every server pushes `publishDiagnostics` and the proxy can merge
/// them. `encodings` replaces `general.positionEncodings`.
fn editor_capabilities(editor: &Value, encodings: &[Encoding]) -> Value {
    let mut caps = editor.clone();
    if !caps.is_object() {
        caps = serde_json::json!({});
    }
    let set = |caps: &mut Value, path: &[&str], value: Value| {
        let mut node = caps;
        for key in &path[..path.len() - 1] {
            if !node.get(*key).is_some_and(Value::is_object) {
                node[*key] = serde_json::json!({});
            }
            node = &mut node[*key];
        }
        node[path[path.len() - 1]] = value;
    };
    let names: Vec<&str> = encodings.iter().map(|e| e.lsp_name()).collect();
    set(&mut caps, &["general", "positionEncodings"], serde_json::json!(names));
    set(&mut caps, &["window", "workDoneProgress"], Value::Bool(true));
    set(&mut caps, &["workspace", "configuration"], Value::Bool(true));
    set(&mut caps, &["workspace", "workspaceFolders"], Value::Bool(true));
    set(&mut caps, &["workspace", "didChangeWatchedFiles", "dynamicRegistration"], Value::Bool(true));
    set(&mut caps, &["workspace", "didChangeWatchedFiles", "relativePatternSupport"], Value::Bool(true));
    set(&mut caps, &["textDocument", "synchronization", "didSave"], Value::Bool(true));
    if let Some(text_document) = caps.get_mut("textDocument").and_then(Value::as_object_mut) {
        text_document.remove("diagnostic");
    }
    caps
}

/// How to start a client beyond its [`ServerSpec`].
#[derive(Clone, Default)]
pub struct StartOptions {
    /// Position encodings to offer, most wanted first (default: utf-8, utf-16, utf-32).
    pub encodings: Vec<Encoding>,
    /// The editor's `ClientCapabilities`, when an editor is attached.
    pub editor_capabilities: Option<Value>,
    /// Where server→client traffic goes besides the client's own bookkeeping.
    pub upstream: Option<Arc<dyn super::Upstream>>,
    /// Bounds on the server's frames (`[lsp] max_message_bytes`, `max_header_bytes`): a frame
    /// over them stops the server, which is then treated as crashed.
    pub limits: FrameLimits,
    /// Told the (canonical) URI of a document whose published diagnostics changed (a
    /// `publishDiagnostics` whose list differs from the previous one for it).
    pub published: Option<tokio::sync::broadcast::Sender<Url>>,
}

/// The byte streams of one server: its output (read through [`BoundedReader`]), its input,
/// and its process (`None` for an in-process server in unit tests).
struct ServerIo {
    output: Box<dyn tokio::io::AsyncRead + Send + Unpin>,
    input: Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    child: Option<tokio::process::Child>,
}

/// [`BackendError::StartFailed`] for `spec`.
fn start_error(spec: &ServerSpec, message: String) -> BackendError {
    BackendError::StartFailed { server: spec.name.clone(), command: spec.command.join(" "), message }
}

/// Who sent a server→client message, for the [`super::Upstream`].
#[derive(Debug, Clone)]
pub struct ClientRef {
    pub serial: u64,
    pub name: String,
}

/// Bytes of a message to a server gathered before they are written: a frame this size or
/// smaller reaches the server in one `write`; a larger one is written as it comes.
const FRAME_WRITE_BUFFER: usize = 64 * 1024;

static NEXT_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl LspClient {
    /// Spawns `spec`'s command in `root`, runs `initialize`/`initialized` and returns the
    /// client. Errors: [`BackendError::NotInstalled`] when the program is not found,
    /// [`BackendError::StartFailed`] when it exits or fails to initialize within `timeout`.
    pub async fn start(
        spec: &ServerSpec,
        program: &Path,
        root: &Path,
        timeout: Duration,
        options: &StartOptions,
    ) -> Result<LspClient, BackendError> {
        // Unit tests serve `program` from an in-process fake server over in-memory streams
        // (`crate::tests::fake_lsp`); everything from the framing guard on is the same path.
        #[cfg(test)]
        if let Some((output, input)) = crate::tests::fake_lsp::connect(program) {
            let io = ServerIo { output: Box::new(output), input: Box::new(input), child: None };
            return LspClient::connect(spec, io, root, timeout, options).await;
        }
        let mut command = tokio::process::Command::new(program);
        command
            .args(&spec.command[1..])
            .current_dir(root)
            .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let start_failed = |message: String| start_error(spec, message);
        let mut child = command.spawn().map_err(|err| start_failed(err.to_string()))?;
        let stdout = child.stdout.take().ok_or_else(|| start_failed("no stdout".to_owned()))?;
        let stdin = child.stdin.take().ok_or_else(|| start_failed("no stdin".to_owned()))?;
        if let Some(stderr) = child.stderr.take() {
            let name = spec.name.clone();
            tokio::spawn(log_stderr(stderr, name));
        }
        let io = ServerIo { output: Box::new(stdout), input: Box::new(stdin), child: Some(child) };
        LspClient::connect(spec, io, root, timeout, options).await
    }

    /// Runs the client over `io` (the server's output read through [`BoundedReader`]):
    /// `initialize`/`initialized`, then the client. Errors: [`BackendError::StartFailed`] as
    /// for [`LspClient::start`].
    async fn connect(
        spec: &ServerSpec,
        io: ServerIo,
        root: &Path,
        timeout: Duration,
        options: &StartOptions,
    ) -> Result<LspClient, BackendError> {
        let start_failed = |message: String| start_error(spec, message);
        let ServerIo { output: stdout, input: stdin, child } = io;
        let pid = child.as_ref().and_then(tokio::process::Child::id);
        let in_process = child.is_none();
        let child = Arc::new(Mutex::new(child));
        let exit_reason = Arc::new(Mutex::new(None));

        let root_uri =
            Url::from_directory_path(root).map_err(|()| start_failed(format!("bad root {}", root.display())))?;
        let folders = vec![WorkspaceFolder { uri: root_uri.clone(), name: spec.name.clone() }];
        let shared = Arc::new(Mutex::new(Shared {
            settings: spec.settings.clone().unwrap_or(Value::Null),
            folders: folders.clone(),
            ..Shared::default()
        }));
        let router_state = shared.clone();
        let server_name = spec.name.clone();
        let upstream = options.upstream.clone();
        let published = options.published.clone();
        let me = ClientRef {
            serial: NEXT_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name: spec.name.clone(),
        };
        let serial = me.serial;
        let (mainloop, mut server) = MainLoop::new_client(move |_server| {
            let router = router::server_router(router_state, Relay { link: upstream, me }, published);
            ServiceBuilder::new()
                .layer(CatchUnwindLayer::default())
                .layer(ConcurrencyLayer::new(super::transport::MAIN_LOOP_CONCURRENCY))
                .service(router)
        });
        let (exited_tx, exited) = tokio::sync::watch::channel(false);
        // The server's output reaches async-lsp only as whole frames within the limits.
        let output = BoundedReader::new(stdout, options.limits, &spec.name);
        let (loop_child, loop_reason) = (child.clone(), exit_reason.clone());
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let loop_stopping = stopping.clone();
        // async-lsp writes a frame's header and its body separately, then flushes: buffered, the
        // server gets each message in one `write` (one wake-up instead of two; gopls's reader
        // otherwise wakes for the header alone). Flushed after every message.
        let input = tokio::io::BufWriter::with_capacity(FRAME_WRITE_BUFFER, stdin);
        let mainloop = tokio::spawn(async move {
            if let Err(err) = mainloop.run_messages(output, input.compat_write()).await {
                let reason = match err {
                    async_lsp::Error::Io(err) => err.to_string(),
                    async_lsp::Error::Eof => "it closed its output".to_owned(),
                    other => format!("it sent a message filepuff cannot read ({other})"),
                };
                if loop_stopping.load(std::sync::atomic::Ordering::Relaxed) {
                    // We asked it to exit: its output ending is the expected end.
                    tracing::debug!(server = %server_name, "stopped reading the server: {reason}");
                } else {
                    tracing::warn!(server = %server_name, "stopped reading the server: {reason}");
                }
                *loop_reason.lock() = Some(reason);
            }
            // A server whose output is no longer read is of no use: end it now.
            if let Some(child) = loop_child.lock().as_mut() {
                let _ = child.start_kill();
            }
            let _ = exited_tx.send(true);
        });

        let encodings = match spec.position_encoding {
            Some(forced) => vec![forced],
            None if options.encodings.is_empty() => vec![Encoding::Utf8, Encoding::Utf16, Encoding::Utf32],
            None => options.encodings.clone(),
        };
        let capabilities = match &options.editor_capabilities {
            Some(editor) => editor_capabilities(editor, &encodings),
            None => own_capabilities(&encodings),
        };
        let capabilities: ClientCapabilities =
            serde_json::from_value(capabilities).unwrap_or_else(|_| ClientCapabilities {
                general: Some(GeneralClientCapabilities {
                    position_encodings: Some(vec![PositionEncodingKind::UTF16]),
                    ..GeneralClientCapabilities::default()
                }),
                ..ClientCapabilities::default()
            });
        let params = InitializeParams {
            process_id: Some(std::process::id()),
            // Deprecated in 3.17 in favour of workspaceFolders, which we send too; older
            // servers still read it.
            #[allow(deprecated)]
            root_uri: Some(root_uri),
            capabilities,
            initialization_options: spec.initialization_options.clone(),
            workspace_folders: Some(folders),
            client_info: Some(lsp_types::ClientInfo {
                name: "filepuff".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            ..InitializeParams::default()
        };
        let raw = match tokio::time::timeout(timeout, server.request::<InitializeRaw>(params)).await {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => {
                mainloop.abort();
                // When filepuff stopped reading the server (a frame over the limits), say why.
                let reason = exit_reason.lock().clone();
                return Err(start_failed(format!("initialize failed: {}", reason.unwrap_or_else(|| err.to_string()))));
            }
            Err(_) => {
                mainloop.abort();
                return Err(start_failed(format!("no answer to initialize within {} ms", timeout.as_millis())));
            }
        };
        let initialized: lsp_types::InitializeResult = match serde_json::from_value(raw.clone()) {
            Ok(result) => result,
            Err(err) => {
                mainloop.abort();
                return Err(start_failed(format!("malformed initialize answer: {err}")));
            }
        };
        let capabilities_json = raw.get("capabilities").cloned().unwrap_or_else(|| Value::Object(Default::default()));
        server.initialized(InitializedParams {}).map_err(|err| start_failed(err.to_string()))?;
        let encoding = initialized
            .capabilities
            .position_encoding
            .as_ref()
            .and_then(|kind| Encoding::from_lsp_name(kind.as_str()))
            .unwrap_or(Encoding::Utf16);
        let server_info = initialized.server_info.map(|info| match info.version.as_deref().map(short_version) {
            Some(version) => format!("{} {version}", info.name),
            None => info.name,
        });
        Ok(LspClient {
            name: spec.name.clone(),
            root: root.to_path_buf(),
            server,
            encoding,
            capabilities: initialized.capabilities,
            capabilities_json,
            server_info,
            shared,
            synced: Mutex::new(HashMap::new()),
            mainloop,
            exited,
            serial,
            child,
            exit_reason,
            stopping,
            pid,
            in_process,
            started: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            // `initialize` was request 0.
            next_id: Mutex::new(1),
            next_token: std::sync::atomic::AtomicU64::new(1),
            watcher: Mutex::new(None),
        })
    }

    fn crashed(&self, err: async_lsp::Error) -> BackendError {
        BackendError::Crashed {
            server: self.name.clone(),
            message: self.exit_reason().unwrap_or_else(|| err.to_string()),
        }
    }

    /// Why the server's main loop ended, when it ended with an error: a frame over the limits
    /// ("language server X sent a header line over 65536 bytes …"), a message async-lsp could
    /// not decode, the pipe failing. `None` while it runs, or after a clean exit.
    pub fn exit_reason(&self) -> Option<String> {
        self.exit_reason.lock().clone()
    }

    /// Becomes true (or closes) when the main loop ends: the process exited, closed its
    /// output, or the client was stopped.
    pub fn exit_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.exited.clone()
    }

    /// Sends any request as it is (`method`, JSON `params`) and returns its pending answer
    /// with the id it was sent under, for [`LspClient::cancel`]. The request is queued before
    /// this returns, so it reaches the server after every notification sent before it. The
    /// answer's result is the JSON text the server sent, validated ([`AnyResult::Raw`]; a `null` or
    /// missing one is `AnyResult::Value(Null)`), so a proxy that changes nothing in it passes
    /// it on unparsed. A server that is gone makes the answer an error.
    pub fn forward(&self, method: &str, params: Value) -> (i32, Answer<AnyResult>) {
        *self.last_used.lock() = Instant::now();
        let request = super::transport::any_request(method, params);
        let mut next = self.next_id.lock();
        let id = *next;
        *next += 1;
        let in_flight = InFlight::new(&self.shared);
        let answer = self.server.call_raw(request);
        (
            id,
            Box::pin(async move {
                let answer = answer.await;
                drop(in_flight);
                // Written out as it is, so validated first (a plain response's result is not).
                answer.and_then(|result| {
                    result.checked().map_err(|err| {
                        async_lsp::ResponseError::new(
                            async_lsp::ErrorCode::PARSE_ERROR,
                            format!("the language server's result is not JSON: {err}"),
                        )
                    })
                })
            }),
        )
    }

    /// Tells the server to drop request `id` (`$/cancelRequest`).
    pub fn cancel(&self, id: i32) {
        let _ = self
            .server
            .notify::<lsp_types::notification::Cancel>(lsp_types::CancelParams { id: NumberOrString::Number(id) });
    }

    /// Sends any notification as it is.
    pub fn notify_any(&self, method: &str, params: Value) -> Result<(), BackendError> {
        use async_lsp::LspService;
        let notification = super::transport::any_notification(method, params);
        let mut socket = self.server.clone();
        match LspService::notify(&mut socket, notification) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(Err(err)) => Err(self.crashed(err)),
            ControlFlow::Break(Ok(())) => Ok(()),
        }
    }

    /// Whether the process and its main loop are still running.
    pub fn is_alive(&self) -> bool {
        if self.mainloop.is_finished() {
            return false;
        }
        let mut child = self.child.lock();
        match child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            // No process: stopped, or an in-process server (unit tests) alive while its loop runs.
            None => self.in_process && !self.stopping.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Sends a request and waits for its answer, at most `timeout`; on timeout the server is
    /// told to drop it (`$/cancelRequest`, LSP 3.17).
    ///
    /// async-lsp numbers outgoing requests itself (0, 1, 2, … in the order they reach its main
    /// loop) and does not expose the id. The request is queued here under a lock, by polling its
    /// future once, so this counter and the main loop's agree and the cancellation names the
    /// right request.
    pub async fn request<R>(&self, params: R::Params, timeout: Duration) -> Result<R::Result, BackendError>
    where
        R: lsp_types::request::Request,
        R::Params: Send + 'static,
        R::Result: Send + 'static,
    {
        self.request_read::<R>(params, timeout, AnyResult::into_typed).await
    }

    /// [`LspClient::request`], its result read by `read` from the JSON text the server sent
    /// (`AnyResult::Unchecked` for a plain response, which `read` must validate, else
    /// `AnyResult::Raw`; a `null` or missing result is `AnyResult::Value(Null)`) instead of
    /// serde's derived code: for answers read faster by hand
    /// ([`super::locations::read_locations`]). A result `read` refuses is reported as for
    /// [`LspClient::request`] ([`BackendError::Crashed`], with serde_json's message).
    pub async fn request_read<R>(
        &self,
        params: R::Params,
        timeout: Duration,
        read: fn(AnyResult) -> serde_json::Result<R::Result>,
    ) -> Result<R::Result, BackendError>
    where
        R: lsp_types::request::Request,
        R::Params: Send + 'static,
        R::Result: Send + 'static,
    {
        *self.last_used.lock() = Instant::now();
        let _in_flight = InFlight::new(&self.shared);
        let mut future = Box::pin(self.server.request_read::<R>(params, read));
        let id = {
            let mut next = self.next_id.lock();
            let id = *next;
            *next += 1;
            let waker = futures::task::noop_waker();
            let mut context = std::task::Context::from_waker(&waker);
            if let std::task::Poll::Ready(result) = future.as_mut().poll(&mut context) {
                return self.answer::<R>(result);
            }
            id
        };
        // Dropped unanswered (the caller was cancelled, or the timeout below): the server is
        // told to drop the request (`$/cancelRequest`, LSP 3.17) at once.
        let mut pending = CancelOnDrop { server: Some(self.server.clone()), id };
        match tokio::time::timeout(timeout, future).await {
            Ok(result) => {
                pending.server = None;
                self.answer::<R>(result)
            }
            Err(_) => {
                drop(pending);
                Err(BackendError::Timeout {
                    server: self.name.clone(),
                    method: R::METHOD,
                    ms: timeout.as_millis() as u64,
                })
            }
        }
    }

    /// `WorkDoneProgressParams` for a request of filepuff's own (a tool's, the graph's): a
    /// fresh `workDoneToken` under [`ASK_TOKEN_PREFIX`] (LSP 3.17 "Work Done Progress",
    /// client-initiated). A server that reports progress around each request (basedpyright
    /// around `textDocument/references`) then reports it on this token instead of first asking
    /// `window/workDoneProgress/create` and waiting for the answer — measured, a third of a
    /// millisecond per request — and that progress is known to be the request's own: it is
    /// neither readiness nor passed to the editor.
    pub fn work_done(&self) -> lsp_types::WorkDoneProgressParams {
        let n = self.next_token.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lsp_types::WorkDoneProgressParams {
            work_done_token: Some(lsp_types::NumberOrString::String(format!("{ASK_TOKEN_PREFIX}{n}"))),
        }
    }

    fn answer<R: lsp_types::request::Request>(
        &self,
        result: Result<R::Result, async_lsp::Error>,
    ) -> Result<R::Result, BackendError> {
        match result {
            Ok(result) => Ok(result),
            Err(async_lsp::Error::Response(err)) if err.code == async_lsp::ErrorCode::CONTENT_MODIFIED => {
                Err(BackendError::ContentModified { server: self.name.clone(), method: R::METHOD })
            }
            Err(async_lsp::Error::Response(err)) => {
                Err(BackendError::Server { server: self.name.clone(), method: R::METHOD, message: err.message })
            }
            Err(err) => Err(self.crashed(err)),
        }
    }

    /// The server's diagnostics for the text last synced for `uri` — never older ones.
    ///
    /// Uses `textDocument/diagnostic` (pull, LSP 3.17) when the server offers it; otherwise
    /// waits for a `publishDiagnostics` for the synced version (or, without a version, one
    /// published after the sync and followed by 300 ms of quiet, when no versioned one for the
    /// document came since the sync). Returns
    /// the diagnostics and whether they are known to be for the current text (false after
    /// `limit`: the latest published ones are returned, possibly older).
    pub async fn diagnostics(&self, uri: &Url, limit: Duration) -> Result<(Vec<Diagnostic>, bool), BackendError> {
        if self.capabilities.diagnostic_provider.is_some() {
            let params = lsp_types::DocumentDiagnosticParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
                identifier: None,
                previous_result_id: None,
                work_done_progress_params: self.work_done(),
                partial_result_params: Default::default(),
            };
            match self.request::<lsp_types::request::DocumentDiagnosticRequest>(params, limit).await {
                Ok(lsp_types::DocumentDiagnosticReportResult::Report(lsp_types::DocumentDiagnosticReport::Full(
                    report,
                ))) => {
                    return Ok((report.full_document_diagnostic_report.items, true));
                }
                Ok(_) => {}
                Err(err @ BackendError::Crashed { .. }) => return Err(err),
                Err(err) => tracing::debug!("pull diagnostics failed, waiting for published ones: {err}"),
            }
        }
        let (version, sent) = match self.synced().get(uri) {
            Some(doc) => (doc.version, doc.sent),
            None => return Ok((Vec::new(), false)),
        };
        let deadline = Instant::now() + limit;
        loop {
            let found = {
                let shared = lock(&self.shared);
                shared.diagnostics.get(uri).and_then(|(published, diagnostics, at)| {
                    // Published after this version was sent: a document closed and opened again
                    // starts at version 1 again, and the old version 1's list is not for this text.
                    let current = match published {
                        Some(published) => *published == version && *at >= sent,
                        // No version: current once it has stood for 300 ms after this version
                        // was sent, unless a versioned list for the document came since (gopls's
                        // first list for a file the editor opened carries no version, and it
                        // does not publish an unchanged list again).
                        None => {
                            *at >= sent
                                && at.elapsed() >= Duration::from_millis(300)
                                && shared.versioned_at.get(uri).is_none_or(|versioned| *versioned < sent)
                        }
                    };
                    current.then(|| diagnostics.clone())
                })
            };
            if let Some(diagnostics) = found {
                tracing::debug!(%uri, version, count = diagnostics.len(), "diagnostics for the synced version");
                return Ok((diagnostics, true));
            }
            if Instant::now() >= deadline {
                let latest = lock(&self.shared).diagnostics.get(uri).map(|(_, d, _)| d.clone()).unwrap_or_default();
                return Ok((latest, false));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Whether a change on disk of kind `typ` to `path` (absolute, canonical) is for this
    /// server: it matches one of the server's `workspace/didChangeWatchedFiles` registrations
    /// ([`WatchedFiles::wants`]), or — from a server that registered none — `path` is a file of
    /// one of `languages` (filepuff's default). Cheap: called from the notify thread.
    pub fn file_event_filter(
        &self,
        languages: Vec<crate::documents::Language>,
    ) -> impl Fn(&Path, lsp_types::FileChangeType) -> bool + Send + Sync + 'static {
        let shared = Arc::downgrade(&self.shared);
        // notify reports paths in the spelling of the watched root; registrations are kept
        // canonical (a symlinked root is common).
        let watched_root = self.root.clone();
        let root = std::fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone());
        move |path, typ| {
            let Some(shared) = shared.upgrade() else { return false };
            let shared = lock(&shared);
            if shared.watched.is_empty() {
                return crate::documents::Language::from_path(path).is_some_and(|l| languages.contains(&l));
            }
            match path.strip_prefix(&watched_root) {
                Ok(relative) if watched_root != root => shared.watched.wants(&root.join(relative), typ, &root),
                _ => shared.watched.wants(path, typ, &root),
            }
        }
    }

    /// Keeps `watcher` alive as long as this client.
    pub fn set_watcher(&self, watcher: Arc<parking_lot::Mutex<notify::RecommendedWatcher>>) {
        *self.watcher.lock() = Some(watcher);
    }

    /// How long since the last request to this server.
    pub fn idle_for(&self) -> Duration {
        self.last_used.lock().elapsed()
    }

    /// Every document's latest published diagnostics.
    pub fn all_published_diagnostics(&self) -> Vec<(Url, Vec<Diagnostic>)> {
        lock(&self.shared)
            .diagnostics
            .iter()
            .map(|(uri, (_, diagnostics, _))| (uri.clone(), diagnostics.clone()))
            .collect()
    }

    /// The latest published diagnostics of `uri` and the document version they are for.
    pub fn published_diagnostics(&self, uri: &Url) -> Option<(Option<i32>, Vec<Diagnostic>)> {
        lock(&self.shared).diagnostics.get(uri).map(|(version, diagnostics, _)| (*version, diagnostics.clone()))
    }

    /// Waits until the server is ready to answer a request that needs its index (references,
    /// workspace symbols, call hierarchy, diagnostics) about `target`, at most `limit`.
    /// Returns true when ready, false on the limit.
    ///
    /// Readiness comes from what the server reports (issue 15): background `$/progress` (loading,
    /// indexing — not the begin/end pair a server such as basedpyright sends around each
    /// request), rust-analyzer's `experimental/serverStatus` `quiescent`, clangd's
    /// `textDocument/clangd.fileStatus` for `target`. Once after its start the server must also
    /// have been quiet for [`SETTLE`] (a server often begins loading only when it sees the first
    /// document, a little after it); on the warm path there is no fixed wait. Woken by the
    /// server's notifications, not polled.
    pub async fn wait_ready(&self, target: Option<&Url>, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let target = target.map(Url::as_str);
        let mut changes = lock(&self.shared).signal.0.subscribe();
        loop {
            let wait = {
                let mut shared = lock(&self.shared);
                if shared.busy_for(target) {
                    Some(None)
                } else if shared.settled {
                    None
                } else {
                    let quiet = shared.last_progress.unwrap_or(self.started).elapsed();
                    if quiet >= SETTLE {
                        shared.settled = true;
                        None
                    } else {
                        Some(Some(SETTLE - quiet))
                    }
                }
            };
            let Some(settle) = wait else { return true };
            let until = match settle {
                Some(settle) => (tokio::time::Instant::now() + settle).min(deadline),
                None => deadline,
            };
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            let _ = tokio::time::timeout_at(until, changes.changed()).await;
        }
    }

    /// Whether a `$/progress` is running now (the server is indexing or loading), for status.
    pub fn busy(&self) -> bool {
        lock(&self.shared).is_busy()
    }

    /// Whether work a request about `target` would wait for is running (see
    /// [`LspClient::wait_ready`]): an answer given now may be partial.
    pub fn busy_for(&self, target: Option<&Url>) -> bool {
        lock(&self.shared).busy_for(target.map(Url::as_str))
    }

    /// A mark in the order progress tokens begin, taken before a request: see
    /// [`LspClient::work_began_since`].
    pub fn progress_mark(&self) -> u64 {
        lock(&self.shared).progress_begun
    }

    /// Whether work that began after `mark` is still running — after a request's answer, work
    /// that outlived the request (a background index the request set off), so the answer may be
    /// partial. Such work is background from now on.
    pub fn work_began_since(&self, mark: u64) -> bool {
        let mut shared = lock(&self.shared);
        let mut began = false;
        for work in shared.active_progress.values_mut().filter(|work| work.seq > mark) {
            work.background = true;
            began = true;
        }
        began
    }

    /// `shutdown` and `exit`, then stops the main loop and the process.
    pub async fn stop(&self) {
        self.stopping.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.request::<lsp_types::request::Shutdown>((), Duration::from_secs(2)).await;
        let mut server = self.server.clone();
        let _ = server.exit(());
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Abort the loop before the sockets go away (async-lsp panics if every ServerSocket is
        // dropped while its loop runs).
        self.mainloop.abort();
        if let Some(mut child) = self.child.lock().take() {
            let _ = child.start_kill();
        }
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        self.mainloop.abort();
    }
}

/// Longest line of a server's stderr kept for the log, in bytes (the rest of it is dropped).
const MAX_LOG_LINE: usize = 4096;

/// Logs a server's stderr line by line (at debug level), holding at most [`MAX_LOG_LINE`]
/// bytes: output without line breaks cannot grow filepuff.
async fn log_stderr(mut stderr: tokio::process::ChildStderr, server: String) {
    use tokio::io::AsyncReadExt;
    let mut chunk = vec![0; 8192];
    let mut line = Vec::new();
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for piece in chunk[..n].split_inclusive(|&b| b == b'\n') {
            let room = MAX_LOG_LINE.saturating_sub(line.len());
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            if piece.ends_with(b"\n") {
                tracing::debug!(server = %server, "stderr: {}", String::from_utf8_lossy(&line).trim_end());
                line.clear();
            }
        }
    }
}

/// A server's version string, short: gopls sends its whole build info as JSON (take its
/// `Version`); anything else is cut to its first line and 40 characters.
fn short_version(version: &str) -> String {
    if let Ok(Value::Object(info)) = serde_json::from_str::<Value>(version)
        && let Some(Value::String(v)) = info.get("Version")
    {
        return v.clone();
    }
    version.lines().next().unwrap_or_default().chars().take(40).collect()
}

/// The prefix of the `workDoneToken`s filepuff's own requests carry ([`LspClient::work_done`]).
pub const ASK_TOKEN_PREFIX: &str = "filepuff/ask/";

/// How long a server must have been quiet, once after its start, before a request that needs
/// its index is sent (see [`LspClient::wait_ready`]).
pub const SETTLE: Duration = Duration::from_millis(300);

/// One of our requests in flight (counted in [`Shared::in_flight`] until dropped).
struct InFlight(Arc<Mutex<Shared>>);

impl InFlight {
    fn new(shared: &Arc<Mutex<Shared>>) -> InFlight {
        lock(shared).in_flight += 1;
        InFlight(shared.clone())
    }
}

/// Sends `$/cancelRequest` for request `id` when dropped, unless `server` was taken (answered).
struct CancelOnDrop {
    server: Option<ServerSocket>,
    id: i32,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.notify::<lsp_types::notification::Cancel>(lsp_types::CancelParams {
                id: NumberOrString::Number(self.id),
            });
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut shared = lock(&self.0);
        shared.in_flight = shared.in_flight.saturating_sub(1);
    }
}

fn lock(shared: &Arc<Mutex<Shared>>) -> parking_lot::MutexGuard<'_, Shared> {
    shared.lock()
}
