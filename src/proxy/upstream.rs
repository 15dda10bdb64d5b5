//! Server→editor traffic: what the backends hand to the editor side of `filepuff lsp`.
//!
//! - `textDocument/publishDiagnostics`: kept per document and per server; the editor gets the
//!   union of every server's latest list for the document (LSP replaces a document's
//!   diagnostics on each publish, so a merged list is the only way two servers can both show).
//! - `window/workDoneProgress/create` + `$/progress`: servers' tokens are renamed
//!   `filepuff/SERIAL/TOKEN` (two servers both counting from 0 would collide); tokens the
//!   editor made (a request's `workDoneToken`) pass unchanged. Without editor support for
//!   progress, the proxy answers `create` itself and drops the reports. Progress on the tokens
//!   of a fanned-out request goes through [`super::fan`].
//! - `client/registerCapability`: file watching is done by filepuff itself (the backends
//!   client keeps each server's `workspace/didChangeWatchedFiles` watchers) and absorbed; the
//!   rest is forwarded with ids made unique per server and, for document features, a
//!   `documentSelector` limited to the server's languages; commands are remembered for
//!   `workspace/executeCommand` routing. A server that exits has its registrations removed.
//! - `workspace/applyEdit`, `window/showDocument`, `window/showMessageRequest`,
//!   `workspace/configuration` (when filepuff has no settings for the server) and refresh
//!   requests: forwarded, positions translated, the editor's answer returned to the server;
//!   an edit in `documentChanges` form goes as `changes` to an editor that did not declare
//!   `documentChanges` (`super::fit`).
//! - Everything else: forwarded untouched.
//!
//! Server requests are held until the editor has said `initialized` (not only until its
//! `initialize` answer), and one the editor refuses with `MethodNotFound` shortly after is sent
//! again: editors register their handlers around `initialized`, and a progress `create` refused
//! then loses the server's progress for good.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Weak};

use async_lsp::{ErrorCode, ResponseError};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::translate::Translator;
use super::{Session, Shared, error, ready};
use crate::backends::{BackendError, ClientRef, LspClient, Upstream};
use crate::engine::{Approval, BufferEdit, Editor, EditorAnswer};
use crate::workspace::DocumentId;

/// One server's latest diagnostics for a document: the version they are for, and the list.
type Published = (Option<i64>, Vec<Value>);

/// The per-session state of server→editor traffic.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Latest diagnostics per document URI, per server name: (version, diagnostics).
    diagnostics: HashMap<String, BTreeMap<String, Published>>,
    /// Progress tokens servers created: (serial, token) → the editor's token, or `None` when
    /// the editor does not do progress.
    tokens: HashMap<(u64, String), Option<String>>,
    /// Requests fanned out with the editor's `workDoneToken` ([`super::fan`]).
    pub(super) fans: super::fan::Fans,
    /// `workspace/executeCommand` commands registered dynamically, by server name.
    pub(super) commands: HashMap<String, String>,
    /// Registrations forwarded to the editor, per server serial: (editor id, method) — the
    /// servers' own and those filepuff made for late servers ([`super::late`]).
    pub(super) registrations: HashMap<u64, Vec<(String, String)>>,
    /// Registration ids absorbed (never forwarded).
    absorbed: HashSet<String>,
    /// Whether the editor sent `initialized` (registrations may be sent from then).
    pub(super) editor_initialized: bool,
    /// When the editor's `initialized` arrived: within [`super::EDITOR_SETTLING`] of it, an
    /// editor answering `MethodNotFound` may still be registering its handlers, and the request
    /// is sent again ([`Shared::request_editor`](super::Shared)).
    pub(super) initialized_at: Option<std::time::Instant>,
    /// The registrations filepuff made for late servers.
    pub(super) late: Vec<super::late::Registered>,
    /// Serial of the last of them (their ids are `filepuff/SERIAL/late/N`).
    pub(super) next_late: u64,
    /// Per server name, the features the editor was told it cannot be given.
    pub(super) warned: HashMap<String, Vec<&'static str>>,
    /// Notes already logged to the editor (each once).
    pub(super) noted: HashSet<String>,
}

impl State {
    /// The server that registered `command`, if one did.
    pub(crate) fn command_server(&self, command: &str) -> Option<String> {
        self.commands.get(command).cloned()
    }
}

/// The [`Upstream`] the backends talk to: a weak handle on the session.
pub(crate) struct EditorLink(pub Weak<Shared>);

fn token_string(token: &Value) -> String {
    match token {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Translates `params` from `client`'s encoding to the editor's, and its URIs to the editor's
/// spelling.
fn to_editor(session: &Session, client: Option<&Arc<LspClient>>, params: &mut Value) {
    if let Some(client) = client {
        let engine = &session.engine;
        Translator::new(client.encoding, session.encoding, engine.workspace(), engine.documents()).value(params, None);
    }
    session.spellings.to_editor(params);
}

impl Upstream for EditorLink {
    fn notification(&self, from: &ClientRef, method: &str, mut params: Value) {
        let Some(shared) = self.0.upgrade() else { return };
        let Some(session) = shared.session.get() else { return };
        if matches!(method, "experimental/serverStatus" | "textDocument/clangd.fileStatus") {
            // Read by the backends for readiness; not the editor's (clangd sends one per request).
            return;
        }
        let client = session.engine.backends().by_serial(from.serial);
        to_editor(session, client.as_ref(), &mut params);
        let ready = session.is_ready();
        match method {
            "textDocument/publishDiagnostics" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else { return };
                let version = params.get("version").and_then(Value::as_i64);
                let diagnostics = params.get("diagnostics").and_then(Value::as_array).cloned().unwrap_or_default();
                let merged = {
                    let mut state = shared.upstream.lock();
                    let by_server = state.diagnostics.entry(uri.clone()).or_default();
                    by_server.insert(from.name.clone(), (version, diagnostics));
                    let versions: HashSet<Option<i64>> = by_server.values().map(|(v, _)| *v).collect();
                    let all: Vec<Value> = by_server.values().flat_map(|(_, d)| d.iter().cloned()).collect();
                    let version = if versions.len() == 1 { version } else { None };
                    let mut merged = json!({ "uri": uri, "diagnostics": all });
                    if let Some(version) = version {
                        merged["version"] = json!(version);
                    }
                    merged
                };
                if ready {
                    shared.notify_editor(method, merged);
                }
            }
            "$/progress" => {
                let kind = params.pointer("/value/kind").and_then(Value::as_str);
                if ready && matches!(kind, Some("begin" | "end")) {
                    shared.send_status();
                }
                let token = params.get("token").map(token_string).unwrap_or_default();
                let value = params.get("value").cloned().unwrap_or_default();
                let fanned = shared.upstream.lock().fans.progress(from.serial, &token, &value);
                match fanned {
                    super::fan::Progress::NotFan => {}
                    super::fan::Progress::Drop => return,
                    super::fan::Progress::Forward(params) => {
                        if ready {
                            shared.notify_editor(method, params);
                        }
                        return;
                    }
                }
                let mapped = shared.upstream.lock().tokens.get(&(from.serial, token)).cloned();
                match mapped {
                    Some(None) => {}
                    Some(Some(editor_token)) => {
                        params["token"] = json!(editor_token);
                        if ready {
                            shared.notify_editor(method, params);
                        }
                    }
                    None if ready => shared.notify_editor(method, params),
                    None => {}
                }
            }
            "window/logMessage" => {
                if let Some(message) = params.get("message").and_then(Value::as_str) {
                    params["message"] = json!(format!("[{}] {message}", from.name));
                }
                if ready {
                    shared.notify_editor(method, params);
                }
            }
            _ if ready => shared.notify_editor(method, params),
            _ => {}
        }
    }

    fn request(
        &self,
        from: &ClientRef,
        method: &str,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ResponseError>> {
        let Some(shared) = self.0.upgrade() else {
            return ready(Err(error(ErrorCode::REQUEST_FAILED, "the editor is gone")));
        };
        let Some(session) = shared.session.get() else { return ready(answer_locally(method, &params)) };
        if session.is_ready() && shared.editor_initialized() {
            return to_ready_editor(&shared, session, from, method, params);
        }
        // The editor must not get requests before its `initialize` answer (LSP 3.17
        // "initialize"), and gets none before it said `initialized`: editors register their
        // handlers around then (vscode-languageclient after sending it), and a request that
        // comes first is refused (`MethodNotFound`) — gopls's first
        // `window/workDoneProgress/create` was, and its progress never showed. Held until then.
        let mut ready_rx = session.ready.subscribe();
        let mut initialized_rx = shared.editor_progress.subscribe();
        let weak = self.0.clone();
        let (from, method) = (from.clone(), method.to_owned());
        Box::pin(async move {
            let waited = tokio::time::timeout(std::time::Duration::from_secs(120), async {
                ready_rx.wait_for(|r| *r).await.is_ok()
                    && initialized_rx.wait_for(|(initialized, _)| *initialized).await.is_ok()
            })
            .await;
            let Some(shared) = weak.upgrade() else { return answer_locally(&method, &params) };
            match (waited, shared.ready_session()) {
                (Ok(true), Some(session)) => to_ready_editor(&shared, session, &from, &method, params).await,
                _ => answer_locally(&method, &params),
            }
        })
    }

    fn started(&self, client: &Arc<LspClient>) {
        // The backends open the editor's documents on it themselves (`Backends::resync`); here
        // the capabilities it brings after the editor's initialize, and the status bar.
        let Some(shared) = self.0.upgrade() else { return };
        if let Some(session) = shared.session.get()
            && session.is_ready()
        {
            super::late::map_legend(&shared, session, client);
            super::late::reconcile(&shared, session);
        }
        shared.send_status();
    }

    fn exited(&self, client: &Arc<LspClient>) {
        let Some(shared) = self.0.upgrade() else { return };
        let Some(session) = shared.session.get() else { return };
        let engine = session.engine.clone();
        let client = client.clone();
        // Registrations of the dead process are gone with it.
        let stale = {
            let mut state = shared.upstream.lock();
            state.late.retain(|r| r.serial != client.serial);
            state.registrations.remove(&client.serial)
        };
        if let Some(stale) = stale.filter(|s| !s.is_empty()) {
            let entries: Vec<Value> = stale.iter().map(|(id, method)| json!({ "id": id, "method": method })).collect();
            let answer = shared.request_editor("client/unregisterCapability", json!({ "unregisterations": entries }));
            tokio::spawn(async move {
                let _ = answer.await;
            });
            // What it registered for its languages may be another running server's to offer.
            super::late::reconcile(&shared, session);
        }
        shared.send_status();
        tokio::task::spawn_blocking(move || {
            let Some(outcome) = engine.backends().restart(&client) else { return };
            match outcome {
                Ok(acquired) => {
                    let reopened = acquired.client.synced_count();
                    tracing::warn!(server = %client.name, "exited unexpectedly; restarted");
                    shared.log_to_editor(
                        2,
                        format!(
                            "filepuff: {} exited unexpectedly; restarted it and re-opened {reopened} document(s)",
                            client.name
                        ),
                    );
                }
                // Said once, by `broken`, when the crash loop was detected.
                Err(BackendError::Broken { .. }) => shared.send_status(),
                Err(err) => shared.notify_editor(
                    "window/showMessage",
                    json!({ "type": 1, "message": format!("filepuff: {} exited and could not be restarted: {err}", client.name) }),
                ),
            }
        });
    }

    fn broken(&self, _server: &str, _root: &std::path::Path, error: &BackendError) {
        let Some(shared) = self.0.upgrade() else { return };
        let Some(session) = shared.session.get() else { return };
        // An error message (LSP `MessageType` 1): the editor shows it once, after its
        // `initialize` answer.
        let message = json!({ "type": 1, "message": format!("filepuff: {error}") });
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            shared.notify_editor("window/showMessage", message);
            return;
        };
        let mut ready = session.ready.subscribe();
        let weak = self.0.clone();
        runtime.spawn(async move {
            if ready.wait_for(|r| *r).await.is_ok()
                && let Some(shared) = weak.upgrade()
            {
                shared.notify_editor("window/showMessage", message);
                shared.send_status();
            }
        });
    }
}

/// What a server gets when the editor cannot be asked: what lets it go on.
fn answer_locally(method: &str, params: &Value) -> Result<Value, ResponseError> {
    match method {
        "workspace/configuration" => {
            let items = params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
            Ok(Value::Array(vec![Value::Null; items]))
        }
        "client/registerCapability" | "client/unregisterCapability" | "window/workDoneProgress/create" => {
            Ok(Value::Null)
        }
        _ => Err(error(ErrorCode::REQUEST_FAILED, "the editor session is not initialized")),
    }
}

/// A server request to an initialized editor (see the module documentation).
fn to_ready_editor(
    shared: &Arc<Shared>,
    session: &Session,
    from: &ClientRef,
    method: &str,
    mut params: Value,
) -> BoxFuture<'static, Result<Value, ResponseError>> {
    let supports = |pointer: &str| {
        session.editor_capabilities.pointer(pointer).is_some_and(|v| v.as_bool() != Some(false) && !v.is_null())
    };
    match method {
        "window/workDoneProgress/create" => {
            let token = params.get("token").map(token_string).unwrap_or_default();
            if !supports("/window/workDoneProgress") {
                shared.upstream.lock().tokens.insert((from.serial, token), None);
                return ready(Ok(Value::Null));
            }
            let editor_token = format!("filepuff/{}/{token}", from.serial);
            shared.upstream.lock().tokens.insert((from.serial, token), Some(editor_token.clone()));
            shared.request_editor(method, json!({ "token": editor_token }))
        }
        "client/registerCapability" => {
            let languages = super::late::server_languages(session, &from.name);
            let mut state = shared.upstream.lock();
            let mut forwarded = Vec::new();
            for mut registration in params.get("registrations").and_then(Value::as_array).cloned().unwrap_or_default() {
                let id = format!(
                    "filepuff/{}/{}",
                    from.serial,
                    registration.get("id").and_then(Value::as_str).unwrap_or_default()
                );
                let reg_method = registration.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                if reg_method == "workspace/didChangeWatchedFiles" {
                    state.absorbed.insert(id);
                    continue;
                }
                if reg_method == "workspace/executeCommand" {
                    for command in registration
                        .pointer("/registerOptions/commands")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(command) = command.as_str() {
                            state.commands.insert(command.to_owned(), from.name.clone());
                        }
                    }
                }
                if reg_method.starts_with("textDocument/") && !languages.is_empty() {
                    let options =
                        registration.as_object_mut().map(|r| r.entry("registerOptions").or_insert_with(|| json!({})));
                    if let Some(options) = options.and_then(Value::as_object_mut)
                        && options.get("documentSelector").is_none_or(Value::is_null)
                    {
                        options.insert("documentSelector".into(), super::late::selector(&languages));
                    }
                }
                registration["id"] = json!(id);
                state.registrations.entry(from.serial).or_default().push((id, reg_method));
                forwarded.push(registration);
            }
            drop(state);
            if forwarded.is_empty() {
                return ready(Ok(Value::Null));
            }
            shared.request_editor(method, json!({ "registrations": forwarded }))
        }
        "client/unregisterCapability" => {
            let mut state = shared.upstream.lock();
            let mut forwarded = Vec::new();
            // The spec's field name is misspelt on purpose ("unregisterations", LSP 3.17).
            for mut entry in params.get("unregisterations").and_then(Value::as_array).cloned().unwrap_or_default() {
                let id =
                    format!("filepuff/{}/{}", from.serial, entry.get("id").and_then(Value::as_str).unwrap_or_default());
                if state.absorbed.remove(&id) {
                    continue;
                }
                if let Some(list) = state.registrations.get_mut(&from.serial) {
                    list.retain(|(known, _)| *known != id);
                }
                entry["id"] = json!(id);
                forwarded.push(entry);
            }
            drop(state);
            if forwarded.is_empty() {
                return ready(Ok(Value::Null));
            }
            shared.request_editor(method, json!({ "unregisterations": forwarded }))
        }
        "workspace/configuration" => {
            if supports("/workspace/configuration") {
                return shared.request_editor(method, params);
            }
            let items = params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
            ready(Ok(Value::Array(vec![Value::Null; items])))
        }
        _ => {
            let client = session.engine.backends().by_serial(from.serial);
            to_editor(session, client.as_ref(), &mut params);
            session.accepts.fit_request(method, &mut params);
            shared.request_editor(method, params)
        }
    }
}

impl std::fmt::Debug for EditorLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EditorLink")
    }
}

/// How long an agent's edit waits for the editor: its answer, then its `didChange`s.
const EDITOR_ANSWER: std::time::Duration = std::time::Duration::from_secs(30);
const EDITOR_DID_CHANGE: std::time::Duration = std::time::Duration::from_secs(5);
/// How often the disk is looked at while waiting for the edit of a file the editor did not have
/// open.
const UNOPENED_SLICE: std::time::Duration = std::time::Duration::from_millis(100);

/// How long an agent's edit that needs the person's confirmation waits for their answer.
const EDITOR_CONFIRM: std::time::Duration = std::time::Duration::from_secs(300);

impl EditorLink {
    /// The editor's session, while it lasts.
    fn shared(&self) -> Result<Arc<Shared>, String> {
        self.0.upgrade().ok_or_else(|| "the editor session ended".to_owned())
    }

    /// Sends `method` to the editor and waits (blocking this tool thread) at most `limit`.
    fn ask_editor(shared: &Shared, method: &str, params: Value, limit: std::time::Duration) -> Result<Value, String> {
        let answer = shared.request_editor(method, params);
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| "no runtime to wait for the editor on")?;
        runtime
            .block_on(tokio::time::timeout(limit, answer))
            .map_err(|_| format!("the editor did not answer {method} within {} s", limit.as_secs()))?
            .map_err(|err| format!("the editor answered {method} with an error: {}", err.message))
    }
}

impl Editor for EditorLink {
    fn apply(&self, label: &str, edits: &[BufferEdit], approval: Approval) -> Result<EditorAnswer, String> {
        let shared = self.shared()?;
        let session = shared.ready_session().ok_or("the editor session is not initialized")?;
        let caps = &session.editor_capabilities;
        if caps.pointer("/workspace/applyEdit").and_then(Value::as_bool) != Some(true) {
            return Err("the editor does not support workspace/applyEdit".to_owned());
        }
        let versioned = caps.pointer("/workspace/workspaceEdit/documentChanges").and_then(Value::as_bool) == Some(true);
        let confirm = approval == Approval::Confirm;
        if confirm && !(versioned && caps.pointer("/workspace/workspaceEdit/changeAnnotationSupport").is_some()) {
            return Err("the editor does not declare workspace.workspaceEdit.changeAnnotationSupport (with \
                        documentChanges), so it cannot ask the person to confirm an edit; nothing was applied"
                .to_owned());
        }
        let mut document_changes = Vec::new();
        let mut changes = serde_json::Map::new();
        for edit in edits {
            // The URI the editor opened the document with: the same buffer, not a second one.
            let uri = session.spellings.editor_uri(&edit.id);
            // Every range against the text before any of them (LSP 3.17 "TextEdit"), in the
            // editor's units.
            let text_edits: Vec<Value> = edit
                .edits
                .iter()
                .map(|byte_edit| {
                    let at = |offset| {
                        let (p, _) =
                            crate::documents::position::offset_to_position(&edit.before, offset, session.encoding);
                        json!({ "line": p.line, "character": p.character })
                    };
                    let mut text_edit = json!({
                        "range": { "start": at(byte_edit.range.start), "end": at(byte_edit.range.end) },
                        "newText": byte_edit.text,
                    });
                    if confirm {
                        text_edit["annotationId"] = json!(ANNOTATION);
                    }
                    text_edit
                })
                .collect();
            if versioned {
                document_changes.push(json!({
                    "textDocument": { "uri": uri, "version": edit.version },
                    "edits": text_edits,
                }));
            } else {
                changes.insert(uri.to_string(), Value::Array(text_edits));
            }
        }
        let mut edit =
            if versioned { json!({ "documentChanges": document_changes }) } else { json!({ "changes": changes }) };
        if confirm {
            edit["changeAnnotations"] = json!({ ANNOTATION: {
                "label": label,
                "needsConfirmation": true,
                "description": "proposed by an agent through filepuff",
            }});
        }
        let limit = if confirm { EDITOR_CONFIRM } else { EDITOR_ANSWER };
        let result = Self::ask_editor(&shared, "workspace/applyEdit", json!({ "label": label, "edit": edit }), limit)?;
        if result.get("applied").and_then(Value::as_bool) != Some(true) {
            let reason = result.get("failureReason").and_then(Value::as_str).map(str::to_owned);
            return Ok(EditorAnswer::Refused { reason });
        }
        // The editor's didChange for each open document brings the text here; wait for them
        // (the store wakes us on each change) so the agent's next read, and the diagnostics
        // asked about the edit, see the whole edit: Neovim sends the edits of one buffer in
        // several didChanges (the first at once, the rest after its 150 ms debounce). A file the
        // editor did not have open, it opens to apply the edit (Neovim and VS Code load it into
        // a buffer, unsaved): wait for that buffer to hold the edited text too, and not the
        // disk's the editor left as it was.
        let documents = session.engine.documents();
        let edited: Vec<(&BufferEdit, String)> =
            edits.iter().filter_map(|e| Some((e, crate::documents::apply_edits(&e.before, &e.edits).ok()?))).collect();
        let changed = |store: &crate::documents::DocumentStore| {
            edits.iter().all(|e| match e.version {
                Some(version) => store.get(&e.id).is_none_or(|d| d.version != version),
                None => true,
            })
        };
        // Each buffer holds the edited text (one closed since is not waited for); a file that
        // was not open may instead be on disk with it (an editor that writes such a file). The
        // disk is read only with `read_disk`: never inside the store's wait, which holds the
        // lock the editor's changes take to wake it.
        let landed = |store: &crate::documents::DocumentStore, read_disk: bool| {
            edited.iter().all(|(e, text)| match store.get(&e.id) {
                Some(document) => document.text == text.as_str(),
                None if e.version.is_some() => true,
                None => read_disk && std::fs::read(e.id.path()).is_ok_and(|disk| disk == text.as_bytes()),
            })
        };
        let deadline = std::time::Instant::now() + EDITOR_DID_CHANGE;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if documents.wait_until(UNOPENED_SLICE.min(left), |store| changed(store) && landed(store, false)) {
                break;
            }
            // In slices: a write to the disk does not wake the store.
            if left.is_zero() || (changed(documents) && landed(documents, true)) {
                break;
            }
        }
        if !changed(documents) {
            // Neovim answers `applied: true` and drops an edit made against an older version of
            // its buffer ("newer than edits"): without the didChange, nothing is known to have
            // changed, and saying "applied" would be a silent loss.
            tracing::warn!("the editor applied an edit but sent no didChange within {} s", EDITOR_DID_CHANGE.as_secs());
            return Ok(EditorAnswer::Refused {
                reason: Some(format!(
                    "the editor answered applied: true, but its buffer did not change within {} s \
                     (an editor may drop an edit made against an older version of its buffer); \
                     read the file again and retry",
                    EDITOR_DID_CHANGE.as_secs()
                )),
            });
        }
        if !landed(documents, true) {
            // The editor says it applied them; where it put them is not known here.
            tracing::warn!(
                "the editor applied an edit, but its buffers (or the disk, for a file it did not have open) \
                 do not hold the edited text after {} s: changed since, or placed elsewhere",
                EDITOR_DID_CHANGE.as_secs()
            );
        }
        Ok(EditorAnswer::Applied)
    }

    fn show(
        &self,
        id: &DocumentId,
        text: &ropey::Rope,
        selection: Option<std::ops::Range<usize>>,
        take_focus: bool,
    ) -> Result<bool, String> {
        let shared = self.shared()?;
        let session = shared.ready_session().ok_or("the editor session is not initialized")?;
        if session.editor_capabilities.pointer("/window/showDocument/support").and_then(Value::as_bool) != Some(true) {
            return Err("the editor does not support window/showDocument".to_owned());
        }
        let mut params = json!({ "uri": session.spellings.editor_uri(id), "takeFocus": take_focus });
        if let Some(range) = selection {
            let at = |offset| {
                let (p, _) = crate::documents::position::offset_to_position(text, offset, session.encoding);
                json!({ "line": p.line, "character": p.character })
            };
            params["selection"] = json!({ "start": at(range.start), "end": at(range.end) });
        }
        let result = Self::ask_editor(&shared, "window/showDocument", params, EDITOR_ANSWER)?;
        Ok(result.get("success").and_then(Value::as_bool) == Some(true))
    }
}

/// The change annotation an edit that needs confirmation carries.
const ANNOTATION: &str = "filepuff/agent-edit";
