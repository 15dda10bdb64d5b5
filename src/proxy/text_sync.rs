//! Text sync from the editor (LSP 3.17 "Text Document Synchronization"): `didOpen`,
//! `didChange`, `didSave` and `didClose` go through the Engine's document API
//! (`Engine::open_document`, `change_document`, `save_document`, `close_document`) in arrival
//! order, keyed by the [`crate::workspace::DocumentId`] the workspace makes of the editor's URI;
//! filepuff's own [`EDITOR_FOCUS`] feeds `Engine::report_focus`; any other notification goes to
//! the servers of its document, or to every server.

use async_lsp::AnyNotification;
use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams, Url,
};
use serde_json::Value;
use std::time::Instant;

use super::{Session, Shared};
use crate::documents::{Language, TextChange};

/// Handles one editor notification (see the module documentation): text sync goes through the
/// Engine's document API, keyed by the [`crate::workspace::DocumentId`] the workspace makes of
/// the editor's URI. Errors are reported to the editor's log; the session goes on.
pub(super) fn text_sync(shared: &Shared, session: &Session, notification: AnyNotification) -> Result<(), String> {
    let engine = &session.engine;
    let parse_error = |err: serde_json::Error| format!("invalid params: {err}");
    let id_of = |uri: &Url| session.spellings.id(engine.workspace(), uri).map_err(|err| err.to_string());
    match notification.method.as_str() {
        "initialized" | "$/cancelRequest" => {}
        "textDocument/didOpen" => {
            let params: DidOpenTextDocumentParams = serde_json::from_value(notification.params).map_err(parse_error)?;
            let item = params.text_document;
            let id = id_of(&item.uri)?;
            session.spellings.opened(&id, &item.uri);
            let opened = engine.open_document(id.clone(), item.language_id, item.version, &item.text);
            if opened.reload {
                tracing::debug!("{} opened again: a reload", item.uri);
            }
            if opened.missing
                && let Some(language) = opened.language
            {
                shared.start_servers_for(session, id.path(), language);
            }
            if opened.servers.is_empty()
                && let Some(language) = opened.language
                && let Err(err @ crate::backends::BackendError::NotInstalled { .. }) =
                    engine.backends().specs_for(language)
                && shared.starting.lock().insert(language, Instant::now()).is_none()
            {
                // Said once per language: its documents get no answers until it is installed.
                shared.log_to_editor(2, format!("filepuff: {err}"));
            }
        }
        "textDocument/didChange" => {
            let params: DidChangeTextDocumentParams =
                serde_json::from_value(notification.params).map_err(parse_error)?;
            let id = id_of(&params.text_document.uri)?;
            let changes: Vec<TextChange> = params
                .content_changes
                .into_iter()
                .map(|change| TextChange {
                    range: change.range.map(|range| (from_lsp(range.start), from_lsp(range.end))),
                    text: change.text,
                })
                .collect();
            engine
                .change_document(&id, params.text_document.version, session.encoding, &changes)
                .map_err(|err| err.to_string())?;
        }
        "textDocument/didSave" => {
            let params: DidSaveTextDocumentParams = serde_json::from_value(notification.params).map_err(parse_error)?;
            engine.save_document(&id_of(&params.text_document.uri)?);
        }
        "textDocument/didClose" => {
            let params: DidCloseTextDocumentParams =
                serde_json::from_value(notification.params).map_err(parse_error)?;
            let id = id_of(&params.text_document.uri)?;
            // The same file may be open under another spelling still: then it stays open.
            if session.spellings.closed(&id, &params.text_document.uri) {
                engine.close_document(&id);
            }
        }
        EDITOR_FOCUS => {
            let report = focus_report(&notification.params, |uri| id_of(uri))?;
            engine.report_focus(report, session.encoding);
        }
        method => {
            // Anything else goes to the servers of its document, or to every server.
            let mut params = notification.params;
            let uri = params
                .get("textDocument")
                .and_then(|d| d.get("uri"))
                .and_then(Value::as_str)
                .and_then(|u| Url::parse(u).ok());
            session.spellings.to_servers(engine.workspace(), &mut params);
            let clients = match uri.map(|uri| id_of(&uri)) {
                Some(Ok(id)) => {
                    let language = engine
                        .documents()
                        .get(&id)
                        .and_then(|d| Language::from_name(&d.language_id))
                        .or_else(|| Language::from_path(id.path()));
                    engine.backends().clients_of(&id, language).0
                }
                _ => engine.backends().running(),
            };
            for client in clients {
                let _ = client.notify_any(method, params.clone());
            }
        }
    }
    Ok(())
}

/// filepuff's own notification from the editor: what the person is looking at. Params
/// `{"textDocument": {"uri", "version"?} | null, "cursor"?: Position, "selection"?: Range,
/// "visibleRange"?: Range}`, positions in the negotiated `positionEncoding` (0-based); a null
/// `textDocument` (or a URI that names no file, such as `untitled:`) says no file has the
/// focus. The VS Code extension and the Neovim plugin send
/// it, debounced, when the focused editor, its cursor, selection or scroll position change
/// (docs/lsp.md); it feeds [`crate::engine::Engine::report_focus`].
pub const EDITOR_FOCUS: &str = "filepuff/editorFocus";

/// The [`EDITOR_FOCUS`] params as a [`crate::engine::FocusReport`]. Errors: malformed params
/// (a missing or unparsable URI, positions that are not LSP `Position`s, half a range).
fn focus_report(
    params: &Value,
    id_of: impl Fn(&Url) -> Result<crate::workspace::DocumentId, String>,
) -> Result<crate::engine::FocusReport, String> {
    let document = params.get("textDocument").filter(|d| !d.is_null());
    let Some(document) = document else { return Ok(crate::engine::FocusReport::default()) };
    let uri = document.get("uri").and_then(Value::as_str).ok_or("textDocument.uri is missing")?;
    let uri = Url::parse(uri).map_err(|err| format!("textDocument.uri: {err}"))?;
    let position = |value: Option<&Value>| -> Result<Option<crate::documents::Position>, String> {
        match value.filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(value) => serde_json::from_value::<lsp_types::Position>(value.clone())
                .map(|p| Some(from_lsp(p)))
                .map_err(|err| format!("invalid position: {err}")),
        }
    };
    let range = |name: &str| -> Result<Option<_>, String> {
        let value = params.get(name).filter(|v| !v.is_null());
        let Some(value) = value else { return Ok(None) };
        match (position(value.get("start"))?, position(value.get("end"))?) {
            (Some(start), Some(end)) => Ok(Some((start.min(end), start.max(end)))),
            _ => Err(format!("{name}: a range needs start and end")),
        }
    };
    // A buffer that is not a file (`untitled:`, a remote scheme) is no file to point at.
    let Ok(id) = id_of(&uri) else { return Ok(crate::engine::FocusReport::default()) };
    Ok(crate::engine::FocusReport {
        id: Some(id),
        version: document.get("version").and_then(Value::as_i64).and_then(|v| i32::try_from(v).ok()),
        cursor: position(params.get("cursor"))?,
        selection: range("selection")?,
        visible_range: range("visibleRange")?,
    })
}

fn from_lsp(position: lsp_types::Position) -> crate::documents::Position {
    crate::documents::Position { line: position.line, character: position.character }
}
