//! Directories below a workspace root known to be real (no symlink on the way from the root),
//! remembered across answers for as long as the kernel reports no change to the directory
//! entries that make them so: a warm `find_references` then takes one `lstat` per file (which
//! the disk cache needs anyway) instead of one more per directory (about 1 µs each; gopls's 148
//! references of `packages.Load` in `x/tools` went through 47 directories).
//!
//! Sound the way git's untracked cache is with `core.fsmonitor`, but synchronously: a directory
//! `D` is remembered only while an inotify watch on its parent `P` (the root, or a directory
//! remembered the same way) was in place before `D`'s `lstat` said it is a directory. Replacing
//! `D` — a rename, a removal, a symlink created in its place — changes `P`'s entries, and the
//! kernel queues the event before the system call that did it returns. Every batch of
//! resolutions ([`super::Workspace::resolver`]) reads the queue first (one `read`, `EAGAIN` when
//! empty) and forgets what an event touches, with everything below it. A full queue
//! (`IN_Q_OVERFLOW`) forgets everything.
//!
//! Only where inotify sees every change: directories on local filesystems whose type is listed
//! in [`REPORTS_EVERY_CHANGE`] (not NFS, FUSE or 9p, whose remote writers inotify never hears
//! of); elsewhere each batch takes its `lstat`s as before. At most [`MAX_KNOWN`] directories
//! (and so watches) are remembered; past that, the rest are looked at every time. Without an
//! inotify instance (the per-user limit reached) nothing is remembered.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use parking_lot::Mutex;

/// Directories remembered at most (each one's parent holds a watch). Watches are a per-user
/// resource too (`fs.inotify.max_user_watches`, 8192 on older kernels), shared with the
/// servers' file watchers: a few thousand directories cover the answers that repeat.
pub const MAX_KNOWN: usize = 2048;

/// `statfs` `f_type`s of local filesystems that report every change of their entries to
/// inotify: ext2/3/4, XFS, Btrfs, tmpfs, F2FS, bcachefs, ZFS, overlayfs (`linux/magic.h`).
pub const REPORTS_EVERY_CHANGE: [i64; 8] =
    [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010, 0xCA45_1A4E, 0x2FC1_2FC1, 0x794C_7630];

/// What a watch on a directory asks for: changes of its entries, and of itself.
fn mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
        | WatchMask::DONT_FOLLOW
        | WatchMask::EXCL_UNLINK
}

/// The process's one set of remembered directories (one inotify instance for every workspace:
/// instances are a per-user resource, 128 by default). `None` without inotify.
pub fn global() -> Option<&'static RealDirs> {
    static GLOBAL: OnceLock<Option<RealDirs>> = OnceLock::new();
    GLOBAL
        .get_or_init(|| match Inotify::init() {
            Ok(inotify) => Some(RealDirs { inner: Mutex::new(Inner::new(inotify)) }),
            Err(err) => {
                tracing::debug!("no inotify instance ({err}): directories are looked at on every resolution");
                None
            }
        })
        .as_ref()
}

/// See the module documentation.
pub struct RealDirs {
    inner: Mutex<Inner>,
}

struct Inner {
    inotify: Inotify,
    /// Absolute, lexically normal directories known real. Each one's parent is a root or is
    /// here itself, and is in `watched`.
    known: HashSet<PathBuf, rustc_hash::FxBuildHasher>,
    /// Watched directory → its watch's id.
    watched: HashMap<PathBuf, WatchDescriptor, rustc_hash::FxBuildHasher>,
    /// Watch id → the directory it was added for.
    watch_dirs: HashMap<i32, PathBuf, rustc_hash::FxBuildHasher>,
    /// Device → whether its filesystem is one of [`REPORTS_EVERY_CHANGE`].
    devices: HashMap<u64, bool, rustc_hash::FxBuildHasher>,
    /// Roots on other filesystems and directories whose watch failed: not tried again
    /// (at most [`MAX_KNOWN`]; emptied with everything else).
    unwatchable: HashSet<PathBuf, rustc_hash::FxBuildHasher>,
    buffer: Vec<u8>,
    /// Counts the reads of the queue that found events. [`RealDirs::learn`] takes the count
    /// [`RealDirs::watch`] saw: an event read by another batch between the watch and the
    /// `lstat`'s result being learnt might be about that very entry.
    generation: u64,
}

/// What [`RealDirs::watch`] hands [`RealDirs::learn`]: the queue's generation when the parent's
/// watch was in place.
#[derive(Debug, Clone, Copy)]
pub struct Watched(u64);

impl RealDirs {
    /// Reads the events queued since the last call and forgets the directories they touch.
    /// One `read` when anything is watched; none otherwise.
    pub fn refresh(&self) {
        let mut inner = self.inner.lock();
        if !inner.watched.is_empty() {
            inner.drain();
        }
    }

    /// Whether `dir` (absolute, lexically normal) is known real as of the last
    /// [`RealDirs::refresh`].
    pub fn is_known(&self, dir: &Path) -> bool {
        self.inner.lock().known.contains(dir)
    }

    /// Watches `parent` (a workspace `root`, or a directory known real) before the `lstat` of
    /// one of its entries, so that the entry can be remembered ([`RealDirs::learn`]). `None`
    /// when it cannot be: `parent` is neither, the limit is reached, or the watch failed.
    pub fn watch(&self, parent: &Path, is_root: bool) -> Option<Watched> {
        let mut inner = self.inner.lock();
        if !is_root && !inner.known.contains(parent) {
            return None;
        }
        let watched = Some(Watched(inner.generation));
        if inner.watched.contains_key(parent) {
            return watched;
        }
        if inner.watched.len() >= MAX_KNOWN || inner.unwatchable.contains(parent) {
            return None;
        }
        let refuse = |inner: &mut Inner| {
            if inner.unwatchable.len() < MAX_KNOWN {
                inner.unwatchable.insert(parent.to_path_buf());
            }
            None
        };
        if is_root {
            // A root is trusted as canonical from when its workspace was opened; its
            // filesystem must still report its entries' changes.
            let reports =
                std::fs::metadata(parent).is_ok_and(|metadata| inner.reports_every_change(parent, metadata.dev()));
            if !reports {
                return refuse(&mut inner);
            }
        }
        let watches = inner.inotify.watches();
        let Ok(wd) = watches.clone().add(parent, mask()) else { return refuse(&mut inner) };
        let id = wd.get_watch_descriptor_id();
        // A directory moved and reached again by its new name has the same watch: what was
        // known by the old name goes, the watch stays.
        if let Some(previous) = inner.watch_dirs.get(&id).cloned()
            && previous != parent
        {
            inner.forget(&previous, Some(id));
        }
        inner.watch_dirs.insert(id, parent.to_path_buf());
        inner.watched.insert(parent.to_path_buf(), wd);
        watched
    }

    /// Remembers `dir` after its `lstat` (`metadata`) said it is a directory, when its parent
    /// was watched first (`watched`, from [`RealDirs::watch`]), no event has been read since,
    /// and its filesystem reports every change.
    pub fn learn(&self, dir: &Path, metadata: &std::fs::Metadata, watched: Watched) {
        let mut inner = self.inner.lock();
        let Some(parent) = dir.parent() else { return };
        if !metadata.is_dir()
            || watched.0 != inner.generation
            || !inner.watched.contains_key(parent)
            || inner.known.len() >= MAX_KNOWN
        {
            return;
        }
        if inner.reports_every_change(dir, metadata.dev()) {
            inner.known.insert(dir.to_path_buf());
        }
    }
}

impl Inner {
    fn new(inotify: Inotify) -> Inner {
        Inner {
            inotify,
            known: HashSet::default(),
            watched: HashMap::default(),
            watch_dirs: HashMap::default(),
            devices: HashMap::default(),
            unwatchable: HashSet::default(),
            // Room for many events a read (each is 16 bytes and a name up to NAME_MAX + 1).
            buffer: vec![0; 64 << 10],
            generation: 0,
        }
    }

    fn reports_every_change(&mut self, path: &Path, dev: u64) -> bool {
        if let Some(&reports) = self.devices.get(&dev) {
            return reports;
        }
        let reports = filesystem_type(path).is_some_and(|kind| REPORTS_EVERY_CHANGE.contains(&kind));
        self.devices.insert(dev, reports);
        reports
    }

    /// Reads every queued event and forgets what each touches. An error other than an empty
    /// queue forgets everything (nothing can be vouched for).
    fn drain(&mut self) {
        let mut touched: Vec<PathBuf> = Vec::new();
        let mut everything = false;
        loop {
            let Inner { inotify, buffer, watch_dirs, .. } = self;
            match inotify.read_events(buffer) {
                Ok(events) => {
                    let mut any = false;
                    for event in events {
                        any = true;
                        if event.mask.contains(EventMask::Q_OVERFLOW) {
                            everything = true;
                            continue;
                        }
                        let Some(dir) = watch_dirs.get(&event.wd.get_watch_descriptor_id()) else { continue };
                        match event.name {
                            Some(name) if !name.is_empty() => touched.push(dir.join(name)),
                            // The directory itself: removed, moved, unmounted, or its watch gone.
                            _ => touched.push(dir.clone()),
                        }
                    }
                    if !any {
                        break;
                    }
                    self.generation += 1;
                }
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(err) => {
                    tracing::debug!("reading inotify events: {err}; forgetting every remembered directory");
                    everything = true;
                    break;
                }
            }
        }
        if everything {
            self.generation += 1;
            self.forget_all();
            return;
        }
        for path in touched {
            self.forget(&path, None);
        }
    }

    /// Forgets `path` and everything below it, and drops their watches (but `keep`'s).
    fn forget(&mut self, path: &Path, keep: Option<i32>) {
        let known = self.known.remove(path);
        let watched = self.watched.contains_key(path);
        // Made again: worth another try.
        self.unwatchable.remove(path);
        // Nothing below a directory is known or watched unless it is (see `known`); a root is
        // watched without being known.
        if !known && !watched {
            return;
        }
        let below = |candidate: &Path| is_at_or_below(candidate, path);
        self.known.retain(|dir| !below(dir));
        self.unwatchable.retain(|dir| !below(dir));
        let watches = self.inotify.watches();
        let mut dropped = Vec::new();
        self.watched.retain(|dir, wd| {
            if below(dir) {
                dropped.push(wd.clone());
                return false;
            }
            true
        });
        for wd in dropped {
            let id = wd.get_watch_descriptor_id();
            self.watch_dirs.remove(&id);
            if keep != Some(id) {
                // Already gone when the directory was removed: nothing to do then.
                let _ = watches.clone().remove(wd);
            }
        }
    }

    fn forget_all(&mut self) {
        self.known.clear();
        self.unwatchable.clear();
        let watches = self.inotify.watches();
        for (_, wd) in self.watched.drain() {
            let _ = watches.clone().remove(wd);
        }
        self.watch_dirs.clear();
    }
}

/// Whether `candidate` is `dir` or below it, by bytes (both absolute and lexically normal).
fn is_at_or_below(candidate: &Path, dir: &Path) -> bool {
    let (candidate, dir) = (candidate.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
    match candidate.strip_prefix(dir) {
        Some([]) => true,
        Some([b'/', ..]) => true,
        Some(_) if dir == b"/" => true,
        _ => false,
    }
}

/// `statfs(path).f_type`, `None` when it fails.
fn filesystem_type(path: &Path) -> Option<i64> {
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `path` is NUL-terminated and `stat` points to writable memory of the type
    // statfs(2) fills; it is read only after the call succeeded.
    let filled = unsafe { libc::statfs(path.as_ptr(), stat.as_mut_ptr()) } == 0;
    #[allow(clippy::unnecessary_cast)] // `f_type`'s type differs between C libraries.
    filled.then(|| unsafe { stat.assume_init() }.f_type as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `lstat` taken before a change whose event another batch read first is not learnt:
    /// that batch forgot nothing (the entry was not known yet), so learning it would keep it
    /// known after the change.
    #[test]
    fn an_entry_is_not_learnt_after_another_batch_read_an_event() {
        let dirs = global().expect("an inotify instance");
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        let watched = dirs.watch(&root, true).expect("ext4 or tmpfs under the temp dir");
        let before = std::fs::symlink_metadata(root.join("d")).unwrap();
        std::fs::rename(root.join("d"), root.join("e")).unwrap();
        std::os::unix::fs::symlink("e", root.join("d")).unwrap();
        dirs.refresh();
        dirs.learn(&root.join("d"), &before, watched);
        assert!(!dirs.is_known(&root.join("d")));
        // With no event in between, the same steps learn it.
        let watched = dirs.watch(&root, true).unwrap();
        let real = std::fs::symlink_metadata(root.join("e")).unwrap();
        dirs.learn(&root.join("e"), &real, watched);
        assert!(dirs.is_known(&root.join("e")));
    }

    #[test]
    fn below_compares_whole_segments() {
        assert!(is_at_or_below(Path::new("/a/b"), Path::new("/a/b")));
        assert!(is_at_or_below(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(!is_at_or_below(Path::new("/a/bc"), Path::new("/a/b")));
        assert!(!is_at_or_below(Path::new("/a"), Path::new("/a/b")));
        assert!(is_at_or_below(Path::new("/a"), Path::new("/")));
    }
}
