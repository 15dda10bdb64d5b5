//! Position encodings across the proxy: an editor speaking UTF-16 in front of a server speaking
//! UTF-8 (`[servers.NAME] position_encoding`), on lines with emoji and CJK text (docs/lsp.md
//! "Position encodings").

use serde_json::json;

use super::{Editor, Server, nth, utf8_position, utf16_position, utf16_range};
use crate::tests::fake_lsp::{FakeServer, Reply, Script};

const MAIN: &str = "package main\n\nvar s = \"🙂世界\"; func target() {}\nfunc main() { s2 := \"é🙂中\"; target() }\n";

/// A fake Go server in UTF-8 answering `textDocument/definition` with the first `target` of
/// the document, as it holds it.
fn utf8_server() -> FakeServer {
    FakeServer::register(Script::new(json!({ "definitionProvider": true })).position_encoding("utf-8").on(
        "textDocument/definition",
        |server, params| {
            let uri = params.pointer("/textDocument/uri").and_then(|u| u.as_str()).unwrap_or_default();
            Reply::Result(json!([{ "uri": uri, "range": server.range_of(uri, "target") }]))
        },
    ))
}

#[tokio::test]
async fn definition_is_translated_between_utf16_editor_and_utf8_server() {
    let fake = utf8_server();
    let servers = [Server { name: "fake", fake: &fake, encoding: Some("utf-8") }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    let uri = editor.uri("main.go");
    server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    // The cursor on the call `target()` in the last line, after "é🙂中".
    let call = nth(MAIN, "target", 1);
    let (line, character) = utf16_position(MAIN, call);
    let id = editor
        .request(
            "textDocument/definition",
            json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": character } }),
        )
        .await;
    let answer = editor.answer(id).await.expect("a definition");

    // The server was asked in UTF-8 bytes...
    let asked = server.log().requests("textDocument/definition");
    let (line8, character8) = utf8_position(MAIN, call);
    assert_eq!(asked[0].params["position"], json!({ "line": line8, "character": character8 }));
    assert_ne!(character8, character, "the fixture must make the encodings differ");
    // ...and its UTF-8 answer reached the editor in UTF-16 units, under the editor's URI.
    let target = nth(MAIN, "target", 0);
    let expected = json!([{ "uri": uri, "range": utf16_range(MAIN, target, target + "target".len()) }]);
    assert_eq!(answer, expected);
}

#[tokio::test]
async fn incremental_changes_on_emoji_and_cjk_lines_leave_the_server_with_the_editors_text() {
    let fake = utf8_server();
    let servers = [Server { name: "fake", fake: &fake, encoding: Some("utf-8") }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    let uri = editor.uri("main.go");

    // didChange notifications of changes (needle, new text), each needle's first occurrence in
    // the text just before that change. The editor sends the range in UTF-16 units; the
    // expected text is the byte edit applied here. The second notification carries two
    // changes, which must be applied in order.
    let batches: [&[(&str, &str)]; 4] = [
        &[("世界", "世界🎉")],                                   // after an emoji, inside a string
        &[("é🙂中", "中"), ("target() }", "target(); 🙂x() }")], // deletes 2- and 4-byte characters, then edits after them
        &[("\nfunc main", "\n// 注释 🙂\n// two\nfunc main")],   // new lines with CJK
        &[("🎉\"; func", "\"; func")],                           // a deletion right after CJK
    ];
    let mut text = MAIN.to_owned();
    let mut version = 1;
    for batch in batches {
        let mut changes = Vec::new();
        for (needle, new_text) in batch {
            let start = nth(&text, needle, 0);
            let end = start + needle.len();
            changes.push(json!({ "range": utf16_range(&text, start, end), "text": new_text }));
            text.replace_range(start..end, new_text);
        }
        version += 1;
        editor
            .notify(
                "textDocument/didChange",
                json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": changes }),
            )
            .await;
    }
    let seen = server
        .wait_for("the last didChange", |log| log.documents.values().find(|d| d.version == version).cloned())
        .await;
    assert_eq!(seen.text, text);
    // Every change reached the server as a range, none as whole text.
    for change in server.log().notifications("textDocument/didChange") {
        assert!(change["contentChanges"][0].get("range").is_some(), "{change}");
    }
    // Closed in the editor, closed at the server.
    editor.notify("textDocument/didClose", json!({ "textDocument": { "uri": uri } })).await;
    server.wait_for("didClose", |log| log.documents.is_empty().then_some(())).await;
}

#[tokio::test]
async fn published_diagnostics_reach_the_editor_in_its_encoding() {
    let fake = utf8_server();
    let servers = [Server { name: "fake", fake: &fake, encoding: Some("utf-8") }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    let uri = editor.uri("main.go");
    let server_uri = server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    server.notify(
        "textDocument/publishDiagnostics",
        json!({
            "uri": server_uri,
            "version": 1,
            "diagnostics": [{ "range": server.range_of(&server_uri, "中"), "message": "cjk", "severity": 2 }]
        }),
    );
    let published = editor.notification("textDocument/publishDiagnostics", |p| p["uri"] == uri.as_str()).await;
    let cjk = nth(MAIN, "中", 0);
    assert_eq!(published["diagnostics"][0]["range"], utf16_range(MAIN, cjk, cjk + "中".len()));
    assert_eq!(published["diagnostics"][0]["message"], "cjk");
}
