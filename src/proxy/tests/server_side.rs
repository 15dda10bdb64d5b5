//! Server→client requests the proxy rewrites (progress tokens, registrations), file watching
//! on a server's registration, and a server whose frame is over `[lsp] max_message_bytes`
//! (docs/lsp.md "Servers talk back", "Watched files"; `backends::transport`).

use serde_json::{Value, json};

use super::{Editor, Server};
use crate::tests::fake_lsp::{FakeServer, Script};

const MAIN: &str = "package main\n\nfunc main() {}\n";

#[tokio::test]
async fn two_servers_progress_tokens_are_renamed_apart_and_followed() {
    let first = FakeServer::register(Script::new(json!({})));
    let second = FakeServer::register(Script::new(json!({})));
    let servers = [
        Server { name: "first", fake: &first, encoding: None },
        Server { name: "second", fake: &second, encoding: None },
    ];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    let (one, two) = (first.instance(0).await, second.instance(0).await);

    // Both servers count their tokens the same way; the editor must see two tokens.
    let created_one = tokio::spawn(one.request("window/workDoneProgress/create", json!({ "token": "setup" })));
    let (id, params) = editor.server_request("window/workDoneProgress/create").await;
    let token_one = params["token"].clone();
    editor.respond(id, Value::Null).await;
    assert_eq!(created_one.await.expect("the request task").expect("an answer"), Value::Null);
    let created_two = tokio::spawn(two.request("window/workDoneProgress/create", json!({ "token": "setup" })));
    let creates = editor.server_requests("window/workDoneProgress/create", 2).await;
    let (id, params) = creates[1].clone();
    let token_two = params["token"].clone();
    editor.respond(id, Value::Null).await;
    assert_eq!(created_two.await.expect("the request task").expect("an answer"), Value::Null);
    assert_ne!(token_one, token_two, "two servers' tokens collide at the editor");

    for (server, title) in [(&one, "first"), (&two, "second")] {
        server.notify("$/progress", json!({ "token": "setup", "value": { "kind": "begin", "title": title } }));
    }
    for (token, title) in [(&token_one, "first"), (&token_two, "second")] {
        let progress = editor.notification("$/progress", |p| p.pointer("/value/title") == Some(&json!(title))).await;
        assert_eq!(&progress["token"], token, "{title}'s progress on its own token");
    }
}

#[tokio::test]
async fn registrations_are_forwarded_scoped_and_file_watching_is_kept_by_filepuff() {
    let fake = FakeServer::register(Script::new(json!({})));
    let servers = [Server { name: "fake", fake: &fake, encoding: None }];
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    let server = fake.instance(0).await;

    let registrations = json!({ "registrations": [
        { "id": "w", "method": "workspace/didChangeWatchedFiles",
          "registerOptions": { "watchers": [{ "globPattern": "**/*.go" }] } },
        { "id": "f", "method": "textDocument/formatting" }
    ] });
    let answer = tokio::spawn(server.request("client/registerCapability", registrations));
    let (id, params) = editor.server_request("client/registerCapability").await;
    editor.respond(id, Value::Null).await;
    assert_eq!(answer.await.expect("the request task").expect("an answer"), Value::Null);

    // Only formatting reaches the editor, with an id of its own and a selector for Go.
    let forwarded = params["registrations"].as_array().cloned().unwrap_or_default();
    assert_eq!(forwarded.len(), 1, "{params}");
    assert_eq!(forwarded[0]["method"], "textDocument/formatting");
    assert_ne!(forwarded[0]["id"], "f");
    assert!(forwarded[0]["id"].as_str().is_some_and(|id| id.ends_with("/f")), "{params}");
    let selector = forwarded[0].pointer("/registerOptions/documentSelector").cloned().unwrap_or_default();
    assert!(selector.to_string().contains("\"go\""), "{selector}");

    // The watcher is filepuff's: a new .go file on disk reaches the server.
    std::fs::write(editor.dir.path().join("other.go"), "package main\n").expect("a new file");
    let changes = server
        .wait_for("didChangeWatchedFiles for other.go", |log| {
            log.notifications("workspace/didChangeWatchedFiles")
                .into_iter()
                .find(|p| p.to_string().contains("other.go"))
        })
        .await;
    assert_eq!(changes.pointer("/changes/0/type"), Some(&json!(1)), "created: {changes}");
}

#[tokio::test]
async fn a_frame_over_the_limit_stops_the_server_and_it_is_restarted() {
    let fake = FakeServer::register(Script::new(json!({})));
    let servers = [Server { name: "fake", fake: &fake, encoding: None }];
    let config = "[lsp]\nmax_message_bytes = 65536";
    let editor = Editor::start_with(&[("main.go", MAIN)], &servers, &["utf-16"], config).await;
    editor.open("main.go", MAIN).await;
    let server = fake.instance(0).await;
    server.wait_for("didOpen", |log| log.documents.keys().next().cloned()).await;

    let huge = "x".repeat(100_000);
    server.notify("window/logMessage", json!({ "type": 3, "message": huge }));
    let again = fake.instance(1).await;
    let document = again.wait_for("the document again", |log| log.documents.values().next().cloned()).await;
    assert_eq!(document.text, MAIN);
    editor.notification("window/logMessage", |p| p["message"].as_str().is_some_and(|m| m.contains("restarted"))).await;
    let passed = editor.notifications("window/logMessage");
    assert!(
        passed.iter().all(|p| !p.to_string().contains(&"x".repeat(1000))),
        "the oversized message reached the editor"
    );
}
