//! Backends: the language servers filepuff is a client of, one process per (server, project
//! root), started lazily on first use and shared by every session of the Engine. This module
//! is the registry: which clients run, acquiring (starting) them, the routes of open documents
//! and their sync, and the runtime the clients live on.
//!
//! Which server serves which language comes from [`default_specs`] overlaid with
//! `[servers.NAME]` in `filepuff.toml` (`specs.rs`). The first enabled server for a language
//! whose program is on `PATH` wins (basedpyright, then pyright, then pylsp for Python). A file's
//! project root is its nearest ancestor, inside the workspace, holding one of the server's root
//! markers (`go.mod`, `compile_commands.json`, `pyproject.toml`, `tsconfig.json`, …), else the
//! workspace root.
//!
//! The clients live on a tokio runtime of their own (one worker thread, started on first use),
//! so the synchronous tool functions can call them from any thread with [`Backends::run`].
//! A client whose process died is replaced on the next request and the documents it needs are
//! synced again from the documents store; every start passes the crash-loop guard of
//! `restart.rs` (backoff, then [`BackendError::Broken`]). `watcher.rs` forwards disk changes to
//! the servers, `doctor.rs` reports what is installed, `ask.rs` asks a server about a document,
//! `locations.rs` reads `Location[]` answers in one pass, `route.rs` decides which of a
//! language's servers answers a method.

mod ask;
pub mod client;
mod doctor;
pub mod locations;
mod restart;
pub mod route;
mod specs;
pub mod transport;
mod watcher;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::documents::{DocumentChange, DocumentStore, Encoding, Language};
use crate::workspace::{Config, DocumentId, LspConfig};
pub use ask::{Answered, Completeness, Needs, Question, ask_on};
pub use client::{ClientRef, LspClient, StartOptions};
pub use doctor::{ServerReport, doctor};
use restart::StartHistory;
pub use restart::{BrokenServer, MAX_STARTS, START_WINDOW};
#[cfg(test)]
pub(crate) use specs::test_program;
pub use specs::{ServerSpec, default_specs, find_program, specs, unusable_program};

/// Capacity of the published-diagnostics channel (URIs a slow subscriber may fall behind by).
const PUBLISHED_CAPACITY: usize = 256;

/// Why a language server could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    #[error("no language server is configured for {language}")]
    NoServer { language: &'static str },
    #[error("language server {server} is not installed: `{command}` was not found on PATH")]
    NotInstalled { server: String, command: String, install_hint: String },
    #[error("language server {server} (`{command}`) failed to start: {message}")]
    StartFailed { server: String, command: String, message: String },
    #[error("language server {server} stopped: {message}")]
    Crashed { server: String, message: String },
    #[error("language server {server} did not answer {method} within {ms} ms")]
    Timeout { server: String, method: &'static str, ms: u64 },
    #[error("language server {server} answered {method} with an error: {message}")]
    Server { server: String, method: &'static str, message: String },
    /// The server's answer was `ContentModified` (-32801, LSP 3.17): the document changed while
    /// it worked; asking again gives a current answer.
    #[error("language server {server} answered {method}: the content changed meanwhile")]
    ContentModified { server: String, method: &'static str },
    /// A crash loop: the server was started [`MAX_STARTS`] times within [`START_WINDOW`] and
    /// is not started again for `retry_in_secs` seconds (`[lsp] broken_cooldown_secs`).
    #[error(
        "language server {server} is broken: it was started {starts} times within {window_secs} s (last: {last}); \
         it is tried again in {retry_in_secs} s, or at once on filepuff/restart"
    )]
    Broken { server: String, starts: usize, window_secs: u64, retry_in_secs: u64, last: String },
    /// The caller cancelled the request (an agent's `notifications/cancelled`); the server was
    /// told at once (`$/cancelRequest`). Never retried, never a sign of a failing server.
    #[error("the request to language server {server} was cancelled")]
    Cancelled { server: String },
}

/// A client and what happened getting it.
#[derive(Debug, Clone)]
pub struct Acquired {
    pub client: Arc<LspClient>,
    /// True when a dead server was replaced for this request.
    pub restarted: bool,
}

/// A client's identity: (server name, project root).
type ClientKey = (String, PathBuf);

/// Running clients by (server name, project root).
type ClientMap = Mutex<HashMap<ClientKey, Arc<LspClient>>>;

/// The registry of running clients and the runtime they live on.
pub struct Backends {
    root: PathBuf,
    specs: Vec<ServerSpec>,
    config: LspConfig,
    runtime: OnceLock<tokio::runtime::Handle>,
    clients: Arc<ClientMap>,
    /// Recent starts per (server, root): backoff and the crash-loop guard.
    history: Mutex<HashMap<ClientKey, StartHistory>>,
    /// Programs found on PATH, by command (looked up once per process; `doctor` looks again).
    programs: Mutex<HashMap<String, Option<PathBuf>>>,
    /// `[languages.NAME] servers`, by language.
    languages: HashMap<Language, Vec<String>>,
    /// `[languages.NAME] navigation`, by language ([`route`]).
    navigation: HashMap<Language, Vec<String>>,
    /// One lock per (server, root) being started: held across the start, which is awaited
    /// (on the session's thread, by [`Backends::acquire_async`]), so an async lock.
    starting: Mutex<HashMap<ClientKey, Arc<tokio::sync::Mutex<()>>>>,
    /// The editor, behind `filepuff lsp`.
    attached: OnceLock<Attached>,
    /// The live buffers (the Engine's): a server that starts opens every open document it
    /// serves from here.
    documents: Arc<DocumentStore>,
    /// The servers serving each open document: (server, project root), in the language's
    /// server order (decided once, at open).
    routes: Mutex<HashMap<DocumentId, Vec<ClientKey>>>,
    /// The canonical URI of each document whose published diagnostics changed, from every
    /// client ([`Backends::subscribe_published`]).
    published: tokio::sync::broadcast::Sender<url::Url>,
}

/// How many published diagnostics of one document have each severity (LSP
/// `DiagnosticSeverity`; a diagnostic without one counts as an error, as editors show it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiagnosticCounts {
    pub errors: usize,
    pub warnings: usize,
    pub information: usize,
    pub hints: usize,
}

/// The editor side of `filepuff lsp`, as the backends see it: where server→client traffic
/// goes, and who re-syncs a restarted server.
///
/// Called from the backends' runtime (notifications in the order the server sent them) and
/// from whichever thread started a server ([`Upstream::started`]); implementations must not
/// block.
pub trait Upstream: Send + Sync {
    /// A server notification (`textDocument/publishDiagnostics`, `$/progress`,
    /// `window/logMessage`, …), params as the server sent them (its position encoding).
    fn notification(&self, from: &ClientRef, method: &str, params: Value);
    /// A server request the client does not answer itself (`workspace/applyEdit`,
    /// `window/showMessageRequest`, `client/registerCapability`, refreshes, …).
    fn request(
        &self,
        from: &ClientRef,
        method: &str,
        params: Value,
    ) -> futures::future::BoxFuture<'static, Result<Value, async_lsp::ResponseError>>;
    /// A server started (first time or after a crash): open the editor's documents on it.
    fn started(&self, client: &Arc<LspClient>);
    /// A server's process ended.
    fn exited(&self, client: &Arc<LspClient>);
    /// A server was just reported broken (a crash loop): said once per crash loop, with the
    /// error every request for it gets until the cool-down passes or it is reset.
    fn broken(&self, server: &str, root: &Path, error: &BackendError);
}

struct Attached {
    upstream: Arc<dyn Upstream>,
    capabilities: Value,
    encoding: Encoding,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends").field("root", &self.root).finish()
    }
}

impl Backends {
    /// Backends for the workspace at `root` (nothing starts until a request needs it).
    pub fn new(root: &Path, config: &Config, documents: Arc<DocumentStore>) -> Backends {
        Backends {
            documents,
            routes: Mutex::new(HashMap::new()),
            root: root.to_path_buf(),
            specs: specs(config),
            config: config.lsp.clone(),
            runtime: OnceLock::new(),
            clients: Arc::new(Mutex::new(HashMap::new())),
            history: Mutex::new(HashMap::new()),
            programs: Mutex::new(HashMap::new()),
            languages: config
                .languages
                .iter()
                .filter_map(|(name, language)| Some((Language::from_name(name)?, language.servers.clone()?)))
                .collect(),
            navigation: config
                .languages
                .iter()
                .filter_map(|(name, language)| Some((Language::from_name(name)?, language.navigation.clone()?)))
                .collect(),
            starting: Mutex::new(HashMap::new()),
            attached: OnceLock::new(),
            published: tokio::sync::broadcast::channel(PUBLISHED_CAPACITY).0,
        }
    }

    /// Tells the receiver the canonical URI of every document whose published diagnostics
    /// change from now on (any server; a `publishDiagnostics` equal to the previous one for
    /// the document is not a change). A receiver more than 256 URIs behind gets `Lagged`.
    pub fn subscribe_published(&self) -> tokio::sync::broadcast::Receiver<url::Url> {
        self.published.subscribe()
    }

    /// The severities of the diagnostics the running servers of `id` last published for it
    /// (no request is made); `None` when no running server published any for it.
    pub fn published_counts(&self, id: &DocumentId, language: Option<Language>) -> Option<DiagnosticCounts> {
        use lsp_types::DiagnosticSeverity;
        let uri = id.uri();
        let mut counts: Option<DiagnosticCounts> = None;
        for client in self.clients_of(id, language).0 {
            let Some((_, diagnostics)) = client.published_diagnostics(&uri) else { continue };
            let counts = counts.get_or_insert_with(DiagnosticCounts::default);
            for diagnostic in diagnostics {
                match diagnostic.severity {
                    Some(DiagnosticSeverity::WARNING) => counts.warnings += 1,
                    Some(DiagnosticSeverity::INFORMATION) => counts.information += 1,
                    Some(DiagnosticSeverity::HINT) => counts.hints += 1,
                    _ => counts.errors += 1,
                }
            }
        }
        counts
    }

    /// The `[lsp]` settings.
    pub fn config(&self) -> &LspConfig {
        &self.config
    }

    /// The effective server list, in preference order.
    pub fn server_specs(&self) -> &[ServerSpec] {
        &self.specs
    }

    /// Runs `future` on the backends' runtime and waits for it. Call from a synchronous context
    /// (a tool on tokio's blocking pool, the CLI), never from inside an async task.
    pub fn run<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let task = self.runtime().spawn(future);
        match futures::executor::block_on(task) {
            Ok(output) => output,
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        }
    }

    /// Polls `future` to its end on the calling thread, within the backends' runtime's context
    /// (its timers, and the clients' tasks, run on that runtime; this thread sleeps between
    /// polls): the synchronous face of the async ask path, for a tool on the blocking pool and
    /// the CLI. Never call it from a task of that runtime (the thread it would wait for).
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _context = self.runtime().enter();
        futures::executor::block_on(future)
    }

    /// Makes the clients live on `handle`'s runtime instead of one of their own (the editor
    /// proxy runs everything on one thread: no cross-thread wake-ups between the editor's
    /// messages and the servers'). Only before first use; returns false when too late. Never
    /// call [`Backends::run`] from a task of that runtime.
    pub fn adopt_runtime(&self, handle: tokio::runtime::Handle) -> bool {
        if self.runtime.get().is_some() {
            return false;
        }
        handle.spawn(reap_idle(Arc::downgrade(&self.clients), self.config.idle_shutdown_secs));
        self.runtime.set(handle).is_ok()
    }

    /// The backends' runtime, started (with the idle reaper) on first use.
    fn runtime(&self) -> tokio::runtime::Handle {
        self.runtime
            .get_or_init(|| {
                let handle = start_runtime();
                handle.spawn(reap_idle(Arc::downgrade(&self.clients), self.config.idle_shutdown_secs));
                handle
            })
            .clone()
    }

    /// The server for `language`: the first enabled one whose program is installed.
    ///
    /// Errors: [`BackendError::NoServer`], or [`BackendError::NotInstalled`] naming the
    /// preferred server and how to install it.
    pub fn spec_for(&self, language: Language) -> Result<(&ServerSpec, PathBuf), BackendError> {
        let candidates: Vec<&ServerSpec> =
            self.specs.iter().filter(|s| !s.disabled && s.languages.contains(&language)).collect();
        let first = candidates.first().ok_or(BackendError::NoServer { language: language.name() })?;
        for spec in &candidates {
            if let Some(program) = self.program(&spec.command[0]) {
                return Ok((spec, program));
            }
        }
        Err(BackendError::NotInstalled {
            server: first.name.clone(),
            command: first.command[0].clone(),
            install_hint: first.install_hint.clone(),
        })
    }

    /// The project root of `path` for `spec`: the nearest ancestor inside the workspace with a
    /// root marker, else the workspace root.
    pub fn project_root(&self, spec: &ServerSpec, path: &Path) -> PathBuf {
        let mut dir = path.parent();
        while let Some(current) = dir {
            if !current.starts_with(&self.root) {
                break;
            }
            if spec.root_markers.iter().any(|marker| current.join(marker).exists()) {
                return current.to_path_buf();
            }
            if current == self.root {
                break;
            }
            dir = current.parent();
        }
        self.root.clone()
    }

    /// Every server for `language`, in order: `[languages.NAME] servers` when configured (the
    /// installed ones among them), else the one [`Backends::spec_for`] picks.
    ///
    /// Errors: as [`Backends::spec_for`]; with a configured list, [`BackendError::NotInstalled`]
    /// for its first full server (else its first server) when none of them is installed.
    pub fn specs_for(&self, language: Language) -> Result<Vec<(&ServerSpec, PathBuf)>, BackendError> {
        let Some(names) = self.languages.get(&language) else {
            return self.spec_for(language).map(|found| vec![found]);
        };
        let mut found = Vec::new();
        let mut first_missing = None;
        for name in names {
            let Some(spec) = self.specs.iter().find(|s| s.name == *name && !s.disabled) else { continue };
            match self.program(&spec.command[0]) {
                Some(program) => found.push((spec, program)),
                // The error names the server that would answer questions about symbols: a full
                // server before a linter, whatever the list's order (`route`).
                None if first_missing.is_none_or(|missing: &ServerSpec| {
                    route::role(&missing.name) == route::Role::Linter && route::role(&spec.name) == route::Role::Full
                }) =>
                {
                    first_missing = Some(spec);
                }
                None => {}
            }
        }
        if found.is_empty() {
            return Err(match first_missing {
                Some(spec) => BackendError::NotInstalled {
                    server: spec.name.clone(),
                    command: spec.command[0].clone(),
                    install_hint: spec.install_hint.clone(),
                },
                None => BackendError::NoServer { language: language.name() },
            });
        }
        Ok(found)
    }

    fn program(&self, command: &str) -> Option<PathBuf> {
        // Unit tests' in-process fake servers (`crate::tests::fake_lsp`) are not on PATH.
        #[cfg(test)]
        if crate::tests::fake_lsp::is_registered(command) {
            return Some(PathBuf::from(command));
        }
        self.programs.lock().entry(command.to_owned()).or_insert_with(|| find_program(command)).clone()
    }

    /// The running client for `path`'s language and project (the first server of the
    /// language), started (or restarted) if needed.
    pub fn acquire(&self, path: &Path, language: Language) -> Result<Acquired, BackendError> {
        let (spec, program) = self.specs_for(language)?.swap_remove(0);
        let root = self.project_root(spec, path);
        self.acquire_spec(spec, program, root)
    }

    /// The clients of every server for `path`'s language ([`Backends::specs_for`]), each
    /// started if needed. Servers that fail to start are left out and logged; the error is
    /// returned only when none could be had.
    pub fn acquire_all(&self, path: &Path, language: Language) -> Result<Vec<Acquired>, BackendError> {
        let mut clients = Vec::new();
        let mut first_error = None;
        for (spec, program) in self.specs_for(language)? {
            let root = self.project_root(spec, path);
            match self.acquire_spec(spec, program, root) {
                Ok(acquired) => clients.push(acquired),
                Err(err) => {
                    tracing::warn!("{err}");
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            Some(err) if clients.is_empty() => Err(err),
            _ => Ok(clients),
        }
    }

    /// The client of server `name` in project `root`, if it was started (alive or not: a dead
    /// one is being restarted).
    pub fn running_client(&self, name: &str, root: &Path) -> Option<Arc<LspClient>> {
        let clients = self.clients.lock();
        clients.iter().find(|((n, r), _)| n == name && r == root).map(|(_, client)| client.clone())
    }

    /// The running client with this [`LspClient::serial`].
    pub fn by_serial(&self, serial: u64) -> Option<Arc<LspClient>> {
        self.clients.lock().values().find(|c| c.serial == serial).cloned()
    }

    /// Attaches the editor of `filepuff lsp`: servers started from now on are offered
    /// `encoding` (unless `[servers.NAME] position_encoding` says otherwise), get the editor's
    /// `capabilities` (see the client's `editor_capabilities`), send their server→client
    /// traffic to `upstream`, and are watched: when one exits, `upstream.exited` is told.
    /// Only the first call counts.
    pub fn attach_upstream(&self, upstream: Arc<dyn Upstream>, capabilities: Value, encoding: Encoding) {
        let _ = self.attached.set(Attached { upstream, capabilities, encoding });
    }

    /// Stops every running server (`shutdown`, `exit`, then the process), waiting at most a few
    /// seconds in all. For the editor's `shutdown`.
    pub fn stop_all(&self) {
        let clients: Vec<Arc<LspClient>> = self.clients.lock().drain().map(|(_, c)| c).collect();
        if clients.is_empty() {
            return;
        }
        self.run(async move {
            let stops = clients.iter().map(|client| client.stop());
            let _ = tokio::time::timeout(Duration::from_secs(5), futures::future::join_all(stops)).await;
        });
    }

    /// [`Backends::acquire_async`], waited for on the calling thread ([`Backends::block_on`]).
    fn acquire_spec(&self, spec: &ServerSpec, program: PathBuf, root: PathBuf) -> Result<Acquired, BackendError> {
        self.block_on(self.acquire_async(spec, program, root))
    }

    /// The running client of `spec` for project `root`, started (or restarted, when it died)
    /// if needed. A running one is had without waiting; a start is awaited, one per (server,
    /// root) at a time: a second caller waits for it and takes its result.
    ///
    /// Errors: as [`LspClient::start`], and the crash-loop guard's [`BackendError::StartFailed`].
    async fn acquire_async(
        &self,
        spec: &ServerSpec,
        program: PathBuf,
        root: PathBuf,
    ) -> Result<Acquired, BackendError> {
        let key = (spec.name.clone(), root.clone());
        if let Some(client) = self.clients.lock().get(&key).filter(|client| client.is_alive()) {
            return Ok(Acquired { client: client.clone(), restarted: false });
        }
        let gate = self.starting.lock().entry(key.clone()).or_default().clone();
        let _started = gate.lock().await;
        let mut restarted = false;
        {
            let mut clients = self.clients.lock();
            if let Some(client) = clients.get(&key) {
                if client.is_alive() {
                    return Ok(Acquired { client: client.clone(), restarted: false });
                }
                tracing::warn!(server = %spec.name, "language server died; restarting");
                clients.remove(&key);
                restarted = true;
            }
        }
        self.guard_start(spec, &root, &key).await?;
        let timeout = Duration::from_millis(self.config.request_timeout_ms.max(1000));
        let limits = transport::FrameLimits {
            max_header_bytes: self.config.max_header_bytes,
            max_body_bytes: self.config.max_message_bytes,
        };
        let options = match self.attached.get() {
            Some(attached) => StartOptions {
                encodings: vec![attached.encoding],
                editor_capabilities: Some(attached.capabilities.clone()),
                upstream: Some(attached.upstream.clone()),
                limits,
                published: Some(self.published.clone()),
            },
            None => StartOptions { limits, published: Some(self.published.clone()), ..StartOptions::default() },
        };
        let started = LspClient::start(spec, &program, &root, timeout, &options).await;
        match started {
            Ok(client) => {
                let client = Arc::new(client);
                self.watch(&client, spec);
                self.clients.lock().insert(key.clone(), client.clone());
                self.resync(&client, &key);
                if let Some(attached) = self.attached.get() {
                    let upstream = attached.upstream.clone();
                    let mut exited = client.exit_signal();
                    let weak = Arc::downgrade(&client);
                    self.runtime().spawn(async move {
                        let _ = exited.wait_for(|done| *done).await;
                        if let Some(client) = weak.upgrade() {
                            upstream.exited(&client);
                        }
                    });
                    attached.upstream.started(&client);
                }
                Ok(Acquired { client, restarted })
            }
            Err(err) => {
                self.start_failed(key, err.to_string());
                Err(err)
            }
        }
    }

    /// Opens every open document routed to `key` on its freshly started `client`.
    fn resync(&self, client: &Arc<LspClient>, key: &ClientKey) {
        let routed: Vec<DocumentId> =
            self.routes.lock().iter().filter(|(_, keys)| keys.contains(key)).map(|(id, _)| id.clone()).collect();
        for id in routed {
            if let Some(document) = self.documents.get(&id)
                && let Err(err) =
                    client.resync_editor_document(&id.uri(), &document.language_id, document.version, &document.text)
            {
                tracing::warn!("{err}");
            }
        }
    }

    /// The (server, project root) pairs that serve `id` in `language`, in the language's
    /// server order; empty when no server is configured or installed for it.
    pub fn serving(&self, id: &DocumentId, language: Option<Language>) -> Vec<(String, PathBuf)> {
        if let Some(keys) = self.routes.lock().get(id) {
            return keys.clone();
        }
        let Some(language) = language else { return Vec::new() };
        match self.specs_for(language) {
            Ok(specs) => {
                specs.into_iter().map(|(spec, _)| (spec.name.clone(), self.project_root(spec, id.path()))).collect()
            }
            Err(_) => Vec::new(),
        }
    }

    /// The running clients of the servers serving `id` (see [`Backends::serving`]), in order,
    /// and whether some of them are not running (not started yet, or being restarted).
    pub fn clients_of(&self, id: &DocumentId, language: Option<Language>) -> (Vec<Arc<LspClient>>, bool) {
        let mut missing = false;
        let clients = self
            .serving(id, language)
            .iter()
            .filter_map(|(name, root)| {
                let client = self.running_client(name, root);
                missing |= client.is_none();
                client
            })
            .collect();
        (clients, missing)
    }

    /// A document was opened (the editor's `didOpen`, possibly again for a reload): routes it
    /// to its servers and opens it on the running ones (see
    /// [`LspClient::open_editor_document`]); servers that start later open it themselves.
    /// Returns the servers that serve it and whether some are not running.
    pub fn document_opened(&self, id: &DocumentId, language: Option<Language>) -> (Vec<(String, PathBuf)>, bool) {
        self.routes.lock().remove(id);
        let serving = self.serving(id, language);
        self.routes.lock().insert(id.clone(), serving.clone());
        let (clients, missing) = self.clients_of(id, language);
        if let Some(document) = self.documents.get(id) {
            let uri = id.uri();
            for client in clients {
                if let Err(err) =
                    client.open_editor_document(&uri, &document.language_id, document.version, &document.text)
                {
                    tracing::warn!("{err}");
                }
            }
        }
        (serving, missing)
    }

    /// An open document changed: each running server serving it gets the change in its own
    /// encoding ([`LspClient::change_editor_document`]).
    pub fn document_changed(&self, id: &DocumentId, change: &DocumentChange) {
        let language = Language::from_name(&change.language_id).or_else(|| Language::from_path(id.path()));
        let uri = id.uri();
        for client in self.clients_of(id, language).0 {
            if let Err(err) = client.change_editor_document(&uri, change) {
                tracing::warn!("{err}");
            }
        }
    }

    /// An open document was saved: its servers get `didSave`.
    pub fn document_saved(&self, id: &DocumentId, language: Option<Language>, text: &ropey::Rope) {
        let uri = id.uri();
        for client in self.clients_of(id, language).0 {
            let _ = client.save_editor_document(&uri, text);
        }
    }

    /// An open document was closed: its servers get `didClose` and it is no longer routed.
    pub fn document_closed(&self, id: &DocumentId, language: Option<Language>) {
        let (clients, _) = self.clients_of(id, language);
        self.routes.lock().remove(id);
        let uri = id.uri();
        for client in clients {
            let _ = client.close_editor_document(&uri);
        }
    }

    /// The running clients whose server serves `language` (any project root).
    pub fn running_for(&self, language: Language) -> Vec<Arc<LspClient>> {
        self.clients
            .lock()
            .iter()
            .filter(|((name, _), client)| {
                client.is_alive() && self.specs.iter().any(|s| s.name == *name && s.languages.contains(&language))
            })
            .map(|(_, client)| client.clone())
            .collect()
    }

    /// Whether the server for `path` (its language and project root) is running now.
    pub fn is_running_for(&self, path: &Path, language: Language) -> bool {
        let Ok((spec, _)) = self.spec_for(language) else { return false };
        let key = (spec.name.clone(), self.project_root(spec, path));
        self.clients.lock().get(&key).is_some_and(|c| c.is_alive())
    }

    /// Stops and forgets `client` (after a timeout: the next request starts a fresh one).
    pub fn discard(&self, client: &Arc<LspClient>) {
        self.block_on(self.discard_async(client));
    }

    /// [`Backends::discard`], awaited.
    async fn discard_async(&self, client: &Arc<LspClient>) {
        self.clients.lock().retain(|_, c| !Arc::ptr_eq(c, client));
        client.stop().await;
    }

    /// The running clients (for `doctor` and tests).
    pub fn running(&self) -> Vec<Arc<LspClient>> {
        self.clients.lock().values().cloned().collect()
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        let clients: Vec<Arc<LspClient>> = self.clients.lock().drain().map(|(_, c)| c).collect();
        if clients.is_empty() {
            return;
        }
        if let Some(handle) = self.runtime.get() {
            let task = handle.spawn(async move {
                for client in clients {
                    client.stop().await;
                }
            });
            futures::executor::block_on(async {
                tokio::select! {
                    _ = task => {},
                    _ = futures_timer(Duration::from_secs(3)) => {},
                }
            });
        }
    }
}

/// Documents a server has not been asked about for this long are closed (`didClose`).
const DOCUMENT_IDLE: Duration = Duration::from_secs(300);

/// Every 30 s: stops servers without a request for `idle_secs` (0 = never) and closes documents
/// no request touched for [`DOCUMENT_IDLE`]. Ends when the Backends are dropped.
async fn reap_idle(clients: std::sync::Weak<ClientMap>, idle_secs: u64) {
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tick.tick().await;
        let Some(clients) = clients.upgrade() else { return };
        let all: Vec<((String, PathBuf), Arc<LspClient>)> =
            clients.lock().iter().map(|(k, c)| (k.clone(), c.clone())).collect();
        for (key, client) in all {
            if idle_secs > 0 && client.idle_for() >= Duration::from_secs(idle_secs) && !client.has_editor_documents() {
                tracing::info!(server = %client.name, "idle for {idle_secs} s; shutting down");
                clients.lock().remove(&key);
                client.stop().await;
            } else {
                client.close_idle_documents(DOCUMENT_IDLE).await;
            }
        }
    }
}

/// A timer that does not need a tokio context (Drop may run outside one).
async fn futures_timer(duration: Duration) {
    let (tx, rx) = futures::channel::oneshot::channel::<()>();
    std::thread::spawn(move || {
        std::thread::sleep(duration);
        let _ = tx.send(());
    });
    let _ = rx.await;
}

/// Starts the backends' runtime on a thread of its own and returns its handle. The runtime is
/// never dropped inside another runtime's async context (which tokio forbids): it lives until
/// the process exits.
fn start_runtime() -> tokio::runtime::Handle {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("filepuff-lsp".to_owned())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("filepuff-lsp-worker")
                .enable_all()
                .build()
                .expect("the language-server runtime must start");
            let _ = tx.send(runtime.handle().clone());
            runtime.block_on(std::future::pending::<()>());
        })
        .expect("the language-server thread must start");
    rx.recv().expect("the language-server runtime must report its handle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_roots_come_from_the_nearest_marker_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("svc/api/handlers")).unwrap();
        std::fs::write(root.join("svc/go.mod"), "module svc\n").unwrap();
        let backends = Backends::new(root, &Config::default(), Default::default());
        let gopls = default_specs().into_iter().find(|s| s.name == "gopls").unwrap();
        assert_eq!(backends.project_root(&gopls, &root.join("svc/api/handlers/h.go")), root.join("svc"));
        assert_eq!(backends.project_root(&gopls, &root.join("other/x.go")), root.to_path_buf());
    }

    /// With none of a language's servers installed, the error names the full server, not a
    /// linter listed first (found by a fresh user: `hover` said "install ruff").
    #[test]
    fn not_installed_names_the_full_server_before_a_listed_linter() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(
            "[languages.python]\nservers = [\"ruff\", \"basedpyright\"]\n\
             [servers.ruff]\ncommand = [\"filepuff-no-such-ruff\", \"server\"]\n\
             [servers.basedpyright]\ncommand = [\"filepuff-no-such-basedpyright\", \"--stdio\"]\n",
        )
        .unwrap();
        let backends = Backends::new(dir.path(), &config, Default::default());
        match backends.specs_for(Language::Python) {
            Err(BackendError::NotInstalled { server, .. }) => assert_eq!(server, "basedpyright"),
            other => panic!("expected NotInstalled, got {:?}", other.map(|found| found.len())),
        }
    }
}
