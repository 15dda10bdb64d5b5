//! The language server's diagnostics around an agent's edit (`edit_apply`, `rename_symbol`):
//! asked for the text before the edit and for the text after it, through the one ask path
//! ([`crate::backends::Backends::ask_within`]: the server is started if needed, synced, and
//! waited for as it reports its readiness), each wait bounded by `[lsp]
//! edit_diagnostics_timeout_ms`; then split into introduced, pre-existing and resolved ones.
//!
//! On by default for a file whose language has an installed server (`diagnostics: false` opts
//! out). Edits of one file in this process hold a gate from before the "before" question until
//! the "after" answer, so each pair is about the texts of one edit: without it, two concurrent
//! edits of one file would sync their texts in between each other's questions. An edit that finds
//! the gate held does not wait: its report says `skipped`. The gate is taken before the file's
//! lock (`Engine::edit_base`) and never waited for, so no lock order can deadlock.

use parking_lot::{Mutex, MutexGuard};
use std::time::Duration;

use ropey::Rope;
use schemars::JsonSchema;
use serde::Serialize;

use super::lsp::{DiagnosticInfo, file_diagnostics_within};
use super::page::{self, Limits, PageParams};
use crate::backends::Completeness;
use crate::documents::Language;
use crate::engine::Engine;
use crate::workspace::DocumentId;

/// Files of one rename whose diagnostics are asked (the first ones, in path order); a larger
/// rename reports `files_checked` below `files`.
pub(crate) const MAX_FILES: usize = 10;

/// Diagnostics of the edited files after the edit, compared with before it by file, severity,
/// code and message (positions move with the edit, so they are not compared).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EditDiagnostics {
    /// `complete`: the server reported on both texts (before and after) within the wait;
    /// `timed_out`: it was not ready, or did not report on a text, within `[lsp]
    /// edit_diagnostics_timeout_ms` (the lists are what it had, possibly older); `unavailable`:
    /// it could not be asked (`error` says why; the edit itself was applied); `skipped`: another
    /// edit of the file was being diagnosed in this session at the same time (concurrent edits
    /// of one file do not wait for each other's diagnostics).
    pub status: String,
    /// New with this edit, in file and position order (1-based lines, character columns).
    pub introduced: Vec<DiagnosticInfo>,
    /// Already there before the edit.
    pub pre_existing: Vec<DiagnosticInfo>,
    /// How many diagnostics before the edit are gone after it.
    pub resolved: usize,
    /// Introduced diagnostics in all (the list stops at a share of the output budget).
    pub total_introduced: usize,
    /// Pre-existing diagnostics in all (the list stops at a smaller share of the budget).
    pub total_pre_existing: usize,
    /// Whether both lists are known to be for the exact texts (`status` is `complete`).
    pub current: bool,
    pub server: String,
    /// Files whose diagnostics were asked, of those the edit changed (see [`MAX_FILES`]).
    pub files_checked: usize,
    /// Milliseconds spent asking (before and after together; a person's decision on a confirmed
    /// edit in between is not counted).
    pub waited_ms: u64,
    /// Why diagnostics could not be had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether an applied edit of a file in `language` reports diagnostics: `requested` when given,
/// else whether an installed, enabled server serves the language.
pub(crate) fn wanted(engine: &Engine, language: Option<Language>, requested: Option<bool>) -> bool {
    let Some(language) = language else { return false };
    requested.unwrap_or_else(|| engine.backends().specs_for(language).is_ok())
}

/// Gates by hash of the document, so memory stays fixed; two documents sharing a gate only
/// wait for each other.
static GATES: [Mutex<()>; 32] = [const { Mutex::new(()) }; 32];

/// The gates of `ids`, or `None` when one is held: another edit of one of the files is being
/// diagnosed in this process. Such an edit does not wait for it (a burst of concurrent edits of
/// one file would otherwise run one server round trip after another); it reports `skipped`.
pub(crate) fn gates<'a>(ids: impl IntoIterator<Item = &'a DocumentId>) -> Option<Vec<MutexGuard<'static, ()>>> {
    let mut slots: Vec<usize> = ids
        .into_iter()
        .map(|id| {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            id.hash(&mut hasher);
            (hasher.finish() % GATES.len() as u64) as usize
        })
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let mut held = Vec::with_capacity(slots.len());
    for slot in slots {
        held.push(GATES[slot].try_lock()?);
    }
    Some(held)
}

/// The report of an edit whose diagnostics were not asked because another edit of the file was
/// being diagnosed (see [`gates`]).
pub(crate) fn skipped() -> EditDiagnostics {
    EditDiagnostics {
        status: "skipped".to_owned(),
        introduced: Vec::new(),
        pre_existing: Vec::new(),
        resolved: 0,
        total_introduced: 0,
        total_pre_existing: 0,
        current: false,
        server: String::new(),
        files_checked: 0,
        waited_ms: 0,
        error: Some(
            "another edit of this file was being diagnosed in this session; call diagnostics for the file".to_owned(),
        ),
    }
}

/// One file's diagnostics for one text, or why there are none.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    result: Result<Found, String>,
}

#[derive(Debug, Clone)]
struct Found {
    diagnostics: Vec<DiagnosticInfo>,
    /// Reported for the text, with the server ready, within the wait.
    complete: bool,
    server: String,
}

/// A file of an edit: its identity, the name it is shown by, its language.
#[derive(Debug, Clone)]
pub(crate) struct File {
    pub id: DocumentId,
    pub shown: String,
    pub language: Language,
}

/// The diagnostics of `text` as the content of `file` (waiting at most `[lsp]
/// edit_diagnostics_timeout_ms`).
pub(crate) fn snapshot(engine: &Engine, file: &File, text: &Rope) -> Snapshot {
    let limit = Duration::from_millis(engine.backends().config().edit_diagnostics_timeout_ms);
    let result = file_diagnostics_within(engine, &file.id, file.language, text, limit)
        .map(|found| Found {
            complete: found.current && found.completeness != Completeness::TimedOut,
            server: found.server,
            diagnostics: found
                .diagnostics
                .into_iter()
                .map(|mut d| {
                    d.file = Some(file.shown.clone());
                    d
                })
                .collect(),
        })
        .map_err(|err| err.message.clone());
    Snapshot { result }
}

/// How long the servers must have published nothing new for the files of a multi-file edit
/// before their after-edit diagnostics are taken. A server diagnoses each file as its change
/// arrives, and a file's diagnostics depend on the other files: after a rename across files,
/// gopls published `undefined: Salute` for a caller it had been sent the renamed call of, before
/// it had taken the change that renamed the function — and the corrected list a moment later,
/// for the same version of the file. Nothing in LSP marks a version's list as final, so the
/// list of a quiet moment is taken. Only multi-file edits wait for it.
const SETTLE: Duration = Duration::from_millis(300);

/// The quiet wait while some file's list still has diagnostics the edit would have introduced:
/// gopls diagnoses the files of the changed package at once but the packages that depend on it
/// only after its `diagnosticsDelay` (1 s by default), so a caller in another package keeps
/// an error from before the callee's change for about a second.
const SUSPECT_SETTLE: Duration = Duration::from_millis(1_500);

/// The longest settling wait, however often the servers keep publishing for the files.
const MAX_SETTLE: Duration = Duration::from_secs(3);

/// The diagnostics of each `(file, text after the edit)` (for a document open in the editor, of
/// its buffer as it is at each reading; each wait bounded as [`snapshot`]'s), to be compared
/// with `before` (the same files, in order; `renamed` as [`compare`] takes it).
/// For more than one file, the lists are taken once the servers have published nothing new for
/// any of the files for [`SETTLE`] — [`SUSPECT_SETTLE`] while a list would report an introduced
/// diagnostic — at most [`MAX_SETTLE`]: a file whose list changed meanwhile is read again, so
/// no file's list is one computed before another file's change reached the server.
pub(crate) fn snapshots_after(
    engine: &Engine,
    files: &[(File, Rope)],
    before: &[Snapshot],
    renamed: Option<(&str, &str)>,
) -> Vec<Snapshot> {
    // A document open in the editor is asked about as the editor holds it at each reading.
    let read = |file: &File, text: &Rope| {
        let text = engine.documents().get(&file.id).map_or_else(|| text.clone(), |document| document.text);
        snapshot(engine, file, &text)
    };
    // Subscribed before the first reading, so a list republished during it is seen.
    let published = (files.len() > 1).then(|| engine.backends().subscribe_published());
    let mut snapshots: Vec<Snapshot> = files.iter().map(|(file, text)| read(file, text)).collect();
    let Some(mut published) = published else { return snapshots };
    let index: std::collections::HashMap<url::Url, usize> =
        files.iter().enumerate().map(|(i, (file, _))| (file.id.uri(), i)).collect();
    let mut changed = vec![false; files.len()];
    let started = std::time::Instant::now();
    let mut last = started;
    loop {
        for (i, (file, text)) in files.iter().enumerate() {
            if std::mem::take(&mut changed[i]) {
                snapshots[i] = read(file, text);
            }
        }
        let suspect = before.iter().zip(&snapshots).any(|(before, after)| introduces(before, after, renamed));
        let until = (last + if suspect { SUSPECT_SETTLE } else { SETTLE }).min(started + MAX_SETTLE);
        let left = until.saturating_duration_since(std::time::Instant::now());
        let received = engine.backends().block_on(async { tokio::time::timeout(left, published.recv()).await });
        use tokio::sync::broadcast::error::RecvError;
        match received {
            Err(_) | Ok(Err(RecvError::Closed)) => break,
            Ok(Ok(uri)) => {
                if let Some(&i) = index.get(&uri) {
                    changed[i] = true;
                    last = std::time::Instant::now();
                }
            }
            Ok(Err(RecvError::Lagged(_))) => {
                changed.fill(true);
                last = std::time::Instant::now();
            }
        }
    }
    snapshots
}

/// Whether `after` holds a diagnostic `before` did not (see [`split`]).
fn introduces(before: &Snapshot, after: &Snapshot, renamed: Option<(&str, &str)>) -> bool {
    match (&before.result, &after.result) {
        (Ok(before), Ok(after)) => !split(before.diagnostics.clone(), after.diagnostics.clone(), renamed).0.is_empty(),
        _ => false,
    }
}

/// Compares the snapshots of each file before and after the edit (pairs in file order), keeps
/// the lists within a share of the output budget, and says how it went. `renamed` (old name,
/// new name) is a rename's: a message from before it that names the old identifier is taken as
/// naming the new one (`undefined: Hello` before is `undefined: Salute` after, the same error).
pub(crate) fn compare(
    engine: &Engine,
    pairs: Vec<(Snapshot, Snapshot)>,
    files_checked: usize,
    waited: Duration,
    renamed: Option<(&str, &str)>,
) -> EditDiagnostics {
    let mut out = EditDiagnostics {
        status: "complete".to_owned(),
        introduced: Vec::new(),
        pre_existing: Vec::new(),
        resolved: 0,
        total_introduced: 0,
        total_pre_existing: 0,
        current: true,
        server: String::new(),
        files_checked,
        waited_ms: waited.as_millis() as u64,
        error: None,
    };
    let mut servers: Vec<String> = Vec::new();
    for (before, after) in pairs {
        let (before, after) = match (before.result, after.result) {
            (Ok(before), Ok(after)) => (before, after),
            (Err(error), _) | (_, Err(error)) => {
                out.error.get_or_insert(error);
                continue;
            }
        };
        if !(before.complete && after.complete) {
            out.current = false;
        }
        if !servers.contains(&after.server) {
            servers.push(after.server.clone());
        }
        let (introduced, pre_existing, resolved) = split(before.diagnostics, after.diagnostics, renamed);
        out.introduced.extend(introduced);
        out.pre_existing.extend(pre_existing);
        out.resolved += resolved;
    }
    out.server = servers.join(", ");
    if out.error.is_some() {
        out.current = false;
        out.status = "unavailable".to_owned();
    } else if !out.current {
        out.status = "timed_out".to_owned();
    }
    // The introduced ones are what the agent must see: a quarter of the budget for them, an
    // eighth for the ones that were there already.
    let budget = engine.workspace().config().limits.max_output_chars;
    let share = |divisor: usize| Limits::new(&PageParams::default(), usize::MAX, budget / divisor);
    let (introduced, page) = page::page(std::mem::take(&mut out.introduced), share(4), "diagnostics", |_| 0);
    out.introduced = introduced;
    out.total_introduced = page.total;
    let (pre_existing, page) = page::page(std::mem::take(&mut out.pre_existing), share(8), "diagnostics", |_| 0);
    out.pre_existing = pre_existing;
    out.total_pre_existing = page.total;
    out
}

/// Splits the after-edit diagnostics into introduced and pre-existing ones (matched one to one
/// by file, severity, code and message; with `renamed`, the before messages as the rename
/// spells them) and counts the resolved ones.
fn split(
    before: Vec<DiagnosticInfo>,
    after: Vec<DiagnosticInfo>,
    renamed: Option<(&str, &str)>,
) -> (Vec<DiagnosticInfo>, Vec<DiagnosticInfo>, usize) {
    let key = |d: &DiagnosticInfo| (d.file.clone(), d.severity.clone(), d.code.clone(), d.message.clone());
    let mut remaining: Vec<_> = before
        .iter()
        .map(|d| {
            let (file, severity, code, message) = key(d);
            let message = match renamed {
                Some((old, new)) => replace_identifier(&message, old, new),
                None => message,
            };
            (file, severity, code, message)
        })
        .collect();
    let (mut introduced, mut pre_existing) = (Vec::new(), Vec::new());
    for diagnostic in after {
        match remaining.iter().position(|k| *k == key(&diagnostic)) {
            Some(index) => {
                remaining.swap_remove(index);
                pre_existing.push(diagnostic);
            }
            None => introduced.push(diagnostic),
        }
    }
    (introduced, pre_existing, remaining.len())
}

/// `text` with every occurrence of the identifier `old` as a whole word (not inside a longer
/// identifier: `Hello` in `Hello(` or `"Hello"`, not in `HelloWorld`) replaced by `new`.
fn replace_identifier(text: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        return text.to_owned();
    }
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(old) {
        let (head, tail) = rest.split_at(at);
        let after = &tail[old.len()..];
        let whole = !head.chars().next_back().is_some_and(is_ident) && !after.chars().next().is_some_and(is_ident);
        out.push_str(head);
        out.push_str(if whole { new } else { old });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Readable lines of `diagnostics` for a tool's text.
pub(crate) fn render(out: &mut String, diagnostics: &EditDiagnostics) {
    use std::fmt::Write;
    if let Some(error) = &diagnostics.error {
        let _ = writeln!(out, "diagnostics unavailable: {error}");
        return;
    }
    let _ = writeln!(
        out,
        "diagnostics ({}, {}): {} introduced, {} pre-existing, {} resolved",
        diagnostics.server,
        diagnostics.status,
        diagnostics.total_introduced,
        diagnostics.total_pre_existing,
        diagnostics.resolved
    );
    for d in &diagnostics.introduced {
        let file = d.file.as_deref().unwrap_or("");
        let _ = writeln!(out, "  introduced {file}:{}:{}: {}: {}", d.line, d.column, d.severity, d.message);
    }
    if diagnostics.introduced.len() < diagnostics.total_introduced {
        let _ = writeln!(out, "  … {} more introduced", diagnostics.total_introduced - diagnostics.introduced.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(file: &str, line: usize, message: &str) -> DiagnosticInfo {
        DiagnosticInfo {
            file: Some(file.to_owned()),
            line,
            column: 1,
            end_line: line,
            end_column: 2,
            severity: "error".to_owned(),
            code: None,
            source: None,
            message: message.to_owned(),
        }
    }

    #[test]
    fn split_matches_by_file_and_message_not_position() {
        let before =
            vec![diagnostic("a.go", 3, "x unused"), diagnostic("a.go", 9, "y unused"), diagnostic("b.go", 1, "z")];
        // The edit moved "x unused" down two lines, fixed "y unused", and added one in b.go that
        // has the same message as one of a.go's.
        let after =
            vec![diagnostic("a.go", 5, "x unused"), diagnostic("b.go", 1, "z"), diagnostic("b.go", 4, "x unused")];
        let (introduced, pre_existing, resolved) = split(before, after, None);
        assert_eq!(introduced, vec![diagnostic("b.go", 4, "x unused")]);
        assert_eq!(pre_existing, vec![diagnostic("a.go", 5, "x unused"), diagnostic("b.go", 1, "z")]);
        assert_eq!(resolved, 1);
    }

    /// A rename changes the messages that name the renamed identifier: the same error, not a
    /// new one and a resolved one.
    #[test]
    fn a_rename_matches_messages_that_name_the_old_identifier() {
        let before = vec![
            diagnostic("a.go", 3, "cannot use 1 as string in argument to Hello"),
            diagnostic("a.go", 4, "HelloWorld unused"),
        ];
        let after = vec![
            diagnostic("a.go", 3, "cannot use 1 as string in argument to Salute"),
            diagnostic("a.go", 4, "HelloWorld unused"),
        ];
        let (introduced, pre_existing, resolved) = split(before.clone(), after.clone(), Some(("Hello", "Salute")));
        assert_eq!((introduced, pre_existing, resolved), (vec![], after.clone(), 0));
        let (introduced, _, resolved) = split(before, after, None);
        assert_eq!((introduced.len(), resolved), (1, 1));
        assert_eq!(
            replace_identifier("Hello(Hello_x, \"Hello\") $Hello Hello", "Hello", "Hi"),
            "Hi(Hello_x, \"Hi\") $Hello Hi"
        );
        assert_eq!(replace_identifier("héHello Hello", "Hello", "Hi"), "héHello Hi");
    }

    #[test]
    fn gates_are_taken_once_each_in_one_order() {
        let a = DocumentId::from_canonical(std::path::Path::new("/w/a.go"));
        let b = DocumentId::from_canonical(std::path::Path::new("/w/b.go"));
        let held = gates([&a, &b, &a]).unwrap();
        assert!((1..=2).contains(&held.len()));
        assert!(gates([&b]).is_none(), "held: a concurrent edit skips");
        drop(held);
        assert_eq!(gates([&b]).unwrap().len(), 1);
    }
}
