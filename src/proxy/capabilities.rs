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

/// A feature filepuff can register with the editor after `initialize` (LSP 3.17 "Register
/// Capability", `client/registerCapability`), for a server that started too late to be part of
/// the `initialize` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// The registration's `method` (LSP 3.17 names call and type hierarchy by their
    /// `prepare…` request, semantic tokens by `textDocument/semanticTokens`).
    pub method: &'static str,
    /// The `ServerCapabilities` field that offers it.
    pub provider: &'static str,
    /// JSON pointer to the editor's `ClientCapabilities` entry of the feature, whose
    /// `dynamicRegistration` says whether the editor accepts a registration of it.
    pub client: &'static str,
    /// Whether it is about documents: its registration carries a `documentSelector`.
    pub document: bool,
}

const fn document(method: &'static str, provider: &'static str, client: &'static str) -> Feature {
    Feature { method, provider, client, document: true }
}

/// Every feature that can be registered later, in the order of LSP 3.17's "Language Features".
/// Pull diagnostics are not among them: filepuff never offers them (see the module
/// documentation); text synchronisation is filepuff's own.
pub const FEATURES: &[Feature] = &[
    document("textDocument/declaration", "declarationProvider", "/textDocument/declaration"),
    document("textDocument/definition", "definitionProvider", "/textDocument/definition"),
    document("textDocument/typeDefinition", "typeDefinitionProvider", "/textDocument/typeDefinition"),
    document("textDocument/implementation", "implementationProvider", "/textDocument/implementation"),
    document("textDocument/references", "referencesProvider", "/textDocument/references"),
    document("textDocument/prepareCallHierarchy", "callHierarchyProvider", "/textDocument/callHierarchy"),
    document("textDocument/prepareTypeHierarchy", "typeHierarchyProvider", "/textDocument/typeHierarchy"),
    document("textDocument/documentHighlight", "documentHighlightProvider", "/textDocument/documentHighlight"),
    document("textDocument/documentLink", "documentLinkProvider", "/textDocument/documentLink"),
    document("textDocument/hover", "hoverProvider", "/textDocument/hover"),
    document("textDocument/codeLens", "codeLensProvider", "/textDocument/codeLens"),
    document("textDocument/foldingRange", "foldingRangeProvider", "/textDocument/foldingRange"),
    document("textDocument/selectionRange", "selectionRangeProvider", "/textDocument/selectionRange"),
    document("textDocument/documentSymbol", "documentSymbolProvider", "/textDocument/documentSymbol"),
    document("textDocument/semanticTokens", "semanticTokensProvider", "/textDocument/semanticTokens"),
    document("textDocument/inlineValue", "inlineValueProvider", "/textDocument/inlineValue"),
    document("textDocument/inlayHint", "inlayHintProvider", "/textDocument/inlayHint"),
    document("textDocument/moniker", "monikerProvider", "/textDocument/moniker"),
    document("textDocument/completion", "completionProvider", "/textDocument/completion"),
    document("textDocument/signatureHelp", "signatureHelpProvider", "/textDocument/signatureHelp"),
    document("textDocument/codeAction", "codeActionProvider", "/textDocument/codeAction"),
    document("textDocument/documentColor", "colorProvider", "/textDocument/colorProvider"),
    document("textDocument/formatting", "documentFormattingProvider", "/textDocument/formatting"),
    document("textDocument/rangeFormatting", "documentRangeFormattingProvider", "/textDocument/rangeFormatting"),
    document("textDocument/onTypeFormatting", "documentOnTypeFormattingProvider", "/textDocument/onTypeFormatting"),
    document("textDocument/rename", "renameProvider", "/textDocument/rename"),
    document("textDocument/linkedEditingRange", "linkedEditingRangeProvider", "/textDocument/linkedEditingRange"),
    Feature {
        method: "workspace/symbol",
        provider: "workspaceSymbolProvider",
        client: "/workspace/symbol",
        document: false,
    },
    Feature {
        method: "workspace/executeCommand",
        provider: "executeCommandProvider",
        client: "/workspace/executeCommand",
        document: false,
    },
];

impl Feature {
    /// Its name for people: the editor's capability key (`definition`, `hover`,
    /// `semanticTokens`, `symbol`, …).
    pub fn name(&self) -> &'static str {
        self.client.rsplit('/').next().unwrap_or(self.client)
    }

    /// Whether `capabilities` (`ServerCapabilities` JSON, or the editor's `initialize` answer)
    /// offer it: the field is present and neither `null` nor `false`.
    pub fn offered_by(&self, capabilities: &Value) -> bool {
        !matches!(capabilities.get(self.provider), None | Some(Value::Null | Value::Bool(false)))
    }

    /// Whether the editor (`ClientCapabilities` JSON) accepts a registration of it.
    pub fn editor_registers(&self, editor: &Value) -> bool {
        editor.pointer(&format!("{}/dynamicRegistration", self.client)).and_then(Value::as_bool) == Some(true)
    }

    /// Whether the editor (`ClientCapabilities` JSON) declares the feature at all.
    pub fn editor_knows(&self, editor: &Value) -> bool {
        editor.pointer(self.client).is_some_and(|v| !v.is_null())
    }

    /// The `registerOptions` from a server's static capability: its options object (trigger
    /// characters, `resolveProvider`, legend, commands, …) without `id` and
    /// `documentSelector`, or `{}` for a plain `true`. The caller adds the document selector.
    pub fn register_options(&self, capabilities: &Value) -> Value {
        match capabilities.get(self.provider) {
            Some(Value::Object(options)) => {
                let mut options = options.clone();
                options.remove("id");
                options.remove("documentSelector");
                Value::Object(options)
            }
            _ => json!({}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_options_come_from_the_static_capability() {
        let pyright = json!({
            "hoverProvider": true,
            "definitionProvider": { "workDoneProgress": true },
            "referencesProvider": false,
            "completionProvider": { "triggerCharacters": [".", "["], "resolveProvider": true },
            "signatureHelpProvider": { "triggerCharacters": ["(", ","], "retriggerCharacters": [")"] },
            "semanticTokensProvider": { "id": "x", "documentSelector": null, "legend": { "tokenTypes": ["class"], "tokenModifiers": [] }, "full": true },
        });
        let by_method = |m: &str| *FEATURES.iter().find(|f| f.method == m).unwrap();
        let offered: Vec<&str> = FEATURES.iter().filter(|f| f.offered_by(&pyright)).map(|f| f.name()).collect();
        assert_eq!(offered, ["definition", "hover", "semanticTokens", "completion", "signatureHelp"]);
        assert_eq!(by_method("textDocument/hover").register_options(&pyright), json!({}));
        assert_eq!(
            by_method("textDocument/completion").register_options(&pyright),
            json!({ "triggerCharacters": [".", "["], "resolveProvider": true })
        );
        assert_eq!(
            by_method("textDocument/signatureHelp").register_options(&pyright)["retriggerCharacters"],
            json!([")"])
        );
        let tokens = by_method("textDocument/semanticTokens").register_options(&pyright);
        assert!(tokens.get("id").is_none() && tokens.get("documentSelector").is_none() && tokens["full"] == true);

        let editor = json!({ "textDocument": { "hover": { "dynamicRegistration": true }, "definition": {} } });
        assert!(by_method("textDocument/hover").editor_registers(&editor));
        assert!(!by_method("textDocument/definition").editor_registers(&editor));
        assert!(by_method("textDocument/definition").editor_knows(&editor));
        assert!(!by_method("textDocument/completion").editor_knows(&editor));
        assert_eq!(by_method("textDocument/prepareCallHierarchy").name(), "callHierarchy");
        assert_eq!(by_method("workspace/symbol").name(), "symbol");
    }

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
