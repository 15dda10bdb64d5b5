//! Unit tests of the LSP face against in-process fake servers (`crate::tests::fake_lsp`): a
//! test "editor" speaks framed JSON-RPC to [`super::serve`] over a socket pair (so the editor's
//! frame guard is in the path), and the backends reach the fake servers over in-memory streams
//! (through the servers' `BoundedReader`). No external program runs.
//!
//! Columns the tests expect are computed here, by hand, from the fixture text (UTF-16 units
//! with `encode_utf16`, UTF-8 bytes with `str::find`), never through `documents::position`.

mod encoding;
mod server_side;
mod traffic;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use crate::engine::Engine;
use crate::engine::agents::{AgentDoor, AnnouncedDoor, OpenDoor};
use crate::tests::fake_lsp::{FakeServer, WAIT};

/// No agents' door: these tests drive the editor side only.
struct NoAgents;

impl AgentDoor for NoAgents {
    fn announce(&self, _engine: Arc<Engine>) -> Box<dyn AnnouncedDoor> {
        Box::new(NoAgents)
    }

    fn address(&self, root: &std::path::Path) -> PathBuf {
        root.join("no-agents")
    }
}

impl AnnouncedDoor for NoAgents {
    fn open(self: Box<Self>) -> BoxFuture<'static, Box<dyn OpenDoor>> {
        Box::pin(async { Box::new(NoAgents) as Box<dyn OpenDoor> })
    }
}

impl OpenDoor for NoAgents {
    fn is_serving(&self) -> bool {
        false
    }
}

/// Everything the proxy sent the editor, in order, and a signal on each new message.
struct Inbox {
    messages: Mutex<Vec<Value>>,
    changed: tokio::sync::watch::Sender<u64>,
}

/// A test editor: one `filepuff lsp` session over a socket pair, in a temporary workspace.
pub(super) struct Editor {
    writer: tokio::sync::Mutex<tokio::net::unix::OwnedWriteHalf>,
    inbox: Arc<Inbox>,
    next_id: AtomicI64,
    /// The workspace root (a temporary directory).
    pub dir: tempfile::TempDir,
    session: tokio::task::JoinHandle<()>,
}

/// A server of the test's workspace: its `[servers.NAME]` name, the fake behind it, and the
/// `position_encoding` filepuff offers it (None: the editor's).
pub(super) struct Server<'a> {
    /// `[servers.NAME]`.
    pub name: &'a str,
    /// The fake whose program is the server's command.
    pub fake: &'a FakeServer,
    /// `position_encoding` ("utf-8", "utf-16", "utf-32"), or None.
    pub encoding: Option<&'a str>,
}

impl Editor {
    /// Writes `files` (path relative to the root, text) and a `filepuff.toml` making `servers`
    /// serve Go (in that order), starts a session, and runs `initialize` (the editor offering
    /// `encodings`, e.g. `["utf-16"]`) and `initialized`.
    pub async fn start(files: &[(&str, &str)], servers: &[Server<'_>], encodings: &[&str]) -> Editor {
        Editor::start_with(files, servers, encodings, "").await
    }

    /// As [`Editor::start`], with `config` (TOML) at the start of `filepuff.toml`.
    pub async fn start_with(
        files: &[(&str, &str)],
        servers: &[Server<'_>],
        encodings: &[&str],
        config: &str,
    ) -> Editor {
        let capabilities = json!({
            "general": { "positionEncodings": encodings },
            "workspace": { "applyEdit": true, "workspaceEdit": { "documentChanges": true } },
            "textDocument": {
                "synchronization": { "didSave": true },
                "hover": { "contentFormat": ["markdown", "plaintext"] },
                "definition": { "linkSupport": true },
                "publishDiagnostics": { "versionSupport": true }
            },
            "window": { "workDoneProgress": true }
        });
        Editor::start_declaring(files, servers, config, capabilities).await
    }

    /// As [`Editor::start_with`], the editor declaring `capabilities` (its whole
    /// `ClientCapabilities`) in `initialize`.
    pub async fn start_declaring(
        files: &[(&str, &str)],
        servers: &[Server<'_>],
        config: &str,
        capabilities: Value,
    ) -> Editor {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = format!("{config}\n");
        for server in servers {
            config +=
                &format!("[servers.{}]\ncommand = [{:?}]\nlanguages = [\"go\"]\n", server.name, server.fake.program());
            if let Some(encoding) = server.encoding {
                config += &format!("position_encoding = {encoding:?}\n");
            }
        }
        let names: Vec<String> = servers.iter().map(|s| format!("{:?}", s.name)).collect();
        config += &format!("[languages.go]\nservers = [{}]\n", names.join(", "));
        std::fs::write(dir.path().join("filepuff.toml"), config).expect("filepuff.toml");
        for (path, text) in files {
            std::fs::write(dir.path().join(path), text).expect("a fixture file");
        }

        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        // The path `filepuff lsp` takes when an editor gives it pipes or sockets.
        let input = std::os::fd::OwnedFd::from(theirs.try_clone().expect("a second handle"));
        let stream = super::EditorStream::Fds { input, output: theirs.into() };
        let session = tokio::spawn(async move {
            let result = super::serve(stream, None, Arc::new(NoAgents)).await;
            if let Err(err) = result {
                tracing::warn!("the session ended: {err}");
            }
        });
        ours.set_nonblocking(true).expect("nonblocking");
        let (reader, writer) = tokio::net::UnixStream::from_std(ours).expect("a tokio stream").into_split();
        let inbox = Arc::new(Inbox { messages: Mutex::new(Vec::new()), changed: tokio::sync::watch::Sender::new(0) });
        tokio::spawn(read_frames(reader, inbox.clone()));
        let editor =
            Editor { writer: tokio::sync::Mutex::new(writer), inbox, next_id: AtomicI64::new(1), dir, session };

        let id = editor
            .request(
                "initialize",
                json!({ "processId": null, "rootUri": editor.uri(""), "capabilities": capabilities }),
            )
            .await;
        let answer = editor.answer(id).await.expect("initialize succeeds");
        assert!(answer.get("capabilities").is_some(), "initialize answered {answer}");
        editor.notify("initialized", json!({})).await;
        editor
    }

    /// The editor's URI of `path` (relative to the root; "" is the root).
    pub fn uri(&self, path: &str) -> String {
        let url = lsp_types::Url::from_file_path(self.dir.path().join(path)).expect("an absolute path");
        url.to_string()
    }

    /// Opens `path` (Go) at version 1 with `text`.
    pub async fn open(&self, path: &str, text: &str) {
        let params =
            json!({ "textDocument": { "uri": self.uri(path), "languageId": "go", "version": 1, "text": text } });
        self.notify("textDocument/didOpen", params).await;
    }

    async fn send(&self, message: Value) {
        let body = message.to_string();
        let mut writer = self.writer.lock().await;
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        writer.write_all(frame.as_bytes()).await.expect("the session reads");
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params })).await;
    }

    /// Sends a request and returns its id.
    pub async fn request(&self, method: &str, params: Value) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        id
    }

    /// The answer to our request `id`: its result, or its error object. Panics after [`WAIT`].
    pub async fn answer(&self, id: i64) -> Result<Value, Value> {
        let message = self
            .wait_for(&format!("the answer to request {id}"), |m| {
                (m.get("id") == Some(&json!(id)) && m.get("method").is_none()).then(|| m.clone())
            })
            .await;
        match message.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// The first request `method` the session sent the editor: (its id, its params).
    pub async fn server_request(&self, method: &str) -> (Value, Value) {
        self.wait_for(&format!("a {method} request"), |m| {
            (m.get("method") == Some(&json!(method)) && m.get("id").is_some())
                .then(|| (m["id"].clone(), m.get("params").cloned().unwrap_or(Value::Null)))
        })
        .await
    }

    /// The first `count` requests `method` the session sent the editor, (id, params) each.
    pub async fn server_requests(&self, method: &str, count: usize) -> Vec<(Value, Value)> {
        self.wait_for_all(&format!("{count} {method} request(s)"), |messages| {
            let found: Vec<(Value, Value)> = messages
                .iter()
                .filter(|m| m.get("method") == Some(&json!(method)) && m.get("id").is_some())
                .map(|m| (m["id"].clone(), m.get("params").cloned().unwrap_or(Value::Null)))
                .take(count)
                .collect();
            (found.len() == count).then_some(found)
        })
        .await
    }

    /// Every notification `method` received so far (params).
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        let messages = self.inbox.messages.lock();
        messages
            .iter()
            .filter(|m| m.get("method") == Some(&json!(method)) && m.get("id").is_none())
            .map(|m| m.get("params").cloned().unwrap_or(Value::Null))
            .collect()
    }

    /// Answers the session's request `id` with `result`.
    pub async fn respond(&self, id: Value, result: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "result": result })).await;
    }

    /// The params of the first notification `method` for which `accept` holds.
    pub async fn notification(&self, method: &str, accept: impl Fn(&Value) -> bool) -> Value {
        self.wait_for(&format!("a {method} notification"), |m| {
            let params = m.get("params")?;
            (m.get("method") == Some(&json!(method)) && m.get("id").is_none() && accept(params)).then(|| params.clone())
        })
        .await
    }

    /// Waits until `found` returns something for one of the messages received, at most
    /// [`WAIT`]; panics naming `what` after that.
    async fn wait_for<T>(&self, what: &str, found: impl Fn(&Value) -> Option<T>) -> T {
        self.wait_for_all(what, |messages| messages.iter().find_map(&found)).await
    }

    /// Waits until `found` returns something for the messages received so far, at most
    /// [`WAIT`]; panics naming `what` after that.
    async fn wait_for_all<T>(&self, what: &str, found: impl Fn(&[Value]) -> Option<T>) -> T {
        let mut changes = self.inbox.changed.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(value) = found(&self.inbox.messages.lock()) {
                return value;
            }
            if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
                panic!("the editor never received {what}; it received {:#?}", self.inbox.messages.lock());
            }
        }
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        self.session.abort();
    }
}

/// Reads the session's frames into `inbox` until the stream ends.
async fn read_frames(reader: tokio::net::unix::OwnedReadHalf, inbox: Arc<Inbox>) {
    let mut reader = tokio::io::BufReader::new(reader);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length:") {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let Some(length) = length else { return };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&body) else { return };
        inbox.messages.lock().push(message);
        inbox.changed.send_modify(|n| *n += 1);
    }
}

/// The `(line, character)` of byte offset `at` in `text`, characters in UTF-16 code units.
pub(super) fn utf16_position(text: &str, at: usize) -> (u64, u64) {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    (before.matches('\n').count() as u64, before[line_start..].encode_utf16().count() as u64)
}

/// The `(line, character)` of byte offset `at` in `text`, characters in UTF-8 bytes.
pub(super) fn utf8_position(text: &str, at: usize) -> (u64, u64) {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    (before.matches('\n').count() as u64, (at - line_start) as u64)
}

/// A `Range` JSON in UTF-16 units for bytes `start..end` of `text`.
pub(super) fn utf16_range(text: &str, start: usize, end: usize) -> Value {
    let (sl, sc) = utf16_position(text, start);
    let (el, ec) = utf16_position(text, end);
    json!({ "start": { "line": sl, "character": sc }, "end": { "line": el, "character": ec } })
}

/// The byte offset of the `n`th (0-based) occurrence of `needle` in `text`.
pub(super) fn nth(text: &str, needle: &str, n: usize) -> usize {
    text.match_indices(needle).nth(n).unwrap_or_else(|| panic!("{needle:?} #{n} is not in the fixture")).0
}
