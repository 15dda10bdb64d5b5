//! The workspace: one root directory, its configuration, and the path sandbox.
//!
//! Every path or URI that comes from outside (an agent, the CLI, later an editor or a language
//! server) is resolved here, once, by [`Workspace::resolve`] or [`Workspace::resolve_uri`].
//! Nothing else in the crate joins, normalises or canonicalises raw input paths.
//!
//! The rules (see `docs/architecture.md`):
//! - relative paths are relative to the root; absolute paths are accepted only inside it;
//! - `..` is resolved lexically, and a result outside the root is refused;
//! - symlinks are resolved (on the longest existing prefix, so not-yet-existing files work) and a
//!   path whose real location leaves the root is refused;
//! - NUL bytes (raw or percent-encoded) are refused;
//! - URIs must be `file:` URIs with an empty or `localhost` authority.
//!
//! Resolutions come in batches ([`Workspace::resolver`]) that learn each directory's real
//! location once; `real_dirs` remembers real directories across batches while inotify reports
//! no change to them.

mod config;
pub mod open;
mod real_dirs;

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use config::{
    Config, ConfigError, EditorOptions, GraphConfig, IndexConfig, LanguageConfig, LimitsConfig, LspConfig, McpConfig,
    ReadConfig, SearchConfig, ServerConfig, WalkConfig,
};

/// Why a path or URI from outside was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The input contains a NUL byte (raw or percent-encoded) or is empty.
    #[error("invalid path {input:?}: {reason}")]
    InvalidPath { input: String, reason: &'static str },
    /// The input (after `..` resolution) names a location outside the root.
    #[error("path {input:?} is outside the workspace root {root}")]
    OutsideRoot { input: String, root: PathBuf },
    /// The input is inside the root lexically, but a symlink on it leads outside.
    #[error("path {input:?} resolves through a symlink to {target}, outside the workspace root {root}")]
    SymlinkEscape { input: String, target: PathBuf, root: PathBuf },
    /// The input is a URI whose scheme is not `file`.
    #[error("unsupported URI scheme {scheme:?} in {input:?}: only file: URIs are accepted")]
    UnsupportedScheme { input: String, scheme: String },
    /// The input is a malformed `file:` URI (bad syntax, remote host, bad percent-encoding).
    #[error("invalid file URI {input:?}: {reason}")]
    InvalidUri { input: String, reason: String },
    /// The root itself does not exist or is not a directory.
    #[error("workspace root {root} is not a directory: {reason}")]
    InvalidRoot { root: PathBuf, reason: String },
    /// `filepuff.toml` could not be read or parsed.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// A path that passed the sandbox: absolute, normalised, inside the root.
///
/// `absolute` has symlinks resolved on its existing prefix; `relative` is the same location
/// relative to the root with `/` separators (`""` for the root itself), which is what tools show.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolvedPath {
    pub absolute: PathBuf,
    pub relative: String,
}

impl ResolvedPath {
    /// The document this path names (its canonical location).
    pub fn id(&self) -> DocumentId {
        DocumentId(Arc::from(self.absolute.as_path()))
    }
}

/// What a path means: one file, however it was spelt.
///
/// The canonical absolute path (symlinks resolved on its existing prefix, `.`/`..` resolved,
/// percent-encoding decoded) of a file, made only by the [`Workspace`]
/// ([`Workspace::resolve`] then [`ResolvedPath::id`] for agents and the CLI, inside the root;
/// [`Workspace::document_id_for_uri`] for an editor's or a language server's URIs, anywhere).
/// `file:///link/a.go`, `file:///real/a.go`, `file:///real/sub/../a%2Ego` and `a.go` (from an
/// agent) are one `DocumentId` when `/link` is a symlink to the root `/real`. The documents
/// store, the backends and the tools key by it; each face keeps the spelling it was given for
/// its own answers. Cloning is O(1).
///
/// Equality and hashing are by the path's bytes: the path is lexically normal (no `.`, `..`,
/// empty segment or trailing `/`), so its bytes are equal exactly when its components are, and
/// the hash is one pass over them rather than `Path`'s walk of its components (a references
/// answer looks up dozens of documents). Ordering is `Path`'s, by components, which agrees.
#[derive(Clone, PartialOrd, Ord)]
pub struct DocumentId(Arc<Path>);

impl PartialEq for DocumentId {
    fn eq(&self, other: &DocumentId) -> bool {
        self.0.as_os_str() == other.0.as_os_str()
    }
}

impl Eq for DocumentId {}

impl std::hash::Hash for DocumentId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.as_os_str().hash(state);
    }
}

impl DocumentId {
    /// The canonical absolute path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The canonical `file:` URI: what language servers are told (they see one spelling per
    /// document, whatever the editor or an agent used).
    pub fn uri(&self) -> url::Url {
        // The path is absolute by construction, so this cannot fail on Unix.
        url::Url::from_file_path(&self.0).unwrap_or_else(|()| url::Url::parse("file:///").expect("static URI parses"))
    }

    /// An id for a path already known to be canonical (a walk under the canonical root, a test).
    /// Prefer [`Workspace::resolve`]: this does not canonicalise.
    pub fn from_canonical(path: &Path) -> DocumentId {
        debug_assert!(is_lexically_normal(path), "{path:?} is not lexically normal");
        DocumentId(Arc::from(path))
    }
}

impl std::fmt::Debug for DocumentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DocumentId({})", self.0.display())
    }
}

impl std::fmt::Display for DocumentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.display().fmt(f)
    }
}

/// One workspace root with its configuration.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    config: Config,
}

impl Workspace {
    /// Opens `root` (canonicalised) and reads `filepuff.toml` from it if present.
    ///
    /// Errors: [`WorkspaceError::InvalidRoot`] when `root` is missing or not a directory,
    /// [`WorkspaceError::Config`] when the config file exists but is invalid.
    pub fn open(root: &Path) -> Result<Workspace, WorkspaceError> {
        let mut workspace = Workspace::open_without_config(root)?;
        workspace.config = Config::load(&workspace.root)?;
        Ok(workspace)
    }

    /// Opens `root` with an explicit configuration (no config file is read).
    pub fn with_config(root: &Path, config: Config) -> Result<Workspace, WorkspaceError> {
        let mut workspace = Workspace::open_without_config(root)?;
        workspace.config = config;
        Ok(workspace)
    }

    fn open_without_config(root: &Path) -> Result<Workspace, WorkspaceError> {
        let invalid = |reason: String| WorkspaceError::InvalidRoot { root: root.to_path_buf(), reason };
        let root = root.canonicalize().map_err(|err| invalid(err.to_string()))?;
        if !root.is_dir() {
            return Err(invalid("not a directory".to_owned()));
        }
        Ok(Workspace { root, config: Config::default() })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The effective configuration (defaults overlaid with `filepuff.toml`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Resolves a path or `file:` URI given by a client.
    ///
    /// Accepts a path relative to the root, an absolute path inside the root, or a `file:` URI
    /// (`file:///abs/path`, `file://localhost/abs/path`, percent-encoded). Inputs starting with
    /// another `scheme://` are refused as URIs. The result need not exist.
    pub fn resolve(&self, input: &str) -> Result<ResolvedPath, WorkspaceError> {
        self.resolve_with_lstat(input).map(|(resolved, _)| resolved)
    }

    /// [`Workspace::resolve`], with the `lstat` of the resolved file when resolving took one on
    /// it (its last component exists and is not a symlink), for
    /// [`crate::documents::DocumentStore::text_after_lstat`]: one `lstat` of the file, not two.
    pub fn resolve_with_lstat(&self, input: &str) -> Result<(ResolvedPath, Option<std::fs::Metadata>), WorkspaceError> {
        if input.contains('\0') {
            return Err(WorkspaceError::InvalidPath { input: input.to_owned(), reason: "contains a NUL byte" });
        }
        if input.is_empty() {
            return Err(WorkspaceError::InvalidPath { input: String::new(), reason: "empty path" });
        }
        if let Some(scheme) = uri_scheme(input) {
            if !scheme.eq_ignore_ascii_case("file") {
                return Err(WorkspaceError::UnsupportedScheme { input: input.to_owned(), scheme: scheme.to_owned() });
            }
            return self.resolver().resolve_uri_str_with_lstat(input);
        }
        self.resolver().resolve_path_with_lstat(Path::new(input), input)
    }

    /// Resolves a `file:` URI (from a client or, later, a language server).
    pub fn resolve_uri(&self, uri: &url::Url) -> Result<ResolvedPath, WorkspaceError> {
        let path = file_uri_path(uri)?;
        self.resolve_path(&path, uri.as_str())
    }

    /// The `file:` URI for a resolved path.
    pub fn uri_for(&self, path: &ResolvedPath) -> url::Url {
        // `absolute` is absolute by construction, so this cannot fail on Unix.
        url::Url::from_file_path(&path.absolute)
            .unwrap_or_else(|()| url::Url::parse("file:///").expect("static URI parses"))
    }

    /// The document a `file:` URI from the editor or a language server names, inside the root
    /// or not (an editor opens files of the standard library; a server points into them):
    /// the canonical path of its existing prefix. Use [`Workspace::resolve`] for agents' input,
    /// which must stay inside the root.
    ///
    /// Errors: [`WorkspaceError::UnsupportedScheme`] (`untitled:`, …),
    /// [`WorkspaceError::InvalidUri`] (a remote host, a query, a relative path),
    /// [`WorkspaceError::InvalidPath`] (a NUL byte), [`WorkspaceError::OutsideRoot`] when `..`
    /// climbs above `/`.
    pub fn document_id_for_uri(&self, uri: &url::Url) -> Result<DocumentId, WorkspaceError> {
        let input = uri.as_str();
        let path = file_uri_path(uri)?;
        let normalised = normalise_lexically(&path)
            .ok_or_else(|| WorkspaceError::OutsideRoot { input: input.to_owned(), root: self.root.clone() })?;
        Ok(DocumentId(Arc::from(canonicalize_existing_prefix(&normalised).as_path())))
    }

    /// The path of `id` relative to the root (`/` separators), or `None` outside it.
    pub fn relative(&self, id: &DocumentId) -> Option<String> {
        id.path().strip_prefix(&self.root).ok().map(relative_string)
    }

    /// A resolved path for a location produced by a walk under the root (already canonical).
    ///
    /// Returns `None` when `absolute` is not under the root (a walker followed something odd).
    pub fn resolved_from_walk(&self, absolute: &Path) -> Option<ResolvedPath> {
        let relative = absolute.strip_prefix(&self.root).ok()?;
        Some(ResolvedPath { absolute: absolute.to_path_buf(), relative: relative_string(relative) })
    }

    /// The sandbox. A path spelt through a symlink to the root or to a directory inside it
    /// (`/link/a.go` when `/link` → the root) is the file it names; a path inside the root
    /// lexically whose real location is outside is a [`WorkspaceError::SymlinkEscape`]; any
    /// other path whose real location is outside is [`WorkspaceError::OutsideRoot`].
    ///
    /// The real location is found as a [`Resolver`] finds it: an `lstat` per component below the
    /// root (the root is canonical), not a `readlink` per component from `/` (`realpath`).
    fn resolve_path(&self, path: &Path, input: &str) -> Result<ResolvedPath, WorkspaceError> {
        self.resolver().resolve_path_with_lstat(path, input).map(|(resolved, _)| resolved)
    }

    /// [`Workspace::resolve_uri`] with the real location found by `realpath` of its existing
    /// prefix: the reference the resolvers are tested against.
    #[cfg(test)]
    pub(crate) fn resolve_uri_by_realpath(&self, uri: &url::Url) -> Result<ResolvedPath, WorkspaceError> {
        let path = file_uri_path(uri)?;
        self.sandbox(&path, uri.as_str(), canonicalize_existing_prefix)
    }

    /// A batch of resolutions that share what they learn about directories: for the many
    /// URIs of one answer (a server's references span dozens of files in a few directories).
    /// Answers are those of [`Workspace::resolve_uri`].
    pub fn resolver(&self) -> Resolver<'_> {
        let real_dirs = real_dirs::global();
        if let Some(real_dirs) = real_dirs {
            real_dirs.refresh();
        }
        Resolver { workspace: self, dirs: HashMap::default(), real_dirs }
    }

    /// [`Workspace::resolve_path`] with `canonical` turning the lexically normalised absolute
    /// path into its real location.
    fn sandbox(
        &self,
        path: &Path,
        input: &str,
        canonical: impl FnOnce(&Path) -> PathBuf,
    ) -> Result<ResolvedPath, WorkspaceError> {
        let joined = if path.is_absolute() { Cow::Borrowed(path) } else { Cow::Owned(self.root.join(path)) };
        // Most paths (a server's URIs, an agent's relative names) are already normal: no copy.
        let normalised = if is_lexically_normal(&joined) {
            joined
        } else {
            Cow::Owned(
                normalise_lexically(&joined)
                    .ok_or_else(|| WorkspaceError::OutsideRoot { input: input.to_owned(), root: self.root.clone() })?,
            )
        };
        let real = canonical(&normalised);
        let Some(below) = below_root(&real, &self.root) else {
            if below_root(&normalised, &self.root).is_none() {
                return Err(WorkspaceError::OutsideRoot { input: input.to_owned(), root: self.root.clone() });
            }
            return Err(WorkspaceError::SymlinkEscape {
                input: input.to_owned(),
                target: real,
                root: self.root.clone(),
            });
        };
        let relative = relative_string(below);
        Ok(ResolvedPath { absolute: real, relative })
    }
}

/// Resolutions that remember, for as long as the batch lives, the real location of each
/// directory they went through: a path is then one `lstat` of its last component (its
/// directory, once per batch, an `lstat` per component not yet seen) instead of a `readlink`
/// per component (`realpath`). Made by [`Workspace::resolver`] for one answer; what it learnt
/// is not checked again, so a batch must not outlive the answer it serves (a directory
/// replaced by a symlink meanwhile would go unseen). Directories known real across batches
/// (`real_dirs`: inotify hears of their replacement) take no `lstat` at all.
pub struct Resolver<'w> {
    workspace: &'w Workspace,
    /// Lexically normalised absolute directory → its real location. Keyed on the path's bytes
    /// with a cheap hash: `Path`'s own `Hash` walks its components, and SipHash guards against
    /// keys an adversary picks, which a batch's few dozen directories of one answer are not.
    dirs: HashMap<OsString, PathBuf, rustc_hash::FxBuildHasher>,
    /// Read up to the time the batch was made.
    real_dirs: Option<&'static real_dirs::RealDirs>,
}

impl Resolver<'_> {
    /// As [`Workspace::resolve_uri`].
    pub fn resolve_uri(&mut self, uri: &url::Url) -> Result<ResolvedPath, WorkspaceError> {
        self.resolve_uri_with_lstat(uri).map(|(resolved, _)| resolved)
    }

    /// [`Resolver::resolve_uri`], with the `lstat` of the resolved file taken while resolving
    /// it, when the resolution itself took one on that path (its last component exists and is
    /// not a symlink): the document store checks its cached text against it
    /// ([`crate::documents::DocumentStore::text_after_lstat`]) instead of taking another.
    pub fn resolve_uri_with_lstat(
        &mut self,
        uri: &url::Url,
    ) -> Result<(ResolvedPath, Option<std::fs::Metadata>), WorkspaceError> {
        let path = file_uri_path(uri)?;
        self.resolve_path_with_lstat(&path, uri.as_str())
    }

    /// [`Resolver::resolve_uri_with_lstat`] of a URI as a peer sent it (a string): a plain
    /// `file:///…` URI, whose path [`url::Url`] would neither decode nor change
    /// ([`plain_file_uri_path`]), is taken as the path it spells without building a `Url`;
    /// any other is parsed first. Errors: [`WorkspaceError::InvalidUri`] for a string that is
    /// not a URI, else as [`Workspace::resolve_uri`].
    pub fn resolve_uri_str_with_lstat(
        &mut self,
        uri: &str,
    ) -> Result<(ResolvedPath, Option<std::fs::Metadata>), WorkspaceError> {
        if let Some(path) = plain_file_uri_path(uri) {
            return self.resolve_path_with_lstat(Path::new(path), uri);
        }
        let url = url::Url::parse(uri)
            .map_err(|err| WorkspaceError::InvalidUri { input: uri.to_owned(), reason: err.to_string() })?;
        self.resolve_uri_with_lstat(&url)
    }

    /// [`Workspace::resolve_path`] of `path` (spelt `input` in errors), with the `lstat` as in
    /// [`Resolver::resolve_uri_with_lstat`].
    fn resolve_path_with_lstat(
        &mut self,
        path: &Path,
        input: &str,
    ) -> Result<(ResolvedPath, Option<std::fs::Metadata>), WorkspaceError> {
        let workspace = self.workspace;
        let mut lstat = None;
        let resolved = workspace.sandbox(path, input, |normalised| {
            let (real, metadata) = self.real(normalised, false);
            lstat = metadata;
            real
        })?;
        Ok((resolved, lstat))
    }

    /// What [`canonicalize_existing_prefix`] answers for `path` (absolute, lexically
    /// normalised): the real location of its directory, then its last component if that is not
    /// a symlink (`realpath(dir/name)` is `realpath(dir)/name` then; a missing one is appended as
    /// it is), else the whole path resolved as before. With it, the `lstat` of that real
    /// location when it was taken there: the last component exists and is not a symlink.
    /// `learn`: `path` is a directory on the way to another path; remember it across batches
    /// when it is real and its parent can be watched ([`real_dirs`]).
    fn real(&mut self, path: &Path, learn: bool) -> (PathBuf, Option<std::fs::Metadata>) {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return (path.to_path_buf(), None) };
        // The real directory may be longer than its spelling (a symlink on the way): some room.
        let mut candidate = PathBuf::with_capacity(path.as_os_str().len() + 64);
        self.push_real_dir(parent, &mut candidate);
        // Watched before the look, so that a change after it is heard.
        let remember = match self.real_dirs {
            Some(real_dirs) if learn && candidate == parent => {
                real_dirs.watch(parent, parent == self.workspace.root).map(|watched| (real_dirs, watched))
            }
            _ => None,
        };
        candidate.push(name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(metadata) if metadata.file_type().is_symlink() => (canonicalize_existing_prefix(&candidate), None),
            Ok(metadata) => {
                if let Some((real_dirs, watched)) = remember {
                    real_dirs.learn(&candidate, &metadata, watched);
                }
                (candidate, Some(metadata))
            }
            Err(_) => (candidate, None),
        }
    }

    /// Pushes the real location of directory `dir` (absolute, lexically normalised) onto
    /// `out` (empty): from the batch's cache, else found by [`Resolver::real`] and cached.
    fn push_real_dir(&mut self, dir: &Path, out: &mut PathBuf) {
        if dir == self.workspace.root {
            // Canonical when the workspace was opened.
            out.push(dir);
            return;
        }
        if let Some(real) = self.dirs.get(dir.as_os_str()) {
            out.push(real);
            return;
        }
        if self.real_dirs.is_some_and(|real_dirs| real_dirs.is_known(dir)) {
            out.push(dir);
            return;
        }
        let (real, _) = self.real(dir, true);
        out.push(&real);
        self.dirs.insert(dir.as_os_str().to_owned(), real);
    }
}

/// A file watcher for changes below the workspace (`notify`, inotify on Linux) that asks the
/// kernel for changes only: created, removed, renamed, written, attributes. Without the access
/// events notify asks for by default (`IN_OPEN`, and the closes), every file a language server,
/// a build, a `grep` or filepuff itself opens below the root would wake the watcher's thread
/// (basedpyright opens files on every request: about 200 µs of CPU per `find_references`).
/// Used by the servers' watchers and the file index. Errors: notify's (no inotify instance left).
pub fn change_watcher<F: notify::EventHandler>(handler: F) -> notify::Result<notify::RecommendedWatcher> {
    let config = notify::Config::default().with_event_kinds(notify::EventKindMask::CORE);
    <notify::RecommendedWatcher as notify::Watcher>::new(handler, config)
}

/// The local path of a `file:` URI, checked: `file` scheme, no remote host, no query or
/// fragment, no NUL byte (raw or percent-encoded), absolute.
fn file_uri_path(uri: &url::Url) -> Result<PathBuf, WorkspaceError> {
    let input = uri.as_str();
    let invalid = |reason: &str| WorkspaceError::InvalidUri { input: input.to_owned(), reason: reason.to_owned() };
    if uri.scheme() != "file" {
        return Err(WorkspaceError::UnsupportedScheme { input: input.to_owned(), scheme: uri.scheme().to_owned() });
    }
    match uri.host_str() {
        None | Some("") | Some("localhost") => {}
        Some(_) => return Err(invalid("a file URI must not name a remote host")),
    }
    if uri.query().is_some() || uri.fragment().is_some() {
        return Err(invalid("a file URI must not carry a query or fragment"));
    }
    // `%00` has no letters to spell in either case.
    if uri.path().contains("%00") {
        return Err(WorkspaceError::InvalidPath { input: input.to_owned(), reason: "contains a NUL byte" });
    }
    uri.to_file_path().map_err(|()| invalid("not an absolute local path"))
}

/// The path of a `file:///…` URI (empty host) that [`url::Url`] would parse to the same path
/// [`file_uri_path`] answers, found without parsing: every byte after `file://` is one a URL
/// path keeps as it is (ASCII letters, digits and `/-._~!$&'()*+,;=:@`: no `%` escape, no `\`,
/// no query or fragment, nothing non-ASCII), and no segment is `.` or `..` (which the parser
/// would remove). `None` for any other string: parse it.
fn plain_file_uri_path(uri: &str) -> Option<&str> {
    /// The bytes a URL path keeps as they are, by value (one lookup per byte of a path).
    const KEPT: [bool; 256] = {
        let mut kept = [false; 256];
        let mut byte = 0;
        while byte < 256 {
            let b = byte as u8;
            kept[byte] = b.is_ascii_alphanumeric()
                || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~' | b'!' | b'$')
                || matches!(b, b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':' | b'@');
            byte += 1;
        }
        kept
    };
    let path = uri.strip_prefix("file://").filter(|path| path.starts_with('/'))?;
    // One pass: each byte looked up, each segment checked where it ends.
    let bytes = path.as_bytes();
    let mut segment = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        if !KEPT[usize::from(byte)] {
            return None;
        }
        if byte == b'/' {
            if matches!(&bytes[segment..at], b"." | b"..") {
                return None;
            }
            segment = at + 1;
        }
    }
    (!matches!(&bytes[segment..], b"." | b"..")).then_some(path)
}

/// The scheme of `input` if it looks like a URI: `file:` anything, or `scheme://…`.
///
/// A bare `name:rest` without `//` is a legal relative file name on Unix, so it is a path.
fn uri_scheme(input: &str) -> Option<&str> {
    let colon = input.find(':')?;
    let scheme = &input[..colon];
    let valid = scheme.len() > 1
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid {
        return None;
    }
    (scheme.eq_ignore_ascii_case("file") || input[colon + 1..].starts_with("//")).then_some(scheme)
}

/// Whether `path` is absolute and spelt as [`normalise_lexically`] would spell it: no empty,
/// `.` or `..` segment, no trailing `/` (the root `/` itself is normal).
fn is_lexically_normal(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    match bytes {
        b"/" => true,
        [b'/', rest @ ..] => rest.split(|&b| b == b'/').all(|segment| !matches!(segment, b"" | b"." | b"..")),
        _ => false,
    }
}

/// What `path.strip_prefix(root)` answers (`path` relative to `root`, empty for `root` itself;
/// `None` when `path` is neither `root` nor inside it), found by comparing bytes when `path` is
/// lexically normal ([`is_lexically_normal`]), by std's component walk otherwise. `root` must be
/// normal: it is the workspace's canonical root ([`Workspace::open`] canonicalises it), so that
/// is decided once there, not on every call.
fn below_root<'p>(path: &'p Path, root: &Path) -> Option<&'p Path> {
    use std::os::unix::ffi::OsStrExt;
    debug_assert!(is_lexically_normal(root), "the root {root:?} is canonical");
    if !is_lexically_normal(path) {
        return path.strip_prefix(root).ok();
    }
    let rest = path.as_os_str().as_bytes().strip_prefix(root.as_os_str().as_bytes())?;
    let rest = match rest {
        [] => rest,
        // The root `/` ends in the separator already.
        _ if root.as_os_str().len() == 1 => rest,
        [b'/', rest @ ..] => rest,
        // `/rootname` is not below `/root`.
        _ => return None,
    };
    Some(Path::new(std::ffi::OsStr::from_bytes(rest)))
}

/// Resolves `.` and `..` without touching the file system; `None` if `..` climbs above `/`.
fn normalise_lexically(path: &Path) -> Option<PathBuf> {
    // Never longer than `path`: one allocation.
    let mut out = PathBuf::with_capacity(path.as_os_str().len());
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => out.push(prefix.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    Some(out)
}

/// Canonicalises the longest existing ancestor of `path` and appends the rest unchanged.
///
/// A dangling symlink on the way is followed to where it points (so that creating the file
/// would be judged by its real location), up to a fixed depth.
fn canonicalize_existing_prefix(path: &Path) -> PathBuf {
    canonicalize_existing_prefix_at_depth(path, 0)
}

fn canonicalize_existing_prefix_at_depth(path: &Path, depth: usize) -> PathBuf {
    const MAX_LINK_DEPTH: usize = 40;
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        if depth < MAX_LINK_DEPTH
            && let Ok(target) = std::fs::read_link(existing)
        {
            // A dangling symlink: resolve its target the same way.
            let parent = existing.parent().unwrap_or(Path::new("/"));
            let target = normalise_lexically(&parent.join(target)).unwrap_or_else(|| PathBuf::from("/"));
            let mut out = canonicalize_existing_prefix_at_depth(&target, depth + 1);
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `relative`'s components joined by `/`, each lossily as UTF-8.
fn relative_string(relative: &Path) -> String {
    // What `sandbox` passes (a real path's tail below the root) is already spelt so: copied as
    // it is, without walking its components.
    use std::os::unix::ffi::OsStrExt;
    let bytes = relative.as_os_str().as_bytes();
    if bytes.split(|&b| b == b'/').all(|part| !matches!(part, b"" | b"." | b".."))
        && let Ok(spelt) = std::str::from_utf8(bytes)
    {
        return spelt.to_owned();
    }
    let mut out = String::with_capacity(relative.as_os_str().len());
    for (idx, part) in relative.components().enumerate() {
        if idx > 0 {
            out.push('/');
        }
        out.push_str(&part.as_os_str().to_string_lossy());
    }
    out
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
