//! The LSP base protocol read from an untrusted peer with bounded memory: `Content-Length: N`
//! headers, a blank line, then N bytes of JSON (LSP 3.17 "Base Protocol"). Used on both sides
//! of filepuff: the editor's stream (`proxy/frame.rs`) and each language server's output
//! ([`BoundedReader`], between the process and async-lsp's main loop, which takes its messages
//! decoded).
//!
//! [`Decoder`] does no I/O: bytes go in as they arrive, in pieces of any size, and [`Decoded`]
//! items come out. It holds at most one header line ([`FrameLimits::max_header_bytes`]) or one
//! body ([`FrameLimits::max_body_bytes`]) at a time, and never allocates more than the bytes
//! that actually arrived: a declared length is not trusted. Junk between frames (a server
//! printing to stdout, the rest of a broken body) is skipped line by line until the next
//! `Content-Length` header, which may follow junk on the same line. What to do about a frame
//! over a limit is the caller's policy: the editor side answers it and skips it; the server side
//! stops the server ([`BoundedReader`] fails the stream).
//!
//! The messages filepuff itself sends, to either side, are made here too ([`any_request`],
//! [`any_notification`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// The bound of the `ConcurrencyLayer` in front of each async-lsp main loop, the editor's
/// (`proxy/mod.rs`) and each server's (`backends/client.rs`): requests from that peer handled at
/// once. async-lsp's main loop waits for a free slot before it reads on, and only a request it
/// polls can free one, so with the default (the CPU count, 2 here) a server's third request
/// waiting on the editor (clangd's `semanticTokens/refresh` after a rename) stopped the loop for
/// good. Requests that wait are few and each is bounded by its own timeout: a wide bound.
pub const MAIN_LOOP_CONCURRENCY: std::num::NonZeroUsize = std::num::NonZeroUsize::new(1024).unwrap();

/// An `async_lsp::AnyRequest` of `method` with `params`, made without a trip through JSON: its
/// `params` are moved in, not rebuilt. The id is a placeholder; async-lsp's main loop numbers
/// outgoing requests itself. (The type is `#[non_exhaustive]`, hence the template.)
pub fn any_request(method: impl Into<String>, params: serde_json::Value) -> async_lsp::AnyRequest {
    static EMPTY: std::sync::LazyLock<async_lsp::AnyRequest> = std::sync::LazyLock::new(|| {
        serde_json::from_value(serde_json::json!({ "id": 0, "method": "" })).expect("a request's shape")
    });
    let mut request = EMPTY.clone();
    request.method = method.into();
    request.params = params;
    request
}

/// An `async_lsp::AnyNotification` of `method` with `params` (moved in; see [`any_request`]).
pub fn any_notification(method: impl Into<String>, params: serde_json::Value) -> async_lsp::AnyNotification {
    static EMPTY: std::sync::LazyLock<async_lsp::AnyNotification> = std::sync::LazyLock::new(|| {
        serde_json::from_value(serde_json::json!({ "method": "" })).expect("a notification's shape")
    });
    let mut notification = EMPTY.clone();
    notification.method = method.into();
    notification.params = params;
    notification
}

/// How much one peer may make filepuff hold while reading its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Longest header line, in bytes including its line break. A line of junk between frames
    /// counts too: it is held while it could still contain a `Content-Length` header.
    pub max_header_bytes: usize,
    /// Largest body, in bytes: a larger declared `Content-Length` is refused before anything
    /// is allocated for it.
    pub max_body_bytes: usize,
}

impl FrameLimits {
    /// Limits for a language server's output (`[lsp] max_message_bytes`, `max_header_bytes`):
    /// 64 MiB per message, 64 KiB per header line.
    pub const SERVER_DEFAULT: FrameLimits = FrameLimits { max_header_bytes: 64 << 10, max_body_bytes: 64 << 20 };
}

impl Default for FrameLimits {
    fn default() -> FrameLimits {
        FrameLimits::SERVER_DEFAULT
    }
}

/// One item read from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A whole body of the declared length, as sent (not yet checked as JSON).
    Body(Vec<u8>),
    /// A header section without a usable `Content-Length` (missing, not a number, a line that
    /// is not a header); the stream resynchronises at the next `Content-Length`.
    BadHeader(String),
    /// A line of more than `limit` bytes without a line break, in the headers or between
    /// frames; the rest of the line is skipped.
    HeaderTooLong { limit: usize },
    /// A declared body over `limit` bytes; its bytes are skipped as they arrive, never held.
    BodyTooLarge { declared: u64, limit: usize },
}

impl std::fmt::Display for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decoded::Body(body) => write!(f, "a message of {} bytes", body.len()),
            Decoded::BadHeader(why) => f.write_str(why),
            Decoded::HeaderTooLong { limit } => write!(f, "a header line over {limit} bytes (no line break)"),
            Decoded::BodyTooLarge { declared, limit } => {
                write!(f, "a message declaring Content-Length: {declared}, over the limit of {limit} bytes")
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading header lines (or junk before the first one).
    Header,
    /// Skipping the rest of a line that was too long.
    DiscardLine,
    /// Reading a body of this many bytes.
    Body(usize),
    /// Skipping this many more bytes of a body over the limit.
    Skip(u64),
}

const CONTENT_LENGTH: &[u8] = b"content-length:";

/// The framing state machine (see the module documentation).
#[derive(Debug)]
pub struct Decoder {
    limits: FrameLimits,
    state: State,
    /// The header line read so far.
    line: Vec<u8>,
    /// Whether a `Content-Length` header began the current header section.
    saw_header: bool,
    length: Option<Result<u64, String>>,
    body: Vec<u8>,
    out: VecDeque<Decoded>,
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new(limits: FrameLimits) -> Decoder {
        Decoder {
            limits,
            state: State::Header,
            line: Vec::new(),
            saw_header: false,
            length: None,
            body: Vec::new(),
            out: VecDeque::new(),
        }
    }

    /// Feeds the next bytes of the stream; what they complete is then returned by
    /// [`Decoder::next`].
    pub fn push(&mut self, mut input: &[u8]) {
        while !input.is_empty() {
            match self.state {
                State::Header => {
                    // Bytes the current line may still take, its line break included.
                    let room = self.limits.max_header_bytes.saturating_sub(self.line.len());
                    match memchr::memchr(b'\n', input) {
                        Some(at) if at < room => {
                            self.line.extend_from_slice(&input[..=at]);
                            input = &input[at + 1..];
                            self.header_line();
                        }
                        None if input.len() < room => {
                            self.line.extend_from_slice(input);
                            input = &[];
                        }
                        newline => {
                            self.out.push_back(Decoded::HeaderTooLong { limit: self.limits.max_header_bytes });
                            self.line.clear();
                            self.saw_header = false;
                            self.length = None;
                            match newline {
                                Some(at) => input = &input[at + 1..],
                                None => {
                                    self.state = State::DiscardLine;
                                    input = &[];
                                }
                            }
                        }
                    }
                }
                State::DiscardLine => match memchr::memchr(b'\n', input) {
                    Some(at) => {
                        input = &input[at + 1..];
                        self.state = State::Header;
                    }
                    None => input = &[],
                },
                State::Body(length) => {
                    let take = (length - self.body.len()).min(input.len());
                    self.body.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if self.body.len() == length {
                        self.out.push_back(Decoded::Body(std::mem::take(&mut self.body)));
                        self.state = State::Header;
                    }
                }
                State::Skip(left) => {
                    let take = left.min(input.len() as u64);
                    input = &input[take as usize..];
                    self.state = if take == left { State::Header } else { State::Skip(left - take) };
                }
            }
        }
    }

    /// The next complete item, in stream order.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Decoded> {
        self.out.pop_front()
    }

    /// The end of the stream: a message cut short is reported (as [`Decoded::BadHeader`]);
    /// a partial line of junk is not.
    pub fn finish(&mut self) -> Option<Decoded> {
        let inside = match self.state {
            State::Header => self.saw_header,
            State::DiscardLine => false,
            State::Body(_) | State::Skip(_) => true,
        };
        *self = Decoder::new(self.limits);
        inside.then(|| Decoded::BadHeader("the input ended inside a message".to_owned()))
    }

    /// Bytes held for the frame being read (a header line or a body), for tests of the bound.
    pub fn buffered(&self) -> usize {
        self.line.len() + self.body.len()
    }

    fn header_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let mut end = line.len();
        while end > 0 && matches!(line[end - 1], b'\r' | b'\n') {
            end -= 1;
        }
        let trimmed = &line[..end];
        if trimmed.is_empty() {
            if self.saw_header {
                self.end_of_headers();
            }
            // Else a stray blank line between frames.
        } else if !self.saw_header {
            // Resynchronise: junk (the rest of a broken body) may precede the header on the
            // same line; a line without one is junk between frames, skipped.
            if let Some(at) = find_ascii_case_insensitive(trimmed, CONTENT_LENGTH) {
                self.saw_header = true;
                self.length = Some(parse_length(&trimmed[at + CONTENT_LENGTH.len()..]));
            }
        } else if trimmed.len() >= CONTENT_LENGTH.len()
            && trimmed[..CONTENT_LENGTH.len()].eq_ignore_ascii_case(CONTENT_LENGTH)
        {
            self.length = Some(parse_length(&trimmed[CONTENT_LENGTH.len()..]));
        } else if !trimmed.contains(&b':') {
            let text: String = String::from_utf8_lossy(trimmed).chars().take(100).collect();
            self.length = Some(Err(format!("bad header line {text:?}")));
        }
        // Else `Content-Type` or another header: accepted and ignored.
        self.line = line;
        self.line.clear();
    }

    fn end_of_headers(&mut self) {
        self.saw_header = false;
        match self.length.take() {
            Some(Ok(declared)) if declared > self.limits.max_body_bytes as u64 => {
                self.out.push_back(Decoded::BodyTooLarge { declared, limit: self.limits.max_body_bytes });
                self.state = State::Skip(declared);
            }
            Some(Ok(0)) => self.out.push_back(Decoded::Body(Vec::new())),
            Some(Ok(length)) => {
                let length = length as usize;
                // Grow with what arrives, never by the declared length alone.
                self.body = Vec::with_capacity(length.min(64 << 10));
                self.state = State::Body(length);
            }
            Some(Err(why)) => self.out.push_back(Decoded::BadHeader(why)),
            None => self.out.push_back(Decoded::BadHeader("missing Content-Length header".to_owned())),
        }
    }
}

fn parse_length(value: &[u8]) -> Result<u64, String> {
    let text = String::from_utf8_lossy(value);
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(length) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(length),
        _ => Err(format!("bad Content-Length {:?}", text.chars().take(40).collect::<String>())),
    }
}

fn find_ascii_case_insensitive(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window.eq_ignore_ascii_case(needle))
}

/// `body` with its `Content-Length` header, as sent on the wire.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = header(body.len());
    out.extend_from_slice(body);
    out
}

fn header(length: usize) -> Vec<u8> {
    format!("Content-Length: {length}\r\n\r\n").into_bytes()
}

/// A language server's output as async-lsp's main loop takes it (`MainLoop::run_messages`):
/// only whole frames within [`FrameLimits`], each body decoded once into an
/// [`async_lsp::Message`]; junk between frames and header sections without a usable length are
/// skipped (and logged).
///
/// A frame over a limit (a header line too long, a declared length too large) ends the stream
/// with an [`std::io::ErrorKind::InvalidData`] error naming the limit, and a body that is not a
/// JSON-RPC message with async-lsp's decode error: the client's main loop ends and the server
/// is treated as crashed. The end of the server's output ends the stream. Frames are decoded
/// in `poll_next` itself, on the reading task, so no task or channel sits between the process
/// and the main loop.
pub struct BoundedReader<R> {
    inner: R,
    decoder: Decoder,
    /// Where reads from `inner` land (64 KiB).
    chunk: Box<[u8]>,
    /// Bodies read and not yet decoded.
    pending: VecDeque<Vec<u8>>,
    /// Set once a limit was crossed: the stream's last item.
    failed: Option<String>,
    /// The stream ended (after `failed`, or at the end of the output).
    done: bool,
    eof: bool,
    /// The server's name, for logs and errors.
    peer: String,
}

impl<R> BoundedReader<R> {
    /// Reads `inner` (the output of the server `peer`) within `limits`.
    pub fn new(inner: R, limits: FrameLimits, peer: &str) -> BoundedReader<R> {
        BoundedReader {
            inner,
            decoder: Decoder::new(limits),
            chunk: vec![0; 64 << 10].into_boxed_slice(),
            pending: VecDeque::new(),
            failed: None,
            done: false,
            eof: false,
            peer: peer.to_owned(),
        }
    }

    /// Moves what the decoder completed to `pending`; true when there is something to return.
    fn drain(&mut self) -> bool {
        while let Some(item) = self.decoder.next() {
            match item {
                Decoded::Body(body) => self.pending.push_back(body),
                Decoded::BadHeader(why) => tracing::warn!(server = %self.peer, "skipped a malformed frame: {why}"),
                over @ (Decoded::HeaderTooLong { .. } | Decoded::BodyTooLarge { .. }) => {
                    self.failed = Some(format!("language server {} sent {over}", self.peer));
                    break;
                }
            }
        }
        !self.pending.is_empty() || self.failed.is_some()
    }
}

impl<R: AsyncRead + Unpin> futures::Stream for BoundedReader<R> {
    type Item = async_lsp::Result<async_lsp::Message>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(body) = this.pending.pop_front() {
                tracing::trace!(server = %this.peer, msg = %String::from_utf8_lossy(&body), "incoming");
                return Poll::Ready(Some(async_lsp::Message::decode(&body)));
            }
            if let Some(why) = this.failed.take() {
                this.done = true;
                let err = std::io::Error::new(std::io::ErrorKind::InvalidData, why);
                return Poll::Ready(Some(Err(async_lsp::Error::Io(err))));
            }
            if this.eof {
                this.done = true;
                continue;
            }
            if this.drain() {
                continue;
            }
            let mut read = ReadBuf::new(&mut this.chunk);
            if let Err(err) = ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read)) {
                this.done = true;
                return Poll::Ready(Some(Err(async_lsp::Error::Io(err))));
            }
            let filled = read.filled().len();
            if filled == 0 {
                this.eof = true;
                if let Some(cut) = this.decoder.finish() {
                    tracing::debug!(server = %this.peer, "output ended: {cut}");
                }
                // What the decoder completed before the end still goes out.
                this.drain();
                continue;
            }
            this.decoder.push(&this.chunk[..filled]);
        }
    }
}

#[cfg(test)]
mod tests;
