//! Writing analyses into the graph: [`apply`] one file (stable ids, updates in place, stale
//! components removed) and [`resolve`] the relationships known only by name.
//!
//! Stable identity: an analysed component's `stable_key` is `path::Qualified.name` (with `#2`,
//! `#3` for repeated names in one file, such as Go's `init`). Re-analysing a file updates the
//! components whose key is unchanged (same id; version bumped when the code or description
//! changed; status kept), adds new ones and deletes the ones that disappeared, with their
//! relationships. Relationships derived by analysis are replaced on each analysis of their
//! source file; relationships added by `add_relationship` are never touched.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::analyze::{FileAnalysis, NamedLink, SourceRef};
use super::db::{Db, sql_params};
use super::source::{self, Stored};
use super::store::{
    SourceSlice, dir_of, fts_replace, insert_component, insert_relationship_row, metadata_text, name_terms, now_sql,
};
use super::{ComponentType, GraphError, NewComponent, RelationshipType, Status};

/// Counts of one or more applied analyses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyCounts {
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub removed: usize,
    pub relationships: usize,
}

impl ApplyCounts {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ApplyCounts) {
        self.added += other.added;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.removed += other.removed;
        self.relationships += other.relationships;
    }
}

/// A link waiting for the whole batch to be written before it is resolved by name.
#[derive(Debug, Clone)]
pub struct PendingLink {
    /// The source component's id, or `None` with `source_name` for a type known by name.
    source_id: Option<String>,
    source_name: Option<String>,
    /// For calls from a member: its container's qualified name (`Reader` for `Reader.Read`),
    /// searched first (`Reader.readRecord` in the same file).
    container: Option<String>,
    target_name: String,
    relationship_type: RelationshipType,
    file_path: String,
}

impl PendingLink {
    pub fn relationship_type(&self) -> RelationshipType {
        self.relationship_type
    }

    /// The workspace-relative path of the file whose analysis found the link.
    pub fn file_path(&self) -> &str {
        &self.file_path
    }
}

/// The outcome of [`apply`].
#[derive(Debug, Clone)]
pub struct Applied {
    /// The file component's id.
    pub file_id: String,
    /// Component ids by symbol index.
    pub symbol_ids: Vec<String>,
    pub counts: ApplyCounts,
    pub pending: Vec<PendingLink>,
    /// True when the text was unchanged and its `calls` from the server named in [`apply`]'s
    /// `keep_calls_from` were kept (nothing to ask the server).
    pub kept_calls: bool,
}

/// Where analysed components hang: under a file (the usual case) or under an existing component
/// (`analyze_code` with `component_id`).
#[derive(Debug, Clone, Copy)]
pub enum Anchor<'a> {
    File,
    Component { id: &'a str, key_prefix: &'a str },
}

/// Writes one file's analysis: its text (once, as the source its symbols' code is cut from), the
/// file component, its symbols, `contains` and `imports` relationships; returns the links to
/// resolve by name once every file of the batch is in. With `keep_calls_from` (a server name),
/// a file whose text is unchanged and whose calls came from that server keeps them.
pub fn apply(
    conn: &dyn Db,
    analysis: &FileAnalysis,
    anchor: Anchor<'_>,
    keep_calls_from: Option<&str>,
) -> Result<Applied, GraphError> {
    super::pg::lock_analysis(conn)?;
    let mut counts = ApplyCounts::default();
    let language = analysis.language.name();
    let path = analysis.file_path.as_str();
    let (file_id, key_prefix) = match anchor {
        Anchor::File => {
            let mut file = NewComponent::new(file_name(path), ComponentType::File);
            file.status = Status::Implemented;
            file.description = analysis.description.clone();
            file.file_path = Some(path.to_owned());
            file.start_line = Some(1);
            file.end_line = Some(analysis.line_count.max(1));
            file.language = Some(language.to_owned());
            file.metadata = json!({ "line_count": analysis.line_count });
            if analysis.has_syntax_errors {
                file.metadata["syntax_errors"] = json!(true);
            }
            let id = upsert(conn, &file, &format!("file:{path}"), path, &mut counts, None)?;
            (id, path.to_owned())
        }
        Anchor::Component { id, key_prefix } => (id.to_owned(), key_prefix.to_owned()),
    };

    let stored = source::store(conn, &key_prefix, &analysis.source)?;
    let kept_calls = stored.unchanged
        && keep_calls_from.is_some_and(|server| stored.calls_from.as_deref() == Some(&format!("lsp:{server}")));

    // This file's symbols have stable keys `prefix::…`: the range [`prefix::`, `prefix:;`) holds
    // exactly those (';' follows ':'), and uses the unique index on stable_key.
    let key_low = format!("{key_prefix}::");
    let key_high = format!("{key_prefix}:;");
    // Relationships this file's analysis made last time are rebuilt from scratch (type codes:
    // `calls` 1, `contains` 3), except kept calls. A `contains` edge from a type here to a
    // method in another file (Go) is kept: that file's analysis made it.
    conn.execute(
        "WITH mine(seq) AS (SELECT seq FROM components WHERE id = ?1 UNION SELECT seq FROM components \
         WHERE origin = 'analysis' AND stable_key >= ?2 AND stable_key < ?3) \
         DELETE FROM relationships WHERE origin = 1 AND source IN (SELECT seq FROM mine) \
         AND (type != 3 OR target IN (SELECT seq FROM mine)) AND (type != 1 OR NOT ?4)",
        &sql_params![file_id.as_str(), key_low.as_str(), key_high.as_str(), kept_calls],
    )?;

    let mut seen_keys: HashMap<String, usize> = HashMap::new();
    let mut keys = HashSet::new();
    let mut symbol_ids = Vec::with_capacity(analysis.symbols.len());
    for symbol in &analysis.symbols {
        let n = seen_keys.entry(symbol.qualified_name.clone()).or_insert(0);
        *n += 1;
        let key = if *n == 1 {
            format!("{key_prefix}::{}", symbol.qualified_name)
        } else {
            format!("{key_prefix}::{}#{n}", symbol.qualified_name)
        };
        let mut component = NewComponent::new(&symbol.name, symbol.component_type);
        component.status = Status::Implemented;
        component.description = symbol.description.clone();
        component.code_text = symbol.code_text.clone();
        component.file_path = Some(path.to_owned());
        component.start_line = Some(symbol.start_line);
        component.end_line = Some(symbol.end_line);
        component.language = Some(language.to_owned());
        component.metadata = json!({ "kind": symbol.kind, "signature": symbol.signature });
        let slice = SourceSlice {
            source_seq: stored.source_seq,
            start_byte: symbol.byte_range.start,
            end_byte: symbol.byte_range.end,
        };
        let context = Some((slice, &stored, analysis.source.as_str()));
        let id = upsert(conn, &component, &key, &symbol.qualified_name, &mut counts, context)?;
        keys.insert(key);
        symbol_ids.push(id);
    }

    // Components of this file that the new analysis no longer has.
    let stale: Vec<String> = {
        let rows = conn.query(
            "SELECT id, stable_key FROM components WHERE origin = 'analysis' AND stable_key >= ?1 AND stable_key < ?2",
            &sql_params![key_low.as_str(), key_high.as_str()],
        )?;
        let mut stale = Vec::new();
        for row in rows {
            if !keys.contains(&row.text(1)?) {
                stale.push(row.text(0)?);
            }
        }
        stale
    };
    for id in &stale {
        conn.execute("DELETE FROM components WHERE id = ?1", &sql_params![id])?;
    }
    counts.removed += stale.len();

    // Derived relationships say so in `origin`; only `calls` carry metadata (approximate).
    let syntax = json!({});
    let mut pending = Vec::new();
    for (idx, symbol) in analysis.symbols.iter().enumerate() {
        match (symbol.parent, &symbol.receiver) {
            (Some(parent), _) => {
                counts.relationships +=
                    link(conn, &symbol_ids[parent], &symbol_ids[idx], RelationshipType::Contains, &syntax)?;
            }
            (None, Some(receiver)) => pending.push(PendingLink {
                source_id: None,
                source_name: Some(receiver.clone()),
                container: None,
                target_name: symbol_ids[idx].clone(),
                relationship_type: RelationshipType::Contains,
                file_path: path.to_owned(),
            }),
            (None, None) => {
                counts.relationships += link(conn, &file_id, &symbol_ids[idx], RelationshipType::Contains, &syntax)?;
            }
        }
    }
    for module in &analysis.imports {
        let module_id = upsert_module(conn, module, language)?;
        counts.relationships += link(conn, &file_id, &module_id, RelationshipType::Imports, &syntax)?;
    }
    for NamedLink { source, target_name, relationship_type } in &analysis.links {
        let (source_id, source_name, container) = match source {
            SourceRef::Symbol(idx) => {
                let container = analysis.symbols[*idx].qualified_name.rsplit_once('.').map(|(c, _)| c.to_owned());
                (Some(symbol_ids[*idx].clone()), None, container)
            }
            SourceRef::Named(name) => (None, Some(name.clone()), None),
        };
        pending.push(PendingLink {
            source_id,
            source_name,
            container,
            target_name: target_name.clone(),
            relationship_type: *relationship_type,
            file_path: path.to_owned(),
        });
    }
    Ok(Applied { file_id, symbol_ids, counts, pending, kept_calls })
}

/// Resolves links known by name: for calls from a member, a member of the same container in the
/// same directory first; then the same file, then the same directory (a Go package, a Python package), then — for `inherits` and `implements` only — anywhere, when exactly one
/// component of a fitting type carries the name. Ambiguous and unknown names are dropped.
/// Returns the number of relationships written.
pub fn resolve(conn: &dyn Db, pending: &[PendingLink]) -> Result<usize, GraphError> {
    super::pg::lock_analysis(conn)?;
    let mut written = 0;
    for pending_link in pending {
        let types: &[&str] = match pending_link.relationship_type {
            RelationshipType::Calls => &["function", "method", "class"],
            _ => &["class", "interface"],
        };
        let source_id = match (&pending_link.source_id, &pending_link.source_name) {
            (Some(id), _) => id.clone(),
            (None, Some(name)) => {
                match find_by_name(conn, name, &["class", "interface"], &pending_link.file_path, false, None)? {
                    Some(id) => id,
                    None => continue,
                }
            }
            (None, None) => continue,
        };
        let (source, target, metadata) = if pending_link.relationship_type == RelationshipType::Contains {
            // The receiver type (found by name) contains the method (known by id).
            (source_id, pending_link.target_name.clone(), json!({}))
        } else {
            let anywhere = pending_link.relationship_type != RelationshipType::Calls;
            let sibling = match (&pending_link.container, pending_link.relationship_type) {
                (Some(container), RelationshipType::Calls) => {
                    find_sibling(conn, container, &pending_link.target_name, &pending_link.file_path, &source_id)?
                }
                _ => None,
            };
            let Some(target) = sibling.map_or_else(
                || {
                    find_by_name(
                        conn,
                        &pending_link.target_name,
                        types,
                        &pending_link.file_path,
                        anywhere,
                        Some(&source_id),
                    )
                },
                |id| Ok(Some(id)),
            )?
            else {
                continue;
            };
            let metadata = if pending_link.relationship_type == RelationshipType::Calls {
                json!({ "approximate": true, "source": "syntax" })
            } else {
                json!({})
            };
            (source_id, target, metadata)
        };
        written += link(conn, &source, &target, pending_link.relationship_type, &metadata)?;
    }
    Ok(written)
}

/// The member of `container` named `name` in the same directory (a call from `Reader.Read` to
/// `readRecord` prefers `Reader.readRecord`; Go methods of one type spread over a package).
fn find_sibling(
    conn: &dyn Db,
    container: &str,
    name: &str,
    file_path: &str,
    exclude: &str,
) -> Result<Option<String>, GraphError> {
    let ids: Vec<String> = conn
        .query(
            "SELECT id FROM components WHERE dir = ?2 AND name = ?4 AND qualified_name = ?1 AND id != ?3 LIMIT 2",
            &sql_params![format!("{container}.{name}"), dir_of(file_path), exclude, name],
        )?
        .iter()
        .map(|row| row.text(0))
        .collect::<Result<_, _>>()?;
    Ok(if ids.len() == 1 { ids.into_iter().next() } else { None })
}

fn find_by_name(
    conn: &dyn Db,
    name: &str,
    types: &[&str],
    file_path: &str,
    anywhere: bool,
    exclude: Option<&str>,
) -> Result<Option<String>, GraphError> {
    let type_list: Vec<String> = types.iter().map(|t| format!("'{t}'")).collect();
    let type_list = type_list.join(", ");
    // `dir = ?3` first in each scope so SQLite searches the (dir, name) index, not every component
    // of a large file. Every scope names every parameter (PostgreSQL types each from its use).
    let scopes: &[&str] = if anywhere {
        &[
            "dir = ?3 AND file_path = ?2",
            "dir = ?3 AND CAST(?2 AS TEXT) IS NOT NULL",
            "CAST(?3 AS TEXT) IS NOT NULL AND CAST(?2 AS TEXT) IS NOT NULL",
        ]
    } else {
        &["dir = ?3 AND file_path = ?2", "dir = ?3 AND CAST(?2 AS TEXT) IS NOT NULL"]
    };
    for scope in scopes {
        let sql = format!(
            "SELECT id FROM components WHERE name = ?1 AND type IN ({type_list}) AND {scope} AND id != ?4 LIMIT 2"
        );
        let ids: Vec<String> = conn
            .query(&sql, &sql_params![name, file_path, dir_of(file_path), exclude.unwrap_or("")])?
            .iter()
            .map(|row| row.text(0))
            .collect::<Result<_, _>>()?;
        match ids.len() {
            0 => continue,
            1 => return Ok(ids.into_iter().next()),
            _ => return Ok(None),
        }
    }
    Ok(None)
}

pub(crate) fn link(
    conn: &dyn Db,
    source: &str,
    target: &str,
    kind: RelationshipType,
    metadata: &Value,
) -> Result<usize, GraphError> {
    if source == target {
        return Ok(0);
    }
    // How many rows were inserted (0 or 1).
    insert_relationship_row(conn, source, target, kind, metadata, "analysis").map(|uid| usize::from(uid.is_some()))
}

/// A stored component as [`upsert`] compares it.
struct StoredRow {
    id: String,
    seq: i64,
    code_text: String,
    description: String,
    start_line: Option<u32>,
    end_line: Option<u32>,
    kind: String,
    metadata: String,
    slice: Option<SourceSlice>,
}

/// An analysed component's code as a range of the source just stored, that source's previous
/// state, and its new text.
type SliceContext<'a> = Option<(SourceSlice, &'a Stored, &'a str)>;

/// Inserts or updates the component with `stable_key`; returns its id. With `context` its code is
/// stored as a range of its source (and compared with its previous range of the previous text).
fn upsert(
    conn: &dyn Db,
    component: &NewComponent,
    stable_key: &str,
    qualified_name: &str,
    counts: &mut ApplyCounts,
    context: SliceContext<'_>,
) -> Result<String, GraphError> {
    let existing: Option<StoredRow> = conn
        .query_opt(
            "SELECT id, seq, code_text, description, start_line, end_line, type, metadata, source_seq, start_byte, \
             end_byte FROM components WHERE stable_key = ?1",
            &sql_params![stable_key],
        )?
        .map(|row| {
            let slice = match (row.opt_int(8)?, row.opt_int(9)?, row.opt_int(10)?) {
                (Some(source_seq), Some(start), Some(end)) => {
                    Some(SourceSlice { source_seq, start_byte: start as usize, end_byte: end as usize })
                }
                _ => None,
            };
            Ok::<_, GraphError>(StoredRow {
                id: row.text(0)?,
                seq: row.int(1)?,
                code_text: row.text(2)?,
                description: row.text(3)?,
                start_line: row.opt_u32(4)?,
                end_line: row.opt_u32(5)?,
                kind: row.text(6)?,
                metadata: row.text(7)?,
                slice,
            })
        })
        .transpose()?;
    let new_slice = context.map(|(slice, _, _)| slice);
    let Some(old) = existing else {
        counts.added += 1;
        return insert_component(conn, component, "analysis", Some((stable_key, qualified_name)), new_slice);
    };
    // The previous code: its range of the previous text (the same text when unchanged), or the
    // code stored inline (manual edits, stores written before sources existed).
    let old_code = match (old.slice, context) {
        (Some(range), Some((_, stored, text))) => {
            let previous = if stored.unchanged { Some(text) } else { stored.previous_text.as_deref() };
            previous.map(|text| source::slice(text, range.start_byte, range.end_byte))
        }
        (Some(_), None) => None,
        (None, _) => Some(old.code_text.as_str()),
    };
    let metadata_now = metadata_text(&component.metadata);
    let content_changed = old_code != Some(component.code_text.as_str()) || old.description != component.description;
    let kind_changed = old.kind != component.component_type.as_str();
    let moved = old.start_line != component.start_line
        || old.end_line != component.end_line
        || kind_changed
        || old.metadata != metadata_now;
    // Only where the code is kept changed (a byte range shifted; inline code, from a store older
    // than sources, now a range): rewritten without counting as a modification.
    let relocated = old.slice != new_slice;
    if content_changed || moved || relocated {
        let stored_code = if new_slice.is_some() { "" } else { component.code_text.as_str() };
        conn.execute(
            &format!(
                "UPDATE components SET code_text = ?2, description = ?3, start_line = ?4, end_line = ?5, type = ?6, \
                 metadata = ?7, language = ?8, source_seq = ?9, start_byte = ?10, end_byte = ?11, \
                 last_modified = CASE WHEN ?13 THEN {} ELSE last_modified END, version = version + ?12 WHERE id = ?1",
                now_sql(conn)
            ),
            &sql_params![
                old.id.as_str(),
                stored_code,
                component.description.as_str(),
                component.start_line,
                component.end_line,
                component.component_type.as_str(),
                metadata_now.as_str(),
                component.language.as_deref(),
                new_slice.map(|s| s.source_seq),
                new_slice.map(|s| s.start_byte as i64),
                new_slice.map(|s| s.end_byte as i64),
                i64::from(content_changed),
                content_changed || moved,
            ],
        )?;
        if content_changed || kind_changed {
            let terms =
                name_terms(&component.name, qualified_name, component.file_path.as_deref(), component.component_type);
            fts_replace(conn, old.seq, &terms, &component.description, &component.code_text)?;
        }
        if content_changed || moved {
            counts.updated += 1;
        } else {
            counts.unchanged += 1;
        }
    } else {
        counts.unchanged += 1;
    }
    Ok(old.id)
}

/// The module component for an import (created on first use; shared by every importer).
fn upsert_module(conn: &dyn Db, module: &str, language: &str) -> Result<String, GraphError> {
    let key = format!("module:{language}:{module}");
    if let Some(row) = conn.query_opt("SELECT id FROM components WHERE stable_key = ?1", &sql_params![key.as_str()])? {
        return row.text(0);
    }
    let mut component = NewComponent::new(module, ComponentType::Module);
    component.status = Status::Implemented;
    component.language = Some(language.to_owned());
    component.metadata = json!({ "language": language, "imported": true });
    insert_component(conn, &component, "analysis", Some((&key, module)), None)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
