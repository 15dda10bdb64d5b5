//! Property tests of the path sandbox (issue 16, "fuzzing in the project"): whatever an agent
//! sends as a path — `..` chains, symlinks out, dangling and looping links, percent-encoding,
//! `file:` URIs, NUL bytes, arbitrary Unicode — [`Workspace::resolve`] never panics and never
//! answers a path whose real location is outside the root.
//!
//! Run with more cases: `PROPTEST_CASES=5000 cargo test workspace::proptests`. A failing case is
//! saved under `proptest-regressions/` (the corpus, kept in the repository) and replayed first.

use std::os::unix::fs::symlink;
use std::path::Component;

use proptest::prelude::*;

use super::*;

/// root/ with src/lib.rs, `out` → a directory outside, `out_file` → a file outside, `inner` →
/// src/, `dangling` → a missing path outside, `loop_a` ↔ `loop_b`, `up` → `..`.
struct Sandbox {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    workspace: Workspace,
}

fn sandbox() -> Sandbox {
    let outside_dir = tempfile::tempdir().unwrap();
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path();
    let outside = outside_dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    symlink(outside, root.join("out")).unwrap();
    symlink(outside.join("secret.txt"), root.join("out_file")).unwrap();
    symlink(root.join("src"), root.join("inner")).unwrap();
    symlink(outside.join("missing/deeper"), root.join("dangling")).unwrap();
    symlink(root.join("loop_b"), root.join("loop_a")).unwrap();
    symlink(root.join("loop_a"), root.join("loop_b")).unwrap();
    symlink("..", root.join("src/up")).unwrap();
    let workspace = Workspace::with_config(root, Config::default()).unwrap();
    Sandbox { _dirs: (outside_dir, root_dir), workspace }
}

/// Path components an attacker would try, and some noise.
fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "src", "lib.rs", "..", ".", "", "out", "out_file", "inner", "dangling", "loop_a", "up", "missing",
            "secret.txt", "%2e%2e", "%2E%2e%2f", "%00", "a%20b", "~", "...", "file:", "\u{0}", "é", "😀",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z.%/\\\\:]{1,6}",
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ]
}

/// How an input starts: relative, absolute inside the root, a URI, another absolute path.
#[derive(Debug, Clone)]
enum Prefix {
    Relative,
    Root,
    RootUri,
    Slash,
    Uri,
    LocalhostUri,
    Scheme,
}

fn input() -> impl Strategy<Value = (Prefix, Vec<String>)> {
    let prefix = prop_oneof![
        Just(Prefix::Relative),
        Just(Prefix::Root),
        Just(Prefix::RootUri),
        Just(Prefix::Slash),
        Just(Prefix::Uri),
        Just(Prefix::LocalhostUri),
        Just(Prefix::Scheme),
    ];
    (prefix, prop::collection::vec(component(), 0..8))
}

fn spell(root: &Path, prefix: &Prefix, components: &[String]) -> String {
    let rest = components.join("/");
    let root = root.display();
    match prefix {
        Prefix::Relative => rest,
        Prefix::Root => format!("{root}/{rest}"),
        Prefix::RootUri => format!("file://{root}/{rest}"),
        Prefix::Slash => format!("/{rest}"),
        Prefix::Uri => format!("file:///{rest}"),
        Prefix::LocalhostUri => format!("file://localhost{root}/{rest}"),
        Prefix::Scheme => format!("http://x/{rest}"),
    }
}

/// The real location of `path`: its longest existing prefix canonicalised, the rest appended.
fn real_location(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc: PathBuf, part: &std::ffi::OsString| acc.join(part));
        }
        match (existing.file_name().map(|n| n.to_owned()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn resolve_never_panics_nor_answers_a_path_outside_the_root((prefix, components) in input()) {
        let sandbox = sandbox();
        let root = sandbox.workspace.root();
        let given = spell(root, &prefix, &components);
        let Ok(resolved) = sandbox.workspace.resolve(&given) else { return Ok(()) };
        prop_assert!(!given.contains('\0'), "a NUL byte was accepted: {given:?}");
        prop_assert!(resolved.absolute.starts_with(root), "{given:?} -> {:?}", resolved.absolute);
        prop_assert!(
            resolved.absolute.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
            "not normalised: {:?}", resolved.absolute
        );
        // Symlinks on the existing prefix (dangling ones included) do not lead out.
        let real = real_location(&resolved.absolute);
        prop_assert!(real.starts_with(root), "{given:?} -> {:?}, really {real:?}", resolved.absolute);
        let expected_relative = resolved.absolute.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        prop_assert_eq!(&resolved.relative, &expected_relative);
        // The answer is a fixed point: resolving it again names the same file (when it can be
        // spelt as a string: a percent-encoded byte may have made it invalid UTF-8).
        if let Some(spelt) = resolved.absolute.to_str() {
            let again = sandbox.workspace.resolve(spelt);
            prop_assert_eq!(again.map(|r| r.absolute).ok(), Some(resolved.absolute.clone()));
        }
    }

    #[test]
    fn resolve_never_panics_on_any_string(given in any::<String>()) {
        let sandbox = sandbox();
        if let Ok(resolved) = sandbox.workspace.resolve(&given) {
            prop_assert!(resolved.absolute.starts_with(sandbox.workspace.root()));
        }
    }
}

/// The URIs a batch is asked about: every spelling that is a `file:` URI, and the root-relative
/// ones as URIs too.
fn uris(root: &Path, inputs: &[(Prefix, Vec<String>)]) -> Vec<url::Url> {
    let mut out = Vec::new();
    for (prefix, components) in inputs {
        if let Ok(uri) = url::Url::parse(&spell(root, prefix, components))
            && uri.scheme() == "file"
        {
            out.push(uri);
        }
        if let Ok(uri) = url::Url::from_file_path(root.join(components.join("/"))) {
            out.push(uri);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn resolutions_alone_and_in_a_batch_answer_what_realpath_answers(
        inputs in prop::collection::vec(input(), 1..12)
    ) {
        let sandbox = sandbox();
        let workspace = &sandbox.workspace;
        let mut batch = workspace.resolver();
        // Twice over: the second round answers from what the first learnt.
        let uris = uris(workspace.root(), &inputs);
        for uri in uris.iter().chain(uris.iter()) {
            let by_realpath = workspace.resolve_uri_by_realpath(uri).map_err(|err| err.to_string());
            let alone = workspace.resolve_uri(uri).map_err(|err| err.to_string());
            prop_assert_eq!(&alone, &by_realpath, "{}", uri);
            prop_assert_eq!(batch.resolve_uri(uri).map_err(|err| err.to_string()), by_realpath, "{}", uri);
        }
        // As a server spells them (strings, a plain `file:///` one not parsed): the same files,
        // and an error where parsing it gives one.
        for (prefix, components) in inputs.iter().chain(inputs.iter()) {
            let spelt = spell(workspace.root(), prefix, components);
            let Ok(uri) = url::Url::parse(&spelt) else { continue };
            if uri.scheme() != "file" {
                continue;
            }
            let by_realpath = workspace.resolve_uri_by_realpath(&uri).ok();
            let as_sent = batch.resolve_uri_str_with_lstat(&spelt).map(|(resolved, _)| resolved).ok();
            prop_assert_eq!(as_sent, by_realpath, "{}", spelt);
        }
    }
}

/// A path spelt from segments an absolute or relative path may hold, normal or not.
fn spelt_path() -> impl Strategy<Value = String> {
    let segment = prop::sample::select(vec!["", ".", "..", "a", "ab", "b", "root", "rootx", "é"]);
    (any::<bool>(), prop::collection::vec(segment, 0..6), any::<bool>()).prop_map(|(absolute, segments, trailing)| {
        let mut path = segments.join("/");
        if absolute {
            path.insert(0, '/');
        }
        if trailing {
            path.push('/');
        }
        path
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_byte_comparisons_answer_what_components_answer(
        root in spelt_path(),
        joint in prop::sample::select(vec!["", "/", "//", "x", "/./", "/../"]),
        tail in spelt_path(),
        alone in spelt_path(),
    ) {
        // The workspace's root is canonical, so normal (`below_root` relies on it).
        let Some(root) = normalise_lexically(Path::new(&format!("/{root}"))) else { return Ok(()) };
        let root = root.to_string_lossy().into_owned();
        // A path spelt from the root (inside it, beside it as `/rootx`, or only lexically),
        // and one that has nothing to do with it.
        for path in [format!("{root}{joint}{tail}"), alone] {
            let (path, root) = (Path::new(&path), Path::new(&root));
            if is_lexically_normal(path) {
                let normalised = normalise_lexically(path);
                prop_assert_eq!(normalised.as_deref(), Some(path));
            }
            prop_assert_eq!(below_root(path, root), path.strip_prefix(root).ok(), "{:?} below {:?}", path, root);
        }
    }
}

/// One change to the tree of [`directories_changed_between_batches_answer_what_realpath_answers`]:
/// names are picked from a few so that changes hit what earlier batches went through.
#[derive(Debug, Clone)]
enum Change {
    /// `create_dir_all`, and a file `f` in it.
    Make(String),
    /// `rename`, a symlink to the new name left in the old one's place when `link`.
    Move { from: String, to: String, link: bool },
    /// Removes a directory (with what it holds) or a symlink.
    Remove(String),
    /// A symlink at the path to another of the tree's paths (relative to its directory).
    Link { at: String, to: String },
}

fn tree_path() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4).prop_map(|parts| parts.join("/"))
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        tree_path().prop_map(Change::Make),
        (tree_path(), tree_path(), any::<bool>()).prop_map(|(from, to, link)| Change::Move { from, to, link }),
        tree_path().prop_map(Change::Remove),
        (tree_path(), tree_path()).prop_map(|(at, to)| Change::Link { at, to }),
    ]
}

fn apply(root: &Path, change: &Change) {
    // A change the tree does not allow (a missing source, a taken name) is simply not made.
    match change {
        Change::Make(dir) => {
            if std::fs::create_dir_all(root.join(dir)).is_ok() {
                let _ = std::fs::write(root.join(dir).join("f"), "x");
            }
        }
        Change::Move { from, to, link } => {
            if !to.starts_with(&format!("{from}/")) && std::fs::rename(root.join(from), root.join(to)).is_ok() && *link
            {
                let _ = symlink(root.join(to), root.join(from));
            }
        }
        Change::Remove(path) => {
            let path = root.join(path);
            match std::fs::symlink_metadata(&path) {
                Ok(metadata) if metadata.is_dir() => drop(std::fs::remove_dir_all(&path)),
                Ok(_) => drop(std::fs::remove_file(&path)),
                Err(_) => {}
            }
        }
        Change::Link { at, to } => drop(symlink(root.join(to), root.join(at))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Directories a batch went through are remembered across batches (`real_dirs`); any
    /// change to the tree between two batches — moves, removals, symlinks swapped in — must
    /// still leave every path of the next batch where `realpath` says it is.
    #[test]
    fn directories_changed_between_batches_answer_what_realpath_answers(
        changes in prop::collection::vec(change(), 1..10)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for start in ["a/b/c", "b/a", "c"] {
            apply(&root, &Change::Make(start.to_owned()));
        }
        let workspace = Workspace::with_config(&root, Config::default()).unwrap();
        let names = ["a", "b", "c"];
        let mut files = Vec::new();
        for x in names {
            files.push(format!("{x}/f"));
            for y in names {
                files.push(format!("{x}/{y}/f"));
                for z in names {
                    files.push(format!("{x}/{y}/{z}/f"));
                }
            }
        }
        let check = |workspace: &Workspace| -> Result<(), TestCaseError> {
            // Twice: the first batch learns, the second answers from what it learnt.
            for _ in 0..2 {
                let mut batch = workspace.resolver();
                for file in &files {
                    let uri = url::Url::from_file_path(root.join(file)).unwrap();
                    let by_realpath = workspace.resolve_uri_by_realpath(&uri).map_err(|err| err.to_string());
                    prop_assert_eq!(batch.resolve_uri(&uri).map_err(|err| err.to_string()), by_realpath, "{}", file);
                }
            }
            Ok(())
        };
        check(&workspace)?;
        for change in &changes {
            apply(&root, change);
            check(&workspace)?;
        }
    }
}
