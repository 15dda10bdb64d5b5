//! The editor's byte stream: `filepuff lsp` on stdin/stdout ([`serve_stdio`]), framed and checked
//! ([`frame`]) on the way in, written one whole message at a time on the way out, and joined to
//! async-lsp's main loop through in-memory channels: checked messages, parsed once by the frame
//! guard, in ([`Incoming`]), bytes out ([`ChannelWriter`]).
//!
//! When stdin and stdout are pipes or sockets (what editors give a language server), the
//! runtime's own thread polls them, non-blocking ([`EditorStream::Fds`]): a request crosses no
//! thread on its way in or out. Anything else (a terminal, a file, an in-memory stream) is read
//! and written by a thread each, with blocking calls ([`EditorStream::Threads`]). Neither path
//! uses tokio's async stdio, which hops through the blocking pool on every read and write.
//! Writes never wait for the editor: what a full pipe cannot take yet is queued and written as
//! it drains, so a slow editor never stalls the servers or the agents sharing the runtime.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_lsp::Message;
use parking_lot::Mutex;
use tokio::io::AsyncWrite;
use tokio::io::unix::AsyncFd;

use super::{frame, serve};
use crate::engine::agents::AgentDoor;
use crate::stdio::NonBlocking;

/// Runs `filepuff lsp` on stdin/stdout until the editor sends `exit` or closes the pipe.
/// `root` is used when `initialize` names no workspace. Errors: the runtime could not start,
/// or the editor's stream failed (not: malformed messages, which are answered and skipped).
pub fn serve_stdio(root: Option<PathBuf>, agents: Arc<dyn AgentDoor>) -> anyhow::Result<()> {
    // One thread for the editor's main loop, the servers' clients and the agents' sessions
    // (tools run on the blocking pool): messages pass between them without thread wake-ups.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let stream = EditorStream::stdio()?;
    let result = runtime.block_on(serve(stream, root, agents));
    // The stdin thread (if there is one) may still sit in a blocking read: do not wait for it.
    runtime.shutdown_background();
    result
}

/// The editor's two ends, and how they are read and written.
pub enum EditorStream {
    /// Blocking reads and writes on a thread each.
    Threads { input: Box<dyn Read + Send>, output: Box<dyn Write + Send> },
    /// Pipes or sockets, made non-blocking and polled by the runtime's thread. Their original
    /// file status flags are put back when the session ends.
    Fds { input: OwnedFd, output: OwnedFd },
}

impl EditorStream {
    /// This process's stdin and stdout: [`EditorStream::Fds`] when both are pipes or sockets
    /// ([`crate::stdio::pollable`]), else [`EditorStream::Threads`]. Never `std::io::stdout()`
    /// itself: it is line-buffered and would write a frame's header (which ends in a line break)
    /// and its body in two `write`s, waking the editor twice per message. Errors: a descriptor
    /// could not be duplicated.
    pub fn stdio() -> std::io::Result<EditorStream> {
        if let Some((input, output)) = crate::stdio::pollable()? {
            return Ok(EditorStream::Fds { input, output });
        }
        let input = std::io::stdin().as_fd().try_clone_to_owned()?;
        let output = std::io::stdout().as_fd().try_clone_to_owned()?;
        Ok(EditorStream::Threads { input: Box::new(File::from(input)), output: Box::new(File::from(output)) })
    }
}

/// What the writer thread writes: bytes, or a request to say when all before it are written.
pub(super) enum Out {
    Bytes(Vec<u8>),
    Flushed(std::sync::mpsc::Sender<()>),
}

/// Where whole messages to the editor go.
#[derive(Clone)]
enum Sink {
    /// To the writer thread.
    Thread(std::sync::mpsc::Sender<Out>),
    /// Written from the runtime's thread.
    Fd(Arc<QueuedWriter>),
}

impl Sink {
    /// Queues one whole message. False when the editor's end is gone.
    fn send(&self, bytes: Vec<u8>) -> bool {
        match self {
            Sink::Thread(tx) => tx.send(Out::Bytes(bytes)).is_ok(),
            Sink::Fd(writer) => writer.send(bytes),
        }
    }
}

/// Writes to a non-blocking pipe or socket: at once when nothing waits before it, else queued
/// for [`drain`], which writes as the editor reads.
pub(super) struct QueuedWriter {
    fd: AsyncFd<NonBlocking>,
    pending: Mutex<Pending>,
    /// Something was queued.
    queued: tokio::sync::Notify,
    /// The queue emptied (or the editor's end went away).
    drained: tokio::sync::Notify,
}

#[derive(Default)]
struct Pending {
    queue: VecDeque<Vec<u8>>,
    /// How much of the queue's first message is written.
    at: usize,
    /// Writing failed (the editor closed its end): everything after is dropped.
    closed: bool,
}

impl QueuedWriter {
    fn send(&self, bytes: Vec<u8>) -> bool {
        let mut pending = self.pending.lock();
        if pending.closed {
            return false;
        }
        let was_empty = pending.queue.is_empty();
        pending.queue.push_back(bytes);
        if !was_empty {
            return true;
        }
        match self.write_queued(&mut pending) {
            Ok(()) => true,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                self.queued.notify_one();
                true
            }
            Err(_) => false,
        }
    }

    /// Writes the queue until it is empty (`Ok`) or the pipe is full (`WouldBlock`). Any other
    /// error closes the writer.
    fn write_queued(&self, pending: &mut Pending) -> std::io::Result<()> {
        while let Some(front) = pending.queue.front() {
            match self.fd.get_ref().file().write(&front[pending.at..]) {
                Ok(0) => return self.close(pending, std::io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    pending.at += n;
                    if pending.at == front.len() {
                        pending.queue.pop_front();
                        pending.at = 0;
                    }
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return Err(err),
                Err(err) => return self.close(pending, err),
            }
        }
        self.drained.notify_waiters();
        Ok(())
    }

    fn close(&self, pending: &mut Pending, err: std::io::Error) -> std::io::Result<()> {
        pending.closed = true;
        pending.queue.clear();
        self.drained.notify_waiters();
        Err(err)
    }
}

/// Writes what [`QueuedWriter::send`] could not, as the editor reads; ends when writing fails.
async fn drain(writer: Arc<QueuedWriter>) {
    loop {
        writer.queued.notified().await;
        loop {
            let Ok(mut ready) = writer.fd.writable().await else {
                let _ = writer.close(&mut writer.pending.lock(), std::io::ErrorKind::BrokenPipe.into());
                return;
            };
            match ready.try_io(|_| writer.write_queued(&mut writer.pending.lock())) {
                Ok(Ok(())) => break,
                Ok(Err(_)) => return,
                Err(_would_block) => continue,
            }
        }
    }
}

/// Hands one checked frame on: a message to the main loop, an error answer to the editor.
/// False when the main loop is gone.
fn deliver(frame: frame::Frame, main_loop: &tokio::sync::mpsc::UnboundedSender<Message>, sink: &Sink) -> bool {
    match frame {
        frame::Frame::Message(message) => main_loop.send(message).is_ok(),
        frame::Frame::Invalid { id, code, message } => {
            tracing::warn!("editor sent an invalid message: {message}");
            let _ = sink.send(frame::Frame::error_response(&id, code, &message));
            true
        }
        frame::Frame::Dropped { why, replacement } => {
            tracing::warn!("editor sent {why}; dropped it");
            replacement.is_none_or(|replacement| main_loop.send(replacement).is_ok())
        }
    }
}

/// Reads a non-blocking pipe or socket on the runtime's thread, framing and checking as
/// [`frame::FrameReader`] does for the reader thread. Ends at the end of the input, on a read
/// error, or when the main loop is gone (dropping `main_loop` ends the main loop's input).
async fn read_fd(input: AsyncFd<NonBlocking>, main_loop: tokio::sync::mpsc::UnboundedSender<Message>, sink: Sink) {
    let mut decoder = crate::backends::transport::Decoder::new(frame::EDITOR_LIMITS);
    let mut chunk = vec![0; 64 << 10];
    loop {
        while let Some(item) = decoder.next() {
            if !deliver(frame::frame_of(item), &main_loop, &sink) {
                return;
            }
        }
        let Ok(mut ready) = input.readable().await else { return };
        match ready.try_io(|fd| fd.get_ref().file().read(&mut chunk)) {
            Ok(Ok(0)) => {
                if let Some(item) = decoder.finish() {
                    deliver(frame::frame_of(item), &main_loop, &sink);
                }
                return;
            }
            Ok(Ok(n)) => decoder.push(&chunk[..n]),
            Ok(Err(err)) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Ok(Err(_)) => return,
            Err(_would_block) => {}
        }
    }
}

/// The main loop's input (`MainLoop::run_messages`): checked messages from the reader (the
/// thread, or the task polling the pipe), parsed there once; the channel's end is the end of
/// the input.
pub(super) struct Incoming {
    rx: tokio::sync::mpsc::UnboundedReceiver<Message>,
}

impl futures::Stream for Incoming {
    type Item = async_lsp::Result<Message>;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx).map(|message| message.map(Ok))
    }
}

/// The main loop's output: bytes gathered until the loop flushes (after whole messages), then
/// handed on in one piece, so error answers to invalid frames never land inside a message.
pub(super) struct ChannelWriter {
    buffer: Vec<u8>,
    sink: Sink,
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
            if !self.sink.send(bytes) {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// Starts reading and writing the editor's stream (see the module documentation): invalid
/// requests are answered and malformed responses dropped on the way in ([`frame`]). Returns the
/// main loop's input and output over it, and the handle that waits for the last writes
/// ([`Flusher`]; dropping it stops the tasks of [`EditorStream::Fds`]). Errors: a thread could
/// not be spawned, or a descriptor could not be made non-blocking or polled. Call within the
/// runtime that runs the main loop.
pub(super) fn editor_stream(stream: EditorStream) -> std::io::Result<(Incoming, ChannelWriter, Flusher)> {
    let (in_tx, in_rx) = tokio::sync::mpsc::unbounded_channel::<Message>();
    let reader = Incoming { rx: in_rx };
    match stream {
        EditorStream::Threads { input, output } => {
            let (out_tx, out_rx) = std::sync::mpsc::channel::<Out>();
            let sink = Sink::Thread(out_tx.clone());
            let errors = sink.clone();
            std::thread::Builder::new().name("filepuff-lsp-in".into()).spawn(move || {
                let mut input = frame::FrameReader::new(input);
                while let Ok(Some(frame)) = input.next() {
                    if !deliver(frame, &in_tx, &errors) {
                        break;
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
            Ok((reader, ChannelWriter { buffer: Vec::new(), sink }, Flusher::Thread(out_tx)))
        }
        EditorStream::Fds { input, output } => {
            let input = NonBlocking::new(input)?.polled()?;
            let writer = Arc::new(QueuedWriter {
                fd: NonBlocking::new(output)?.polled()?,
                pending: Mutex::new(Pending::default()),
                queued: tokio::sync::Notify::new(),
                drained: tokio::sync::Notify::new(),
            });
            let sink = Sink::Fd(writer.clone());
            let tasks = [
                tokio::spawn(read_fd(input, in_tx, sink.clone())).abort_handle(),
                tokio::spawn(drain(writer.clone())).abort_handle(),
            ];
            Ok((reader, ChannelWriter { buffer: Vec::new(), sink }, Flusher::Fd { writer, tasks }))
        }
    }
}

/// Says when everything written to the editor so far is out.
pub(super) enum Flusher {
    /// The writer thread has written it.
    Thread(std::sync::mpsc::Sender<Out>),
    /// The queue of the runtime's writer is empty; the reading and writing tasks stop when
    /// this is dropped.
    Fd { writer: Arc<QueuedWriter>, tasks: [tokio::task::AbortHandle; 2] },
}

impl Flusher {
    /// Waits until everything queued before this call is written, at most `limit` (the editor
    /// may not be reading).
    pub(super) async fn flushed(&self, limit: Duration) {
        match self {
            Flusher::Thread(tx) => {
                let (done_tx, done_rx) = std::sync::mpsc::channel();
                if tx.send(Out::Flushed(done_tx)).is_ok() {
                    let _ = tokio::task::spawn_blocking(move || done_rx.recv_timeout(limit)).await;
                }
            }
            Flusher::Fd { writer, .. } => {
                let _ = tokio::time::timeout(limit, async {
                    loop {
                        let drained = writer.drained.notified();
                        tokio::pin!(drained);
                        drained.as_mut().enable();
                        {
                            let pending = writer.pending.lock();
                            if pending.queue.is_empty() || pending.closed {
                                return;
                            }
                        }
                        drained.await;
                    }
                })
                .await;
            }
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        if let Flusher::Fd { tasks, .. } = self {
            for task in tasks {
                task.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;

    use super::{EditorStream, editor_stream, frame};

    const REQUEST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#;
    const NOTIFICATION: &str = r#"{"jsonrpc":"2.0","method":"exit"}"#;

    /// What the editor sends in every case: a request, a body that is not JSON, a notification.
    fn editor_bytes() -> Vec<u8> {
        [frame::encode(REQUEST.as_bytes()), frame::encode(b"{not json"), frame::encode(NOTIFICATION.as_bytes())]
            .concat()
    }

    /// Reads framed bodies from `editor` until `count` arrived.
    fn read_bodies(editor: &mut UnixStream, count: usize) -> Vec<String> {
        let mut decoder = crate::backends::transport::Decoder::new(frame::EDITOR_LIMITS);
        let mut bodies = Vec::new();
        let mut chunk = vec![0; 1 << 16];
        while bodies.len() < count {
            let n = editor.read(&mut chunk).expect("the editor's read");
            assert!(n > 0, "the stream ended after {bodies:?}");
            decoder.push(&chunk[..n]);
            while let Some(crate::backends::transport::Decoded::Body(body)) = decoder.next() {
                bodies.push(String::from_utf8(body).expect("UTF-8"));
            }
        }
        bodies
    }

    /// Both paths: checked frames reach the main loop in order, an invalid one is answered, and
    /// a message far larger than the pipe holds arrives whole while the main loop goes on (the
    /// editor reads it only later).
    async fn exchange(stream: EditorStream, mut editor: UnixStream) {
        let (mut reader, mut writer, flusher) = editor_stream(stream).expect("the editor's stream");
        let mut received = Vec::new();
        while received.len() < 2 {
            let message = reader.next().await.expect("the input goes on").expect("a message");
            received.push(format!("{message:?}"));
        }
        let wanted: Vec<String> = [REQUEST, NOTIFICATION]
            .iter()
            .map(|body| format!("{:?}", async_lsp::Message::decode(body.as_bytes()).expect("a message")))
            .collect();
        assert_eq!(received, wanted);

        let big = format!(r#"{{"jsonrpc":"2.0","id":1,"result":"{}"}}"#, "x".repeat(4 << 20));
        for body in [big.as_str(), NOTIFICATION] {
            writer.write_all(&frame::encode(body.as_bytes())).await.expect("queued");
            writer.flush().await.expect("handed on");
        }
        let read = std::thread::spawn(move || read_bodies(&mut editor, 3));
        flusher.flushed(std::time::Duration::from_secs(20)).await;
        let bodies = read.join().expect("the editor's thread");
        assert!(bodies[0].contains("-32700"), "the invalid frame's answer comes first: {:.200}", bodies[0]);
        assert_eq!(bodies[1].len(), big.len());
        assert_eq!(bodies[1], big);
        assert_eq!(bodies[2], NOTIFICATION);
    }

    #[tokio::test]
    async fn pipes_polled_by_the_runtime_carry_frames_both_ways() {
        let (mut editor, ours) = UnixStream::pair().expect("a socket pair");
        editor.write_all(&editor_bytes()).expect("the editor's write");
        let input = OwnedFd::from(ours.try_clone().expect("a second handle"));
        exchange(EditorStream::Fds { input, output: ours.into() }, editor).await;
    }

    #[tokio::test]
    async fn blocking_streams_on_threads_carry_frames_both_ways() {
        let (editor, ours) = UnixStream::pair().expect("a socket pair");
        let input = Box::new(std::io::Cursor::new(editor_bytes()));
        exchange(EditorStream::Threads { input, output: Box::new(ours) }, editor).await;
    }
}
