//! [`Db`]: the SQL connection every graph read and write goes through, with one implementation
//! per store — SQLite (a rusqlite connection or transaction) and PostgreSQL (a transaction on a
//! pooled connection, see [`super::postgres`]) — and the values ([`SqlValue`]) and rows
//! ([`SqlRow`]) it passes.
//!
//! The graph's SQL is written once, with SQLite's numbered placeholders (`?1`, `?2`, …; the
//! PostgreSQL side rewrites them to `$1`, `$2`, …). Where the two dialects differ (time
//! functions, full text search, case-insensitive comparison) the caller asks
//! [`Db::dialect`]. Parameters bind by the type the database expects (an integer parameter of an
//! `INT4` or `BOOL` position is converted), so one statement serves both.

use super::GraphError;

/// Which SQL dialect a [`Db`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// One SQL value, bound as a parameter or read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    /// SQLite stores it as 0/1; PostgreSQL as `boolean`.
    Bool(bool),
}

impl From<&str> for SqlValue {
    fn from(value: &str) -> SqlValue {
        SqlValue::Text(value.to_owned())
    }
}
impl From<String> for SqlValue {
    fn from(value: String) -> SqlValue {
        SqlValue::Text(value)
    }
}
impl From<&String> for SqlValue {
    fn from(value: &String) -> SqlValue {
        SqlValue::Text(value.clone())
    }
}
impl From<i64> for SqlValue {
    fn from(value: i64) -> SqlValue {
        SqlValue::Int(value)
    }
}
impl From<u32> for SqlValue {
    fn from(value: u32) -> SqlValue {
        SqlValue::Int(i64::from(value))
    }
}
impl From<bool> for SqlValue {
    fn from(value: bool) -> SqlValue {
        SqlValue::Bool(value)
    }
}
impl From<&[u8]> for SqlValue {
    fn from(value: &[u8]) -> SqlValue {
        SqlValue::Blob(value.to_vec())
    }
}
impl From<Vec<u8>> for SqlValue {
    fn from(value: Vec<u8>) -> SqlValue {
        SqlValue::Blob(value)
    }
}
impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(value: Option<T>) -> SqlValue {
        value.map_or(SqlValue::Null, Into::into)
    }
}

/// Parameters for [`Db::execute`] / [`Db::query`]: `sql_params![a, b]` is `[SqlValue::from(a),
/// SqlValue::from(b)]`.
macro_rules! sql_params {
    ($($value:expr),* $(,)?) => { [$($crate::graph::db::SqlValue::from($value)),*] };
}
pub(crate) use sql_params;

/// One result row: its columns in select order.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlRow(pub Vec<SqlValue>);

impl SqlRow {
    fn value(&self, idx: usize) -> Result<&SqlValue, GraphError> {
        self.0.get(idx).ok_or_else(|| GraphError::Storage { message: format!("the row has no column {idx}") })
    }

    fn mismatch(&self, idx: usize, wanted: &str) -> GraphError {
        GraphError::Storage { message: format!("column {idx} is {:?}, not {wanted}", self.0.get(idx)) }
    }

    /// Column `idx` as text. Errors: [`GraphError::Storage`] when it is NULL or not text.
    pub fn text(&self, idx: usize) -> Result<String, GraphError> {
        self.opt_text(idx)?.ok_or_else(|| self.mismatch(idx, "text"))
    }

    /// Column `idx` as text or NULL.
    pub fn opt_text(&self, idx: usize) -> Result<Option<String>, GraphError> {
        match self.value(idx)? {
            SqlValue::Null => Ok(None),
            SqlValue::Text(text) => Ok(Some(text.clone())),
            _ => Err(self.mismatch(idx, "text")),
        }
    }

    /// Column `idx` as an integer (a boolean is 0 or 1).
    pub fn int(&self, idx: usize) -> Result<i64, GraphError> {
        self.opt_int(idx)?.ok_or_else(|| self.mismatch(idx, "an integer"))
    }

    /// Column `idx` as an integer or NULL.
    pub fn opt_int(&self, idx: usize) -> Result<Option<i64>, GraphError> {
        match self.value(idx)? {
            SqlValue::Null => Ok(None),
            SqlValue::Int(value) => Ok(Some(*value)),
            SqlValue::Bool(value) => Ok(Some(i64::from(*value))),
            _ => Err(self.mismatch(idx, "an integer")),
        }
    }

    /// Column `idx` as a line number or NULL (a value outside `u32` is NULL).
    pub fn opt_u32(&self, idx: usize) -> Result<Option<u32>, GraphError> {
        Ok(self.opt_int(idx)?.and_then(|value| u32::try_from(value).ok()))
    }

    /// Column `idx` as a boolean (SQLite: non-zero); NULL is `None`.
    pub fn opt_bool(&self, idx: usize) -> Result<Option<bool>, GraphError> {
        Ok(self.opt_int(idx)?.map(|value| value != 0))
    }

    /// Column `idx` as a float (an integer converts).
    pub fn real(&self, idx: usize) -> Result<f64, GraphError> {
        match self.value(idx)? {
            SqlValue::Real(value) => Ok(*value),
            SqlValue::Int(value) => Ok(*value as f64),
            _ => Err(self.mismatch(idx, "a number")),
        }
    }

    /// Column `idx` as bytes or NULL.
    pub fn opt_blob(&self, idx: usize) -> Result<Option<Vec<u8>>, GraphError> {
        match self.value(idx)? {
            SqlValue::Null => Ok(None),
            SqlValue::Blob(bytes) => Ok(Some(bytes.clone())),
            _ => Err(self.mismatch(idx, "bytes")),
        }
    }

    /// Column `idx` as bytes. Errors: [`GraphError::Storage`] when it is NULL.
    pub fn blob(&self, idx: usize) -> Result<Vec<u8>, GraphError> {
        self.opt_blob(idx)?.ok_or_else(|| self.mismatch(idx, "bytes"))
    }
}

/// A connection (or transaction) of a graph store. Not shared between threads: the store hands
/// one to a closure for the length of a read or a transaction.
pub trait Db {
    /// The SQL dialect, for the few statements written twice.
    fn dialect(&self) -> Dialect;

    /// Runs one statement; returns the rows it changed.
    ///
    /// Errors: [`GraphError::Busy`] (lock wait or serialization conflict), else
    /// [`GraphError::Storage`].
    fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<usize, GraphError>;

    /// Runs one query and collects its rows.
    ///
    /// Errors: as [`Db::execute`].
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>, GraphError>;

    /// The first row of a query, if any.
    fn query_opt(&self, sql: &str, params: &[SqlValue]) -> Result<Option<SqlRow>, GraphError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The first row of a query that always returns one (`count(*)`, `RETURNING`).
    ///
    /// Errors: [`GraphError::Storage`] when there is none.
    fn query_one(&self, sql: &str, params: &[SqlValue]) -> Result<SqlRow, GraphError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| GraphError::Storage { message: "a query that returns one row returned none".to_owned() })
    }
}

// ---- SQLite ---------------------------------------------------------------------------------

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            SqlValue::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            SqlValue::Int(value) => ToSqlOutput::Borrowed(ValueRef::Integer(*value)),
            SqlValue::Real(value) => ToSqlOutput::Borrowed(ValueRef::Real(*value)),
            SqlValue::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
            SqlValue::Blob(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            SqlValue::Bool(value) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*value))),
        })
    }
}

impl Db for rusqlite::Connection {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<usize, GraphError> {
        Ok(self.prepare_cached(sql)?.execute(rusqlite::params_from_iter(params.iter()))?)
    }

    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>, GraphError> {
        use rusqlite::types::ValueRef;
        let mut stmt = self.prepare_cached(sql)?;
        let columns = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for idx in 0..columns {
                values.push(match row.get_ref(idx)? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(value) => SqlValue::Int(value),
                    ValueRef::Real(value) => SqlValue::Real(value),
                    ValueRef::Text(text) => SqlValue::Text(String::from_utf8_lossy(text).into_owned()),
                    ValueRef::Blob(bytes) => SqlValue::Blob(bytes.to_vec()),
                });
            }
            out.push(SqlRow(values));
        }
        Ok(out)
    }
}

/// `sql` with SQLite's numbered placeholders `?N` rewritten as PostgreSQL's `$N` (outside
/// string literals).
pub fn postgres_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut in_literal = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_literal = !in_literal;
                out.push(c);
            }
            '?' if !in_literal && chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_rewritten_outside_literals_only() {
        assert_eq!(postgres_placeholders("SELECT ?1, '?2', ?10 WHERE a = ?2"), "SELECT $1, '?2', $10 WHERE a = $2");
        assert_eq!(postgres_placeholders("SELECT 'it''s ?1' , ?3"), "SELECT 'it''s ?1' , $3");
    }

    #[test]
    fn rows_read_by_type_and_refuse_the_wrong_one() {
        let row = SqlRow(vec![SqlValue::Int(3), SqlValue::Null, SqlValue::Text("a".into()), SqlValue::Bool(true)]);
        assert_eq!(row.int(0).unwrap(), 3);
        assert_eq!(row.opt_text(1).unwrap(), None);
        assert_eq!(row.text(2).unwrap(), "a");
        assert_eq!(row.opt_bool(3).unwrap(), Some(true));
        assert!(matches!(row.text(0), Err(GraphError::Storage { .. })));
        assert!(matches!(row.int(9), Err(GraphError::Storage { .. })));
    }
}
