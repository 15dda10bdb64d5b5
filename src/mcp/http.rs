//! `filepuff serve --http ADDR`: the MCP face over Streamable HTTP (MCP 2025-11-25
//! "Transports"), for agents that cannot spawn a process.
//!
//! Safe by default, since any local process (or a web page, through the browser) can reach a
//! local port:
//! - **Loopback only** unless `--allow-remote` is given: a non-loopback `ADDR` is refused.
//! - **A bearer token per start**: 32 random bytes, hex, written to a file only this user can
//!   read (0600, in the private runtime directory of [`crate::mcp::attach`]) whose path is printed on
//!   stderr. Every request must carry `Authorization: Bearer TOKEN`; without it, or with another
//!   one, the answer is 401 and nothing runs. Tokens are compared in constant time.
//! - **Origin and Host checked** (DNS rebinding): a request with an `Origin` header must come
//!   from `http://127.0.0.1:PORT` or `http://localhost:PORT` (403 otherwise); `Host` must name a
//!   loopback host (rmcp's validation).
//!
//! And hard to stop without the token (anyone who can reach the port can open connections):
//! - **A bound on connections**: at most [`MAX_CONNECTIONS`] (fewer when the file-descriptor
//!   limit is low: a quarter of `RLIMIT_NOFILE`) are served at once; further ones wait in the
//!   kernel's accept queue.
//! - **A header-read timeout**: a connection that has not sent a whole request head within
//!   [`HEADER_READ_TIMEOUT`] of starting one (or of going idle between requests) is closed, so
//!   idle or byte-a-second connections do not hold their slot.
//! - **Accept errors are logged and survived**: out of file descriptors (`EMFILE`, `ENFILE`) or
//!   memory, the loop pauses [`ACCEPT_ERROR_PAUSE`] and goes on; a connection reset before it
//!   was accepted is skipped.
//! - **SIGTERM and SIGINT** end the server cleanly: the token file is removed.
//!
//! Ending a session (`DELETE` with its `Mcp-Session-Id`, MCP 2025-11-25 "Transports", Session
//! Management) is answered `200 OK` with an empty body, as the TypeScript SDK's server answers
//! and both SDKs' clients expect (the Python SDK logs anything but 200/204 as a failure; rmcp
//! answers 202); an unknown or already ended session is `404 Not Found`, as the spec asks for
//! every request naming a terminated session.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::engine::Engine;
use crate::mcp::McpServer;
use crate::tools::toolsets::ToolsetSelection;

/// Connections served at once, at most.
pub const MAX_CONNECTIONS: usize = 256;

/// How long a connection may take to send a request head (from its first byte, or from going
/// idle after a response) before it is closed.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Pause after an accept error caused by exhausted resources (file descriptors, memory).
pub const ACCEPT_ERROR_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Where the token of the server for `engine`'s workspace on `port` is written.
pub fn token_path(engine: &Engine, port: u16) -> PathBuf {
    let socket = crate::mcp::attach::socket_path(engine.workspace().root());
    let stem = socket.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    socket.with_file_name(format!("{stem}-{port}.http-token"))
}

/// 32 bytes from the kernel's random source, as 64 hex digits.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `token` to `path`, readable by this user only, and holds an advisory lock
/// (`flock(2)`) on it for as long as the returned file is open: the mark of a live server, which
/// [`prune_token_files`] leaves alone. The file is written and locked under a temporary name
/// and renamed into place, so it is never seen unlocked; a file left by an earlier start is
/// replaced.
fn write_token(path: &Path, token: &str) -> std::io::Result<std::fs::File> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary)?;
    let written = file.lock().and_then(|()| file.write_all(format!("{token}\n").as_bytes()));
    if let Err(err) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(err);
    }
    Ok(file)
}

/// Removes the token files in `dir` whose server is gone: no process holds the lock
/// [`write_token`] takes (a server killed with SIGKILL, or one that crashed, could not remove
/// its own). Returns how many were removed. Files of live servers, and anything that is not a
/// regular `*.http-token` file, are left alone.
fn prune_token_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.ends_with(".http-token") || name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(file) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path) else {
            continue;
        };
        let Ok(held) = file.metadata() else { continue };
        if !held.is_file() || file.try_lock().is_err() {
            continue;
        }
        // Still the file locked? (A new server on the same port may have renamed its own in.)
        let same = std::fs::symlink_metadata(&path).is_ok_and(|now| now.dev() == held.dev() && now.ino() == held.ino());
        if same && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The token file, removed when dropped (the server stopped, by a signal or an error); its
/// lock is held while it lives.
struct TokenFile {
    path: PathBuf,
    _locked: std::fs::File,
}

impl Drop for TokenFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Connections served at once: [`MAX_CONNECTIONS`], or a quarter of the soft `RLIMIT_NOFILE`
/// when that is lower (files, language servers and walks need descriptors too), at least 4.
fn connection_limit() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if !known || limit.rlim_cur == libc::RLIM_INFINITY {
        return MAX_CONNECTIONS;
    }
    usize::try_from(limit.rlim_cur / 4).unwrap_or(MAX_CONNECTIONS).clamp(4, MAX_CONNECTIONS)
}

/// Whether an accept error means a resource ran out (then the loop pauses before retrying).
fn exhausted(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// Serves MCP over Streamable HTTP on `addr` until SIGTERM or SIGINT (then the token file is
/// removed and this returns `Ok`).
///
/// Errors: a non-loopback `addr` without `allow_remote`; the port cannot be bound; the token
/// file cannot be written. Errors accepting a connection are logged and survived.
pub async fn serve(
    engine: Arc<Engine>,
    addr: SocketAddr,
    allow_remote: bool,
    toolsets: ToolsetSelection,
) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() && !allow_remote {
        anyhow::bail!("{addr} is not a loopback address; pass --allow-remote to serve other machines");
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let token = random_token()?;
    let path = token_path(&engine, local.port());
    if let Some(dir) = path.parent() {
        let pruned = prune_token_files(dir);
        if pruned > 0 {
            tracing::info!("removed {pruned} token files of HTTP servers that are gone");
        }
    }
    let token_file = TokenFile { _locked: write_token(&path, &token)?, path };
    let port = local.port();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins([format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")]);
    if allow_remote && !addr.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(
        move || Ok(McpServer::with_toolsets(engine.clone(), toolsets.clone())),
        sessions.clone(),
        config,
    );
    eprintln!("filepuff: MCP (Streamable HTTP) on http://{local}/mcp; bearer token in {}", token_file.path.display());
    let service = Authorized { inner: mcp, token: Arc::from(token), sessions };
    let slots = Arc::new(tokio::sync::Semaphore::new(connection_limit()));
    let stop = crate::signals::stop_signal();
    tokio::pin!(stop);
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit?,
            _ = &mut stop => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                tracing::warn!("serve --http: cannot accept a connection: {err}");
                if exhausted(&err) {
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
                continue;
            }
        };
        let service = service.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper_util::service::TowerToHyperService::new(service);
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(io, service)
                .await;
            if let Err(err) = served {
                tracing::debug!("HTTP connection: {err}");
            }
            drop(permit);
        });
    }
    drop(token_file);
    eprintln!("filepuff: stopped; token file removed");
    Ok(())
}

type Response = http::Response<BoxBody<Bytes, Infallible>>;

/// The MCP service behind a bearer-token check, with `DELETE` answered as the SDKs expect.
#[derive(Clone)]
struct Authorized<S> {
    inner: S,
    token: Arc<str>,
    sessions: Arc<LocalSessionManager>,
}

/// The `Mcp-Session-Id` header (MCP 2025-11-25 "Transports").
const SESSION_ID: &str = "mcp-session-id";

/// A `404 Not Found` with the JSON-RPC error body the TypeScript SDK's server sends for an
/// unknown session.
fn session_not_found() -> Response {
    let body = serde_json::json!({ "jsonrpc": "2.0", "error": { "code": -32001, "message": "Session not found" }, "id": null });
    let body = Full::new(Bytes::from(body.to_string())).map_err(|never| match never {}).boxed();
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// Compares without leaking, through timing, how much of `given` matched.
fn same(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

fn refuse(status: http::StatusCode, message: &str) -> Response {
    let body = Full::new(Bytes::from(format!("{message}\n"))).map_err(|never| match never {}).boxed();
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    if status == http::StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    response
}

impl<S, B> tower::Service<http::Request<B>> for Authorized<S>
where
    S: tower::Service<http::Request<B>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let given = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same(given.trim().as_bytes(), self.token.as_bytes()) {
            return Box::pin(std::future::ready(Ok(refuse(
                http::StatusCode::UNAUTHORIZED,
                "missing or wrong bearer token (see the token file filepuff printed at start)",
            ))));
        }
        if request.method() != http::Method::DELETE {
            return Box::pin(self.inner.call(request));
        }
        // Ending a session: 404 for one that is not (or no longer) there, 200 for one ended.
        let session = request.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()).map(Arc::<str>::from);
        let (mut inner, sessions) = (self.inner.clone(), self.sessions.clone());
        Box::pin(async move {
            use rmcp::transport::streamable_http_server::session::SessionManager;
            if let Some(id) = &session
                && !sessions.has_session(id).await.unwrap_or(false)
            {
                return Ok(session_not_found());
            }
            let mut response = inner.call(request).await?;
            if response.status() == http::StatusCode::ACCEPTED {
                *response.status_mut() = http::StatusCode::OK;
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
        assert!(!same(&a.as_bytes()[..63], a.as_bytes()));
    }

    /// A token file whose server is gone (nobody holds its lock) is pruned; a live server's is
    /// not, until that server lets go of it.
    #[test]
    fn token_files_of_servers_that_are_gone_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("HASH-8765.http-token");
        let held = write_token(&live, "live").unwrap();
        assert_eq!(std::fs::read_to_string(&live).unwrap(), "live\n");
        assert_eq!(std::fs::metadata(&live).unwrap().permissions().mode() & 0o777, 0o600);
        let stale = dir.path().join("HASH-9999.http-token");
        std::fs::write(&stale, "stale\n").unwrap();
        let other = dir.path().join("HASH.1234.editor");
        std::fs::write(&other, "{}").unwrap();
        assert_eq!(prune_token_files(dir.path()), 1);
        assert!(live.exists() && !stale.exists() && other.exists());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
        drop(held);
        assert_eq!(prune_token_files(dir.path()), 1);
        assert!(!live.exists());
    }
}
