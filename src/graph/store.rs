//! [`GraphStore`]: one SQLite connection to the graph database, and the reads and writes every
//! graph tool is made of.
//!
//! Concurrency: the database is in WAL mode (readers never block the writer, nor it them) with a
//! busy timeout, so several filepuff processes can share one file. Every write that is more than
//! one statement runs in a `BEGIN IMMEDIATE` transaction: it takes the write lock up front, so a
//! writer waits (up to the busy timeout) instead of failing half-way when another process
//! committed first. Within one process the connection sits behind a mutex.

use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};
use serde_json::Value;

use super::db::{Db, Dialect, SqlRow, sql_params};
use super::pg::PgStore;
use super::schema::{self, Migrated, SCHEMA_VERSION};
use super::{
    Component, ComponentChanges, ComponentType, GraphError, NewComponent, Relationship, RelationshipType, Status,
    StatusChange, split_identifier,
};

/// How long a writer waits for another process's write lock before failing with `Busy`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The SQL expression for "now" as ISO 8601 UTC with milliseconds.
pub(crate) fn now_sql(db: &dyn Db) -> &'static str {
    match db.dialect() {
        Dialect::Sqlite => "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        Dialect::Postgres => "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    }
}

/// Columns of a full component row, in [`component_from_row`] order: the stored columns, then
/// where analysed code lives (its source, deflated, with the source's key and digest, and the
/// byte range). Select them `FROM` [`COMPONENT_FROM`].
pub(crate) const COMPONENT_COLUMNS: &str = "c.id, c.name, c.qualified_name, c.type, c.status, c.description, \
     c.code_text, c.file_path, c.start_line, c.end_line, c.language, c.created_at, c.last_modified, c.version, \
     c.metadata, c.origin, s.deflated, s.source_seq, s.digest, c.start_byte, c.end_byte";

/// The tables [`COMPONENT_COLUMNS`] come from (`c`: components, `s`: their source).
pub(crate) const COMPONENT_FROM: &str = "components c LEFT JOIN sources s ON s.source_seq = c.source_seq";

/// The same columns with `code_text` left out (empty), for listings; `FROM components c`.
pub(crate) const BRIEF_COLUMNS: &str = "c.id, c.name, c.qualified_name, c.type, c.status, c.description, \
     '' AS code_text, c.file_path, c.start_line, c.end_line, c.language, c.created_at, c.last_modified, c.version, \
     c.metadata, c.origin, NULL, NULL, NULL, NULL, NULL";

/// The same columns with only the code stored inline (manual components' own code; empty for
/// analysed code, which is left in its source): listings that show a signature.
pub(crate) const INLINE_CODE_COLUMNS: &str = "c.id, c.name, c.qualified_name, c.type, c.status, c.description, \
     c.code_text, c.file_path, c.start_line, c.end_line, c.language, c.created_at, c.last_modified, c.version, \
     c.metadata, c.origin, NULL, NULL, NULL, NULL, NULL";

/// `created_at` of a relationship (Unix milliseconds) as ISO 8601 UTC with milliseconds.
fn relationship_created(db: &dyn Db) -> &'static str {
    match db.dialect() {
        Dialect::Sqlite => "strftime('%Y-%m-%dT%H:%M:%fZ', r.created_at / 1000.0, 'unixepoch')",
        Dialect::Postgres => {
            "to_char(to_timestamp(r.created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        }
    }
}

/// Unix milliseconds now, as SQL.
fn now_ms_sql(db: &dyn Db) -> &'static str {
    match db.dialect() {
        Dialect::Sqlite => "CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)",
        Dialect::Postgres => "CAST(round(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)",
    }
}

/// Where a graph lives: an SQLite file (the default) or a PostgreSQL database shared by a team.
#[derive(Debug)]
enum Backend {
    /// One connection behind a mutex (WAL; several processes share the file).
    Sqlite { path: PathBuf, conn: Mutex<Connection> },
    /// A connection pool; see [`super::pg`].
    Postgres(PgStore),
}

/// The graph database of one workspace.
#[derive(Debug)]
pub struct GraphStore {
    backend: Backend,
}

impl GraphStore {
    /// Opens (creating it and its parent directory if needed) the database at `path`, switches it
    /// to WAL mode and brings its schema up to date.
    ///
    /// Errors: [`GraphError::Open`] when the file cannot be created or is not a database;
    /// [`GraphError::SchemaTooNew`] when a newer filepuff wrote it.
    pub fn open(path: &Path) -> Result<GraphStore, GraphError> {
        // Two processes creating the file at once: switching a new database to WAL takes a lock
        // SQLite's busy handler does not wait for ("database is locked"); try again within the
        // busy timeout.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match GraphStore::open_once(path) {
                Err((true, _)) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                outcome => return outcome.map_err(|(_, err)| err),
            }
        }
    }

    /// One attempt of [`GraphStore::open`]; the flag says whether it failed on another
    /// connection's lock.
    fn open_once(path: &Path) -> Result<GraphStore, (bool, GraphError)> {
        let open_error =
            |err: &dyn ToString| (false, GraphError::Open { path: path.to_path_buf(), message: err.to_string() });
        let sqlite_error = |err: rusqlite::Error| {
            let busy = matches!(
                err.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            );
            (busy, GraphError::Open { path: path.to_path_buf(), message: err.to_string() })
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|err| open_error(&err))?;
        }
        let mut conn = Connection::open(path).map_err(sqlite_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite_error)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sqlite_error)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sqlite_error)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sqlite_error)?;
        // A 32 MiB page cache and memory-mapped reads: indexing re-reads the same index pages
        // (stable keys, names) for every file.
        conn.pragma_update(None, "cache_size", -32_768).map_err(sqlite_error)?;
        conn.pragma_update(None, "mmap_size", 256 * 1024 * 1024).map_err(sqlite_error)?;
        match schema::migrate(&mut conn).map_err(sqlite_error)? {
            // A store written by an older filepuff was rewritten more compactly: give the freed
            // pages back to the file system (once; VACUUM needs no other writer meanwhile and
            // waits for one up to the busy timeout).
            Migrated::Current { applied, from } if applied > 0 && from > 0 => {
                conn.execute_batch("VACUUM").map_err(sqlite_error)?;
            }
            Migrated::Current { .. } => {}
            Migrated::TooNew { found } => {
                let err = GraphError::SchemaTooNew { path: path.to_path_buf(), found, supported: SCHEMA_VERSION };
                return Err((false, err));
            }
        }
        Ok(GraphStore { backend: Backend::Sqlite { path: path.to_path_buf(), conn: Mutex::new(conn) } })
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://user:password@host:port/db`,
    /// libpq's URL form) with a connection pool and brings its schema up to date (created on
    /// first use). See [`super::pg`].
    ///
    /// Errors: [`GraphError::Open`] (bad URL, unreachable server, refused login; the message
    /// never holds the password), [`GraphError::SchemaTooNew`].
    pub fn open_postgres(url: &str) -> Result<GraphStore, GraphError> {
        Ok(GraphStore { backend: Backend::Postgres(PgStore::open(url)?) })
    }

    /// Where the graph is, for people: the database file, or the PostgreSQL URL without its
    /// password.
    pub fn location(&self) -> String {
        match &self.backend {
            Backend::Sqlite { path, .. } => path.display().to_string(),
            Backend::Postgres(pg) => pg.redacted_url().to_owned(),
        }
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match &self.backend {
            Backend::Sqlite { .. } => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Runs `f` on a connection (reads; single statements).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&dyn Db) -> Result<T, GraphError>) -> Result<T, GraphError> {
        match &self.backend {
            Backend::Sqlite { conn, .. } => {
                let conn = conn.lock();
                f(&*conn)
            }
            Backend::Postgres(pg) => pg.read(f),
        }
    }

    /// Runs `f` in one transaction (SQLite: `BEGIN IMMEDIATE`), committed when `f` succeeds and
    /// rolled back otherwise.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&dyn Db) -> Result<T, GraphError>) -> Result<T, GraphError> {
        match &self.backend {
            Backend::Sqlite { conn, .. } => {
                let mut conn = conn.lock();
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value = f(&*tx)?;
                tx.commit()?;
                Ok(value)
            }
            Backend::Postgres(pg) => pg.write(f),
        }
    }

    /// Adds a component; returns its new id. Its first status goes into the history.
    pub fn add_component(&self, component: &NewComponent) -> Result<String, GraphError> {
        self.write(|tx| insert_component(tx, component, "manual", None, None))
    }

    /// Changes a component's code, description and/or status and bumps its version (once,
    /// whatever changed). A status change goes into the history with the note `notes`.
    ///
    /// Errors: [`GraphError::NotFound`].
    pub fn update_component(&self, id: &str, changes: &ComponentChanges, notes: &str) -> Result<Component, GraphError> {
        self.write(|tx| {
            let current = component_for_update(tx, id)?.ok_or_else(|| not_found(id))?;
            check_version(&current, changes.expected_version)?;
            let description = changes.description.as_deref().unwrap_or(&current.description);
            let status = changes.status.unwrap_or(current.status);
            tx.execute(
                &format!(
                    "UPDATE components SET description = ?2, status = ?3, version = version + 1, \
                     last_modified = {} WHERE id = ?1",
                    now_sql(tx)
                ),
                &sql_params![id, description, status.as_str()],
            )?;
            // New code is the component's own from now on (no longer a range of its source).
            if let Some(code_text) = &changes.code_text {
                tx.execute(
                    "UPDATE components SET code_text = ?2, source_seq = NULL, start_byte = NULL, end_byte = NULL \
                     WHERE id = ?1",
                    &sql_params![id, code_text],
                )?;
            }
            if changes.code_text.is_some() || changes.description.is_some() {
                let code_text = changes.code_text.as_deref().unwrap_or(&current.code_text);
                let seq = seq_of(tx, id)?.ok_or_else(|| not_found(id))?;
                let terms = name_terms(
                    &current.name,
                    &current.qualified_name,
                    current.file_path.as_deref(),
                    current.component_type,
                );
                fts_replace(tx, seq, &terms, description, code_text)?;
            }
            if status != current.status {
                record_status(tx, id, Some(current.status), status, notes)?;
            }
            component_by_id(tx, id)?.ok_or_else(|| not_found(id))
        })
    }

    /// Sets a component's status (bumping its version) and records the change with `notes`.
    /// Returns the previous status; setting the same status again still records a history entry.
    ///
    /// With `expected_version`, the change is refused unless the component is at that version.
    ///
    /// Errors: [`GraphError::NotFound`], [`GraphError::VersionConflict`].
    pub fn update_status(
        &self,
        id: &str,
        status: Status,
        notes: &str,
        expected_version: Option<i64>,
    ) -> Result<Status, GraphError> {
        self.write(|tx| {
            let current = component_for_update(tx, id)?.ok_or_else(|| not_found(id))?;
            check_version(&current, expected_version)?;
            tx.execute(
                &format!(
                    "UPDATE components SET status = ?2, version = version + 1, last_modified = {} WHERE id = ?1",
                    now_sql(tx)
                ),
                &sql_params![id, status.as_str()],
            )?;
            record_status(tx, id, Some(current.status), status, notes)?;
            Ok(current.status)
        })
    }

    /// A component by id.
    pub fn component(&self, id: &str) -> Result<Option<Component>, GraphError> {
        self.read(|conn| component_by_id(conn, id))
    }

    /// A component by id, else by exact name, else by qualified name, else by case-insensitive
    /// name.
    ///
    /// Errors: [`GraphError::NotFound`]; [`GraphError::Ambiguous`] when several components carry
    /// the name (their ids are in the error).
    pub fn find_component(&self, identifier: &str) -> Result<Component, GraphError> {
        self.read(|conn| {
            if let Some(component) = component_by_id(conn, identifier)? {
                return Ok(component);
            }
            let nocase = match conn.dialect() {
                Dialect::Sqlite => "c.name = ?1 COLLATE NOCASE",
                Dialect::Postgres => "lower(c.name) = lower(?1)",
            };
            for condition in ["c.name = ?1", "c.qualified_name = ?1", nocase] {
                let sql = format!(
                    "SELECT {COMPONENT_COLUMNS} FROM {COMPONENT_FROM} WHERE {condition} \
                     ORDER BY c.file_path NULLS FIRST, c.start_line NULLS FIRST, c.seq LIMIT 21"
                );
                let found: Vec<Component> = conn
                    .query(&sql, &sql_params![identifier])?
                    .iter()
                    .map(component_from_row)
                    .collect::<Result<_, _>>()?;
                match found.len() {
                    0 => continue,
                    1 => return found.into_iter().next().ok_or_else(|| not_found(identifier)),
                    count => {
                        let count = if count > 20 { count_named(conn, condition, identifier)? } else { count };
                        let mut candidates = found;
                        candidates.truncate(20);
                        return Err(GraphError::Ambiguous { name: identifier.to_owned(), count, candidates });
                    }
                }
            }
            Err(not_found(identifier))
        })
    }

    /// Adds a relationship, or updates the metadata of the existing one with the same source,
    /// target and type. Returns its id and whether it was created.
    ///
    /// Errors: [`GraphError::NotFound`] when the source or target does not exist.
    pub fn add_relationship(
        &self,
        source_id: &str,
        target_id: &str,
        relationship_type: RelationshipType,
        metadata: &Value,
    ) -> Result<(String, bool), GraphError> {
        self.write(|tx| {
            for id in [source_id, target_id] {
                if seq_of(tx, id)?.is_none() {
                    return Err(not_found(id));
                }
            }
            // Insert unless it exists (the unique key decides, also against a concurrent
            // writer), then update the metadata of the one that was there.
            if let Some(uid) = insert_relationship_row(tx, source_id, target_id, relationship_type, metadata, "manual")?
            {
                return Ok((uuid_text(&uid), true));
            }
            let existing = tx.query_one(
                "UPDATE relationships SET metadata = ?4 WHERE source = (SELECT seq FROM components WHERE id = ?1) \
                 AND type = ?3 AND target = (SELECT seq FROM components WHERE id = ?2) RETURNING uid",
                &sql_params![source_id, target_id, type_code(relationship_type), stored_metadata(metadata)],
            )?;
            Ok((uuid_text(&existing.blob(0)?), false))
        })
    }

    /// Every relationship that starts or ends at `id`, optionally only of `types` (empty: all),
    /// in creation order.
    pub fn relationships_of(&self, id: &str, types: &[RelationshipType]) -> Result<Vec<Relationship>, GraphError> {
        self.read(|conn| relationships_touching(conn, id, types))
    }

    /// A component's status history, oldest first.
    pub fn status_history(&self, id: &str) -> Result<Vec<StatusChange>, GraphError> {
        self.read(|conn| {
            let rows = conn.query(
                "SELECT old_status, new_status, notes, changed_at FROM status_history WHERE component_id = ?1 ORDER BY seq",
                &sql_params![id],
            )?;
            rows.iter()
                .map(|row| {
                    Ok(StatusChange {
                        old_status: row.opt_text(0)?.as_deref().and_then(Status::parse),
                        new_status: Status::parse(&row.text(1)?).unwrap_or(Status::Planned),
                        notes: row.text(2)?,
                        changed_at: row.text(3)?,
                    })
                })
                .collect()
        })
    }

    /// Every component without its code text (`code_text` is empty), ordered by file, line and
    /// creation. For status reports and planning, which look at the whole graph.
    pub fn all_components_brief(&self) -> Result<Vec<Component>, GraphError> {
        self.read(|conn| {
            conn.query(
                &format!(
                    "SELECT {BRIEF_COLUMNS} FROM components c \
                     ORDER BY c.file_path IS NULL, c.file_path, c.start_line NULLS FIRST, c.seq"
                ),
                &[],
            )?
            .iter()
            .map(component_from_row)
            .collect()
        })
    }

    /// Every relationship (source, target, type), for planning.
    pub fn all_edges(&self) -> Result<Vec<(String, String, RelationshipType)>, GraphError> {
        self.read(|conn| {
            let rows = conn.query(
                "SELECT s.id, t.id, r.type FROM relationships r JOIN components s ON s.seq = r.source \
                 JOIN components t ON t.seq = r.target ORDER BY r.seq",
                &[],
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                if let Some(kind) = type_of_code(row.int(2)?) {
                    out.push((row.text(0)?, row.text(1)?, kind));
                }
            }
            Ok(out)
        })
    }

    /// Lines of code text of each component, by id (a complexity estimate for planning).
    pub fn code_lines(&self) -> Result<std::collections::HashMap<String, usize>, GraphError> {
        self.read(|conn| {
            let (newline, nonempty) = match conn.dialect() {
                Dialect::Sqlite => ("char(10)", "(code_text != '')"),
                Dialect::Postgres => ("chr(10)", "CAST(code_text <> '' AS INTEGER)"),
            };
            let rows = conn.query(
                &format!(
                    "SELECT id, CASE WHEN source_seq IS NOT NULL THEN end_line - start_line + 1 \
                     ELSE length(code_text) - length(replace(code_text, {newline}, '')) + {nonempty} END \
                     FROM components"
                ),
                &[],
            )?;
            let mut out = std::collections::HashMap::new();
            for row in rows {
                out.insert(row.text(0)?, usize::try_from(row.opt_int(1)?.unwrap_or(0)).unwrap_or(0));
            }
            Ok(out)
        })
    }

    /// Analysed `calls` relationships by where they came from: (a language server, syntax).
    pub fn calls_by_source(&self) -> Result<(usize, usize), GraphError> {
        self.read(|conn| {
            let from_lsp = match conn.dialect() {
                Dialect::Sqlite => "json_extract(metadata, '$.source') = 'lsp'",
                Dialect::Postgres => "CAST(metadata AS jsonb) ->> 'source' = 'lsp'",
            };
            let rows = conn.query(
                &format!("SELECT {from_lsp}, count(*) FROM relationships WHERE type = 1 AND origin = 1 GROUP BY 1"),
                &[],
            )?;
            let (mut lsp, mut syntax) = (0, 0);
            for row in rows {
                let n = usize::try_from(row.int(1)?).unwrap_or(0);
                match row.opt_bool(0)? {
                    Some(true) => lsp += n,
                    _ => syntax += n,
                }
            }
            Ok((lsp, syntax))
        })
    }

    /// Counts of components and relationships.
    pub fn counts(&self) -> Result<(usize, usize), GraphError> {
        self.read(|conn| {
            let components = conn.query_one("SELECT count(*) FROM components", &[])?.int(0)?;
            let relationships = conn.query_one("SELECT count(*) FROM relationships", &[])?.int(0)?;
            Ok((components as usize, relationships as usize))
        })
    }
}

/// Refuses a change based on another version than the component's (read under the row lock).
fn check_version(current: &Component, expected: Option<i64>) -> Result<(), GraphError> {
    match expected {
        Some(expected) if expected != current.version => {
            Err(GraphError::VersionConflict { id: current.id.clone(), expected, current: current.version })
        }
        _ => Ok(()),
    }
}

fn not_found(identifier: &str) -> GraphError {
    GraphError::NotFound { identifier: identifier.to_owned() }
}

fn count_named(conn: &dyn Db, condition: &str, identifier: &str) -> Result<usize, GraphError> {
    let count =
        conn.query_one(&format!("SELECT count(*) FROM components c WHERE {condition}"), &sql_params![identifier])?;
    Ok(count.int(0)? as usize)
}

/// 16 random bytes with the UUID v4 version and variant bits set (SQLite's `randomblob`,
/// PostgreSQL's `gen_random_uuid`).
pub(crate) fn new_uid(conn: &dyn Db) -> Result<[u8; 16], GraphError> {
    let sql = match conn.dialect() {
        Dialect::Sqlite => "SELECT randomblob(16)",
        Dialect::Postgres => "SELECT uuid_send(gen_random_uuid())",
    };
    let random = conn.query_one(sql, &[])?.blob(0)?;
    let mut bytes: [u8; 16] = random
        .try_into()
        .map_err(|_| GraphError::Storage { message: "a random id of an unexpected length".to_owned() })?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Ok(bytes)
}

/// A new random id in UUID v4 form.
pub(crate) fn new_id(conn: &dyn Db) -> Result<String, GraphError> {
    Ok(uuid_text(&new_uid(conn)?))
}

/// 16 bytes as a lower-case UUID (`8-4-4-4-12` hex digits).
pub(crate) fn uuid_text(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if hex.len() != 32 {
        return hex;
    }
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// How a relationship type is stored (its index in [`RelationshipType::ALL`]).
pub(crate) fn type_code(kind: RelationshipType) -> i64 {
    RelationshipType::ALL.iter().position(|k| *k == kind).unwrap_or(0) as i64
}

/// The relationship type stored as `code`.
pub(crate) fn type_of_code(code: i64) -> Option<RelationshipType> {
    usize::try_from(code).ok().and_then(|idx| RelationshipType::ALL.get(idx).copied())
}

/// How an origin is stored: 1 for `analysis`, 0 for `manual`.
fn origin_code(origin: &str) -> i64 {
    i64::from(origin == "analysis")
}

/// Relationship metadata as stored: its JSON text, NULL for `{}`.
fn stored_metadata(metadata: &Value) -> Option<String> {
    let text = metadata_text(metadata);
    (text != "{}").then_some(text)
}

/// A component's `seq` (the integer relationships and the search index refer to it by).
pub(crate) fn seq_of(conn: &dyn Db, id: &str) -> Result<Option<i64>, GraphError> {
    conn.query_opt("SELECT seq FROM components WHERE id = ?1", &sql_params![id])?.map(|row| row.int(0)).transpose()
}

/// Makes the search index hold `terms`, `description` and `code` for the component `seq`
/// (SQLite: the FTS5 table; PostgreSQL: a weighted `tsvector`, see [`super::pg::fts_replace`]).
pub(crate) fn fts_replace(
    conn: &dyn Db,
    seq: i64,
    terms: &str,
    description: &str,
    code: &str,
) -> Result<(), GraphError> {
    if conn.dialect() == Dialect::Postgres {
        return super::pg::fts_replace(conn, seq, terms, description, code);
    }
    conn.execute("DELETE FROM components_fts WHERE rowid = ?1", &sql_params![seq])?;
    conn.execute(
        "INSERT INTO components_fts (rowid, name_terms, description, code) VALUES (?1, ?2, ?3, ?4)",
        &sql_params![seq, terms, description, code],
    )?;
    Ok(())
}

/// The words FTS indexes for a component's name column: the name, its qualified name, their
/// camelCase/snake_case parts, and for files and modules the path's words.
pub(crate) fn name_terms(
    name: &str,
    qualified_name: &str,
    file_path: Option<&str>,
    component_type: ComponentType,
) -> String {
    let mut terms = vec![name.to_owned()];
    if qualified_name != name {
        terms.push(qualified_name.to_owned());
    }
    terms.extend(split_identifier(qualified_name));
    if matches!(component_type, ComponentType::File | ComponentType::Module)
        && let Some(path) = file_path
    {
        terms.extend(split_identifier(path));
    }
    terms.join(" ")
}

/// The directory part of a workspace-relative path (`""` for a file at the root).
pub(crate) fn dir_of(file_path: &str) -> &str {
    file_path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Where an analysed component's code is: a byte range of a stored source (see
/// [`super::source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SourceSlice {
    pub source_seq: i64,
    pub start_byte: usize,
    pub end_byte: usize,
}

/// Inserts a component with a fresh id (and, for analysed code, its stable key), indexes it for
/// search and, for manual components, records its first status. With `slice`, the code is
/// stored as that range of a source (`component.code_text` is what the range holds, and is what
/// gets indexed). Returns the id.
pub(crate) fn insert_component(
    tx: &dyn Db,
    component: &NewComponent,
    origin: &str,
    key: Option<(&str, &str)>,
    slice: Option<SourceSlice>,
) -> Result<String, GraphError> {
    let id = new_id(tx)?;
    let (stable_key, qualified_name) = key.unwrap_or(("", &component.name));
    let stable_key = (!stable_key.is_empty()).then_some(stable_key);
    let terms = name_terms(&component.name, qualified_name, component.file_path.as_deref(), component.component_type);
    let stored_code = if slice.is_some() { "" } else { component.code_text.as_str() };
    let now = now_sql(tx);
    let seq = tx
        .query_one(
            &format!(
                "INSERT INTO components (id, name, qualified_name, type, status, description, code_text, file_path, \
                 dir, start_line, end_line, language, created_at, last_modified, version, metadata, origin, \
                 stable_key, source_seq, start_byte, end_byte) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, {now}, {now}, 1, ?13, ?14, ?15, ?16, ?17, \
                 ?18) RETURNING seq"
            ),
            &sql_params![
                id.as_str(),
                component.name.as_str(),
                qualified_name,
                component.component_type.as_str(),
                component.status.as_str(),
                component.description.as_str(),
                stored_code,
                component.file_path.as_deref(),
                component.file_path.as_deref().map(dir_of),
                component.start_line,
                component.end_line,
                component.language.as_deref(),
                metadata_text(&component.metadata),
                origin,
                stable_key,
                slice.map(|s| s.source_seq),
                slice.map(|s| s.start_byte as i64),
                slice.map(|s| s.end_byte as i64),
            ],
        )?
        .int(0)?;
    fts_replace(tx, seq, &terms, &component.description, &component.code_text)?;
    // Analysed components start implemented with no history entry (tens of thousands of
    // "created" rows would say nothing); the history starts with the first real change.
    if origin != "analysis" {
        record_status(tx, &id, None, component.status, "created")?;
    }
    Ok(id)
}

/// A JSON object's text; anything else is wrapped as `{"value": …}`.
pub(crate) fn metadata_text(metadata: &Value) -> String {
    match metadata {
        Value::Object(_) => metadata.to_string(),
        Value::Null => "{}".to_owned(),
        other => serde_json::json!({ "value": other }).to_string(),
    }
}

/// The one `INSERT` of a relationship (a fresh uid; nothing when the unique key of source, type
/// and target exists, also against a concurrent writer): the new row's uid, or `None`.
pub(crate) fn insert_relationship_row(
    tx: &dyn Db,
    source_id: &str,
    target_id: &str,
    relationship_type: RelationshipType,
    metadata: &Value,
    origin: &str,
) -> Result<Option<[u8; 16]>, GraphError> {
    let uid = new_uid(tx)?;
    let inserted = tx.query_opt(
        &format!(
            "INSERT INTO relationships (source, target, type, uid, metadata, origin, created_at) \
             SELECT s.seq, t.seq, ?3, ?4, ?5, ?6, {} FROM components s, components t \
             WHERE s.id = ?1 AND t.id = ?2 ON CONFLICT DO NOTHING RETURNING uid",
            now_ms_sql(tx)
        ),
        &sql_params![
            source_id,
            target_id,
            type_code(relationship_type),
            uid.as_slice(),
            stored_metadata(metadata),
            origin_code(origin)
        ],
    )?;
    Ok(inserted.map(|_| uid))
}

pub(crate) fn record_status(
    tx: &dyn Db,
    id: &str,
    old: Option<Status>,
    new: Status,
    notes: &str,
) -> Result<(), GraphError> {
    tx.execute(
        &format!(
            "INSERT INTO status_history (component_id, old_status, new_status, notes, changed_at) \
             VALUES (?1, ?2, ?3, ?4, {})",
            now_sql(tx)
        ),
        &sql_params![id, old.map(Status::as_str), new.as_str(), notes],
    )?;
    Ok(())
}

pub(crate) fn component_by_id(conn: &dyn Db, id: &str) -> Result<Option<Component>, GraphError> {
    conn.query_opt(&format!("SELECT {COMPONENT_COLUMNS} FROM {COMPONENT_FROM} WHERE c.id = ?1"), &sql_params![id])?
        .map(|row| component_from_row(&row))
        .transpose()
}

/// [`component_by_id`] inside a write that changes the component after reading it: on
/// PostgreSQL the row is locked (`FOR UPDATE`) until the transaction ends, so two writers'
/// read-modify-write cycles run one after the other (SQLite's `BEGIN IMMEDIATE` already
/// serialises every writer).
pub(crate) fn component_for_update(tx: &dyn Db, id: &str) -> Result<Option<Component>, GraphError> {
    if tx.dialect() == Dialect::Postgres {
        tx.query("SELECT seq FROM components WHERE id = ?1 FOR UPDATE", &sql_params![id])?;
    }
    component_by_id(tx, id)
}

pub(crate) fn relationships_touching(
    conn: &dyn Db,
    id: &str,
    types: &[RelationshipType],
) -> Result<Vec<Relationship>, GraphError> {
    let Some(seq) = seq_of(conn, id)? else { return Ok(Vec::new()) };
    let created = relationship_created(conn);
    let rows = conn.query(
        &format!(
            "SELECT r.uid, s.id, t.id, r.type, r.metadata, r.origin, {created}, r.seq AS n \
             FROM relationships r JOIN components s ON s.seq = r.source JOIN components t ON t.seq = r.target \
             WHERE r.source = ?1 UNION ALL \
             SELECT r.uid, s.id, t.id, r.type, r.metadata, r.origin, {created}, r.seq AS n \
             FROM relationships r JOIN components s ON s.seq = r.source JOIN components t ON t.seq = r.target \
             WHERE r.target = ?1 AND r.source != ?1 ORDER BY n"
        ),
        &sql_params![seq],
    )?;
    let mut out = Vec::new();
    for row in rows {
        let Some(kind) = type_of_code(row.int(3)?) else { continue };
        if !types.is_empty() && !types.contains(&kind) {
            continue;
        }
        out.push(Relationship {
            id: uuid_text(&row.blob(0)?),
            source_id: row.text(1)?,
            target_id: row.text(2)?,
            relationship_type: kind,
            metadata: row
                .opt_text(4)?
                .and_then(|m| serde_json::from_str(&m).ok())
                .unwrap_or_else(|| serde_json::json!({})),
            origin: if row.int(5)? == 1 { "analysis" } else { "manual" }.to_owned(),
            created_at: row.text(6)?,
        });
    }
    Ok(out)
}

/// Reads a row selected with [`COMPONENT_COLUMNS`] or [`BRIEF_COLUMNS`]. Analysed code that is a
/// range of a stored source is cut out of it (the source inflated once per process and digest,
/// see [`super::source::cached_text`]).
pub(crate) fn component_from_row(row: &SqlRow) -> Result<Component, GraphError> {
    let kind = row.text(3)?;
    let status = row.text(4)?;
    let metadata = row.text(14)?;
    let mut code_text = row.text(6)?;
    if let (Some(deflated), Some(source_seq), Some(digest)) = (row.opt_blob(16)?, row.opt_int(17)?, row.opt_int(18)?)
        && let (Some(start), Some(end)) = (row.opt_int(19)?, row.opt_int(20)?)
    {
        let text = super::source::cached_text(source_seq, digest, &deflated);
        code_text = super::source::slice(&text, start as usize, end as usize).to_owned();
    }
    Ok(Component {
        id: row.text(0)?,
        name: row.text(1)?,
        qualified_name: row.text(2)?,
        component_type: ComponentType::parse(&kind).unwrap_or(ComponentType::Variable),
        status: Status::parse(&status).unwrap_or(Status::Planned),
        description: row.text(5)?,
        code_text,
        file_path: row.opt_text(7)?,
        start_line: row.opt_u32(8)?,
        end_line: row.opt_u32(9)?,
        language: row.opt_text(10)?,
        created_at: row.text(11)?,
        last_modified: row.text(12)?,
        version: row.int(13)?,
        metadata: serde_json::from_str(&metadata).unwrap_or_else(|_| serde_json::json!({})),
        origin: row.text(15)?,
    })
}
