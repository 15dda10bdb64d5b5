//! The LSP face: `filepuff lsp`, one stdio language server for the editor in front of every
//! language server the workspace needs (DESIGN.md "The faces", "Data flow").
//!
//! The Engine owns the documents and the backends; this face only translates. This module holds
//! the session's shared state ([`Shared`], [`Session`]), its wiring ([`serve`]) and filepuff's
//! own requests ([`STATUS`], [`RESTART`]). In order:
//! - **I/O** ([`io`]): the editor's stream is read, checked and parsed once ([`frame`]) and
//!   written whole messages at a time, on the runtime's own thread when it is a pipe or a
//!   socket (a thread each otherwise), joined to async-lsp's main loop through channels.
//! - **Lifecycle** ([`lifecycle`], LSP 3.17 "Server lifetime"): `initialize` opens the workspace
//!   (the first workspace folder, else `rootUri`, else `--root`, else the current directory),
//!   negotiates `positionEncoding` (utf-8 when the editor offers it, else utf-16), starts the
//!   servers for the languages found in the workspace and answers with the union of their
//!   capabilities ([`capabilities`]); what servers that start later add is registered with the
//!   editor ([`late`]). `shutdown` stops every server; `exit` ends the session. Agents attach
//!   through the [`AgentDoor`] the composition root gives (`cli.rs`: the MCP face's workspace
//!   socket, taken over from a previous `filepuff lsp` of the root when it exits).
//! - **Text sync** ([`text_sync`]): `didOpen`/`didChange`/`didSave`/`didClose` update the
//!   documents store in arrival order (async-lsp runs notification handlers one at a time, in
//!   order) and are mirrored at once to every server of the document's language, each in its own
//!   encoding ([`crate::documents::DocumentStore::apply_changes`]).
//! - **Requests** are routed by the document's language ([`route`]); positions are translated
//!   only where a server's encoding differs from the editor's ([`translate`]), and each server
//!   is offered the editor's encoding first, so usually nothing is translated and methods
//!   filepuff does not know pass through safely; an answer nothing changes reaches the editor
//!   as the server's own JSON text, never parsed here.
//! - **Server→editor traffic** (diagnostics, progress, messages, `workspace/applyEdit`,
//!   registrations, refreshes) is merged and passed on by [`upstream`].
//! - A server that dies is restarted and the editor's documents are opened on it again; the
//!   editor sees a `window/logMessage`.

mod capabilities;
mod completion;
mod fan;
mod fit;
mod frame;
mod io;
mod late;
mod lifecycle;
mod route;
mod spelling;
mod text_sync;
mod translate;
mod upstream;

#[cfg(test)]
mod tests;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_lsp::concurrency::ConcurrencyLayer;
use async_lsp::panic::CatchUnwindLayer;
use async_lsp::{ClientSocket, ErrorCode, LspService, MainLoop, ResponseError};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::compat::TokioAsyncWriteCompatExt;
use tower::ServiceBuilder;

use crate::documents::{Encoding, Language};
use crate::engine::Engine;

pub use io::{EditorStream, serve_stdio};
pub use text_sync::EDITOR_FOCUS;
pub use translate::{LegendMap, Translator};

use crate::engine::agents::{AgentDoor, OpenDoor};

/// Serves one editor session over `stream` (see [`serve_stdio`] and [`io`]).
pub async fn serve(stream: EditorStream, root: Option<PathBuf>, agents: Arc<dyn AgentDoor>) -> anyhow::Result<()> {
    let (reader, writer, flusher) = io::editor_stream(stream)?;
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
            .layer(ConcurrencyLayer::new(crate::backends::transport::MAIN_LOOP_CONCURRENCY))
            .service(lifecycle::Proxy::new(service_shared))
    });
    let _ = shared.editor.set(editor);
    // SIGTERM/SIGINT end the session like the editor's `exit`: the socket, the presence file
    // and the servers are cleaned up below.
    let result = tokio::select! {
        result = mainloop.run_messages(reader, writer.compat_write()) => result,
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
    flusher.flushed(Duration::from_secs(2)).await;
    match result {
        Ok(()) => Ok(()),
        // The editor closed its end without `exit`: a normal way for a session to end.
        Err(async_lsp::Error::Io(err)) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(()),
        Err(async_lsp::Error::Eof) => Ok(()),
        Err(err) => Err(err.into()),
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
    /// `lifecycle::host_agents_when_settled`).
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
    /// What those capabilities say the editor accepts in answers, read once.
    accepts: fit::Accepts,
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
        let notification = crate::backends::transport::any_notification(method, params);
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
        let request = crate::backends::transport::any_request(method, params);
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
/// "serving", "root"}}`, where `documents` counts the documents the server has open, `busy` means
/// it reports work in progress (loading, indexing), `serving` says whether this session owns
/// the agents' socket now (false while another `filepuff lsp` of the root holds it), and `root`
/// is the workspace root this session chose (the path for `filepuff mcp --root`). A broken
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
    let root = session.engine.workspace().root();
    let socket = shared.agents.address(root);
    json!({
        "positionEncoding": session.encoding.lsp_name(),
        "servers": servers,
        "agents": { "socket": socket, "serving": serving, "root": root.display().to_string() },
    })
}

/// How long after the editor's `initialized` a `MethodNotFound` answer to a server's request is
/// taken for a handler the editor has not registered yet (see [`Shared::request_editor`]).
pub(crate) const EDITOR_SETTLING: Duration = Duration::from_secs(3);
