//! Analysed sources: the text each analysis read, stored once per file (table `sources`),
//! raw-deflate compressed, so that an analysed component's `code_text` is a byte range of it
//! rather than a copy (a class's code used to be stored again inside its file's other copies,
//! its methods' code again inside the class's).
//!
//! A source is keyed by what its analysis was anchored to: the workspace-relative path of a file,
//! or `component:<id>` for `analyze_code` with a component. `digest` (FNV-1a, 64 bits) tells a
//! re-analysis whether the text changed; `calls_from` remembers where the file's `calls` came
//! from (`lsp:gopls`, `syntax`), so `graph index` can keep a server's calls for a file whose
//! text did not change instead of asking again.

use std::cell::RefCell;
use std::sync::Arc;

use super::GraphError;
use super::db::{Db, sql_params};

/// Deflate level: 6 is zlib's default, within a few percent of 9 on source code at about a
/// third of the time.
const LEVEL: u8 = 6;
/// Inflated sources kept per thread for reading components (a search's hits share files).
const CACHED: usize = 16;

/// FNV-1a, 64 bits, as SQLite stores integers.
pub fn digest(text: &str) -> i64 {
    let hash = text
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    hash as i64
}

/// `text`, raw-deflate compressed.
pub fn deflate(text: &str) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec(text.as_bytes(), LEVEL)
}

/// The text of `deflated`; lossy on corrupt data (a damaged source yields what could be
/// recovered, never a panic).
pub fn inflate(deflated: &[u8]) -> String {
    match miniz_oxide::inflate::decompress_to_vec(deflated) {
        Ok(bytes) => {
            String::from_utf8(bytes).unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
        }
        Err(err) => String::from_utf8_lossy(&err.output).into_owned(),
    }
}

/// `text[start..end]`, clamped to the text and to character boundaries.
pub fn slice(text: &str, start: usize, end: usize) -> &str {
    let mut start = start.min(text.len());
    let mut end = end.clamp(start, text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    &text[start..end]
}

thread_local! {
    static INFLATED: RefCell<Vec<(i64, i64, Arc<str>)>> = const { RefCell::new(Vec::new()) };
}

/// The text of source `source_seq` whose digest is `digest`, inflated from `deflated` unless this
/// thread inflated it recently. The digest keys the cache, so a source rewritten since is
/// inflated again.
pub fn cached_text(source_seq: i64, digest: i64, deflated: &[u8]) -> Arc<str> {
    INFLATED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(pos) = cache.iter().position(|(seq, d, _)| *seq == source_seq && *d == digest) {
            let entry = cache.remove(pos);
            let text = entry.2.clone();
            cache.push(entry);
            return text;
        }
        let text: Arc<str> = Arc::from(inflate(deflated));
        if cache.len() >= CACHED {
            cache.remove(0);
        }
        cache.push((source_seq, digest, text.clone()));
        text
    })
}

/// A source as it was before [`store`] wrote the new text.
#[derive(Debug, Clone)]
pub struct Stored {
    pub source_seq: i64,
    /// Whether the stored text equals the new one (same digest).
    pub unchanged: bool,
    /// The previous text, when it differs from the new one (to compare components' old code).
    pub previous_text: Option<String>,
    /// Where the calls of the previous text came from.
    pub calls_from: Option<String>,
}

/// Stores `text` as the source `key` (inserting or replacing it; `calls_from` is cleared when
/// the text changed) and says what was there before.
pub fn store(conn: &dyn Db, key: &str, text: &str) -> Result<Stored, GraphError> {
    let digest = digest(text);
    let existing = conn
        .query_opt("SELECT source_seq, digest, calls_from FROM sources WHERE source_key = ?1", &sql_params![key])?
        .map(|row| Ok::<_, GraphError>((row.int(0)?, row.int(1)?, row.opt_text(2)?)))
        .transpose()?;
    match existing {
        Some((source_seq, old_digest, calls_from)) if old_digest == digest => {
            Ok(Stored { source_seq, unchanged: true, previous_text: None, calls_from })
        }
        Some((source_seq, _, calls_from)) => {
            let old = conn
                .query_one("SELECT deflated FROM sources WHERE source_seq = ?1", &sql_params![source_seq])?
                .blob(0)?;
            conn.execute(
                "UPDATE sources SET deflated = ?2, digest = ?3, calls_from = NULL WHERE source_seq = ?1",
                &sql_params![source_seq, deflate(text), digest],
            )?;
            Ok(Stored { source_seq, unchanged: false, previous_text: Some(inflate(&old)), calls_from })
        }
        None => {
            let source_seq = conn
                .query_one(
                    "INSERT INTO sources (source_key, deflated, digest) VALUES (?1, ?2, ?3) RETURNING source_seq",
                    &sql_params![key, deflate(text), digest],
                )?
                .int(0)?;
            Ok(Stored { source_seq, unchanged: false, previous_text: None, calls_from: None })
        }
    }
}

/// Records where the calls of source `key` came from.
pub fn set_calls_from(conn: &dyn Db, key: &str, calls_from: &str) -> Result<(), GraphError> {
    conn.execute("UPDATE sources SET calls_from = ?2 WHERE source_key = ?1", &sql_params![key, calls_from])?;
    Ok(())
}

/// Deletes the sources no component refers to any more (files that vanished, replaced
/// analyses). Returns how many.
pub fn delete_unused(conn: &dyn Db) -> Result<usize, GraphError> {
    conn.execute(
        "DELETE FROM sources WHERE source_seq NOT IN \
         (SELECT source_seq FROM components WHERE source_seq IS NOT NULL)",
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_round_trip_and_slices_stay_on_character_boundaries() {
        let text = "func Größe() {}\n// 日本語\n".repeat(50);
        assert_eq!(inflate(&deflate(&text)), text);
        assert!(deflate(&text).len() < text.len() / 4);
        assert_eq!(slice("aé b", 2, 4), "é ");
        assert_eq!(slice("aé b", 2, 3), "é"); // end inside `é` moves past it
        assert_eq!(slice("ab", 5, 9), "");
        assert_ne!(digest("a"), digest("b"));
        let _ = inflate(b"not deflate"); // corrupt data: no panic
    }
}
