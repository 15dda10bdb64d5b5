//! Tools: one function `params -> result` each, typed with serde + schemars, shared by the MCP
//! face and the CLI. Each tool also renders a readable text form of its result.
//!
//! Tool names, parameter names and defaults follow the seed API documents in
//! `../shared/seeds/` (the contract); where a seed is vague the choice is written down in the
//! tool's docs and in `docs/tools.md`.

mod ast_query;
mod edit;
pub mod error;
mod file_read;
mod file_search;
pub mod index;
pub mod local;
pub mod toolsets;

pub use ast_query::{AstQueryOutput, AstQueryParams, ast_query};
pub use edit::{EditOutput, EditParams, edit_apply, edit_preview};
pub use error::{ErrorCode, ToolError};
pub use file_read::{FileReadOutput, FileReadParams, SymbolInfo, file_read};
pub use file_search::{FileSearchOutput, FileSearchParams, file_search};

/// Text renderers, one per tool, used for MCP text content and CLI human output.
pub mod render {
    pub use super::ast_query::render_text as ast_query;
    pub use super::edit::render_text as edit;
    pub use super::file_read::render_text as file_read;
    pub use super::file_search::render_text as file_search;
    pub use super::local::render_text as local;
}

/// `ping`: health check; always `"pong"`.
pub fn ping() -> &'static str {
    "pong"
}
