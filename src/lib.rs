//! filepuff: one Engine (workspace, documents, syntax, search) behind three faces — MCP, the
//! CLI and (later) an LSP proxy. See `docs/architecture.md` for the map.

pub mod attach;
pub mod backends;
pub mod cancel;
pub mod cli;
pub mod documents;
pub mod edits;
pub mod engine;
pub mod graph;
pub mod http;
pub mod index;
pub mod mcp;
pub mod proxy;
pub mod search;
pub mod signals;
pub mod syntax;
pub mod tools;
pub mod workspace;

#[cfg(test)]
mod tidy {
    //! Repository hygiene checks that are cheap enough to run with the unit tests.

    use std::path::Path;

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_source_file_opens_with_a_module_doc() {
        let mut files = Vec::new();
        rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        assert!(files.len() > 10);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(text.starts_with("//! "), "{} must open with a `//!` module doc", file.display());
        }
    }
}
