//! Agents attaching to an editor's Engine (DESIGN.md "The faces"): `filepuff lsp` serves MCP
//! on a per-workspace Unix socket; `filepuff mcp` finds that socket for its root and bridges its
//! stdio to it, so the agent sees the editor's unsaved buffers and shares its warm language
//! servers. Without a socket, `filepuff mcp` runs an Engine of its own.
//!
//! - **Where**: `/run/user/UID/filepuff/` when the user's runtime directory exists, else
//!   `/tmp/filepuff-UID/` — never from environment variables (`XDG_RUNTIME_DIR`, `TMPDIR`),
//!   which MCP clients strip from the servers they start, so the editor's process and the
//!   agent's would look in different places. The directory is created mode 0700 and refused if
//!   another user owns it. The socket is `<first 16 hex digits of sha256(canonical
//!   root)>.sock`, mode 0600.
//! - **Stale sockets** (a `filepuff lsp` killed with -9): at start, a socket file nobody accepts
//!   on is removed and bound anew; one that accepts belongs to a live `filepuff lsp` for the same
//!   root, which keeps serving (the second editor's agents attach to the first one).
//! - **Protocol**: the bridge first sends one line, `{"filepuff":{"toolsets":"core,lsp"}}`, then
//!   MCP's stdio framing (newline-delimited JSON-RPC) both ways. A client that starts with MCP
//!   directly gets the configured toolsets.
//! - **The editor exits**: requests in flight get a JSON-RPC error saying so; the bridge then
//!   starts an Engine of its own, replays the agent's `initialize` to it, and goes on standalone.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::engine::Engine;
use crate::tools::toolsets::ToolsetSelection;

/// The directory sockets live in (see the module documentation).
pub fn runtime_dir() -> PathBuf {
    let uid = current_uid();
    let user_runtime = PathBuf::from(format!("/run/user/{uid}"));
    match std::fs::metadata(&user_runtime) {
        Ok(metadata) if metadata.is_dir() && metadata.uid() == uid => user_runtime.join("filepuff"),
        _ => PathBuf::from(format!("/tmp/filepuff-{uid}")),
    }
}

fn current_uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0)
}

/// The socket of the workspace at `root` (canonicalised first, so every spelling of a root
/// finds the same socket).
pub fn socket_path(root: &Path) -> PathBuf {
    use sha2::Digest;
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    runtime_dir().join(format!("{name}.sock"))
}

/// Creates `dir` private (0700), or checks an existing one is ours and private.
fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let metadata = std::fs::symlink_metadata(dir)?;
    if !metadata.is_dir() || metadata.uid() != current_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is not a directory of this user", dir.display()),
        ));
    }
    if metadata.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The socket `filepuff lsp` serves; the file is removed when this is dropped.
pub struct Listener {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    /// The socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Serves MCP sessions on `engine`'s socket, on the current tokio runtime.
///
/// Errors: the directory is not private to this user; another live `filepuff lsp` already
/// serves this root (`AddrInUse`); the socket cannot be bound.
pub fn listen(engine: Arc<Engine>) -> io::Result<Listener> {
    let path = socket_path(engine.workspace().root());
    private_dir(path.parent().unwrap_or(Path::new("/")))?;
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(&path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("another filepuff lsp serves this workspace on {}", path.display()),
            ));
        }
        tracing::info!("removing the stale socket {}", path.display());
        std::fs::remove_file(&path)?;
    }
    let listener = tokio::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let engine = engine.clone();
                    tokio::spawn(async move {
                        if let Err(err) = serve_connection(engine, stream).await {
                            tracing::debug!("agent session ended: {err:#}");
                        }
                    });
                }
                Err(err) => {
                    tracing::warn!("socket accept failed: {err}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(Listener { path, task })
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
    use rmcp::ServiceExt;
    let (read, write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut first = Vec::new();
    reader.read_until(b'\n', &mut first).await?;
    let options = serde_json::from_slice::<Value>(&first).ok().and_then(|v| v.get("filepuff").cloned());
    let input: BoxRead = match options {
        Some(_) => Box::new(reader),
        // Plain MCP from the first byte: give the line back.
        None => Box::new(tokio::io::AsyncReadExt::chain(std::io::Cursor::new(first), reader)),
    };
    let flag = options.as_ref().and_then(|o| o.get("toolsets")).and_then(Value::as_str);
    let toolsets = toolsets(&engine, flag).map_err(anyhow::Error::msg)?;
    let service = crate::mcp::McpServer::with_toolsets(engine, toolsets).serve((input, write)).await?;
    service.waiting().await?;
    Ok(())
}

/// Connects to the socket of `root` if a `filepuff lsp` serves it.
pub fn connect(root: &Path) -> Option<std::os::unix::net::UnixStream> {
    std::os::unix::net::UnixStream::connect(socket_path(root)).ok()
}

/// What the bridge remembers to go on standalone if the editor goes away.
#[derive(Default)]
struct Replay {
    /// The agent's `initialize` request line and its id.
    initialize: Option<(String, Value)>,
    /// Its `notifications/initialized` line.
    initialized: Option<String>,
    /// Ids of the agent's requests not answered yet.
    pending: Vec<Value>,
}

/// Bridges stdin/stdout to the editor's Engine over `stream` until stdin ends; if the editor
/// goes away first, continues with `fallback` (an Engine of this process) as a standalone MCP
/// server. `toolsets` is sent to the editor's side and used for the fallback.
pub async fn bridge(
    stream: std::os::unix::net::UnixStream,
    toolsets: Option<String>,
    fallback: Arc<Engine>,
) -> anyhow::Result<()> {
    stream.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(stream)?;
    let (read, mut write) = stream.into_split();
    let hello = json!({ "filepuff": { "toolsets": toolsets } }).to_string() + "\n";
    write.write_all(hello.as_bytes()).await?;
    let mut upstream_lines = BufReader::new(Box::new(read) as BoxRead).lines();
    let mut upstream_write: Box<dyn AsyncWrite + Send + Unpin> = Box::new(write);
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut replay = Replay::default();
    let mut attached = true;
    loop {
        tokio::select! {
            line = stdin.next_line() => {
                let Some(line) = line? else { break };
                remember(&mut replay, &line);
                upstream_write.write_all(line.as_bytes()).await?;
                upstream_write.write_all(b"\n").await?;
                upstream_write.flush().await?;
            }
            line = upstream_lines.next_line() => {
                match line {
                    Ok(Some(line)) => {
                        if let Ok(message) = serde_json::from_str::<Value>(&line)
                            && message.get("method").is_none()
                            && let Some(id) = message.get("id")
                        {
                            replay.pending.retain(|p| p != id);
                        }
                        stdout.write_all(line.as_bytes()).await?;
                        stdout.write_all(b"\n").await?;
                        stdout.flush().await?;
                    }
                    _ if !attached => anyhow::bail!("the standalone MCP server stopped"),
                    _ => {
                        // The editor's filepuff is gone: fail what was in flight, go standalone.
                        attached = false;
                        tracing::warn!("the editor's filepuff session ended; continuing standalone");
                        for id in std::mem::take(&mut replay.pending) {
                            let error = json!({ "jsonrpc": "2.0", "id": id, "error": {
                                "code": -32603,
                                "message": "the editor's filepuff session ended while this request ran; \
                                            filepuff continues standalone (files on disk, its own language \
                                            servers): retry the request",
                            }});
                            stdout.write_all(format!("{error}\n").as_bytes()).await?;
                        }
                        stdout.flush().await?;
                        let (lines, writer) = standalone(&fallback, toolsets.as_deref(), &replay).await?;
                        upstream_lines = lines;
                        upstream_write = writer;
                    }
                }
            }
        }
    }
    Ok(())
}

fn remember(replay: &mut Replay, line: &str) {
    let Ok(message) = serde_json::from_str::<Value>(line) else { return };
    let method = message.get("method").and_then(Value::as_str);
    match (method, message.get("id")) {
        (Some("initialize"), Some(id)) => replay.initialize = Some((line.to_owned(), id.clone())),
        (Some("notifications/initialized"), None) => replay.initialized = Some(line.to_owned()),
        (Some(_), Some(id)) => replay.pending.push(id.clone()),
        _ => {}
    }
}

type Upstream = (tokio::io::Lines<BufReader<BoxRead>>, Box<dyn AsyncWrite + Send + Unpin>);

/// Starts an MCP server on `engine` in this process, over an in-memory pipe, and replays the
/// agent's handshake to it (its answer to `initialize` is not passed on: the agent has one).
async fn standalone(engine: &Arc<Engine>, toolsets: Option<&str>, replay: &Replay) -> anyhow::Result<Upstream> {
    use rmcp::ServiceExt;
    let selection = self::toolsets(engine, toolsets).map_err(anyhow::Error::msg)?;
    let (server_side, bridge_side) = tokio::io::duplex(1 << 20);
    let server = crate::mcp::McpServer::with_toolsets(engine.clone(), selection);
    tokio::spawn(async move {
        match server.serve(server_side).await {
            Ok(service) => {
                let _ = service.waiting().await;
            }
            Err(err) => tracing::warn!("standalone MCP server: {err}"),
        }
    });
    let (read, mut write) = tokio::io::split(bridge_side);
    let mut lines = BufReader::new(Box::new(read) as BoxRead).lines();
    if let Some((initialize, id)) = &replay.initialize {
        write.write_all(format!("{initialize}\n").as_bytes()).await?;
        write.flush().await?;
        while let Some(line) = lines.next_line().await? {
            if serde_json::from_str::<Value>(&line).ok().and_then(|m| m.get("id").cloned()).as_ref() == Some(id) {
                break;
            }
        }
        if let Some(initialized) = &replay.initialized {
            write.write_all(format!("{initialized}\n").as_bytes()).await?;
            write.flush().await?;
        }
    }
    Ok((lines, Box::new(write)))
}
