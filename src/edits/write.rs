//! Durable, serialized file replacement.
//!
//! [`LockedFile::open`] takes an exclusive OS advisory lock (`flock(2)` through
//! [`std::fs::File::lock`]) on the file, so two filepuff processes editing one file take turns —
//! not only two tasks of one process. Because a replacement is a rename, the path may name a new
//! inode by the time a waiter gets its lock; the waiter then re-opens and locks again, so the
//! lock it holds is always on the file the path names.
//!
//! [`LockedFile::replace`] writes the new content to a temporary file in the same directory,
//! copies the old file's permissions (and owner, where allowed), `fsync`s it, renames it over
//! the file and `fsync`s the directory. A crash at any point leaves either the old content or
//! the new one, never a mix; a crash before the rename can leave a temporary file
//! (`.NAME.XXXXXX.filepuff-tmp`), which the next edit of that file removes.

use std::fs::{File, Metadata};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::documents::{BINARY_PROBE_BYTES, ReadError};
use crate::workspace::open::open_regular;

/// Suffix of filepuff's temporary files.
const TEMP_SUFFIX: &str = ".filepuff-tmp";
/// Random characters in a temporary file's name.
const TEMP_RANDOM: usize = 6;
/// Test hook: when set to a path, [`LockedFile::replace`] creates that file after the new content
/// is durable in its temporary file and then sleeps before the rename, so a test can kill the
/// process exactly there (see `tests/e2e/test_edits.py`).
pub const HOLD_BEFORE_RENAME_ENV: &str = "FILEPUFF_TEST_HOLD_BEFORE_RENAME";

/// Why a file could not be locked, read or replaced.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{path} is not valid UTF-8 (first invalid byte at offset {offset}); editing it would corrupt it")]
    NotUtf8 { path: PathBuf, offset: usize },
    /// The file is not writable by this process (no write permission for us, or no write bit
    /// at all — even for root, as editors treat a read-only file): replacing it by a rename
    /// would ignore that, so it is refused.
    #[error("{path} is read-only (mode {mode:o})")]
    ReadOnly { path: PathBuf, mode: u32 },
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// An open file under an exclusive advisory lock, released on drop.
#[derive(Debug)]
pub struct LockedFile {
    file: File,
    path: PathBuf,
    metadata: Metadata,
}

impl LockedFile {
    /// Opens and locks `path`, waiting for other holders. The path must name a regular file no
    /// larger than `max_bytes`; it is opened without following a symlink or blocking and checked
    /// on the descriptor ([`open_regular`]: a regular file, and under `root` when given and the
    /// path is under it).
    ///
    /// Errors: [`ReadError`]s as for reading (not found, directory, not a regular file, escaped
    /// the root, too large), [`WriteError::Io`] when the file cannot be opened or locked.
    pub fn open(path: &Path, max_bytes: u64, root: Option<&Path>) -> Result<LockedFile, WriteError> {
        let io = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::NotFound => WriteError::Read(ReadError::NotFound { path: path.to_path_buf() }),
            _ => WriteError::Io { path: path.to_path_buf(), source },
        };
        for _ in 0..1000 {
            let (file, metadata) = open_regular(path, root).map_err(|err| ReadError::from_open(err, path))?;
            if metadata.len() > max_bytes {
                return Err(
                    ReadError::TooLarge { path: path.to_path_buf(), size: metadata.len(), limit: max_bytes }.into()
                );
            }
            file.lock().map_err(io)?;
            let locked = file.metadata().map_err(io)?;
            // Still the file the path names? (A holder before us may have renamed a new one in;
            // a symlink put in its place is not it.)
            match std::fs::symlink_metadata(path) {
                Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                    return Ok(LockedFile { file, path: path.to_path_buf(), metadata: locked });
                }
                Ok(_) => continue,
                Err(err) => return Err(io(err)),
            }
        }
        Err(WriteError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("the file kept being replaced while waiting for its lock"),
        })
    }

    /// The whole content, checked as text: not binary (no NUL in the first 8 KiB), within the
    /// size limit, valid UTF-8 (an edit of invalid UTF-8 would have to replace bytes it cannot
    /// represent).
    pub fn read_text(&mut self, max_bytes: u64) -> Result<String, WriteError> {
        let mut bytes = Vec::with_capacity(self.metadata.len() as usize);
        (&self.file)
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| WriteError::Io { path: self.path.clone(), source })?;
        if bytes.len() as u64 > max_bytes {
            return Err(
                ReadError::TooLarge { path: self.path.clone(), size: bytes.len() as u64, limit: max_bytes }.into()
            );
        }
        if let Some(offset) = memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE_BYTES)]) {
            return Err(ReadError::Binary { path: self.path.clone(), offset }.into());
        }
        String::from_utf8(bytes)
            .map_err(|err| WriteError::NotUtf8 { path: self.path.clone(), offset: err.utf8_error().valid_up_to() })
    }

    /// Atomically replaces the file's content with `content` (see the module docs), keeping its
    /// permissions. The lock stays held until `self` is dropped.
    pub fn replace(&self, content: &[u8]) -> Result<(), WriteError> {
        let staged = self.stage(content)?;
        self.commit(staged)
    }

    /// The first half of [`LockedFile::replace`]: `content` durable in a temporary file beside
    /// this one, with its permissions. Nothing visible changes until [`LockedFile::commit`];
    /// dropping the result removes the temporary file. Multi-file edits stage every file first.
    ///
    /// Errors: [`WriteError::ReadOnly`] when the file may not be written (checked first: a
    /// rename would replace it regardless of its mode), [`WriteError::Io`].
    pub fn stage(&self, content: &[u8]) -> Result<tempfile::NamedTempFile, WriteError> {
        let io = |source: std::io::Error| WriteError::Io { path: self.path.clone(), source };
        if !self.writable() {
            return Err(WriteError::ReadOnly { path: self.path.clone(), mode: self.metadata.mode() & 0o7777 });
        }
        let dir = self.dir();
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        remove_stale_temps(dir, &name);
        let mut temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(TEMP_SUFFIX)
            .rand_bytes(TEMP_RANDOM)
            .tempfile_in(dir)
            .map_err(io)?;
        temp.write_all(content).map_err(io)?;
        let file = temp.as_file();
        file.set_permissions(std::fs::Permissions::from_mode(self.metadata.mode() & 0o7777)).map_err(io)?;
        // Keep the owner when we may (root editing another user's file); otherwise the new file
        // is ours, as with any editor's save.
        let _ = std::os::unix::fs::fchown(file, Some(self.metadata.uid()), Some(self.metadata.gid()));
        file.sync_all().map_err(io)?;
        Ok(temp)
    }

    /// The second half: renames the staged file over this one and syncs the directory.
    pub fn commit(&self, staged: tempfile::NamedTempFile) -> Result<(), WriteError> {
        let io = |source: std::io::Error| WriteError::Io { path: self.path.clone(), source };
        if let Some(marker) = std::env::var_os(HOLD_BEFORE_RENAME_ENV) {
            let _ = std::fs::write(&marker, staged.path().as_os_str().as_encoded_bytes());
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
        staged.persist(&self.path).map_err(|err| io(err.error))?;
        File::open(self.dir()).and_then(|d| d.sync_all()).map_err(io)?;
        Ok(())
    }

    /// Whether this process may write the file: `access(W_OK)` with the effective ids (which
    /// also says no for a read-only file system), and some write bit set — root passes
    /// `access` whatever the mode, but a 0444 file is read-only to editors run as root too.
    fn writable(&self) -> bool {
        if self.metadata.mode() & 0o222 == 0 {
            return false;
        }
        let Ok(path) = std::ffi::CString::new(self.path.as_os_str().as_encoded_bytes()) else { return false };
        // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
        unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
    }

    fn dir(&self) -> &Path {
        self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
    }
}

/// Removes temporary files a crashed edit of `name` left in `dir`. Only names of the exact shape
/// `.NAME.XXXXXX.filepuff-tmp` are touched; the caller holds `name`'s lock, so no live edit of
/// it owns one.
fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else { continue };
        let Some(middle) = file_name.strip_prefix(&prefix).and_then(|rest| rest.strip_suffix(TEMP_SUFFIX)) else {
            continue;
        };
        if middle.len() == TEMP_RANDOM && middle.bytes().all(|b| b.is_ascii_alphanumeric()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_keeps_permissions_and_cleans_stale_temps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        std::fs::write(&path, "echo old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
        let stale = dir.path().join(".run.sh.AbC123.filepuff-tmp");
        std::fs::write(&stale, "half").unwrap();
        let other = dir.path().join(".run.sh.x.AbC123.filepuff-tmp");
        std::fs::write(&other, "not ours").unwrap();

        let mut locked = LockedFile::open(&path, 1 << 20, None).unwrap();
        assert_eq!(locked.read_text(1 << 20).unwrap(), "echo old\n");
        locked.replace(b"echo new\n").unwrap();
        drop(locked);

        assert_eq!(std::fs::read_to_string(&path).unwrap(), "echo new\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o751);
        assert!(!stale.exists());
        assert!(other.exists());
    }

    #[test]
    fn waiters_lock_the_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.txt");
        std::fs::write(&path, "").unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut locked = LockedFile::open(&path, 1 << 20, None).unwrap();
                    let text = locked.read_text(1 << 20).unwrap();
                    locked.replace(format!("{text}{i}\n").as_bytes()).unwrap();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<_> = text.lines().collect();
        lines.sort();
        assert_eq!(lines, ["0", "1", "2", "3", "4", "5", "6", "7"]);
    }

    #[test]
    fn invalid_utf8_and_binary_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let latin1 = dir.path().join("l.txt");
        std::fs::write(&latin1, b"caf\xe9\n").unwrap();
        let err = LockedFile::open(&latin1, 1 << 20, None).unwrap().read_text(1 << 20).unwrap_err();
        assert!(matches!(err, WriteError::NotUtf8 { offset: 3, .. }), "{err:?}");
        let binary = dir.path().join("b.bin");
        std::fs::write(&binary, b"a\0b").unwrap();
        let err = LockedFile::open(&binary, 1 << 20, None).unwrap().read_text(1 << 20).unwrap_err();
        assert!(matches!(err, WriteError::Read(ReadError::Binary { offset: 1, .. })));
        let err = LockedFile::open(dir.path(), 1 << 20, None).unwrap_err();
        assert!(matches!(err, WriteError::Read(ReadError::IsDirectory { .. })));
    }

    #[test]
    fn a_read_only_file_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro.txt");
        std::fs::write(&path, "keep\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let locked = LockedFile::open(&path, 1 << 20, None).unwrap();
        let err = locked.replace(b"changed\n").unwrap_err();
        assert!(matches!(err, WriteError::ReadOnly { mode: 0o444, .. }), "{err:?}");
        drop(locked);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep\n");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o444);
    }

    #[test]
    fn a_symlink_or_fifo_swapped_in_is_not_locked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("target.txt"), "x\n").unwrap();
        std::os::unix::fs::symlink(root.join("target.txt"), root.join("link.txt")).unwrap();
        let err = LockedFile::open(&root.join("link.txt"), 1 << 20, Some(&root)).unwrap_err();
        assert!(matches!(err, WriteError::Read(ReadError::NotRegularFile { .. })), "{err:?}");
        let fifo = std::ffi::CString::new(root.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let err = LockedFile::open(&root.join("fifo"), 1 << 20, Some(&root)).unwrap_err();
        assert!(matches!(err, WriteError::Read(ReadError::NotRegularFile { .. })), "{err:?}");
    }
}
