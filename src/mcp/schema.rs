//! The tool schemas filepuff publishes (`tools/list` `inputSchema` / `outputSchema`): what
//! rmcp's schemars generator writes, made portable in one pass ([`published`]).
//!
//! schemars writes an `Option<T>` of a scalar as a type array, `{"type": ["string", "null"]}`
//! (`Option<T>::json_schema`, JSON Schema 2020-12 §6.1.1). That is valid JSON Schema, but a
//! client that maps tool schemas onto a single-`type` dialect (the OpenAPI subset of Gemini
//! function declarations, the MCP Inspector's `--strict` portability check) rejects the tool or
//! drops the constraint. [`PortableNullable`] rewrites every such schema as `anyOf` branches of
//! one `type` each, the form schemars itself uses for an `Option` of a struct. Its integer
//! `format`s (`uint32`, `int64`, …) are not JSON Schema formats and are dropped
//! ([`WithoutCustomFormats`]).

use rmcp::model::JsonObject;
use schemars::Schema;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::{Map, Value};

/// `schema` as published: [`PortableNullable`] and [`WithoutCustomFormats`] applied to it and
/// every subschema (properties, items, `$defs`, `anyOf`, …). Accepts and rejects the same
/// instances as `schema`.
pub fn published(schema: &JsonObject) -> JsonObject {
    let mut schema = Schema::from(schema.clone());
    PortableNullable.transform(&mut schema);
    WithoutCustomFormats.transform(&mut schema);
    match schema.to_value() {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// Rewrites `{"type": [A, B, …], KEYWORDS}` as `{"anyOf": [{"type": A, …}, {"type": B, …}],
/// ANNOTATIONS}`: annotations (`description`, `default`, …) stay outside; each branch gets the
/// assertions that apply to its type (`minimum` to numbers, `items` to arrays, …) and those
/// that apply to any type (`enum`, `const`, `$ref`, …), so the result validates exactly what
/// the type array did. A one-element array becomes a plain `"type"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PortableNullable;

/// Keywords that describe rather than constrain (JSON Schema 2020-12 Validation §9, Core §8).
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$defs",
];

/// The instance types a type-specific assertion applies to (JSON Schema 2020-12 Validation §6,
/// Core §10.3); `None` for assertions that apply to every type (`enum`, `const`, `allOf`, …).
fn applies_to(keyword: &str) -> Option<&'static [&'static str]> {
    const NUMBERS: &[&str] = &["integer", "number"];
    Some(match keyword {
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => NUMBERS,
        "minLength" | "maxLength" | "pattern" | "contentEncoding" | "contentMediaType" | "contentSchema" => &["string"],
        // `format` annotates strings and, in schemars' output, numbers; never null.
        "format" => &["string", "integer", "number"],
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains" | "minContains"
        | "maxContains" | "unevaluatedItems" => &["array"],
        "properties"
        | "additionalProperties"
        | "required"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "unevaluatedProperties" => &["object"],
        _ => return None,
    })
}

impl Transform for PortableNullable {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else { return };
        let Some(Value::Array(types)) = object.get("type") else { return };
        let types: Vec<Value> = types.clone();
        if types.len() == 1 {
            object.insert("type".to_owned(), types[0].clone());
            return;
        }
        let mut outer = Map::new();
        let mut assertions = Map::new();
        for (keyword, value) in std::mem::take(object) {
            if keyword == "type" {
                continue;
            }
            if ANNOTATIONS.contains(&keyword.as_str()) {
                outer.insert(keyword, value);
            } else {
                assertions.insert(keyword, value);
            }
        }
        let branches = types
            .into_iter()
            .map(|typ| {
                let name = typ.as_str().unwrap_or_default().to_owned();
                let mut branch = Map::new();
                branch.insert("type".to_owned(), typ);
                for (keyword, value) in &assertions {
                    if applies_to(keyword).is_none_or(|types| types.contains(&name.as_str())) {
                        branch.insert(keyword.clone(), value.clone());
                    }
                }
                Value::Object(branch)
            })
            .collect();
        outer.insert("anyOf".to_owned(), Value::Array(branches));
        *object = outer;
    }
}

/// Drops schemars' integer `format`s (`uint`, `int32`, `double`, …), which are not JSON Schema
/// formats (2020-12 Validation §7.3) and which strict validators (ajv) refuse as unknown.
#[derive(Debug, Clone, Copy, Default)]
pub struct WithoutCustomFormats;

impl Transform for WithoutCustomFormats {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else { return };
        let custom = matches!(object.get("format"), Some(Value::String(f))
            if matches!(f.as_str(), "uint" | "uint8" | "uint16" | "uint32" | "uint64" | "int" | "int8" | "int16" | "int32" | "int64" | "float" | "double"));
        if custom {
            object.remove("format");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn publish(value: Value) -> Value {
        let Value::Object(object) = value else { panic!("not an object") };
        Value::Object(published(&object))
    }

    #[test]
    fn type_arrays_become_any_of_branches_with_the_assertions_of_each_type() {
        let table = [
            (
                json!({"type": ["string", "null"], "description": "d"}),
                json!({"description": "d", "anyOf": [{"type": "string"}, {"type": "null"}]}),
            ),
            (
                json!({"type": ["integer", "null"], "format": "uint32", "minimum": 0, "default": 3}),
                json!({"default": 3, "anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}),
            ),
            (
                json!({"type": ["array", "null"], "items": {"type": ["boolean", "null"]}}),
                json!({"anyOf": [{"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}, {"type": "null"}]}),
            ),
            (
                json!({"type": ["string", "null"], "enum": ["a", null]}),
                json!({"anyOf": [{"type": "string", "enum": ["a", null]}, {"type": "null", "enum": ["a", null]}]}),
            ),
            (json!({"type": ["object"], "properties": {}}), json!({"type": "object", "properties": {}})),
            (json!({"type": "string", "format": "date-time"}), json!({"type": "string", "format": "date-time"})),
        ];
        for (input, expected) in table {
            assert_eq!(publish(input.clone()), expected, "{input}");
        }
    }

    #[test]
    fn nested_schemas_and_defs_are_rewritten_but_values_are_not() {
        let input = json!({
            "type": "object",
            "properties": {"a": {"type": ["number", "null"], "default": {"type": ["x", "y"]}}},
            "$defs": {"D": {"type": "object", "properties": {"b": {"type": ["string", "null"]}}}},
        });
        let expected = json!({
            "type": "object",
            "properties": {"a": {"default": {"type": ["x", "y"]}, "anyOf": [{"type": "number"}, {"type": "null"}]}},
            "$defs": {"D": {"type": "object", "properties": {"b": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}},
        });
        assert_eq!(publish(input), expected);
    }
}
