//! The file index: every file and directory the workspace walk sees, with metadata (kind, size,
//! mtime, language, MIME type, files inside a directory) and a term index for ranked path/name
//! search ([`rank`]).
//!
//! Built with the parallel walker on first use; kept fresh by a file watcher (notify, one
//! non-recursive watch per indexed directory, so ignored trees such as `target/` cost nothing).
//! Events only mark directories dirty; a query first rescans the dirty directories one level
//! deep (the walker applies the ignore rules of every parent) and updates directory counts and
//! the term index in place for what changed. Without a watcher (`[index] watch = false`, or it failed), the index is
//! rebuilt at query time when older than [`STALE_AFTER`].

pub mod meta;
pub mod rank;

use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use ignore::WalkState;
use notify::{RecursiveMode, Watcher};

use crate::search::{SearchError, WalkOptions, walk_with};
use crate::workspace::Workspace;

/// How old an index without a watcher may be before a query rebuilds it.
pub const STALE_AFTER: Duration = Duration::from_secs(5);

/// File or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
}

/// One indexed path's metadata.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    pub kind: EntryKind,
    /// Bytes: the file's size, or the sum of the files' sizes under a directory.
    pub size: u64,
    pub modified: Option<SystemTime>,
    /// Files under a directory, at any depth (0 for files).
    pub file_count: u64,
}

/// The index's contents at one moment.
#[derive(Debug, Default)]
struct State {
    /// By root-relative path (`/`-separated; the root itself is not an entry).
    entries: BTreeMap<String, IndexEntry>,
    /// The documents of `terms` by id (an empty string for a removed one).
    files: Vec<String>,
    /// Document id of each indexed file.
    doc_of: std::collections::HashMap<String, u32>,
    terms: rank::TermIndex,
    built: Option<Instant>,
}

/// The file index of one workspace.
pub struct FileIndex {
    root: PathBuf,
    state: RwLock<State>,
    /// Directories (absolute) whose children changed since the last refresh.
    dirty: Arc<Mutex<HashSet<PathBuf>>>,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// Why there is no watcher, when there is none.
    watch_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for FileIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileIndex").field("root", &self.root).finish_non_exhaustive()
    }
}

/// A ranked search hit.
#[derive(Debug, Clone)]
pub struct ScoredPath {
    pub path: String,
    pub entry: IndexEntry,
    /// 0–1, see [`rank`].
    pub score: f64,
}

impl FileIndex {
    /// Walks the workspace and, when `[index] watch` is on, starts watching it.
    ///
    /// Errors: the walk's [`SearchError`] (an invalid `[walk] exclude` glob).
    pub fn build(workspace: &Workspace) -> Result<FileIndex, SearchError> {
        let index = FileIndex {
            root: workspace.root().to_path_buf(),
            state: RwLock::new(State::default()),
            dirty: Arc::new(Mutex::new(HashSet::new())),
            watcher: Mutex::new(None),
            watch_error: Mutex::new(None),
        };
        if workspace.config().index.watch {
            index.start_watcher();
        } else {
            *index.watch_error.lock() = Some("[index] watch = false".to_owned());
        }
        let entries = walk(workspace, &index.root, None)?;
        index.watch_dirs(entries.iter().filter(|(_, e)| e.kind == EntryKind::Directory).map(|(p, _)| p.as_str()));
        let mut state = State { entries, ..Default::default() };
        derive(&mut state);
        *index.state.write() = state;
        Ok(index)
    }

    fn start_watcher(&self) {
        let dirty = self.dirty.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            let mut dirty = dirty.lock();
            for path in event.paths {
                if let Some(parent) = path.parent() {
                    dirty.insert(parent.to_path_buf());
                }
                dirty.insert(path);
            }
        };
        match crate::workspace::change_watcher(handler) {
            Ok(mut watcher) => match watcher.watch(&self.root, RecursiveMode::NonRecursive) {
                Ok(()) => *self.watcher.lock() = Some(watcher),
                Err(err) => *self.watch_error.lock() = Some(err.to_string()),
            },
            Err(err) => *self.watch_error.lock() = Some(err.to_string()),
        }
    }

    fn watch_dirs<'a>(&self, dirs: impl Iterator<Item = &'a str>) {
        let mut guard = self.watcher.lock();
        let Some(watcher) = guard.as_mut() else { return };
        for dir in dirs {
            if let Err(err) = watcher.watch(&self.root.join(dir), RecursiveMode::NonRecursive) {
                // Out of inotify watches, most likely: fall back to rebuilding when stale.
                tracing::warn!("file index: cannot watch {dir}: {err}; falling back to periodic rebuilds");
                *guard = None;
                *self.watch_error.lock() = Some(err.to_string());
                return;
            }
        }
    }

    /// Whether a watcher keeps the index fresh (else: why not).
    pub fn watching(&self) -> Result<(), String> {
        match &*self.watch_error.lock() {
            None => Ok(()),
            Some(reason) => Err(reason.clone()),
        }
    }

    /// Applies pending changes: rescans dirty directories, or rebuilds a stale unwatched index.
    pub fn refresh(&self, workspace: &Workspace) {
        let watching = self.watcher.lock().is_some();
        if !watching {
            let stale = self.state.read().built.is_none_or(|t| t.elapsed() > STALE_AFTER);
            if stale && let Ok(entries) = walk(workspace, &self.root, None) {
                let mut state = State { entries, ..Default::default() };
                derive(&mut state);
                *self.state.write() = state;
            }
            return;
        }
        let dirty: Vec<PathBuf> = std::mem::take(&mut *self.dirty.lock()).into_iter().collect();
        if dirty.is_empty() {
            return;
        }
        let mut state = self.state.write();
        let mut new_dirs = Vec::new();
        let mut changes = Changes::default();
        let mut dirs: Vec<String> = dirty
            .iter()
            .filter_map(|p| relative(&self.root, p))
            .filter(|rel| rel.is_empty() || state.entries.get(rel).is_some_and(|e| e.kind == EntryKind::Directory))
            .collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let absolute = if dir.is_empty() { self.root.clone() } else { self.root.join(&dir) };
            if !absolute.is_dir() {
                changes.removed.extend(remove_subtree(&mut state.entries, &dir));
                continue;
            }
            let Ok(children) = walk(workspace, &absolute, Some(1)) else { continue };
            let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
            let old: Vec<String> = state
                .entries
                .range(prefix.clone()..)
                .take_while(|(p, _)| p.starts_with(&prefix))
                .filter(|(p, _)| !p[prefix.len()..].contains('/'))
                .map(|(p, _)| p.clone())
                .collect();
            for gone in old.iter().filter(|p| !children.contains_key(*p)) {
                changes.removed.extend(remove_subtree(&mut state.entries, gone));
            }
            for (path, entry) in children {
                match state.entries.get_mut(&path) {
                    Some(existing) if existing.kind == entry.kind => {
                        existing.modified = entry.modified;
                        if entry.kind == EntryKind::File && existing.size != entry.size {
                            changes.resized.push((path.clone(), existing.size, entry.size));
                            existing.size = entry.size;
                        }
                    }
                    existing => {
                        if existing.is_some() {
                            changes.removed.extend(remove_subtree(&mut state.entries, &path));
                        }
                        let is_dir = entry.kind == EntryKind::Directory;
                        state.entries.insert(path.clone(), entry.clone());
                        changes.added.push((path.clone(), entry));
                        if is_dir {
                            if let Ok(below) = walk(workspace, &self.root.join(&path), None) {
                                for (below_path, below_entry) in below {
                                    if below_entry.kind == EntryKind::Directory {
                                        new_dirs.push(below_path.clone());
                                    }
                                    state.entries.insert(below_path.clone(), below_entry.clone());
                                    changes.added.push((below_path, below_entry));
                                }
                            }
                            new_dirs.push(path);
                        }
                    }
                }
            }
        }
        apply(&mut state, changes);
        drop(state);
        self.watch_dirs(new_dirs.iter().map(String::as_str));
    }

    /// The entry at `path` (root-relative), if indexed.
    pub fn get(&self, path: &str) -> Option<IndexEntry> {
        self.state.read().entries.get(path).cloned()
    }

    /// Totals for the root: (files, directories, bytes in files).
    pub fn totals(&self) -> (u64, u64, u64) {
        let state = self.state.read();
        let files = state.doc_of.len() as u64;
        let dirs = state.entries.len() as u64 - files;
        let bytes = state.entries.values().filter(|e| e.kind == EntryKind::File).map(|e| e.size).sum();
        (files, dirs, bytes)
    }

    /// Visits entries under `directory` ("" = everything) in path order; `visit` returns false to stop.
    pub fn for_each_under(&self, directory: &str, mut visit: impl FnMut(&str, &IndexEntry) -> bool) {
        let state = self.state.read();
        let prefix = if directory.is_empty() { String::new() } else { format!("{directory}/") };
        for (path, entry) in state.entries.range(prefix.clone()..) {
            if !path.starts_with(&prefix) || !visit(path, entry) {
                break;
            }
        }
    }

    /// Ranked files for `query`, best first (ties: shorter path, then path order); `None` when the
    /// query has no searchable term.
    pub fn search(&self, query: &str) -> Option<Vec<ScoredPath>> {
        let state = self.state.read();
        let scored = state.terms.search(query)?;
        let mut hits: Vec<ScoredPath> = scored
            .into_iter()
            .filter_map(|(doc, score)| {
                let path = state.files.get(doc as usize).filter(|p| !p.is_empty())?;
                let entry = state.entries.get(path)?.clone();
                Some(ScoredPath { path: path.clone(), entry, score })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score.total_cmp(&a.score).then(a.path.len().cmp(&b.path.len())).then_with(|| a.path.cmp(&b.path))
        });
        Some(hits)
    }
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    Some(rest.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"))
}

/// Removes `path` and everything under it; returns what was removed.
fn remove_subtree(entries: &mut BTreeMap<String, IndexEntry>, path: &str) -> Vec<(String, IndexEntry)> {
    let mut removed = Vec::new();
    if let Some(entry) = entries.remove(path) {
        removed.push((path.to_owned(), entry));
    }
    let prefix = format!("{path}/");
    let below: Vec<String> =
        entries.range(prefix.clone()..).take_while(|(p, _)| p.starts_with(&prefix)).map(|(p, _)| p.clone()).collect();
    for p in below {
        if let Some(entry) = entries.remove(&p) {
            removed.push((p, entry));
        }
    }
    removed
}

/// What a refresh changed, to update counts and terms in place.
#[derive(Default)]
struct Changes {
    removed: Vec<(String, IndexEntry)>,
    added: Vec<(String, IndexEntry)>,
    /// Files whose size changed: (path, old, new).
    resized: Vec<(String, u64, u64)>,
}

/// Adds `files` and `bytes` (signed) to every ancestor directory of `path`.
fn adjust_ancestors(entries: &mut BTreeMap<String, IndexEntry>, path: &str, files: i64, bytes: i64) {
    let mut rest = path;
    while let Some((parent, _)) = rest.rsplit_once('/') {
        if let Some(dir) = entries.get_mut(parent) {
            dir.file_count = dir.file_count.saturating_add_signed(files);
            dir.size = dir.size.saturating_add_signed(bytes);
        }
        rest = parent;
    }
}

/// Applies a refresh's changes to directory counts, the file list and the term index, in place
/// (a full [`derive`] costs hundreds of milliseconds at 100k files; this costs per change).
fn apply(state: &mut State, changes: Changes) {
    for (path, entry) in &changes.removed {
        if entry.kind == EntryKind::File {
            adjust_ancestors(&mut state.entries, path, -1, -(entry.size as i64));
            if let Some(doc) = state.doc_of.remove(path) {
                state.terms.remove(doc);
                if let Some(slot) = state.files.get_mut(doc as usize) {
                    slot.clear();
                }
            }
        }
    }
    for (path, old, new) in &changes.resized {
        adjust_ancestors(&mut state.entries, path, 0, *new as i64 - *old as i64);
    }
    for (path, entry) in &changes.added {
        if entry.kind == EntryKind::File {
            adjust_ancestors(&mut state.entries, path, 1, entry.size as i64);
            let doc = state.terms.add(path);
            state.doc_of.insert(path.clone(), doc);
            state.files.push(path.clone());
        }
    }
}

/// Walks `dir` (to `max_depth`), returning root-relative entries without derived counts.
fn walk(
    workspace: &Workspace,
    dir: &Path,
    max_depth: Option<usize>,
) -> Result<BTreeMap<String, IndexEntry>, SearchError> {
    let options = WalkOptions { max_depth, ..Default::default() };
    let walker = walk_with(workspace, &[dir.to_path_buf()], None, &options)?;
    let found = Mutex::new(Vec::new());
    let root = workspace.root();
    walker.build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            let Ok(entry) = entry else { return WalkState::Continue };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Some(file_type) = entry.file_type() else { return WalkState::Continue };
            if file_type.is_symlink() {
                return WalkState::Continue;
            }
            let Some(path) = relative(root, entry.path()) else { return WalkState::Continue };
            let meta = entry.metadata().ok();
            let kind = if file_type.is_dir() { EntryKind::Directory } else { EntryKind::File };
            let size = if kind == EntryKind::File { meta.as_ref().map_or(0, |m| m.len()) } else { 0 };
            let entry = IndexEntry { kind, size, modified: meta.and_then(|m| m.modified().ok()), file_count: 0 };
            found.lock().push((path, entry));
            WalkState::Continue
        })
    });
    Ok(found.into_inner().into_iter().collect())
}

/// Directory counts and sizes, the file list and the term index, from `entries`.
fn derive(state: &mut State) {
    for entry in state.entries.values_mut() {
        if entry.kind == EntryKind::Directory {
            entry.file_count = 0;
            entry.size = 0;
        }
    }
    let files: Vec<(String, u64)> =
        state.entries.iter().filter(|(_, e)| e.kind == EntryKind::File).map(|(p, e)| (p.clone(), e.size)).collect();
    for (path, size) in &files {
        let mut rest = path.as_str();
        while let Some((parent, _)) = rest.rsplit_once('/') {
            if let Some(dir) = state.entries.get_mut(parent) {
                dir.file_count += 1;
                dir.size += size;
            }
            rest = parent;
        }
    }
    state.files = files.into_iter().map(|(p, _)| p).collect();
    state.doc_of = state.files.iter().enumerate().map(|(doc, p)| (p.clone(), doc as u32)).collect();
    state.terms = rank::TermIndex::build(state.files.iter().map(String::as_str));
    state.built = Some(Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_the_watcher_keep_up_with_changes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/one.go"), "package b\n").unwrap();
        std::fs::write(dir.path().join("a/two.py"), "x = 1\n").unwrap();
        let workspace = Workspace::with_config(dir.path(), Default::default()).unwrap();
        let index = FileIndex::build(&workspace).unwrap();
        assert_eq!(index.get("a").unwrap().file_count, 2);
        assert_eq!(index.get("a").unwrap().size, 16);
        assert!(index.watching().is_ok(), "{:?}", index.watching());
        std::fs::create_dir_all(dir.path().join("a/c")).unwrap();
        std::fs::write(dir.path().join("a/c/three.rs"), "fn main() {}\n").unwrap();
        std::fs::remove_file(dir.path().join("a/two.py")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            index.refresh(&workspace);
            if index.get("a/c/three.rs").is_some() && index.get("a/two.py").is_none() {
                break;
            }
            assert!(Instant::now() < deadline, "the watcher did not report the changes");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(index.get("a").unwrap().file_count, 2);
        let hits = index.search("three").unwrap();
        assert_eq!(hits[0].path, "a/c/three.rs");
        assert!(index.search("two").unwrap().iter().all(|hit| hit.path != "a/two.py"));

        // In-place updates agree with a fresh build: every entry's counts and sizes.
        std::fs::write(dir.path().join("a/b/one.go"), "package b // longer now\n").unwrap();
        std::fs::remove_dir_all(dir.path().join("a/c")).unwrap();
        std::fs::create_dir_all(dir.path().join("d/e")).unwrap();
        std::fs::write(dir.path().join("d/e/four.md"), "# four\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            index.refresh(&workspace);
            let fresh = FileIndex::build(&workspace).unwrap();
            let snapshot = |index: &FileIndex| {
                let mut all = Vec::new();
                index.for_each_under("", |path, e| {
                    all.push((path.to_owned(), e.kind, e.size, e.file_count));
                    true
                });
                all
            };
            if snapshot(&index) == snapshot(&fresh) {
                assert_eq!(index.totals(), fresh.totals());
                assert_eq!(index.search("four").unwrap()[0].path, "d/e/four.md");
                break;
            }
            assert!(Instant::now() < deadline, "{:?} != {:?}", snapshot(&index), snapshot(&fresh));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
