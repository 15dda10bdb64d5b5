//! `filepuff graph migrate --to postgres://…`: copies a graph into another store (the SQLite
//! file a person started with into the PostgreSQL database a team shares) and verifies it.
//!
//! Rows are copied as they are stored — component ids, stable keys, metadata, creation and
//! modification times, versions, relationship ids and times, the whole status history, the
//! analysed sources — with their integer keys (`seq`), so relationships need no remapping; the
//! target's search index is built from the copied rows (the same words the source indexed), and
//! its identity sequences continue after the copied keys. The target must be empty. Afterwards
//! every table is counted on both sides.

use super::GraphError;
use super::db::{Db, Dialect, SqlValue};
use super::store::{COMPONENT_COLUMNS, COMPONENT_FROM, GraphStore, component_from_row, fts_replace, name_terms};

/// The tables copied, in dependency order, with their columns (the `seq` key first).
const TABLES: &[(&str, &str)] = &[
    ("sources", "source_seq, source_key, deflated, digest, calls_from"),
    (
        "components",
        "seq, id, name, qualified_name, type, status, description, code_text, file_path, dir, start_line, end_line, \
         language, created_at, last_modified, version, metadata, origin, stable_key, source_seq, start_byte, end_byte",
    ),
    ("relationships", "seq, source, target, type, uid, metadata, origin, created_at"),
    ("status_history", "seq, component_id, old_status, new_status, notes, changed_at"),
];

/// Rows per table, in [`TABLES`] order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCounts(pub Vec<(&'static str, usize)>);

/// Counts every copied table of `store`.
pub fn count_tables(store: &GraphStore) -> Result<TableCounts, GraphError> {
    store
        .read(|db| {
            let mut out = Vec::new();
            for (table, _) in TABLES {
                let n = db.query_one(&format!("SELECT count(*) FROM {table}"), &[])?.int(0)?;
                out.push((*table, usize::try_from(n).unwrap_or(0)));
            }
            Ok(out)
        })
        .map(TableCounts)
}

/// What [`copy`] did: the rows on each side afterwards.
#[derive(Debug, Clone)]
pub struct Copied {
    pub source: TableCounts,
    pub target: TableCounts,
}

impl Copied {
    /// Whether every table has as many rows in the target as in the source.
    pub fn verified(&self) -> bool {
        self.source == self.target
    }
}

/// Copies every row of `from` into `to` in one transaction of `to`.
///
/// Errors: [`GraphError::NotEmpty`] when `to` already holds components (a migration goes into
/// an empty graph); store failures of either side.
pub fn copy(from: &GraphStore, to: &GraphStore) -> Result<Copied, GraphError> {
    let (existing, _) = to.counts()?;
    if existing > 0 {
        return Err(GraphError::NotEmpty { target: to.location(), components: existing });
    }
    // Read everything first (one read of the source), then write it in one transaction.
    let mut tables: Vec<(&str, &str, Vec<Vec<SqlValue>>)> = Vec::new();
    for (table, columns) in TABLES {
        let rows = from.read(|db| db.query(&format!("SELECT {columns} FROM {table} ORDER BY 1"), &[]))?;
        tables.push((table, columns, rows.into_iter().map(|row| row.0).collect()));
    }
    let indexed = from.read(|db| {
        let rows = db.query(&format!("SELECT {COMPONENT_COLUMNS}, c.seq FROM {COMPONENT_FROM} ORDER BY c.seq"), &[])?;
        rows.iter()
            .map(|row| {
                let component = component_from_row(row)?;
                let terms = name_terms(
                    &component.name,
                    &component.qualified_name,
                    component.file_path.as_deref(),
                    component.component_type,
                );
                Ok((row.int(21)?, terms, component.description, component.code_text))
            })
            .collect::<Result<Vec<_>, GraphError>>()
    })?;
    to.write(|db| {
        for (table, columns, rows) in &tables {
            let placeholders: Vec<String> = (1..=columns.split(',').count()).map(|n| format!("?{n}")).collect();
            let sql = format!("INSERT INTO {table} ({columns}) VALUES ({})", placeholders.join(", "));
            for row in rows {
                db.execute(&sql, row)?;
            }
        }
        for (seq, terms, description, code) in &indexed {
            fts_replace(db, *seq, terms, description, code)?;
        }
        if db.dialect() == Dialect::Postgres {
            restart_identities(db)?;
        }
        Ok(())
    })?;
    Ok(Copied { source: count_tables(from)?, target: count_tables(to)? })
}

/// Makes each PostgreSQL identity continue after the largest copied key.
fn restart_identities(db: &dyn Db) -> Result<(), GraphError> {
    for (table, columns) in TABLES {
        let key = columns.split(',').next().unwrap_or("seq").trim();
        db.query(
            &format!(
                "SELECT setval(pg_get_serial_sequence('{table}', '{key}'), \
                 (SELECT COALESCE(max({key}), 0) + 1 FROM {table}), false)"
            ),
            &[],
        )?;
    }
    Ok(())
}
