//! The editor's spelling of URIs.
//!
//! Behind the LSP face every document is its [`DocumentId`] and language servers see only its
//! canonical URI ([`DocumentId::uri`]): one document per file, whatever the editor called it.
//! The editor, though, must get back the URIs it used — a workspace opened through a symlink
//! (`/home` → `/data/home`, macOS `/tmp` → `/private/tmp`, a monorepo checkout link) has every
//! document spelt through the link, and an answer naming the real path would open a second
//! buffer of the same file. So this face keeps, per session:
//! - the spelling each open document was opened with (`didOpen`'s URI);
//! - the editor's root spelling next to the canonical root, for files it has not opened
//!   (a definition in another file, a diagnostic of a closed file);
//! - a bounded cache of resolved editor URIs (resolution itself is the workspace's).
//!
//! Every `file:` URI in editor→server traffic goes through [`Spellings::to_servers`], every one
//! in server→editor traffic through [`Spellings::to_editor`]: string values and object keys
//! (`WorkspaceEdit.changes` is keyed by URI), at any depth.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

use lsp_types::Url;
use serde_json::Value;

use crate::workspace::{DocumentId, Workspace, WorkspaceError};

/// Resolved editor URIs kept (the cache is emptied when it grows past this).
const CACHE: usize = 16_384;

/// Why an editor URI names no document.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResolveError {
    /// The string does not parse as a URI (RFC 3986, as the `url` crate reads it).
    #[error("invalid document URI {0:?}")]
    NotAUri(String),
    /// A URI the workspace cannot resolve to a file path ([`Workspace::document_id_for_uri`]).
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

/// The editor's spellings (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Spellings {
    /// `(canonical root URI, editor's root URI)`, both ending in `/`, when they differ.
    root_alias: Option<(String, String)>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Editor URI (as sent) → document and its canonical URI.
    resolved: HashMap<String, (DocumentId, Arc<str>)>,
    /// Canonical URI of an open document → the URIs the editor opened it with, latest last (an
    /// editor may open one file under two spellings; the document stays open until both close).
    opened: HashMap<String, Vec<Url>>,
    /// How many of those spellings differ from their document's canonical URI.
    respelt: usize,
}

impl Spellings {
    /// Spellings for a session whose editor named its root `editor_root` (the first workspace
    /// folder or `rootUri`), `canonical_root` being the workspace's root.
    pub(crate) fn new(editor_root: Option<&Url>, canonical_root: &std::path::Path) -> Spellings {
        let as_dir = |uri: &str| if uri.ends_with('/') { uri.to_owned() } else { format!("{uri}/") };
        let canonical = Url::from_directory_path(canonical_root).ok().map(|u| as_dir(u.as_str()));
        let root_alias = match (canonical, editor_root) {
            (Some(canonical), Some(editor)) if as_dir(editor.as_str()) != canonical => {
                Some((canonical, as_dir(editor.as_str())))
            }
            _ => None,
        };
        Spellings { root_alias, state: Mutex::new(State::default()) }
    }

    fn state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// The document an editor URI names and its canonical URI ([`DocumentId::uri`]), resolved
    /// by the workspace and cached under the URI as the editor sent it, so a request about a
    /// known document parses no URI and touches no file.
    ///
    /// Errors: `uri` is not a URI, or as [`Workspace::document_id_for_uri`].
    pub(crate) fn resolve(&self, workspace: &Workspace, uri: &str) -> Result<(DocumentId, Arc<str>), ResolveError> {
        if let Some((id, canonical)) = self.state().resolved.get(uri) {
            return Ok((id.clone(), canonical.clone()));
        }
        let parsed = Url::parse(uri).map_err(|_| ResolveError::NotAUri(uri.to_owned()))?;
        let id = workspace.document_id_for_uri(&parsed)?;
        let canonical: Arc<str> = Arc::from(id.uri().as_str());
        let mut state = self.state();
        if state.resolved.len() >= CACHE {
            state.resolved.clear();
        }
        state.resolved.insert(uri.to_owned(), (id.clone(), canonical.clone()));
        Ok((id, canonical))
    }

    /// The document an editor URI names ([`Spellings::resolve`]).
    pub(crate) fn id(&self, workspace: &Workspace, uri: &Url) -> Result<DocumentId, ResolveError> {
        self.resolve(workspace, uri.as_str()).map(|(id, _)| id)
    }

    /// The editor opened `id` as `uri`: answers about it use that spelling until it is closed.
    pub(crate) fn opened(&self, id: &DocumentId, uri: &Url) {
        let canonical = id.uri();
        let mut state = self.state();
        let spellings = state.opened.entry(canonical.as_str().to_owned()).or_default();
        if spellings.contains(uri) {
            // Opened again under the same spelling (a reload): still one spelling.
            spellings.retain(|known| known != uri);
            spellings.push(uri.clone());
            return;
        }
        spellings.push(uri.clone());
        if *uri != canonical {
            state.respelt += 1;
        }
    }

    /// The editor closed `id`'s spelling `uri`. Returns whether the document is closed now (no
    /// other spelling of it is open in the editor).
    pub(crate) fn closed(&self, id: &DocumentId, uri: &Url) -> bool {
        let canonical = id.uri();
        let mut state = self.state();
        let Some(spellings) = state.opened.get_mut(canonical.as_str()) else { return true };
        let before = spellings.len();
        spellings.retain(|known| known != uri);
        let removed = before != spellings.len();
        let last = spellings.is_empty();
        if last {
            state.opened.remove(canonical.as_str());
        }
        if removed && *uri != canonical {
            state.respelt -= 1;
        }
        last
    }

    /// The URI the editor knows `id` by: the one it opened it with, else the canonical URI
    /// spelt under the editor's root, else the canonical URI.
    pub(crate) fn editor_uri(&self, id: &DocumentId) -> Url {
        let canonical = id.uri();
        if let Some(uri) = self.state().opened.get(canonical.as_str()).and_then(|spellings| spellings.last()) {
            return uri.clone();
        }
        match self.respell_root(canonical.as_str()) {
            Some(spelt) => Url::parse(&spelt).unwrap_or(canonical),
            None => canonical,
        }
    }

    /// Whether server→editor traffic can pass as it is (the editor spells everything
    /// canonically).
    pub(crate) fn is_identity(&self) -> bool {
        self.root_alias.is_none() && self.state().respelt == 0
    }

    fn respell_root(&self, canonical: &str) -> Option<String> {
        let (real, alias) = self.root_alias.as_ref()?;
        canonical.strip_prefix(real.as_str()).map(|rest| format!("{alias}{rest}"))
    }

    /// Rewrites every `file:` URI in editor→server `value` to its canonical spelling. URIs the
    /// workspace cannot resolve pass unchanged (the server will say what it makes of them).
    pub(crate) fn to_servers(&self, workspace: &Workspace, value: &mut Value) {
        walk(value, &mut |uri| {
            let (_, canonical) = self.resolve(workspace, uri).ok()?;
            (&*canonical != uri).then(|| canonical.to_string())
        });
    }

    /// Rewrites every `file:` URI in server→editor `value` to the editor's spelling.
    pub(crate) fn to_editor(&self, value: &mut Value) {
        if self.is_identity() {
            return;
        }
        walk(value, &mut |uri| {
            if let Some(spelt) = self.state().opened.get(uri).and_then(|spellings| spellings.last().cloned()) {
                return (spelt.as_str() != uri).then(|| spelt.to_string());
            }
            self.respell_root(uri)
        });
    }
}

/// Calls `map` on every string value and object key that is a `file:` URI, replacing it with
/// what `map` returns.
fn walk(value: &mut Value, map: &mut impl FnMut(&str) -> Option<String>) {
    match value {
        Value::String(text) if text.starts_with("file:") => {
            if let Some(new) = map(text) {
                *text = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| walk(item, map)),
        Value::Object(object) => {
            if object.keys().any(|k| k.starts_with("file:")) {
                let entries: Vec<(String, Value)> = std::mem::take(object).into_iter().collect();
                for (key, mut child) in entries {
                    walk(&mut child, map);
                    let key = if key.starts_with("file:") { map(&key).unwrap_or(key) } else { key };
                    object.insert(key, child);
                }
            } else {
                object.values_mut().for_each(|child| walk(child, map));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolved_uri_is_cached_with_its_canonical_spelling_and_junk_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("real")).unwrap();
        std::fs::write(base.join("real/a.c"), "int a;\n").unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        let workspace = Workspace::with_config(&base, Default::default()).unwrap();
        let spellings = Spellings::new(None, workspace.root());
        let link = Url::from_file_path(base.join("link/a.c")).unwrap();
        let real = Url::from_file_path(base.join("real/a.c")).unwrap();

        let (id, canonical) = spellings.resolve(&workspace, link.as_str()).unwrap();
        assert_eq!(&*canonical, real.as_str());
        assert_eq!(id.uri(), real);
        // The second ask is answered from the cache: the link may be gone, the answer stays.
        std::fs::remove_file(base.join("link")).unwrap();
        let (again, canonical) = spellings.resolve(&workspace, link.as_str()).unwrap();
        assert_eq!((again, &*canonical), (id, real.as_str()));

        let err = spellings.resolve(&workspace, "not a uri").unwrap_err();
        assert!(matches!(err, ResolveError::NotAUri(_)), "{err:?}");
        assert_eq!(err.to_string(), "invalid document URI \"not a uri\"");
        let mut params = serde_json::json!({ "textDocument": { "uri": "file://[/a.c" } });
        spellings.to_servers(&workspace, &mut params);
        assert_eq!(params["textDocument"]["uri"], "file://[/a.c", "unparsable URIs pass unchanged");
    }

    #[test]
    fn uris_are_canonical_toward_servers_and_the_editors_own_back() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let real = base.join("real");
        std::fs::create_dir_all(real.join("pkg")).unwrap();
        std::fs::write(real.join("pkg/a.go"), "package pkg\n").unwrap();
        std::fs::write(real.join("pkg/b.go"), "package pkg\n").unwrap();
        std::os::unix::fs::symlink(&real, base.join("link")).unwrap();
        let workspace = Workspace::with_config(&base.join("link"), Default::default()).unwrap();
        let editor_root = Url::from_directory_path(base.join("link")).unwrap();
        let spellings = Spellings::new(Some(&editor_root), workspace.root());
        let link_a = Url::from_file_path(base.join("link/pkg/a.go")).unwrap();
        let real_a = Url::from_file_path(real.join("pkg/a.go")).unwrap();
        let real_b = Url::from_file_path(real.join("pkg/b.go")).unwrap();
        let link_b = Url::from_file_path(base.join("link/pkg/b.go")).unwrap();

        let id = spellings.id(&workspace, &link_a).unwrap();
        assert_eq!(id.uri(), real_a);
        spellings.opened(&id, &link_a);
        let mut params =
            serde_json::json!({ "textDocument": { "uri": link_a }, "position": { "line": 0, "character": 1 } });
        spellings.to_servers(&workspace, &mut params);
        assert_eq!(params["textDocument"]["uri"], real_a.as_str());

        let mut answer = serde_json::json!({
            "changes": { real_a.as_str(): [], real_b.as_str(): [] },
            "items": [ { "uri": real_b }, { "targetUri": real_a }, { "uri": "file:///usr/include/stdio.h" } ],
        });
        spellings.to_editor(&mut answer);
        assert!(answer["changes"].get(link_a.as_str()).is_some() && answer["changes"].get(link_b.as_str()).is_some());
        assert_eq!(answer["items"][0]["uri"], link_b.as_str());
        assert_eq!(answer["items"][1]["targetUri"], link_a.as_str());
        assert_eq!(answer["items"][2]["uri"], "file:///usr/include/stdio.h");
        assert_eq!(spellings.editor_uri(&id), link_a);

        // Without a root alias, an editor opening a file through a symlinked directory still
        // gets its own spelling back, and the fast path returns once it is closed.
        let plain = Spellings::new(Some(&Url::from_directory_path(&real).unwrap()), workspace.root());
        assert!(plain.is_identity());
        plain.opened(&id, &link_a);
        assert!(!plain.is_identity());
        let mut diagnostics = serde_json::json!({ "uri": real_a, "diagnostics": [] });
        plain.to_editor(&mut diagnostics);
        assert_eq!(diagnostics["uri"], link_a.as_str());
        // The same file open under both spellings stays open until both close.
        plain.opened(&id, &real_a);
        assert_eq!(plain.editor_uri(&id), real_a);
        assert!(!plain.closed(&id, &link_a));
        assert!(plain.is_identity());
        assert!(plain.closed(&id, &real_a));
    }
}
