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
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Outcome of [`migrate`].
#[derive(Debug, PartialEq, Eq)]
pub enum Migrated {
    /// The store is at [`SCHEMA_VERSION`] (after running `applied` migrations).
    Current { applied: usize },
    /// The store is newer than this build; nothing was changed.
    TooNew { found: i64 },
}

/// Brings the schema to [`SCHEMA_VERSION`]. Concurrent openers serialise on the write lock
/// (`BEGIN IMMEDIATE`) and re-read the version inside it, so each migration runs once.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<Migrated> {
    let mut applied = 0;
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        // A negative version is not one filepuff wrote: refuse it like a newer one.
        if !(0..=SCHEMA_VERSION).contains(&version) {
            return Ok(Migrated::TooNew { found: version });
        }
        if version == SCHEMA_VERSION {
            tx.commit()?;
            return Ok(Migrated::Current { applied });
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
