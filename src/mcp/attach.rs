//! Agents attaching to an editor's Engine (DESIGN.md "The faces"): `filepuff lsp` serves MCP
//! on a per-workspace Unix socket; `filepuff mcp` finds that socket for its root and bridges its
//! stdio to it ([`bridge`]), so the agent sees the editor's unsaved buffers and shares its warm
//! language servers. Without a socket, `filepuff mcp` runs an Engine of its own.
//!
//! - **Where**: `/run/user/UID/filepuff/` when the user's runtime directory exists (looked at
//!   once per process), else `/tmp/filepuff-UID/` — never from environment variables
//!   (`XDG_RUNTIME_DIR`, `TMPDIR`), which MCP clients strip from the servers they start, so the
//!   editor's process and the agent's would look in different places. The directory is created
//!   mode 0700 and refused if another user owns it (by both ends). The socket is `<first 16 hex
//!   digits of sha256(canonical root)>.sock`, mode 0600; both ends check the peer's uid.
//! - **One owner, taken over** ([`host`]): the first `filepuff lsp` of a root binds the socket.
//!   Another one for the same root (an editor's restart starting the new server before the old
//!   one has exited) keeps checking, every [`TAKEOVER_POLL`], whether the owner is still alive
//!   (its pid, learnt once from the socket's peer credentials) and binds as soon as it is not —
//!   for its whole session. A socket file nobody accepts on (a `filepuff lsp` killed with -9) is
//!   removed and bound anew. Binding is serialised by a lock on the directory, and an owner
//!   removes the socket file at exit only while it is still its own (same inode), so two
//!   waiters, or an exiting owner and its successor, never unlink each other's socket.
//! - **Presence** ([`Presence`]): every running `filepuff lsp` also keeps `HASH.PID.editor`
//!   (its pid and process start time) next to the socket, so a standalone `filepuff mcp` can
//!   tell that an editor runs for its root without serving it, and say so in every result
//!   ([`DiskNotice`]).
//! - **Protocol**: the bridge first sends one line, `{"filepuff":{"toolsets":"core,lsp"}}`, then
//!   MCP's stdio framing (newline-delimited JSON-RPC) both ways. A client that starts with MCP
//!   directly gets the configured toolsets.

mod bridge;
mod presence;

use parking_lot::Mutex;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

pub use bridge::bridge;
pub use presence::{DiskNotice, Presence, editor_starting, running_editors};

use crate::engine::Engine;
use crate::engine::agents::{AgentDoor, AnnouncedDoor, OpenDoor};
use crate::tools::toolsets::ToolsetSelection;

/// How often a `filepuff lsp` that does not own its root's socket checks whether it can.
pub const TAKEOVER_POLL: Duration = Duration::from_millis(200);

/// The directory sockets live in (see the module documentation). Decided once per process
/// (the user's runtime directory exists from login on): a bridge looks there before every
/// request, and the look should cost no more than one `stat` of this directory.
pub fn runtime_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let uid = current_uid();
        let user_runtime = PathBuf::from(format!("/run/user/{uid}"));
        match std::fs::metadata(&user_runtime) {
            Ok(metadata) if metadata.is_dir() && metadata.uid() == uid => user_runtime.join("filepuff"),
            _ => PathBuf::from(format!("/tmp/filepuff-{uid}")),
        }
    })
    .clone()
}

fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail (POSIX).
    unsafe { libc::getuid() }
}

/// The first 16 hex digits of sha256 of the canonical `root`: the stem of its socket, lock and
/// presence files.
fn workspace_hash(root: &Path) -> String {
    use sha2::Digest;
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The socket of the workspace at `root` (canonicalised first, so every spelling of a root
/// finds the same socket).
pub fn socket_path(root: &Path) -> PathBuf {
    runtime_dir().join(format!("{}.sock", workspace_hash(root)))
}

/// Creates `dir` private (0700), or checks an existing one is ours and private.
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    // Created 0700 from the start (never briefly open to others).
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let metadata = std::fs::symlink_metadata(dir)?;
    if !metadata.is_dir() || metadata.uid() != current_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is not a directory of this user: refusing to serve agents there", dir.display()),
        ));
    }
    if metadata.mode() & 0o077 != 0 {
        // Someone may have put a socket there while it was open: do not trust it.
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is accessible to other users (mode {:o}): refusing to serve agents there; \
                 `chmod 700 {}` if it is yours",
                dir.display(),
                metadata.mode() & 0o777,
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Whether `dir` exists, is ours and is private (without creating or changing it): what a
/// connecting agent requires before trusting a socket there.
fn is_private_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| is_private(&m))
}

/// Whether `metadata` (an `lstat`) is of a directory of this user that no one else may enter.
fn is_private(metadata: &std::fs::Metadata) -> bool {
    metadata.is_dir() && metadata.uid() == current_uid() && metadata.mode() & 0o077 == 0
}

/// The start time of process `pid` (clock ticks since boot, `/proc/PID/stat` field 22), which
/// tells a live process from a later one that reused its pid. `None` when it is not running.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); a zombie has exited.
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// A process known by pid and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Process {
    pid: u32,
    start: Option<u64>,
}

impl Process {
    fn of(pid: u32) -> Process {
        Process { pid, start: process_start(pid) }
    }

    fn is_alive(&self) -> bool {
        match (self.start, process_start(self.pid)) {
            (Some(known), Some(now)) => known == now,
            (None, now) => now.is_some(),
            (Some(_), None) => false,
        }
    }
}

// ---- the socket ----------------------------------------------------------------------------

/// The socket `filepuff lsp` serves; the file is removed when this is dropped, if it is still
/// this listener's (an exiting owner never unlinks its successor's socket).
pub struct Listener {
    path: PathBuf,
    /// (device, inode) of the socket file this listener bound.
    file: (u64, u64),
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// The socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the socket file at [`Listener::path`] is still the one this listener bound.
    fn is_current(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.file)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // The file first, so no agent connects to a listener about to stop accepting.
        if self.is_current() {
            let _ = std::fs::remove_file(&self.path);
        }
        self.task.abort();
    }
}

/// The lock serialising "is the socket stale? remove it, bind" among the `filepuff lsp`s of
/// this user: an advisory lock (flock) on the sockets' directory itself, so no lock file is
/// left behind; held while the returned handle is open. The directory is shared by every
/// workspace's sessions and the section it guards is a few system calls, so a busy lock is
/// tried again for up to [`BIND_LOCK_WAIT`] (without blocking on it); after that the error is
/// `WouldBlock` and [`host`] tries again at its next check.
fn bind_lock(dir: &Path) -> io::Result<std::fs::File> {
    let handle = std::fs::File::open(dir)?;
    let deadline = Instant::now() + BIND_LOCK_WAIT;
    loop {
        match handle.try_lock() {
            Ok(()) => return Ok(handle),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "another filepuff lsp is binding a socket right now",
                ));
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(err),
        }
    }
}

/// How long [`bind_lock`] tries a busy lock before giving up until the next check.
const BIND_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Why [`listen`] did not bind.
#[derive(Debug)]
pub enum ListenError {
    /// A live `filepuff lsp` (this pid, when its peer credentials said) owns the socket.
    Owned { path: PathBuf, owner: Option<u32> },
    /// The directory is not private to this user, or the socket could not be bound.
    Io(io::Error),
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenError::Owned { path, owner: Some(pid) } => {
                write!(f, "another filepuff lsp (pid {pid}) serves this workspace on {}", path.display())
            }
            ListenError::Owned { path, owner: None } => {
                write!(f, "another filepuff lsp serves this workspace on {}", path.display())
            }
            ListenError::Io(err) => err.fmt(f),
        }
    }
}

impl From<io::Error> for ListenError {
    fn from(err: io::Error) -> ListenError {
        ListenError::Io(err)
    }
}

/// Binds `engine`'s socket and serves MCP sessions on it, on the current tokio runtime (one
/// attempt; [`host`] keeps trying).
///
/// Errors: [`ListenError::Owned`] when a live `filepuff lsp` accepts on the socket;
/// [`ListenError::Io`] when the directory is not private to this user or binding failed.
pub async fn listen(engine: Arc<Engine>) -> Result<Listener, ListenError> {
    let path = socket_path(engine.workspace().root());
    let dir = path.parent().unwrap_or(Path::new("/"));
    private_dir(dir)?;
    let _lock = bind_lock(dir)?;
    if std::fs::symlink_metadata(&path).is_ok() {
        match tokio::time::timeout(Duration::from_secs(1), tokio::net::UnixStream::connect(&path)).await {
            Ok(Ok(stream)) => {
                let owner = stream.peer_cred().ok().and_then(|c| c.pid()).and_then(|p| u32::try_from(p).ok());
                return Err(ListenError::Owned { path, owner });
            }
            // Accepting nothing (connection refused) or not at all in a second: gone or hung.
            _ => {
                tracing::info!("removing the stale socket {}", path.display());
                std::fs::remove_file(&path)?;
            }
        }
    }
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let metadata = std::fs::symlink_metadata(&path)?;
    let uid = current_uid();
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    if stream.peer_cred().map(|c| c.uid()).ok() != Some(uid) {
                        tracing::warn!("refused an agent connection from another user");
                        continue;
                    }
                    let engine = engine.clone();
                    tokio::spawn(async move {
                        if let Err(err) = serve_connection(engine, stream).await {
                            tracing::debug!("agent session ended: {err:#}");
                        }
                    });
                }
                Err(err) => {
                    tracing::warn!("socket accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(Listener { path, file: (metadata.dev(), metadata.ino()), task })
}

/// The agent socket of one `filepuff lsp` session: owned, or waited for and taken over when
/// its owner exits (see the module documentation). Dropping it removes the socket (if owned)
/// and the session's presence file.
pub struct Host {
    listener: Arc<Mutex<Option<Listener>>>,
    task: tokio::task::JoinHandle<()>,
    _presence: Option<Presence>,
}

impl Host {
    /// Whether this session owns the socket now.
    pub fn is_serving(&self) -> bool {
        self.listener.lock().as_ref().is_some_and(Listener::is_current)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.task.abort();
        drop(self.listener.lock().take());
    }
}

/// Announces this `filepuff lsp` for `engine`'s root ([`Presence`]) — at once, so agents whose
/// editor session just ended know another is on its way ([`announce`]) — and returns a handle
/// that [`Announced::host`] turns into the agents' socket.
pub fn announce(engine: Arc<Engine>) -> Announced {
    let presence = match Presence::announce(engine.workspace().root()) {
        Ok(presence) => Some(presence),
        Err(err) => {
            tracing::warn!("cannot announce this editor session to agents: {err}");
            None
        }
    };
    Announced { engine, presence }
}

/// A `filepuff lsp` announced for its root, not serving agents yet (see [`announce`]).
pub struct Announced {
    engine: Arc<Engine>,
    presence: Option<Presence>,
}

impl Announced {
    /// Binds the socket or, when another live `filepuff lsp` owns it, waits to take it over;
    /// then keeps it for the session (see [`host`]).
    pub async fn host(self) -> Host {
        host_with(self.engine, self.presence).await
    }
}

/// The MCP face's side of an editor session for the LSP face ([`AgentDoor`]):
/// the workspace's Unix socket ([`socket_path`], [`announce`], [`Announced::host`]).
pub struct SocketDoor;

impl AgentDoor for SocketDoor {
    fn announce(&self, engine: Arc<Engine>) -> Box<dyn AnnouncedDoor> {
        Box::new(announce(engine))
    }

    fn address(&self, root: &Path) -> PathBuf {
        socket_path(root)
    }
}

impl AnnouncedDoor for Announced {
    fn open(self: Box<Self>) -> futures::future::BoxFuture<'static, Box<dyn OpenDoor>> {
        Box::pin(async move { Box::new(self.host().await) as Box<dyn OpenDoor> })
    }
}

impl OpenDoor for Host {
    fn is_serving(&self) -> bool {
        Host::is_serving(self)
    }
}

/// Announces this `filepuff lsp` for `engine`'s root ([`Presence`]), binds its socket or, when
/// another live `filepuff lsp` owns it, waits to take it over; then keeps the socket for the
/// session (rebinding it if the file is removed behind its back). Runs on the current tokio
/// runtime; never fails: problems are logged and retried every [`TAKEOVER_POLL`].
pub async fn host(engine: Arc<Engine>) -> Host {
    announce(engine).host().await
}

async fn host_with(engine: Arc<Engine>, presence: Option<Presence>) -> Host {
    let listener = Arc::new(Mutex::new(None));
    let mut state = Keeper { owner: None, last_error: None, waiting_since: None };
    state.attempt(&engine, &listener).await;
    let task = tokio::spawn({
        let listener = listener.clone();
        async move {
            loop {
                tokio::time::sleep(TAKEOVER_POLL).await;
                state.tick(&engine, &listener).await;
            }
        }
    });
    Host { listener, task, _presence: presence }
}

/// What [`host`]'s loop knows between checks.
struct Keeper {
    /// The live owner of the socket, when another `filepuff lsp` holds it.
    owner: Option<Process>,
    /// The last error logged (each new one is logged once).
    last_error: Option<String>,
    /// Since when this session waits for the socket.
    waiting_since: Option<Instant>,
}

impl Keeper {
    async fn tick(&mut self, engine: &Arc<Engine>, slot: &Arc<Mutex<Option<Listener>>>) {
        {
            let mut current = slot.lock();
            match current.as_ref() {
                Some(listener) if listener.is_current() => return,
                Some(listener) => {
                    tracing::warn!(
                        "the agent socket {} was removed or replaced; binding it again",
                        listener.path.display()
                    );
                    // Its file is not ours any more: dropping it leaves the file alone.
                    *current = None;
                }
                None => {}
            }
        }
        // Waiting: cheap checks first, so a live owner is not connected to every tick.
        let path = socket_path(engine.workspace().root());
        if let Some(owner) = self.owner
            && owner.is_alive()
            && std::fs::symlink_metadata(&path).is_ok()
        {
            return;
        }
        self.attempt(engine, slot).await;
    }

    async fn attempt(&mut self, engine: &Arc<Engine>, slot: &Arc<Mutex<Option<Listener>>>) {
        match listen(engine.clone()).await {
            Ok(listener) => {
                match (self.waiting_since.take(), self.owner.take()) {
                    (Some(since), Some(owner)) => tracing::info!(
                        "agents attach on {} (taken over from pid {} {} ms after it was first seen)",
                        listener.path().display(),
                        owner.pid,
                        since.elapsed().as_millis()
                    ),
                    _ => tracing::info!("agents attach on {}", listener.path().display()),
                }
                self.last_error = None;
                *slot.lock() = Some(listener);
            }
            Err(err) => {
                self.waiting_since.get_or_insert_with(Instant::now);
                if let ListenError::Owned { owner: Some(pid), .. } = &err {
                    self.owner = Some(Process::of(*pid));
                }
                let message = match &err {
                    ListenError::Owned { .. } => format!("{err}; this one takes the socket over when it exits"),
                    ListenError::Io(_) => format!("agents cannot attach to this session yet: {err}"),
                };
                if self.last_error.as_ref() != Some(&message) {
                    tracing::warn!("{message}");
                    self.last_error = Some(message);
                }
            }
        }
    }
}

/// The toolsets for `flag` (`--toolsets`), else `[mcp] toolsets`, else the defaults.
pub fn toolsets(engine: &Engine, flag: Option<&str>) -> Result<ToolsetSelection, String> {
    if let Some(list) = flag {
        return ToolsetSelection::parse_list(list).map_err(|m| format!("--toolsets: {m}"));
    }
    match &engine.workspace().config().mcp.toolsets {
        Some(names) => ToolsetSelection::parse(names).map_err(|m| format!("[mcp] toolsets: {m}")),
        None => Ok(ToolsetSelection::default()),
    }
}

type BoxRead = Box<dyn AsyncRead + Send + Unpin>;

async fn serve_connection(engine: Arc<Engine>, stream: tokio::net::UnixStream) -> anyhow::Result<()> {
    let (read, write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut first = Vec::new();
    reader.read_until(b'\n', &mut first).await?;
    if first.is_empty() {
        // A probe (another filepuff lsp learning who owns the socket): nothing to serve.
        return Ok(());
    }
    let options = serde_json::from_slice::<Value>(&first).ok().and_then(|v| v.get("filepuff").cloned());
    let input: BoxRead = match options {
        Some(_) => Box::new(reader),
        // Plain MCP from the first byte: give the line back.
        None => Box::new(tokio::io::AsyncReadExt::chain(std::io::Cursor::new(first), reader)),
    };
    let flag = options.as_ref().and_then(|o| o.get("toolsets")).and_then(Value::as_str);
    let toolsets = toolsets(&engine, flag).map_err(anyhow::Error::msg)?;
    // The same line guard as stdio: a malformed line is answered, never the end of the session.
    let service = crate::mcp::McpServer::with_toolsets(engine, toolsets).serve_lines(input, write).await?;
    service.waiting().await?;
    Ok(())
}

/// Connects to the socket of `root` if a `filepuff lsp` of this user serves it (the directory
/// must be private to this user, and the peer's uid ours). Returns the stream and the owner's
/// pid (from its credentials).
pub async fn connect(root: &Path) -> Option<(tokio::net::UnixStream, Option<u32>)> {
    let path = socket_path(root);
    if !is_private_dir(path.parent()?) {
        return None;
    }
    let stream =
        tokio::time::timeout(Duration::from_secs(1), tokio::net::UnixStream::connect(&path)).await.ok()?.ok()?;
    let credentials = stream.peer_cred().ok()?;
    if credentials.uid() != current_uid() {
        tracing::warn!("{} belongs to another user's process: not attaching", path.display());
        return None;
    }
    Some((stream, credentials.pid().and_then(|p| u32::try_from(p).ok())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_directory_open_to_others_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("filepuff");
        private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = private_dir(&dir).unwrap_err();
        assert!(err.to_string().contains("accessible to other users"), "{err}");
        assert!(!is_private_dir(&dir));
    }

    #[test]
    fn a_process_is_known_by_pid_and_start_time() {
        let me = Process::of(std::process::id());
        assert!(me.start.is_some() && me.is_alive());
        let reused = Process { pid: me.pid, start: me.start.map(|s| s + 1) };
        assert!(!reused.is_alive(), "a different start time is another process");
        assert!(!Process::of(u32::MAX - 1).is_alive());
    }

    fn engine(root: &Path) -> Arc<Engine> {
        Arc::new(Engine::new(crate::workspace::Workspace::open(root).unwrap()))
    }

    #[tokio::test]
    async fn a_waiting_session_takes_the_socket_over_when_the_owner_goes() {
        let root = tempfile::tempdir().unwrap();
        let first = host(engine(root.path())).await;
        assert!(first.is_serving());
        let second = host(engine(root.path())).await;
        assert!(!second.is_serving(), "the live owner keeps the socket");
        tokio::time::sleep(TAKEOVER_POLL * 2).await;
        assert!(first.is_serving() && !second.is_serving());
        let gone = Instant::now();
        drop(first);
        while !second.is_serving() {
            assert!(gone.elapsed() < Duration::from_secs(5), "no takeover");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(gone.elapsed() <= TAKEOVER_POLL + Duration::from_millis(100), "{:?}", gone.elapsed());
        let path = socket_path(root.path());
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let (_stream, owner) = connect(root.path()).await.expect("the new owner accepts");
        assert_eq!(owner, Some(std::process::id()));
        drop(second);
        assert!(!path.exists(), "the last owner removes the socket");
    }

    #[tokio::test]
    async fn stale_sockets_are_replaced_and_owners_unlink_only_their_own() {
        let root = tempfile::tempdir().unwrap();
        let path = socket_path(root.path());
        private_dir(path.parent().unwrap()).unwrap();
        // Left by a killed filepuff lsp: the file, nobody accepting.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        let old = listen(engine(root.path())).await.expect("the stale file is replaced");
        assert!(old.is_current());
        // Its file removed behind its back and bound by another session:
        std::fs::remove_file(&path).unwrap();
        let new = listen(engine(root.path())).await.unwrap();
        assert!(!old.is_current() && new.is_current());
        drop(old);
        assert!(path.exists() && new.is_current(), "an owner that is not current leaves the file alone");
        match listen(engine(root.path())).await {
            Err(ListenError::Owned { owner, .. }) => assert_eq!(owner, Some(std::process::id())),
            other => panic!("a live owner keeps the socket: {:?}", other.map(|l| l.path().to_path_buf())),
        }
    }
}
