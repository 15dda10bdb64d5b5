//! Reading files for the text searches with few system calls: [`read_whole`] fills a reused,
//! already initialised buffer with large reads, and [`DiskText`] hands a file out in pieces of
//! whole lines, for a search that may stop early (at a file's first match, or at a NUL byte)
//! and so need not read the rest.
//!
//! Both turn each lone `\r` into `\n` ([`position::lone_cr_to_lf`]: offsets kept; a whole read
//! for a parser keeps the text as written), and both treat a file as grep-searcher's
//! `search_slice` does: binary when a NUL byte is in its first [`BINARY_WINDOW`] bytes, and not
//! searched when over the size limit.

use std::fs::File;
use std::io::{self, Read};

use crate::documents::position;

/// A NUL byte in a text's first 64 KiB makes it binary: grep-searcher's window for a slice.
pub const BINARY_WINDOW: usize = 64 * 1024;

/// The least a read asks for: most source files fit in one, and the next read sees the end.
const READ_SIZE: usize = 256 * 1024;

/// Whether `bytes` is binary text by the rule above.
pub fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(BINARY_WINDOW)]).is_some()
}

/// Reads one chunk into `buffer[at..]`, growing `buffer` so that at least [`READ_SIZE`] bytes fit.
///
/// `buffer` is used up to its length, which only grows: its bytes are zeroed once per thread,
/// not once per file (`Read` needs initialised memory).
fn read_at(file: &mut File, buffer: &mut Vec<u8>, at: usize) -> io::Result<usize> {
    if buffer.len() < at + READ_SIZE {
        buffer.resize(at + READ_SIZE, 0);
    }
    loop {
        match file.read(&mut buffer[at..]) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Reads all of `file` into `buffer` (see [`read_at`]) and, with `normalise`, turns lone `\r`
/// into `\n`. Returns the file's length, or `None` when it is longer than `limit` bytes.
pub fn read_whole(mut file: File, buffer: &mut Vec<u8>, limit: u64, normalise: bool) -> io::Result<Option<usize>> {
    let mut len = 0;
    loop {
        let n = read_at(&mut file, buffer, len)?;
        if n == 0 {
            break;
        }
        len += n;
        if len as u64 > limit {
            return Ok(None);
        }
    }
    if normalise {
        position::lone_cr_to_lf(&mut buffer[..len]);
    }
    Ok(Some(len))
}

/// A file handed out in pieces of whole lines; see the module doc.
pub struct DiskText<'a> {
    file: File,
    buffer: &'a mut Vec<u8>,
    limit: u64,
    /// Bytes of `buffer` read and not yet handed out, from its start.
    len: usize,
    /// Bytes at the start of `buffer` handed out by the last `next_lines`.
    handed: usize,
    /// Bytes read from the file.
    taken: u64,
    started: bool,
    at_end: bool,
    too_large: bool,
}

impl<'a> DiskText<'a> {
    /// Reads `file` with `buffer` (one per thread, reused), refusing it past `limit` bytes.
    pub fn new(file: File, buffer: &'a mut Vec<u8>, limit: u64) -> DiskText<'a> {
        DiskText { file, buffer, limit, len: 0, handed: 0, taken: 0, started: false, at_end: false, too_large: false }
    }

    /// Whether the file turned out larger than the limit (and so was not searched).
    pub fn too_large(&self) -> bool {
        self.too_large
    }

    /// The file's next whole lines, lone `\r` as `\n` (at the end: the rest). `None` once all
    /// was handed out, and at once for a binary file or one over the limit.
    pub fn next_lines(&mut self) -> io::Result<Option<&[u8]>> {
        // What was handed out goes; an incomplete last line stays for the next piece.
        self.buffer.copy_within(self.handed..self.len, 0);
        self.len -= self.handed;
        self.handed = 0;
        if self.at_end && self.len == 0 {
            return Ok(None);
        }
        loop {
            // The first piece is at least the binary window (or the whole file); later ones
            // are what one read gives.
            while !self.at_end {
                let n = read_at(&mut self.file, self.buffer, self.len)?;
                self.at_end = n == 0;
                self.len += n;
                self.taken += n as u64;
                if self.taken > self.limit {
                    self.too_large = true;
                    return Ok(None);
                }
                // Most files end within the first read; only one that fills it is measured.
                if !self.started && n > 0 && self.len == self.buffer.len() {
                    self.started = true;
                    if self.file.metadata()?.len() > self.limit {
                        self.too_large = true;
                        return Ok(None);
                    }
                }
                if self.started || self.len >= BINARY_WINDOW {
                    break;
                }
            }
            self.started = true;
            if self.len == 0 {
                return Ok(None);
            }
            // Nothing handed out yet: this is the file's start, where binary data shows.
            if self.taken == self.len as u64 && is_binary(&self.buffer[..self.len]) {
                return Ok(None);
            }
            // Whole lines only; a final `\r` waits for the byte after it, unless the file ends
            // there.
            let end = if self.at_end {
                self.len
            } else {
                match position::complete_lines_end(&self.buffer[..self.len]) {
                    Some(end) => end,
                    None => continue, // a line longer than what was read: read on
                }
            };
            position::lone_cr_to_lf(&mut self.buffer[..end]);
            self.handed = end;
            return Ok(Some(&self.buffer[..end]));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(bytes).unwrap();
        let file = File::open(tmp.path()).unwrap();
        (tmp, file)
    }

    /// Every piece, concatenated; each piece but the last ends a line.
    fn pieces(bytes: &[u8], limit: u64) -> Option<Vec<u8>> {
        let (_tmp, file) = file_with(bytes);
        let mut buffer = Vec::new();
        let mut text = DiskText::new(file, &mut buffer, limit);
        let mut out = Vec::new();
        let mut last_ended_a_line = true;
        while let Some(piece) = text.next_lines().unwrap() {
            assert!(last_ended_a_line, "a piece before the last ended inside a line");
            last_ended_a_line = piece.ends_with(b"\n");
            out.extend_from_slice(piece);
        }
        (!text.too_large()).then_some(out)
    }

    #[test]
    fn pieces_and_whole_reads_both_give_the_normalised_text() {
        let long_line = "z".repeat(READ_SIZE + 10);
        let many_lines = "line\r\n".repeat(READ_SIZE / 3) + "lone\rend";
        let cr_at_a_read_boundary = format!("{}\r\nnext\rlast\r", "a".repeat(READ_SIZE - 1));
        let inputs: Vec<&[u8]> = vec![
            b"a\rb\r\nc\n",
            b"\r\r\n\r",
            b"\r",
            b"",
            b"no breaks",
            long_line.as_bytes(),
            many_lines.as_bytes(),
            cr_at_a_read_boundary.as_bytes(),
        ];
        for input in inputs {
            let mut expected = input.to_vec();
            position::lone_cr_to_lf(&mut expected);
            assert_eq!(pieces(input, 1 << 30).as_deref(), Some(expected.as_slice()), "{} bytes", input.len());
            let (_tmp, file) = file_with(input);
            let mut buffer = Vec::new();
            let len = read_whole(file, &mut buffer, 1 << 30, true).unwrap().unwrap();
            assert_eq!(&buffer[..len], expected.as_slice());
        }
    }

    #[test]
    fn binary_files_stop_at_the_first_piece_and_big_ones_are_refused() {
        let mut nul_late = vec![b'x'; BINARY_WINDOW + 10];
        nul_late[BINARY_WINDOW + 5] = 0;
        assert!(!is_binary(&nul_late) && is_binary(b"ab\0"));
        assert_eq!(pieces(b"text\0more\n", 1 << 30), Some(Vec::new()));
        assert_eq!(pieces(&nul_late, 1 << 30), Some(nul_late.clone()));
        // Over the limit: refused, whether the first read ends the file or not.
        assert_eq!(pieces(&[b'x'; 100], 99), None);
        assert_eq!(pieces(&vec![b'x'; READ_SIZE * 2], READ_SIZE as u64), None);
        assert_eq!(pieces(&[b'x'; 100], 100).map(|v| v.len()), Some(100));
        let (_tmp, file) = file_with(&[b'x'; 100]);
        assert_eq!(read_whole(file, &mut Vec::new(), 99, true).unwrap(), None);
    }
}
