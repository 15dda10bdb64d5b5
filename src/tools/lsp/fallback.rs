//! Name-based navigation from tree-sitter, for languages whose server is not installed
//! (DESIGN.md: "a tree-sitter fallback marked `approximate`").
//!
//! The identifier at the position is searched as a whole word (`\bNAME\b`) in files of the same
//! language with the Engine's text search (open buffers included). Definitions are the
//! declarations named NAME in the outlines of the files that mention it — the target's own file
//! first; references are the whole-word occurrences. Scopes, overloads and shadowing are not
//! understood: the answer says `approximate: true`.

use std::collections::BTreeMap;

use super::{AnswerInfo, DefinitionInfo, DefinitionOutput, LocationInfo, Target, preview};
use crate::documents::position;
use crate::engine::Engine;
use crate::search::{self, SearchRequest};
use crate::syntax::{Symbol, outline};

/// Most definitions returned.
const MAX_DEFINITIONS: usize = 20;
/// Most occurrences returned as references.
const MAX_REFERENCES: usize = 1000;

fn answer(target: &Target, note: String) -> AnswerInfo {
    AnswerInfo {
        server: "tree-sitter (name-based)".to_owned(),
        completeness: "approximate".to_owned(),
        restarted: false,
        line: target.at().line as usize,
        column: target.at().column as usize,
        approximate: true,
        note: Some(note),
    }
}

/// Whole-word occurrences of `name` in files of the target's language: (relative path, line,
/// column, line text), in path and line order.
fn occurrences(engine: &Engine, target: &Target, name: &str) -> Vec<(String, usize, usize, String)> {
    if name.is_empty() {
        return Vec::new();
    }
    let request = SearchRequest {
        pattern: format!(r"\b{}\b", regex::escape(name)),
        regex: true,
        ignore_case: false,
        paths: Vec::new(),
        file_types: vec![target.language().name().to_owned()],
        context_lines: 0,
        max_results: MAX_REFERENCES,
        max_line_chars: 300,
    };
    let Ok(outcome) = search::search(engine.workspace(), engine.documents(), &request) else { return Vec::new() };
    outcome
        .files
        .into_iter()
        .flat_map(|file| {
            let relative = file.path.relative.clone();
            file.hits.into_iter().map(move |hit| (relative.clone(), hit.line as usize, hit.column as usize, hit.text))
        })
        .collect()
}

/// Declarations named `name` in `relative`'s outline: 1-based line of each.
fn declarations(engine: &Engine, target: &Target, relative: &str, name: &str) -> Vec<usize> {
    let workspace = engine.workspace();
    let Ok(resolved) = workspace.resolve(relative) else { return Vec::new() };
    let Ok(source) = engine.documents().text(&resolved.id(), workspace.config().limits.max_file_bytes) else {
        return Vec::new();
    };
    let Some(parsed) = engine.syntax().parse(&resolved.absolute, target.language(), &source.text) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    fn walk(symbols: &[Symbol], name: &str, out: &mut Vec<usize>) {
        for symbol in symbols {
            if symbol.name == name {
                out.push(symbol.start_line);
            }
            walk(&symbol.children, name, out);
        }
    }
    walk(&outline::outline(&parsed), name, &mut lines);
    lines
}

/// Declarations named like the identifier at the target (its own file first).
pub(super) fn definition(engine: &Engine, target: &Target, note: String) -> DefinitionOutput {
    let name = target.identifier();
    let mut by_file: BTreeMap<String, Vec<(usize, usize, String)>> = BTreeMap::new();
    for (file, line, column, text) in occurrences(engine, target, &name) {
        by_file.entry(file).or_default().push((line, column, text));
    }
    let own = target.resolved().relative.clone();
    let mut files: Vec<&String> = by_file.keys().collect();
    files.sort_by_key(|f| (**f != own, (*f).clone()));
    let mut definitions = Vec::new();
    for file in files {
        let declared = declarations(engine, target, file, &name);
        for (line, column, text) in &by_file[file] {
            // A declaration's first line mentions its name (decorators aside, close enough).
            if declared.iter().any(|d| *d == *line || (*d < *line && *line <= d + 2)) {
                let info = location(file, *line, *column, &name, text);
                let preview = file_preview(engine, file, *line);
                definitions.push(DefinitionInfo { location: info, preview });
            }
        }
        if definitions.len() >= MAX_DEFINITIONS {
            break;
        }
    }
    definitions.truncate(MAX_DEFINITIONS);
    DefinitionOutput { definitions, answer: answer(target, note) }
}

/// Whole-word occurrences of the identifier (at most [`MAX_REFERENCES`]), in path and line order.
pub(super) fn references(
    engine: &Engine,
    target: &Target,
    note: String,
    include_declaration: bool,
) -> (Vec<LocationInfo>, AnswerInfo) {
    let name = target.identifier();
    let mut references = Vec::new();
    let mut declared: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (file, line, column, text) in occurrences(engine, target, &name) {
        if !include_declaration {
            let lines = declared.entry(file.clone()).or_insert_with(|| declarations(engine, target, &file, &name));
            if lines.contains(&line) {
                continue;
            }
        }
        references.push(location(&file, line, column, &name, &text));
    }
    (references, answer(target, note))
}

fn location(file: &str, line: usize, column: usize, name: &str, text: &str) -> LocationInfo {
    LocationInfo {
        file: file.into(),
        line,
        column,
        end_line: line,
        end_column: position::column_after(column, name),
        outside_root: false,
        text: Some(text.trim().to_owned()),
    }
}

fn file_preview(engine: &Engine, relative: &str, line: usize) -> Option<String> {
    let workspace = engine.workspace();
    let resolved = workspace.resolve(relative).ok()?;
    let source = engine.documents().text(&resolved.id(), workspace.config().limits.max_file_bytes).ok()?;
    Some(preview(&source.text, line))
}
