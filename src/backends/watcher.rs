//! Disk changes to the servers: a notify watcher per started client on its project root
//! ([`Backends::watch`], forwarded as `workspace/didChangeWatchedFiles`, LSP 3.17 §
//! "DidChangeWatchedFiles Notification"), and filepuff's own writes ([`Backends::file_changed`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{Backends, LspClient, ServerSpec};
use crate::documents::Language;

impl Backends {
    /// Starts watching `client`'s project root for changes on disk to the files its server
    /// registered `workspace/didChangeWatchedFiles` for (with their `kind`s), or — while it
    /// registered none — to files of its languages ([`LspClient::file_event_filter`]),
    /// forwarded in batches (50 ms) to [`LspClient::disk_changed`]. Without a watcher (no
    /// inotify watches left) the server still learns of filepuff's own edits.
    pub(super) fn watch(&self, client: &Arc<LspClient>, spec: &ServerSpec) {
        use notify::Watcher;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(PathBuf, lsp_types::FileChangeType)>();
        use lsp_types::FileChangeType;
        use notify::event::{EventKind, ModifyKind, RenameMode};
        let wanted = client.file_event_filter(spec.languages.clone());
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // A rename is the old path deleted and the new one created (editors save so).
            let changes: Vec<(PathBuf, FileChangeType)> = match event.kind {
                EventKind::Create(_) => event.paths.into_iter().map(|p| (p, FileChangeType::CREATED)).collect(),
                EventKind::Remove(_) => event.paths.into_iter().map(|p| (p, FileChangeType::DELETED)).collect(),
                EventKind::Modify(ModifyKind::Name(RenameMode::From)) => {
                    event.paths.into_iter().map(|p| (p, FileChangeType::DELETED)).collect()
                }
                EventKind::Modify(ModifyKind::Name(RenameMode::To)) => {
                    event.paths.into_iter().map(|p| (p, FileChangeType::CREATED)).collect()
                }
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
                    let mut paths = event.paths.into_iter();
                    let from = paths.next().map(|p| (p, FileChangeType::DELETED));
                    let to = paths.next().map(|p| (p, FileChangeType::CREATED));
                    from.into_iter().chain(to).collect()
                }
                EventKind::Modify(_) => event.paths.into_iter().map(|p| (p, FileChangeType::CHANGED)).collect(),
                _ => return,
            };
            for (path, typ) in changes {
                let ignored = path.components().any(|c| c.as_os_str() == ".git");
                if !ignored && wanted(&path, typ) {
                    let _ = tx.send((path, typ));
                }
            }
        };
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(watcher) => watcher,
            Err(err) => {
                tracing::warn!(server = %client.name, "cannot watch {}: {err}", client.root.display());
                return;
            }
        };
        if let Err(err) = watcher.watch(&client.root, notify::RecursiveMode::Recursive) {
            tracing::warn!(server = %client.name, "cannot watch {}: {err}", client.root.display());
            return;
        }
        client.set_watcher(watcher);
        let weak = Arc::downgrade(client);
        self.runtime().spawn(async move {
            while let Some(first) = rx.recv().await {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let Some(client) = weak.upgrade() else { return };
                let mut changes: Vec<(lsp_types::Url, lsp_types::FileChangeType)> = Vec::new();
                for (path, typ) in batch {
                    if let Ok(uri) = lsp_types::Url::from_file_path(&path) {
                        // One event per file a batch: deleted then created (a save by rename)
                        // is a change; created then changed stays created.
                        let typ = match changes.iter().position(|(u, _)| *u == uri) {
                            Some(at) => match (changes.remove(at).1, typ) {
                                (FileChangeType::DELETED, FileChangeType::CREATED) => FileChangeType::CHANGED,
                                (FileChangeType::CREATED, FileChangeType::CHANGED) => FileChangeType::CREATED,
                                (_, typ) => typ,
                            },
                            None => typ,
                        };
                        changes.push((uri, typ));
                    }
                }
                if let Err(err) = client.disk_changed(changes).await {
                    tracing::debug!("{err}");
                }
            }
        });
    }

    /// Tells every running server of `language` that `path` now holds `text` (after an edit
    /// wrote it). Servers that are not running learn it when they start. Errors are logged: a
    /// server that died is restarted, and re-synced, by its next request.
    pub fn file_changed(&self, path: &Path, language: Language, text: &ropey::Rope) {
        let clients = self.running_for(language);
        if clients.is_empty() {
            return;
        }
        let Ok(uri) = lsp_types::Url::from_file_path(path) else { return };
        let text = text.clone();
        self.run(async move {
            for client in clients {
                if let Err(err) = client.file_changed(&uri, language.lsp_id(), &text).await {
                    tracing::warn!("{err}");
                }
            }
        });
    }
}
