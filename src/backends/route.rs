//! Which server answers a request (issue 20, item 1): the one rule both faces use — the editor
//! proxy (`proxy::route`) and the tools ([`super::Backends::ask`]).
//!
//! For one method and the servers of a document's language (in `[languages.NAME] servers`
//! order), [`Backends::answer_order`] gives the servers to ask, in order:
//!
//! 1. only servers that offer the method (their `ServerCapabilities` field, LSP 3.17 "Server
//!    Capabilities"; the caller adds registrations made later);
//! 2. for a navigation method ([`is_navigation`]) with `[languages.NAME] navigation = [...]`
//!    configured: exactly those servers, in that order;
//! 3. otherwise full servers (type checkers, compilers' servers: gopls, clangd, basedpyright,
//!    pyright, tsserver, rust-analyzer, …) before linters ([`Role::Linter`]: ruff, eslint, …),
//!    each group in the configured order — users list a linter first, and the answer must not
//!    depend on it.
//!
//! Then the first server is asked; the next one is asked when the answer was `MethodNotFound`
//! and, for single-answer methods ([`SINGLE_ANSWER`]: definition, declaration, typeDefinition,
//! implementation, hover, signatureHelp, rename, prepareRename), also when it was another error
//! or empty ([`is_empty_answer`]: `null`, `[]`, a hover with no text). Merged methods
//! (completion, code actions, diagnostics, workspace symbols) are asked of every server.

use serde_json::Value;

use super::Backends;
use crate::documents::Language;

/// Methods whose one answer may come from any server of the language: an error or an empty
/// answer from one lets the next one answer.
pub const SINGLE_ANSWER: &[&str] = &[
    "textDocument/definition",
    "textDocument/declaration",
    "textDocument/typeDefinition",
    "textDocument/implementation",
    "textDocument/hover",
    "textDocument/signatureHelp",
    "textDocument/rename",
    "textDocument/prepareRename",
];

/// Methods `[languages.NAME] navigation` decides beside the single-answer ones
/// ([`SINGLE_ANSWER`]): the other questions about symbols ([`is_navigation`]).
pub const NAVIGATION: &[&str] = &[
    "textDocument/references",
    "textDocument/documentHighlight",
    "textDocument/documentSymbol",
    "textDocument/prepareCallHierarchy",
    "textDocument/prepareTypeHierarchy",
];

/// Whether `[languages.NAME] navigation` decides who answers `method`: a single-answer method
/// or another question about symbols.
pub fn is_navigation(method: &str) -> bool {
    SINGLE_ANSWER.contains(&method) || NAVIGATION.contains(&method)
}

/// What a server is for, as far as routing goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A server that knows the language's types and symbols (it answers navigation).
    Full,
    /// A linter or formatter that speaks LSP: its diagnostics and code actions are merged with
    /// the others', but it answers navigation only when no full server does.
    Linter,
}

/// Linters and formatters that speak LSP, by server name.
const LINTERS: &[&str] = &[
    "ruff",
    "ruff-lsp",
    "eslint",
    "vscode-eslint-language-server",
    "biome",
    "oxlint",
    "golangci-lint-langserver",
    "typos-lsp",
    "harper-ls",
    "efm-langserver",
    "diagnostic-languageserver",
];

/// The role of server `name`: [`Role::Linter`] for known linters, else [`Role::Full`].
pub fn role(name: &str) -> Role {
    if LINTERS.contains(&name) { Role::Linter } else { Role::Full }
}

/// The `ServerCapabilities` field that says a server answers `method` (`None`: a method
/// without one, which every server is assumed to offer).
pub fn capability(method: &str) -> Option<&'static str> {
    Some(match method {
        "textDocument/completion" => "completionProvider",
        "textDocument/hover" => "hoverProvider",
        "textDocument/signatureHelp" => "signatureHelpProvider",
        "textDocument/definition" => "definitionProvider",
        "textDocument/declaration" => "declarationProvider",
        "textDocument/typeDefinition" => "typeDefinitionProvider",
        "textDocument/implementation" => "implementationProvider",
        "textDocument/references" => "referencesProvider",
        "textDocument/documentHighlight" => "documentHighlightProvider",
        "textDocument/documentSymbol" => "documentSymbolProvider",
        "textDocument/codeAction" => "codeActionProvider",
        "textDocument/codeLens" => "codeLensProvider",
        "textDocument/formatting" => "documentFormattingProvider",
        "textDocument/rangeFormatting" | "textDocument/rangesFormatting" => "documentRangeFormattingProvider",
        "textDocument/onTypeFormatting" => "documentOnTypeFormattingProvider",
        "textDocument/rename" | "textDocument/prepareRename" => "renameProvider",
        "textDocument/foldingRange" => "foldingRangeProvider",
        "textDocument/selectionRange" => "selectionRangeProvider",
        "textDocument/semanticTokens/full"
        | "textDocument/semanticTokens/full/delta"
        | "textDocument/semanticTokens/range" => "semanticTokensProvider",
        "textDocument/inlayHint" => "inlayHintProvider",
        "textDocument/documentLink" => "documentLinkProvider",
        "textDocument/documentColor" | "textDocument/colorPresentation" => "colorProvider",
        "textDocument/prepareCallHierarchy" | "callHierarchy/incomingCalls" | "callHierarchy/outgoingCalls" => {
            "callHierarchyProvider"
        }
        "textDocument/prepareTypeHierarchy" => "typeHierarchyProvider",
        "textDocument/linkedEditingRange" => "linkedEditingRangeProvider",
        "textDocument/moniker" => "monikerProvider",
        "textDocument/inlineValue" => "inlineValueProvider",
        "textDocument/diagnostic" => "diagnosticProvider",
        "workspace/symbol" => "workspaceSymbolProvider",
        "workspace/executeCommand" => "executeCommandProvider",
        _ => return None,
    })
}

/// Whether a server whose `initialize` answer had `capabilities` (JSON `ServerCapabilities`)
/// offers `method` (a method without a capability field: yes). `prepareRename` needs
/// `renameProvider.prepareProvider`.
pub fn offers(capabilities: &Value, method: &str) -> bool {
    let Some(field) = capability(method) else { return true };
    match capabilities.get(field) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(_) if method == "textDocument/prepareRename" => {
            capabilities.pointer("/renameProvider/prepareProvider").and_then(Value::as_bool).unwrap_or(false)
        }
        Some(_) => true,
    }
}

/// Whether an error or an empty answer to `method` lets the next server answer.
pub fn is_single_answer(method: &str) -> bool {
    SINGLE_ANSWER.contains(&method)
}

/// Whether `answer` (a JSON result) says nothing: `null`, `[]`, a `Hover` whose `contents` hold
/// no text, a `SignatureHelp` without signatures, a `WorkspaceEdit` without changes.
pub fn is_empty_answer(answer: &Value) -> bool {
    fn no_text(contents: &Value) -> bool {
        match contents {
            Value::Null => true,
            Value::String(text) => text.trim().is_empty(),
            Value::Array(parts) => parts.iter().all(no_text),
            Value::Object(part) => part.get("value").is_none_or(no_text),
            _ => false,
        }
    }
    match answer {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => {
            if let Some(contents) = map.get("contents") {
                return no_text(contents);
            }
            if let Some(signatures) = map.get("signatures") {
                return signatures.as_array().is_none_or(Vec::is_empty);
            }
            let edit_keys = ["changes", "documentChanges", "changeAnnotations"];
            if !map.is_empty() && map.keys().all(|k| edit_keys.contains(&k.as_str())) {
                let empty = |key: &str| match map.get(key) {
                    None | Some(Value::Null) => true,
                    Some(Value::Object(changes)) => changes.values().all(|v| v.as_array().is_some_and(Vec::is_empty)),
                    Some(Value::Array(changes)) => changes.is_empty(),
                    _ => false,
                };
                return empty("changes") && empty("documentChanges");
            }
            map.is_empty()
        }
        _ => false,
    }
}

impl Backends {
    /// `servers` (the document's servers, in `[languages.NAME] servers` order, `name` giving
    /// each one's server name) in the order to ask them for `method`, as the module
    /// documentation says; servers that do not offer it are left to the caller to filter.
    /// `[languages.NAME] navigation` leaves out, for navigation methods, the servers it does
    /// not name.
    pub fn answer_order<T>(
        &self,
        language: Option<Language>,
        method: &str,
        servers: Vec<T>,
        name: impl Fn(&T) -> &str,
    ) -> Vec<T> {
        let navigation = language.and_then(|language| self.navigation.get(&language));
        order(servers, method, navigation.map(Vec::as_slice), name)
    }
}

/// [`Backends::answer_order`] without the configuration lookup.
fn order<T>(mut servers: Vec<T>, method: &str, navigation: Option<&[String]>, name: impl Fn(&T) -> &str) -> Vec<T> {
    if let Some(names) = navigation.filter(|_| is_navigation(method)) {
        servers.retain(|server| names.iter().any(|n| n == name(server)));
        servers.sort_by_key(|server| names.iter().position(|n| n == name(server)));
        return servers;
    }
    if capability(method) == Some("completionProvider") || capability(method) == Some("codeActionProvider") {
        return servers;
    }
    // A stable sort: the configured order within each role.
    servers.sort_by_key(|server| role(name(server)) == Role::Linter);
    servers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(method: &str, servers: &[&'static str], navigation: Option<&[String]>) -> Vec<&'static str> {
        order(servers.to_vec(), method, navigation, |s| s)
    }

    #[test]
    fn issue_20_a_full_server_answers_navigation_before_a_linter_listed_first() {
        let listed = ["ruff", "basedpyright"];
        for method in SINGLE_ANSWER.iter().chain(["textDocument/references", "custom/method"].iter()) {
            assert_eq!(names(method, &listed, None), ["basedpyright", "ruff"], "{method}");
        }
        // Merged methods keep the configured order (every server is asked anyway).
        assert_eq!(names("textDocument/codeAction", &listed, None), ["ruff", "basedpyright"]);
        assert_eq!(names("textDocument/completion", &listed, None), ["ruff", "basedpyright"]);
        // Two full servers keep the configured order.
        assert_eq!(
            names("textDocument/hover", &["pylsp", "ruff", "basedpyright"], None),
            ["pylsp", "basedpyright", "ruff"]
        );
    }

    #[test]
    fn navigation_config_names_the_servers_and_their_order() {
        let navigation = ["ruff".to_owned()];
        let listed = ["basedpyright", "ruff"];
        assert_eq!(names("textDocument/definition", &listed, Some(&navigation)), ["ruff"]);
        let navigation = ["basedpyright".to_owned(), "pylsp".to_owned()];
        assert_eq!(
            names("textDocument/hover", &["pylsp", "ruff", "basedpyright"], Some(&navigation)),
            ["basedpyright", "pylsp"]
        );
        // Not a navigation method: the role rule.
        assert_eq!(
            names("textDocument/formatting", &["ruff", "basedpyright"], Some(&navigation)),
            ["basedpyright", "ruff"]
        );
    }

    #[test]
    fn empty_answers_let_the_next_server_answer() {
        let table = [
            (json!(null), true),
            (json!([]), true),
            (json!({ "contents": "" }), true),
            (json!({ "contents": [] }), true),
            (json!({ "contents": { "kind": "markdown", "value": " " } }), true),
            (json!({ "contents": { "kind": "markdown", "value": "x: int" } }), false),
            (json!({ "signatures": [] }), true),
            (json!({ "changes": {} }), true),
            (json!({ "changes": { "file:///a": [] } }), true),
            (json!({ "documentChanges": [] }), true),
            (json!({ "changes": { "file:///a": [{ "range": {}, "newText": "x" }] } }), false),
            (json!([{ "uri": "file:///a" }]), false),
            (json!({ "uri": "file:///a", "range": {} }), false),
            (json!({ "range": {}, "placeholder": "x" }), false),
        ];
        for (answer, empty) in table {
            assert_eq!(is_empty_answer(&answer), empty, "{answer}");
        }
    }

    #[test]
    fn offers_reads_the_capability_field() {
        let caps = json!({ "hoverProvider": true, "definitionProvider": false, "renameProvider": { "prepareProvider": true } });
        assert!(offers(&caps, "textDocument/hover"));
        assert!(!offers(&caps, "textDocument/definition"));
        assert!(!offers(&caps, "textDocument/references"));
        assert!(offers(&caps, "textDocument/prepareRename"));
        assert!(offers(&caps, "custom/method"));
        assert!(!offers(&json!({ "renameProvider": true }), "textDocument/prepareRename"));
    }
}
