//! An in-process fake language server for unit tests, on async-lsp: scripted per test, reached
//! by the backends over in-memory streams instead of a child's stdio.
//!
//! A test builds a [`Script`] (the capabilities it offers, its `positionEncoding`, an answer per
//! method as a closure over the request's params) and registers it ([`FakeServer::register`]),
//! which gives it a unique program name to put in `[servers.NAME] command`. When the backends
//! start that server, `LspClient::start` asks [`connect`] instead of spawning: each start (a
//! restart too) runs a new [`Instance`] of the script on the current tokio runtime, joined to
//! the client by `tokio::io::duplex`. The client reads it through the same `BoundedReader` as a
//! process's stdout, so everything after the spawn is the production path.
//!
//! An instance records every request and notification it receives ([`Log`]) and keeps the text
//! of each document the way a server does: `didOpen`, then `didChange` applied in its own
//! encoding (incremental ranges converted here, independently of `documents::position`, so a
//! wrong translation by filepuff shows as a wrong text). It can send server→client traffic
//! ([`Instance::notify`], [`Instance::request`]) and die ([`Instance::kill`], [`Reply::Exit`]).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_lsp::router::Router;
use async_lsp::{AnyRequest, ClientSocket, ErrorCode, LspService, MainLoop, ResponseError};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// How long [`Instance::wait_for`] and [`FakeServer::instance`] wait before failing the test.
pub const WAIT: Duration = Duration::from_secs(10);

/// What a scripted handler answers.
pub enum Reply {
    /// A result (JSON, as the method's result type has it).
    Result(Value),
    /// An error response.
    Error(ErrorCode, String),
    /// No answer, ever (a request left for the client to cancel).
    Never,
    /// The server dies now: its streams close without an answer.
    Exit,
    /// The reply this future gives, when it gives it (an answer that waits for something
    /// else the server receives).
    Later(BoxFuture<'static, Reply>),
}

/// A scripted answer: the instance that received the request and the request's params.
pub type Handler = Arc<dyn Fn(&Instance, &Value) -> Reply + Send + Sync>;

/// What a fake server does: its capabilities, its encoding, its answers.
#[derive(Clone)]
pub struct Script {
    capabilities: Value,
    position_encoding: Option<String>,
    handlers: HashMap<String, Handler>,
}

impl Script {
    /// A server offering `capabilities` (`ServerCapabilities` JSON; `textDocumentSync` defaults
    /// to incremental, 2), speaking utf-16 (no `positionEncoding` in its answer, LSP's default).
    pub fn new(capabilities: Value) -> Script {
        Script { capabilities, position_encoding: None, handlers: HashMap::new() }
    }

    /// Answers `initialize` with `positionEncoding` `name` ("utf-8", "utf-16", "utf-32") and
    /// applies `didChange` ranges in it.
    pub fn position_encoding(mut self, name: &str) -> Script {
        self.position_encoding = Some(name.to_owned());
        self
    }

    /// Answers requests for `method` with `handler`. A method without a handler is answered
    /// `MethodNotFound` (`initialize` and `shutdown` are answered by the fake itself).
    pub fn on(mut self, method: &str, handler: impl Fn(&Instance, &Value) -> Reply + Send + Sync + 'static) -> Script {
        self.handlers.insert(method.to_owned(), Arc::new(handler));
        self
    }
}

/// A request an instance received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its JSON-RPC id, as sent.
    pub id: Value,
    /// Its method.
    pub method: String,
    /// Its params as sent (positions in the server's encoding, canonical URIs).
    pub params: Value,
}

/// A document as the server holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The version of the last `didOpen`/`didChange`.
    pub version: i64,
    /// The text after applying every change received, in order.
    pub text: String,
}

/// Everything an instance received, in order.
#[derive(Debug, Clone, Default)]
pub struct Log {
    pub requests: Vec<Received>,
    /// (method, params) of each notification.
    pub notifications: Vec<(String, Value)>,
    /// The documents open at the server, by URI, with the text its changes produced.
    pub documents: HashMap<String, Document>,
}

impl Log {
    /// The params of every notification `method`, in order.
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        self.notifications.iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }

    /// Every request `method` received, in order.
    pub fn requests(&self, method: &str) -> Vec<Received> {
        self.requests.iter().filter(|r| r.method == method).cloned().collect()
    }
}

/// One running fake server (one per start of the registered program).
pub struct Instance {
    client: ClientSocket,
    /// The encoding of `Position.character`: "utf-8", "utf-16" or "utf-32".
    encoding: String,
    log: Mutex<Log>,
    changed: tokio::sync::watch::Sender<u64>,
    task: OnceLock<tokio::task::AbortHandle>,
}

impl Instance {
    /// Sends a notification to the client (server→client).
    pub fn notify(&self, method: &str, params: Value) {
        let notification = crate::backends::transport::any_notification(method, params);
        let _ = LspService::notify(&mut self.client.clone(), notification);
    }

    /// Sends a request to the client (server→client) and returns its answer.
    pub fn request(&self, method: &str, params: Value) -> BoxFuture<'static, Result<Value, ResponseError>> {
        use tower::Service;
        let request = crate::backends::transport::any_request(method, params);
        Box::pin(self.client.clone().call(request))
    }

    /// Ends the server: its main loop stops and its streams close (the client reads EOF).
    pub fn kill(&self) {
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }

    /// A copy of what it received so far.
    pub fn log(&self) -> Log {
        self.log.lock().clone()
    }

    /// The document `uri` as the server holds it.
    pub fn document(&self, uri: &str) -> Option<Document> {
        self.log.lock().documents.get(uri).cloned()
    }

    /// Waits until `found` returns something for the log (checked on every message received),
    /// at most [`WAIT`]; panics naming `what` after that.
    pub async fn wait_for<T>(&self, what: &str, found: impl Fn(&Log) -> Option<T>) -> T {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(value) = found(&self.log.lock()) {
                return value;
            }
            if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
                panic!("the fake server never received {what}; it received {:#?}", self.log());
            }
        }
    }

    /// The byte offset of `(line, character)` in `text`, `character` counted in this server's
    /// encoding; lines end at `\n` (the tests' texts have no other breaks). Past the end of a
    /// line or the text clamps, as LSP says.
    pub fn offset(&self, text: &str, line: u64, character: u64) -> usize {
        let mut start = 0;
        for _ in 0..line {
            match text[start..].find('\n') {
                Some(at) => start += at + 1,
                None => return text.len(),
            }
        }
        let end = text[start..].find('\n').map_or(text.len(), |at| start + at);
        let mut units = 0;
        for (at, c) in text[start..end].char_indices() {
            if units >= character {
                return start + at;
            }
            units += self.units(c);
        }
        end
    }

    /// The `(line, character)` of byte offset `offset` in `text`, in this server's encoding.
    pub fn position(&self, text: &str, offset: usize) -> (u64, u64) {
        let before = &text[..offset];
        let line = before.matches('\n').count() as u64;
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        (line, before[line_start..].chars().map(|c| self.units(c)).sum())
    }

    /// A `Range` JSON covering the first occurrence of `needle` in document `uri`, in this
    /// server's encoding. Panics when the document is not open or lacks `needle`.
    pub fn range_of(&self, uri: &str, needle: &str) -> Value {
        let text = self.document(uri).unwrap_or_else(|| panic!("{uri} is not open at the fake server")).text;
        let start = text.find(needle).unwrap_or_else(|| panic!("{needle:?} is not in {uri}"));
        let (sl, sc) = self.position(&text, start);
        let (el, ec) = self.position(&text, start + needle.len());
        json!({ "start": { "line": sl, "character": sc }, "end": { "line": el, "character": ec } })
    }

    fn units(&self, c: char) -> u64 {
        match self.encoding.as_str() {
            "utf-8" => c.len_utf8() as u64,
            "utf-32" => 1,
            _ => c.len_utf16() as u64,
        }
    }

    fn record(&self, edit: impl FnOnce(&mut Log)) {
        edit(&mut self.log.lock());
        self.changed.send_modify(|n| *n += 1);
    }

    /// Keeps the document text as a server does (`didOpen`, `didChange`, `didClose`).
    fn sync(&self, method: &str, params: &Value) {
        let uri = params.pointer("/textDocument/uri").and_then(Value::as_str).unwrap_or_default().to_owned();
        let version = params.pointer("/textDocument/version").and_then(Value::as_i64).unwrap_or_default();
        let mut log = self.log.lock();
        match method {
            "textDocument/didOpen" => {
                let text = params.pointer("/textDocument/text").and_then(Value::as_str).unwrap_or_default();
                log.documents.insert(uri, Document { version, text: text.to_owned() });
            }
            "textDocument/didChange" => {
                let Some(mut document) = log.documents.remove(&uri) else { return };
                for change in params.get("contentChanges").and_then(Value::as_array).into_iter().flatten() {
                    let new_text = change.get("text").and_then(Value::as_str).unwrap_or_default();
                    match change.get("range") {
                        Some(range) => {
                            let at = |end: &str| {
                                let line = range.pointer(&format!("/{end}/line")).and_then(Value::as_u64).unwrap_or(0);
                                let character =
                                    range.pointer(&format!("/{end}/character")).and_then(Value::as_u64).unwrap_or(0);
                                self.offset(&document.text, line, character)
                            };
                            let (start, end) = (at("start"), at("end"));
                            document.text.replace_range(start..end.max(start), new_text);
                        }
                        None => document.text = new_text.to_owned(),
                    }
                }
                document.version = version;
                log.documents.insert(uri, document);
            }
            "textDocument/didClose" => {
                log.documents.remove(&uri);
            }
            _ => {}
        }
    }
}

/// A script registered under a unique program name; unregistered when dropped.
pub struct FakeServer {
    inner: Arc<Registered>,
}

struct Registered {
    program: String,
    script: Script,
    instances: Mutex<Vec<Arc<Instance>>>,
    started: tokio::sync::watch::Sender<usize>,
}

fn registry() -> &'static Mutex<HashMap<String, Arc<Registered>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<Registered>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

static NEXT: AtomicU64 = AtomicU64::new(1);

impl FakeServer {
    /// Registers `script` under a new program name ([`FakeServer::program`]).
    pub fn register(script: Script) -> FakeServer {
        let program = format!("filepuff-fake-lsp-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let inner = Arc::new(Registered {
            program: program.clone(),
            script,
            instances: Mutex::new(Vec::new()),
            started: tokio::sync::watch::Sender::new(0),
        });
        registry().lock().insert(program, inner.clone());
        FakeServer { inner }
    }

    /// The program name to use as `[servers.NAME] command`.
    pub fn program(&self) -> &str {
        &self.inner.program
    }

    /// The `n`th instance started (0: the first start), waiting for it at most [`WAIT`].
    pub async fn instance(&self, n: usize) -> Arc<Instance> {
        let mut started = self.inner.started.subscribe();
        let waited = tokio::time::timeout(WAIT, started.wait_for(|count| *count > n)).await;
        assert!(waited.is_ok(), "{} was not started {} time(s)", self.inner.program, n + 1);
        self.inner.instances.lock()[n].clone()
    }

    /// How many times the program was started.
    pub fn starts(&self) -> usize {
        self.inner.instances.lock().len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        registry().lock().remove(&self.inner.program);
        for instance in self.inner.instances.lock().iter() {
            instance.kill();
        }
    }
}

impl FakeServer {
    /// A temporary workspace whose Go files (`files`: relative path, text) are served by this
    /// fake alone (`[servers.fake]`, the only server of `[languages.go]`).
    pub fn go_workspace(&self, files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = format!(
            "[servers.fake]\ncommand = [{:?}]\nlanguages = [\"go\"]\n[languages.go]\nservers = [\"fake\"]\n",
            self.program()
        );
        std::fs::write(dir.path().join("filepuff.toml"), config).expect("filepuff.toml");
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).expect("a workspace file");
        }
        dir
    }
}

/// Whether `command` is a registered fake server's program.
pub fn is_registered(command: &str) -> bool {
    registry().lock().contains_key(command)
}

/// Starts an instance of the fake server registered as `program`, on the current tokio
/// runtime, and returns the client's ends of its streams: (its output, its input). `None`
/// when `program` is not a registered fake.
pub fn connect(program: &Path) -> Option<(ReadHalf<DuplexStream>, WriteHalf<DuplexStream>)> {
    let registered = registry().lock().get(program.to_str()?)?.clone();
    let (client_end, server_end) = tokio::io::duplex(64 << 10);
    let script = registered.script.clone();
    let slot: Arc<OnceLock<Arc<Instance>>> = Arc::new(OnceLock::new());
    let router_slot = slot.clone();
    let (mainloop, client) = MainLoop::new_server(move |_client| router(router_slot, script));
    let encoding = registered.script.position_encoding.clone().unwrap_or_else(|| "utf-16".to_owned());
    let instance = Arc::new(Instance {
        client,
        encoding,
        log: Mutex::new(Log::default()),
        changed: tokio::sync::watch::Sender::new(0),
        task: OnceLock::new(),
    });
    let _ = slot.set(instance.clone());
    let (read, write) = tokio::io::split(server_end);
    let task = tokio::spawn(async move {
        let _ = mainloop.run_buffered(read.compat(), write.compat_write()).await;
    });
    let _ = instance.task.set(task.abort_handle());
    registered.instances.lock().push(instance);
    registered.started.send_modify(|n| *n += 1);
    Some(tokio::io::split(client_end))
}

/// The fake's service: records everything, keeps documents, answers from the script.
fn router(slot: Arc<OnceLock<Arc<Instance>>>, script: Script) -> Router<Arc<OnceLock<Arc<Instance>>>> {
    let mut router = Router::new(slot);
    let capabilities = {
        let mut capabilities = script.capabilities.clone();
        if capabilities.get("textDocumentSync").is_none() {
            capabilities["textDocumentSync"] = json!(2);
        }
        if let Some(encoding) = &script.position_encoding {
            capabilities["positionEncoding"] = json!(encoding);
        }
        capabilities
    };
    router.unhandled_request(move |slot, request| -> BoxFuture<'static, Result<Value, ResponseError>> {
        let Some(instance) = slot.get().cloned() else {
            return Box::pin(async { Err(ResponseError::new(ErrorCode::INTERNAL_ERROR, "not started")) });
        };
        let AnyRequest { id, method, params, .. } = request;
        let id = serde_json::to_value(&id).unwrap_or(Value::Null);
        instance.record(|log| log.requests.push(Received { id, method: method.clone(), params: params.clone() }));
        let reply = match method.as_str() {
            "initialize" => Reply::Result(json!({
                "capabilities": capabilities,
                "serverInfo": { "name": "fake-lsp", "version": "0" }
            })),
            "shutdown" => Reply::Result(Value::Null),
            _ => match script.handlers.get(&method) {
                Some(handler) => handler(&instance, &params),
                None => Reply::Error(ErrorCode::METHOD_NOT_FOUND, format!("no handler for {method}")),
            },
        };
        answer(reply, instance)
    });
    router.unhandled_notification(|slot, notification| {
        if let Some(instance) = slot.get() {
            instance.sync(&notification.method, &notification.params);
            if notification.method == "exit" {
                instance.kill();
            }
            instance.record(|log| log.notifications.push((notification.method, notification.params)));
        }
        ControlFlow::Continue(())
    });
    router
}

/// The response `reply` makes, sent when it is ready.
fn answer(reply: Reply, instance: Arc<Instance>) -> BoxFuture<'static, Result<Value, ResponseError>> {
    match reply {
        Reply::Result(value) => Box::pin(async move { Ok(value) }),
        Reply::Error(code, message) => Box::pin(async move { Err(ResponseError::new(code, message)) }),
        Reply::Never => Box::pin(std::future::pending()),
        Reply::Exit => {
            instance.kill();
            Box::pin(std::future::pending())
        }
        Reply::Later(reply) => Box::pin(async move { answer(reply.await, instance).await }),
    }
}
