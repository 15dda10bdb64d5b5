//! The one walker: `ignore`'s parallel walker with the workspace's `[walk]` settings (ignore
//! files, hidden files, symlinks, `[walk] exclude`, thread count) and a call's
//! [`WalkOptions`], over the roots a call's paths give. Searches, structural search, the graph
//! index (through `visit.rs`), the file index, the local listings and the languages `filepuff lsp`
//! starts servers for ([`workspace_languages`]) all walk through here.
//!
//! `[walk] exclude` entries are gitignore lines, rooted at the workspace root and read in
//! order: `vendor/` excludes every directory named `vendor`, `/build/` only the top one,
//! `*.min.js` those files anywhere, and `!pattern` re-includes what an earlier line excluded —
//! unless a parent directory of it is excluded, which, as in git, is not entered at all. An
//! excluded directory given as a walk root itself is still walked (as ripgrep searches a path
//! it is given).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::Types;

use super::SearchError;
use crate::workspace::{ResolvedPath, Workspace};

/// Per-call changes to the workspace's walk (`[walk]` in `filepuff.toml`).
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Do not honour `.gitignore`, `.ignore` and git's exclude files (ripgrep `--no-ignore`).
    /// `[walk] exclude` still applies.
    pub no_ignore: bool,
    /// Visit hidden files; `None` keeps `[walk] hidden`.
    pub hidden: Option<bool>,
    /// ripgrep-style globs relative to the workspace root: `pat` keeps only matching files
    /// (directories are still entered), `!pat` excludes.
    pub globs: Vec<String>,
    /// Directory names (or root-relative directory paths) not to enter.
    pub exclude_dirs: Vec<String>,
    /// Deepest level visited below each root (the root is depth 0); `None` for no limit.
    pub max_depth: Option<usize>,
}

impl WalkOptions {
    /// This call's globs and excluded directories as `ignore` overrides.
    ///
    /// Errors: [`SearchError::InvalidGlob`] naming the glob.
    pub(crate) fn overrides(&self, workspace: &Workspace) -> Result<Override, SearchError> {
        let mut builder = OverrideBuilder::new(workspace.root());
        for glob in &self.globs {
            builder.add(glob).map_err(|err| invalid_glob(glob, &err))?;
        }
        for dir in &self.exclude_dirs {
            let dir = dir.trim_matches('/');
            if dir.is_empty() {
                continue;
            }
            builder.add(&format!("!{dir}/")).map_err(|err| invalid_glob(dir, &err))?;
        }
        builder.build().map_err(|err| invalid_glob("", &err))
    }
}

fn invalid_glob(glob: &str, err: &ignore::Error) -> SearchError {
    SearchError::InvalidGlob { glob: glob.to_owned(), message: err.to_string() }
}

/// `[walk] exclude` as one gitignore matcher (see the module doc); empty when nothing is
/// excluded.
#[derive(Clone, Default)]
pub(crate) struct Exclude {
    matcher: Option<Arc<Gitignore>>,
}

impl Exclude {
    /// The matcher of `workspace`'s `[walk] exclude`.
    ///
    /// Errors: [`SearchError::InvalidGlob`] naming the first entry that is not a valid
    /// gitignore line.
    pub(crate) fn new(workspace: &Workspace) -> Result<Exclude, SearchError> {
        Exclude::from_lines(workspace.root(), &workspace.config().walk.exclude)
    }

    fn from_lines(root: &Path, lines: &[String]) -> Result<Exclude, SearchError> {
        if lines.is_empty() {
            return Ok(Exclude::default());
        }
        let mut builder = GitignoreBuilder::new(root);
        // As for the call's globs (and ripgrep's `-g`): an unclosed `[` is a mistake to report,
        // not a literal (write `\[` for one).
        builder.allow_unclosed_class(false);
        for line in lines {
            builder.add_line(None, line).map_err(|err| invalid_glob(line, &err))?;
        }
        let matcher = builder.build().map_err(|err| invalid_glob("", &err))?;
        Ok(Exclude { matcher: Some(Arc::new(matcher)) })
    }

    /// Whether `path` (under the workspace root) is excluded by its own name; its parents are
    /// not looked at (the walk never enters an excluded directory).
    pub(crate) fn excludes(&self, path: &Path, is_dir: bool) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.matched(path, is_dir).is_ignore())
    }

    /// Whether the walk from `root` would skip `path`: it, or a directory between `root`
    /// (which is walked whatever it is) and it, is excluded.
    pub(crate) fn excludes_below(&self, root: &Path, path: &Path) -> bool {
        let Some(matcher) = &self.matcher else { return false };
        if matcher.matched(path, false).is_ignore() {
            return true;
        }
        path.ancestors()
            .skip(1)
            .take_while(|dir| *dir != root && dir.starts_with(root))
            .any(|dir| matcher.matched(dir, true).is_ignore())
    }
}

/// The parallel walker over `roots` with the workspace's walk settings changed by `options`;
/// `types` selects ripgrep file types. `.git` is never entered.
///
/// Errors: [`SearchError::InvalidGlob`] from `[walk] exclude` or the call's globs.
pub(crate) fn walk_with(
    workspace: &Workspace,
    roots: &[PathBuf],
    types: Option<Types>,
    options: &WalkOptions,
) -> Result<WalkBuilder, SearchError> {
    let config = workspace.config();
    let exclude = Exclude::new(workspace)?;
    let mut walk = WalkBuilder::new(&roots[0]);
    for root in &roots[1..] {
        walk.add(root);
    }
    let threads = match config.search.threads {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    };
    walk.hidden(!options.hidden.unwrap_or(config.walk.hidden))
        .require_git(config.walk.require_git)
        .follow_links(config.walk.follow_symlinks)
        .overrides(options.overrides(workspace)?)
        .threads(threads)
        .max_depth(options.max_depth)
        .filter_entry(move |entry| {
            entry.file_name() != ".git"
                && !exclude.excludes(entry.path(), entry.file_type().is_some_and(|t| t.is_dir()))
        });
    if options.no_ignore {
        walk.git_ignore(false).git_global(false).git_exclude(false).ignore(false).parents(false);
    }
    if let Some(types) = types {
        walk.types(types);
    }
    Ok(walk)
}

/// The languages of the workspace's files, each with the first file found of it: what
/// `filepuff lsp` starts servers for. The workspace's walk (ignore files, `[walk] exclude`,
/// hidden files as configured) down to `max_depth` levels, stopping after `max_files` files.
///
/// Errors: [`SearchError::InvalidGlob`] from `[walk] exclude`.
pub fn workspace_languages(
    workspace: &Workspace,
    max_depth: usize,
    max_files: usize,
) -> Result<Vec<(crate::documents::Language, PathBuf)>, SearchError> {
    let options = WalkOptions { max_depth: Some(max_depth), ..WalkOptions::default() };
    let walk = walk_with(workspace, &[workspace.root().to_path_buf()], None, &options)?;
    let mut found: Vec<(crate::documents::Language, PathBuf)> = Vec::new();
    for entry in walk.build().flatten().take(max_files) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(language) = crate::documents::Language::from_path(entry.path())
            && !found.iter().any(|(known, _)| *known == language)
        {
            found.push((language, entry.path().to_path_buf()));
        }
    }
    Ok(found)
}

/// The walk's starting points: the root when none are given; otherwise the given paths without
/// duplicates and without paths inside another given path (each file is visited once).
pub(crate) fn walk_roots(workspace: &Workspace, paths: &[ResolvedPath]) -> Vec<PathBuf> {
    if paths.is_empty() {
        return vec![workspace.root().to_path_buf()];
    }
    let mut sorted: Vec<&Path> = paths.iter().map(|p| p.absolute.as_path()).collect();
    sorted.sort();
    let mut roots: Vec<PathBuf> = Vec::new();
    for path in sorted {
        if !roots.iter().any(|kept| path.starts_with(kept)) {
            roots.push(path.to_path_buf());
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exclude(lines: &[&str]) -> Exclude {
        Exclude::from_lines(Path::new("/w"), &lines.iter().map(|l| l.to_string()).collect::<Vec<_>>()).unwrap()
    }

    /// `[walk] exclude` entries are gitignore lines: (entries, path, is a directory, excluded).
    #[test]
    fn exclude_entries_follow_gitignore() {
        let cases: &[(&[&str], &str, bool, bool)] = &[
            (&["vendor/"], "/w/vendor", true, true),
            (&["vendor/"], "/w/a/vendor", true, true),
            (&["vendor/"], "/w/vendor", false, false), // a file named vendor: `/` means directories
            (&["/build/"], "/w/build", true, true),
            (&["/build/"], "/w/a/build", true, false), // anchored to the root
            (&["*.min.js"], "/w/a/b/x.min.js", false, true),
            (&["*.min.js"], "/w/a/b/x.js", false, false),
            // A later `!` line re-includes what an earlier one excluded.
            (&["core/", "!/src/core/"], "/w/src/core", true, false),
            (&["core/", "!/src/core/"], "/w/lib/core", true, true),
            (&["/src/*/", "!/src/core/"], "/w/src/core", true, false),
            (&["/src/*/", "!/src/core/"], "/w/src/util", true, true),
            (&["*.go", "!keep.go"], "/w/a/keep.go", false, false),
            (&["*.go", "!keep.go"], "/w/a/drop.go", false, true),
            // Order matters: the last matching line wins.
            (&["!/src/core/", "core/"], "/w/src/core", true, true),
            (&["# a comment", ""], "/w/x", false, false),
            (&[], "/w/vendor", true, false),
        ];
        for (lines, path, is_dir, expected) in cases {
            assert_eq!(exclude(lines).excludes(Path::new(path), *is_dir), *expected, "{lines:?} {path}");
        }
    }

    #[test]
    fn excluded_parents_exclude_what_is_below_them_but_not_the_walk_root() {
        let rules = exclude(&["vendor/", "!/vendor/keep.go"]);
        let root = Path::new("/w");
        assert!(rules.excludes_below(root, Path::new("/w/vendor/a/x.go")));
        // As in git: a file cannot be re-included when its directory is excluded.
        assert!(rules.excludes_below(root, Path::new("/w/vendor/keep.go")));
        assert!(!rules.excludes_below(root, Path::new("/w/src/x.go")));
        assert!(!rules.excludes_below(Path::new("/w/vendor"), Path::new("/w/vendor/a.go")));
    }

    #[test]
    fn an_invalid_exclude_entry_is_named() {
        let err = Exclude::from_lines(Path::new("/w"), &["ok/".to_owned(), "bad[".to_owned()]).err().unwrap();
        assert!(matches!(&err, SearchError::InvalidGlob { glob, .. } if glob == "bad["), "{err:?}");
    }

    /// A workspace with Go files in `src/core`, `src/util` and `lib/core` and `[walk] exclude`
    /// set to `lines`.
    fn engine(lines: &[&str]) -> (tempfile::TempDir, crate::engine::Engine) {
        let dir = tempfile::tempdir().unwrap();
        for file in ["src/core/a.go", "src/util/b.go", "lib/core/c.go", "main.go"] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "package p\n\nfunc F() error { return nil }\n").unwrap();
        }
        let mut config = crate::workspace::Config::default();
        config.walk.exclude = lines.iter().map(|l| l.to_string()).collect();
        let workspace = Workspace::with_config(dir.path(), config).unwrap();
        (dir, crate::engine::Engine::new(workspace))
    }

    /// Files each walk-based search finds, root-relative and sorted.
    fn found(engine: &crate::engine::Engine) -> [Vec<String>; 3] {
        let workspace = engine.workspace();
        let roots = [workspace.root().to_path_buf()];
        let mut text = Vec::new();
        let request = crate::search::SearchRequest {
            pattern: "func F".into(),
            regex: false,
            ignore_case: false,
            paths: Vec::new(),
            file_types: Vec::new(),
            context_lines: 0,
            max_results: 100,
            max_line_chars: 100,
        };
        for file in crate::search::search(workspace, engine.documents(), &request).unwrap().files {
            text.push(file.path.relative);
        }
        let query = crate::syntax::pattern::StructuralQuery::new("func $NAME() error { $$$ }", Language::Go).unwrap();
        let keep = |_: &crate::syntax::pattern::RawMatch| true;
        let request = crate::search::structural::StructuralRequest {
            query: &query,
            paths: Vec::new(),
            keep: &keep,
            max_results: 100,
        };
        let structural = crate::search::structural::search(engine, &request).unwrap();
        let structural: Vec<String> = structural.files.into_iter().map(|f| f.path.relative).collect();
        let listed = parking_lot::Mutex::new(Vec::new());
        crate::search::for_each_file(workspace, engine.documents(), &roots, &|_, _| true, |path, _| {
            listed.lock().push(workspace.resolved_from_walk(path).unwrap().relative);
            true
        })
        .unwrap();
        let mut listed = listed.into_inner();
        listed.sort();
        [text, structural, listed]
    }

    use crate::documents::Language;

    #[test]
    fn every_walk_reads_exclude_as_gitignore_lines() {
        let all = ["lib/core/c.go", "main.go", "src/core/a.go", "src/util/b.go"];
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &all),
            (&["core/"], &["main.go", "src/util/b.go"]),
            (&["core/", "!/src/core/"], &["main.go", "src/core/a.go", "src/util/b.go"]),
            (&["/src/*/", "!/src/core/"], &["lib/core/c.go", "main.go", "src/core/a.go"]),
            (&["*.go", "!main.go"], &["main.go"]),
        ];
        for (lines, expected) in cases {
            let (_dir, engine) = engine(lines);
            for (walk, files) in ["search", "structural", "files"].iter().zip(found(&engine)) {
                assert_eq!(files, *expected, "{walk} with exclude {lines:?}");
            }
        }
    }

    #[test]
    fn an_unsaved_buffer_in_an_excluded_directory_is_left_out() {
        let (dir, engine) = engine(&["core/", "!/src/core/"]);
        for (file, version) in [("lib/core/new.go", 1), ("src/core/new.go", 2)] {
            let id = crate::workspace::DocumentId::from_canonical(&dir.path().canonicalize().unwrap().join(file));
            engine.documents().open(id, "package p\n\nfunc F() error { return nil }\n", version, "go".into());
        }
        for files in found(&engine) {
            assert!(
                files.contains(&"src/core/new.go".to_owned()) && !files.contains(&"lib/core/new.go".to_owned()),
                "{files:?}"
            );
        }
    }

    #[test]
    fn an_invalid_exclude_entry_is_the_same_error_from_every_walk() {
        let (_dir, engine) = engine(&["vendor/", "src/[oops"]);
        let workspace = engine.workspace();
        let is_invalid =
            |err: &SearchError| matches!(err, SearchError::InvalidGlob { glob, .. } if glob == "src/[oops");
        let roots = [workspace.root().to_path_buf()];
        let err =
            crate::search::for_each_file(workspace, engine.documents(), &roots, &|_, _| true, |_, _| true).unwrap_err();
        assert!(is_invalid(&err), "{err:?}");
        let query = crate::syntax::pattern::StructuralQuery::new("func $NAME() error { $$$ }", Language::Go).unwrap();
        let keep = |_: &crate::syntax::pattern::RawMatch| true;
        let request = crate::search::structural::StructuralRequest {
            query: &query,
            paths: Vec::new(),
            keep: &keep,
            max_results: 9,
        };
        let err = crate::search::structural::search(&engine, &request).unwrap_err();
        assert!(is_invalid(&err), "{err:?}");
        assert!(is_invalid(&engine.file_index().err().unwrap()));
        let store = crate::graph::GraphStore::open(&workspace.root().join(".state/graph.db")).unwrap();
        let options =
            crate::graph::index::IndexOptions { calls: crate::graph::calls::CallsMode::Syntax, ..Default::default() };
        let err = crate::graph::index::index(&store, workspace, engine.documents(), engine.backends(), &[], &options)
            .unwrap_err();
        assert!(matches!(&err, crate::graph::GraphError::Walk(walk) if is_invalid(walk)), "{err:?}");
        // One tool error for all of them: SEARCH_INVALID_GLOB naming the entry.
        let tool = crate::tools::graph::graph_error(err, &engine);
        assert_eq!((tool.code, tool.name.as_str()), (2003, "SEARCH_INVALID_GLOB"));
    }

    /// The languages `filepuff lsp` starts servers for come from the same walk: an excluded
    /// directory's files start nothing.
    #[test]
    fn workspace_languages_follow_the_walk() {
        let (dir, all) = engine(&[]);
        std::fs::write(dir.path().join("lib/core/tool.py"), "x = 1\n").unwrap();
        let names = |found: Vec<(crate::documents::Language, PathBuf)>| {
            let mut names: Vec<&str> = found.iter().map(|(language, _)| language.name()).collect();
            names.sort();
            names
        };
        assert_eq!(names(workspace_languages(all.workspace(), 8, 1000).unwrap()), ["go", "python"]);
        let (dir, excluding) = engine(&["lib/"]);
        std::fs::write(dir.path().join("lib/core/tool.py"), "x = 1\n").unwrap();
        assert_eq!(names(workspace_languages(excluding.workspace(), 8, 1000).unwrap()), ["go"]);
    }
}
