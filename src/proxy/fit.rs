//! Answers fitted to what the editor declared it accepts (LSP 3.17 "Client Capabilities").
//!
//! Servers are offered filepuff's own client capabilities (`backends::client`: versioned
//! `documentChanges`, markdown everywhere), since the agents share them with the editor. An
//! answer in a shape the editor did not declare is rewritten here, after positions are
//! translated and before URIs are respelled for the editor:
//!
//! - a `WorkspaceEdit` whose `documentChanges` are all text document edits becomes `changes`
//!   (keyed by URI; the versions are dropped) for an editor without
//!   `workspace.workspaceEdit.documentChanges` (§workspaceEdit: "If the client doesn't support
//!   `documentChanges` ... `changes` are used"): in `textDocument/rename`, in the `edit` of
//!   each code action of `textDocument/codeAction` and `codeAction/resolve`, and in a server's
//!   `workspace/applyEdit` request ([`Accepts::fit_request`]). Resource operations
//!   (create, rename, delete) cannot be written as `changes`: an edit holding one is passed on
//!   unchanged (a server behind an editor is offered the editor's `resourceOperations`);
//! - a `MarkupContent` of kind `markdown` where the editor's format list lacks `markdown` becomes
//!   kind `plaintext` with the same text when the list names `plaintext`, else (no list: the
//!   editor declared no `MarkupContent` support) the plain string: completion items'
//!   `documentation` (`textDocument.completion.completionItem.documentationFormat`), hover
//!   `contents` (`textDocument.hover.contentFormat`), and signatures' and parameters'
//!   `documentation` (`textDocument.signatureHelp.signatureInformation.documentationFormat`);
//! - a completion list's `itemDefaults` the editor did not declare in
//!   `textDocument.completion.completionList.itemDefaults` are applied to its items
//!   (`super::completion`).

use serde_json::{Map, Value};

/// What the editor declared it accepts, read once per session from its `initialize` capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    /// `workspace.workspaceEdit.documentChanges`.
    document_changes: bool,
    /// `textDocument.completion.completionItem.documentationFormat`.
    completion: Markup,
    /// `textDocument.hover.contentFormat`.
    hover: Markup,
    /// `textDocument.signatureHelp.signatureInformation.documentationFormat`.
    signature: Markup,
    /// `textDocument.completion.completionList.itemDefaults`.
    item_defaults: super::completion::ItemDefaults,
}

/// The best `MarkupContent` an editor's format list allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Markup {
    /// `markdown` is listed: answers pass unchanged.
    Markdown,
    /// `plaintext` but not `markdown`: markdown is relabelled `plaintext`.
    PlainText,
    /// No list (or neither kind): a plain string instead of `MarkupContent`.
    String,
}

fn markup(capabilities: &Value, pointer: &str) -> Markup {
    let formats = capabilities.pointer(pointer).and_then(Value::as_array);
    let lists = |kind: &str| formats.is_some_and(|formats| formats.iter().any(|f| f.as_str() == Some(kind)));
    if lists("markdown") {
        Markup::Markdown
    } else if lists("plaintext") {
        Markup::PlainText
    } else {
        Markup::String
    }
}

impl Accepts {
    /// Reads the editor's `InitializeParams.capabilities` (any JSON; missing fields mean "not
    /// declared", as LSP says).
    pub(crate) fn from_capabilities(capabilities: &Value) -> Self {
        Self {
            document_changes: capabilities.pointer("/workspace/workspaceEdit/documentChanges").and_then(Value::as_bool)
                == Some(true),
            completion: markup(capabilities, "/textDocument/completion/completionItem/documentationFormat"),
            hover: markup(capabilities, "/textDocument/hover/contentFormat"),
            signature: markup(capabilities, "/textDocument/signatureHelp/signatureInformation/documentationFormat"),
            item_defaults: super::completion::ItemDefaults::from_capabilities(capabilities),
        }
    }

    /// Whether [`Accepts::fit`] may change an answer to `method` for this editor: edits (which
    /// may carry `documentChanges`) always, completion items always (item defaults), markup only
    /// where the editor does not take markdown. The proxy passes other answers on unparsed.
    pub(crate) fn fits(&self, method: &str) -> bool {
        match method {
            "textDocument/rename"
            | "textDocument/codeAction"
            | "codeAction/resolve"
            | "textDocument/completion"
            | "completionItem/resolve" => true,
            "textDocument/hover" => self.hover != Markup::Markdown,
            "textDocument/signatureHelp" => self.signature != Markup::Markdown,
            _ => false,
        }
    }

    /// Rewrites `result`, the answer to the editor's `method`, into shapes the editor accepts.
    pub(crate) fn fit(&self, method: &str, result: &mut Value) {
        if method == "textDocument/completion" {
            super::completion::apply_item_defaults(result, self.item_defaults);
        }
        match method {
            "textDocument/rename" => self.workspace_edit(result),
            "textDocument/codeAction" => {
                for action in result.as_array_mut().into_iter().flatten() {
                    if let Some(edit) = action.get_mut("edit") {
                        self.workspace_edit(edit);
                    }
                }
            }
            "codeAction/resolve" => {
                if let Some(edit) = result.get_mut("edit") {
                    self.workspace_edit(edit);
                }
            }
            "textDocument/completion" | "completionItem/resolve" if self.completion != Markup::Markdown => {
                let items: Vec<&mut Value> = if method == "completionItem/resolve" {
                    vec![result]
                } else {
                    match result {
                        Value::Array(items) => items.iter_mut().collect(),
                        Value::Object(list) => {
                            list.get_mut("items").and_then(Value::as_array_mut).into_iter().flatten().collect()
                        }
                        _ => Vec::new(),
                    }
                };
                for item in items {
                    plain(item.get_mut("documentation"), self.completion);
                }
            }
            "textDocument/hover" if self.hover != Markup::Markdown => plain(result.get_mut("contents"), self.hover),
            "textDocument/signatureHelp" if self.signature != Markup::Markdown => {
                let signatures = result.get_mut("signatures").and_then(Value::as_array_mut);
                for signature in signatures.into_iter().flatten() {
                    plain(signature.get_mut("documentation"), self.signature);
                    let parameters = signature.get_mut("parameters").and_then(Value::as_array_mut);
                    for parameter in parameters.into_iter().flatten() {
                        plain(parameter.get_mut("documentation"), self.signature);
                    }
                }
            }
            _ => {}
        }
    }

    /// Rewrites the params of a server's request to the editor into shapes the editor accepts:
    /// `workspace/applyEdit`'s `edit` as in answers (LSP 3.17 §workspace_applyEdit: the edit is
    /// a `WorkspaceEdit`, bound by the same client capability).
    pub(crate) fn fit_request(&self, method: &str, params: &mut Value) {
        if method == "workspace/applyEdit"
            && let Some(edit) = params.get_mut("edit")
        {
            self.workspace_edit(edit);
        }
    }

    /// `documentChanges` (text document edits only) → `changes`, unless the editor takes them.
    fn workspace_edit(&self, edit: &mut Value) {
        if self.document_changes {
            return;
        }
        let Some(map) = edit.as_object_mut() else { return };
        let Some(Value::Array(document_changes)) = map.get("documentChanges") else { return };
        let mut changes = Map::new();
        for change in document_changes {
            // A resource operation has `kind`; a TextDocumentEdit has `textDocument` and `edits`.
            let (Some(uri), Some(edits), None) = (
                change.pointer("/textDocument/uri").and_then(Value::as_str),
                change.get("edits").and_then(Value::as_array),
                change.get("kind"),
            ) else {
                return;
            };
            let entry = changes.entry(uri.to_owned()).or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = entry {
                list.extend(edits.iter().cloned());
            }
        }
        map.remove("documentChanges");
        map.insert("changes".to_owned(), Value::Object(changes));
    }
}

/// A `MarkupContent` made what `to` allows, its text kept as written: markdown relabelled
/// `plaintext`, or any `MarkupContent` replaced by its text.
fn plain(value: Option<&mut Value>, to: Markup) {
    let Some(value) = value else { return };
    let Value::Object(content) = value else { return };
    let (Some(kind), Some(text)) = (content.get("kind").and_then(Value::as_str), content.get("value")) else {
        return;
    };
    match to {
        Markup::Markdown => {}
        Markup::PlainText if kind == "markdown" => {
            content.insert("kind".to_owned(), Value::String("plaintext".to_owned()));
        }
        Markup::PlainText => {}
        Markup::String => *value = Value::String(text.as_str().unwrap_or_default().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn range(line: u32) -> Value {
        json!({"start": {"line": line, "character": 0}, "end": {"line": line, "character": 3}})
    }

    #[test]
    fn document_changes_become_changes_for_an_editor_without_them() {
        let accepts = Accepts::from_capabilities(&json!({}));
        let mut edit = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///a.go", "version": 3}, "edits": [{"range": range(1), "newText": "x"}]},
            {"textDocument": {"uri": "file:///b.go", "version": null}, "edits": [{"range": range(2), "newText": "y"}]},
            {"textDocument": {"uri": "file:///a.go", "version": 3}, "edits": [{"range": range(4), "newText": "z"}]},
        ]});
        accepts.fit("textDocument/rename", &mut edit);
        assert_eq!(
            edit,
            json!({"changes": {
                "file:///a.go": [{"range": range(1), "newText": "x"}, {"range": range(4), "newText": "z"}],
                "file:///b.go": [{"range": range(2), "newText": "y"}],
            }})
        );
    }

    #[test]
    fn document_changes_stay_for_an_editor_that_declares_them_or_with_a_resource_operation() {
        let declared = Accepts::from_capabilities(&json!({"workspace": {"workspaceEdit": {"documentChanges": true}}}));
        let original = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///a.go", "version": 1}, "edits": [{"range": range(1), "newText": "x"}]},
        ]});
        let mut edit = original.clone();
        declared.fit("textDocument/rename", &mut edit);
        assert_eq!(edit, original);

        let undeclared = Accepts::from_capabilities(&json!({}));
        let with_create = json!({"documentChanges": [{"kind": "create", "uri": "file:///new.go"}]});
        let mut edit = with_create.clone();
        undeclared.fit("textDocument/rename", &mut edit);
        assert_eq!(edit, with_create);
    }

    #[test]
    fn code_action_edits_are_fitted_and_commands_left_alone() {
        let accepts = Accepts::from_capabilities(&json!({}));
        let mut actions = json!([
            {"title": "fix", "edit": {"documentChanges": [
                {"textDocument": {"uri": "file:///a.py", "version": 2}, "edits": [{"range": range(0), "newText": "x"}]}]}},
            {"title": "run", "command": "c"},
        ]);
        accepts.fit("textDocument/codeAction", &mut actions);
        assert_eq!(actions[0]["edit"], json!({"changes": {"file:///a.py": [{"range": range(0), "newText": "x"}]}}));
        assert_eq!(actions[1], json!({"title": "run", "command": "c"}));
    }

    #[test]
    fn markdown_is_relabelled_where_the_editor_lists_only_plaintext() {
        let plaintext_only = Accepts::from_capabilities(&json!({"textDocument": {
            "completion": {"completionItem": {"documentationFormat": ["plaintext"]}},
            "hover": {"contentFormat": ["plaintext"]},
            "signatureHelp": {"signatureInformation": {"documentationFormat": ["plaintext"]}},
        }}));
        let mut list = json!({"isIncomplete": false, "items": [
            {"label": "Area", "documentation": {"kind": "markdown", "value": "`Area` returns"}},
            {"label": "Side", "documentation": "plain string"},
        ]});
        plaintext_only.fit("textDocument/completion", &mut list);
        assert_eq!(list["items"][0]["documentation"], json!({"kind": "plaintext", "value": "`Area` returns"}));
        assert_eq!(list["items"][1]["documentation"], json!("plain string"));

        let mut item = json!({"label": "x", "documentation": {"kind": "markdown", "value": "*x*"}});
        plaintext_only.fit("completionItem/resolve", &mut item);
        assert_eq!(item["documentation"]["kind"], "plaintext");

        let mut hover = json!({"contents": {"kind": "markdown", "value": "```go\nfunc f()\n```"}});
        plaintext_only.fit("textDocument/hover", &mut hover);
        assert_eq!(hover["contents"], json!({"kind": "plaintext", "value": "```go\nfunc f()\n```"}));

        let mut help = json!({"signatures": [{"label": "f(a)", "documentation": {"kind": "markdown", "value": "d"},
                                              "parameters": [{"label": "a", "documentation": {"kind": "markdown", "value": "p"}}]}]});
        plaintext_only.fit("textDocument/signatureHelp", &mut help);
        assert_eq!(help["signatures"][0]["documentation"]["kind"], "plaintext");
        assert_eq!(help["signatures"][0]["parameters"][0]["documentation"]["kind"], "plaintext");
    }

    #[test]
    fn markdown_becomes_a_string_where_the_editor_lists_no_format() {
        let none = Accepts::from_capabilities(&json!({"textDocument": {"completion": {"completionItem": {}}}}));
        let mut list = json!([{"label": "a", "documentation": {"kind": "markdown", "value": "*a*"}}]);
        none.fit("textDocument/completion", &mut list);
        assert_eq!(list[0]["documentation"], json!("*a*"));
        let mut hover = json!({"contents": {"kind": "markdown", "value": "*h*"}});
        none.fit("textDocument/hover", &mut hover);
        assert_eq!(hover["contents"], json!("*h*"));
        let mut plain = json!({"contents": {"kind": "plaintext", "value": "p"}});
        none.fit("textDocument/hover", &mut plain);
        assert_eq!(plain["contents"], json!("p"));
    }

    /// What the proxy relies on to pass answers on unparsed: `fit` leaves every answer to a
    /// method `fits` does not name as it is, for an editor that declares nothing and for one
    /// that declares everything.
    #[test]
    fn fit_changes_nothing_that_fits_does_not_name() {
        let declares_nothing = Accepts::from_capabilities(&json!({}));
        let declares_all = Accepts::from_capabilities(&json!({
            "workspace": {"workspaceEdit": {"documentChanges": true}},
            "textDocument": {
                "completion": {"completionItem": {"documentationFormat": ["markdown"]},
                               "completionList": {"itemDefaults": ["commitCharacters", "editRange", "insertTextFormat", "insertTextMode", "data"]}},
                "hover": {"contentFormat": ["markdown"]},
                "signatureHelp": {"signatureInformation": {"documentationFormat": ["markdown"]}},
            }
        }));
        let markdown = json!({"kind": "markdown", "value": "*d*"});
        let edit = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///a.go", "version": 1}, "edits": [{"range": range(1), "newText": "x"}]}]});
        let answers = [
            json!(null),
            json!({"contents": markdown, "range": range(0)}),
            edit.clone(),
            json!([{"title": "fix", "edit": edit}]),
            json!({"title": "fix", "edit": edit}),
            json!({"isIncomplete": false, "itemDefaults": {"commitCharacters": ["."], "data": 1},
                   "items": [{"label": "a", "documentation": markdown}]}),
            json!([{"label": "a", "documentation": markdown}]),
            json!({"signatures": [{"label": "f(a)", "documentation": markdown,
                                   "parameters": [{"label": "a", "documentation": markdown}]}]}),
        ];
        let methods = [
            "textDocument/hover",
            "textDocument/signatureHelp",
            "textDocument/rename",
            "textDocument/codeAction",
            "codeAction/resolve",
            "textDocument/completion",
            "completionItem/resolve",
            "textDocument/definition",
            "textDocument/references",
            "textDocument/documentSymbol",
            "textDocument/formatting",
            "workspace/symbol",
            "workspace/executeCommand",
        ];
        for accepts in [declares_nothing, declares_all] {
            for method in methods.into_iter().filter(|m| !accepts.fits(m)) {
                for answer in &answers {
                    let mut fitted = answer.clone();
                    accepts.fit(method, &mut fitted);
                    assert_eq!(&fitted, answer, "{method} for {accepts:?}");
                }
            }
        }
        assert!(declares_nothing.fits("textDocument/hover") && !declares_all.fits("textDocument/hover"));
        assert!(!declares_nothing.fits("textDocument/definition"));
    }

    #[test]
    fn markdown_stays_where_the_editor_lists_it() {
        let markdown = Accepts::from_capabilities(&json!({"textDocument": {
            "completion": {"completionItem": {"documentationFormat": ["markdown", "plaintext"]}},
            "hover": {"contentFormat": ["markdown"]},
        }}));
        let mut list = json!([{"label": "a", "documentation": {"kind": "markdown", "value": "*a*"}}]);
        markdown.fit("textDocument/completion", &mut list);
        assert_eq!(list[0]["documentation"]["kind"], "markdown");
        let mut hover = json!({"contents": {"kind": "markdown", "value": "*h*"}});
        markdown.fit("textDocument/hover", &mut hover);
        assert_eq!(hover["contents"]["kind"], "markdown");
    }
}
