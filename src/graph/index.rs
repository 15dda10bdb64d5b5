//! `filepuff graph index`: walk a tree, analyse every parsed file on worker threads, write the
//! analyses in batches (see [`super::apply`]), ask the language servers for the calls of the
//! files whose language has one (see [`super::calls`]), then resolve the remaining links by name
//! and drop files that vanished.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::analyze::{FileAnalysis, analyses, extract};
use super::apply::{Anchor, ApplyCounts, PendingLink, apply, resolve};
use super::calls::{CallTargets, CallsJob, CallsMode, LspCallsLimits, NotAnswered, ask_servers, write_file_calls};
use super::source;
use super::store::GraphStore;
use super::{ComponentType, GraphError, RelationshipType};
use crate::backends::{BackendError, Backends};
use crate::documents::{DocumentStore, Language};
use crate::search;
use crate::workspace::{ResolvedPath, Workspace};

/// Files written per transaction by [`index`].
const BATCH_FILES: usize = 64;
/// Errors listed in an [`IndexReport`] (the count covers all).
const MAX_REPORTED_ERRORS: usize = 20;

/// What [`index`] did.
#[derive(Debug, Clone, Default)]
pub struct IndexReport {
    /// Files with an analysed language that were visited.
    pub files_analyzed: usize,
    /// Files skipped: unreadable, binary, over the size limit.
    pub files_skipped: usize,
    /// Files that had been indexed under the given paths and are gone now (their components
    /// were removed).
    pub files_removed: usize,
    pub counts: ApplyCounts,
    /// Totals in the store afterwards.
    pub total_components: usize,
    pub total_relationships: usize,
    pub elapsed_ms: u128,
    /// The first few failures as `path: message`.
    pub errors: Vec<String>,
    pub error_count: usize,
    /// Where each language's `calls` came from, in language order.
    pub calls: Vec<LanguageCalls>,
    /// `calls` relationships in the store afterwards, by source.
    pub total_calls_lsp: usize,
    pub total_calls_syntax: usize,
}

/// Options of [`index`].
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    pub calls: CallsMode,
    pub limits: LspCallsLimits,
}

/// Where one language's `calls` relationships came from in one [`index`] run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageCalls {
    pub language: &'static str,
    /// The server asked, when one was.
    pub server: Option<String>,
    /// Files whose calls the server gave.
    pub lsp_files: usize,
    /// Files whose calls come from syntax (by name, approximate): no server, `--calls syntax`,
    /// or the server failed for them.
    pub syntax_files: usize,
    /// Why files fell back to syntax (the first reason), when they did.
    pub note: Option<String>,
    /// True with `--calls lsp` when a configured server was missing or failed: the run is
    /// complete (with syntax calls there) but did not do what was asked.
    pub failed: bool,
}

/// Indexes every file with an analysed language under `paths` (the root when empty): parses on
/// worker threads, writes in transactions of [`BATCH_FILES`] files, asks the language servers
/// for calls (per `options.calls`), then resolves the other links by name and removes files that
/// disappeared. Open editor buffers are analysed in their live text (unsaved new files too).
///
/// Errors: [`GraphError::Walk`] for an invalid `[walk] exclude` entry; store failures.
pub fn index(
    store: &GraphStore,
    workspace: &Workspace,
    documents: &DocumentStore,
    backends: &Backends,
    paths: &[ResolvedPath],
    options: &IndexOptions,
) -> Result<IndexReport, GraphError> {
    let started = Instant::now();
    let files = walk(workspace, documents, paths)?;
    let mut report = IndexReport::default();
    // Languages whose calls a server gives: decided once, before anything is written.
    let mut languages: BTreeMap<&'static str, (Language, LanguageCalls)> = BTreeMap::new();
    for (_, language) in &files {
        languages.entry(language.name()).or_insert_with(|| (*language, calls_plan(backends, *language, options.calls)));
    }
    // Files with functions whose language a server serves: to ask, or whose calls were kept.
    let mut work = CallsWork::default();
    // Files with functions or methods (the only files with calls), per language.
    let mut caller_files: BTreeMap<&'static str, usize> = BTreeMap::new();
    let max_bytes = workspace.config().limits.max_file_bytes;
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<FileAnalysis, String>>>> = Mutex::new(vec![None; files.len()]);
    let (sender, receiver) = std::sync::mpsc::sync_channel::<(usize, Result<FileAnalysis, String>)>(BATCH_FILES * 2);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    let mut pending = Vec::new();
    let mut outcome: Result<(), GraphError> = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let files = &files;
            let next = &next;
            scope.spawn(move || {
                loop {
                    let idx = next.fetch_add(1, Ordering::Relaxed);
                    let Some((path, language)) = files.get(idx) else { break };
                    let result = analyse_file(documents, path, *language, max_bytes);
                    if sender.send((idx, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        // Write in file order whatever order the workers finish in, so ids and edges are
        // reproducible run to run.
        let mut next_to_write = 0;
        let mut batch: Vec<(Option<(CallsJob, String)>, FileAnalysis)> = Vec::new();
        let server_of = |language: Language| languages.get(language.name()).and_then(|(_, plan)| plan.server.clone());
        let mut buffered = results.lock();
        for (idx, result) in receiver.iter() {
            buffered[idx] = Some(result);
            while next_to_write < buffered.len() {
                let Some(result) = buffered[next_to_write].take() else { break };
                next_to_write += 1;
                match result {
                    Ok(analysis) => {
                        let callers = analysis
                            .symbols
                            .iter()
                            .any(|s| matches!(s.component_type, ComponentType::Function | ComponentType::Method));
                        if callers {
                            *caller_files.entry(analysis.language.name()).or_default() += 1;
                        }
                        let candidate = server_of(analysis.language).filter(|_| callers).map(|server| {
                            let (path, language) = &files[next_to_write - 1];
                            let job = CallsJob {
                                relative: path.relative.clone(),
                                absolute: path.absolute.clone(),
                                language: *language,
                            };
                            (job, server)
                        });
                        batch.push((candidate, analysis));
                    }
                    Err(message) => {
                        report.files_skipped += 1;
                        report.error_count += 1;
                        if report.errors.len() < MAX_REPORTED_ERRORS {
                            report.errors.push(message);
                        }
                    }
                }
                if batch.len() >= BATCH_FILES && outcome.is_ok() {
                    outcome = write_batch(store, &mut batch, &mut report, &mut pending, &mut work);
                }
            }
        }
        if outcome.is_ok() {
            outcome = write_batch(store, &mut batch, &mut report, &mut pending, &mut work);
        }
    });
    outcome?;
    let CallsWork { jobs, kept } = work;
    // Calls from the servers, for the files they answer; the others keep their syntax calls.
    let answered = ask_servers(backends, documents, &jobs, &options.limits, max_bytes);
    let mut from_server: HashSet<&str> = HashSet::new();
    for (relative, language) in &kept {
        from_server.insert(relative.as_str());
        if let Some((_, plan)) = languages.get_mut(language.name()) {
            plan.lsp_files += 1;
        }
    }
    store.write(|tx| {
        let mut targets = CallTargets::new(workspace);
        for (job, outcome) in jobs.iter().zip(&answered) {
            let (_, plan) = languages.get_mut(job.language.name()).expect("every job's language is planned");
            match outcome {
                Ok(calls) => {
                    report.counts.relationships += write_file_calls(tx, &mut targets, &job.relative, calls)?;
                    plan.lsp_files += 1;
                    from_server.insert(job.relative.as_str());
                }
                Err(NotAnswered::Unavailable(message) | NotAnswered::Failed(message)) => {
                    plan.failed |= options.calls == CallsMode::Lsp;
                    if plan.note.is_none() {
                        plan.note = Some(message.clone());
                    }
                }
            }
        }
        Ok(())
    })?;
    pending
        .retain(|link| link.relationship_type() != RelationshipType::Calls || !from_server.contains(link.file_path()));
    let seen: HashSet<&str> = files.iter().map(|(p, _)| p.relative.as_str()).collect();
    let roots: Vec<&str> =
        if paths.is_empty() { vec![""] } else { paths.iter().map(|p| p.relative.as_str()).collect() };
    store.write(|tx| {
        report.counts.relationships += resolve(tx, &pending)?;
        for (job, outcome) in jobs.iter().zip(&answered) {
            if outcome.is_err() {
                source::set_calls_from(tx, &job.relative, "syntax")?;
            }
        }
        // Files indexed before under these roots that the walk no longer finds.
        let indexed: Vec<String> = tx
            .query("SELECT DISTINCT file_path FROM components WHERE origin = 'analysis' AND type = 'file'", &[])?
            .iter()
            .filter_map(|row| row.opt_text(0).transpose())
            .collect::<Result<_, _>>()?;
        for path in indexed {
            let under =
                roots.iter().any(|root| root.is_empty() || path == *root || path.starts_with(&format!("{root}/")));
            if under && !seen.contains(path.as_str()) {
                let removed = tx.execute(
                    "DELETE FROM components WHERE origin = 'analysis' AND file_path = ?1",
                    &crate::graph::db::sql_params![path.as_str()],
                )?;
                report.counts.removed += removed;
                report.files_removed += 1;
            }
        }
        source::delete_unused(tx)?;
        Ok(())
    })?;
    let (components, relationships) = store.counts()?;
    report.total_components = components;
    report.total_relationships = relationships;
    (report.total_calls_lsp, report.total_calls_syntax) = store.calls_by_source()?;
    report.calls = languages
        .into_values()
        .map(|(language, mut plan)| {
            let callers = caller_files.get(language.name()).copied().unwrap_or(0);
            plan.syntax_files = callers.saturating_sub(plan.lsp_files);
            plan
        })
        .collect();
    report.elapsed_ms = started.elapsed().as_millis();
    Ok(report)
}

/// Whether `language`'s calls will come from a server (`server` set) or from syntax (`note`
/// says why).
fn calls_plan(backends: &Backends, language: Language, mode: CallsMode) -> LanguageCalls {
    let mut plan = LanguageCalls {
        language: language.name(),
        server: None,
        lsp_files: 0,
        syntax_files: 0,
        note: None,
        failed: false,
    };
    if mode == CallsMode::Syntax {
        plan.note = Some("--calls syntax".to_owned());
        return plan;
    }
    match backends.spec_for(language) {
        Ok((spec, _)) => plan.server = Some(spec.name.clone()),
        Err(BackendError::NoServer { .. }) => {
            plan.note = Some(format!("no language server is configured for {}", language.name()))
        }
        Err(err) => {
            plan.failed = mode == CallsMode::Lsp;
            plan.note = Some(err.to_string());
        }
    }
    plan
}

/// Files whose calls a server gives: to ask, or kept from the last run (path, language).
#[derive(Debug, Default)]
struct CallsWork {
    jobs: Vec<CallsJob>,
    kept: Vec<(String, Language)>,
}

/// Applies a batch of analyses in one transaction; each file a server would answer for either
/// kept its calls (unchanged text, same server) or becomes a job.
fn write_batch(
    store: &GraphStore,
    batch: &mut Vec<(Option<(CallsJob, String)>, FileAnalysis)>,
    report: &mut IndexReport,
    pending: &mut Vec<PendingLink>,
    work: &mut CallsWork,
) -> Result<(), GraphError> {
    if batch.is_empty() {
        return Ok(());
    }
    store.write(|tx| {
        for (candidate, analysis) in batch.iter() {
            let server = candidate.as_ref().map(|(_, server)| server.as_str());
            let applied = apply(tx, analysis, Anchor::File, server)?;
            report.counts.add(&applied.counts);
            report.files_analyzed += 1;
            pending.extend(applied.pending);
            match candidate {
                Some((job, _)) if applied.kept_calls => work.kept.push((job.relative.clone(), job.language)),
                Some((job, _)) => work.jobs.push(job.clone()),
                None => {}
            }
        }
        Ok(())
    })?;
    batch.clear();
    Ok(())
}

fn analyse_file(
    documents: &DocumentStore,
    path: &ResolvedPath,
    language: Language,
    max_bytes: u64,
) -> Result<FileAnalysis, String> {
    let source = documents.text(&path.id(), max_bytes).map_err(|err| format!("{}: {err}", path.relative))?;
    let parsed = crate::syntax::parse(language, &source.text)
        .ok_or_else(|| format!("{}: the {} parser gave up", path.relative, language.name()))?;
    Ok(extract(&parsed, &path.relative))
}

/// Every analysed file under `paths` (the root when empty), sorted by path: a visitor of the
/// workspace walk ([`crate::search::for_each_file`]), so `[walk]` settings and open buffers
/// (unsaved new files included) count as for every other walk.
///
/// Errors: [`GraphError::Walk`] for an invalid `[walk] exclude` entry.
fn walk(
    workspace: &Workspace,
    documents: &DocumentStore,
    paths: &[ResolvedPath],
) -> Result<Vec<(ResolvedPath, Language)>, GraphError> {
    let roots = search::walk_roots(workspace, paths);
    let analysed = |path: &Path, _: Option<&str>| Language::from_path(path).is_some_and(analyses);
    let found = Mutex::new(Vec::new());
    search::for_each_file(workspace, documents, &roots, &analysed, |path, _| {
        if let (Some(language), Some(resolved)) = (Language::from_path(path), workspace.resolved_from_walk(path)) {
            found.lock().push((resolved, language));
        }
        true
    })?;
    let mut out = found.into_inner();
    out.sort_by(|a, b| a.0.relative.cmp(&b.0.relative));
    out.dedup_by(|a, b| a.0.relative == b.0.relative);
    Ok(out)
}
