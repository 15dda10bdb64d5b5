//! Schema migrations of the graph store, versioned with `PRAGMA user_version`.
//!
//! Migration `n` (1-based) takes the schema from version `n - 1` to `n`; each runs in its own
//! transaction together with the version bump, so a crash leaves the previous version intact.
//! Never edit a released migration: append a new one.

use rusqlite::Connection;

/// The migrations, in order. `MIGRATIONS.len()` is the current schema version.
const MIGRATIONS: &[&str] = &[
    // 1: components, relationships, status history, the FTS5 index kept in sync by triggers.
    r#"
    CREATE TABLE components (
        seq            INTEGER PRIMARY KEY,
        id             TEXT NOT NULL UNIQUE,
        name           TEXT NOT NULL,
        qualified_name TEXT NOT NULL,
        type           TEXT NOT NULL,
        status         TEXT NOT NULL,
        description    TEXT NOT NULL DEFAULT '',
        code_text      TEXT NOT NULL DEFAULT '',
        file_path      TEXT,
        dir            TEXT,
        start_line     INTEGER,
        end_line       INTEGER,
        language       TEXT,
        created_at     TEXT NOT NULL,
        last_modified  TEXT NOT NULL,
        version        INTEGER NOT NULL DEFAULT 1,
        metadata       TEXT NOT NULL DEFAULT '{}',
        origin         TEXT NOT NULL DEFAULT 'manual',
        stable_key     TEXT UNIQUE,
        name_terms     TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX components_by_name ON components(name);
    CREATE INDEX components_by_file ON components(file_path);
    CREATE INDEX components_by_dir_name ON components(dir, name);
    CREATE INDEX components_by_status ON components(status);

    CREATE TABLE relationships (
        id          TEXT PRIMARY KEY,
        source_id   TEXT NOT NULL REFERENCES components(id) ON DELETE CASCADE,
        target_id   TEXT NOT NULL REFERENCES components(id) ON DELETE CASCADE,
        type        TEXT NOT NULL,
        metadata    TEXT NOT NULL DEFAULT '{}',
        origin      TEXT NOT NULL DEFAULT 'manual',
        created_at  TEXT NOT NULL,
        UNIQUE (source_id, target_id, type)
    );
    CREATE INDEX relationships_by_target ON relationships(target_id, type);

    CREATE TABLE status_history (
        seq          INTEGER PRIMARY KEY,
        component_id TEXT NOT NULL REFERENCES components(id) ON DELETE CASCADE,
        old_status   TEXT,
        new_status   TEXT NOT NULL,
        notes        TEXT NOT NULL DEFAULT '',
        changed_at   TEXT NOT NULL
    );
    CREATE INDEX status_history_by_component ON status_history(component_id, seq);

    CREATE VIRTUAL TABLE components_fts USING fts5(
        name_terms, description, code_text,
        content = 'components', content_rowid = 'seq', tokenize = 'porter unicode61'
    );
    CREATE TRIGGER components_fts_insert AFTER INSERT ON components BEGIN
        INSERT INTO components_fts(rowid, name_terms, description, code_text)
        VALUES (new.seq, new.name_terms, new.description, new.code_text);
    END;
    CREATE TRIGGER components_fts_delete AFTER DELETE ON components BEGIN
        INSERT INTO components_fts(components_fts, rowid, name_terms, description, code_text)
        VALUES ('delete', old.seq, old.name_terms, old.description, old.code_text);
    END;
    CREATE TRIGGER components_fts_update AFTER UPDATE OF name_terms, description, code_text ON components BEGIN
        INSERT INTO components_fts(components_fts, rowid, name_terms, description, code_text)
        VALUES ('delete', old.seq, old.name_terms, old.description, old.code_text);
        INSERT INTO components_fts(rowid, name_terms, description, code_text)
        VALUES (new.seq, new.name_terms, new.description, new.code_text);
    END;
    "#,
    // 2: compact storage (docs/graph.md "Storage"). Analysed code is kept once per file, deflated,
    // in `sources` (components point at their byte range) instead of once per component — a
    // class's code held its methods' code again; the FTS index becomes contentless (filled from
    // the code the analysis read), so `name_terms` need not be stored; relationships refer to
    // components by their integer `seq` instead of two 36-byte UUIDs (and are unique on
    // (source, type, target) over those integers), with type and origin as small integers, the
    // UUID as 16 bytes, `{}` metadata as NULL and the creation time in Unix milliseconds;
    // `components_by_status` was never used by a query. Existing rows keep their inline
    // `code_text` until their file is analysed again.
    r#"
    CREATE TABLE sources (
        source_seq  INTEGER PRIMARY KEY,
        source_key  TEXT NOT NULL UNIQUE,
        deflated    BLOB NOT NULL,
        digest      INTEGER NOT NULL,
        calls_from  TEXT
    );
    ALTER TABLE components ADD COLUMN source_seq INTEGER;
    ALTER TABLE components ADD COLUMN start_byte INTEGER;
    ALTER TABLE components ADD COLUMN end_byte INTEGER;

    DROP TRIGGER components_fts_insert;
    DROP TRIGGER components_fts_delete;
    DROP TRIGGER components_fts_update;
    DROP TABLE components_fts;
    CREATE VIRTUAL TABLE components_fts USING fts5(
        name_terms, description, code,
        content = '', contentless_delete = 1, tokenize = 'porter unicode61'
    );
    INSERT INTO components_fts(rowid, name_terms, description, code)
        SELECT seq, name_terms, description, code_text FROM components;
    CREATE TRIGGER components_fts_delete AFTER DELETE ON components BEGIN
        DELETE FROM components_fts WHERE rowid = old.seq;
    END;
    ALTER TABLE components DROP COLUMN name_terms;
    DROP INDEX components_by_status;

    CREATE TABLE relationships_v2 (
        seq         INTEGER PRIMARY KEY,
        source      INTEGER NOT NULL REFERENCES components(seq) ON DELETE CASCADE,
        target      INTEGER NOT NULL REFERENCES components(seq) ON DELETE CASCADE,
        type        INTEGER NOT NULL,
        uid         BLOB NOT NULL,
        metadata    TEXT,
        origin      INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        UNIQUE (source, type, target)
    );
    INSERT INTO relationships_v2 (source, target, type, uid, metadata, origin, created_at)
        SELECT s.seq, t.seq,
               CASE r.type WHEN 'imports' THEN 0 WHEN 'calls' THEN 1 WHEN 'inherits' THEN 2
                           WHEN 'contains' THEN 3 WHEN 'depends_on' THEN 4 ELSE 5 END,
               unhex(replace(r.id, '-', '')), NULLIF(r.metadata, '{}'), r.origin = 'analysis',
               CAST(round((julianday(r.created_at) - 2440587.5) * 86400000) AS INTEGER)
        FROM relationships r JOIN components s ON s.id = r.source_id JOIN components t ON t.id = r.target_id
        ORDER BY r.rowid;
    DROP TABLE relationships;
    ALTER TABLE relationships_v2 RENAME TO relationships;
    CREATE INDEX relationships_by_target ON relationships(target, type);
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Outcome of [`migrate`].
#[derive(Debug, PartialEq, Eq)]
pub enum Migrated {
    /// The store is at [`SCHEMA_VERSION`] (after running `applied` migrations from version
    /// `from`; 0 is a new store).
    Current { applied: usize, from: i64 },
    /// The store is newer than this build; nothing was changed.
    TooNew { found: i64 },
}

/// Brings the schema to [`SCHEMA_VERSION`]. Concurrent openers serialise on the write lock
/// (`BEGIN IMMEDIATE`) and re-read the version inside it, so each migration runs once.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<Migrated> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// [`migrate`], stopping at version `target` (tests build older stores with it).
pub(crate) fn migrate_to(conn: &mut Connection, target: i64) -> rusqlite::Result<Migrated> {
    let mut applied = 0;
    let mut from = None;
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        // A negative version is not one filepuff wrote: refuse it like a newer one.
        if !(0..=SCHEMA_VERSION).contains(&version) {
            return Ok(Migrated::TooNew { found: version });
        }
        let from = *from.get_or_insert(version);
        if version >= target {
            tx.commit()?;
            return Ok(Migrated::Current { applied, from });
        }
        let Some(migration) = usize::try_from(version).ok().and_then(|v| MIGRATIONS.get(v)) else {
            return Ok(Migrated::TooNew { found: version });
        };
        tx.execute_batch(migration)?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
        applied += 1;
    }
}
