//! The keystroke path of `filepuff lsp` (DESIGN.md "Data flow" 1), in process: an editor's
//! incremental `didChange` applied to a 10 MB document in the documents store and forwarded to
//! a language-server client — in the editor's encoding, and translated to another one.
//!
//! The server is `tests/e2e/fake_lsp.py` (it reads and discards), so what is timed is filepuff's
//! own work: locating the change in the rope, editing it, re-expressing the range, queueing the
//! notification. Target: ≤ 50 µs per keystroke. Run: `cargo bench --bench keystroke`.

use std::path::Path;
use std::time::{Duration, Instant};

use filepuff::backends::{LspClient, ServerSpec, StartOptions};
use filepuff::documents::{DocumentStore, Encoding, Position, TextChange};
use filepuff::workspace::DocumentId;
use lsp_types::Url;

/// About 10 MB of Go-like text with some non-ASCII on every tenth line.
fn document() -> String {
    let mut text = String::with_capacity(10 << 20);
    let mut i = 0;
    while text.len() < 10 << 20 {
        if i % 10 == 0 {
            text.push_str(&format!("\t/* 😀 日本語 {i} */ x{i} := compute(\"é\", {i})\n"));
        } else {
            text.push_str(&format!("\tvalue{i} := strings.TrimSpace(input[{i}:]) // line {i}\n"));
        }
        i += 1;
    }
    text
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/fake_lsp.py");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let text = document();
    let lines = text.lines().count() as u32;
    println!("document: {:.1} MB, {lines} lines", text.len() as f64 / (1 << 20) as f64);
    for server_encoding in ["utf-16", "utf-8"] {
        let dir = tempfile::tempdir().unwrap();
        let spec = ServerSpec {
            name: "fake".into(),
            command: vec!["python3".into(), fake.display().to_string()],
            languages: vec![],
            root_markers: vec![],
            env: vec![("FAKE_LSP_ENCODING".into(), server_encoding.into())],
            initialization_options: None,
            settings: None,
            install_hint: String::new(),
            disabled: false,
            position_encoding: None,
        };
        let python = filepuff::backends::find_program("python3").expect("python3 on PATH");
        let client = runtime
            .block_on(LspClient::start(&spec, &python, dir.path(), Duration::from_secs(20), &StartOptions::default()))
            .unwrap();
        let store = DocumentStore::new();
        let path = dir.path().join("big.go");
        let uri = Url::from_file_path(&path).unwrap();
        let id = DocumentId::from_canonical(&path);
        store.open(id.clone(), &text, 1, "go".into());
        let rope = store.get(&id).unwrap().text;
        client.open_editor_document(&uri, "go", 1, &rope).unwrap();
        let mut times = Vec::with_capacity(20_000);
        for i in 0..20_000u32 {
            // Type one character near the middle, on a line with non-ASCII text (column 12 in
            // UTF-16: after the emoji and the CJK characters).
            let line = (lines / 2 / 10) * 10 + (i % 50) * 10;
            let at = Position { line, character: 12 };
            let change = TextChange { range: Some((at, at)), text: "a".into() };
            let version = i as i32 + 2;
            let start = Instant::now();
            let applied = store.change(&id, version, &[change], Encoding::Utf16).unwrap();
            client.change_editor_document(&uri, &applied).unwrap();
            times.push(start.elapsed());
        }
        times.sort();
        println!(
            "editor utf-16 → server {server_encoding}: didChange apply + forward p50 {:.1} µs, p99 {:.1} µs (target ≤ 50 µs)",
            percentile(&times, 0.5).as_secs_f64() * 1e6,
            percentile(&times, 0.99).as_secs_f64() * 1e6,
        );
        runtime.block_on(client.stop());
    }
}
