//! The `filepuff` binary: parse arguments, set up logging (to stderr), dispatch, exit.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // tree-sitter's C library allocates through mimalloc. Parsing allocates and frees stack
    // and tree nodes one at a time; with glibc's malloc that was 7% of a cold `ast_query`'s
    // instructions (docs/performance.md, issue 15). Rust's allocations stay with the system
    // allocator, which returns large freed blocks to the kernel at once (an oversized message
    // read and dropped must not stay resident). SAFETY: `set_allocator` must run before any
    // tree-sitter object exists (first thing here), and the four functions must be one
    // allocator's (they are mimalloc's).
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: libmimalloc_sys::mi_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        }));
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FILEPUFF_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_ansi(false)
        .init();
    filepuff::cli::run(filepuff::cli::Cli::parse())
}
