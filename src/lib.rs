//! filepuff: one Engine (workspace, documents, syntax, search) behind three faces — MCP, the
//! CLI and (later) an LSP proxy. See `docs/architecture.md` for the map.

pub mod cli;
pub mod documents;
pub mod engine;
pub mod mcp;
pub mod search;
pub mod syntax;
pub mod tools;
pub mod workspace;
