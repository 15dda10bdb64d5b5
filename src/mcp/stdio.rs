//! The line guard in front of the MCP session on a byte stream (stdio): what rmcp's own
//! newline-delimited transport would drop silently or end the session on, answered or ignored
//! as JSON-RPC 2.0 and MCP say, so that no input ends a session but the end of the stream.
//!
//! - A line that is not JSON gets a `-32700` Parse error with `"id": null` (JSON-RPC 2.0
//!   §5.1); rmcp drops it without an answer.
//! - JSON that is not a message MCP knows: a request (it has `method` and `id`) gets `-32600`
//!   Invalid Request with its id; a notification or a response is ignored (JSON-RPC never
//!   answers those); anything else gets `-32600` with `"id": null`.
//! - Before an `initialize` request, notifications and responses are ignored (MCP 2025-11-25,
//!   "Lifecycle": the client sends only pings before the server answered `initialize`); rmcp
//!   ends the session on them. Requests go through: rmcp answers a ping, and an error for
//!   others.
//! - A line over [`MAX_LINE_BYTES`] is dropped unread and answered `-32600` with `"id": null`.

pub mod threads;

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// Longest line read, in bytes (rmcp's own default: what the HTTP transport accepts).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line of newline-delimited JSON-RPC, as [`LineReader`] reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line's bytes, without its `\n` (a `\r` before it is kept).
    Whole(Vec<u8>),
    /// A line over the reader's limit, dropped unread.
    Oversized,
}

/// Reads a byte stream as lines of at most `max` bytes each, without ever holding more than
/// `max` bytes of one line: what a peer sends past the limit is skipped up to its next line
/// break. Cancel-safe: a line read in part is kept across cancelled [`LineReader::next`] calls
/// (rmcp and the bridge poll it in a `select!`).
pub struct LineReader<R> {
    read: BufReader<R>,
    max: usize,
    /// The line being read.
    line: Vec<u8>,
    /// Dropping the rest of a line over `max`.
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Lines of at most `max` bytes (line break included) from `read`.
    pub fn new(read: R, max: usize) -> LineReader<R> {
        LineReader { read: BufReader::with_capacity(64 * 1024, read), max, line: Vec::new(), discarding: false }
    }

    /// The next line, or `None` once the stream ended or failed (a last line without a line
    /// break is dropped, as rmcp's own transport does).
    pub async fn next(&mut self) -> Option<Line> {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    tracing::warn!("reading JSON-RPC lines: {err}");
                    return None;
                }
            };
            if available.is_empty() {
                return None;
            }
            let (taken, done) = match memchr::memchr(b'\n', available) {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            if done && !self.discarding && self.line.is_empty() && taken <= self.max {
                // The whole line is in the buffer (the usual case): one copy, of its size.
                let line = available[..taken - 1].to_vec();
                self.read.consume(taken);
                return Some(Line::Whole(line));
            }
            if !self.discarding {
                if self.line.len() + taken > self.max {
                    self.discarding = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&available[..taken]);
                }
            }
            self.read.consume(taken);
            if done {
                if std::mem::take(&mut self.discarding) {
                    return Some(Line::Oversized);
                }
                let mut line = std::mem::take(&mut self.line);
                line.pop();
                return Some(Line::Whole(line));
            }
        }
    }
}

/// An MCP server transport over a reader and a writer of newline-delimited JSON-RPC, with the
/// guard described in the module docs.
pub struct GuardedTransport<R, W> {
    read: LineReader<R>,
    write: Arc<Mutex<Sink<W>>>,
    /// Whether an `initialize` request went through.
    initialized: bool,
}

impl<R, W> GuardedTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading requests from `read` and writing answers to `write`.
    pub fn new(read: R, write: W) -> GuardedTransport<R, W> {
        GuardedTransport {
            read: LineReader::new(read, MAX_LINE_BYTES),
            write: Arc::new(Mutex::new(Sink { write, line: Vec::new() })),
            initialized: false,
        }
    }

    /// Writes one JSON value as a line, on a task of its own: `receive` may be cancelled at
    /// any await (rmcp polls it in a `select!`), and a half-written answer would corrupt the
    /// stream.
    fn answer(&self, message: Value) {
        let write = self.write.clone();
        tokio::spawn(async move {
            if let Err(err) = write.lock().await.send(&message).await {
                tracing::warn!("MCP stdout: {err}");
            }
        });
    }

    /// What to do with one line: a message for rmcp, or nothing (after answering, if needed).
    fn handle(&mut self, line: &[u8]) -> Option<ClientJsonRpcMessage> {
        let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        // The common case, parsed once; what fails is parsed again to be classified.
        if let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(line) {
            return self.admit(message);
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(err) => {
                self.answer(error(Value::Null, -32700, &format!("Parse error: {err}")));
                return None;
            }
        };
        let id = value.get("id").cloned().filter(|id| !id.is_null());
        let method = value.get("method").and_then(Value::as_str).map(str::to_owned);
        let message = match serde_json::from_value::<ClientJsonRpcMessage>(value) {
            Ok(message) => message,
            Err(err) => {
                match (method, id) {
                    (Some(_), Some(id)) => self.answer(error(id, -32600, &format!("Invalid Request: {err}"))),
                    (Some(method), None) => tracing::debug!("ignoring an invalid notification {method}: {err}"),
                    (None, Some(_)) => tracing::debug!("ignoring an invalid response: {err}"),
                    (None, None) => self.answer(error(Value::Null, -32600, &format!("Invalid Request: {err}"))),
                }
                return None;
            }
        };
        self.admit(message)
    }

    /// `message` for rmcp, unless it is a notification or response before `initialize`.
    fn admit(&mut self, message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        if !self.initialized {
            match &message {
                JsonRpcMessage::Request(request) => {
                    if matches!(request.request, ClientRequest::InitializeRequest(_)) {
                        self.initialized = true;
                    }
                }
                _ => {
                    tracing::debug!("ignoring a notification or response before initialize");
                    return None;
                }
            }
        }
        Some(message)
    }
}

/// A JSON-RPC 2.0 error object for `id` (`null` when it could not be read).
fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

impl<R, W> Transport<RoleServer> for GuardedTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "filepuff stdio".into()
    }

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write.lock().await.send_message(item).await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let line = match self.read.next().await? {
                Line::Whole(line) => line,
                Line::Oversized => {
                    self.answer(error(
                        Value::Null,
                        -32600,
                        &format!("Invalid Request: a line over {MAX_LINE_BYTES} bytes"),
                    ));
                    continue;
                }
            };
            let trimmed = line.strip_suffix(b"\r").unwrap_or(&line);
            if trimmed.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Some(message) = self.handle(trimmed) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.write.flush().await
    }
}

/// The writer of a transport's answers, with the buffer each answer is serialised into: kept
/// from one answer to the next (an answer of tens of KB is not grown from empty each time),
/// unless it grew past [`Sink::KEPT_BYTES`].
struct Sink<W> {
    write: W,
    line: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Sink<W> {
    /// Capacity kept for the next answer.
    const KEPT_BYTES: usize = 1 << 20;

    /// Writes `message` as one line and flushes it: a tool result's `structuredContent` that the
    /// tool's worker serialised ([`super::structured`]) goes out as that text.
    ///
    /// Errors: as [`Sink::send`].
    async fn send_message(&mut self, mut message: ServerJsonRpcMessage) -> std::io::Result<()> {
        let structured = tool_result(&mut message).and_then(super::structured::take);
        self.line.clear();
        serde_json::to_writer(&mut self.line, &message)?;
        if let Some(json) = structured
            && !super::structured::splice(&mut self.line, &json)
        {
            // Not the shape rmcp writes a response in: the text goes back in as a value.
            if let Some(result) = tool_result(&mut message) {
                result.structured_content = Some(serde_json::from_str(&json)?);
            }
            self.line.clear();
            serde_json::to_writer(&mut self.line, &message)?;
        }
        self.finish().await
    }

    /// Writes `message` as one line and flushes it.
    ///
    /// Errors: serialising failed (a map with non-string keys), or the write did.
    async fn send(&mut self, message: &impl serde::Serialize) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, message)?;
        self.finish().await
    }

    /// Ends the line in the buffer, writes it and flushes.
    async fn finish(&mut self) -> std::io::Result<()> {
        self.line.push(b'\n');
        let written = self.write.write_all(&self.line).await;
        if self.line.capacity() > Self::KEPT_BYTES {
            self.line = Vec::new();
        }
        written?;
        self.write.flush().await
    }
}

/// The tool result `message` answers with, if it is one.
fn tool_result(message: &mut ServerJsonRpcMessage) -> Option<&mut rmcp::model::CallToolResult> {
    match message {
        JsonRpcMessage::Response(response) => match &mut response.result {
            ServerResult::CallToolResult(result) => Some(result),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Feeds `input` to a guard and returns the messages it passes on and what it wrote back.
    async fn run(input: &str) -> (Vec<ClientJsonRpcMessage>, Vec<Value>) {
        let (mut answers_read, answers_write) = tokio::io::duplex(1 << 16);
        let mut guard = GuardedTransport::new(std::io::Cursor::new(input.as_bytes().to_vec()), answers_write);
        let mut passed = Vec::new();
        while let Some(message) = guard.receive().await {
            passed.push(message);
        }
        drop(guard);
        let mut written = String::new();
        answers_read.read_to_string(&mut written).await.unwrap();
        (passed, written.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
    }

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    /// Issue 16: a malformed JSON line on stdio got no -32700 answer.
    #[tokio::test]
    async fn malformed_lines_get_a_parse_error_with_id_null() {
        let (passed, written) = run(&format!("{{not json\n{INITIALIZE}\n")).await;
        assert_eq!(passed.len(), 1);
        assert_eq!(written.len(), 1);
        assert_eq!(written[0]["error"]["code"], -32700);
        assert!(written[0]["id"].is_null() && written[0].as_object().unwrap().contains_key("id"));
    }

    /// Issue 16: `filepuff mcp` exited when a notification or response came before `initialize`.
    #[tokio::test]
    async fn notifications_and_responses_before_initialize_are_ignored() {
        let input = format!(
            "{}\n{}\n{}\n{INITIALIZE}\n{}\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        let (passed, written) = run(&input).await;
        assert!(written.is_empty(), "{written:?}");
        assert_eq!(passed.len(), 2, "initialize, then the notification after it");
        assert!(
            matches!(&passed[0], JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)))
        );
        assert!(matches!(&passed[1], JsonRpcMessage::Notification(_)));
    }

    #[tokio::test]
    async fn invalid_requests_are_answered_with_their_id() {
        let input = format!(
            "{INITIALIZE}\n{}\n{}\n[]\n\n",
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":7}"#, "42"
        );
        let (passed, written) = run(&input).await;
        assert_eq!(passed.len(), 1);
        assert_eq!(written.len(), 3, "{written:?}");
        assert_eq!((written[0]["id"].clone(), written[0]["error"]["code"].clone()), (json!("x"), json!(-32600)));
        assert!(written[1]["id"].is_null() && written[2]["id"].is_null());
    }

    fn response(result: rmcp::model::CallToolResult) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::Response(rmcp::model::JsonRpcResponse {
            jsonrpc: rmcp::model::JsonRpcVersion2_0,
            id: rmcp::model::NumberOrString::Number(7),
            result: ServerResult::CallToolResult(result),
        })
    }

    /// The line the transport's writer writes for `message`, parsed.
    async fn written(message: ServerJsonRpcMessage) -> Value {
        let mut sink = Sink { write: Vec::new(), line: Vec::new() };
        sink.send_message(message).await.unwrap();
        let line = sink.write.strip_suffix(b"\n").expect("one line");
        serde_json::from_slice(line).unwrap()
    }

    /// A placeholder is written as the value it stands for would have been, in success and
    /// error results, with and without `_meta`, for the outputs' shapes (nested objects,
    /// arrays, strings that need escaping).
    #[tokio::test]
    async fn a_deferred_structured_content_is_written_as_its_value_would_be() {
        let outputs = [
            json!({"files": [{"file": "a \"b\"\n.go", "references": [{"line": 1, "column": 2, "text": "x…\u{1}"}]}], "total": 1}),
            json!({}),
            json!({"definitions": [], "answer": {"server": "gopls", "completeness": "complete"}}),
        ];
        for output in outputs {
            for error in [false, true] {
                for meta in [false, true] {
                    let make = |structured: Value| {
                        let mut result = if error {
                            rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text("failed")])
                        } else {
                            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text("rendered")])
                        };
                        result.structured_content = Some(structured);
                        if meta {
                            let mut object = serde_json::Map::new();
                            object.insert("k".to_owned(), json!(1));
                            result.meta = Some(rmcp::model::MetaObject(object));
                        }
                        result
                    };
                    let expected = serde_json::to_value(response(make(output.clone()))).unwrap();
                    let deferred = response(make(super::super::structured::deferred(output.to_string())));
                    assert_eq!(written(deferred).await, expected);
                }
            }
        }
    }
}
