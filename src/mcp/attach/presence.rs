//! Presence of editors: each running `filepuff lsp` keeps a file next to its root's socket, so
//! a standalone `filepuff mcp` can tell that an editor runs for its root without serving it,
//! and say so in every result ([`DiskNotice`]).

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Process, is_private, is_private_dir, private_dir, runtime_dir, workspace_hash};

/// The presence file of a running `filepuff lsp`: `HASH.PID.editor` in [`runtime_dir`], mode
/// 0600, holding `{"pid": PID, "start": START, "root": ROOT}` (START: the process start time
/// in clock ticks since boot, to tell pid reuse). Removed when dropped; files of processes
/// that are gone (killed, crashed) are ignored, and removed by the next `filepuff lsp` of any
/// root.
#[derive(Debug)]
pub struct Presence {
    path: PathBuf,
}

impl Presence {
    /// Writes this process's presence file for `root`.
    ///
    /// Errors: the directory is not private to this user, or the file cannot be written.
    pub fn announce(root: &Path) -> io::Result<Presence> {
        let dir = runtime_dir();
        private_dir(&dir)?;
        let hash = workspace_hash(root);
        for (pid, path) in presence_files(&dir, "") {
            if !presence_is_live(pid, &path) {
                let _ = std::fs::remove_file(&path);
            }
        }
        let me = Process::of(std::process::id());
        let path = dir.join(format!("{hash}.{}.editor", me.pid));
        let body = serde_json::json!({ "pid": me.pid, "start": me.start, "root": root }).to_string();
        let temporary = dir.join(format!(".{hash}.{}.editor.tmp", me.pid));
        {
            use std::io::Write;
            let mut file =
                std::fs::OpenOptions::new().create(true).truncate(true).write(true).mode(0o600).open(&temporary)?;
            file.write_all(body.as_bytes())?;
        }
        std::fs::rename(&temporary, &path)?;
        Ok(Presence { path })
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The presence files for `hash` in `dir` (every root's for `""`): (pid from the name, path).
fn presence_files(dir: &Path, hash: &str) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let (of, pid) = name.to_str()?.strip_suffix(".editor")?.split_once('.')?;
            if of.is_empty() || (!hash.is_empty() && of != hash) {
                return None;
            }
            Some((pid.parse().ok()?, entry.path()))
        })
        .collect()
}

/// Whether the process a presence file names still runs (the same process: its start time,
/// when recorded, matches).
fn presence_is_live(pid: u32, path: &Path) -> bool {
    let recorded = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v.get("start").and_then(Value::as_u64));
    Process { pid, start: recorded }.is_alive()
}

/// Whether a live `filepuff lsp` (other than this one) announced itself for `root` less than
/// `within` ago: an editor session starting, which serves agents once its editor has opened
/// its documents.
pub fn editor_starting(root: &Path, within: std::time::Duration) -> bool {
    let dir = runtime_dir();
    if !is_private_dir(&dir) {
        return false;
    }
    let me = std::process::id();
    presence_files(&dir, &workspace_hash(root)).into_iter().any(|(pid, path)| {
        let recent = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age < within);
        pid != me && recent && presence_is_live(pid, &path)
    })
}

/// The pids of the live `filepuff lsp` processes (other than this one) announced for `root`.
pub fn running_editors(root: &Path) -> Vec<u32> {
    let dir = runtime_dir();
    if !is_private_dir(&dir) {
        return Vec::new();
    }
    live_pids(presence_files(&dir, &workspace_hash(root)))
}

/// The pids of `files` whose processes (other than this one) still run, sorted.
fn live_pids(files: Vec<(u32, PathBuf)>) -> Vec<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = files
        .into_iter()
        .filter(|(pid, path)| *pid != me && presence_is_live(*pid, path))
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    pids
}

/// Tells a standalone MCP server whether an editor runs for its root without serving it, so
/// every result can say it comes from the disk ([`DiskNotice::note`]).
#[derive(Debug, Clone)]
pub struct DiskNotice {
    root: PathBuf,
    /// Why this MCP server serves from disk, for the note (e.g. "filepuff mcp runs with
    /// --standalone").
    reason: String,
    /// The root's presence files as last listed (shared by the clones of one session).
    listed: std::sync::Arc<parking_lot::Mutex<Option<Listing>>>,
}

/// The presence files of one root in the runtime directory, and the directory's modification
/// time when they were listed.
#[derive(Debug)]
struct Listing {
    dir: PathBuf,
    modified: std::time::SystemTime,
    files: Vec<(u32, PathBuf)>,
}

/// How old a directory's modification time must be for a listing to be reused while it stays
/// the same: file times tick coarsely (a jiffy), so an entry created in the same tick as the
/// listing would not change it ("racy git").
const LISTING_SETTLED: std::time::Duration = std::time::Duration::from_millis(100);

impl DiskNotice {
    /// A notice for the MCP server of `root`, which is not attached because of `reason`.
    pub fn new(root: &Path, reason: impl Into<String>) -> DiskNotice {
        DiskNotice { root: root.to_path_buf(), reason: reason.into(), listed: Default::default() }
    }

    /// The pids of the live `filepuff lsp` processes announced for the root: the runtime
    /// directory is listed again only when it changed (its modification time), and each listed
    /// editor is checked to be alive (a `/proc` read) at every call.
    fn running_editors(&self) -> Vec<u32> {
        let dir = runtime_dir();
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else { return Vec::new() };
        let Ok(modified) = metadata.modified() else { return Vec::new() };
        if !is_private(&metadata) {
            return Vec::new();
        }
        let mut listed = self.listed.lock();
        let fresh = listed.as_ref().is_some_and(|l| l.dir == dir && l.modified == modified);
        if !fresh {
            let files = presence_files(&dir, &workspace_hash(&self.root));
            let settled = modified.elapsed().is_ok_and(|age| age >= LISTING_SETTLED);
            *listed = settled.then(|| Listing { dir: dir.clone(), modified, files: files.clone() });
            return live_pids(files);
        }
        live_pids(listed.as_ref().map(|l| l.files.clone()).unwrap_or_default())
    }

    /// The note for a tool result, when a `filepuff lsp` runs for the root; `None` when none
    /// runs. Checked at every call (see `running_editors`: no listing while nothing changed).
    pub fn note(&self) -> Option<String> {
        let pids = self.running_editors();
        let listed: Vec<String> = pids.iter().map(u32::to_string).collect();
        let (first, more) = listed.split_first()?;
        let who = if more.is_empty() { format!("pid {first}") } else { format!("pids {}", listed.join(", ")) };
        Some(format!(
            "served from the files on disk: an editor's filepuff lsp ({who}) runs for this workspace, but this \
             agent is not attached to it ({}), so the editor's unsaved buffers are not visible here",
            self.reason
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    use crate::mcp::attach::{private_dir, process_start};

    #[test]
    fn presence_files_are_found_by_hash_and_dropped_with_the_session() {
        let root = tempfile::tempdir().unwrap();
        let hash = workspace_hash(root.path());
        let presence = Presence::announce(root.path()).unwrap();
        let dir = runtime_dir();
        assert_eq!(presence_files(&dir, &hash), vec![(std::process::id(), presence.path.clone())]);
        let mode = std::fs::metadata(&presence.path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // This process's own file does not count as an editor for it.
        assert!(running_editors(root.path()).is_empty());
        // A file left by a dead process is ignored, then removed by the next announcement.
        let stale = dir.join(format!("{hash}.{}.editor", u32::MAX - 1));
        std::fs::write(&stale, r#"{"pid":4294967294,"start":1}"#).unwrap();
        assert!(running_editors(root.path()).is_empty());
        drop(presence);
        assert!(presence_files(&dir, &hash).iter().all(|(pid, _)| *pid != std::process::id()));
        // Another root's, too.
        let elsewhere = dir.join(format!("{}.{}.editor", workspace_hash(Path::new("/elsewhere")), u32::MAX - 1));
        std::fs::write(&elsewhere, r#"{"pid":4294967294,"start":1}"#).unwrap();
        let again = Presence::announce(root.path()).unwrap();
        assert!(!stale.exists() && !elsewhere.exists());
        drop(again);
    }

    #[test]
    fn the_notice_names_live_editors_only() {
        let root = tempfile::tempdir().unwrap();
        let notice = DiskNotice::new(root.path(), "filepuff mcp runs with --standalone");
        assert_eq!(notice.note(), None);
        // A live process of ours (the parent, e.g. cargo) announced for the root.
        let parent = std::os::unix::process::parent_id();
        let hash = workspace_hash(root.path());
        let dir = runtime_dir();
        private_dir(&dir).unwrap();
        let path = dir.join(format!("{hash}.{parent}.editor"));
        let start = process_start(parent).unwrap();
        std::fs::write(&path, format!(r#"{{"pid":{parent},"start":{start}}}"#)).unwrap();
        let note = notice.note();
        std::fs::remove_file(&path).unwrap();
        let note = note.expect("a live editor is named");
        assert!(note.contains(&format!("pid {parent}")) && note.contains("--standalone"), "{note}");
        assert!(note.contains("unsaved buffers are not visible"), "{note}");
        // The editor's file gone (the directory changed): listed again, nobody named.
        assert_eq!(notice.note(), None);
    }
}
