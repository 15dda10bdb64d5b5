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
use lsp_types::TextDocumentContentChangeEvent;
use ropey::Rope;

pub use language::Language;
pub use position::Encoding;

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

/// What [`DocumentStore::apply_changes`] did.
#[derive(Debug, Clone)]
pub struct AppliedChanges {
    /// The buffer's version before the changes.
    pub previous_version: i32,
    /// The buffer's text after them.
    pub text: Rope,
    /// The changes with ranges in each requested target encoding, in order.
    pub translated: Vec<Vec<TextDocumentContentChangeEvent>>,
}

/// Why an editor change could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    #[error("{path} is not open (didChange without didOpen)")]
    NotOpen { path: PathBuf },
}

fn from_lsp(position: lsp_types::Position) -> position::Position {
    position::Position { line: position.line, character: position.character }
}

fn to_lsp(position: position::Position) -> lsp_types::Position {
    lsp_types::Position { line: position.line, character: position.character }
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

    /// Applies an editor's `textDocument/didChange` (LSP 3.17) to an open buffer: each content
    /// change in order, ranges counted in `encoding` (a change without a range replaces the whole
    /// text), and sets the buffer's version to `version`.
    ///
    /// Returns the version the changes were made against, the new text (an O(1) snapshot), and
    /// the same changes re-expressed for each encoding in `targets` (index-aligned): every range
    /// is converted against the text as it stood just before that change, so a server that
    /// applies them in order in its own encoding ends with the same text. Each change costs
    /// O(log n) in the document plus the lengths of the lines its ends fall on.
    ///
    /// Errors: [`ChangeError::NotOpen`] when `path` is not open. Out-of-range positions clamp
    /// (see [`position::position_to_offset`]); a range whose end precedes its start is empty.
    pub fn apply_changes(
        &self,
        path: &Path,
        version: i32,
        changes: &[TextDocumentContentChangeEvent],
        encoding: Encoding,
        targets: &[Encoding],
    ) -> Result<AppliedChanges, ChangeError> {
        let mut document =
            self.documents.get_mut(path).ok_or_else(|| ChangeError::NotOpen { path: path.to_path_buf() })?;
        let mut translated: Vec<Vec<TextDocumentContentChangeEvent>> =
            targets.iter().map(|_| Vec::with_capacity(changes.len())).collect();
        for change in changes {
            let Some(range) = change.range else {
                document.text = Rope::from_str(&change.text);
                for out in &mut translated {
                    out.push(change.clone());
                }
                continue;
            };
            let text = &document.text;
            let (start, _) = position::position_to_offset(text, from_lsp(range.start), encoding);
            let (end, _) = position::position_to_offset(text, from_lsp(range.end), encoding);
            let end = end.max(start);
            for (target, out) in targets.iter().zip(&mut translated) {
                if *target == encoding {
                    out.push(change.clone());
                    continue;
                }
                let (start, _) = position::offset_to_position(text, start, *target);
                let (end, _) = position::offset_to_position(text, end, *target);
                out.push(TextDocumentContentChangeEvent {
                    range: Some(lsp_types::Range { start: to_lsp(start), end: to_lsp(end) }),
                    range_length: None,
                    text: change.text.clone(),
                });
            }
            let (start_char, end_char) = (text.byte_to_char(start), text.byte_to_char(end));
            let rope = &mut document.text;
            rope.remove(start_char..end_char);
            rope.insert(start_char, &change.text);
        }
        let previous_version = std::mem::replace(&mut document.version, version);
        Ok(AppliedChanges { previous_version, text: document.text.clone(), translated })
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

    /// Applies changes the way a server does: in order, ranges in `encoding`.
    fn replay(text: &str, changes: &[TextDocumentContentChangeEvent], encoding: Encoding) -> String {
        let mut rope = Rope::from_str(text);
        for change in changes {
            match change.range {
                None => rope = Rope::from_str(&change.text),
                Some(range) => {
                    let (start, _) = position::position_to_offset(&rope, from_lsp(range.start), encoding);
                    let (end, _) = position::position_to_offset(&rope, from_lsp(range.end), encoding);
                    let (start, end) = (rope.byte_to_char(start), rope.byte_to_char(end));
                    rope.remove(start..end);
                    rope.insert(start, &change.text);
                }
            }
        }
        rope.to_string()
    }

    #[test]
    fn editor_changes_apply_in_order_and_translate_to_every_encoding() {
        let store = DocumentStore::new();
        let path = PathBuf::from("/w/a.go");
        let original = "x := \"😀\" // é\r\ny := 1\n";
        store.open(path.clone(), original, 1, "go".into());
        let change = |(l1, c1): (u32, u32), (l2, c2): (u32, u32), text: &str| TextDocumentContentChangeEvent {
            range: Some(lsp_types::Range {
                start: lsp_types::Position { line: l1, character: c1 },
                end: lsp_types::Position { line: l2, character: c2 },
            }),
            range_length: None,
            text: text.to_owned(),
        };
        // In UTF-16 the emoji ends at column 8. Insert after it, then replace `é` (moved by the
        // first change to column 16), then join the lines across the CRLF.
        let changes = [change((0, 8), (0, 8), "🎉!"), change((0, 16), (0, 17), "e"), change((0, 17), (1, 0), " ")];
        let targets = [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32];
        let applied = store.apply_changes(&path, 2, &changes, Encoding::Utf16, &targets).unwrap();
        let expected = "x := \"😀🎉!\" // e y := 1\n";
        assert_eq!(applied.text.to_string(), expected);
        assert_eq!(applied.previous_version, 1);
        assert_eq!(store.get(&path).unwrap().version, 2);
        for (encoding, translated) in targets.iter().zip(&applied.translated) {
            assert_eq!(replay(original, translated, *encoding), expected, "{encoding:?}");
        }
        // The first change in UTF-8: `x := "` is 6 bytes, the emoji 4.
        assert_eq!(applied.translated[0][0].range.unwrap().start.character, 10);
        let full = TextDocumentContentChangeEvent { range: None, range_length: None, text: "new\n".into() };
        let applied = store.apply_changes(&path, 3, &[full], Encoding::Utf16, &[Encoding::Utf8]).unwrap();
        assert_eq!(applied.text.to_string(), "new\n");
        let missing = store.apply_changes(Path::new("/w/b.go"), 1, &[], Encoding::Utf16, &[]);
        assert!(matches!(missing, Err(ChangeError::NotOpen { .. })));
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
