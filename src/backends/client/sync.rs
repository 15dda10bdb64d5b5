//! Document sync of one client (LSP 3.17 "Text Document Synchronization"): `didOpen`,
//! `didChange` (incremental, computed in the server's encoding, or full when the server asks
//! for it), `didSave`, `didClose`, and the bookkeeping of the text last sent to the server
//! ([`Synced`]): documents the editor has open are *pinned* (the editor's versions, closed
//! only by the editor); documents filepuff opened for a tool are closed when idle or changed
//! on disk.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_lsp::LanguageServer;
use lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, TextDocumentContentChangeEvent, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier,
};
use ropey::Rope;

use super::LspClient;
use crate::backends::BackendError;
use crate::documents::position::{self, Encoding};
use crate::documents::{AppliedChange, DocumentChange};

/// A document as the server last saw it.
#[derive(Debug, Clone)]
pub(super) struct Synced {
    pub(super) version: i32,
    pub(super) text: Rope,
    /// When this version was sent: taken before the message is handed to the server's loop,
    /// so that no answer to it (a `publishDiagnostics` read on another thread while this one
    /// was still returning from the send) can be stamped earlier and taken for a stale one.
    pub(super) sent: Instant,
    /// When a request last needed this document.
    used: Instant,
    /// Open in the editor: versions are the editor's, and only the editor closes it.
    pinned: bool,
}

impl LspClient {
    pub(super) fn synced(&self) -> parking_lot::MutexGuard<'_, HashMap<Url, Synced>> {
        self.synced.lock()
    }

    /// How the server wants document changes (LSP `TextDocumentSyncKind`); incremental when it
    /// did not say.
    fn sync_kind(&self) -> lsp_types::TextDocumentSyncKind {
        match &self.capabilities.text_document_sync {
            Some(lsp_types::TextDocumentSyncCapability::Kind(kind)) => *kind,
            Some(lsp_types::TextDocumentSyncCapability::Options(options)) => {
                options.change.unwrap_or(lsp_types::TextDocumentSyncKind::INCREMENTAL)
            }
            None => lsp_types::TextDocumentSyncKind::INCREMENTAL,
        }
    }

    /// The editor opened `uri` at `version` (its `didOpen`): the server gets `didOpen` with the
    /// editor's version, and the document is pinned.
    ///
    /// A document the server already has is closed (`didClose`) and opened again: one filepuff
    /// had opened on its own (from disk, for a tool), or one the editor opens again without
    /// closing it (a reload, its version back to 1) — the server then holds the editor's new
    /// text, and within each open the versions it sees only grow (LSP 3.17 "TextDocumentItem").
    /// When the server already holds exactly this version and text (a re-sync after a start got
    /// there first), nothing is sent.
    pub fn open_editor_document(
        &self,
        uri: &Url,
        language_id: &str,
        version: i32,
        text: &Rope,
    ) -> Result<(), BackendError> {
        let mut synced = self.synced();
        if let Some(doc) = synced.get_mut(uri) {
            if doc.pinned && doc.version == version && doc.text == *text {
                doc.used = Instant::now();
                return Ok(());
            }
            synced.remove(uri);
            self.send_close(uri)?;
        }
        self.send_open(&mut synced, uri, language_id, version, text)
    }

    /// Opens an editor document on a server that (re)started, unless the server already holds
    /// this version or a later one (the editor's own `didOpen`/`didChange` got there first).
    pub fn resync_editor_document(
        &self,
        uri: &Url,
        language_id: &str,
        version: i32,
        text: &Rope,
    ) -> Result<(), BackendError> {
        let mut synced = self.synced();
        match synced.get_mut(uri) {
            Some(doc) if doc.pinned && doc.version >= version => {
                doc.used = Instant::now();
                return Ok(());
            }
            Some(_) => {
                synced.remove(uri);
                self.send_close(uri)?;
            }
            None => {}
        }
        self.send_open(&mut synced, uri, language_id, version, text)
    }

    fn send_close(&self, uri: &Url) -> Result<(), BackendError> {
        self.server
            .notify::<lsp_types::notification::DidCloseTextDocument>(lsp_types::DidCloseTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
            })
            .map_err(|err| self.crashed(err))
    }

    fn send_open(
        &self,
        synced: &mut HashMap<Url, Synced>,
        uri: &Url,
        language_id: &str,
        version: i32,
        text: &Rope,
    ) -> Result<(), BackendError> {
        let now = Instant::now();
        self.server
            .notify::<lsp_types::notification::DidOpenTextDocument>(DidOpenTextDocumentParams {
                text_document: TextDocumentItem {
                    uri: uri.clone(),
                    language_id: language_id.to_owned(),
                    version,
                    text: text.to_string(),
                },
            })
            .map_err(|err| self.crashed(err))?;
        synced.insert(uri.clone(), Synced { version, text: text.clone(), sent: now, used: now, pinned: true });
        Ok(())
    }

    /// An open document changed (the editor's `didChange`, or an agent's edit of a buffer no
    /// editor holds): `change` says from which version to which, and how, in bytes.
    ///
    /// When the server holds exactly `change.previous_version`, the changes go as they are,
    /// each range converted into this server's encoding against the text just before it (as
    /// helix-lsp converts a changeset per client), or the whole text for a server that syncs
    /// fully. When it already holds `change.version` (a re-sync after a restart read the newer
    /// text), nothing is sent. Otherwise the server gets whatever brings it from the text it
    /// holds to the new one: a `didOpen`, or one computed change.
    pub fn change_editor_document(&self, uri: &Url, change: &DocumentChange) -> Result<(), BackendError> {
        let mut synced = self.synced();
        let Some(doc) = synced.get_mut(uri) else {
            drop(synced);
            return self.open_editor_document(uri, &change.language_id, change.version, &change.text);
        };
        if doc.version == change.version && doc.pinned {
            return Ok(());
        }
        let kind = self.sync_kind();
        if kind == lsp_types::TextDocumentSyncKind::NONE {
            return Ok(());
        }
        let content_changes = if kind == lsp_types::TextDocumentSyncKind::FULL {
            vec![TextDocumentContentChangeEvent { range: None, range_length: None, text: change.text.to_string() }]
        } else if doc.version == change.previous_version && doc.pinned {
            change.changes.iter().map(|applied| lsp_change(applied, self.encoding)).collect()
        } else {
            vec![incremental_change(&doc.text, &change.text, self.encoding)]
        };
        // A document filepuff opened itself carries filepuff's own version numbers; continue
        // above them so the server never sees a version go down.
        let version = if doc.pinned { change.version } else { change.version.max(doc.version + 1) };
        let sent = Instant::now();
        self.server
            .notify::<lsp_types::notification::DidChangeTextDocument>(DidChangeTextDocumentParams {
                text_document: VersionedTextDocumentIdentifier { uri: uri.clone(), version },
                content_changes,
            })
            .map_err(|err| self.crashed(err))?;
        doc.version = version;
        doc.text = change.text.clone();
        doc.sent = sent;
        doc.used = sent;
        Ok(())
    }

    /// The editor closed `uri`: the server gets `didClose`.
    pub fn close_editor_document(&self, uri: &Url) -> Result<(), BackendError> {
        if self.synced().remove(uri).is_none() {
            return Ok(());
        }
        self.server
            .notify::<lsp_types::notification::DidCloseTextDocument>(lsp_types::DidCloseTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
            })
            .map_err(|err| self.crashed(err))
    }

    /// The editor saved `uri`: the server gets `didSave`, with the text when it asked for it
    /// (`textDocumentSync.save.includeText`).
    pub fn save_editor_document(&self, uri: &Url, text: &Rope) -> Result<(), BackendError> {
        if !self.synced().contains_key(uri) {
            return Ok(());
        }
        let include_text = match &self.capabilities.text_document_sync {
            Some(lsp_types::TextDocumentSyncCapability::Options(options)) => matches!(
                &options.save,
                Some(lsp_types::TextDocumentSyncSaveOptions::SaveOptions(lsp_types::SaveOptions {
                    include_text: Some(true)
                }))
            ),
            _ => false,
        };
        self.server
            .notify::<lsp_types::notification::DidSaveTextDocument>(lsp_types::DidSaveTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
                text: include_text.then(|| text.to_string()),
            })
            .map_err(|err| self.crashed(err))
    }

    /// How many documents the server has open.
    pub fn synced_count(&self) -> usize {
        self.synced().len()
    }

    /// Whether the editor has documents open on this server (it must then keep running).
    pub fn has_editor_documents(&self) -> bool {
        self.synced().values().any(|doc| doc.pinned)
    }

    /// Makes the server see `text` as the content of `uri`: `didOpen` the first time, then an
    /// incremental `didChange` (one range: the span between the common prefix and suffix of the
    /// old and new text, in this server's encoding) whenever the text differs. A document the
    /// editor has open is left as the editor's changes made it: the server is asked about the
    /// editor's text.
    pub async fn sync(&self, uri: &Url, language_id: &str, text: &Rope) -> Result<(), BackendError> {
        let mut synced = self.synced();
        let crashed =
            |err: async_lsp::Error| BackendError::Crashed { server: self.name.clone(), message: err.to_string() };
        match synced.get_mut(uri) {
            None => {
                tracing::debug!(%uri, "didOpen");
                let sent = Instant::now();
                let mut server = self.server.clone();
                server
                    .did_open(DidOpenTextDocumentParams {
                        text_document: TextDocumentItem {
                            uri: uri.clone(),
                            language_id: language_id.to_owned(),
                            version: 1,
                            text: text.to_string(),
                        },
                    })
                    .map_err(crashed)?;
                synced.insert(uri.clone(), Synced { version: 1, text: text.clone(), sent, used: sent, pinned: false });
            }
            Some(doc) if doc.pinned => {
                // The editor's buffer is the truth of a document it has open: a question asked
                // about another text of it (read before the editor's latest change arrived) is
                // answered about the editor's text. Sending ours would put an older text at the
                // server under a version the editor's next change then reuses, and that change
                // would be dropped (`change_editor_document`), leaving the server's copy wrong.
                if doc.text != *text {
                    tracing::debug!(%uri, version = doc.version, "the editor's text, not the question's, stays at the server");
                }
                doc.used = Instant::now();
            }
            Some(doc) if doc.text != *text => {
                let change = incremental_change(&doc.text, text, self.encoding);
                doc.version += 1;
                tracing::debug!(%uri, version = doc.version, "didChange");
                let sent = Instant::now();
                let mut server = self.server.clone();
                server
                    .did_change(DidChangeTextDocumentParams {
                        text_document: VersionedTextDocumentIdentifier { uri: uri.clone(), version: doc.version },
                        content_changes: vec![change],
                    })
                    .map_err(crashed)?;
                doc.text = text.clone();
                doc.sent = sent;
                doc.used = sent;
            }
            Some(doc) => doc.used = Instant::now(),
        }
        Ok(())
    }

    /// Tells the server that `uri` changed on disk (written by an edit): a `didChange` with the
    /// new text when the server has the document open, and `workspace/didChangeWatchedFiles`
    /// either way (LSP 3.17), so its view of files it did not open is refreshed too.
    pub async fn file_changed(&self, uri: &Url, language_id: &str, text: &Rope) -> Result<(), BackendError> {
        let is_open = self.synced().contains_key(uri);
        if is_open {
            self.sync(uri, language_id, text).await?;
        }
        let mut server = self.server.clone();
        server
            .did_change_watched_files(lsp_types::DidChangeWatchedFilesParams {
                changes: vec![lsp_types::FileEvent { uri: uri.clone(), typ: lsp_types::FileChangeType::CHANGED }],
            })
            .map_err(|err| BackendError::Crashed { server: self.name.clone(), message: err.to_string() })
    }

    /// Files changed on disk behind filepuff's back (another editor, git, a build): the server
    /// gets `workspace/didChangeWatchedFiles`; a document it had open from filepuff is closed
    /// (`didClose`), so the next request opens it again with the current text — the editor's
    /// buffer if there is one, else the new disk content.
    pub async fn disk_changed(&self, changes: Vec<(Url, lsp_types::FileChangeType)>) -> Result<(), BackendError> {
        let mut server = self.server.clone();
        let crashed =
            |err: async_lsp::Error| BackendError::Crashed { server: self.name.clone(), message: err.to_string() };
        // A document the server has open whose disk content is what it was sent (filepuff's own
        // edit, told to the server already) stays open: closing it would drop the version the
        // server is about to report diagnostics for.
        let candidates: Vec<(Url, Rope)> = {
            let synced = self.synced();
            changes
                .iter()
                .filter_map(|(uri, _)| {
                    synced.get(uri).filter(|doc| !doc.pinned).map(|doc| (uri.clone(), doc.text.clone()))
                })
                .collect()
        };
        let unchanged: Vec<Url> = tokio::task::spawn_blocking(move || {
            candidates.into_iter().filter(|(uri, text)| disk_holds(uri, text)).map(|(uri, _)| uri).collect()
        })
        .await
        .unwrap_or_default();
        {
            let mut synced = self.synced();
            for (uri, _) in &changes {
                // The editor's buffer, not the disk, is the truth of a pinned document.
                if unchanged.contains(uri) {
                    continue;
                }
                if synced.get(uri).is_some_and(|doc| !doc.pinned) && synced.remove(uri).is_some() {
                    server
                        .did_close(lsp_types::DidCloseTextDocumentParams {
                            text_document: lsp_types::TextDocumentIdentifier { uri: uri.clone() },
                        })
                        .map_err(crashed)?;
                }
            }
        }
        let changes: Vec<lsp_types::FileEvent> =
            changes.into_iter().map(|(uri, typ)| lsp_types::FileEvent { uri, typ }).collect();
        tracing::debug!(server = %self.name, changes = ?changes.iter().map(|c| (c.uri.path(), c.typ)).collect::<Vec<_>>(), "didChangeWatchedFiles sent");
        server.did_change_watched_files(lsp_types::DidChangeWatchedFilesParams { changes }).map_err(crashed)
    }

    /// Closes (`didClose`) the documents no request needed for `max_age`; a later request opens
    /// them again with their then-current text.
    pub async fn close_idle_documents(&self, max_age: Duration) {
        let mut synced = self.synced();
        let idle: Vec<Url> = synced
            .iter()
            .filter(|(_, doc)| !doc.pinned && doc.used.elapsed() >= max_age)
            .map(|(u, _)| u.clone())
            .collect();
        for uri in idle {
            synced.remove(&uri);
            let mut server = self.server.clone();
            let _ = server.did_close(lsp_types::DidCloseTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri },
            });
        }
    }

    /// The version filepuff last sent for `uri`.
    pub async fn synced_version(&self, uri: &Url) -> Option<i32> {
        self.synced().get(uri).map(|doc| doc.version)
    }
}

/// Whether the file of `uri` holds exactly `text` (read at most one byte past its length).
fn disk_holds(uri: &Url, text: &Rope) -> bool {
    use std::io::Read;
    let Ok(path) = uri.to_file_path() else { return false };
    // Not following a symlink, not blocking on a FIFO.
    let Ok((file, _)) = crate::workspace::open::open_regular(&path, None) else { return false };
    let mut bytes = Vec::with_capacity(text.len_bytes());
    if file.take(text.len_bytes() as u64 + 1).read_to_end(&mut bytes).is_err() {
        return false;
    }
    bytes.len() == text.len_bytes() && text.bytes().eq(bytes.iter().copied())
}

/// One applied change as an LSP content change in `encoding` (its range converted against the
/// text just before it).
pub fn lsp_change(applied: &AppliedChange, encoding: Encoding) -> TextDocumentContentChangeEvent {
    let range = applied.range.as_ref().map(|range| {
        let (start, _) = position::offset_to_position(&applied.before, range.start, encoding);
        let (end, _) = position::offset_to_position(&applied.before, range.end, encoding);
        lsp_types::Range {
            start: lsp_types::Position { line: start.line, character: start.character },
            end: lsp_types::Position { line: end.line, character: end.character },
        }
    });
    TextDocumentContentChangeEvent { range, range_length: None, text: applied.text.clone() }
}

/// The smallest single-range change from `old` to `new`: the span between their common prefix
/// and common suffix, with its range in `encoding` units of `old` (LSP 3.17
/// `TextDocumentContentChangeEvent` with a range).
pub fn incremental_change(old: &Rope, new: &Rope, encoding: Encoding) -> TextDocumentContentChangeEvent {
    let old_text = old.to_string();
    let new_text = new.to_string();
    let (a, b) = (old_text.as_bytes(), new_text.as_bytes());
    let mut prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    while !old_text.is_char_boundary(prefix) || !new_text.is_char_boundary(prefix) {
        prefix -= 1;
    }
    // Never split a CRLF: a change starting between `\r` and `\n` would be ambiguous.
    if prefix > 0 && a.get(prefix - 1) == Some(&b'\r') {
        prefix -= 1;
    }
    let max_suffix = a.len().min(b.len()) - prefix;
    let mut suffix = a.iter().rev().zip(b.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
    while !old_text.is_char_boundary(a.len() - suffix) || !new_text.is_char_boundary(b.len() - suffix) {
        suffix -= 1;
    }
    if suffix > 0 && a.get(a.len() - suffix) == Some(&b'\n') && a.len() > suffix && a[a.len() - suffix - 1] == b'\r' {
        suffix -= 1;
    }
    let (start, _) = position::offset_to_position(old, prefix, encoding);
    let (end, _) = position::offset_to_position(old, a.len() - suffix, encoding);
    TextDocumentContentChangeEvent {
        range: Some(lsp_types::Range {
            start: lsp_types::Position { line: start.line, character: start.character },
            end: lsp_types::Position { line: end.line, character: end.character },
        }),
        range_length: None,
        text: new_text[prefix..b.len() - suffix].to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::ServerSpec;
    use crate::backends::client::StartOptions;
    use serde_json::Value;
    use std::path::Path;

    /// Applies a change the way a server does, in `encoding`.
    fn apply(old: &Rope, change: &TextDocumentContentChangeEvent, encoding: Encoding) -> String {
        let range = change.range.unwrap();
        let pos = |p: lsp_types::Position| position::Position { line: p.line, character: p.character };
        let (start, _) = position::position_to_offset(old, pos(range.start), encoding);
        let (end, _) = position::position_to_offset(old, pos(range.end), encoding);
        let text = old.to_string();
        format!("{}{}{}", &text[..start], change.text, &text[end..])
    }

    /// A real client against `tests/e2e/fake_lsp.py`, which logs every message it receives.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn sync_sends_open_then_incremental_change_then_close_when_idle() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("fake.log");
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fake_lsp.py");
        let spec = ServerSpec {
            name: "fake".into(),
            command: vec!["python3".into(), fake.display().to_string()],
            languages: vec![],
            root_markers: vec![],
            env: vec![("FAKE_LSP_LOG".into(), log.display().to_string())],
            initialization_options: None,
            settings: None,
            install_hint: String::new(),
            disabled: false,
            position_encoding: None,
        };
        let Some(python) = crate::backends::test_program("python3") else { return };
        let client = LspClient::start(&spec, &python, dir.path(), Duration::from_secs(10), &StartOptions::default())
            .await
            .unwrap();
        assert_eq!(client.encoding, Encoding::Utf16);
        let uri = Url::from_file_path(dir.path().join("a.go")).unwrap();
        client.sync(&uri, "go", &Rope::from_str("a😀b\n")).await.unwrap();
        client.sync(&uri, "go", &Rope::from_str("a😀xb\n")).await.unwrap();
        client.sync(&uri, "go", &Rope::from_str("a😀xb\n")).await.unwrap(); // unchanged: nothing sent
        client.close_idle_documents(Duration::ZERO).await;
        client.stop().await;
        let messages: Vec<Value> =
            std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let methods: Vec<&str> = messages.iter().filter_map(|m| m["method"].as_str()).collect();
        assert_eq!(
            methods,
            [
                "initialize",
                "initialized",
                "textDocument/didOpen",
                "textDocument/didChange",
                "textDocument/didClose",
                "shutdown",
                "exit"
            ]
        );
        let change = &messages[3]["params"];
        assert_eq!(change["textDocument"]["version"], 2);
        // After `a😀` = 3 UTF-16 units.
        assert_eq!(change["contentChanges"][0]["range"]["start"], serde_json::json!({"line": 0, "character": 3}));
        assert_eq!(change["contentChanges"][0]["text"], "x");
    }

    #[test]
    fn incremental_changes_round_trip_in_every_encoding() {
        let cases = [
            ("a😀b\nc\n", "a😀xb\nc\n"),
            ("日本語\r\nx = 1\r\n", "日本語\r\nx = 2\r\n"),
            ("line\r\n", "line\n"),
            ("same", "same"),
            ("", "new text"),
            ("drop all", ""),
            ("ab\rcd", "ab\r\ncd"),
        ];
        for (old, new) in cases {
            for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
                let old_rope = Rope::from_str(old);
                let change = incremental_change(&old_rope, &Rope::from_str(new), encoding);
                assert_eq!(apply(&old_rope, &change, encoding), new, "{old:?} -> {new:?} in {encoding:?}");
            }
        }
    }
}
