//! Tools: one function `params -> result` each, typed with serde + schemars, shared by the MCP
//! face and the CLI. Each tool also renders a readable text form of its result.
//!
//! Tool names, parameter names and defaults follow the seed API documents in
//! `../shared/seeds/` (the contract); where a seed is vague the choice is written down in the
//! tool's docs and in `docs/tools.md`.

mod ast_query;
mod diff;
mod edit;
mod edit_diagnostics;
mod editor_state;
pub mod error;
mod file_operations;
mod file_read;
mod file_search;
pub mod graph;
pub mod index;
pub mod local;
mod lsp;
mod navigation;
mod page;
mod rename;
mod show;
pub mod toolsets;

pub use ast_query::{AstQueryOutput, AstQueryParams, ast_query};
pub use edit::{EditOutput, EditParams, edit_apply, edit_preview};
pub use edit_diagnostics::EditDiagnostics;
pub use editor_state::{EditorStateOutput, EditorStateParams, editor_state};
pub use error::{ErrorCode, ToolError};
pub use file_read::{FileReadOutput, FileReadParams, SymbolInfo, file_read};
pub use file_search::{FileSearchOutput, FileSearchParams, file_search};
pub use lsp::{
    DefinitionOutput, DiagnosticInfo, DiagnosticsOutput, DiagnosticsParams, PositionParams, ReferencesOutput,
    ReferencesParams, RunOn, SymbolAtOutput, diagnostics, file_diagnostics, find_definition, find_definition_on,
    find_references, find_references_on, symbol_at, symbol_at_on,
};
pub use navigation::{
    CallHierarchyOutput, CallHierarchyParams, DocumentSymbolsOutput, DocumentSymbolsParams, HoverOutput,
    WorkspaceSymbolsOutput, WorkspaceSymbolsParams, call_hierarchy, document_symbols, hover, hover_on,
    workspace_symbols,
};
pub use page::{PageInfo, PageParams};
pub use rename::{RenameSymbolOutput, RenameSymbolParams, rename_symbol};
pub use show::{ShowInEditorOutput, ShowInEditorParams, show_in_editor};

/// A tool's result as compact JSON text (MCP's `structuredContent`), byte for byte as
/// `serde_json::to_string` writes it. The one place that decides how: serde_json's, except for
/// an output of hundreds of items that writes its own without serde's per-field calls
/// (`find_references`: [`ReferencesOutput::to_json`], held to serde_json's bytes by a test).
///
/// Errors: as `serde_json::to_string` (a map with non-string keys; never for these types).
pub fn structured_json<O: serde::Serialize + 'static>(output: &O) -> serde_json::Result<String> {
    let any: &dyn std::any::Any = output;
    if let Some(references) = any.downcast_ref::<ReferencesOutput>() {
        return references.to_json();
    }
    serde_json::to_string(output)
}

/// Text renderers, one per tool, used for MCP text content and CLI human output.
pub mod render {
    pub use super::ast_query::render_text as ast_query;
    pub use super::edit::render_text as edit;
    pub use super::editor_state::render_text as editor_state;
    pub use super::file_read::render_text as file_read;
    pub use super::file_search::render_text as file_search;
    pub use super::local::render_text as local;
    pub use super::lsp::render_diagnostics as diagnostics;
    pub use super::lsp::{
        render_definition as find_definition, render_references as find_references, render_symbol_at as symbol_at,
    };
    pub use super::navigation::{
        render_call_hierarchy as call_hierarchy, render_document_symbols as document_symbols, render_hover as hover,
        render_workspace_symbols as workspace_symbols,
    };
    pub use super::rename::render_text as rename_symbol;
    pub use super::show::render_text as show_in_editor;
}

/// `ping`: health check; always `"pong"`.
pub fn ping() -> &'static str {
    "pong"
}
