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

/// Directories are watched one by one: a directory made after the start is watched once its
/// creation is seen (a file written into it before that is reported created), and nothing
/// inside an installed package (`node_modules/*`) is watched.
#[tokio::test]
async fn new_directories_are_watched_and_packages_are_not() {
    let fake = FakeServer::register(Script::new(json!({})));
    let servers = [Server { name: "fake", fake: &fake, encoding: None }];
    let package = "node_modules/lib/inner";
    let editor = Editor::start(&[("main.go", MAIN)], &servers, &["utf-16"]).await;
    let root = editor.dir.path().to_path_buf();
    std::fs::create_dir_all(root.join(package)).expect("a package");
    let server = fake.instance(0).await;
    let registrations = json!({ "registrations": [{ "id": "w", "method": "workspace/didChangeWatchedFiles",
        "registerOptions": { "watchers": [{ "globPattern": "**/*.go" }] } }] });
    // Kept by filepuff: answered without the editor.
    let answer = server.request("client/registerCapability", registrations).await;
    assert_eq!(answer.expect("an answer"), Value::Null);
    let sent = |name: &'static str| {
        move |log: &crate::tests::fake_lsp::Log| {
            log.notifications("workspace/didChangeWatchedFiles").into_iter().find(|p| p.to_string().contains(name))
        }
    };

    // A new directory and, straight away, a file in it (likely before its watch exists).
    std::fs::create_dir_all(root.join("pkg/sub")).expect("new directories");
    std::fs::write(root.join("pkg/sub/first.go"), "package sub\n").expect("a file");
    let created = server.wait_for("pkg/sub/first.go", sent("first.go")).await;
    assert!(created.to_string().contains("\"type\":1"), "created: {created}");
    // Then one written once the watch is there.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    std::fs::write(root.join("pkg/sub/second.go"), "package sub\n").expect("a file");
    server.wait_for("pkg/sub/second.go", sent("second.go")).await;

    // Inside a package: not watched. A later change elsewhere marks the point by which it
    // would have been sent.
    std::fs::create_dir_all(root.join("node_modules/lib/inner/deeper")).expect("a package directory");
    std::fs::write(root.join(package).join("hidden.go"), "package inner\n").expect("a package file");
    std::fs::write(root.join("node_modules/lib/inner/deeper/hidden2.go"), "package deeper\n").expect("a file");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    std::fs::write(root.join("later.go"), "package main\n").expect("a file");
    server.wait_for("later.go", sent("later.go")).await;
    let all = server.log().notifications("workspace/didChangeWatchedFiles");
    assert!(all.iter().all(|p| !p.to_string().contains("hidden")), "{all:?}");

    // The kernel is asked for changes only: a file or directory opened below the root (by the
    // server, a build, a `grep`) does not wake the watcher (no IN_OPEN, IN_CLOSE_NOWRITE).
    let masks = inotify_masks(&root.join("pkg/sub"));
    assert!(!masks.is_empty(), "no inotify watch of pkg/sub in /proc/self/fdinfo");
    for mask in masks {
        assert_eq!(mask & (IN_OPEN | IN_CLOSE_NOWRITE | IN_ACCESS), 0, "watch mask {mask:#x}");
        assert_eq!(mask & (IN_CREATE | IN_MODIFY | IN_DELETE), IN_CREATE | IN_MODIFY | IN_DELETE, "{mask:#x}");
    }
}

/// `inotify(7)` event bits, as `/proc/PID/fdinfo` shows a watch's mask.
const IN_ACCESS: u64 = 0x1;
const IN_MODIFY: u64 = 0x2;
const IN_CLOSE_NOWRITE: u64 = 0x10;
const IN_OPEN: u64 = 0x20;
const IN_CREATE: u64 = 0x100;
const IN_DELETE: u64 = 0x200;

/// The masks of this process's inotify watches of `dir` (found by its inode in
/// `/proc/self/fdinfo`, whose lines read `inotify wd:… ino:HEX sdev:… mask:HEX …`).
fn inotify_masks(dir: &std::path::Path) -> Vec<u64> {
    use std::os::unix::fs::MetadataExt;
    let ino = format!("ino:{:x} ", std::fs::metadata(dir).expect("the directory").ino());
    let mut masks = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fdinfo").expect("/proc/self/fdinfo").flatten() {
        let Ok(info) = std::fs::read_to_string(entry.path()) else { continue };
        for line in info.lines().filter(|line| line.starts_with("inotify ") && line.contains(&ino)) {
            let mask = line.split_whitespace().find_map(|field| field.strip_prefix("mask:"));
            masks.extend(mask.and_then(|hex| u64::from_str_radix(hex, 16).ok()));
        }
    }
    masks
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
