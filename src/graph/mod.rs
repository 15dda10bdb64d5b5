//! The persistent code knowledge graph: components (files, classes, functions, …), the
//! relationships between them, and their implementation status, in an embedded SQLite store.
//!
//! Layout:
//! - [`schema`]: versioned migrations (`PRAGMA user_version`), tables, FTS5 index and triggers;
//! - [`store`]: [`GraphStore`], one connection in WAL mode, every multi-statement write in one
//!   `BEGIN IMMEDIATE` transaction;
//! - [`search`]: ranked search (FTS5, BM25) over split names, descriptions and code;
//! - [`analyze`]: components and relationships extracted from tree-sitter outlines;
//! - [`apply`]: analyses written with stable ids, links resolved by name;
//! - [`calls`]: `calls` relationships from language servers (call hierarchy or references),
//!   mapped back to components by file and line;
//! - [`index`]: `filepuff graph index`, a walk that analyses every parsed file;
//! - [`plan`]: breadth-first neighbourhoods, next tasks, topological plans with cycle reports;
//! - [`budget`]: token counting (tiktoken's `cl100k_base`) for context assembly.
//!
//! The graph speaks plain data (strings, line numbers, JSON metadata); the tools in
//! `crate::tools::graph` own the wire types. See `docs/graph.md`.

pub mod analyze;
pub mod apply;
pub mod budget;
pub mod calls;
pub(crate) mod db;
mod doc_text;
pub mod index;
pub mod migrate;
mod pg;
pub mod plan;
mod schema;
pub mod search;
mod source;
mod store;

pub use pg::redact_url;
pub use store::GraphStore;

/// Deletes stored sources no component uses any more (see [`source`]).
pub(crate) fn delete_unused_sources(conn: &dyn db::Db) -> Result<usize, GraphError> {
    source::delete_unused(conn)
}

use std::path::PathBuf;

/// What a component is. Outline kinds map onto these (struct, enum and type alias → class; trait
/// → interface; constant → variable); the outline kind is kept in `metadata.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ComponentType {
    File,
    Class,
    Function,
    Method,
    Variable,
    Module,
    Interface,
}

impl ComponentType {
    /// Every type, in the order results list them.
    pub const ALL: [ComponentType; 7] = [
        ComponentType::File,
        ComponentType::Class,
        ComponentType::Function,
        ComponentType::Method,
        ComponentType::Variable,
        ComponentType::Module,
        ComponentType::Interface,
    ];

    /// The wire name (`file`, `class`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentType::File => "file",
            ComponentType::Class => "class",
            ComponentType::Function => "function",
            ComponentType::Method => "method",
            ComponentType::Variable => "variable",
            ComponentType::Module => "module",
            ComponentType::Interface => "interface",
        }
    }

    /// Parses a wire name (case-insensitive).
    pub fn parse(text: &str) -> Option<ComponentType> {
        ComponentType::ALL.into_iter().find(|t| t.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// Implementation status of a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Planned,
    Partial,
    Implemented,
}

impl Status {
    /// Every status.
    pub const ALL: [Status; 3] = [Status::Planned, Status::Partial, Status::Implemented];

    /// The wire name (`planned`, `partial`, `implemented`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Planned => "planned",
            Status::Partial => "partial",
            Status::Implemented => "implemented",
        }
    }

    /// Parses a wire name (case-insensitive).
    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// What a relationship says about its source and target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RelationshipType {
    Imports,
    Calls,
    Inherits,
    Contains,
    DependsOn,
    Implements,
}

impl RelationshipType {
    /// Every relationship type.
    pub const ALL: [RelationshipType; 6] = [
        RelationshipType::Imports,
        RelationshipType::Calls,
        RelationshipType::Inherits,
        RelationshipType::Contains,
        RelationshipType::DependsOn,
        RelationshipType::Implements,
    ];

    /// The wire name (`imports`, `depends_on`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RelationshipType::Imports => "imports",
            RelationshipType::Calls => "calls",
            RelationshipType::Inherits => "inherits",
            RelationshipType::Contains => "contains",
            RelationshipType::DependsOn => "depends_on",
            RelationshipType::Implements => "implements",
        }
    }

    /// Parses a wire name (case-insensitive).
    pub fn parse(text: &str) -> Option<RelationshipType> {
        RelationshipType::ALL.into_iter().find(|t| t.as_str().eq_ignore_ascii_case(text.trim()))
    }

    /// Whether the source needs the target to be implemented first (everything but `contains`).
    pub fn is_dependency(self) -> bool {
        self != RelationshipType::Contains
    }
}

/// One stored component.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Random UUID (v4 form); stable across re-analysis of the same file + qualified name.
    pub id: String,
    pub name: String,
    /// `Class.method` for members, the name otherwise.
    pub qualified_name: String,
    pub component_type: ComponentType,
    pub status: Status,
    pub description: String,
    pub code_text: String,
    /// Workspace-relative path, `/`-separated, when known.
    pub file_path: Option<String>,
    /// 1-based first line in `file_path`.
    pub start_line: Option<u32>,
    /// 1-based last line, inclusive.
    pub end_line: Option<u32>,
    /// Language name (`go`, `python`, …) when known.
    pub language: Option<String>,
    /// ISO 8601 UTC with milliseconds (`2026-01-31T12:00:00.000Z`).
    pub created_at: String,
    /// ISO 8601 UTC with milliseconds.
    pub last_modified: String,
    /// 1 at creation; +1 on every change of code, description or status.
    pub version: i64,
    /// A JSON object.
    pub metadata: serde_json::Value,
    /// `manual` (added by a tool call) or `analysis` (extracted from code).
    pub origin: String,
}

/// A component to add.
#[derive(Debug, Clone)]
pub struct NewComponent {
    pub name: String,
    pub component_type: ComponentType,
    pub status: Status,
    pub description: String,
    pub code_text: String,
    pub file_path: Option<String>,
    pub start_line: Option<u32>,
    pub end_line: Option<u32>,
    pub language: Option<String>,
    /// A JSON object.
    pub metadata: serde_json::Value,
}

impl NewComponent {
    /// A planned component with no code location.
    pub fn new(name: &str, component_type: ComponentType) -> NewComponent {
        NewComponent {
            name: name.to_owned(),
            component_type,
            status: Status::Planned,
            description: String::new(),
            code_text: String::new(),
            file_path: None,
            start_line: None,
            end_line: None,
            language: None,
            metadata: serde_json::json!({}),
        }
    }
}

/// Fields of a component to change; `None` keeps the stored value.
#[derive(Debug, Clone, Default)]
pub struct ComponentChanges {
    /// The version the change is based on: refused with [`GraphError::VersionConflict`] when
    /// the component is at another one (like `expected_hash` for edits). `None`: unconditional.
    pub expected_version: Option<i64>,
    pub code_text: Option<String>,
    pub status: Option<Status>,
    pub description: Option<String>,
}

/// One stored relationship.
#[derive(Debug, Clone, PartialEq)]
pub struct Relationship {
    pub id: String,
    pub source_id: String,
    pub target_id: String,
    pub relationship_type: RelationshipType,
    /// A JSON object; analysis-derived `calls` carry `{"approximate": true, "source": "syntax"}`
    /// when found by name, `{"source": "lsp", "server": "gopls"}` when a server gave them.
    pub metadata: serde_json::Value,
    /// `manual` or `analysis`.
    pub origin: String,
    pub created_at: String,
}

/// One entry of a component's status history.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub old_status: Option<Status>,
    pub new_status: Status,
    pub notes: String,
    pub changed_at: String,
}

/// Why a graph operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The database file cannot be created or opened (directory missing, permissions, not a
    /// database).
    #[error("cannot open the graph store {path}: {message}")]
    Open { path: PathBuf, message: String },
    /// The database was written by a newer filepuff (its schema version is higher).
    #[error("the graph store {path} has schema version {found}; this filepuff knows up to {supported}")]
    SchemaTooNew { path: PathBuf, found: i64, supported: i64 },
    /// No component has this id (or name).
    #[error("no component with id or name {identifier:?}")]
    NotFound { identifier: String },
    /// Several components have this name.
    #[error("{count} components are named {name:?}")]
    Ambiguous { name: String, count: usize, candidates: Vec<Component> },
    /// Another process held the write lock for longer than the busy timeout (SQLite), or no
    /// connection of the pool came free in time (PostgreSQL).
    #[error("the graph store is busy: {message}")]
    Busy { message: String },
    /// `graph migrate` into a graph that already holds components (a migration goes into an
    /// empty one); `target` is its redacted location.
    #[error("the target graph {target} is not empty ({components} components); migrate into an empty database")]
    NotEmpty { target: String, components: usize },
    /// A change based on `expected` version of a component that is at `current` now (another
    /// writer changed it since it was read); nothing was written.
    #[error("component {id} is at version {current}, not the expected {expected}")]
    VersionConflict { id: String, expected: i64, current: i64 },
    /// Any other store failure (SQLite: disk full, corruption, I/O; PostgreSQL: the server's
    /// error).
    #[error("graph store failure: {message}")]
    Storage { message: String },
    /// The walk of `graph index` could not be built (an invalid `[walk] exclude` entry): the
    /// same error every walk gives.
    #[error(transparent)]
    Walk(#[from] crate::search::SearchError),
}

impl From<rusqlite::Error> for GraphError {
    fn from(err: rusqlite::Error) -> GraphError {
        let busy = matches!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        );
        if busy {
            GraphError::Busy { message: err.to_string() }
        } else {
            GraphError::Storage { message: err.to_string() }
        }
    }
}

/// Splits an identifier into lowercase words: `ListenAndServe` → `listen and serve`,
/// `HTTPServer` → `http server`, `parse_json2` → `parse json2`.
pub fn split_identifier(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = part.chars().collect();
        let mut current = String::new();
        for (idx, &c) in chars.iter().enumerate() {
            let prev = idx.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(idx + 1).copied();
            let boundary = match prev {
                Some(p) if c.is_uppercase() => {
                    p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
                }
                _ => false,
            };
            if boundary && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            words.push(current);
        }
    }
    words
}

#[cfg(test)]
mod tests;
