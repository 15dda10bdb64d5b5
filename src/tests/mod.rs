//! Test support shared by the unit tests of several modules (compiled only under `cfg(test)`).
//!
//! - [`fake_lsp`]: an in-process language server on async-lsp, scripted per test, that the
//!   backends connect to over in-memory streams instead of spawning a process.

pub mod fake_lsp;
