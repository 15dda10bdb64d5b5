//! The Engine: one workspace, its live documents and its parse cache, shared by every face.
//!
//! Faces (MCP, CLI, later LSP) hold an `Arc<Engine>` and call tool functions with it; nothing in
//! the Engine knows which face is calling.

use std::sync::{Arc, Mutex};

use crate::documents::DocumentStore;
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
    /// The file index, built on first use.
    index: Mutex<Option<Arc<FileIndex>>>,
}

impl Engine {
    /// An Engine over `workspace` with no open documents.
    pub fn new(workspace: Workspace) -> Engine {
        Engine {
            workspace,
            documents: DocumentStore::new(),
            syntax: SyntaxCache::new(SYNTAX_CACHE_CAPACITY),
            index: Mutex::new(None),
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
}
