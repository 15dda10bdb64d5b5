//! The editor's stream, checked before it reaches async-lsp's main loop: frames read within
//! [`EDITOR_LIMITS`] (`backends::transport` does the framing) and bodies checked against the
//! JSON-RPC 2.0 shapes async-lsp can dispatch.
//!
//! async-lsp's main loop ends the session on the first message it cannot decode, and an editor
//! (or a person typing into the pipe) must not be able to kill every language server that way.
//! So, per JSON-RPC 2.0 (§4, §5, §5.1):
//! - a frame that cannot be read (a bad or missing `Content-Length`, a header line over
//!   64 KiB, a body over 512 MiB) or a body that is not JSON is answered with -32700 (parse
//!   error, `id` null), and the stream resynchronises at the next `Content-Length` header;
//! - a request or notification async-lsp could not take — not an object, `jsonrpc` missing or
//!   not `"2.0"`, a key twice, a `method` that is not a string, a request `id` that is not a
//!   32-bit integer or a string (LSP's `integer | string`) — is answered with -32600 (invalid
//!   request), with its `id` when that is a number or a string, else null; params that are
//!   neither an object nor an array get -32602;
//! - a response (no `method`) is never answered. One async-lsp could not take — `jsonrpc`
//!   wrong, a key twice, neither `result` nor `error`, an `error` that is not
//!   `{code: 32-bit integer, message: string}`, an unusable `id` (null, a float, beyond 32
//!   bits) — is dropped and logged; when its `id` is usable, the main loop gets an
//!   internal-error response for that id instead, so the request waiting for it ends.

use std::io::Read;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::backends::transport::{Decoded, Decoder, FrameLimits};

pub use crate::backends::transport::encode;

/// How much the editor may make filepuff hold: header lines of 64 KiB, messages of 512 MiB
/// (a `didOpen` of a very large file).
pub const EDITOR_LIMITS: FrameLimits = FrameLimits { max_header_bytes: 64 << 10, max_body_bytes: 512 << 20 };

/// One frame read from the editor.
#[derive(Debug)]
pub enum Frame {
    /// A message async-lsp can dispatch: the body bytes, unchanged.
    Message(Vec<u8>),
    /// Something that cannot be dispatched: answer with this error.
    Invalid { id: Value, code: i64, message: String },
    /// A malformed response: log `why`, answer nothing; hand `replacement` (an error response
    /// for the same id) to the main loop when there is one.
    Dropped { why: String, replacement: Option<Vec<u8>> },
}

impl Frame {
    /// The JSON-RPC error response for an invalid frame, framed.
    pub fn error_response(id: &Value, code: i64, message: &str) -> Vec<u8> {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message }
        })
        .to_string();
        encode(body.as_bytes())
    }
}

/// Reads checked frames from the editor's stream (blocking reads, 64 KiB at a time).
pub struct FrameReader<R> {
    inner: R,
    decoder: Decoder,
    chunk: Box<[u8]>,
    ended: bool,
}

impl<R: Read> FrameReader<R> {
    /// A reader of `inner` within [`EDITOR_LIMITS`].
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader {
            inner,
            decoder: Decoder::new(EDITOR_LIMITS),
            chunk: vec![0; 64 << 10].into_boxed_slice(),
            ended: false,
        }
    }

    /// The next frame; `None` at the end of the input. Errors: reading the input failed.
    pub fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(item) = self.decoder.next() {
                return Ok(Some(frame_of(item)));
            }
            if self.ended {
                return Ok(None);
            }
            let n = match self.inner.read(&mut self.chunk) {
                Ok(n) => n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if n == 0 {
                self.ended = true;
                return Ok(self.decoder.finish().map(frame_of));
            }
            self.decoder.push(&self.chunk[..n]);
        }
    }
}

fn frame_of(item: Decoded) -> Frame {
    match item {
        Decoded::Body(body) => check(body),
        other => invalid(Value::Null, -32700, &other.to_string()),
    }
}

fn invalid(id: Value, code: i64, message: &str) -> Frame {
    Frame::Invalid { id, code, message: message.to_owned() }
}

/// Whether `body` is a message the main loop can dispatch (see the module documentation).
pub fn check(body: Vec<u8>) -> Frame {
    let Strict { map, duplicate } = match parse(&body) {
        Ok(parsed) => parsed,
        Err(err) if err.is_data() => {
            return invalid(Value::Null, -32600, "a message must be a JSON object (batches are not part of LSP)");
        }
        Err(err) => return invalid(Value::Null, -32700, &format!("invalid JSON: {err}")),
    };
    let id = map.get("id");
    let echo = match id {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    let usable = id.is_some_and(is_usable_id);
    let version = match map.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => None,
        _ => Some("jsonrpc must be \"2.0\""),
    };
    let twice = duplicate.as_ref().map(|key| format!("the key {key:?} appears more than once"));
    if let Some(method) = map.get("method") {
        let problem = twice.or_else(|| version.map(str::to_owned)).or_else(|| match (method, id) {
            (Value::String(_), Some(_)) if !usable => {
                Some("id must be an integer of at most 32 bits or a string".to_owned())
            }
            (Value::String(_), _) => None,
            _ => Some("method must be a string".to_owned()),
        });
        if let Some(problem) = problem {
            return invalid(echo, -32600, &problem);
        }
        return match map.get("params") {
            None | Some(Value::Object(_) | Value::Array(_) | Value::Null) => Frame::Message(body),
            Some(_) => invalid(echo, -32602, "params must be an object or an array"),
        };
    }
    if id.is_none() && !map.contains_key("result") && !map.contains_key("error") {
        let excerpt: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return invalid(Value::Null, -32600, &format!("neither a request, a notification nor a response: {excerpt}"));
    }
    // A response: never answered.
    let error = map.get("error").filter(|e| !e.is_null());
    let problem = twice.or_else(|| version.map(str::to_owned)).or_else(|| match (map.get("result"), error) {
        (None, None) => Some("a response needs a result or an error".to_owned()),
        (Some(_), Some(_)) => Some("a response has a result or an error, not both".to_owned()),
        (_, Some(error)) => error_shape(error, duplicate_in_error(&body)),
        (Some(_), None) => None,
    });
    let Some(problem) = problem else {
        if usable {
            return Frame::Message(body);
        }
        return Frame::Dropped {
            why: format!("a response whose id {echo} is not an integer of at most 32 bits or a string"),
            replacement: None,
        };
    };
    let why = format!("a malformed response to {echo}: {problem}");
    let replacement = usable.then(|| {
        let message = format!("filepuff: the editor's response was malformed: {problem}");
        Frame::error_response(&echo, -32603, &message)
    });
    Frame::Dropped { why, replacement }
}

/// LSP's `integer | string` id: async-lsp reads ids as `i32` or a string.
fn is_usable_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        _ => false,
    }
}

/// What is wrong with a response's `error` (JSON-RPC 2.0 §5.1), if anything.
fn error_shape(error: &Value, duplicate: bool) -> Option<String> {
    let Value::Object(fields) = error else { return Some("error must be an object".to_owned()) };
    if duplicate {
        return Some("a key of error appears more than once".to_owned());
    }
    match (fields.get("code"), fields.get("message")) {
        (Some(code), Some(Value::String(_))) if code.as_i64().is_some_and(|c| i32::try_from(c).is_ok()) => None,
        (Some(_), Some(Value::String(_))) => Some("error.code must be an integer of at most 32 bits".to_owned()),
        _ => Some("error needs an integer code and a string message".to_owned()),
    }
}

/// A message's top-level keys, and the first key that appeared twice (async-lsp's decoder
/// refuses a duplicate field; `serde_json::Value` silently keeps the last).
struct Strict {
    map: Map<String, Value>,
    duplicate: Option<String>,
}

fn parse(body: &[u8]) -> Result<Strict, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let strict = TopLevel.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(strict)
}

/// Whether the `error` object of `body` has a key twice (parsed again only for error responses).
fn duplicate_in_error(body: &[u8]) -> bool {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    ErrorKeys.deserialize(&mut deserializer).unwrap_or(false)
}

struct TopLevel;

impl<'de> DeserializeSeed<'de> for TopLevel {
    type Value = Strict;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_map(TopLevel)
    }
}

impl<'de> Visitor<'de> for TopLevel {
    type Value = Strict;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Strict, A::Error> {
        let mut map = Map::new();
        let mut duplicate = None;
        while let Some(key) = access.next_key::<String>()? {
            let value: Value = access.next_value()?;
            if map.contains_key(&key) {
                duplicate.get_or_insert_with(|| key.clone());
            }
            map.insert(key, value);
        }
        Ok(Strict { map, duplicate })
    }
}

/// Finds whether the top-level `error` object has a key twice.
struct ErrorKeys;

impl<'de> DeserializeSeed<'de> for ErrorKeys {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(ErrorKeys)
    }
}

impl<'de> Visitor<'de> for ErrorKeys {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = access.next_key::<String>()? {
            if key == "error" {
                found |= access.next_value_seed(KeysTwice)?;
            } else {
                access.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether an object has a key twice (false for anything else).
struct KeysTwice;

impl<'de> DeserializeSeed<'de> for KeysTwice {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(KeysTwice)
    }
}

impl<'de> Visitor<'de> for KeysTwice {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<bool, A::Error> {
        let mut keys = std::collections::HashSet::new();
        let mut twice = false;
        while let Some(key) = access.next_key::<String>()? {
            access.next_value::<serde::de::IgnoredAny>()?;
            twice |= !keys.insert(key);
        }
        Ok(twice)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<bool, A::Error> {
        while access.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests;
