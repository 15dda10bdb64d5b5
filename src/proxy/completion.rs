//! Completion lists passed through the proxy as the protocol has them (LSP 3.17
//! "Completion Request", `CompletionList.itemDefaults`).
//!
//! - `itemDefaults` (commitCharacters, editRange, insertTextFormat, insertTextMode, data) stay
//!   in one server's list for an editor that declared them in
//!   `textDocument.completion.completionList.itemDefaults`; a default the editor did not declare
//!   is applied to the items that lack the property ([`apply_item_defaults`]) and removed.
//! - Lists from several servers are merged with each server's defaults applied to its own items
//!   first (one list cannot carry two servers' defaults); when only one server answered with a
//!   list, its answer passes whole ([`merge`]). `isIncomplete` is true when any list's is.
//! - `data` is wrapped for `completionItem/resolve` ([`tag`]): an item's own `data`, and
//!   `itemDefaults.data` itself rather than the items relying on it, so the editor applies the
//!   (wrapped) default as the spec says and the server receives exactly its own value back.

use async_lsp::ResponseError;
use serde_json::{Map, Value, json};

/// The `itemDefaults` properties of LSP 3.17, in the order of [`ItemDefaults`]' bits.
const PROPERTIES: [&str; 5] = ["commitCharacters", "editRange", "insertTextFormat", "insertTextMode", "data"];

/// Which `itemDefaults` properties an editor accepts: bit `i` is [`PROPERTIES`]`[i]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ItemDefaults(u8);

impl ItemDefaults {
    /// None: every default is applied to the items.
    pub(crate) const NONE: ItemDefaults = ItemDefaults(0);

    /// From the editor's `textDocument.completion.completionList.itemDefaults` (a list of
    /// property names; missing means none).
    pub(crate) fn from_capabilities(capabilities: &Value) -> ItemDefaults {
        let listed = capabilities.pointer("/textDocument/completion/completionList/itemDefaults");
        let names: Vec<&str> =
            listed.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        ItemDefaults(
            PROPERTIES.iter().enumerate().filter(|(_, p)| names.contains(p)).fold(0, |bits, (i, _)| bits | 1 << i),
        )
    }

    fn accepts(self, property: &str) -> bool {
        PROPERTIES.iter().position(|p| *p == property).is_some_and(|i| self.0 & 1 << i != 0)
    }
}

/// Applies the `itemDefaults` of the `CompletionList` `list` that `keep` does not accept to the
/// items lacking the property, and removes them from `itemDefaults` (the whole field when
/// none is left). `editRange` becomes the item's `textEdit` (a `TextEdit` for a range, an
/// `InsertReplaceEdit` for `{insert, replace}`) with `textEditText`, else `label`, as its new
/// text; an item with its own `textEdit` keeps it. A `CompletionItem[]` answer is left alone.
pub(crate) fn apply_item_defaults(list: &mut Value, keep: ItemDefaults) {
    let Some(list) = list.as_object_mut() else { return };
    let Some(Value::Object(mut defaults)) = list.remove("itemDefaults") else { return };
    let applied: Map<String, Value> = {
        let names: Vec<String> = defaults.keys().filter(|k| !keep.accepts(k)).cloned().collect();
        names.into_iter().filter_map(|name| defaults.remove_entry(&name)).collect()
    };
    if !defaults.is_empty() {
        list.insert("itemDefaults".to_owned(), Value::Object(defaults));
    }
    if applied.is_empty() {
        return;
    }
    for item in list.get_mut("items").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(item) = item.as_object_mut() else { continue };
        for (name, value) in &applied {
            if name == "editRange" {
                if item.contains_key("textEdit") {
                    continue;
                }
                let new_text = item
                    .remove("textEditText")
                    .or_else(|| item.get("label").cloned())
                    .unwrap_or_else(|| Value::String(String::new()));
                let edit = match (value.get("insert"), value.get("replace")) {
                    (Some(insert), Some(replace)) => {
                        json!({ "newText": new_text, "insert": insert, "replace": replace })
                    }
                    _ => json!({ "newText": new_text, "range": value }),
                };
                item.insert("textEdit".to_owned(), edit);
            } else if !item.contains_key(name) {
                item.insert(name.clone(), value.clone());
            }
        }
    }
}

/// Wraps `data` for `completionItem/resolve` in the completion answer `value` with `wrap` (see
/// the module documentation): `itemDefaults.data` when the list has it, and each item's own.
/// Items without `data` get a wrapper of their own only when no default would apply to them.
pub(crate) fn tag(value: &mut Value, mut wrap: impl FnMut(&mut Map<String, Value>)) {
    let mut default_data = false;
    if let Some(defaults) = value.get_mut("itemDefaults").and_then(Value::as_object_mut)
        && defaults.contains_key("data")
    {
        wrap(defaults);
        default_data = true;
    }
    let items = if value.is_array() { Some(value) } else { value.get_mut("items") };
    for item in items.and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
        if !default_data || item.contains_key("data") {
            wrap(item);
        }
    }
}

/// Several servers' completion answers (`CompletionItem[]`, `CompletionList` or null) as one:
/// the one list whole when only one server answered with one, else one `CompletionList` of
/// every server's items with its defaults applied, incomplete when any list is.
pub(crate) fn merge(answers: Vec<Result<Value, ResponseError>>) -> Value {
    let mut lists: Vec<Value> = Vec::new();
    for answer in answers {
        match answer {
            Ok(list @ (Value::Array(_) | Value::Object(_))) => lists.push(list),
            Ok(_) => {}
            Err(err) => tracing::debug!("one server's completion failed: {}", err.message),
        }
    }
    if lists.len() == 1 {
        return lists.pop().unwrap_or(Value::Null);
    }
    let mut items = Vec::new();
    let mut incomplete = false;
    for mut list in lists {
        apply_item_defaults(&mut list, ItemDefaults::NONE);
        match list {
            Value::Array(list) => items.extend(list),
            Value::Object(mut list) => {
                incomplete |= list.get("isIncomplete").and_then(Value::as_bool).unwrap_or(false);
                if let Some(Value::Array(list)) = list.remove("items") {
                    items.extend(list);
                }
            }
            _ => {}
        }
    }
    json!({ "isIncomplete": incomplete, "items": items })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u32, end: u32) -> Value {
        json!({ "start": { "line": 1, "character": start }, "end": { "line": 1, "character": end } })
    }

    #[test]
    fn defaults_the_editor_does_not_take_are_applied_to_items() {
        let caps = json!({ "textDocument": { "completion": { "completionList": { "itemDefaults": ["data", "editRange"] } } } });
        let keep = ItemDefaults::from_capabilities(&caps);
        let mut list = json!({ "isIncomplete": false,
            "itemDefaults": { "data": 1, "editRange": range(0, 2), "insertTextFormat": 2, "commitCharacters": ["."] },
            "items": [ { "label": "a" }, { "label": "b", "insertTextFormat": 1, "commitCharacters": [] } ] });
        apply_item_defaults(&mut list, keep);
        assert_eq!(list["itemDefaults"], json!({ "data": 1, "editRange": range(0, 2) }));
        assert_eq!(list["items"][0], json!({ "label": "a", "insertTextFormat": 2, "commitCharacters": ["."] }));
        assert_eq!(list["items"][1], json!({ "label": "b", "insertTextFormat": 1, "commitCharacters": [] }));
    }

    #[test]
    fn edit_range_becomes_a_text_edit_with_text_edit_text_or_label() {
        let insert_replace = json!({ "insert": range(0, 1), "replace": range(0, 3) });
        let mut list = json!({ "itemDefaults": { "editRange": range(0, 2) },
            "items": [ { "label": "a" }, { "label": "b", "textEditText": "bb" },
                       { "label": "c", "textEdit": { "range": range(5, 5), "newText": "c" } } ] });
        apply_item_defaults(&mut list, ItemDefaults::NONE);
        assert!(list.get("itemDefaults").is_none());
        assert_eq!(list["items"][0]["textEdit"], json!({ "range": range(0, 2), "newText": "a" }));
        assert_eq!(list["items"][1], json!({ "label": "b", "textEdit": { "range": range(0, 2), "newText": "bb" } }));
        assert_eq!(list["items"][2]["textEdit"]["range"], range(5, 5));
        let mut list = json!({ "itemDefaults": { "editRange": insert_replace }, "items": [ { "label": "x" } ] });
        apply_item_defaults(&mut list, ItemDefaults::NONE);
        assert_eq!(
            list["items"][0]["textEdit"],
            json!({ "newText": "x", "insert": range(0, 1), "replace": range(0, 3) })
        );
    }

    #[test]
    fn default_data_is_wrapped_instead_of_hidden() {
        let wrap = |map: &mut Map<String, Value>| {
            let original = map.remove("data");
            let mut wrapped = json!({ "filepuff": 7 });
            if let Some(original) = original {
                wrapped["data"] = original;
            }
            map.insert("data".to_owned(), wrapped);
        };
        let mut list = json!({ "itemDefaults": { "data": { "d": 1 } },
            "items": [ { "label": "a" }, { "label": "b", "data": null } ] });
        tag(&mut list, wrap);
        assert_eq!(list["itemDefaults"]["data"], json!({ "filepuff": 7, "data": { "d": 1 } }));
        assert_eq!(list["items"][0], json!({ "label": "a" }));
        assert_eq!(list["items"][1]["data"], json!({ "filepuff": 7, "data": null }));
        let mut bare = json!([{ "label": "a" }]);
        tag(&mut bare, wrap);
        assert_eq!(bare[0]["data"], json!({ "filepuff": 7 }));
    }

    #[test]
    fn one_answer_passes_whole_and_several_merge_with_their_defaults() {
        let a = json!({ "isIncomplete": false, "itemDefaults": { "data": 1, "editRange": range(0, 1) },
            "items": [ { "label": "a" } ] });
        assert_eq!(merge(vec![Ok(a.clone()), Ok(Value::Null)]), a);
        let b = json!({ "isIncomplete": true, "items": [ { "label": "b" } ] });
        let merged = merge(vec![Ok(a), Ok(b), Ok(json!([{ "label": "c" }]))]);
        assert_eq!(
            merged,
            json!({ "isIncomplete": true, "items": [
                { "label": "a", "data": 1, "textEdit": { "range": range(0, 1), "newText": "a" } },
                { "label": "b" }, { "label": "c" } ] })
        );
    }
}
