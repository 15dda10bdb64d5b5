//! The agent's side of attaching: `filepuff mcp`'s stdio bridged to the MCP server of the
//! editor's `filepuff lsp` over its socket, or to an MCP server of this process (its own Engine,
//! files on disk) while no editor serves the root — switching as owners come and go:
//!
//! - **Attached, the editor's session ends** (the editor quit, or is restarting its server):
//!   requests in flight get a JSON-RPC error saying so; the bridge then looks for a new owner
//!   of the socket for [`OWNER_SEARCH`] (every [`OWNER_POLL`]) and attaches to it, else goes
//!   standalone.
//! - **Standalone**: before forwarding each request (when none is in flight on the standalone
//!   server), the bridge tries the socket and attaches as soon as an owner accepts. While
//!   standalone, results say they come from the disk when an editor runs for the root
//!   ([`super::DiskNotice`]).
//! - **Switching** replays the agent's `initialize` and `notifications/initialized` to the new
//!   server; its answer to `initialize` is not passed on (the agent has one), unless the agent
//!   was still waiting for it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::{BoxRead, DiskNotice};
use crate::engine::Engine;
use crate::mcp::stdio::threads::{self, Stdout};
use crate::mcp::{Line, LineReader, MAX_LINE_BYTES};

/// How long the bridge looks for a new owner of the socket after the editor's session ended,
/// before it goes standalone.
pub const OWNER_SEARCH: Duration = Duration::from_secs(3);

/// How long [`OWNER_SEARCH`] extends while a `filepuff lsp` for the root has announced itself
/// but does not serve agents yet.
pub const OWNER_SEARCH_ANNOUNCED: Duration = Duration::from_secs(15);

/// How often it tries the socket meanwhile.
pub const OWNER_POLL: Duration = Duration::from_millis(100);

/// Longest wait for a server's answer to the replayed `initialize`.
const HANDSHAKE: Duration = Duration::from_secs(20);

/// What the bridge remembers to replay the agent's handshake to a new server.
#[derive(Default)]
struct Replay {
    /// The agent's `initialize` request line and its id.
    initialize: Option<(Vec<u8>, Value)>,
    /// Whether the agent has its answer to `initialize`.
    initialize_answered: bool,
    /// Its `notifications/initialized` line.
    initialized: Option<Vec<u8>>,
    /// Ids of the agent's requests not answered yet.
    pending: Vec<Value>,
}

/// Where the agent's messages go now.
struct Upstream {
    lines: LineReader<BoxRead>,
    write: Box<dyn AsyncWrite + Send + Unpin>,
    /// The owner's pid (when its credentials said) when attached to an editor's `filepuff lsp`;
    /// `None` when standalone.
    editor: Option<Option<u32>>,
}

impl Upstream {
    async fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        send_line(&mut self.write, line).await
    }

    /// The server's next line; `None` once its stream ended. An oversized line (over
    /// [`MAX_LINE_BYTES`]) is dropped with a warning.
    async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            match self.lines.next().await? {
                Line::Whole(line) => return Some(line),
                Line::Oversized => {
                    tracing::warn!("dropped a line over {MAX_LINE_BYTES} bytes from {}", self.describe())
                }
            }
        }
    }

    fn describe(&self) -> String {
        match self.editor {
            Some(Some(pid)) => format!("the editor's filepuff lsp (pid {pid})"),
            Some(None) => "the editor's filepuff lsp".to_owned(),
            None => "this process's own Engine (files on disk)".to_owned(),
        }
    }
}

/// Serves the agent on stdin/stdout until stdin ends: attached to the `filepuff lsp` that owns
/// `root`'s socket when there is one, else standalone on `fallback` (an Engine of this
/// process), switching as described in the module documentation. `toolsets` (the
/// `--toolsets` flag) is sent to the editor's side and used for the fallback.
///
/// Errors: stdin or stdout failed, or the standalone MCP server stopped.
pub async fn bridge(root: &Path, toolsets: Option<String>, fallback: Arc<Engine>) -> anyhow::Result<()> {
    let toolsets = toolsets.as_deref();
    let (stdin, mut stdout, writer) = threads::open();
    let mut stdin = LineReader::new(stdin, MAX_LINE_BYTES);
    let result = relay(root, toolsets, &fallback, &mut stdin, &mut stdout).await;
    // The answers flushed last reach the agent before the process exits.
    drop(stdout);
    tokio::task::spawn_blocking(move || writer.wait(crate::mcp::STDOUT_DRAIN)).await.ok();
    result
}

async fn relay(
    root: &Path,
    toolsets: Option<&str>,
    fallback: &Arc<Engine>,
    stdin: &mut LineReader<threads::Stdin>,
    stdout: &mut Stdout,
) -> anyhow::Result<()> {
    let mut replay = Replay::default();
    let mut upstream = match connect_or_await_starting(root).await {
        Some((stream, pid)) => match attach(stream, pid, toolsets, &mut replay, stdout).await {
            Ok(attached) => attached,
            Err(err) => {
                tracing::warn!("cannot attach to the editor's filepuff: {err:#}; continuing standalone");
                standalone(root, fallback, toolsets, &mut replay, stdout).await?
            }
        },
        None => standalone(root, fallback, toolsets, &mut replay, stdout).await?,
    };
    tracing::info!("serving the agent with {}", upstream.describe());
    let mut unchanged = DirWatch::default();
    loop {
        tokio::select! {
            line = stdin.next() => {
                let line = match line {
                    None => break,
                    Some(Line::Whole(line)) => line,
                    Some(Line::Oversized) => {
                        let error = json!({ "jsonrpc": "2.0", "id": null, "error": {
                            "code": -32600, "message": format!("Invalid Request: a line over {MAX_LINE_BYTES} bytes"),
                        }});
                        send_line(stdout, error.to_string().as_bytes()).await?;
                        continue;
                    }
                };
                let request = remember(&mut replay, &line);
                // Standalone, nothing else in flight: attach if an editor serves the root now
                // (looked for again only once the runtime directory changed: an editor that
                // starts announces itself and binds its socket there).
                if request
                    && upstream.editor.is_none()
                    && replay.pending.len() == 1
                    && unchanged.changed()
                    && let Some((stream, pid)) = connect_or_await_starting(root).await
                {
                    match attach(stream, pid, toolsets, &mut replay, stdout).await {
                        Ok(attached) => {
                            upstream = attached;
                            tracing::info!("attached to {}", upstream.describe());
                            // Its language servers are the editor's now: stop this process's.
                            let engine = fallback.clone();
                            tokio::task::spawn_blocking(move || engine.backends().stop_all());
                        }
                        Err(err) => tracing::warn!("cannot attach to the editor's filepuff: {err:#}"),
                    }
                }
                if let Err(err) = upstream.send(&line).await {
                    if upstream.editor.is_none() {
                        anyhow::bail!("the standalone MCP server stopped: {err}");
                    }
                    // The editor's session ended before this line reached it: the requests
                    // before it are lost, this one goes to the next server.
                    tracing::warn!("the session of {} ended", upstream.describe());
                    let id = Envelope::of(&line).and_then(|m| m.id);
                    replay.pending.retain(|p| Some(p) != id.as_ref());
                    fail_pending(&mut replay, stdout).await?;
                    replay.pending.extend(id.filter(|_| request));
                    upstream = next_upstream(root, fallback, toolsets, &mut replay, stdout).await?;
                    tracing::info!("serving the agent with {}", upstream.describe());
                    // The handshake lines were replayed already.
                    let replayed = replay.initialize.as_ref().is_some_and(|(init, _)| *init == line)
                        || replay.initialized.as_deref() == Some(line.as_slice());
                    if !replayed {
                        upstream.send(&line).await?;
                    }
                }
            }
            line = upstream.next_line() => {
                match line {
                    Some(line) => {
                        settle(&mut replay, &line);
                        send_line(stdout, &line).await?;
                    }
                    None if upstream.editor.is_none() => anyhow::bail!("the standalone MCP server stopped"),
                    None => {
                        tracing::warn!("the session of {} ended", upstream.describe());
                        fail_pending(&mut replay, stdout).await?;
                        upstream = next_upstream(root, fallback, toolsets, &mut replay, stdout).await?;
                        tracing::info!("serving the agent with {}", upstream.describe());
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether the runtime directory (where editors announce themselves and bind their sockets)
/// changed since the last look that found no editor. Directory times tick coarsely, so a look
/// made within [`DIR_SETTLED`] of the last change does not count ("racy git").
#[derive(Default)]
struct DirWatch {
    looked_at: Option<std::time::SystemTime>,
}

const DIR_SETTLED: Duration = Duration::from_millis(100);

impl DirWatch {
    /// True (look again) unless the directory is as it was at the last settled look; records
    /// this look.
    fn changed(&mut self) -> bool {
        let modified = std::fs::metadata(super::runtime_dir()).and_then(|m| m.modified()).ok();
        if modified.is_some() && modified == self.looked_at {
            return false;
        }
        let settled = modified.and_then(|m| m.elapsed().ok()).is_some_and(|age| age >= DIR_SETTLED);
        self.looked_at = if settled { modified } else { None };
        true
    }
}

/// How recent an editor session's announcement must be for an agent to wait for it to serve.
const STARTING: Duration = Duration::from_secs(5);

/// The socket of `root`'s editor; when there is none but an editor session announced itself
/// within [`STARTING`] (it serves agents once its editor has opened its documents), waits for
/// its socket as long as the announcement is that recent — rather than reading the disk under
/// buffers the editor is about to open.
async fn connect_or_await_starting(root: &Path) -> Option<(tokio::net::UnixStream, Option<u32>)> {
    loop {
        if let Some(found) = super::connect(root).await {
            return Some(found);
        }
        if !super::editor_starting(root, STARTING) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// After the editor's session ended: the socket's next owner if one accepts within
/// [`OWNER_SEARCH`], else a standalone server.
async fn next_upstream(
    root: &Path,
    fallback: &Arc<Engine>,
    toolsets: Option<&str>,
    replay: &mut Replay,
    stdout: &mut Stdout,
) -> anyhow::Result<Upstream> {
    let started = Instant::now();
    // Longer while an editor's filepuff lsp for the root has announced itself: it is starting
    // (a restart) and serves agents once its editor has opened its documents again.
    while started.elapsed() < OWNER_SEARCH
        || (started.elapsed() < OWNER_SEARCH_ANNOUNCED && !super::running_editors(root).is_empty())
    {
        if let Some((stream, pid)) = super::connect(root).await {
            match attach(stream, pid, toolsets, replay, stdout).await {
                Ok(attached) => {
                    tracing::info!("found a new owner after {} ms", started.elapsed().as_millis());
                    return Ok(attached);
                }
                Err(err) => tracing::warn!("cannot attach to the editor's filepuff: {err:#}"),
            }
        }
        tokio::time::sleep(OWNER_POLL).await;
    }
    standalone(root, fallback, toolsets, replay, stdout).await
}

/// Answers every request in flight with an error: its server is gone.
async fn fail_pending(replay: &mut Replay, stdout: &mut Stdout) -> std::io::Result<()> {
    for id in std::mem::take(&mut replay.pending) {
        let error = json!({ "jsonrpc": "2.0", "id": id, "error": {
            "code": -32603,
            "message": "the editor's filepuff session ended while this request ran; filepuff attaches to its \
                        successor, or continues standalone (files on disk, its own language servers): retry \
                        the request",
        }});
        stdout.write_all(format!("{error}\n").as_bytes()).await?;
    }
    stdout.flush().await
}

/// Writes `line` and a line break, flushed: one message to the agent or the server.
async fn send_line(write: &mut (impl AsyncWrite + Unpin + ?Sized), line: &[u8]) -> std::io::Result<()> {
    write.write_all(line).await?;
    write.write_all(b"\n").await?;
    write.flush().await
}

/// The fields of a JSON-RPC message the bridge looks at (the rest is skipped, not built into
/// values: answers can be megabytes).
#[derive(serde::Deserialize)]
struct Envelope {
    method: Option<String>,
    /// Present (`null` included) or not.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
}

impl Envelope {
    fn of(line: &[u8]) -> Option<Envelope> {
        Envelope::answer_head(line).or_else(|| serde_json::from_slice(line).ok())
    }

    /// An answer as rmcp writes one, `{"jsonrpc":"2.0","id":ID,"result":…}` (or `"error"`),
    /// read from its head: the bridge needs only the id, and a `find_references` answer is tens
    /// of kilobytes to skip through otherwise. `None` for any other shape (a request, another
    /// key order, spaces): [`Envelope::of`] then reads the whole line.
    fn answer_head(line: &[u8]) -> Option<Envelope> {
        let rest = line.strip_prefix(br#"{"jsonrpc":"2.0","id":"#)?;
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
        let id = values.next()?.ok().filter(|id| id.is_number() || id.is_string())?;
        let after = &rest[values.byte_offset()..];
        (after.starts_with(br#","result":"#) || after.starts_with(br#","error":"#))
            .then_some(Envelope { method: None, id: Some(id) })
    }
}

fn present<'de, D: serde::Deserializer<'de>>(value: D) -> Result<Option<Value>, D::Error> {
    serde::Deserialize::deserialize(value).map(Some)
}

/// Notes what the agent sent; true for a request other than `initialize`.
fn remember(replay: &mut Replay, line: &[u8]) -> bool {
    let Some(message) = Envelope::of(line) else { return false };
    match (message.method.as_deref(), message.id) {
        (Some("initialize"), Some(id)) => {
            replay.initialize = Some((line.to_owned(), id));
            replay.initialize_answered = false;
            false
        }
        (Some("notifications/initialized"), None) => {
            replay.initialized = Some(line.to_owned());
            false
        }
        (Some(_), Some(id)) => {
            replay.pending.push(id);
            true
        }
        _ => false,
    }
}

/// Notes an answer that goes to the agent.
fn settle(replay: &mut Replay, line: &[u8]) {
    let Some(Envelope { method: None, id: Some(id) }) = Envelope::of(line) else { return };
    if replay.initialize.as_ref().is_some_and(|(_, init)| *init == id) {
        replay.initialize_answered = true;
    }
    replay.pending.retain(|p| *p != id);
}

/// Attaches to the editor's MCP server on `stream`: the options line, then the agent's
/// handshake replayed.
async fn attach(
    stream: tokio::net::UnixStream,
    pid: Option<u32>,
    toolsets: Option<&str>,
    replay: &mut Replay,
    stdout: &mut Stdout,
) -> anyhow::Result<Upstream> {
    let (read, write) = stream.into_split();
    let mut upstream = Upstream {
        lines: LineReader::new(Box::new(read) as BoxRead, MAX_LINE_BYTES),
        write: Box::new(write),
        editor: Some(pid),
    };
    upstream.send(json!({ "filepuff": { "toolsets": toolsets } }).to_string().as_bytes()).await?;
    handshake(&mut upstream, replay, stdout).await?;
    Ok(upstream)
}

/// Starts an MCP server on `engine` in this process, over an in-memory pipe, and replays the
/// agent's handshake to it. Its results carry a note while an editor runs for `root`.
async fn standalone(
    root: &Path,
    engine: &Arc<Engine>,
    toolsets: Option<&str>,
    replay: &mut Replay,
    stdout: &mut Stdout,
) -> anyhow::Result<Upstream> {
    let selection = super::toolsets(engine, toolsets).map_err(anyhow::Error::msg)?;
    let (server_side, bridge_side) = tokio::io::duplex(1 << 20);
    let notice = DiskNotice::new(
        root,
        format!(
            "no filepuff lsp accepts agents on {} right now; filepuff mcp attaches at the next request once one does",
            super::socket_path(root).display()
        ),
    );
    let server =
        crate::mcp::McpServer::with_toolsets(engine.clone(), selection).with_disk_notice(notice).on_own_thread();
    tokio::spawn(async move {
        // The same line guard as every MCP byte stream: what the agent sends reaches it as sent.
        let (read, write) = tokio::io::split(server_side);
        match server.serve_lines(read, write).await {
            Ok(service) => {
                let _ = service.waiting().await;
            }
            Err(err) => tracing::warn!("standalone MCP server: {err}"),
        }
    });
    let (read, write) = tokio::io::split(bridge_side);
    let mut upstream = Upstream {
        lines: LineReader::new(Box::new(read) as BoxRead, MAX_LINE_BYTES),
        write: Box::new(write),
        editor: None,
    };
    handshake(&mut upstream, replay, stdout).await?;
    Ok(upstream)
}

/// Replays the agent's `initialize` (waiting for the answer, which goes to the agent only if it
/// is still waiting for one) and `notifications/initialized`. Nothing to do before the agent
/// sent `initialize`.
async fn handshake(upstream: &mut Upstream, replay: &mut Replay, stdout: &mut Stdout) -> anyhow::Result<()> {
    let Some((initialize, id)) = replay.initialize.clone() else { return Ok(()) };
    upstream.send(&initialize).await?;
    let answer = tokio::time::timeout(HANDSHAKE, async {
        while let Some(line) = upstream.next_line().await {
            if Envelope::of(&line).is_some_and(|m| m.method.is_none() && m.id.as_ref() == Some(&id)) {
                return Some(line);
            }
        }
        None
    })
    .await
    .map_err(|_| anyhow::anyhow!("no answer to initialize within {} s", HANDSHAKE.as_secs()))?;
    let Some(answer) = answer else { anyhow::bail!("the server closed the connection during initialize") };
    if !replay.initialize_answered {
        settle(replay, &answer);
        send_line(stdout, &answer).await?;
    }
    if let Some(initialized) = &replay.initialized {
        upstream.send(initialized).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_and_requests_in_flight_are_remembered() {
        let mut replay = Replay::default();
        assert!(!remember(&mut replay, br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#));
        assert!(!remember(&mut replay, br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
        assert!(!replay.initialize_answered);
        settle(&mut replay, br#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
        assert!(replay.initialize_answered);
        assert!(remember(&mut replay, br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#));
        assert!(remember(&mut replay, br#"{"jsonrpc":"2.0","id":"b","method":"tools/list"}"#));
        assert!(!remember(&mut replay, br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#));
        assert_eq!(replay.pending, vec![json!(1), json!("b")]);
        // A server's request to the agent is not an answer.
        settle(&mut replay, br#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#);
        settle(&mut replay, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(replay.pending, vec![json!("b")]);
        assert!(replay.initialized.is_some() && replay.initialize.is_some());
    }

    #[test]
    fn an_answer_is_read_from_its_head_as_the_whole_line_reads_it() {
        let whole =
            |line: &[u8]| serde_json::from_slice::<Envelope>(line).ok().map(|envelope| (envelope.method, envelope.id));
        let result = rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text("x".repeat(100))]);
        let answers = [
            serde_json::to_vec(&rmcp::model::ServerJsonRpcMessage::response(
                rmcp::model::ServerResult::CallToolResult(result),
                rmcp::model::NumberOrString::Number(7),
            ))
            .unwrap(),
            serde_json::to_vec(&rmcp::model::ServerJsonRpcMessage::error(
                rmcp::model::ErrorData::internal_error("no", None),
                Some(rmcp::model::NumberOrString::String("a\"b".into())),
            ))
            .unwrap(),
        ];
        for answer in &answers {
            let head = Envelope::answer_head(answer).map(|envelope| (envelope.method, envelope.id));
            assert!(head.is_some(), "not read from its head: {}", String::from_utf8_lossy(answer));
            assert_eq!(head, whole(answer));
        }
        // Other shapes are read whole.
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#[..],
            br#"{"jsonrpc":"2.0","id":{"x":1},"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            br#"{"id":3,"jsonrpc":"2.0","result":{}}"#,
        ] {
            assert!(Envelope::answer_head(line).is_none());
        }
        assert_eq!(Envelope::of(br#"{"id":3,"jsonrpc":"2.0","result":{}}"#).and_then(|e| e.id), Some(json!(3)));
    }
}
