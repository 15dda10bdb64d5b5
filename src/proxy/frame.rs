//! The editor's stream, checked before it reaches async-lsp's main loop: frames read within
//! [`EDITOR_LIMITS`] (`backends::transport` does the framing) and bodies checked against the
//! JSON-RPC 2.0 shapes async-lsp can dispatch. A request or notification is parsed once, here:
//! the check builds the [`async_lsp::Message`] the main loop takes
//! (`MainLoop::run_messages`), the same one async-lsp's own decoder would have built from the
//! body (`tests::what_the_guard_builds_is_what_async_lsp_decodes`). Responses, rare from an
//! editor, are checked here and then decoded by async-lsp.
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

use async_lsp::{Message, RequestId};

use crate::backends::transport::{Decoded, Decoder, FrameLimits, any_notification, any_request};

pub use crate::backends::transport::encode;

/// How much the editor may make filepuff hold: header lines of 64 KiB, messages of 512 MiB
/// (a `didOpen` of a very large file).
pub const EDITOR_LIMITS: FrameLimits = FrameLimits { max_header_bytes: 64 << 10, max_body_bytes: 512 << 20 };

/// One frame read from the editor.
#[derive(Debug)]
pub enum Frame {
    /// A message for the main loop.
    Message(Message),
    /// Something that cannot be dispatched: answer with this error.
    Invalid { id: Value, code: i64, message: String },
    /// A malformed response: log `why`, answer nothing; hand `replacement` (an error response
    /// for the same id) to the main loop when there is one.
    Dropped { why: String, replacement: Option<Message> },
}

impl Frame {
    /// The JSON-RPC error response for an invalid frame, framed.
    pub fn error_response(id: &Value, code: i64, message: &str) -> Vec<u8> {
        encode(error_body(id, code, message).as_bytes())
    }
}

/// The body of the JSON-RPC error response `{code, message}` to `id` (JSON-RPC 2.0 §5.1).
fn error_body(id: &Value, code: i64, message: &str) -> String {
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }).to_string()
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

/// The checked frame for one decoded item: a body goes through [`check`], anything else is a parse
/// error (-32700).
pub fn frame_of(item: Decoded) -> Frame {
    match item {
        Decoded::Body(body) => check(body),
        other => invalid(Value::Null, -32700, &other.to_string()),
    }
}

fn invalid(id: Value, code: i64, message: &str) -> Frame {
    Frame::Invalid { id, code, message: message.to_owned() }
}

/// Whether `body` is a message the main loop can dispatch (see the module documentation), and
/// that message.
///
/// The body is read once; a request's or notification's `params` are built as they are read,
/// a response's `result` is only checked (to the last byte) and async-lsp decodes the response.
pub fn check(body: Vec<u8>) -> Frame {
    // Skipped strings are not checked by serde_json, and async-lsp would refuse invalid UTF-8.
    let Ok(text) = std::str::from_utf8(&body) else {
        return invalid(Value::Null, -32700, "invalid JSON: the message is not UTF-8");
    };
    let envelope = match parse(text) {
        Ok(parsed) => parsed,
        Err(err) if err.is_data() => {
            return invalid(Value::Null, -32600, "a message must be a JSON object (batches are not part of LSP)");
        }
        Err(err) => return invalid(Value::Null, -32700, &format!("invalid JSON: {err}")),
    };
    let id = envelope.id.as_ref();
    let echo = match id {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    let usable = id.is_some_and(is_usable_id);
    let version = match &envelope.jsonrpc {
        Some(Value::String(v)) if v == "2.0" => None,
        _ => Some("jsonrpc must be \"2.0\""),
    };
    let twice = envelope.duplicate.as_ref().map(|key| format!("the key {key:?} appears more than once"));
    if let Some(method) = &envelope.method {
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
        let params = match envelope.params {
            None => Value::Null,
            Some(params @ (Value::Object(_) | Value::Array(_) | Value::Null)) => params,
            Some(_) => return invalid(echo, -32602, "params must be an object or an array"),
        };
        // The checks above leave a string `method` and, if any, a usable `id`.
        let Some(Value::String(method)) = envelope.method else {
            return invalid(echo, -32600, "method must be a string");
        };
        return Frame::Message(match envelope.id {
            None => Message::Notification(any_notification(method, params)),
            Some(Value::String(id)) => request(RequestId::String(id), method, params),
            Some(Value::Number(id)) => match id.as_i64().and_then(|id| i32::try_from(id).ok()) {
                Some(id) => request(RequestId::Number(id), method, params),
                None => return invalid(echo, -32600, "id must be an integer of at most 32 bits or a string"),
            },
            Some(_) => return invalid(echo, -32600, "id must be an integer of at most 32 bits or a string"),
        });
    }
    let result = envelope.result.is_some();
    if id.is_none() && !result && envelope.error.is_none() {
        let excerpt: String = String::from_utf8_lossy(&body).chars().take(200).collect();
        return invalid(Value::Null, -32600, &format!("neither a request, a notification nor a response: {excerpt}"));
    }
    // A response: never answered.
    let error = envelope.error.as_ref().filter(|e| e.kind != Kind::Null);
    let problem = twice.or_else(|| version.map(str::to_owned)).or_else(|| match (result, error) {
        (false, None) => Some("a response needs a result or an error".to_owned()),
        (true, Some(_)) => Some("a response has a result or an error, not both".to_owned()),
        (_, Some(error)) => error_shape(error),
        (true, None) => None,
    });
    let Some(problem) = problem else {
        if usable {
            return match Message::decode(&body) {
                Ok(message) => Frame::Message(message),
                Err(err) => {
                    Frame::Dropped { why: format!("a response async-lsp cannot read: {err}"), replacement: None }
                }
            };
        }
        return Frame::Dropped {
            why: format!("a response whose id {echo} is not an integer of at most 32 bits or a string"),
            replacement: None,
        };
    };
    let why = format!("a malformed response to {echo}: {problem}");
    // An error response to a usable id always reads (`tests::issue_16_…` checks the ones made).
    let replacement = if usable {
        let message = format!("filepuff: the editor's response was malformed: {problem}");
        Message::decode(error_body(&echo, -32603, &message).as_bytes()).ok()
    } else {
        None
    };
    Frame::Dropped { why, replacement }
}

fn request(id: RequestId, method: String, params: Value) -> Message {
    let mut request = any_request(method, params);
    request.id = id;
    Message::Request(request)
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
fn error_shape(error: &Classified) -> Option<String> {
    let Some((fields, duplicate)) = &error.object else { return Some("error must be an object".to_owned()) };
    if *duplicate {
        return Some("a key of error appears more than once".to_owned());
    }
    match (fields.get("code"), fields.get("message")) {
        (Some(code), Some(Value::String(_))) if code.as_i64().is_some_and(|c| i32::try_from(c).is_ok()) => None,
        (Some(_), Some(Value::String(_))) => Some("error.code must be an integer of at most 32 bits".to_owned()),
        _ => Some("error needs an integer code and a string message".to_owned()),
    }
}

/// The members of a message the check looks at, and the first key that appeared twice
/// (async-lsp's decoder refuses a duplicate field; `serde_json::Value` silently keeps the last).
/// `params` is built (the request's or notification's own); `result` is only classified;
/// `error` is built only when it is an object (with whether it has a key twice).
#[derive(Default)]
struct Envelope {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Kind>,
    error: Option<Classified>,
    duplicate: Option<String>,
}

/// The JSON type of a member that is skipped, not built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    Null,
    Other,
}

/// A member read to its end: its [`Kind`] and, when asked for and it is an object, its fields
/// and whether a key appeared twice.
struct Classified {
    kind: Kind,
    object: Option<(Map<String, Value>, bool)>,
}

fn parse(body: &str) -> Result<Envelope, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(body);
    let envelope = TopLevel.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(envelope)
}

struct TopLevel;

impl<'de> DeserializeSeed<'de> for TopLevel {
    type Value = Envelope;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Envelope, D::Error> {
        deserializer.deserialize_map(TopLevel)
    }
}

impl<'de> Visitor<'de> for TopLevel {
    type Value = Envelope;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope::default();
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = access.next_key::<std::borrow::Cow<'de, str>>()? {
            if seen.iter().any(|k| *k == key) {
                envelope.duplicate.get_or_insert_with(|| key.to_string());
            } else {
                seen.push(key.to_string());
            }
            match key.as_ref() {
                "jsonrpc" => envelope.jsonrpc = Some(access.next_value()?),
                "id" => envelope.id = Some(access.next_value()?),
                "method" => envelope.method = Some(access.next_value()?),
                "error" => envelope.error = Some(access.next_value_seed(Classify { keep_object: true })?),
                "params" => envelope.params = Some(access.next_value()?),
                "result" => envelope.result = Some(access.next_value_seed(Classify { keep_object: false })?.kind),
                _ => {
                    access.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(envelope)
    }
}

/// Reads any JSON value to its end, keeping its [`Kind`] and, with `keep_object`, an object's
/// fields (async-lsp's decoder refuses a duplicate field; a `Map` keeps the last, so the
/// duplicate is recorded beside it). Nothing else is built.
struct Classify {
    keep_object: bool,
}

impl<'de> DeserializeSeed<'de> for Classify {
    type Value = Classified;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Classified, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn classified<E>(kind: Kind) -> Result<Classified, E> {
    Ok(Classified { kind, object: None })
}

impl<'de> Visitor<'de> for Classify {
    type Value = Classified;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Classified, A::Error> {
        if !self.keep_object {
            while access.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
            return classified(Kind::Object);
        }
        let (mut fields, mut duplicate) = (Map::new(), false);
        while let Some(key) = access.next_key::<String>()? {
            let value: Value = access.next_value()?;
            duplicate |= fields.insert(key, value).is_some();
        }
        Ok(Classified { kind: Kind::Object, object: Some((fields, duplicate)) })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Classified, A::Error> {
        while access.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        classified(Kind::Array)
    }
    fn visit_unit<E>(self) -> Result<Classified, E> {
        classified(Kind::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Classified, E> {
        classified(Kind::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Classified, E> {
        classified(Kind::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Classified, E> {
        classified(Kind::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Classified, E> {
        classified(Kind::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<Classified, E> {
        classified(Kind::Other)
    }
}

#[cfg(test)]
mod tests;
