//! The `ServerCapabilities` filepuff answers the editor's `initialize` with: the union of what
//! its servers offer (LSP 3.17 "Server Capabilities"), plus what the proxy itself decides.
//!
//! The union is a deep merge of the servers' JSON: a capability offered by any server is
//! offered; option objects merge key by key; lists (trigger characters, code action kinds,
//! commands, token types) are unions in first-seen order; `true` and an options object give the
//! object. Then the proxy overrides what it owns: `positionEncoding` (the negotiated one),
//! `textDocumentSync` (incremental, open/close, save — the proxy keeps the buffers and gives
//! each server what it asked for), the semantic-token legend (a union, with per-server index
//! maps), and it drops `diagnosticProvider` (every server pushes; the proxy merges and
//! publishes) and notebook sync (not proxied).

use serde_json::{Value, json};

use crate::documents::Encoding;

/// Merges `b` into `a` (see the module documentation).
pub fn merge(a: &mut Value, b: &Value) {
    match (&mut *a, b) {
        (Value::Object(left), Value::Object(right)) => {
            for (key, value) in right {
                match left.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        left.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            for item in right {
                if !left.contains(item) {
                    left.push(item.clone());
                }
            }
        }
        (Value::Null | Value::Bool(false), other) => *a = other.clone(),
        (Value::Bool(true), other @ Value::Object(_)) => *a = other.clone(),
        _ => {}
    }
}

/// The capabilities for the editor from the servers' `capabilities` (in server order), with
/// positions counted in `encoding`. `delta` says whether semantic-token deltas can be passed
/// through untouched (every server's legend maps to itself and its encoding is the editor's).
pub fn union(servers: &[&Value], encoding: Encoding, delta: bool) -> Value {
    let mut all = json!({});
    let mut first_on_type: Option<Value> = None;
    let mut more_on_type: Vec<Value> = Vec::new();
    for capabilities in servers {
        if let Some(on_type) = capabilities.get("documentOnTypeFormattingProvider") {
            match &first_on_type {
                None => first_on_type = on_type.get("firstTriggerCharacter").cloned(),
                Some(_) => more_on_type.extend(on_type.get("firstTriggerCharacter").cloned()),
            }
        }
        merge(&mut all, capabilities);
    }
    let map = all.as_object_mut().expect("built as an object");
    for owned in ["positionEncoding", "textDocumentSync", "diagnosticProvider", "notebookDocumentSync"] {
        map.remove(owned);
    }
    map.insert("positionEncoding".into(), json!(encoding.lsp_name()));
    map.insert("textDocumentSync".into(), json!({ "openClose": true, "change": 2, "save": { "includeText": false } }));
    if let Some(on_type) = map.get_mut("documentOnTypeFormattingProvider").and_then(Value::as_object_mut)
        && let Some(first) = first_on_type
    {
        on_type.insert("firstTriggerCharacter".into(), first.clone());
        let more = on_type.entry("moreTriggerCharacter").or_insert_with(|| json!([]));
        if let Some(more) = more.as_array_mut() {
            for c in more_on_type {
                if !more.contains(&c) && c != first {
                    more.push(c);
                }
            }
        }
    }
    if let Some(tokens) = map.get_mut("semanticTokensProvider").and_then(Value::as_object_mut) {
        tokens.remove("documentSelector");
        tokens.remove("id");
        if !delta && tokens.get("full").is_some_and(Value::is_object) {
            tokens.insert("full".into(), Value::Bool(true));
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_offers_what_any_server_offers() {
        let pyright = json!({
            "hoverProvider": true,
            "completionProvider": { "triggerCharacters": [".", "["], "resolveProvider": true },
            "codeActionProvider": { "codeActionKinds": ["quickfix"] },
            "executeCommandProvider": { "commands": ["pyright.organizeimports"] },
            "diagnosticProvider": { "interFileDependencies": true },
            "positionEncoding": "utf-16",
            "textDocumentSync": 2,
            "semanticTokensProvider": { "legend": { "tokenTypes": ["class"], "tokenModifiers": [] }, "full": { "delta": true } }
        });
        let ruff = json!({
            "hoverProvider": false,
            "completionProvider": { "triggerCharacters": ["."] },
            "codeActionProvider": true,
            "documentFormattingProvider": true,
            "executeCommandProvider": { "commands": ["ruff.applyAutofix"] },
            "textDocumentSync": { "openClose": true, "change": 1 }
        });
        let caps = union(&[&pyright, &ruff], Encoding::Utf8, false);
        assert_eq!(caps["hoverProvider"], true);
        assert_eq!(caps["documentFormattingProvider"], true);
        assert_eq!(caps["completionProvider"]["triggerCharacters"], json!([".", "["]));
        assert_eq!(caps["completionProvider"]["resolveProvider"], true);
        assert_eq!(caps["codeActionProvider"]["codeActionKinds"], json!(["quickfix"]));
        assert_eq!(caps["executeCommandProvider"]["commands"], json!(["pyright.organizeimports", "ruff.applyAutofix"]));
        assert_eq!(caps["positionEncoding"], "utf-8");
        assert_eq!(caps["textDocumentSync"]["change"], 2);
        assert!(caps.get("diagnosticProvider").is_none());
        assert_eq!(caps["semanticTokensProvider"]["full"], true, "no deltas when they cannot pass through");
    }
}
