//! The live buffer store, and reading text from disk when no buffer is open.
//!
//! A document the editor has open is the truth: [`DocumentStore::text`] returns its rope, not
//! the disk. Files not open are read from disk on demand ([`load_from_disk`]), with the size and
//! binary checks every tool relies on. Position conversion lives in [`position`] and nowhere
//! else.

pub mod language;
pub mod position;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use dashmap::DashMap;
use ropey::Rope;

pub use language::Language;

/// An open document: the editor's buffer.
#[derive(Debug, Clone)]
pub struct Document {
    /// The buffer's text. Cloning a rope is O(1) (shared, copy-on-write).
    pub text: Rope,
    /// The editor's version number (LSP `VersionedTextDocumentIdentifier.version`).
    pub version: i32,
    /// The LSP language identifier the editor gave at `didOpen`.
    pub language_id: String,
}

/// Where a piece of text came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An open editor buffer at this version (may differ from disk).
    Buffer { version: i32 },
    /// The file on disk. `lossy` is true when invalid UTF-8 was replaced with U+FFFD.
    Disk { modified: Option<SystemTime>, lossy: bool },
}

/// The current text of one file, wherever it came from.
#[derive(Debug, Clone)]
pub struct SourceText {
    pub text: Rope,
    pub origin: Origin,
    pub language: Option<Language>,
}

/// Why a file could not be read as text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("file not found: {path}")]
    NotFound { path: PathBuf },
    #[error("{path} is a directory, not a file")]
    IsDirectory { path: PathBuf },
    #[error("{path} is not a regular file")]
    NotRegularFile { path: PathBuf },
    /// A NUL byte was found in the first 8 KiB (the heuristic git and ripgrep use).
    #[error("{path} looks binary (NUL byte at offset {offset})")]
    Binary { path: PathBuf, offset: usize },
    #[error("{path} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// Bytes inspected for a NUL byte when deciding whether a file is binary.
pub const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// The live buffer store, keyed by absolute path (the workspace resolves URIs to paths first,
/// so `file:///a%20b` and `file:///a b` are one document).
#[derive(Debug, Default)]
pub struct DocumentStore {
    documents: DashMap<PathBuf, Document>,
}

impl DocumentStore {
    pub fn new() -> DocumentStore {
        DocumentStore::default()
    }

    /// Records an opened buffer (LSP `textDocument/didOpen`), replacing any previous state.
    pub fn open(&self, path: PathBuf, text: &str, version: i32, language_id: String) {
        self.documents.insert(path, Document { text: Rope::from_str(text), version, language_id });
    }

    /// Replaces the whole text of an open buffer (a full-text `didChange`).
    /// Returns false when the document is not open.
    pub fn replace_text(&self, path: &Path, text: &str, version: i32) -> bool {
        match self.documents.get_mut(path) {
            Some(mut document) => {
                document.text = Rope::from_str(text);
                document.version = version;
                true
            }
            None => false,
        }
    }

    /// Replaces the whole text of an open buffer if its version is still `expected_version`,
    /// giving it version `expected_version + 1`. Returns the new version, or the current one
    /// (`None` when the document is closed) when the buffer moved on since it was read.
    pub fn replace_if_version(&self, path: &Path, expected_version: i32, text: &str) -> Result<i32, Option<i32>> {
        match self.documents.get_mut(path) {
            Some(mut document) if document.version == expected_version => {
                document.text = Rope::from_str(text);
                document.version = expected_version.saturating_add(1);
                Ok(document.version)
            }
            Some(document) => Err(Some(document.version)),
            None => Err(None),
        }
    }

    /// Forgets a buffer (LSP `textDocument/didClose`); the disk is the truth again.
    pub fn close(&self, path: &Path) -> bool {
        self.documents.remove(path).is_some()
    }

    /// A snapshot of an open document (O(1): the rope is shared). The map's lock is released
    /// before this returns, so holding the snapshot never blocks the editor.
    pub fn get(&self, path: &Path) -> Option<Document> {
        self.documents.get(path).map(|document| document.clone())
    }

    /// Whether `path` is open.
    pub fn is_open(&self, path: &Path) -> bool {
        self.documents.contains_key(path)
    }

    /// Paths of all open documents (a snapshot, unordered).
    pub fn open_paths(&self) -> Vec<PathBuf> {
        self.documents.iter().map(|entry| entry.key().clone()).collect()
    }

    /// The current text of `path`: the open buffer if there is one, else the file on disk.
    pub fn text(&self, path: &Path, max_bytes: u64) -> Result<SourceText, ReadError> {
        if let Some(document) = self.get(path) {
            let language = Language::from_name(&document.language_id).or_else(|| Language::from_path(path));
            return Ok(SourceText {
                text: document.text,
                origin: Origin::Buffer { version: document.version },
                language,
            });
        }
        load_from_disk(path, max_bytes)
    }
}

/// Reads a text file from disk.
///
/// Errors: [`ReadError::NotFound`], [`ReadError::IsDirectory`], [`ReadError::NotRegularFile`]
/// (sockets, devices), [`ReadError::TooLarge`] when over `max_bytes`, [`ReadError::Binary`] when
/// the first [`BINARY_PROBE_BYTES`] hold a NUL byte, [`ReadError::Io`] otherwise. Invalid UTF-8
/// is replaced with U+FFFD and reported through [`Origin::Disk`]`{ lossy: true }`.
pub fn load_from_disk(path: &Path, max_bytes: u64) -> Result<SourceText, ReadError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound { path: path.to_path_buf() },
        _ => ReadError::Io { path: path.to_path_buf(), source },
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if metadata.is_dir() {
        return Err(ReadError::IsDirectory { path: path.to_path_buf() });
    }
    if !metadata.is_file() {
        return Err(ReadError::NotRegularFile { path: path.to_path_buf() });
    }
    if metadata.len() > max_bytes {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), size: metadata.len(), limit: max_bytes });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    if let Some(offset) = memchr_nul(&bytes[..bytes.len().min(BINARY_PROBE_BYTES)]) {
        return Err(ReadError::Binary { path: path.to_path_buf(), offset });
    }
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    };
    Ok(SourceText {
        text: Rope::from_str(&text),
        origin: Origin::Disk { modified: metadata.modified().ok(), lossy },
        language: Language::from_path(path),
    })
}

/// The content hash tools report and compare (`file_read`, `edit_preview`, `edit_apply`'s
/// `expected_hash`): `sha256:` and the lowercase hex SHA-256 of the text's UTF-8 bytes — for a
/// UTF-8 file on disk, the same as `sha256sum FILE`.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha256_name(&sha2::Sha256::digest(bytes))
}

/// The [`content_hash`] of a rope, without copying it into one buffer.
pub fn rope_hash(text: &Rope) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    for chunk in text.chunks() {
        hasher.update(chunk.as_bytes());
    }
    sha256_name(&hasher.finalize())
}

fn sha256_name(digest: &[u8]) -> String {
    let mut out = String::with_capacity(7 + 2 * digest.len());
    out.push_str("sha256:");
    for byte in digest {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    out
}

fn memchr_nul(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_buffers_win_over_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.go");
        std::fs::write(&path, "package main\n").unwrap();
        let store = DocumentStore::new();
        let disk = store.text(&path, 1024).unwrap();
        assert_eq!(disk.text.to_string(), "package main\n");
        assert!(matches!(disk.origin, Origin::Disk { lossy: false, .. }));
        assert_eq!(disk.language, Some(Language::Go));

        store.open(path.clone(), "package main // unsaved\n", 3, "go".into());
        let live = store.text(&path, 1024).unwrap();
        assert_eq!(live.text.to_string(), "package main // unsaved\n");
        assert_eq!(live.origin, Origin::Buffer { version: 3 });
        assert!(store.replace_text(&path, "package other\n", 4));
        assert_eq!(store.get(&path).unwrap().version, 4);
        assert!(store.close(&path));
        assert_eq!(store.text(&path, 1024).unwrap().text.to_string(), "package main\n");
    }

    #[test]
    fn disk_read_errors_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.txt");
        assert!(matches!(load_from_disk(&missing, 1024), Err(ReadError::NotFound { .. })));
        assert!(matches!(load_from_disk(dir.path(), 1024), Err(ReadError::IsDirectory { .. })));
        let binary = dir.path().join("a.bin");
        std::fs::write(&binary, b"\x7fELF\x02\x01\x00\x00").unwrap();
        assert!(matches!(load_from_disk(&binary, 1024), Err(ReadError::Binary { offset: 6, .. })));
        let big = dir.path().join("big.txt");
        std::fs::write(&big, "x".repeat(2048)).unwrap();
        assert!(matches!(load_from_disk(&big, 1024), Err(ReadError::TooLarge { size: 2048, limit: 1024, .. })));
        let latin1 = dir.path().join("latin1.txt");
        std::fs::write(&latin1, b"caf\xe9\n").unwrap();
        let text = load_from_disk(&latin1, 1024).unwrap();
        assert_eq!(text.text.to_string(), "caf\u{fffd}\n");
        assert!(matches!(text.origin, Origin::Disk { lossy: true, .. }));
    }
}
