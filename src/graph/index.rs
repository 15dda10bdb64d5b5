//! `filepuff graph index`: walk a tree, analyse every parsed file on worker threads, write the
//! analyses in batches (see [`super::apply`]), then resolve links by name and drop files that
//! vanished.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::GraphError;
use super::analyze::{FileAnalysis, analyses, extract};
use super::apply::{Anchor, ApplyCounts, PendingLink, apply, resolve};
use super::store::GraphStore;
use crate::documents::{DocumentStore, Language};
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
}

/// Indexes every file with an analysed language under `paths` (the root when empty): parses on
/// worker threads, writes in transactions of [`BATCH_FILES`] files, then resolves links by name
/// and removes files that disappeared. Open editor buffers are analysed in their live text.
pub fn index(
    store: &GraphStore,
    workspace: &Workspace,
    documents: &DocumentStore,
    paths: &[ResolvedPath],
) -> Result<IndexReport, GraphError> {
    let started = Instant::now();
    let files = walk(workspace, paths);
    let mut report = IndexReport::default();
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
        let mut batch: Vec<FileAnalysis> = Vec::new();
        let mut buffered = results.lock().unwrap_or_else(|p| p.into_inner());
        for (idx, result) in receiver.iter() {
            buffered[idx] = Some(result);
            while next_to_write < buffered.len() {
                let Some(result) = buffered[next_to_write].take() else { break };
                next_to_write += 1;
                match result {
                    Ok(analysis) => batch.push(analysis),
                    Err(message) => {
                        report.files_skipped += 1;
                        report.error_count += 1;
                        if report.errors.len() < MAX_REPORTED_ERRORS {
                            report.errors.push(message);
                        }
                    }
                }
                if batch.len() >= BATCH_FILES && outcome.is_ok() {
                    outcome = write_batch(store, &mut batch, &mut report, &mut pending);
                }
            }
        }
        if outcome.is_ok() {
            outcome = write_batch(store, &mut batch, &mut report, &mut pending);
        }
    });
    outcome?;
    let seen: HashSet<&str> = files.iter().map(|(p, _)| p.relative.as_str()).collect();
    let roots: Vec<&str> =
        if paths.is_empty() { vec![""] } else { paths.iter().map(|p| p.relative.as_str()).collect() };
    store.write(|tx| {
        report.counts.relationships += resolve(tx, &pending)?;
        // Files indexed before under these roots that the walk no longer finds.
        let mut stmt =
            tx.prepare_cached("SELECT DISTINCT file_path FROM components WHERE origin = 'analysis' AND type = 'file'")?;
        let indexed: Vec<String> = stmt.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?;
        for path in indexed {
            let under =
                roots.iter().any(|root| root.is_empty() || path == *root || path.starts_with(&format!("{root}/")));
            if under && !seen.contains(path.as_str()) {
                let removed = tx
                    .prepare_cached("DELETE FROM components WHERE origin = 'analysis' AND file_path = ?1")?
                    .execute([&path])?;
                report.counts.removed += removed;
                report.files_removed += 1;
            }
        }
        Ok(())
    })?;
    let (components, relationships) = store.counts()?;
    report.total_components = components;
    report.total_relationships = relationships;
    report.elapsed_ms = started.elapsed().as_millis();
    Ok(report)
}

fn write_batch(
    store: &GraphStore,
    batch: &mut Vec<FileAnalysis>,
    report: &mut IndexReport,
    pending: &mut Vec<PendingLink>,
) -> Result<(), GraphError> {
    if batch.is_empty() {
        return Ok(());
    }
    store.write(|tx| {
        for analysis in batch.iter() {
            let applied = apply(tx, analysis, Anchor::File)?;
            report.counts.add(&applied.counts);
            report.files_analyzed += 1;
            pending.extend(applied.pending);
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
    let source = documents.text(&path.absolute, max_bytes).map_err(|err| format!("{}: {err}", path.relative))?;
    let parsed = crate::syntax::parse(language, &source.text)
        .ok_or_else(|| format!("{}: the {} parser gave up", path.relative, language.name()))?;
    Ok(extract(&parsed, &path.relative))
}

/// Every analysed file under `paths` (the root when empty), sorted by path, honouring the
/// walk settings of `filepuff.toml`.
fn walk(workspace: &Workspace, paths: &[ResolvedPath]) -> Vec<(ResolvedPath, Language)> {
    let config = &workspace.config().walk;
    let roots: Vec<std::path::PathBuf> = if paths.is_empty() {
        vec![workspace.root().to_path_buf()]
    } else {
        paths.iter().map(|p| p.absolute.clone()).collect()
    };
    let mut builder = ignore::WalkBuilder::new(&roots[0]);
    for root in &roots[1..] {
        builder.add(root);
    }
    let mut overrides = ignore::overrides::OverrideBuilder::new(workspace.root());
    for glob in &config.exclude {
        // An invalid glob is reported by file_search; here it is simply not applied.
        let _ = overrides.add(&format!("!{glob}"));
    }
    if let Ok(overrides) = overrides.build() {
        builder.overrides(overrides);
    }
    builder.hidden(!config.hidden).require_git(config.require_git).follow_links(config.follow_symlinks);
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for entry in builder.build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(language) = Language::from_path(entry.path()).filter(|l| analyses(*l)) else { continue };
        let Ok(real) = entry.path().canonicalize() else { continue };
        let Some(resolved) = workspace.resolved_from_walk(&real) else { continue };
        if seen.insert(resolved.relative.clone()) {
            out.push((resolved, language));
        }
    }
    out.sort_by(|a, b| a.0.relative.cmp(&b.0.relative));
    out
}
