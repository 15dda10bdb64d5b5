//! Disk changes to the servers: a notify watcher per started client on its project root
//! ([`Backends::watch`], forwarded as `workspace/didChangeWatchedFiles`, LSP 3.17 §
//! "DidChangeWatchedFiles Notification"), and filepuff's own writes ([`Backends::file_changed`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{Backends, LspClient, ServerSpec};
use crate::documents::Language;

/// What the notify thread hands the batching task: a file's change, or a directory that
/// appeared (created or moved in) and must be watched too.
enum Seen {
    File(PathBuf, lsp_types::FileChangeType),
    Directory(PathBuf),
}

impl Backends {
    /// Starts watching `client`'s project root for changes on disk to the files its server
    /// registered `workspace/didChangeWatchedFiles` for (with their `kind`s), or — while it
    /// registered none — to files of its languages ([`LspClient::file_event_filter`]),
    /// forwarded in batches (50 ms) to [`LspClient::disk_changed`]. Without a watcher (no
    /// inotify watches left) the server still learns of filepuff's own edits.
    ///
    /// Each directory is watched on its own ([`watch_tree`], on the blocking pool: a tree of
    /// 30,000 directories takes about half a second, which the editor proxy's one thread must
    /// not spend), leaving out what VS Code's default `files.watcherExclude` leaves out: `.git`
    /// and the inside of installed packages (`node_modules/*`). A directory that appears later
    /// is watched when its creation is seen, and the files already in it are reported created.
    pub(super) fn watch(&self, client: &Arc<LspClient>, spec: &ServerSpec) {
        use lsp_types::FileChangeType;
        use notify::event::{CreateKind, EventKind, ModifyKind, RenameMode};
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Seen>();
        let wanted = Arc::new(client.file_event_filter(spec.languages.clone()));
        let wanted_here = wanted.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // A rename is the old path deleted and the new one created (editors save so).
            let changes: Vec<(PathBuf, FileChangeType)> = match event.kind {
                EventKind::Create(kind) => {
                    for path in &event.paths {
                        if kind == CreateKind::Folder || (kind != CreateKind::File && path.is_dir()) {
                            let _ = tx.send(Seen::Directory(path.clone()));
                        }
                    }
                    event.paths.into_iter().map(|p| (p, FileChangeType::CREATED)).collect()
                }
                EventKind::Remove(_) => event.paths.into_iter().map(|p| (p, FileChangeType::DELETED)).collect(),
                EventKind::Modify(ModifyKind::Name(RenameMode::From)) => {
                    event.paths.into_iter().map(|p| (p, FileChangeType::DELETED)).collect()
                }
                EventKind::Modify(ModifyKind::Name(mode @ (RenameMode::To | RenameMode::Both))) => {
                    let mut paths = event.paths.into_iter();
                    let from = if mode == RenameMode::Both { paths.next() } else { None };
                    let to = paths.next();
                    if let Some(to) = to.as_ref().filter(|to| to.is_dir()) {
                        let _ = tx.send(Seen::Directory(to.clone()));
                    }
                    let from = from.map(|p| (p, FileChangeType::DELETED));
                    from.into_iter().chain(to.map(|p| (p, FileChangeType::CREATED))).collect()
                }
                EventKind::Modify(_) => event.paths.into_iter().map(|p| (p, FileChangeType::CHANGED)).collect(),
                _ => return,
            };
            for (path, typ) in changes {
                let ignored = path.components().any(|c| c.as_os_str() == ".git");
                if !ignored && wanted_here(&path, typ) {
                    let _ = tx.send(Seen::File(path, typ));
                }
            }
        };
        let watcher = match crate::workspace::change_watcher(handler) {
            Ok(watcher) => Arc::new(parking_lot::Mutex::new(watcher)),
            Err(err) => {
                tracing::warn!(server = %client.name, "cannot watch {}: {err}", client.root.display());
                return;
            }
        };
        // The root at once (a change there right after the start is seen); below it, on the
        // blocking pool.
        if let Err(err) =
            notify::Watcher::watch(&mut *watcher.lock(), &client.root, notify::RecursiveMode::NonRecursive)
        {
            tracing::warn!(server = %client.name, "cannot watch {}: {err}", client.root.display());
            return;
        }
        client.set_watcher(watcher.clone());
        let weak = Arc::downgrade(client);
        let watcher = Arc::downgrade(&watcher);
        let (root, server) = (client.root.clone(), client.name.clone());
        self.runtime().spawn(async move {
            let tree = {
                let watcher = watcher.clone();
                tokio::task::spawn_blocking(move || watch_tree(&watcher, &root, &server, None))
            };
            if tree.await.is_err() {
                return;
            }
            while let Some(first) = rx.recv().await {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let Some(client) = weak.upgrade() else { return };
                let mut files = Vec::new();
                let mut appeared = Vec::new();
                for seen in batch {
                    match seen {
                        Seen::File(path, typ) => files.push((path, typ)),
                        // One that appeared inside a package or `.git` stays unwatched.
                        Seen::Directory(path) if !left_out(&client.root, &path) => appeared.push(path),
                        Seen::Directory(_) => {}
                    }
                }
                if !appeared.is_empty() {
                    // Watched now; what was written into them before that is reported created.
                    let (watcher, server) = (watcher.clone(), client.name.clone());
                    let found = tokio::task::spawn_blocking(move || {
                        let mut found = Vec::new();
                        for dir in appeared {
                            watch_tree(&watcher, &dir, &server, Some(&mut found));
                        }
                        found
                    })
                    .await
                    .unwrap_or_default();
                    files.extend(
                        found
                            .into_iter()
                            .filter(|path| wanted(path, FileChangeType::CREATED))
                            .map(|path| (path, FileChangeType::CREATED)),
                    );
                }
                let mut changes: Vec<(lsp_types::Url, lsp_types::FileChangeType)> = Vec::new();
                for (path, typ) in files {
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
                if changes.is_empty() {
                    continue;
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

/// Watches `dir` and the directories below it, each on its own (not following symlinks),
/// leaving out `.git` and what is inside `node_modules` (its packages' trees; the directory
/// itself is watched, so a package added or removed is seen) — VS Code's default
/// `files.watcherExclude`. Not the search walk ([`crate::search`]): servers must hear of files
/// the search ignores, such as a build directory's `compile_commands.json`. With `found`, the
/// files met are pushed there. Stops at the first watch the kernel refuses (out of inotify
/// watches), logged; a watcher already dropped (its client gone) stops it too.
fn watch_tree(
    watcher: &std::sync::Weak<parking_lot::Mutex<notify::RecommendedWatcher>>,
    dir: &Path,
    server: &str,
    mut found: Option<&mut Vec<PathBuf>>,
) {
    use notify::Watcher;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Some(watcher) = watcher.upgrade() else { return };
        if let Err(err) = watcher.lock().watch(&dir, notify::RecursiveMode::NonRecursive) {
            if matches!(&err.kind, notify::ErrorKind::PathNotFound)
                || matches!(&err.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
            {
                continue;
            }
            tracing::warn!(%server, "cannot watch {}: {err}; changes below it are not seen", dir.display());
            return;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let packages = dir.file_name().is_some_and(|name| name == "node_modules");
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if !packages && entry.file_name() != ".git" {
                    stack.push(entry.path());
                }
            } else if let Some(found) = found.as_deref_mut() {
                found.push(entry.path());
            }
        }
    }
}

/// Whether `dir` (below `root`) is inside what [`watch_tree`] leaves out: `.git`, or a package
/// under `node_modules`.
fn left_out(root: &Path, dir: &Path) -> bool {
    let Ok(below) = dir.strip_prefix(root) else { return true };
    let names: Vec<&std::ffi::OsStr> = below.iter().collect();
    names.iter().any(|name| *name == ".git")
        || names.split_last().is_some_and(|(_, above)| above.iter().any(|name| *name == "node_modules"))
}
