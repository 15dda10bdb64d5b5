//! The editor's byte stream: `filepuff lsp` on stdin/stdout ([`serve_stdio`]), a reader thread
//! that frames and checks what the editor sends ([`frame`]) and a writer thread that writes what
//! the main loop produced, one whole message at a time, joined to async-lsp's main loop through
//! channels ([`ChannelReader`], [`ChannelWriter`]). No async stdio (which hops through tokio's
//! blocking pool on every read and write) sits on the request path.

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use super::{frame, serve};
use crate::engine::agents::AgentDoor;

/// Runs `filepuff lsp` on stdin/stdout until the editor sends `exit` or closes the pipe.
/// `root` is used when `initialize` names no workspace. Errors: the runtime could not start,
/// or the editor's stream failed (not: malformed messages, which are answered and skipped).
pub fn serve_stdio(root: Option<PathBuf>, agents: Arc<dyn AgentDoor>) -> anyhow::Result<()> {
    // One thread for the editor's main loop, the servers' clients and the agents' sessions
    // (tools run on the blocking pool): messages pass between them without thread wake-ups.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Not `std::io::stdout()`: it is line-buffered and would write a frame's header (which ends
    // in a line break) and its body in two `write`s, waking the editor twice per message.
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let result = runtime.block_on(serve(Box::new(std::io::stdin()), Box::new(stdout), root, agents));
    // The stdin thread may still sit in a blocking read: do not wait for it.
    runtime.shutdown_background();
    result
}

/// What the writer thread writes: bytes, or a request to say when all before it are written.
enum Out {
    Bytes(Vec<u8>),
    Flushed(std::sync::mpsc::Sender<()>),
}

/// The main loop's input: checked frames from the reader thread.
pub(super) struct ChannelReader {
    rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl AsyncRead for ChannelReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        while self.at >= self.current.len() {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(bytes)) => {
                    self.current = bytes;
                    self.at = 0;
                }
                Poll::Ready(None) => return Poll::Ready(Ok(())), // end of input
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = buf.remaining().min(self.current.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.current[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// The main loop's output: bytes gathered until the loop flushes (after whole messages), then
/// handed to the writer thread in one piece, so error answers from the reader thread never land
/// inside a message.
pub(super) struct ChannelWriter {
    buffer: Vec<u8>,
    tx: std::sync::mpsc::Sender<Out>,
}

impl AsyncWrite for ChannelWriter {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.buffer.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if !self.buffer.is_empty() {
            let bytes = std::mem::take(&mut self.buffer);
            if self.tx.send(Out::Bytes(bytes)).is_err() {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// Starts the threads of the editor's stream: one reads `input` and checks each frame
/// ([`frame`]: invalid requests are answered from that thread, malformed responses dropped),
/// one writes `output`. Returns the main loop's input and output over them, and the handle that
/// waits for the writer ([`Flusher`]). Errors: a thread could not be spawned.
pub(super) fn editor_stream(
    input: Box<dyn std::io::Read + Send>,
    output: Box<dyn std::io::Write + Send>,
) -> std::io::Result<(ChannelReader, ChannelWriter, Flusher)> {
    let (out_tx, out_rx) = std::sync::mpsc::channel::<Out>();
    let (in_tx, in_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let errors = out_tx.clone();
    std::thread::Builder::new().name("filepuff-lsp-in".into()).spawn(move || {
        let mut input = frame::FrameReader::new(input);
        loop {
            match input.next() {
                Ok(Some(frame::Frame::Message(body))) => {
                    if in_tx.send(frame::encode(&body)).is_err() {
                        break;
                    }
                }
                Ok(Some(frame::Frame::Invalid { id, code, message })) => {
                    tracing::warn!("editor sent an invalid message: {message}");
                    let _ = errors.send(Out::Bytes(frame::Frame::error_response(&id, code, &message)));
                }
                Ok(Some(frame::Frame::Dropped { why, replacement })) => {
                    tracing::warn!("editor sent {why}; dropped it");
                    if let Some(replacement) = replacement
                        && in_tx.send(replacement).is_err()
                    {
                        break;
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    })?;
    std::thread::Builder::new().name("filepuff-lsp-out".into()).spawn(move || {
        let mut output = output;
        while let Ok(out) = out_rx.recv() {
            match out {
                Out::Bytes(bytes) => {
                    if output.write_all(&bytes).and_then(|()| output.flush()).is_err() {
                        break;
                    }
                }
                Out::Flushed(done) => {
                    let _ = done.send(());
                }
            }
        }
    })?;
    let reader = ChannelReader { rx: in_rx, current: Vec::new(), at: 0 };
    let writer = ChannelWriter { buffer: Vec::new(), tx: out_tx.clone() };
    Ok((reader, writer, Flusher(out_tx)))
}

/// Says when everything written to the editor so far is out (the writer thread flushed it).
pub(super) struct Flusher(std::sync::mpsc::Sender<Out>);

impl Flusher {
    /// Waits until the writer thread has written everything queued before this call, at most
    /// `limit` (the thread may be stuck on a full pipe).
    pub(super) async fn flushed(&self, limit: Duration) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        if self.0.send(Out::Flushed(done_tx)).is_ok() {
            let _ = tokio::task::spawn_blocking(move || done_rx.recv_timeout(limit)).await;
        }
    }
}
