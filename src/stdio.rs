//! This process's stdin and stdout when they are pipes or sockets — what an editor gives a
//! language server and what an agent gives an MCP server — read and written by the runtime's
//! own thread, non-blocking, with no thread hop per message.
//!
//! `filepuff lsp` (`proxy::io`) and `filepuff mcp` (`mcp::stdio::threads`) take them from here
//! when [`pollable`] finds both ends pollable, and fall back to a reader and a writer thread
//! otherwise (a terminal, whose non-blocking mode would leak into the shell; a regular file,
//! which epoll cannot poll). tokio's own `Stdin`/`Stdout` are used by neither: they run each
//! read and write as a job on the blocking pool.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Duplicates of descriptors 0 and 1 when both are pipes or sockets and stdout is not also
/// stderr (a non-blocking stderr could lose log lines when the pipe is full); `None` otherwise.
/// Errors: a descriptor could not be duplicated.
pub fn pollable() -> io::Result<Option<(OwnedFd, OwnedFd)>> {
    let input = io::stdin().as_fd().try_clone_to_owned()?;
    let output = io::stdout().as_fd().try_clone_to_owned()?;
    let error = io::stderr().as_fd().try_clone_to_owned()?;
    let pipe_or_socket = |fd: &OwnedFd| {
        fd_stat(fd).is_some_and(|st| matches!(st.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK))
    };
    let same_as_stderr = match (fd_stat(&output), fd_stat(&error)) {
        (Some(out), Some(err)) => out.st_dev == err.st_dev && out.st_ino == err.st_ino,
        _ => true,
    };
    Ok((pipe_or_socket(&input) && pipe_or_socket(&output) && !same_as_stderr).then_some((input, output)))
}

fn fd_stat(fd: &OwnedFd) -> Option<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is an open descriptor and `st` is a valid out-pointer for one `stat`.
    let rc = unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) };
    // SAFETY: fstat filled `st` when it returned 0.
    (rc == 0).then(|| unsafe { st.assume_init() })
}

/// A descriptor switched to non-blocking mode; its original file status flags come back on
/// drop (the open file description may be shared with the process that started filepuff).
pub struct NonBlocking {
    file: File,
    flags: libc::c_int,
}

impl NonBlocking {
    /// Sets `O_NONBLOCK` on `fd`. Errors: `fcntl` failed.
    pub fn new(fd: OwnedFd) -> io::Result<NonBlocking> {
        // SAFETY: fcntl on an open descriptor with F_GETFL / F_SETFL and an int argument.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(NonBlocking { file: File::from(fd), flags })
    }

    /// Registered with the current runtime's reactor (call within one). Errors: the descriptor
    /// cannot be polled.
    pub fn polled(self) -> io::Result<AsyncFd<NonBlocking>> {
        // SAFETY: the descriptor is owned by `self.file`, which the AsyncFd owns from here on:
        // it stays open and the same for the AsyncFd's whole life.
        Ok(unsafe { AsyncFd::register(self) }?)
    }

    /// The descriptor, for non-blocking `read` and `write` (which may fail with `WouldBlock`).
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl AsRawFd for NonBlocking {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        // SAFETY: as in `new`; a failure leaves the descriptor as it is.
        unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETFL, self.flags) };
    }
}

/// A pollable pipe or socket read by the runtime's thread.
pub struct FdReader {
    fd: AsyncFd<NonBlocking>,
    /// Whether a read that returns less than it asked for has emptied the descriptor (a pipe, a
    /// stream socket), so the next read can wait for readiness instead of failing with
    /// `EAGAIN` first, as tokio's own pipes and sockets do. Not so for a datagram socket (a
    /// read returns one datagram).
    drained_by_short_read: bool,
}

impl FdReader {
    /// Reads `fd` (made non-blocking; call within a runtime). Errors: as [`NonBlocking`].
    pub fn new(fd: OwnedFd) -> io::Result<FdReader> {
        let drained_by_short_read = is_fifo_or_stream_socket(&fd);
        Ok(FdReader { fd: NonBlocking::new(fd)?.polled()?, drained_by_short_read })
    }
}

/// Whether `fd` is a pipe (FIFO) or a `SOCK_STREAM` socket (libuv, and so Node, gives a child
/// a socket pair for each piped standard stream).
fn is_fifo_or_stream_socket(fd: &OwnedFd) -> bool {
    match fd_stat(fd).map(|st| st.st_mode & libc::S_IFMT) {
        Some(libc::S_IFIFO) => true,
        Some(libc::S_IFSOCK) => {
            let mut kind: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: `fd` is an open socket; `kind` and `len` are valid out-pointers of the
            // size `len` says.
            let rc = unsafe {
                libc::getsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_TYPE,
                    (&raw mut kind).cast::<libc::c_void>(),
                    &raw mut len,
                )
            };
            rc == 0 && kind == libc::SOCK_STREAM
        }
        _ => false,
    }
}

impl AsyncRead for FdReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let asked = unfilled.len();
            match ready.try_io(|fd| fd.get_ref().file().read(unfilled)) {
                Ok(Ok(n)) => {
                    if self.drained_by_short_read && n > 0 && n < asked {
                        // Empty now: the next read waits for the reactor to say more came.
                        ready.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => {}
            }
        }
    }
}

/// A pollable pipe or socket written by the runtime's thread: writes collect in memory and a
/// flush writes them, waiting (as a full pipe makes any writer wait) while the reader is behind.
pub struct FdWriter {
    fd: AsyncFd<NonBlocking>,
    pending: Vec<u8>,
    /// How much of `pending` is written.
    at: usize,
}

/// Bytes written but not flushed after which a write flushes first.
const PENDING_LIMIT: usize = 1 << 20;

impl FdWriter {
    /// Writes `fd` (made non-blocking; call within a runtime). Errors: as [`NonBlocking`].
    pub fn new(fd: OwnedFd) -> io::Result<FdWriter> {
        Ok(FdWriter { fd: NonBlocking::new(fd)?.polled()?, pending: Vec::new(), at: 0 })
    }

    fn poll_write_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.at < self.pending.len() {
            let mut ready = ready!(self.fd.poll_write_ready(cx))?;
            match ready.try_io(|fd| fd.get_ref().file().write(&self.pending[self.at..])) {
                Ok(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(Ok(n)) => self.at += n,
                Ok(Err(err)) if err.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => {}
            }
        }
        self.pending.clear();
        self.at = 0;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for FdWriter {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.pending.len() >= PENDING_LIMIT {
            ready!(self.poll_write_pending(cx))?;
        }
        self.pending.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_pending(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write_pending(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::net::UnixStream;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::{FdReader, FdWriter, NonBlocking, is_fifo_or_stream_socket};

    #[test]
    fn the_descriptors_flags_come_back_when_the_session_ends() {
        let (_peer, ours) = UnixStream::pair().expect("a socket pair");
        let fd = OwnedFd::from(ours.try_clone().expect("a second handle"));
        let blocking = || {
            // SAFETY: F_GETFL on an open descriptor.
            unsafe { libc::fcntl(ours.as_raw_fd(), libc::F_GETFL) & libc::O_NONBLOCK == 0 }
        };
        assert!(blocking());
        let switched = NonBlocking::new(fd).expect("non-blocking");
        assert!(!blocking(), "the shared description is non-blocking while the session runs");
        drop(switched);
        assert!(blocking());
    }

    /// A message larger than the socket holds goes out whole once the peer reads, and what the
    /// peer writes comes in.
    #[tokio::test]
    async fn a_flush_waits_for_a_slow_reader_and_loses_nothing() {
        let (mut peer, ours) = UnixStream::pair().expect("a socket pair");
        let input = OwnedFd::from(ours.try_clone().expect("a second handle"));
        let mut reader = FdReader::new(input).expect("a reader");
        let mut writer = FdWriter::new(ours.into()).expect("a writer");
        let big: Vec<u8> = (0..(4 << 20)).map(|i| (i % 251) as u8).collect();
        let expected = big.clone();
        let read = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut got = vec![0; expected.len()];
            peer.read_exact(&mut got).expect("the peer's read");
            assert!(got == expected, "the bytes arrived changed");
            peer.write_all(b"answer\n").expect("the peer's write");
            peer
        });
        writer.write_all(&big).await.expect("written");
        writer.flush().await.expect("flushed");
        let _peer = read.join().expect("the peer's thread");
        let mut line = [0; 7];
        reader.read_exact(&mut line).await.expect("read");
        assert_eq!(&line, b"answer\n");
    }

    #[test]
    fn pipes_and_stream_sockets_are_drained_by_a_short_read_datagram_sockets_and_files_not() {
        let (read, _write) = std::io::pipe().expect("a pipe");
        assert!(is_fifo_or_stream_socket(&OwnedFd::from(read)));
        let (stream, _peer) = UnixStream::pair().expect("a socket pair");
        assert!(is_fifo_or_stream_socket(&OwnedFd::from(stream)));
        let (datagram, _peer) = std::os::unix::net::UnixDatagram::pair().expect("a datagram pair");
        assert!(!is_fifo_or_stream_socket(&OwnedFd::from(datagram)));
        let file = tempfile::tempfile().expect("a file");
        assert!(!is_fifo_or_stream_socket(&OwnedFd::from(file)));
    }

    /// A reader that stops reading after a short read (it waits for the reactor instead) still
    /// gets every byte, over a pipe and over a socket pair: what was all written before the
    /// reads (small reads fill their buffer and must not wait), and what comes in bursts with
    /// pauses while large reads come back short.
    #[tokio::test]
    async fn every_byte_arrives_around_short_reads() {
        let lines = |bursts: std::ops::Range<u32>| -> Vec<String> {
            bursts.map(|burst| (0..burst % 5 + 1).map(|i| format!("{burst}.{i}\n")).collect()).collect()
        };
        async fn read_exactly(reader: &mut FdReader, len: usize, small: bool) -> String {
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            let size = if small { 7 } else { chunk.len() };
            let read_all = async {
                while got.len() < len {
                    let n = reader.read(&mut chunk[..size]).await.expect("read");
                    assert!(n > 0, "ended early");
                    got.extend_from_slice(&chunk[..n]);
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(20), read_all).await.expect("every byte came");
            String::from_utf8(got).expect("text")
        }
        let (pipe_read, pipe_write) = std::io::pipe().expect("a pipe");
        let (socket_read, socket_write) = UnixStream::pair().expect("a socket pair");
        let ends: [(OwnedFd, Box<dyn Write + Send>); 2] =
            [(pipe_read.into(), Box::new(pipe_write)), (socket_read.into(), Box::new(socket_write))];
        for (read, mut write) in ends {
            let mut reader = FdReader::new(read).expect("a reader");
            let before = lines(0..100).concat();
            write.write_all(before.as_bytes()).expect("written");
            assert_eq!(read_exactly(&mut reader, before.len(), true).await, before);
            let bursts = lines(100..300);
            let expected = bursts.concat();
            let writer = std::thread::spawn(move || {
                for (n, burst) in bursts.iter().enumerate() {
                    write.write_all(burst.as_bytes()).expect("written");
                    if n % 7 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            });
            assert_eq!(read_exactly(&mut reader, expected.len(), false).await, expected);
            writer.join().expect("the writer");
        }
    }
}
