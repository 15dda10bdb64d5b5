//! Opening a file named by a path that was checked earlier, so that what is read is what was
//! checked: no symlink followed on the last component, no blocking, and the checks made on the
//! opened descriptor rather than on the path.
//!
//! A path checked with `stat` and then opened can change in between (another process swaps the
//! file for a symlink to `/etc/shadow`, or for a FIFO that never delivers a byte). So
//! [`open_regular`] opens with `O_NOFOLLOW | O_NONBLOCK` (a symlink is refused by the kernel; a
//! FIFO or device opens without waiting for a writer), then asks the descriptor (`fstat`)
//! whether it is a regular file and, for a path under the workspace root, where it really is
//! (`/proc/self/fd/N`): a directory on the path swapped for a symlink to elsewhere shows there.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why [`open_regular`] gave no file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("not found")]
    NotFound,
    #[error("is a directory")]
    IsDirectory,
    /// A FIFO, socket or device, or a symlink on the last component (`O_NOFOLLOW`).
    #[error("not a regular file")]
    NotRegularFile,
    /// The path is under the root, but the opened file is not (a directory on the path was
    /// a symlink leading out when it was opened).
    #[error("its real location {real} is outside the workspace root")]
    Escaped { real: PathBuf },
    #[error(transparent)]
    Io(io::Error),
}

/// Opens `path` for reading without following a symlink on its last component and without
/// blocking, and checks the descriptor: a regular file and, when `root` is given and `path` is
/// under it, really under it. Returns the file and its metadata (from the descriptor).
///
/// Errors: [`OpenError`]; a symlink on the last component is [`OpenError::NotRegularFile`].
pub fn open_regular(path: &Path, root: Option<&Path>) -> Result<(File, Metadata), OpenError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) => OpenError::NotFound,
            // ELOOP: the last component is a symlink; ENXIO: a socket (or a FIFO opened for
            // writing); ENODEV: a device without a driver.
            Some(libc::ELOOP) | Some(libc::ENXIO) | Some(libc::ENODEV) => OpenError::NotRegularFile,
            Some(libc::EISDIR) => OpenError::IsDirectory,
            _ => OpenError::Io(err),
        })?;
    let metadata = file.metadata().map_err(OpenError::Io)?;
    if metadata.is_dir() {
        return Err(OpenError::IsDirectory);
    }
    if !metadata.is_file() {
        return Err(OpenError::NotRegularFile);
    }
    if let Some(root) = root
        && path.starts_with(root)
    {
        check_under_root(&file, root)?;
    }
    Ok((file, metadata))
}

/// Checks that the file behind `file` is under `root`, by the kernel's name for it.
#[cfg(target_os = "linux")]
fn check_under_root(file: &File, root: &Path) -> Result<(), OpenError> {
    use std::os::fd::AsRawFd;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(OpenError::Io)?;
    if real.starts_with(root) { Ok(()) } else { Err(OpenError::Escaped { real }) }
}

/// Without `/proc`, the descriptor cannot name its path: the `O_NOFOLLOW` open is the guard.
#[cfg(not(target_os = "linux"))]
fn check_under_root(_file: &File, _root: &Path) -> Result<(), OpenError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_fifos_and_escapes_are_refused_on_the_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("root");
        let outside = dir.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("a.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("secret.txt"), "outside\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        let fifo = root.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

        let (_, metadata) = open_regular(&root.join("a.txt"), Some(&root)).unwrap();
        assert_eq!(metadata.len(), 7);
        assert!(matches!(open_regular(&root.join("link.txt"), Some(&root)), Err(OpenError::NotRegularFile)));
        // Opening a FIFO returns at once (no writer needed) and is refused.
        assert!(matches!(open_regular(&fifo, Some(&root)), Err(OpenError::NotRegularFile)));
        assert!(matches!(open_regular(&root.join("sub"), Some(&root)), Err(OpenError::IsDirectory)));
        assert!(matches!(open_regular(&root.join("nope"), Some(&root)), Err(OpenError::NotFound)));
        // A directory on the path that leads out: the descriptor's real path tells.
        let escaped = open_regular(&root.join("out/secret.txt"), Some(&root));
        assert!(matches!(escaped, Err(OpenError::Escaped { .. })), "{escaped:?}");
        // Outside the root (a standard library file the editor opened), only the file checks.
        assert!(open_regular(&outside.join("secret.txt"), Some(&root)).is_ok());
    }
}
