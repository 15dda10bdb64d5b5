//! MCP resources with subscriptions (MCP 2025-11-25 "Resources"): `filepuff://editor` (the
//! `editor_state` content) and the template `filepuff://diagnostics/{path}` (a file's
//! diagnostics, the `diagnostics` tool's content for that file). Both are listed, readable and
//! `resources/subscribe`-able; a subscribed resource whose content changed gets
//! `notifications/resources/updated`.
//!
//! Changes are found, not guessed: a session's watcher ([`Subscriptions::watch`]) hears the
//! Engine's events (the editor opened, closed or saved a document, or its focus changed; an
//! agent's commit) and the backends' (a server published different diagnostics for a
//! document), waits [`DEBOUNCE`] for more, then computes the content of each subscribed
//! resource they concern and notifies only when it differs from what the subscriber last had
//! (for diagnostics: the list of diagnostics). This works the same attached to an editor and
//! standalone, where the servers know the files the agent touched.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;

use crate::engine::{Engine, EngineEvent};
use crate::tools;
use crate::workspace::DocumentId;

/// The editor resource's URI.
pub const EDITOR_URI: &str = "filepuff://editor";
/// The diagnostics resources' prefix: `filepuff://diagnostics/` + the file's path relative to
/// the workspace root (`/`-separated; percent-encoding is decoded).
pub const DIAGNOSTICS_PREFIX: &str = "filepuff://diagnostics/";
/// The diagnostics resources' template (RFC 6570).
pub const DIAGNOSTICS_TEMPLATE: &str = "filepuff://diagnostics/{path}";
/// How long a watcher waits after a change for more before computing contents.
pub const DEBOUNCE: Duration = Duration::from_millis(250);
/// At most this many subscriptions per session.
pub const MAX_SUBSCRIPTIONS: usize = 256;
/// At most this many diagnostics resources are listed.
const MAX_LISTED: usize = 500;

/// What a resource URI names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Target {
    Editor,
    Diagnostics { id: DocumentId, relative: String },
}

/// Parses a resource URI. Errors: an unknown URI, or a path the workspace refuses.
fn target(engine: &Engine, uri: &str) -> Result<Target, ErrorData> {
    if uri == EDITOR_URI {
        return Ok(Target::Editor);
    }
    let Some(path) = uri.strip_prefix(DIAGNOSTICS_PREFIX) else {
        return Err(ErrorData::resource_not_found(
            format!("no resource {uri}: filepuff serves {EDITOR_URI} and {DIAGNOSTICS_TEMPLATE}"),
            None,
        ));
    };
    let path = percent_decode(path)
        .ok_or_else(|| ErrorData::invalid_params(format!("{uri}: invalid percent-encoding"), None))?;
    let resolved = engine
        .workspace()
        .resolve(&path)
        .map_err(|err| ErrorData::resource_not_found(format!("{uri}: {err}"), None))?;
    Ok(Target::Diagnostics { id: resolved.id(), relative: resolved.relative })
}

/// `%XX` decoded; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The content of a resource as JSON, computed with the tools (blocking: call from the
/// blocking pool). A diagnostics resource of a file no server serves is the tool's error.
fn content(engine: &Engine, target: &Target) -> Result<Value, tools::ToolError> {
    let json = |value: Result<Value, serde_json::Error>| {
        value.map_err(|err| tools::ToolError::internal(format!("cannot serialise the resource: {err}")))
    };
    match target {
        Target::Editor => json(serde_json::to_value(tools::editor_state(engine, tools::EditorStateParams::default())?)),
        Target::Diagnostics { relative, .. } => {
            // Built from JSON so that parameters added to the tool keep their defaults.
            let params: tools::DiagnosticsParams = serde_json::from_value(serde_json::json!({ "file": relative }))
                .map_err(|err| tools::ToolError::invalid_params(&err.to_string()))?;
            json(serde_json::to_value(tools::diagnostics(engine, params)?))
        }
    }
}

/// What a subscriber is told changed: for diagnostics, the list (not when it was computed or
/// whether a server was restarted meanwhile); for the editor, all of it.
fn fingerprint(target: &Target, content: &Result<Value, tools::ToolError>) -> String {
    match (target, content) {
        (Target::Diagnostics { .. }, Ok(value)) => value.get("diagnostics").map(Value::to_string).unwrap_or_default(),
        (Target::Editor, Ok(value)) => value.to_string(),
        (_, Err(err)) => format!("error {}", err.to_json()),
    }
}

async fn compute(engine: &Arc<Engine>, target: &Target) -> Result<Value, tools::ToolError> {
    let engine = engine.clone();
    let target = target.clone();
    tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| content(&engine, &target)))
            .unwrap_or_else(|_| Err(tools::ToolError::internal("computing the resource panicked")))
    })
    .await
    .unwrap_or_else(|err| Err(tools::ToolError::internal(format!("the resource's worker failed: {err}"))))
}

/// `resources/list`: the editor, and the diagnostics of every document the editor has open or
/// a running server published diagnostics for (standalone: the files the agent touched).
pub fn list(engine: &Engine) -> ListResourcesResult {
    let workspace = engine.workspace();
    let mut files = std::collections::BTreeSet::new();
    for id in engine.documents().open_ids() {
        if let Some(relative) = workspace.relative(&id) {
            files.insert(relative);
        }
    }
    for client in engine.backends().running() {
        for (uri, _) in client.all_published_diagnostics() {
            if let Ok(id) = workspace.document_id_for_uri(&uri)
                && let Some(relative) = workspace.relative(&id)
            {
                files.insert(relative);
            }
        }
    }
    let mut resources = vec![
        Resource::new(EDITOR_URI, "editor")
            .with_title("What the person has open and is looking at")
            .with_description(
                "The editor_state tool's result: open documents, focus, cursor, selection, visible range.",
            )
            .with_mime_type("application/json"),
    ];
    resources.extend(files.into_iter().take(MAX_LISTED).map(|relative| {
        Resource::new(format!("{DIAGNOSTICS_PREFIX}{relative}"), format!("diagnostics of {relative}"))
            .with_mime_type("application/json")
    }));
    ListResourcesResult::with_all_items(resources)
}

/// `resources/templates/list`: the diagnostics template.
pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(DIAGNOSTICS_TEMPLATE, "diagnostics")
            .with_title("A file's diagnostics")
            .with_description(
                "The language server's diagnostics for the file's current text (the diagnostics tool's result); path is relative to the workspace root.",
            )
            .with_mime_type("application/json"),
    ])
}

/// `resources/read`. Errors: an unknown URI or a refused path (`-32002`), a file whose
/// diagnostics cannot be had (no server for its language, unreadable: `-32603` with the tool's
/// error as data).
pub async fn read(engine: &Arc<Engine>, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let target = target(engine, uri)?;
    let value = compute(engine, &target)
        .await
        .map_err(|err| ErrorData::internal_error(err.to_string(), Some(err.to_json())))?;
    Ok(ReadResourceResult::new(vec![ResourceContents::text(value.to_string(), uri).with_mime_type("application/json")]))
}

/// One session's subscriptions: the URIs, what each subscriber last had, and the watcher.
#[derive(Default)]
pub struct Subscriptions {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Subscribed URI → its target and the fingerprint of the content the subscriber last had.
    subscribed: BTreeMap<String, (Target, String)>,
    /// The watcher runs (started by the first subscription; ends with the session).
    watching: bool,
}

impl Subscriptions {
    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// `resources/subscribe`: computes the content now (what the subscriber has, changes are
    /// measured from it) and starts the session's watcher on the first subscription.
    /// Errors: an unknown URI or refused path; more than [`MAX_SUBSCRIPTIONS`].
    pub async fn subscribe(
        self: &Arc<Self>,
        engine: &Arc<Engine>,
        uri: &str,
        peer: Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let target = target(engine, uri)?;
        {
            let state = self.lock();
            if !state.subscribed.contains_key(uri) && state.subscribed.len() >= MAX_SUBSCRIPTIONS {
                return Err(ErrorData::invalid_params(
                    format!("at most {MAX_SUBSCRIPTIONS} subscriptions per session; unsubscribe from some first"),
                    None,
                ));
            }
        }
        let print = fingerprint(&target, &compute(engine, &target).await);
        let start = {
            let mut state = self.lock();
            state.subscribed.insert(uri.to_owned(), (target, print));
            !std::mem::replace(&mut state.watching, true)
        };
        if start {
            let me = self.clone();
            let engine = engine.clone();
            tokio::spawn(async move { me.watch(engine, peer).await });
        }
        Ok(())
    }

    /// `resources/unsubscribe` (unknown URIs are fine: nothing to stop).
    pub fn unsubscribe(&self, uri: &str) {
        self.lock().subscribed.remove(uri);
    }

    /// The session's watcher: hears changes, waits [`DEBOUNCE`], recomputes what they concern
    /// and notifies the subscriber of each resource whose content changed. Ends when the
    /// session's peer is gone.
    async fn watch(self: Arc<Self>, engine: Arc<Engine>, peer: Peer<RoleServer>) {
        let mut events = engine.subscribe_events();
        let mut published = engine.backends().subscribe_published();
        loop {
            let mut dirty = Dirty::default();
            // The first change, then whatever follows within DEBOUNCE.
            let deadline = loop {
                tokio::select! {
                    event = events.recv() => if dirty.event(event) { break tokio::time::Instant::now() + DEBOUNCE },
                    uri = published.recv() => if dirty.published(&engine, uri) { break tokio::time::Instant::now() + DEBOUNCE },
                }
            };
            loop {
                tokio::select! {
                    event = events.recv() => { dirty.event(event); }
                    uri = published.recv() => { dirty.published(&engine, uri); }
                    () = tokio::time::sleep_until(deadline) => break,
                }
            }
            if dirty.closed || peer.is_transport_closed() {
                return;
            }
            let concerned: Vec<(String, Target)> = self
                .lock()
                .subscribed
                .iter()
                .filter(|(_, (target, _))| dirty.concerns(target))
                .map(|(uri, (target, _))| (uri.clone(), target.clone()))
                .collect();
            for (uri, target) in concerned {
                let print = fingerprint(&target, &compute(&engine, &target).await);
                let changed = match self.lock().subscribed.get_mut(&uri) {
                    Some((_, last)) if *last != print => {
                        *last = print;
                        true
                    }
                    _ => false,
                };
                if changed && peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// What changed since a watcher last looked.
#[derive(Default)]
struct Dirty {
    editor: bool,
    all: bool,
    documents: HashSet<DocumentId>,
    /// An event channel closed: the Engine is going away.
    closed: bool,
}

impl Dirty {
    /// Takes an Engine event; returns whether anything is dirty now.
    fn event(&mut self, event: Result<EngineEvent, tokio::sync::broadcast::error::RecvError>) -> bool {
        use tokio::sync::broadcast::error::RecvError;
        match event {
            Ok(EngineEvent::EditorChanged) => self.editor = true,
            Ok(EngineEvent::Committed(ids)) => self.documents.extend(ids),
            Err(RecvError::Lagged(_)) => self.all = true,
            Err(RecvError::Closed) => self.closed = true,
        }
        true
    }

    /// Takes a published-diagnostics change; returns whether anything is dirty now.
    fn published(&mut self, engine: &Engine, uri: Result<url::Url, tokio::sync::broadcast::error::RecvError>) -> bool {
        use tokio::sync::broadcast::error::RecvError;
        match uri {
            Ok(uri) => {
                let Ok(id) = engine.workspace().document_id_for_uri(&uri) else { return false };
                // The editor's state counts the diagnostics of its open documents.
                self.editor |= engine.documents().is_open(&id);
                self.documents.insert(id);
            }
            Err(RecvError::Lagged(_)) => self.all = true,
            Err(RecvError::Closed) => self.closed = true,
        }
        true
    }

    fn concerns(&self, target: &Target) -> bool {
        self.all
            || match target {
                Target::Editor => self.editor,
                Target::Diagnostics { id, .. } => self.documents.contains(id),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_uris_name_files_under_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub dir")).unwrap();
        std::fs::write(dir.path().join("sub dir/a.go"), "package a\n").unwrap();
        let engine = Engine::new(crate::workspace::Workspace::open(dir.path()).unwrap());
        assert_eq!(target(&engine, EDITOR_URI).unwrap(), Target::Editor);
        for uri in ["filepuff://diagnostics/sub dir/a.go", "filepuff://diagnostics/sub%20dir%2Fa.go"] {
            match target(&engine, uri).unwrap() {
                Target::Diagnostics { relative, .. } => assert_eq!(relative, "sub dir/a.go", "{uri}"),
                other => panic!("{uri}: {other:?}"),
            }
        }
        for refused in ["filepuff://diagnostics/../../etc/passwd", "filepuff://other", "filepuff://diagnostics/%zz"] {
            assert!(target(&engine, refused).is_err(), "{refused}");
        }
        assert_eq!(percent_decode("a%2Fb%C3%A9"), Some("a/bé".to_owned()));
        assert_eq!(percent_decode("%ff"), None);
    }
}
