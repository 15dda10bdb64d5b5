//! Ranked search over the graph: SQLite FTS5 with BM25, no network and no model.
//!
//! Indexed columns (see the schema): `name_terms` (the name, the qualified name and their
//! camelCase/snake_case parts, plus path words for files and modules), `description`, and
//! `code_text`, all through FTS5's `unicode61` tokenizer (lowercased, split on anything that is
//! not a letter or digit).
//!
//! Query: every word of the query and its camelCase/snake_case parts become FTS5 terms joined by
//! `OR`, so a component matching more of them ranks higher. Score: `-bm25(name_terms ×
//! [`NAME_WEIGHT`], description × [`DESCRIPTION_WEIGHT`], code × [`CODE_WEIGHT`])`, higher is
//! better; ties by name.

use super::db::{Dialect, sql_params};
use super::store::{GraphStore, INLINE_CODE_COLUMNS, component_from_row};
use super::{Component, ComponentType, GraphError, split_identifier};

/// BM25 weight of a hit in the name column.
pub const NAME_WEIGHT: f64 = 10.0;
/// BM25 weight of a hit in the description.
pub const DESCRIPTION_WEIGHT: f64 = 4.0;
/// BM25 weight of a hit in the code text.
pub const CODE_WEIGHT: f64 = 1.0;

/// Longest query, in terms, sent to FTS5 (longer queries keep their first terms).
const MAX_TERMS: usize = 64;

/// One search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// Without analysed code (`code_text` is empty for it; [`GraphStore::component`] has it):
    /// results are listed by name, signature and description, and an analysed component's code
    /// would have to be inflated from its file's source. Code stored with the component (manual
    /// components) is there.
    pub component: Component,
    /// `-bm25(…)`: higher is better; only comparable within one query.
    pub score: f64,
}

/// The FTS5 query for `text`: its words and their parts, quoted, joined by `OR`. `None` when the
/// text has no letters or digits.
pub fn fts_query(text: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let whole = word.to_lowercase();
        if !terms.contains(&whole) {
            terms.push(whole);
        }
        for part in split_identifier(word) {
            if !terms.contains(&part) {
                terms.push(part);
            }
        }
    }
    terms.truncate(MAX_TERMS);
    (!terms.is_empty()).then(|| terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

impl GraphStore {
    /// The `limit` best components for `query`, optionally only of `types` (empty: all).
    pub fn search(&self, query: &str, types: &[ComponentType], limit: usize) -> Result<Vec<SearchHit>, GraphError> {
        let Some(fts) = fts_query(query) else { return Ok(Vec::new()) };
        let type_filter = if types.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = types.iter().map(|t| format!("'{}'", t.as_str())).collect();
            format!("AND c.type IN ({})", list.join(", "))
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|conn| {
            if conn.dialect() == Dialect::Postgres {
                return super::pg::search(conn, query, &type_filter, limit);
            }
            let sql = format!(
                "SELECT {INLINE_CODE_COLUMNS}, bm25(components_fts, {NAME_WEIGHT}, {DESCRIPTION_WEIGHT}, {CODE_WEIGHT}) AS rank \
                 FROM components_fts JOIN components c ON c.seq = components_fts.rowid \
                 WHERE components_fts MATCH ?1 {type_filter} ORDER BY rank, c.name, c.seq LIMIT ?2"
            );
            conn.query(&sql, &sql_params![fts, limit])?
                .iter()
                .map(|row| {
                    let rank = row.real(21)?;
                    Ok(SearchHit { component: component_from_row(row)?, score: (-rank * 1e4).round() / 1e4 })
                })
                .collect()
        })
    }
}
