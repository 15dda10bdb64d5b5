//! This process's stdin and stdout for an MCP session: polled by the runtime's own thread when
//! they are pipes or sockets ([`crate::stdio`]), else each served by a thread of its own
//! ([`open`] decides).
//!
//! tokio's `Stdin` and `Stdout` run every read and every write as a separate job on the blocking
//! pool (a hand-off and a wake-up each; `write_all` of an answer then of its line break, then
//! `flush`, is three), which is most of what a request through `filepuff mcp` costs beyond the
//! tool itself. With threads, one blocks in `read(0)` and hands the chunks it reads to the
//! session, and one writes what the session flushed, one `write(1)` per flushed message; polled,
//! the session reads and writes the descriptors itself and no thread is crossed.
//!
//! Bounded both ways: at most [`CHUNKS`] chunks of up to [`CHUNK_BYTES`] bytes wait to be read
//! (the reading thread blocks, and the agent's writes with it), and at most [`CHUNKS`] flushed
//! messages wait to be written (the session waits in `flush`); polled, nothing waits in between.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

use crate::stdio::{FdReader, FdWriter};

/// This process's stdin and stdout for one session, and what waits for the last writes: polled
/// when both are pipes or sockets ([`crate::stdio::pollable`]), else on threads ([`stdin`],
/// [`stdout`]). Call once per process, within the runtime that serves the session.
pub fn open() -> (Stdin, Stdout, StdoutDone) {
    let polled = crate::stdio::pollable()
        .and_then(|fds| fds.map(|(input, output)| Ok((FdReader::new(input)?, FdWriter::new(output)?))).transpose());
    match polled {
        Ok(Some((input, output))) => (Stdin::Polled(input), Stdout::Polled(output), StdoutDone::Written),
        result => {
            if let Err(err) = result {
                tracing::debug!("stdin and stdout on threads: {err}");
            }
            let (output, thread) = stdout();
            (Stdin::Thread(stdin()), Stdout::Thread(output), StdoutDone::Thread(thread))
        }
    }
}

/// The read side of [`open`].
pub enum Stdin {
    Polled(FdReader),
    Thread(ThreadStdin),
}

impl AsyncRead for Stdin {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdin::Polled(input) => Pin::new(input).poll_read(cx, buf),
            Stdin::Thread(input) => Pin::new(input).poll_read(cx, buf),
        }
    }
}

/// The write side of [`open`].
pub enum Stdout {
    Polled(FdWriter),
    Thread(ThreadStdout),
}

impl AsyncWrite for Stdout {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stdout::Polled(output) => Pin::new(output).poll_write(cx, buf),
            Stdout::Thread(output) => Pin::new(output).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Polled(output) => Pin::new(output).poll_flush(cx),
            Stdout::Thread(output) => Pin::new(output).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Polled(output) => Pin::new(output).poll_shutdown(cx),
            Stdout::Thread(output) => Pin::new(output).poll_shutdown(cx),
        }
    }
}

/// What lets the last flushed writes reach stdout before the process exits.
pub enum StdoutDone {
    /// Polled: a flush returns once written.
    Written,
    /// The writer thread behind a [`ThreadStdout`].
    Thread(StdoutThread),
}

impl StdoutDone {
    /// Waits, at most `timeout`, for what was flushed to be written; call after the [`Stdout`]
    /// is dropped.
    pub fn wait(self, timeout: Duration) {
        if let StdoutDone::Thread(thread) = self {
            thread.wait(timeout);
        }
    }
}

/// Chunks queued between a thread and the session, each way.
pub const CHUNKS: usize = 16;

/// Largest chunk read from stdin at once, in bytes.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Bytes written but not flushed after which a write waits for a flush first.
const PENDING_LIMIT: usize = 1 << 20;

/// Reads this process's stdin on a thread of its own. Call once per process: the thread reads
/// until the end of stdin (or the session is dropped and one more chunk arrives).
pub fn stdin() -> ThreadStdin {
    let (tx, rx) = mpsc::channel::<io::Result<Vec<u8>>>(CHUNKS);
    let spawned = std::thread::Builder::new().name("filepuff-stdin".into()).spawn(move || {
        let mut stdin = io::stdin().lock();
        loop {
            let mut chunk = vec![0; CHUNK_BYTES];
            let read = match stdin.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    let _ = tx.blocking_send(Err(err));
                    break;
                }
            };
            chunk.truncate(read);
            if tx.blocking_send(Ok(chunk)).is_err() {
                break;
            }
        }
    });
    if let Err(err) = spawned {
        tracing::error!("cannot start the stdin thread: {err}");
    }
    ThreadStdin { rx, chunk: Vec::new(), at: 0 }
}

/// Writes to this process's stdout on a thread of its own; [`StdoutThread::wait`] lets what was
/// flushed reach stdout before the process exits. Call once per process.
pub fn stdout() -> (ThreadStdout, StdoutThread) {
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(CHUNKS);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new().name("filepuff-stdout".into()).spawn(move || {
        let _done = done_tx;
        let mut stdout = io::stdout().lock();
        while let Some(message) = rx.blocking_recv() {
            if let Err(err) = stdout.write_all(&message).and_then(|()| stdout.flush()) {
                tracing::warn!("MCP stdout: {err}");
                break;
            }
        }
    });
    if let Err(err) = spawned {
        tracing::error!("cannot start the stdout thread: {err}");
    }
    (ThreadStdout { tx: PollSender::new(tx), pending: Vec::new() }, StdoutThread(done_rx))
}

/// The read side of [`stdin`].
pub struct ThreadStdin {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    /// The chunk being handed out, from `at`.
    chunk: Vec<u8>,
    at: usize,
}

impl AsyncRead for ThreadStdin {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.at == self.chunk.len() {
            match ready!(self.rx.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Some(Err(err)) => return Poll::Ready(Err(err)),
                // The end of stdin: a read of nothing.
                None => return Poll::Ready(Ok(())),
            }
        }
        let n = buf.remaining().min(self.chunk.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.chunk[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// The write side of [`stdout`]: writes collect in memory, a flush hands them to the thread as
/// one message. Fails with `BrokenPipe` once the thread stopped (stdout closed).
pub struct ThreadStdout {
    tx: PollSender<Vec<u8>>,
    pending: Vec<u8>,
}

impl ThreadStdout {
    fn poll_hand_over(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending.is_empty() {
            return Poll::Ready(Ok(()));
        }
        let closed = || io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed");
        ready!(self.tx.poll_reserve(cx)).map_err(|_| closed())?;
        self.tx.send_item(std::mem::take(&mut self.pending)).map_err(|_| closed())?;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ThreadStdout {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.pending.len() >= PENDING_LIMIT {
            ready!(self.poll_hand_over(cx))?;
        }
        self.pending.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_hand_over(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_hand_over(cx))?;
        self.tx.close();
        Poll::Ready(Ok(()))
    }
}

/// The thread behind a [`ThreadStdout`].
pub struct StdoutThread(std::sync::mpsc::Receiver<()>);

impl StdoutThread {
    /// Waits, at most `timeout`, for the thread to write what was flushed; call after every
    /// [`ThreadStdout`] is dropped (else it waits the whole `timeout`).
    pub fn wait(self, timeout: Duration) {
        let _ = self.0.recv_timeout(timeout);
    }
}
