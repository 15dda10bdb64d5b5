//! Requests and server→client traffic through the proxy: cancellation, two servers for one
//! language (single-answer routing, merged diagnostics), `workspace/applyEdit` from a server,
//! and a server that dies mid-request (docs/lsp.md "What happens", "Servers talk back").

use serde_json::{Value, json};

use super::{Editor, Server, nth, utf16_position, utf16_range};
use crate::tests::fake_lsp::{FakeServer, Reply, Script};

const MAIN: &str = "package main\n\nfunc target() {}\nfunc main() { s := \"🙂世界\"; target() }\n";

/// The `textDocument/*` params at the call `target()` of [`MAIN`], in UTF-16 units.
fn at_call(editor: &Editor) -> Value {
    let (line, character) = utf16_position(MAIN, nth(MAIN, "target", 1));
    json!({ "textDocument": { "uri": editor.uri("main.go") }, "position": { "line": line, "character": character } })
}

#[tokio::test]
async fn a_request_the_editor_cancels_is_cancelled_at_the_server() {
    let fake = FakeServer::register(
        Script::new(json!({ "hoverProvider": true })).on("textDocument/hover", |_, _| Reply::Never),
    );
    let servers = [Server { name: "fake", fake: &fake, encoding: None }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;

    let id = editor.request("textDocument/hover", at_call(&editor)).await;
    let hover = server.wait_for("the hover", |log| log.requests("textDocument/hover").first().cloned()).await;
    editor.notify("$/cancelRequest", json!({ "id": id })).await;

    let error = editor.answer(id).await.expect_err("a cancelled request is answered with an error");
    assert_eq!(error["code"], -32800, "RequestCancelled: {error}");
    let cancel = server.wait_for("$/cancelRequest", |log| log.notifications("$/cancelRequest").first().cloned()).await;
    assert_eq!(cancel["id"], hover.id, "the cancellation names the request the server received");
}

#[tokio::test]
async fn two_servers_single_answers_fall_through_and_diagnostics_merge() {
    // `first` is listed first and answers definitions with nothing; only `second` offers hover.
    let first = FakeServer::register(
        Script::new(json!({ "definitionProvider": true }))
            .on("textDocument/definition", |_, _| Reply::Result(json!([]))),
    );
    let second = FakeServer::register(
        Script::new(json!({ "definitionProvider": true, "hoverProvider": true }))
            .position_encoding("utf-8")
            .on("textDocument/definition", |server, params| {
                let uri = params.pointer("/textDocument/uri").and_then(Value::as_str).unwrap_or_default();
                Reply::Result(json!({ "uri": uri, "range": server.range_of(uri, "target") }))
            })
            .on("textDocument/hover", |_, _| Reply::Result(json!({ "contents": "from second" }))),
    );
    let servers = [
        Server { name: "first", fake: &first, encoding: None },
        Server { name: "second", fake: &second, encoding: Some("utf-8") },
    ];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let (one, two) = (first.instance(0).await, second.instance(0).await);
    let uri = editor.uri("main.go");

    let id = editor.request("textDocument/definition", at_call(&editor)).await;
    let definition = editor.answer(id).await.expect("a definition");
    let target = nth(MAIN, "target", 0);
    assert_eq!(definition, json!({ "uri": uri, "range": utf16_range(MAIN, target, target + "target".len()) }));
    assert_eq!(one.log().requests("textDocument/definition").len(), 1, "the first server was asked first");

    let id = editor.request("textDocument/hover", at_call(&editor)).await;
    assert_eq!(editor.answer(id).await.expect("a hover")["contents"], "from second");
    assert!(one.log().requests("textDocument/hover").is_empty(), "hover went to a server without hoverProvider");

    // Each server publishes its own list (in its own encoding); the editor gets their union.
    let (uri_one, uri_two) = (
        one.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await,
        two.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await,
    );
    one.notify(
        "textDocument/publishDiagnostics",
        json!({ "uri": uri_one, "diagnostics": [{ "range": one.range_of(&uri_one, "世界"), "message": "from first" }] }),
    );
    two.notify(
        "textDocument/publishDiagnostics",
        json!({ "uri": uri_two, "diagnostics": [{ "range": two.range_of(&uri_two, "世界"), "message": "from second" }] }),
    );
    let merged = editor
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri.as_str() && p["diagnostics"].as_array().is_some_and(|d| d.len() == 2)
        })
        .await;
    let cjk = nth(MAIN, "世界", 0);
    let range = utf16_range(MAIN, cjk, cjk + "世界".len());
    let mut messages: Vec<&str> =
        merged["diagnostics"].as_array().into_iter().flatten().filter_map(|d| d["message"].as_str()).collect();
    messages.sort_unstable();
    assert_eq!(messages, ["from first", "from second"]);
    for diagnostic in merged["diagnostics"].as_array().into_iter().flatten() {
        assert_eq!(diagnostic["range"], range, "each server's range in the editor's encoding");
    }
}

#[tokio::test]
async fn a_servers_apply_edit_reaches_the_editor_and_its_answer_comes_back() {
    let fake = FakeServer::register(Script::new(json!({})).position_encoding("utf-8"));
    let servers = [Server { name: "fake", fake: &fake, encoding: Some("utf-8") }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    let server_uri = server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    let edit = json!({ "changes": { server_uri.clone(): [{ "range": server.range_of(&server_uri, "世界"), "newText": "world" }] } });
    let answer = tokio::spawn(server.request("workspace/applyEdit", json!({ "label": "fake", "edit": edit })));
    let (id, params) = editor.server_request("workspace/applyEdit").await;
    let uri = editor.uri("main.go");
    let cjk = nth(MAIN, "世界", 0);
    let edits = params.pointer("/edit/changes").and_then(|c| c.get(uri.as_str())).cloned();
    assert_eq!(
        edits,
        Some(json!([{ "range": utf16_range(MAIN, cjk, cjk + "世界".len()), "newText": "world" }])),
        "{params}"
    );
    editor.respond(id, json!({ "applied": false, "failureReason": "the person said no" })).await;
    let answer = answer.await.expect("the request task").expect("an answer");
    assert_eq!(answer, json!({ "applied": false, "failureReason": "the person said no" }));
}

#[tokio::test]
async fn a_servers_versioned_edit_reaches_an_editor_without_document_changes_as_changes() {
    let fake = FakeServer::register(Script::new(json!({})).position_encoding("utf-8"));
    let servers = [Server { name: "fake", fake: &fake, encoding: Some("utf-8") }];
    // An editor that declares `applyEdit` but not `workspaceEdit.documentChanges`.
    let capabilities = json!({
        "general": { "positionEncodings": ["utf-16"] },
        "workspace": { "applyEdit": true },
        "window": { "workDoneProgress": true }
    });
    let editor = Editor::start_declaring(&[("main.go", MAIN)], &servers, "", capabilities).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    let server_uri = server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    let text_edit = json!({ "range": server.range_of(&server_uri, "世界"), "newText": "world" });
    let edit = json!({ "documentChanges": [
        { "textDocument": { "uri": server_uri.clone(), "version": 1 }, "edits": [text_edit] }
    ] });
    let answer = tokio::spawn(server.request("workspace/applyEdit", json!({ "label": "fake", "edit": edit })));
    let (id, params) = editor.server_request("workspace/applyEdit").await;
    let cjk = nth(MAIN, "世界", 0);
    let expected = json!({ "changes": {
        editor.uri("main.go"): [{ "range": utf16_range(MAIN, cjk, cjk + "世界".len()), "newText": "world" }]
    } });
    assert_eq!(params["edit"], expected, "{params}");
    editor.respond(id, json!({ "applied": true })).await;
    assert_eq!(answer.await.expect("the request task").expect("an answer"), json!({ "applied": true }));

    // A resource operation cannot be written as `changes`: that edit passes as it is.
    let create = json!({ "documentChanges": [ { "kind": "create", "uri": editor.uri("new.go") } ] });
    let answer = tokio::spawn(server.request("workspace/applyEdit", json!({ "edit": create.clone() })));
    let (id, params) = editor.server_requests("workspace/applyEdit", 2).await.pop().expect("the second request");
    assert_eq!(params["edit"], create);
    editor.respond(id, json!({ "applied": false })).await;
    answer.await.expect("the request task").expect("an answer");
}

#[tokio::test]
async fn a_server_keeps_being_heard_while_its_requests_wait_on_the_editor() {
    // More server→editor requests waiting at once than async-lsp's default concurrency bound
    // (the CPU count): with that bound the client's main loop stopped reading the server for
    // good (clangd's `semanticTokens/refresh` after a rename, in Neovim).
    let waiting = std::thread::available_parallelism().map_or(2, |n| n.get()) + 2;
    let fake = FakeServer::register(
        Script::new(json!({ "hoverProvider": true }))
            .on("textDocument/hover", |_, _| Reply::Result(json!({ "contents": "still here" }))),
    );
    let servers = [Server { name: "fake", fake: &fake, encoding: None }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    let answers: Vec<_> = (0..waiting)
        .map(|n| {
            let edit = json!({ "changes": {} });
            tokio::spawn(server.request("workspace/applyEdit", json!({ "label": format!("edit {n}"), "edit": edit })))
        })
        .collect();
    // Every request reaches the editor, and the server is still read while they wait.
    let pending = editor.server_requests("workspace/applyEdit", waiting).await;
    let id = editor.request("textDocument/hover", at_call(&editor)).await;
    let hover = editor.answer(id).await.expect("a hover answer while the server's requests wait");
    assert_eq!(hover["contents"], "still here", "{hover}");

    for (id, _) in pending {
        editor.respond(id, json!({ "applied": true })).await;
    }
    for answer in answers {
        assert_eq!(answer.await.expect("the request task").expect("an answer"), json!({ "applied": true }));
    }
}

#[tokio::test]
async fn a_server_that_dies_mid_request_gives_the_editor_an_error_and_is_restarted() {
    let fake = FakeServer::register(
        Script::new(json!({ "definitionProvider": true })).on("textDocument/definition", |_, _| Reply::Exit),
    );
    let servers = [Server { name: "fake", fake: &fake, encoding: None }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    let id = editor.request("textDocument/definition", at_call(&editor)).await;
    let error = editor.answer(id).await.expect_err("a dead server's request fails");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{error}");
    // The proxy starts the server again and opens the editor's document on it.
    let again = fake.instance(1).await;
    let document = again.wait_for("the document again", |log| log.documents.values().next().cloned()).await;
    assert_eq!(document.text, MAIN);
    assert_eq!(fake.starts(), 2, "started once, restarted once");
}
