//! Sandbox tests: every way out of the root we could think of, as a table.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;

use super::*;

struct Fixture {
    _outside: tempfile::TempDir,
    _root: tempfile::TempDir,
    workspace: Workspace,
    outside: PathBuf,
}

/// root/ with src/lib.rs, a symlink `out` to a sibling directory, `out_file` to a file outside,
/// `inner` to src/ (allowed), and `dangling` to a missing path outside.
fn fixture() -> Fixture {
    let outside_dir = tempfile::tempdir().unwrap();
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path();
    let outside = outside_dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    symlink(&outside, root.join("out")).unwrap();
    symlink(outside.join("secret.txt"), root.join("out_file")).unwrap();
    symlink(root.join("src"), root.join("inner")).unwrap();
    symlink(outside.join("missing/deeper"), root.join("dangling")).unwrap();
    let workspace = Workspace::with_config(root, Config::default()).unwrap();
    Fixture { _outside: outside_dir, _root: root_dir, workspace, outside }
}

#[derive(Debug)]
enum Expect {
    OutsideRoot,
    SymlinkEscape,
    InvalidPath,
    UnsupportedScheme,
    InvalidUri,
}

#[test]
fn escape_attempts_are_refused_with_typed_errors() {
    let fx = fixture();
    let root = fx.workspace.root().display().to_string();
    let outside = fx.outside.display().to_string();
    let root_name = fx.workspace.root().file_name().unwrap().to_string_lossy().to_string();
    let cases: Vec<(String, Expect)> = vec![
        ("..".into(), Expect::OutsideRoot),
        ("../".into(), Expect::OutsideRoot),
        ("../etc/passwd".into(), Expect::OutsideRoot),
        ("src/../../etc/passwd".into(), Expect::OutsideRoot),
        ("src/./../../..".into(), Expect::OutsideRoot),
        (format!("../{root_name}-sibling/x"), Expect::OutsideRoot),
        ("/etc/passwd".into(), Expect::OutsideRoot),
        (format!("{root}/../x"), Expect::OutsideRoot),
        (format!("{outside}/secret.txt"), Expect::OutsideRoot),
        ("/".into(), Expect::OutsideRoot),
        ("out/secret.txt".into(), Expect::SymlinkEscape),
        ("out".into(), Expect::SymlinkEscape),
        ("out_file".into(), Expect::SymlinkEscape),
        ("out/new-file.txt".into(), Expect::SymlinkEscape),
        ("dangling".into(), Expect::SymlinkEscape),
        ("src/lib.rs\0.txt".into(), Expect::InvalidPath),
        ("\0".into(), Expect::InvalidPath),
        ("".into(), Expect::InvalidPath),
        ("file:///etc/passwd".into(), Expect::OutsideRoot),
        (format!("file://{root}/../x"), Expect::OutsideRoot),
        (format!("file://{root}/%2e%2e/x"), Expect::OutsideRoot),
        (format!("file://{root}/src/lib.rs%00.txt"), Expect::InvalidPath),
        (format!("file://{root}/out/secret.txt"), Expect::SymlinkEscape),
        (format!("file://evil.example.com{root}/src/lib.rs"), Expect::InvalidUri),
        (format!("file://{root}/src/lib.rs?x=1"), Expect::InvalidUri),
        (format!("file://{root}/src/lib.rs#frag"), Expect::InvalidUri),
        ("file:relative/path".into(), Expect::OutsideRoot),
        ("http://localhost/src/lib.rs".into(), Expect::UnsupportedScheme),
        ("untitled://Untitled-1".into(), Expect::UnsupportedScheme),
        ("jdt://contents/x.class".into(), Expect::UnsupportedScheme),
        ("FILE:///etc/passwd".into(), Expect::OutsideRoot),
    ];
    assert!(cases.len() >= 15);
    for (input, expect) in cases {
        let result = fx.workspace.resolve(&input);
        let ok = matches!(
            (&result, &expect),
            (Err(WorkspaceError::OutsideRoot { .. }), Expect::OutsideRoot)
                | (Err(WorkspaceError::SymlinkEscape { .. }), Expect::SymlinkEscape)
                | (Err(WorkspaceError::InvalidPath { .. }), Expect::InvalidPath)
                | (Err(WorkspaceError::UnsupportedScheme { .. }), Expect::UnsupportedScheme)
                | (Err(WorkspaceError::InvalidUri { .. }), Expect::InvalidUri)
        );
        assert!(ok, "input {input:?}: expected {expect:?}, got {result:?}");
    }
}

#[test]
fn paths_inside_the_root_resolve() {
    let fx = fixture();
    let root = fx.workspace.root().to_path_buf();
    let cases: Vec<(String, &str)> = vec![
        ("src/lib.rs".into(), "src/lib.rs"),
        ("./src/lib.rs".into(), "src/lib.rs"),
        ("src/../src/lib.rs".into(), "src/lib.rs"),
        ("src//lib.rs".into(), "src/lib.rs"),
        (".".into(), ""),
        (format!("{}/src/lib.rs", root.display()), "src/lib.rs"),
        (format!("file://{}/src/lib.rs", root.display()), "src/lib.rs"),
        (format!("file://localhost{}/src/lib.rs", root.display()), "src/lib.rs"),
        (format!("file://{}/src/%6Cib.rs", root.display()), "src/lib.rs"),
        // A symlink that stays inside the root resolves to its target.
        ("inner/lib.rs".into(), "src/lib.rs"),
        // Not-yet-existing files are fine (edits create them).
        ("src/new/dir/file.go".into(), "src/new/dir/file.go"),
        // `name:rest` without `//` is a legal Unix file name, not a URI.
        ("notes:today.md".into(), "notes:today.md"),
    ];
    for (input, relative) in cases {
        let resolved = fx.workspace.resolve(&input).unwrap_or_else(|err| panic!("{input:?}: {err}"));
        assert_eq!(resolved.relative, relative, "input {input:?}");
        assert_eq!(resolved.absolute, root.join(relative), "input {input:?}");
    }
}

#[test]
fn uri_round_trip_percent_encodes() {
    let fx = fixture();
    let resolved = fx.workspace.resolve("src/a file#1.rs").unwrap();
    let uri = fx.workspace.uri_for(&resolved);
    assert!(uri.as_str().ends_with("/src/a%20file%231.rs"), "{uri}");
    assert_eq!(fx.workspace.resolve_uri(&uri).unwrap(), resolved);
}

#[test]
fn only_uris_the_parser_would_leave_alone_skip_it() {
    assert_eq!(plain_file_uri_path("file:///w/src/a_b-c.go"), Some("/w/src/a_b-c.go"));
    assert_eq!(plain_file_uri_path("file:///w/@types/x+y,z=1;2:3.d.ts"), Some("/w/@types/x+y,z=1;2:3.d.ts"));
    for parsed in [
        "file:///w/a%20b.go",
        "file:///w/../etc/passwd",
        "file:///w/./a.go",
        "file:///w/..",
        "file://localhost/w/a.go",
        "file://host/w/a.go",
        "file:///w/a.go?x",
        "file:///w/a.go#x",
        "file:///w/a\\b.go",
        "file:///w/é.go",
        "file:///w/a b.go",
        "file:///C|/a.go",
        "FILE:///w/a.go",
        "file:w/a.go",
    ] {
        assert_eq!(plain_file_uri_path(parsed), None, "{parsed}");
    }
    // Where it applies, the answer is the parser's.
    let fx = fixture();
    let uri = fx.workspace.uri_for(&fx.workspace.resolve("src/lib.rs").unwrap());
    let mut resolver = fx.workspace.resolver();
    assert!(plain_file_uri_path(uri.as_str()).is_some(), "{uri}");
    assert_eq!(resolver.resolve_uri_str_with_lstat(uri.as_str()).unwrap().0, fx.workspace.resolve_uri(&uri).unwrap());
    let err = resolver.resolve_uri_str_with_lstat("file://[").unwrap_err();
    assert!(matches!(err, WorkspaceError::InvalidUri { .. }), "{err:?}");
}

#[test]
fn root_must_be_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    assert!(matches!(Workspace::open(&file), Err(WorkspaceError::InvalidRoot { .. })));
    assert!(matches!(Workspace::open(&dir.path().join("missing")), Err(WorkspaceError::InvalidRoot { .. })));
}

#[test]
fn invalid_config_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(config::CONFIG_FILE_NAME), "[search]\nmax_results = \"many\"\n").unwrap();
    let err = Workspace::open(dir.path()).unwrap_err();
    assert!(matches!(err, WorkspaceError::Config(_)), "{err}");
}

/// Every spelling of one file, from an agent, an editor or a server, is one `DocumentId`:
/// through a symlink to the root, a symlinked directory inside it, `..`, percent-encoding,
/// spaces and non-ASCII names.
#[test]
fn every_spelling_of_a_file_is_one_document_id() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let real = base.join("réal root");
    std::fs::create_dir_all(real.join("pkg/ünï cödé")).unwrap();
    let file = real.join("pkg/ünï cödé/main 😀.go");
    std::fs::write(&file, "package main\n").unwrap();
    symlink(&real, base.join("link")).unwrap();
    symlink(real.join("pkg"), real.join("pkglink")).unwrap();
    let workspace = Workspace::with_config(&base.join("link"), Config::default()).unwrap();
    assert_eq!(workspace.root(), real);
    let expected = DocumentId::from_canonical(&file);
    let link = base.join("link");
    let uri = |path: &Path| url::Url::from_file_path(path).unwrap();
    let spellings: Vec<String> = vec![
        "pkg/ünï cödé/main 😀.go".into(),
        "./pkg/../pkg/ünï cödé/main 😀.go".into(),
        "pkglink/ünï cödé/main 😀.go".into(),
        file.display().to_string(),
        link.join("pkg/ünï cödé/main 😀.go").display().to_string(),
        link.join("pkglink/ünï cödé/main 😀.go").display().to_string(),
        uri(&file).to_string(),
        uri(&link.join("pkg/ünï cödé/main 😀.go")).to_string(),
        uri(&link.join("pkglink/x/../ünï cödé/main 😀.go")).to_string(),
        // Over-encoded: every byte of the name percent-encoded.
        format!("file://{}/main%20%F0%9F%98%80%2Ego", uri(&real.join("pkg/ünï cödé")).path()),
        format!("file://localhost{}", uri(&link.join("pkg/ünï cödé/main 😀.go")).path()),
    ];
    for spelling in &spellings {
        let resolved = workspace.resolve(spelling).unwrap_or_else(|err| panic!("{spelling}: {err}"));
        assert_eq!(resolved.id(), expected, "{spelling}");
        assert_eq!(resolved.relative, "pkg/ünï cödé/main 😀.go", "{spelling}");
        if spelling.starts_with("file:") {
            let uri = url::Url::parse(spelling).unwrap();
            assert_eq!(workspace.document_id_for_uri(&uri).unwrap(), expected, "{spelling}");
        }
    }
    assert_eq!(expected.uri(), uri(&file));
    assert_eq!(workspace.relative(&expected).as_deref(), Some("pkg/ünï cödé/main 😀.go"));
    // A file that does not exist yet, through the link, is where it would be created.
    let new = workspace.resolve(&link.join("pkg/new.go").display().to_string()).unwrap();
    assert_eq!(new.id(), DocumentId::from_canonical(&real.join("pkg/new.go")));
    // Outside the root: an editor may open it (an id), an agent may not (a typed error).
    let outside = base.join("outside.h");
    std::fs::write(&outside, "int x;\n").unwrap();
    assert_eq!(workspace.document_id_for_uri(&uri(&outside)).unwrap(), DocumentId::from_canonical(&outside));
    assert_eq!(workspace.relative(&DocumentId::from_canonical(&outside)), None);
    assert!(matches!(workspace.resolve(&outside.display().to_string()), Err(WorkspaceError::OutsideRoot { .. })));
    let untitled = url::Url::parse("untitled:Untitled-1").unwrap();
    assert!(matches!(workspace.document_id_for_uri(&untitled), Err(WorkspaceError::UnsupportedScheme { .. })));
}

/// A resolver hands out the `lstat` it took only when it was of the resolved file itself: a
/// file reached through a symlinked directory gets it (its own entry is no link), a symlink to a
/// file does not (its `lstat` was of the link), nor a missing file.
#[test]
fn a_resolvers_lstat_is_of_the_resolved_file_or_none() {
    use std::os::unix::fs::MetadataExt;
    let fx = fixture();
    let root = fx.workspace.root().to_path_buf();
    symlink(root.join("src/lib.rs"), root.join("lib_link.rs")).unwrap();
    let mut resolver = fx.workspace.resolver();
    let uri = |relative: &str| url::Url::from_file_path(root.join(relative)).unwrap();
    let real_ino = std::fs::metadata(root.join("src/lib.rs")).unwrap().ino();
    for direct in ["src/lib.rs", "inner/lib.rs"] {
        let (resolved, lstat) = resolver.resolve_uri_with_lstat(&uri(direct)).unwrap();
        assert_eq!(resolved.relative, "src/lib.rs");
        let lstat = lstat.unwrap_or_else(|| panic!("{direct}: no lstat"));
        assert!(lstat.file_type().is_file() && lstat.ino() == real_ino, "{direct}");
    }
    let (resolved, lstat) = resolver.resolve_uri_with_lstat(&uri("lib_link.rs")).unwrap();
    assert_eq!((resolved.relative.as_str(), lstat.is_none()), ("src/lib.rs", true));
    let (_, lstat) = resolver.resolve_uri_with_lstat(&uri("src/missing.rs")).unwrap();
    assert!(lstat.is_none());
    // An agent's path, as a path or a URI, the same.
    for input in ["src/lib.rs", "inner/lib.rs", uri("src/lib.rs").as_str()] {
        let (resolved, lstat) = fx.workspace.resolve_with_lstat(input).unwrap();
        assert_eq!(resolved.relative, "src/lib.rs");
        assert!(lstat.is_some_and(|m| m.file_type().is_file() && m.ino() == real_ino), "{input}");
    }
    for input in ["lib_link.rs", "src/missing.rs"] {
        assert!(fx.workspace.resolve_with_lstat(input).unwrap().1.is_none(), "{input}");
    }
}

/// A relative path reads as its components joined by `/`, whatever its spelling; a clean one
/// (the usual case) is copied as it is.
#[test]
fn relative_strings_join_the_components() {
    for (path, expected) in [
        ("go/packages/packages.go", "go/packages/packages.go"),
        ("", ""),
        ("a//b/", "a/b"),
        ("./a/./b", "./a/b"),
        ("a/../b", "a/../b"),
        ("日本/😀.go", "日本/😀.go"),
    ] {
        assert_eq!(relative_string(Path::new(path)), expected, "{path:?}");
    }
    let invalid = std::ffi::OsStr::from_bytes(b"a/\xff.go");
    assert_eq!(relative_string(Path::new(invalid)), "a/\u{fffd}.go");
}

/// Directories remembered across batches (`real_dirs`) are forgotten as soon as their entry
/// changes: each way of replacing `pkg/` after a batch went through it — moved away with a
/// symlink left in its place, a symlink in its parent's place, removed and made again, removed
/// for good — is seen by the very next batch, with no wait.
#[test]
fn a_directory_replaced_after_a_batch_is_seen_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = "top/pkg/main.go";
    std::fs::create_dir_all(root.join("top/pkg")).unwrap();
    std::fs::write(root.join(file), "package main\n").unwrap();
    let workspace = Workspace::with_config(&root, Config::default()).unwrap();
    let resolve = || workspace.resolver().resolve_path_with_lstat(&root.join(file), file).unwrap();
    let remembered = |relative: &str| real_dirs::global().is_some_and(|dirs| dirs.is_known(&root.join(relative)));

    assert_eq!(resolve().0.relative, file);
    // The second batch learns with its parents watched (the first did too, but check both).
    assert_eq!(resolve().0.relative, file);
    assert!(remembered("top") && remembered("top/pkg"), "ext4/tmpfs under the test's temp dir");

    // Moved, a symlink left where it was: the same inode by a new real path.
    std::fs::rename(root.join("top/pkg"), root.join("top/pkg2")).unwrap();
    symlink("pkg2", root.join("top/pkg")).unwrap();
    let (resolved, lstat) = resolve();
    assert_eq!(resolved.relative, "top/pkg2/main.go");
    assert!(lstat.is_some());
    assert!(!remembered("top/pkg"));

    // A symlink in the grandparent's place: everything below it is forgotten.
    assert_eq!(
        workspace.resolver().resolve_path_with_lstat(&root.join("top/pkg2/main.go"), "x").unwrap().0.relative,
        "top/pkg2/main.go"
    );
    std::fs::rename(root.join("top"), root.join("real_top")).unwrap();
    symlink("real_top", root.join("top")).unwrap();
    assert_eq!(resolve().0.relative, "real_top/pkg2/main.go");
    assert!(!remembered("top") && !remembered("top/pkg2"));

    // Removed and made again as a real directory: real again, and remembered again.
    std::fs::remove_file(root.join("top")).unwrap();
    std::fs::create_dir_all(root.join("top/pkg")).unwrap();
    std::fs::write(root.join(file), "package again\n").unwrap();
    assert_eq!(resolve().0.relative, file);
    assert_eq!(resolve().0.relative, file);
    assert!(remembered("top/pkg"));

    // Removed for good: the path is where it would be created, and no lstat.
    std::fs::remove_dir_all(root.join("top")).unwrap();
    let (resolved, lstat) = resolve();
    assert_eq!((resolved.relative.as_str(), lstat.is_none()), (file, true));
    assert!(!remembered("top"));
}
