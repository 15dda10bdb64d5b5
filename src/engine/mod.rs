//! The Engine: one workspace, its live documents and its parse cache, shared by every face.
//!
//! Faces (MCP, CLI, LSP) hold an `Arc<Engine>` and call tool functions with it; nothing in the
//! Engine knows which face is calling. What the faces share is decided here, once
//! (DESIGN.md "The Engine API"):
//! - what a path means: [`crate::workspace::DocumentId`], made by the workspace;
//! - the text of an open document: [`Engine::open_document`], [`Engine::change_document`],
//!   [`Engine::close_document`] — the documents store changes, then every language server
//!   serving the document gets the change in its own encoding;
//! - where an edit lands: [`Engine::commit`] (the editor, the open buffer, or the disk);
//! - what the person is looking at: [`Engine::report_focus`] / [`Engine::editor_focus`], and the
//!   changes agents subscribe to ([`Engine::subscribe_events`]; see [`editor_state`]).

pub mod agents;
mod commit;
pub mod editor_state;

use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;

use crate::backends::Backends;
use crate::documents::{ChangeError, DocumentChange, DocumentStore, Encoding, Language, TextChange};
use crate::workspace::DocumentId;

use crate::graph::{GraphError, GraphStore};
use crate::index::FileIndex;
use crate::search::SearchError;
use crate::syntax::SyntaxCache;
use crate::workspace::Workspace;
pub use commit::{Approval, Base, CommitError, CommitOutcome, DiskChange, FileEdit, Landing};
pub use editor_state::{EditorFocus, EngineEvent, Focus, FocusReport};

/// The shared state behind every tool.
#[derive(Debug)]
pub struct Engine {
    workspace: Workspace,
    documents: Arc<DocumentStore>,
    syntax: SyntaxCache,
    backends: Backends,
    /// The knowledge graph, opened by the first graph tool call (other tools never touch it).
    graph: Mutex<Option<Arc<GraphStore>>>,
    /// The file index, built on first use.
    index: Mutex<Option<Arc<FileIndex>>>,
    /// The editor holding the open documents, when one is attached (`filepuff lsp`).
    editor: std::sync::OnceLock<Arc<dyn Editor>>,
    /// The editor's focus as it last reported it (`filepuff/editorFocus`).
    focus: Mutex<EditorFocus>,
    /// Changes of the editor's state and agents' commits, for subscribers.
    events: tokio::sync::broadcast::Sender<EngineEvent>,
}

/// Changes to one document, for [`Editor::apply`].
#[derive(Debug, Clone)]
pub struct BufferEdit {
    pub id: DocumentId,
    /// The editor's version the edits were computed on; `None` for a file the editor does not
    /// have open (only with [`Approval::Confirm`], where every file of an edit goes to the
    /// person; LSP `OptionalVersionedTextDocumentIdentifier` with a null version).
    pub version: Option<i32>,
    /// The text at that version (the edits' byte ranges are into it).
    pub before: ropey::Rope,
    /// Non-overlapping byte ranges of `before` and their new text (LSP `TextEdit`s of one
    /// `TextDocumentEdit` all refer to the text before any of them).
    pub edits: Vec<crate::documents::ByteEdit>,
}

/// What [`Engine::open_document`] did.
#[derive(Debug, Clone)]
pub struct OpenedDocument {
    /// The document was open already: this was a reload.
    pub reload: bool,
    pub language: Option<Language>,
    /// The (server, project root) pairs serving it, in order (empty: no server for it).
    pub servers: Vec<(String, PathBuf)>,
    /// Some of those servers are not running yet.
    pub missing: bool,
}

/// The editor's answer to [`Editor::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorAnswer {
    /// Applied; the editor's `didChange`s have reached the documents store.
    Applied,
    /// The editor refused (its `failureReason`, when it gave one); nothing changed.
    Refused { reason: Option<String> },
}

/// The editor behind `filepuff lsp`, as the tools see it: edits to documents it has open go
/// through it (`workspace/applyEdit`, LSP 3.17), so they land in its buffers as ordinary,
/// undoable edits and never overwrite unsaved text.
pub trait Editor: Send + Sync + std::fmt::Debug {
    /// Asks the editor to change open documents, all or none (one `workspace/applyEdit` with
    /// versioned `documentChanges`, each document under the URI the editor opened it with),
    /// labelled `label` in its undo history. Blocks until the editor answers and, when it
    /// applied them, until its `didChange`s arrived (bounded; woken by the documents store, not
    /// polled). Call from a blocking context (a tool thread), never from an async task.
    ///
    /// Errors: the editor cannot apply edits (no `workspace.applyEdit` capability), is gone,
    /// or did not answer in time — nothing was changed by filepuff.
    ///
    /// With [`Approval::Confirm`] the edit carries a change annotation with `needsConfirmation`
    /// (LSP 3.16 "ChangeAnnotation"): the editor shows it to the person, who accepts or declines
    /// it (a decline is [`EditorAnswer::Refused`]). Errors then also: the editor does not declare
    /// `workspace.workspaceEdit.changeAnnotationSupport` — never an unconfirmed edit.
    fn apply(&self, label: &str, edits: &[BufferEdit], approval: Approval) -> Result<EditorAnswer, String>;

    /// Shows a document to the person (`window/showDocument`, LSP 3.16), with `selection`
    /// (byte offsets into `text`, the document's current text) selected, and focus when
    /// `take_focus`. Returns whether the editor showed it. Blocks like [`Editor::apply`].
    ///
    /// Errors: the editor cannot show documents (no `window.showDocument.support`), is gone, or
    /// did not answer in time.
    fn show(
        &self,
        id: &DocumentId,
        text: &ropey::Rope,
        selection: Option<std::ops::Range<usize>>,
        take_focus: bool,
    ) -> Result<bool, String>;
}

impl Engine {
    /// An Engine over `workspace` with no open documents.
    pub fn new(workspace: Workspace) -> Engine {
        let documents = Arc::new(DocumentStore::confined_to(workspace.root()));
        let syntax = SyntaxCache::new(workspace.config().limits.syntax_cache_bytes);
        let backends = Backends::new(workspace.root(), workspace.config(), documents.clone());
        Engine {
            workspace,
            documents,
            syntax,
            backends,
            graph: Mutex::new(None),
            index: Mutex::new(None),
            editor: std::sync::OnceLock::new(),
            focus: Mutex::new(EditorFocus::Unreported),
            events: tokio::sync::broadcast::channel(editor_state::EVENT_CAPACITY).0,
        }
    }

    /// An Engine for one CLI command (`filepuff query`, `search`, `graph index`, …): as
    /// [`Engine::new`], but its syntax cache keeps no trees. Nothing asks a second question, and
    /// a tree dropped on the walker thread that matched it costs less than every tree freed at
    /// exit: `filepuff query` over Go's `net/` spent 8% of its CPU dropping the cache at exit and
    /// more growing the heap to hold it (page faults, `mprotect`).
    pub fn one_shot(workspace: Workspace) -> Engine {
        Engine { syntax: SyntaxCache::new(0), ..Engine::new(workspace) }
    }

    /// Tells the receiver every [`EngineEvent`] from now on. A receiver that falls more than
    /// 256 events behind gets `Lagged` and must treat everything as changed.
    pub fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<EngineEvent> {
        self.events.subscribe()
    }

    fn emit(&self, event: EngineEvent) {
        // No subscriber is not an error.
        let _ = self.events.send(event);
    }

    /// The editor reported its focus (`filepuff/editorFocus`, positions in its negotiated
    /// `encoding`): converted against the document's current text — the open buffer, else the
    /// disk — into 1-based lines and character columns, and kept until the next report.
    pub fn report_focus(&self, report: FocusReport, encoding: Encoding) {
        let max_bytes = self.workspace.config().limits.max_file_bytes;
        let text = report.id.as_ref().and_then(|id| self.documents.text(id, max_bytes).ok()).map(|s| s.text);
        let focus = report.into_focus(text.as_ref(), encoding);
        let changed = {
            let mut slot = self.focus.lock();
            let changed = *slot != focus;
            *slot = focus;
            changed
        };
        if changed {
            self.emit(EngineEvent::EditorChanged);
        }
    }

    /// The editor's focus as last reported ([`EditorFocus::Unreported`] when it never did).
    pub fn editor_focus(&self) -> EditorFocus {
        self.focus.lock().clone()
    }

    /// The root, configuration and path sandbox.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The live buffer store.
    pub fn documents(&self) -> &DocumentStore {
        &self.documents
    }

    /// A document was opened (the editor's `didOpen`): the store holds `text` at `version`, and
    /// the servers serving it open it. Opening a document that is open already is a reload: the
    /// store takes the new text and version, and so do the servers (see
    /// [`crate::backends::LspClient::open_editor_document`]).
    pub fn open_document(&self, id: DocumentId, language_id: String, version: i32, text: &str) -> OpenedDocument {
        let language = Language::from_name(&language_id).or_else(|| Language::from_path(id.path()));
        let reload = self.documents.open(id.clone(), text, version, language_id).is_some();
        let (servers, missing) = self.backends.document_opened(&id, language);
        self.emit(EngineEvent::EditorChanged);
        OpenedDocument { reload, language, servers, missing }
    }

    /// The one entry for text changes of an open document: the editor's `didChange` (ranges in
    /// `encoding`, LSP 3.17 `TextDocumentContentChangeEvent` order). The store applies them, then
    /// each server serving the document gets them converted into its own encoding.
    ///
    /// Errors: [`ChangeError::NotOpen`] (nothing changes).
    pub fn change_document(
        &self,
        id: &DocumentId,
        version: i32,
        encoding: Encoding,
        changes: &[TextChange],
    ) -> Result<DocumentChange, ChangeError> {
        let change = self.documents.change(id, version, changes, encoding)?;
        self.backends.document_changed(id, &change);
        Ok(change)
    }

    /// The editor saved an open document: its servers get `didSave`.
    pub fn save_document(&self, id: &DocumentId) {
        if let Some(document) = self.documents.get(id) {
            let language = Language::from_name(&document.language_id).or_else(|| Language::from_path(id.path()));
            self.backends.document_saved(id, language, &document.text);
            self.emit(EngineEvent::EditorChanged);
        }
    }

    /// The editor closed a document: the disk is the truth again, and its servers get
    /// `didClose`. Returns whether it was open.
    pub fn close_document(&self, id: &DocumentId) -> bool {
        let language = self
            .documents
            .get(id)
            .and_then(|d| Language::from_name(&d.language_id))
            .or_else(|| Language::from_path(id.path()));
        let closed = self.documents.close(id);
        self.backends.document_closed(id, language);
        self.emit(EngineEvent::EditorChanged);
        closed
    }

    /// The attached editor, if any (see [`Editor`]).
    pub fn editor(&self) -> Option<&Arc<dyn Editor>> {
        self.editor.get()
    }

    /// Attaches the editor (`filepuff lsp` does, at `initialize`). Only the first call counts.
    pub fn attach_editor(&self, editor: Arc<dyn Editor>) {
        let _ = self.editor.set(editor);
    }

    /// The language servers.
    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    /// The file index, built (and its watcher started) on first use, with pending changes
    /// applied. Errors: the walk's, when the index cannot be built.
    pub fn file_index(&self) -> Result<Arc<FileIndex>, SearchError> {
        let mut slot = self.index.lock();
        let index = match &*slot {
            Some(index) => index.clone(),
            None => {
                let index = Arc::new(FileIndex::build(&self.workspace)?);
                *slot = Some(index.clone());
                return Ok(index);
            }
        };
        drop(slot);
        index.refresh(&self.workspace);
        Ok(index)
    }

    /// The parse-tree cache.
    pub fn syntax(&self) -> &SyntaxCache {
        &self.syntax
    }

    /// The graph database file: `[graph] path`, relative to the root, resolved through the
    /// workspace sandbox (a path outside the root, or leaving it through a symlink, is refused:
    /// `filepuff.toml` comes with the repository and must not place files elsewhere).
    pub fn graph_path(&self) -> Result<std::path::PathBuf, GraphError> {
        let configured = &self.workspace.config().graph.path;
        let text = configured.to_string_lossy();
        self.workspace.resolve(&text).map(|resolved| resolved.absolute).map_err(|err| GraphError::Open {
            path: configured.clone(),
            message: format!("[graph] path must be inside the workspace root: {err}"),
        })
    }

    /// The PostgreSQL URL of the graph when it is not the SQLite file: `FILEPUFF_GRAPH_URL`, else
    /// `[graph] store`; `None` (the SQLite default) when neither is set or both are empty.
    pub fn graph_url(&self) -> Option<String> {
        std::env::var("FILEPUFF_GRAPH_URL")
            .ok()
            .or_else(|| self.workspace.config().graph.store.clone())
            .filter(|url| !url.trim().is_empty())
    }

    /// Where the graph is, for people: the SQLite file, or the PostgreSQL URL without its
    /// password.
    pub fn graph_location(&self) -> String {
        match self.graph_url() {
            Some(url) => crate::graph::redact_url(&url),
            None => match self.graph_path() {
                Ok(path) => path.display().to_string(),
                Err(_) => self.workspace.config().graph.path.display().to_string(),
            },
        }
    }

    /// The knowledge graph store, opened (and migrated) on first use. A failed open is not
    /// remembered: the next call tries again.
    ///
    /// Errors: [`GraphError::Open`] (also for a `[graph] path` outside the root),
    /// [`GraphError::SchemaTooNew`].
    pub fn graph(&self) -> Result<Arc<GraphStore>, GraphError> {
        let mut slot = self.graph.lock();
        if let Some(store) = slot.as_ref() {
            return Ok(store.clone());
        }
        let store = match self.graph_url() {
            Some(url) => Arc::new(GraphStore::open_postgres(&url)?),
            None => Arc::new(GraphStore::open(&self.graph_path()?)?),
        };
        *slot = Some(store.clone());
        Ok(store)
    }
}
