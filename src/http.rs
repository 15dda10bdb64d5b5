//! `filepuff serve --http ADDR`: the MCP face over Streamable HTTP (MCP 2025-11-25
//! "Transports"), for agents that cannot spawn a process.
//!
//! Safe by default, since any local process (or a web page, through the browser) can reach a
//! local port:
//! - **Loopback only** unless `--allow-remote` is given: a non-loopback `ADDR` is refused.
//! - **A bearer token per start**: 32 random bytes, hex, written to a file only this user can
//!   read (0600, in the private runtime directory of [`crate::attach`]) whose path is printed on
//!   stderr. Every request must carry `Authorization: Bearer TOKEN`; without it, or with another
//!   one, the answer is 401 and nothing runs. Tokens are compared in constant time.
//! - **Origin and Host checked** (DNS rebinding): a request with an `Origin` header must come
//!   from `http://127.0.0.1:PORT` or `http://localhost:PORT` (403 otherwise); `Host` must name a
//!   loopback host (rmcp's validation).

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::engine::Engine;
use crate::mcp::McpServer;
use crate::tools::toolsets::ToolsetSelection;

/// Where the token of the server for `engine`'s workspace on `port` is written.
pub fn token_path(engine: &Engine, port: u16) -> PathBuf {
    let socket = crate::attach::socket_path(engine.workspace().root());
    let stem = socket.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    socket.with_file_name(format!("{stem}-{port}.http-token"))
}

/// 32 bytes from the kernel's random source, as 64 hex digits.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `token` to `path`, readable by this user only; a file left by an earlier start is
/// replaced.
fn write_token(path: &std::path::Path, token: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(path);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")
}

/// Serves MCP over Streamable HTTP on `addr` until the process is stopped.
///
/// Errors: a non-loopback `addr` without `allow_remote`; the port cannot be bound; the token
/// file cannot be written.
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
    let token_file = token_path(&engine, local.port());
    write_token(&token_file, &token)?;
    let port = local.port();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins([format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")]);
    if allow_remote && !addr.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let mcp = StreamableHttpService::new(
        move || Ok(McpServer::with_toolsets(engine.clone(), toolsets.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    eprintln!("filepuff: MCP (Streamable HTTP) on http://{local}/mcp; bearer token in {}", token_file.display());
    let service = Authorized { inner: mcp, token: Arc::from(token) };
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper_util::service::TowerToHyperService::new(service);
            if let Err(err) = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await {
                tracing::debug!("HTTP connection: {err}");
            }
        });
    }
}

type Response = http::Response<BoxBody<Bytes, Infallible>>;

/// The MCP service behind a bearer-token check.
#[derive(Clone)]
struct Authorized<S> {
    inner: S,
    token: Arc<str>,
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
        Box::pin(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
        assert!(!same(&a.as_bytes()[..63], a.as_bytes()));
    }
}
