//! The live buffer store, and reading text from disk when no buffer is open.
//!
//! A document the editor has open is the truth: [`DocumentStore::text`] returns its rope, not
//! the disk. Files not open are read from disk on demand ([`load_from_disk`]), with the size and
//! binary checks every tool relies on. Position conversion lives in [`position`] and nowhere
//! else.

mod disk_cache;
pub mod language;
pub mod position;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::{Condvar, Mutex};

use dashmap::DashMap;
use ropey::Rope;

pub use language::Language;
pub use position::{Encoding, Position};

use crate::workspace::DocumentId;

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

/// One change to an open document, as an editor sends it (LSP 3.17
/// `TextDocumentContentChangeEvent`): `range` in the code units of the encoding given with it,
/// against the text as it stands just before this change; no range replaces the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChange {
    pub range: Option<(Position, Position)>,
    pub text: String,
}

/// One change to a document's text in bytes: replace `range` (byte offsets into the text as
/// it stood before) with `text`. What agents' edits are made of, and what a [`TextChange`]
/// becomes once its positions are converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteEdit {
    pub range: std::ops::Range<usize>,
    pub text: String,
}

/// One change as the store applied it: the text just before it (an O(1) snapshot), the byte
/// range it replaced in that text (`None`: the whole text) and the new text. Each language
/// server's client converts `range` into its own encoding against `before`, so a server that
/// applies the changes in order ends with the same text.
#[derive(Debug, Clone)]
pub struct AppliedChange {
    pub before: Rope,
    pub range: Option<std::ops::Range<usize>>,
    pub text: String,
}

/// What a change to an open document did (see [`DocumentStore::change`]).
#[derive(Debug, Clone)]
pub struct DocumentChange {
    /// The version the changes were made against.
    pub previous_version: i32,
    /// The version after them.
    pub version: i32,
    /// The text after them (an O(1) snapshot).
    pub text: Rope,
    pub language_id: String,
    /// The changes, in the order they were applied.
    pub changes: Vec<AppliedChange>,
}

/// Why a change to an open document could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    #[error("{id} is not open (a change without didOpen)")]
    NotOpen { id: DocumentId },
    /// The buffer moved on since the change was computed (an agent's edit raced the editor).
    #[error("{id} is at version {current}, not {expected}")]
    VersionMismatch { id: DocumentId, expected: i32, current: i32 },
    /// Byte edits that overlap, leave the text or split a character.
    #[error("invalid edit of {id}: {reason}")]
    InvalidEdit { id: DocumentId, reason: String },
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
    /// Where `text`'s lines start, when known: a text the disk cache keeps has them, built once
    /// when it was kept (`disk_cache.rs`); an editor's buffer, which changes, has none.
    pub lines: Option<std::sync::Arc<position::LineStarts>>,
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
    /// The path is under the workspace root but the file opened is not: a directory on it was
    /// swapped for a symlink leading out between the path's check and the open.
    #[error("{path} leads outside the workspace root (to {real}) through a symlink")]
    Escaped { path: PathBuf, real: PathBuf },
}

impl ReadError {
    /// The read error for a failed [`crate::workspace::open::open_regular`] of `path`.
    pub fn from_open(err: crate::workspace::open::OpenError, path: &Path) -> ReadError {
        use crate::workspace::open::OpenError;
        let path = path.to_path_buf();
        match err {
            OpenError::NotFound => ReadError::NotFound { path },
            OpenError::IsDirectory => ReadError::IsDirectory { path },
            OpenError::NotRegularFile => ReadError::NotRegularFile { path },
            OpenError::Escaped { real } => ReadError::Escaped { path, real },
            OpenError::Io(source) => ReadError::Io { path, source },
        }
    }
}

/// Bytes inspected for a NUL byte when deciding whether a file is binary.
pub const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// The live buffer store, keyed by [`DocumentId`] (so every spelling of a file — through a
/// symlinked root, percent-encoded, relative — is one document), with a signal for waiters
/// ([`DocumentStore::wait_until`]).
#[derive(Debug, Default)]
pub struct DocumentStore {
    /// foldhash, as the disk cache's entries: DashMap hashes a key twice a lookup (its shard,
    /// then the shard's table), and a references answer looks up each of its files.
    documents: DashMap<DocumentId, Document, foldhash::fast::RandomState>,
    /// Bumped (and waiters woken) on every open, change and close.
    generation: Mutex<u64>,
    changed: Condvar,
    /// Files read from disk under this root must really be under it (see [`load_from_disk`]).
    root: Option<PathBuf>,
    /// Texts of files not open, reused while unchanged on disk.
    disk_cache: disk_cache::DiskCache,
}

impl DocumentStore {
    pub fn new() -> DocumentStore {
        DocumentStore::default()
    }

    /// A store whose disk reads of paths under `root` (canonical) are checked, on the opened
    /// descriptor, to be really under it.
    pub fn confined_to(root: &Path) -> DocumentStore {
        DocumentStore { root: Some(root.to_path_buf()), ..DocumentStore::default() }
    }

    fn bump(&self) {
        let mut generation = self.generation.lock();
        *generation += 1;
        self.changed.notify_all();
    }

    /// Records an opened buffer (LSP `textDocument/didOpen`), replacing any previous state.
    /// Returns the previous state when the document was open already (a reload).
    pub fn open(&self, id: DocumentId, text: &str, version: i32, language_id: String) -> Option<Document> {
        let previous = self.documents.insert(id, Document { text: Rope::from_str(text), version, language_id });
        self.bump();
        previous
    }

    /// Applies an editor's changes (LSP 3.17 `textDocument/didChange`) to an open buffer: each
    /// change in order, its range counted in `encoding` against the text just before it, and
    /// sets the buffer's version to `version`. Each change costs O(log n) in the document plus
    /// the lengths of the lines its ends fall on.
    ///
    /// Errors: [`ChangeError::NotOpen`]. Out-of-range positions clamp (see
    /// [`position::position_to_offset`]); a range whose end precedes its start is empty.
    pub fn change(
        &self,
        id: &DocumentId,
        version: i32,
        changes: &[TextChange],
        encoding: Encoding,
    ) -> Result<DocumentChange, ChangeError> {
        let mut document = self.documents.get_mut(id).ok_or_else(|| ChangeError::NotOpen { id: id.clone() })?;
        let mut applied = Vec::with_capacity(changes.len());
        for change in changes {
            let before = document.text.clone();
            let range = change.range.map(|(start, end)| {
                let (start, _) = position::position_to_offset(&before, start, encoding);
                let (end, _) = position::position_to_offset(&before, end, encoding);
                start..end.max(start)
            });
            replace(&mut document.text, range.clone(), &change.text);
            applied.push(AppliedChange { before, range, text: change.text.clone() });
        }
        let result = changed(&mut document, version, applied);
        drop(document);
        self.bump();
        Ok(result)
    }

    /// Applies byte edits (non-overlapping ranges of the current text, in any order) to an
    /// open buffer if it is still at `expected_version`, giving it version
    /// `expected_version + 1`. The changes are applied from the end of the text backwards, so
    /// each range stays valid against the text just before it.
    ///
    /// Errors: [`ChangeError::NotOpen`], [`ChangeError::VersionMismatch`] when the buffer moved
    /// on, [`ChangeError::InvalidEdit`] for overlapping ranges, ranges past the end or inside a
    /// character. Nothing changes on an error.
    pub fn edit(
        &self,
        id: &DocumentId,
        expected_version: i32,
        edits: &[ByteEdit],
    ) -> Result<DocumentChange, ChangeError> {
        let mut document = self.documents.get_mut(id).ok_or_else(|| ChangeError::NotOpen { id: id.clone() })?;
        if document.version != expected_version {
            return Err(ChangeError::VersionMismatch {
                id: id.clone(),
                expected: expected_version,
                current: document.version,
            });
        }
        let ordered =
            check_edits(&document.text, edits).map_err(|reason| ChangeError::InvalidEdit { id: id.clone(), reason })?;
        let mut applied = Vec::with_capacity(ordered.len());
        for edit in ordered {
            let before = document.text.clone();
            replace(&mut document.text, Some(edit.range.clone()), &edit.text);
            applied.push(AppliedChange { before, range: Some(edit.range.clone()), text: edit.text.clone() });
        }
        let result = changed(&mut document, expected_version.saturating_add(1), applied);
        drop(document);
        self.bump();
        Ok(result)
    }

    /// Forgets a buffer (LSP `textDocument/didClose`); the disk is the truth again. Returns
    /// whether it was open.
    pub fn close(&self, id: &DocumentId) -> bool {
        let closed = self.documents.remove(id).is_some();
        self.bump();
        closed
    }

    /// A snapshot of an open document (O(1): the rope is shared). The map's lock is released
    /// before this returns, so holding the snapshot never blocks the editor.
    pub fn get(&self, id: &DocumentId) -> Option<Document> {
        self.documents.get(id).map(|document| document.clone())
    }

    /// Whether `id` is open.
    pub fn is_open(&self, id: &DocumentId) -> bool {
        self.documents.contains_key(id)
    }

    /// The ids of all open documents (a snapshot, unordered).
    pub fn open_ids(&self) -> Vec<DocumentId> {
        self.documents.iter().map(|entry| entry.key().clone()).collect()
    }

    /// Waits until `done` holds for the store (checked now and after every open, change and
    /// close), at most `limit`. Returns whether it held. Blocks the calling thread: call it
    /// from a tool's thread, never from an async task.
    pub fn wait_until(&self, limit: std::time::Duration, mut done: impl FnMut(&DocumentStore) -> bool) -> bool {
        let deadline = std::time::Instant::now() + limit;
        let mut generation = self.generation.lock();
        loop {
            if done(self) {
                return true;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            let seen = *generation;
            self.changed.wait_while_for(&mut generation, |now| *now == seen, left);
        }
    }

    /// The current text of `id`: the open buffer if there is one, else the file on disk (read
    /// as [`load_from_disk`] reads it, or that text again while the file is unchanged: see
    /// `disk_cache`).
    pub fn text(&self, id: &DocumentId, max_bytes: u64) -> Result<SourceText, ReadError> {
        self.text_after_lstat(id, max_bytes, None)
    }

    /// [`DocumentStore::text`], given the `lstat` of `id`'s path the caller has just taken
    /// (a [`crate::workspace::Resolver`] takes one while resolving a path): the cached text is
    /// checked against it instead of against a new one. `None` takes one, as `text` does.
    pub fn text_after_lstat(
        &self,
        id: &DocumentId,
        max_bytes: u64,
        lstat: Option<&std::fs::Metadata>,
    ) -> Result<SourceText, ReadError> {
        if let Some(document) = self.get(id) {
            let language = Language::from_name(&document.language_id).or_else(|| Language::from_path(id.path()));
            return Ok(SourceText {
                text: document.text,
                origin: Origin::Buffer { version: document.version },
                language,
                lines: None,
            });
        }
        let cached = match lstat {
            Some(metadata) => self.disk_cache.get_as_of(id, metadata, max_bytes),
            None => self.disk_cache.get(id, id.path(), max_bytes),
        };
        if let Some(text) = cached {
            return Ok(text);
        }
        let (text, metadata) = load_with_metadata(id.path(), max_bytes, self.root.as_deref())?;
        self.disk_cache.put(id, &metadata, &text);
        Ok(text)
    }
}

/// Gives `document` (its text already changed by `applied`) its new `version`, and says what
/// changed.
fn changed(document: &mut Document, version: i32, applied: Vec<AppliedChange>) -> DocumentChange {
    let previous_version = std::mem::replace(&mut document.version, version);
    DocumentChange {
        previous_version,
        version,
        text: document.text.clone(),
        language_id: document.language_id.clone(),
        changes: applied,
    }
}

/// Replaces `range` (bytes; `None`: everything) of `rope` with `text`.
fn replace(rope: &mut Rope, range: Option<std::ops::Range<usize>>, text: &str) {
    match range {
        None => *rope = Rope::from_str(text),
        Some(range) => {
            let (start, end) = (position::offset_to_char(rope, range.start), position::offset_to_char(rope, range.end));
            rope.remove(start..end);
            rope.insert(start, text);
        }
    }
}

/// The text of `base` with `edits` applied (byte ranges of `base`, non-overlapping, any
/// order). Errors: a range outside the text, splitting a character, or overlapping another.
pub fn apply_edits(base: &Rope, edits: &[ByteEdit]) -> Result<String, String> {
    let ordered = check_edits(base, edits)?;
    let mut text = base.to_string();
    for edit in ordered {
        text.replace_range(edit.range.clone(), &edit.text);
    }
    Ok(text)
}

/// `edits` sorted from the end of `text` backwards, checked: inside the text, on character
/// boundaries, not overlapping.
fn check_edits<'a>(text: &Rope, edits: &'a [ByteEdit]) -> Result<Vec<&'a ByteEdit>, String> {
    let mut ordered: Vec<&ByteEdit> = edits.iter().collect();
    ordered.sort_by(|a, b| b.range.start.cmp(&a.range.start).then(b.range.end.cmp(&a.range.end)));
    let mut floor = usize::MAX;
    for edit in &ordered {
        let (start, end) = (edit.range.start, edit.range.end);
        if start > end || end > text.len_bytes() {
            return Err(format!("range {start}..{end} is outside the text ({} bytes)", text.len_bytes()));
        }
        if !position::is_char_boundary(text, start) || !position::is_char_boundary(text, end) {
            return Err(format!("range {start}..{end} splits a character"));
        }
        if end > floor {
            return Err(format!("range {start}..{end} overlaps another edit"));
        }
        floor = start;
    }
    Ok(ordered)
}

/// Reads a text file from disk, opened without following a symlink on its last component or
/// blocking, and checked on the descriptor ([`crate::workspace::open::open_regular`]): a
/// regular file, and when `root` is given and `path` is under it, really under it.
///
/// Errors: [`ReadError::NotFound`], [`ReadError::IsDirectory`], [`ReadError::NotRegularFile`]
/// (sockets, devices, FIFOs, a symlink swapped in), [`ReadError::Escaped`], [`ReadError::TooLarge`]
/// when over `max_bytes`, [`ReadError::Binary`] when the first [`BINARY_PROBE_BYTES`] hold a NUL
/// byte, [`ReadError::Io`] otherwise. Invalid UTF-8 is replaced with U+FFFD and reported through
/// [`Origin::Disk`]`{ lossy: true }`.
pub fn load_from_disk(path: &Path, max_bytes: u64, root: Option<&Path>) -> Result<SourceText, ReadError> {
    load_with_metadata(path, max_bytes, root).map(|(text, _)| text)
}

/// [`load_from_disk`], with the metadata of the descriptor read.
fn load_with_metadata(
    path: &Path,
    max_bytes: u64,
    root: Option<&Path>,
) -> Result<(SourceText, std::fs::Metadata), ReadError> {
    let (bytes, metadata) = read_bytes(path, max_bytes, root)?;
    if let Some(offset) = memchr_nul(&bytes[..bytes.len().min(BINARY_PROBE_BYTES)]) {
        return Err(ReadError::Binary { path: path.to_path_buf(), offset });
    }
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    };
    let modified = metadata.modified().ok();
    Ok((
        SourceText {
            text: Rope::from_str(&text),
            origin: Origin::Disk { modified, lossy },
            language: Language::from_path(path),
            lines: None,
        },
        metadata,
    ))
}

/// The bytes of the file at `path`, as stored, opened and checked as [`load_from_disk`] does
/// (no text checks), with the descriptor's metadata.
///
/// Errors: as [`load_from_disk`], except [`ReadError::Binary`].
pub fn read_bytes(path: &Path, max_bytes: u64, root: Option<&Path>) -> Result<(Vec<u8>, std::fs::Metadata), ReadError> {
    use crate::workspace::open::open_regular;
    use std::io::Read;
    let io = |source: std::io::Error| ReadError::Io { path: path.to_path_buf(), source };
    let (file, metadata) = open_regular(path, root).map_err(|err| ReadError::from_open(err, path))?;
    if metadata.len() > max_bytes {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), size: metadata.len(), limit: max_bytes });
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    // The file may grow after the fstat: never read past the limit.
    (&file).take(max_bytes + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge { path: path.to_path_buf(), size: bytes.len() as u64, limit: max_bytes });
    }
    Ok((bytes, metadata))
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

    fn id(path: &Path) -> DocumentId {
        DocumentId::from_canonical(path)
    }

    #[test]
    fn open_buffers_win_over_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.go");
        std::fs::write(&path, "package main\n").unwrap();
        let store = DocumentStore::new();
        let disk = store.text(&id(&path), 1024).unwrap();
        assert_eq!(disk.text.to_string(), "package main\n");
        assert!(matches!(disk.origin, Origin::Disk { lossy: false, .. }));
        assert_eq!(disk.language, Some(Language::Go));

        assert!(store.open(id(&path), "package main // unsaved\n", 3, "go".into()).is_none());
        let live = store.text(&id(&path), 1024).unwrap();
        assert_eq!(live.text.to_string(), "package main // unsaved\n");
        assert_eq!(live.origin, Origin::Buffer { version: 3 });
        // Opening it again is a reload: the previous state comes back.
        let previous = store.open(id(&path), "package other\n", 1, "go".into()).unwrap();
        assert_eq!(previous.version, 3);
        assert_eq!(store.get(&id(&path)).unwrap().version, 1);
        assert!(store.close(&id(&path)));
        assert_eq!(store.text(&id(&path), 1024).unwrap().text.to_string(), "package main\n");
    }

    /// Applies LSP content changes the way a server does: in order, ranges in `encoding`.
    fn replay(text: &str, changes: &[lsp_types::TextDocumentContentChangeEvent], encoding: Encoding) -> String {
        let mut rope = Rope::from_str(text);
        for change in changes {
            let range = change.range.map(|range| {
                let at = |p: lsp_types::Position| {
                    position::position_to_offset(&rope, Position { line: p.line, character: p.character }, encoding).0
                };
                at(range.start)..at(range.end)
            });
            replace(&mut rope, range, &change.text);
        }
        rope.to_string()
    }

    /// An editor's changes in UTF-16 are applied in order, and each server's client converts
    /// them into its own encoding against the text just before each change
    /// (`backends::client::lsp_change`): replayed by a server in that encoding, they give the
    /// same text.
    #[test]
    fn editor_changes_apply_in_order_and_convert_to_every_encoding() {
        let store = DocumentStore::new();
        let doc = id(Path::new("/w/a.go"));
        let original = "x := \"😀\" // é\r\ny := 1\n";
        store.open(doc.clone(), original, 1, "go".into());
        let change = |(l1, c1): (u32, u32), (l2, c2): (u32, u32), text: &str| TextChange {
            range: Some((Position { line: l1, character: c1 }, Position { line: l2, character: c2 })),
            text: text.to_owned(),
        };
        // In UTF-16 the emoji ends at column 8. Insert after it, then replace `é` (moved by the
        // first change to column 16), then join the lines across the CRLF.
        let changes = [change((0, 8), (0, 8), "🎉!"), change((0, 16), (0, 17), "e"), change((0, 17), (1, 0), " ")];
        let applied = store.change(&doc, 2, &changes, Encoding::Utf16).unwrap();
        let expected = "x := \"😀🎉!\" // e y := 1\n";
        assert_eq!(applied.text.to_string(), expected);
        assert_eq!((applied.previous_version, applied.version), (1, 2));
        assert_eq!(store.get(&doc).unwrap().version, 2);
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let converted: Vec<_> =
                applied.changes.iter().map(|c| crate::backends::client::lsp_change(c, encoding)).collect();
            assert_eq!(replay(original, &converted, encoding), expected, "{encoding:?}");
            if encoding == Encoding::Utf8 {
                // The first change in UTF-8: `x := "` is 6 bytes, the emoji 4.
                assert_eq!(converted[0].range.unwrap().start.character, 10);
            }
        }
        let full = TextChange { range: None, text: "new\n".into() };
        let applied = store.change(&doc, 3, &[full], Encoding::Utf16).unwrap();
        assert_eq!(applied.text.to_string(), "new\n");
        assert!(applied.changes[0].range.is_none());
        let missing = store.change(&id(Path::new("/w/b.go")), 1, &[], Encoding::Utf16);
        assert!(matches!(missing, Err(ChangeError::NotOpen { .. })));
    }

    /// An agent's byte edits of an open buffer: checked against the version, applied from the
    /// end, and convertible for every server like an editor's.
    #[test]
    fn byte_edits_apply_at_the_expected_version_only() {
        let store = DocumentStore::new();
        let doc = id(Path::new("/w/a.py"));
        let original = "def 😀():\n    return 1\n";
        store.open(doc.clone(), original, 4, "python".into());
        let edits = [ByteEdit { range: 0..3, text: "async def".into() }, ByteEdit { range: 23..24, text: "2".into() }];
        assert!(matches!(store.edit(&doc, 3, &edits), Err(ChangeError::VersionMismatch { current: 4, .. })));
        let overlapping =
            [ByteEdit { range: 0..5, text: String::new() }, ByteEdit { range: 4..6, text: String::new() }];
        assert!(matches!(store.edit(&doc, 4, &overlapping), Err(ChangeError::InvalidEdit { .. })));
        let split = [ByteEdit { range: 5..6, text: String::new() }];
        assert!(matches!(store.edit(&doc, 4, &split), Err(ChangeError::InvalidEdit { .. })));
        let applied = store.edit(&doc, 4, &edits).unwrap();
        let expected = "async def 😀():\n    return 2\n";
        assert_eq!(applied.text.to_string(), expected);
        assert_eq!(apply_edits(&Rope::from_str(original), &edits).unwrap(), expected);
        assert_eq!(store.get(&doc).unwrap().version, 5);
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let converted: Vec<_> =
                applied.changes.iter().map(|c| crate::backends::client::lsp_change(c, encoding)).collect();
            assert_eq!(replay(original, &converted, encoding), expected, "{encoding:?}");
        }
    }

    /// A waiter is woken by the change it waits for, not by polling.
    #[test]
    fn waiters_wake_on_changes() {
        let store = std::sync::Arc::new(DocumentStore::new());
        let doc = id(Path::new("/w/a.go"));
        store.open(doc.clone(), "a", 1, "go".into());
        let writer = {
            let (store, doc) = (store.clone(), doc.clone());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                store.change(&doc, 2, &[TextChange { range: None, text: "b".into() }], Encoding::Utf8).unwrap();
            })
        };
        let started = std::time::Instant::now();
        let long = std::time::Duration::from_secs(10);
        assert!(store.wait_until(long, |s| s.get(&doc).is_some_and(|d| d.version == 2)));
        assert!(started.elapsed() < long);
        writer.join().unwrap();
        assert!(!store.wait_until(std::time::Duration::from_millis(20), |s| s.get(&doc).is_none()));
    }

    #[test]
    fn disk_read_errors_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.txt");
        assert!(matches!(load_from_disk(&missing, 1024, None), Err(ReadError::NotFound { .. })));
        assert!(matches!(load_from_disk(dir.path(), 1024, None), Err(ReadError::IsDirectory { .. })));
        let binary = dir.path().join("a.bin");
        std::fs::write(&binary, b"\x7fELF\x02\x01\x00\x00").unwrap();
        assert!(matches!(load_from_disk(&binary, 1024, None), Err(ReadError::Binary { offset: 6, .. })));
        let big = dir.path().join("big.txt");
        std::fs::write(&big, "x".repeat(2048)).unwrap();
        assert!(matches!(load_from_disk(&big, 1024, None), Err(ReadError::TooLarge { size: 2048, limit: 1024, .. })));
        let latin1 = dir.path().join("latin1.txt");
        std::fs::write(&latin1, b"caf\xe9\n").unwrap();
        let text = load_from_disk(&latin1, 1024, None).unwrap();
        assert_eq!(text.text.to_string(), "caf\u{fffd}\n");
        assert!(matches!(text.origin, Origin::Disk { lossy: true, .. }));
    }
}
