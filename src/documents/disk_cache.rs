//! Texts of files no editor has open, as last read from disk, reused while the file is unchanged
//! ([`DocumentStore::text`](super::DocumentStore::text)): an agent's `find_references` reads the
//! same few files on every call, and a read is a path walk, an open, an `fstat` and a rope.
//!
//! - **Unchanged** means one `lstat` of the path gives the identity and times the text was read
//!   with: device, inode, size, and modification and status-change times to the nanosecond. An
//!   atomic replace (a new inode), an in-place write (size or times) and a symlink swapped in
//!   (another file, or not a regular file) all miss, and the file is read anew with every check
//!   of [`load_from_disk`](super::load_from_disk). A hit is the same file object that passed
//!   those checks.
//! - **Racy times** (as git's index): a file modified within [`RACY`] of being read is not kept,
//!   since a second write in the same timestamp tick would leave the times unchanged.
//! - **Bounded** by bytes of text and of each text's [`LineStarts`] (built once, when the text is
//!   kept: 4 bytes a line) ([`LIMIT_BYTES`]); the oldest entries go first.

use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use super::SourceText;
use super::position::LineStarts;
use crate::workspace::DocumentId;

/// Text kept, in bytes, over all entries.
pub const LIMIT_BYTES: usize = 32 << 20;

/// A file whose modification or status change is this recent when read is not kept.
pub const RACY: Duration = Duration::from_secs(2);

/// What identifies one state of a file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    /// Whether the file changed within [`RACY`] of `now`.
    fn racy(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else { return true };
        let recent = |(secs, nanos): (i64, i64)| {
            let at = Duration::new(u64::try_from(secs).unwrap_or(0), u32::try_from(nanos).unwrap_or(0));
            now.saturating_sub(at) < RACY
        };
        recent(self.mtime) || recent(self.ctime)
    }
}

#[derive(Debug)]
struct Entry {
    stamp: Stamp,
    text: SourceText,
    bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    /// foldhash: a lookup per location of a server's answer, each one pass over the path's
    /// bytes; seeded per process, so paths cannot be picked to collide.
    entries: HashMap<DocumentId, Entry, foldhash::fast::RandomState>,
    /// Insertion order, oldest first (an id may appear again after a re-read; stale positions
    /// are skipped when evicting).
    order: VecDeque<(DocumentId, Stamp)>,
    bytes: usize,
}

/// The cache; see the module documentation.
#[derive(Debug, Default)]
pub struct DiskCache {
    inner: Mutex<Inner>,
}

impl DiskCache {
    /// The text read from `path` (the file of `id`) if the file is unchanged since, and at most
    /// `max_bytes` long.
    pub fn get(&self, id: &DocumentId, path: &Path, max_bytes: u64) -> Option<SourceText> {
        self.get_as_of(id, &std::fs::symlink_metadata(path).ok()?, max_bytes)
    }

    /// [`DiskCache::get`] with the file's `lstat` (its `metadata`) already taken by the caller.
    pub fn get_as_of(&self, id: &DocumentId, metadata: &std::fs::Metadata, max_bytes: u64) -> Option<SourceText> {
        if !metadata.file_type().is_file() || metadata.len() > max_bytes {
            return None;
        }
        let stamp = Stamp::of(metadata);
        let inner = self.inner.lock();
        let entry = inner.entries.get(id)?;
        (entry.stamp == stamp).then(|| entry.text.clone())
    }

    /// Keeps `text`, read from a file with `metadata` (taken on the open descriptor), unless the
    /// file changed within [`RACY`] or the text alone is over a quarter of [`LIMIT_BYTES`].
    pub fn put(&self, id: &DocumentId, metadata: &std::fs::Metadata, text: &SourceText) {
        self.put_stamped(id, Stamp::of(metadata), text, SystemTime::now());
    }

    fn put_stamped(&self, id: &DocumentId, stamp: Stamp, text: &SourceText, now: SystemTime) {
        if text.text.len_bytes() > LIMIT_BYTES / 4 || stamp.racy(now) {
            return;
        }
        // Kept texts are read again and again and never change: their lines are found once.
        let mut text = text.clone();
        text.lines = text.lines.or_else(|| LineStarts::of(&text.text).map(Arc::new));
        let bytes = text.text.len_bytes() + text.lines.as_ref().map_or(0, |lines| lines.heap_bytes());
        let mut inner = self.inner.lock();
        if let Some(old) = inner.entries.insert(id.clone(), Entry { stamp, text, bytes }) {
            inner.bytes -= old.bytes;
        }
        inner.bytes += bytes;
        inner.order.push_back((id.clone(), stamp));
        while inner.bytes > LIMIT_BYTES {
            let Some((oldest, at)) = inner.order.pop_front() else { break };
            if inner.entries.get(&oldest).is_some_and(|entry| entry.stamp == at) {
                let removed = inner.entries.remove(&oldest).map_or(0, |entry| entry.bytes);
                inner.bytes -= removed;
            }
        }
        // Positions of entries replaced since: dropped once they are most of the queue.
        if inner.order.len() > 2 * inner.entries.len() + 64 {
            let Inner { entries, order, .. } = &mut *inner;
            order.retain(|(id, at)| entries.get(id).is_some_and(|entry| entry.stamp == *at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::{Origin, load_with_metadata};

    const MAX: u64 = 1 << 20;

    fn text(s: &str) -> SourceText {
        SourceText {
            text: ropey::Rope::from_str(s),
            origin: Origin::Disk { modified: None, lossy: false },
            language: None,
            lines: None,
        }
    }

    /// Reads `path` as the store does and keeps it as if `later` had passed since.
    fn read_and_keep(cache: &DiskCache, id: &DocumentId, path: &Path, later: Duration) -> SourceText {
        let (text, metadata) = load_with_metadata(path, MAX, None).unwrap();
        cache.put_stamped(id, Stamp::of(&metadata), &text, SystemTime::now() + later);
        text
    }

    #[test]
    fn an_unchanged_file_is_reused_and_any_change_misses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap().join("a.py");
        let id = DocumentId::from_canonical(&path);
        let cache = DiskCache::default();
        std::fs::write(&path, "x = 1\n").unwrap();
        // Just written: racy, not kept.
        let (read, metadata) = load_with_metadata(&path, MAX, None).unwrap();
        cache.put(&id, &metadata, &read);
        assert!(cache.get(&id, &path, MAX).is_none(), "a file written just now was kept");
        // Read when its times are old: a hit, within max_bytes only.
        read_and_keep(&cache, &id, &path, Duration::from_secs(10));
        assert_eq!(cache.get(&id, &path, MAX).unwrap().text.to_string(), "x = 1\n");
        assert!(cache.get(&id, &path, 3).is_none(), "over max_bytes");
        // Written in place, same size (times move on: wait out a coarse timestamp tick).
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&path, "x = 2\n").unwrap();
        assert!(cache.get(&id, &path, MAX).is_none());
        // Replaced atomically (a new inode).
        read_and_keep(&cache, &id, &path, Duration::from_secs(10));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, "x = 3\n").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert!(cache.get(&id, &path, MAX).is_none());
        // A symlink swapped in.
        read_and_keep(&cache, &id, &path, Duration::from_secs(10));
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &path).unwrap();
        assert!(cache.get(&id, &path, MAX).is_none());
    }

    #[test]
    fn the_oldest_entries_go_first_past_the_byte_limit() {
        let cache = DiskCache::default();
        // A fifth of the limit with its one line's start (4 bytes), which counts too.
        let big = text(&"x".repeat(LIMIT_BYTES / 5 - 4));
        let later = SystemTime::now() + Duration::from_secs(60);
        let id = |n: u64| DocumentId::from_canonical(Path::new(&format!("/nowhere/{n}")));
        let stamp = |n: u64| Stamp { dev: 1, ino: n, size: 1, mtime: (1, 0), ctime: (1, 0) };
        for n in 0..12u64 {
            cache.put_stamped(&id(n), stamp(n), &big, later);
        }
        {
            let inner = cache.inner.lock();
            assert_eq!(inner.bytes, LIMIT_BYTES / 5 * 5, "texts and their line starts");
            assert_eq!(inner.entries.len(), 5);
            assert!((7..12).all(|n| inner.entries.contains_key(&id(n))), "the newest five are kept");
        }
        // Too big for the cache at all.
        let huge = text(&"x".repeat(LIMIT_BYTES / 4 + 1));
        cache.put_stamped(&id(99), stamp(99), &huge, later);
        assert!(!cache.inner.lock().entries.contains_key(&id(99)));
    }
}
