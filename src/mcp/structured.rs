//! A tool result's `structuredContent` carried as JSON text to the transport that writes it.
//!
//! rmcp's `CallToolResult::structured_content` is a `serde_json::Value`: a tool output turned
//! into one is first built as a tree of maps (a `String` key and a node per field), then that
//! tree is serialised. For a `find_references` answer of 148 locations that is about 240 µs
//! against about 60 µs to serialise the output as it is (release build, hot loop). Where
//! filepuff writes the session's lines itself ([`super::GuardedTransport`]: stdio, the agent
//! socket), the tool's worker serialises its output once, puts a placeholder in the result
//! ([`deferred`]), and the transport writes the text where the field goes ([`take`]). Over
//! rmcp's own transports (Streamable HTTP) results carry the `Value` as before.
//!
//! The placeholder is an object whose only key is this process's [`key`] (a NUL, a name and
//! 128 random bits, which no tool output has as its only field) with the text as its value.
//! Code that edits a result's `structuredContent` turns it back first ([`materialize`]). A
//! server that offered rmcp's tasks (SEP-2663), which keep a result and serialise it later
//! themselves, would not defer (`McpServer::serve_lines`); filepuff offers none.

use std::sync::OnceLock;

use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

/// This process's placeholder key.
fn key() -> &'static str {
    static KEY: OnceLock<String> = OnceLock::new();
    KEY.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let random = || std::collections::hash_map::RandomState::new().build_hasher().finish();
        format!("\u{0}filepuff-structured-{:016x}{:016x}", random(), random())
    })
}

/// A placeholder `structuredContent` standing for `json`, the JSON text of a tool's output,
/// when that is an object. Any other value is returned as a `Value` (rmcp drops a non-object
/// `structuredContent` for peers of older protocol versions, which it must still see to do so);
/// text that is not JSON (never made by `serde_json`) becomes `null`.
pub fn deferred(json: String) -> Value {
    if !json.starts_with('{') {
        return serde_json::from_str(&json).unwrap_or(Value::Null);
    }
    let mut map = Map::new();
    map.insert(key().to_owned(), Value::String(json));
    Value::Object(map)
}

/// The JSON text `result`'s `structuredContent` stands for when it is a placeholder
/// ([`deferred`]), taken out of it (the field is then absent); `None`, with `result` unchanged,
/// otherwise.
pub fn take(result: &mut CallToolResult) -> Option<String> {
    let Some(Value::Object(map)) = &result.structured_content else { return None };
    if map.len() != 1 || !matches!(map.get(key()), Some(Value::String(_))) {
        return None;
    }
    match result.structured_content.take() {
        Some(Value::Object(mut map)) => match map.remove(key()) {
            Some(Value::String(json)) => Some(json),
            _ => None,
        },
        _ => None,
    }
}

/// Turns a placeholder `structuredContent` back into the `Value` it stands for, so that it can
/// be edited (a result marked as read from disk). Leaves any other result unchanged; a text
/// that is not JSON (never written by [`deferred`]'s callers) becomes no `structuredContent`.
pub fn materialize(result: &mut CallToolResult) {
    if let Some(json) = take(result) {
        result.structured_content = serde_json::from_str(&json).ok();
    }
}

/// Completes `line` (a JSON-RPC response, serialised without its `structuredContent`) with
/// `json` as that field: the response ends with its result object's `}` and its own `}`
/// (`{"jsonrpc":"2.0","id":…,"result":{"content":[…]…}}`, rmcp's `JsonRpcResponse` fields in
/// order, `content` always present), so the field goes before those two. Returns false, with
/// `line` unchanged, when the line does not end so.
pub fn splice(line: &mut Vec<u8>, json: &str) -> bool {
    if !line.ends_with(b"}}") {
        return false;
    }
    line.truncate(line.len() - 2);
    line.reserve(json.len() + 24);
    line.extend_from_slice(b",\"structuredContent\":");
    line.extend_from_slice(json.as_bytes());
    line.extend_from_slice(b"}}");
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Only this process's placeholder is taken: an output with the same shape under another
    /// key, or with more keys, is written as it is.
    #[test]
    fn only_a_placeholder_is_taken() {
        let mut other = deferred("{}".to_owned());
        if let Value::Object(map) = &mut other {
            map.insert("more".to_owned(), json!(1));
        }
        for structured in [other, json!({"\u{0}filepuff-structured-0": "{}"}), json!("text"), json!([1])] {
            let mut result = CallToolResult::success(vec![]);
            result.structured_content = Some(structured.clone());
            assert_eq!(take(&mut result), None);
            assert_eq!(result.structured_content, Some(structured));
        }
    }

    #[test]
    fn only_an_object_is_deferred() {
        assert_eq!(deferred("[1,2]".to_owned()), json!([1, 2]));
        assert_eq!(deferred("\"text\"".to_owned()), json!("text"));
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(deferred("{}".to_owned()));
        assert_eq!(take(&mut result).as_deref(), Some("{}"));
    }

    #[test]
    fn a_placeholder_materializes_as_its_value() {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(deferred(r#"{"a":[1,2]}"#.to_owned()));
        materialize(&mut result);
        assert_eq!(result.structured_content, Some(json!({"a": [1, 2]})));
        let mut line = b"{\"a\":1".to_vec();
        assert!(!splice(&mut line, "{}"));
        assert_eq!(line, b"{\"a\":1");
    }
}
