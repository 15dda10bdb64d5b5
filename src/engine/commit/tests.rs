//! `Engine::commit` routing: editor, buffer, disk; the save rule; refusals; stale bases.

use parking_lot::Mutex;
use std::sync::{Arc, Weak};

use super::*;
use crate::documents::{Encoding, Position, TextChange};
use crate::engine::Editor;
use crate::workspace::{Config, DocumentId, Workspace};

/// An editor that records what it is asked and answers as told; when it applies, it sends
/// its `didChange` back through the Engine, as a real editor does.
#[derive(Debug)]
struct FakeEditor {
    engine: Weak<Engine>,
    refuse: bool,
    asked: Mutex<Vec<(String, Vec<BufferEdit>)>>,
    approvals: Mutex<Vec<Approval>>,
}

impl Editor for FakeEditor {
    fn apply(&self, label: &str, edits: &[BufferEdit], approval: Approval) -> Result<EditorAnswer, String> {
        self.asked.lock().push((label.to_owned(), edits.to_vec()));
        self.approvals.lock().push(approval);
        if self.refuse {
            return Ok(EditorAnswer::Refused { reason: Some("the person said no".into()) });
        }
        let engine = self.engine.upgrade().ok_or("gone")?;
        for edit in edits {
            // LSP applies a TextDocumentEdit's ranges against the text before any of them:
            // send them as one didChange, last range first.
            let mut ordered = edit.edits.clone();
            ordered.sort_by_key(|e| std::cmp::Reverse(e.range.start));
            let at =
                |offset: usize| crate::documents::position::offset_to_position(&edit.before, offset, Encoding::Utf8).0;
            let changes: Vec<TextChange> = ordered
                .iter()
                .map(|e| TextChange { range: Some((at(e.range.start), at(e.range.end))), text: e.text.clone() })
                .collect();
            match edit.version {
                Some(version) => {
                    engine
                        .change_document(&edit.id, version + 1, Encoding::Utf8, &changes)
                        .map_err(|e| e.to_string())?;
                }
                // A file the editor did not have open: it opens it, then applies the edit.
                None => {
                    engine.open_document(edit.id.clone(), "go".into(), 1, &edit.before.to_string());
                    engine.change_document(&edit.id, 2, Encoding::Utf8, &changes).map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(EditorAnswer::Applied)
    }

    fn show(&self, _: &DocumentId, _: &Rope, _: Option<std::ops::Range<usize>>, _: bool) -> Result<bool, String> {
        Ok(true)
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
}

fn fixture(config: &str, editor: Option<bool>) -> (Fixture, Option<Arc<FakeEditor>>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("open.go"), "package a\n\nfunc A() {}\n").unwrap();
    std::fs::write(dir.path().join("disk.go"), "package a\n\nfunc B() {}\n").unwrap();
    let config: Config = toml::from_str(config).unwrap();
    let engine = Arc::new(Engine::new(Workspace::with_config(dir.path(), config).unwrap()));
    let fake = editor.map(|refuse| {
        let fake = Arc::new(FakeEditor {
            engine: Arc::downgrade(&engine),
            refuse,
            asked: Mutex::new(Vec::new()),
            approvals: Mutex::new(Vec::new()),
        });
        engine.attach_editor(fake.clone());
        fake
    });
    let open = engine.workspace().resolve("open.go").unwrap().id();
    engine.open_document(open, "go".into(), 3, "package a\n\n// unsaved\nfunc A() {}\n");
    (Fixture { _dir: dir, engine }, fake)
}

fn rename_a_and_b(engine: &Engine) -> Vec<FileEdit> {
    let mut out = Vec::new();
    for (file, name) in [("open.go", "func A"), ("disk.go", "func B")] {
        let id = engine.workspace().resolve(file).unwrap().id();
        let base = engine.edit_base(&id, file).unwrap();
        let text = base.text().to_string();
        let start = text.find(name).unwrap() + 5;
        out.push(FileEdit {
            id,
            shown: file.into(),
            base,
            edits: vec![ByteEdit { range: start..start + 1, text: "Renamed".into() }],
        });
    }
    out
}

fn read(fx: &Fixture, file: &str) -> String {
    std::fs::read_to_string(fx.engine.workspace().root().join(file)).unwrap()
}

fn buffer(fx: &Fixture, file: &str) -> (String, i32) {
    let id = fx.engine.workspace().resolve(file).unwrap().id();
    let document = fx.engine.documents().get(&id).unwrap();
    (document.text.to_string(), document.version)
}

#[test]
fn without_an_editor_open_buffers_take_the_edit_and_the_disk_is_written() {
    let (fx, _) = fixture("", None);
    let outcome = fx.engine.commit("rename", rename_a_and_b(&fx.engine), Approval::Direct).unwrap();
    assert_eq!(outcome, CommitOutcome::Applied(vec![Landing::Buffer { version: 4 }, Landing::Disk]));
    assert_eq!(buffer(&fx, "open.go"), ("package a\n\n// unsaved\nfunc Renamed() {}\n".into(), 4));
    assert_eq!(read(&fx, "open.go"), "package a\n\nfunc A() {}\n", "the disk under a buffer is never written");
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc Renamed() {}\n");
}

#[test]
fn with_an_editor_open_documents_go_to_it_with_byte_edits_and_versions() {
    let (fx, editor) = fixture("", Some(false));
    let outcome = fx.engine.commit("filepuff: rename", rename_a_and_b(&fx.engine), Approval::Direct).unwrap();
    assert_eq!(
        outcome,
        CommitOutcome::Applied(vec![Landing::Editor { version: Some(4), saved: false }, Landing::Disk])
    );
    let asked = editor.unwrap().asked.lock().clone();
    assert_eq!(asked.len(), 1);
    let (label, edits) = &asked[0];
    assert_eq!(label, "filepuff: rename");
    assert_eq!((edits.len(), edits[0].version), (1, Some(3)));
    assert_eq!(edits[0].edits, vec![ByteEdit { range: 27..28, text: "Renamed".into() }]);
    assert_eq!(buffer(&fx, "open.go"), ("package a\n\n// unsaved\nfunc Renamed() {}\n".into(), 4));
    assert_eq!(read(&fx, "open.go"), "package a\n\nfunc A() {}\n");
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc Renamed() {}\n");
}

#[test]
fn save_agent_edits_also_writes_what_the_editor_applied() {
    let (fx, _) = fixture("[lsp]\nsave_agent_edits = true\n", Some(false));
    let outcome = fx.engine.commit("edit", rename_a_and_b(&fx.engine), Approval::Direct).unwrap();
    let CommitOutcome::Applied(landings) = outcome else { panic!("{outcome:?}") };
    assert_eq!(landings[0].name(), "editor+disk");
    assert_eq!(read(&fx, "open.go"), "package a\n\n// unsaved\nfunc Renamed() {}\n");
}

#[test]
fn a_refusal_changes_nothing_anywhere() {
    let (fx, _) = fixture("[lsp]\nsave_agent_edits = true\n", Some(true));
    let outcome = fx.engine.commit("edit", rename_a_and_b(&fx.engine), Approval::Direct).unwrap();
    assert_eq!(outcome, CommitOutcome::Refused { reason: "the person said no".into() });
    assert_eq!(buffer(&fx, "open.go").1, 3);
    assert_eq!(read(&fx, "open.go"), "package a\n\nfunc A() {}\n");
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc B() {}\n", "the disk part of the commit is not written");
}

#[test]
fn stale_bases_are_refused_before_anything_lands() {
    let (fx, _) = fixture("", None);
    // A disk base read without a lock, then the file changes.
    let disk = fx.engine.workspace().resolve("disk.go").unwrap().id();
    let stale = FileEdit {
        id: disk.clone(),
        shown: "disk.go".into(),
        base: Base::Disk { text: "package a\n\nfunc B() {}\n".into() },
        edits: vec![ByteEdit { range: 0..0, text: "// x\n".into() }],
    };
    std::fs::write(disk.path(), "package a\n\nfunc C() {}\n").unwrap();
    let open = fx.engine.workspace().resolve("open.go").unwrap().id();
    let base = fx.engine.edit_base(&open, "open.go").unwrap();
    let buffer_edit = FileEdit {
        id: open.clone(),
        shown: "open.go".into(),
        base,
        edits: vec![ByteEdit { range: 0..0, text: "// y\n".into() }],
    };
    let err = fx.engine.commit("edit", vec![buffer_edit, stale], Approval::Direct).unwrap_err();
    assert!(matches!(err, CommitError::Stale { .. }), "{err}");
    assert_eq!(buffer(&fx, "open.go").1, 3, "the buffer part did not land either");

    // A buffer base whose document moved on.
    let base = fx.engine.edit_base(&open, "open.go").unwrap();
    let change = TextChange { range: Some((Position::default(), Position::default())), text: "x".into() };
    fx.engine.change_document(&open, 4, Encoding::Utf16, &[change]).unwrap();
    let moved = FileEdit { id: open, shown: "open.go".into(), base, edits: vec![] };
    let err = fx.engine.commit("edit", vec![moved], Approval::Direct).unwrap_err();
    assert!(matches!(err, CommitError::BufferChanged { expected: Some(3), current: Some(4), .. }), "{err}");
}

#[test]
fn edits_that_do_not_fit_their_text_are_refused() {
    let (fx, _) = fixture("", None);
    let disk = fx.engine.workspace().resolve("disk.go").unwrap().id();
    let base = fx.engine.edit_base(&disk, "disk.go").unwrap();
    let edit = FileEdit {
        id: disk,
        shown: "disk.go".into(),
        base,
        edits: vec![ByteEdit { range: 5..500, text: String::new() }],
    };
    assert!(matches!(fx.engine.commit("edit", vec![edit], Approval::Direct), Err(CommitError::InvalidEdit { .. })));
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc B() {}\n");
}

#[test]
fn confirmed_edits_send_every_file_to_the_editor_and_land_only_when_accepted() {
    // Accepted: both files went to the editor in one request (the disk one unversioned), and
    // both land there; the disk is the editor's to save.
    let (fx, editor) = fixture("", Some(false));
    let outcome = fx.engine.commit("rename", rename_a_and_b(&fx.engine), Approval::Confirm).unwrap();
    let editor = editor.unwrap();
    assert_eq!(*editor.approvals.lock(), vec![Approval::Confirm]);
    let asked = editor.asked.lock().clone();
    assert_eq!(asked[0].1.iter().map(|e| e.version).collect::<Vec<_>>(), vec![Some(3), None]);
    let CommitOutcome::Applied(landings) = outcome else { panic!("{outcome:?}") };
    assert!(landings.iter().all(|l| l.name() == "editor"), "{landings:?}");
    assert_eq!(buffer(&fx, "disk.go").0, "package a\n\nfunc Renamed() {}\n");
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc B() {}\n");

    // Declined: nothing anywhere.
    let (fx, _) = fixture("", Some(true));
    let outcome = fx.engine.commit("rename", rename_a_and_b(&fx.engine), Approval::Confirm).unwrap();
    assert!(matches!(outcome, CommitOutcome::Refused { .. }));
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc B() {}\n");
    assert_eq!(buffer(&fx, "open.go").1, 3);

    // Without an editor: refused as an error, never applied unconfirmed.
    let (fx, _) = fixture("", None);
    let err = fx.engine.commit("rename", rename_a_and_b(&fx.engine), Approval::Confirm).unwrap_err();
    assert!(matches!(err, CommitError::NoEditorToConfirm { .. }), "{err}");
    assert_eq!(read(&fx, "disk.go"), "package a\n\nfunc B() {}\n");
}

/// Issue 20 item 5: a rename (disk.go → sub/moved.go, new directory) lands as a write and a
/// removal; a stale file, a file that appeared, or an open document refuse it with nothing
/// changed.
#[test]
fn disk_changes_land_whole_or_not_at_all() {
    let (fx, _) = fixture("", None);
    let id = |file: &str| fx.engine.workspace().resolve(file).unwrap().id();
    let before = read(&fx, "disk.go");
    let rename = |text: &str| {
        vec![
            DiskChange::Remove { id: id("disk.go"), shown: "disk.go".into(), before: before.clone() },
            DiskChange::Write { id: id("sub/moved.go"), shown: "sub/moved.go".into(), before: None, text: text.into() },
        ]
    };
    let root = fx.engine.workspace().root().to_path_buf();

    // A file to be created that appeared meanwhile.
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/moved.go"), "theirs").unwrap();
    assert!(matches!(fx.engine.commit_disk_changes(&rename("mine")), Err(CommitError::Stale { .. })));
    assert_eq!(read(&fx, "disk.go"), before);
    assert_eq!(read(&fx, "sub/moved.go"), "theirs");
    std::fs::remove_file(root.join("sub/moved.go")).unwrap();

    // The file to remove changed since it was read.
    let stale = vec![DiskChange::Remove { id: id("disk.go"), shown: "disk.go".into(), before: "other".into() }];
    assert!(matches!(fx.engine.commit_disk_changes(&stale), Err(CommitError::Stale { .. })));
    assert_eq!(read(&fx, "disk.go"), before);

    // An open document.
    let open = vec![DiskChange::Remove { id: id("open.go"), shown: "open.go".into(), before: read(&fx, "open.go") }];
    assert!(matches!(fx.engine.commit_disk_changes(&open), Err(CommitError::BufferChanged { .. })));
    assert!(root.join("open.go").exists());

    let landed = fx.engine.commit_disk_changes(&rename("package a // moved\n")).unwrap();
    assert_eq!(landed, vec![Landing::Disk, Landing::Disk]);
    assert!(!root.join("disk.go").exists());
    assert_eq!(read(&fx, "sub/moved.go"), "package a // moved\n");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(root.join("sub/moved.go")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o644);
    let leftovers: Vec<_> = std::fs::read_dir(root.join("sub")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}
