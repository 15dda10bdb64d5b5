//! The Engine: one workspace, its live documents and its parse cache, shared by every face.
//!
//! Faces (MCP, CLI, later LSP) hold an `Arc<Engine>` and call tool functions with it; nothing in
//! the Engine knows which face is calling.

use std::sync::{Arc, Mutex};

use crate::backends::Backends;
use crate::documents::DocumentStore;
use crate::graph::{GraphError, GraphStore};
use crate::index::FileIndex;
use crate::search::SearchError;
use crate::syntax::SyntaxCache;
use crate::workspace::Workspace;

/// Parse trees kept in the syntax cache.
const SYNTAX_CACHE_CAPACITY: usize = 512;

/// The shared state behind every tool.
#[derive(Debug)]
pub struct Engine {
    workspace: Workspace,
    documents: DocumentStore,
    syntax: SyntaxCache,
    backends: Backends,
    /// The knowledge graph, opened by the first graph tool call (other tools never touch it).
    graph: Mutex<Option<Arc<GraphStore>>>,
    /// The file index, built on first use.
    index: Mutex<Option<Arc<FileIndex>>>,
    /// The editor holding the open documents, when one is attached (`filepuff lsp`).
    editor: std::sync::OnceLock<Arc<dyn Editor>>,
}

/// One open document's new text, for [`Editor::apply`].
#[derive(Debug, Clone)]
pub struct BufferEdit {
    pub path: std::path::PathBuf,
    /// The editor's version the edit was computed on.
    pub version: i32,
    /// The text at that version.
    pub old_text: ropey::Rope,
    pub new_text: String,
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
    /// versioned `documentChanges`), labelled `label` in its undo history. Blocks until the
    /// editor answers and, when it applied them, until its `didChange`s arrived (bounded).
    /// Call from a blocking context (a tool thread), never from an async task.
    ///
    /// Errors: the editor cannot apply edits (no `workspace.applyEdit` capability), is gone,
    /// or did not answer in time — nothing was changed by filepuff.
    fn apply(&self, label: &str, edits: &[BufferEdit]) -> Result<EditorAnswer, String>;
}

impl Engine {
    /// An Engine over `workspace` with no open documents.
    pub fn new(workspace: Workspace) -> Engine {
        let backends = Backends::new(workspace.root(), workspace.config());
        Engine {
            workspace,
            documents: DocumentStore::new(),
            syntax: SyntaxCache::new(SYNTAX_CACHE_CAPACITY),
            backends,
            graph: Mutex::new(None),
            index: Mutex::new(None),
            editor: std::sync::OnceLock::new(),
        }
    }

    /// The root, configuration and path sandbox.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The live buffer store.
    pub fn documents(&self) -> &DocumentStore {
        &self.documents
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
        let mut slot = self.index.lock().unwrap_or_else(|e| e.into_inner());
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

    /// The knowledge graph store, opened (and migrated) on first use. A failed open is not
    /// remembered: the next call tries again.
    ///
    /// Errors: [`GraphError::Open`] (also for a `[graph] path` outside the root),
    /// [`GraphError::SchemaTooNew`].
    pub fn graph(&self) -> Result<Arc<GraphStore>, GraphError> {
        let mut slot = self.graph.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(store) = slot.as_ref() {
            return Ok(store.clone());
        }
        let store = Arc::new(GraphStore::open(&self.graph_path()?)?);
        *slot = Some(store.clone());
        Ok(store)
    }
}
