//! The Engine: one workspace, its live documents and its parse cache, shared by every face.
//!
//! Faces (MCP, CLI, later LSP) hold an `Arc<Engine>` and call tool functions with it; nothing in
//! the Engine knows which face is calling.

use crate::backends::Backends;
use crate::documents::DocumentStore;
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
}

impl Engine {
    /// An Engine over `workspace` with no open documents.
    pub fn new(workspace: Workspace) -> Engine {
        let backends = Backends::new(workspace.root(), workspace.config());
        Engine { workspace, documents: DocumentStore::new(), syntax: SyntaxCache::new(SYNTAX_CACHE_CAPACITY), backends }
    }

    /// The root, configuration and path sandbox.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The live buffer store.
    pub fn documents(&self) -> &DocumentStore {
        &self.documents
    }

    /// The language servers.
    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    /// The parse-tree cache.
    pub fn syntax(&self) -> &SyntaxCache {
        &self.syntax
    }
}
