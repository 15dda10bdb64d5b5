//! filepuff: one Engine (workspace, documents, syntax, search) behind three faces — MCP, the
//! CLI and (later) an LSP proxy. See `docs/architecture.md` for the map.

pub mod backends;
pub mod cancel;
pub mod cli;
pub mod documents;
pub mod edits;
pub mod engine;
pub mod graph;
pub mod index;
pub mod mcp;
pub mod proxy;
pub mod search;
pub mod signals;
pub mod stdio;
pub mod syntax;
pub mod tools;
pub mod workspace;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tidy;
