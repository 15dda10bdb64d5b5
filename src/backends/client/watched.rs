//! A server's `workspace/didChangeWatchedFiles` registrations (LSP 3.17 "DidChangeWatchedFiles
//! Notification", dynamic registration): which files it wants to hear about, and for which kinds
//! of change.
//!
//! A server registers [`FileSystemWatcher`](lsp_types::FileSystemWatcher)s with
//! `client/registerCapability` and drops them with `client/unregisterCapability`; filepuff's own
//! notify watcher asks [`WatchedFiles::wants`] for every change it sees. Glob patterns follow
//! the spec's syntax (`*` within one path segment, `?`, `**` over any number of segments,
//! `{a,b}` alternatives, `[0-9]` ranges), matched with `globset`. A plain string pattern is
//! matched against the absolute path of the file, and — for the relative patterns servers
//! send when they do not expect `relativePatternSupport` — against its path relative to the
//! server's root; a `RelativePattern` is matched against the path relative to its `baseUri`
//! (a URI or a `WorkspaceFolder`) only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobMatcher};
use lsp_types::FileChangeType;
use serde_json::Value;

/// `WatchKind` bits (LSP 3.17): Create = 1, Change = 2, Delete = 4; 7 when a watcher names none.
const ALL_KINDS: u8 = 7;

/// One `FileSystemWatcher` of a registration, ready to match.
#[derive(Debug, Clone)]
struct Watcher {
    glob: GlobMatcher,
    /// The canonical `baseUri` directory of a `RelativePattern`; `None` for a plain pattern.
    base: Option<PathBuf>,
    /// `WatchKind` bitmask.
    kind: u8,
}

/// Why a registration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// `registerOptions.watchers` is missing or not an array.
    #[error("the didChangeWatchedFiles registration has no `watchers` array")]
    NoWatchers,
    /// A watcher whose `globPattern` is neither a string nor a `RelativePattern`, or does not parse.
    #[error("the glob pattern {pattern} cannot be used: {message}")]
    BadPattern { pattern: String, message: String },
}

/// The registrations of one server, by registration id.
#[derive(Debug, Default)]
pub struct WatchedFiles {
    registrations: HashMap<String, Vec<Watcher>>,
}

impl WatchedFiles {
    /// Keeps the registration `id` with its `registerOptions` (a
    /// `DidChangeWatchedFilesRegistrationOptions`, as JSON since servers vary). A registration
    /// with the id of a kept one replaces it. Errors leave the kept registrations unchanged.
    pub fn register(&mut self, id: &str, options: &Value) -> Result<(), WatchError> {
        let watchers = options.get("watchers").and_then(Value::as_array).ok_or(WatchError::NoWatchers)?;
        let mut parsed = Vec::with_capacity(watchers.len());
        for watcher in watchers {
            let kind = watcher.get("kind").and_then(Value::as_u64).map_or(ALL_KINDS, |k| (k & 7) as u8);
            let pattern = watcher.get("globPattern").unwrap_or(&Value::Null);
            let (pattern, base) = match pattern {
                Value::String(pattern) => (pattern.as_str(), None),
                Value::Object(relative) => {
                    let base = match relative.get("baseUri") {
                        Some(Value::String(uri)) => Some(uri.as_str()),
                        Some(Value::Object(folder)) => folder.get("uri").and_then(Value::as_str),
                        _ => None,
                    };
                    let base = base.and_then(|uri| lsp_types::Url::parse(uri).ok()?.to_file_path().ok());
                    let pattern = relative.get("pattern").and_then(Value::as_str);
                    match (pattern, base) {
                        (Some(pattern), Some(base)) => (pattern, Some(std::fs::canonicalize(&base).unwrap_or(base))),
                        _ => {
                            return Err(WatchError::BadPattern {
                                pattern: Value::Object(relative.clone()).to_string(),
                                message: "a RelativePattern needs a file baseUri and a pattern".into(),
                            });
                        }
                    }
                }
                other => {
                    return Err(WatchError::BadPattern {
                        pattern: other.to_string(),
                        message: "neither a string nor a RelativePattern".into(),
                    });
                }
            };
            parsed.push(Watcher { glob: compile(pattern)?, base, kind });
        }
        self.registrations.insert(id.to_owned(), parsed);
        Ok(())
    }

    /// Drops the registration `id`; whether it was kept.
    pub fn unregister(&mut self, id: &str) -> bool {
        self.registrations.remove(id).is_some()
    }

    /// Whether the server registered any watcher (else filepuff's default applies: files of the
    /// server's languages).
    pub fn is_empty(&self) -> bool {
        self.registrations.is_empty()
    }

    /// Whether a change of kind `typ` to `path` (absolute, canonical) matches a registered
    /// watcher. `root` is the server's project root (canonical), for plain relative patterns.
    pub fn wants(&self, path: &Path, typ: FileChangeType, root: &Path) -> bool {
        let bit = match typ {
            FileChangeType::CREATED => 1,
            FileChangeType::CHANGED => 2,
            FileChangeType::DELETED => 4,
            _ => return false,
        };
        self.registrations.values().flatten().any(|watcher| {
            watcher.kind & bit != 0
                && match &watcher.base {
                    Some(base) => path.strip_prefix(base).is_ok_and(|relative| watcher.glob.is_match(relative)),
                    None => {
                        watcher.glob.is_match(path)
                            || path.strip_prefix(root).is_ok_and(|relative| watcher.glob.is_match(relative))
                    }
                }
        })
    }
}

/// A glob in the spec's syntax: `*` and `?` stay within a path segment.
fn compile(pattern: &str) -> Result<GlobMatcher, WatchError> {
    let glob: Result<Glob, _> = GlobBuilder::new(pattern).literal_separator(true).build();
    glob.map(|g| g.compile_matcher())
        .map_err(|err| WatchError::BadPattern { pattern: pattern.to_owned(), message: err.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CREATED: FileChangeType = FileChangeType::CREATED;
    const CHANGED: FileChangeType = FileChangeType::CHANGED;
    const DELETED: FileChangeType = FileChangeType::DELETED;

    #[test]
    fn patterns_and_kinds_match_as_the_spec_says() {
        let root = Path::new("/w");
        let mut watched = WatchedFiles::default();
        watched
            .register(
                "a",
                &json!({ "watchers": [
                    { "globPattern": "**/*.{go,mod,sum,work}" },
                    { "globPattern": "**/pyrightconfig.json", "kind": 2 },
                    { "globPattern": "*.toml", "kind": 5 },
                    { "globPattern": { "baseUri": "file:///w/sub", "pattern": "src/**/*.h" }, "kind": 4 },
                    { "globPattern": { "baseUri": { "uri": "file:///w/cfg", "name": "cfg" }, "pattern": "x?.json" } },
                ] }),
            )
            .unwrap();
        let table: &[(&str, FileChangeType, bool)] = &[
            ("/w/go.mod", CHANGED, true),
            ("/w/a/b/main.go", CREATED, true),
            ("/w/go.work", DELETED, true),
            ("/w/main.py", CHANGED, false),
            ("/w/pyrightconfig.json", CHANGED, true),
            ("/w/deep/pyrightconfig.json", CHANGED, true),
            ("/w/pyrightconfig.json", CREATED, false),
            ("/w/ruff.toml", CREATED, true),
            ("/w/ruff.toml", CHANGED, false),
            ("/w/a/ruff.toml", DELETED, false),
            ("/w/sub/src/a/b.h", DELETED, true),
            ("/w/sub/src/b.h", DELETED, true),
            ("/w/sub/src/b.h", CHANGED, false),
            ("/w/src/b.h", DELETED, false),
            ("/w/cfg/x1.json", CREATED, true),
            ("/w/cfg/x12.json", CREATED, false),
            ("/w/cfg/d/x1.json", CREATED, false),
        ];
        for (path, typ, expected) in table {
            assert_eq!(watched.wants(Path::new(path), *typ, root), *expected, "{path} {typ:?}");
        }
    }

    #[test]
    fn unregister_removes_only_that_registration() {
        let root = Path::new("/w");
        let mut watched = WatchedFiles::default();
        assert!(watched.is_empty());
        watched.register("one", &json!({ "watchers": [{ "globPattern": "**/go.mod" }] })).unwrap();
        watched.register("two", &json!({ "watchers": [{ "globPattern": "**/*.py" }] })).unwrap();
        assert!(watched.unregister("one"));
        assert!(!watched.unregister("one"));
        assert!(!watched.wants(Path::new("/w/go.mod"), CHANGED, root));
        assert!(watched.wants(Path::new("/w/a.py"), CHANGED, root));
        assert!(watched.unregister("two"));
        assert!(watched.is_empty());
    }

    #[test]
    fn malformed_registrations_are_refused_and_change_nothing() {
        let mut watched = WatchedFiles::default();
        assert!(matches!(watched.register("x", &json!({})), Err(WatchError::NoWatchers)));
        let bad = [
            json!({ "watchers": [{ "globPattern": "{a,b" }] }),
            json!({ "watchers": [{ "globPattern": 3 }] }),
            json!({ "watchers": [{ "globPattern": { "baseUri": "https://x/", "pattern": "*" } }] }),
        ];
        for options in bad {
            assert!(matches!(watched.register("x", &options), Err(WatchError::BadPattern { .. })), "{options}");
        }
        assert!(watched.is_empty());
    }
}
