//! Documentation and headers of declarations, from their text: doc comments above a
//! declaration (`//`, `///`, `/* */`, `#` in hash-comment languages), Python docstrings, a file's
//! own documentation, and signatures (the header without the body).

use crate::documents::{Language, position};

/// Longest doc comment kept as a description, in characters.
const MAX_DOC_CHARS: usize = 1200;
/// Longest signature kept, in characters.
const MAX_SIGNATURE_CHARS: usize = 300;

/// Comment lines directly above `start_line` (1-based), markers stripped.
pub(crate) fn comment_above(lines: &[&str], start_line: usize, language: Language) -> String {
    let hash_comments = matches!(language, Language::Python | Language::Shell | Language::Elixir);
    let mut collected = Vec::new();
    // `idx` walks up from the declaration's own line (0-based); `lines` are by LSP's rule.
    let mut idx = position::zero_based(start_line).unwrap_or(0);
    while idx > 0 && collected.len() < 40 {
        idx -= 1;
        let line = lines.get(idx).map_or("", |l| l.trim());
        if language == Language::Rust && line.starts_with("#[") {
            continue;
        }
        let stripped = if let Some(rest) = line.strip_prefix("///").or_else(|| line.strip_prefix("//!")) {
            rest
        } else if let Some(rest) = line.strip_prefix("//") {
            rest
        } else if let Some(rest) = line.strip_prefix("/**").or_else(|| line.strip_prefix("/*")) {
            rest.trim_end_matches("*/")
        } else if line.starts_with("*/") {
            ""
        } else if let Some(rest) = line.strip_prefix('*') {
            rest
        } else if hash_comments && line.starts_with('#') {
            line.trim_start_matches('#')
        } else {
            break;
        };
        collected.push(stripped.trim().trim_end_matches("*/").trim().to_owned());
    }
    collected.reverse();
    cap(collected.join("\n").trim().to_owned(), MAX_DOC_CHARS)
}

/// The docstring of a Python definition: the string right after the header line.
pub(crate) fn python_docstring(code: &str) -> Option<String> {
    let mut lines = code.lines().skip_while(|l| l.trim_start().starts_with('@'));
    // The header ends at the first line ending with ':' (multi-line parameter lists included).
    let mut header_done = false;
    for _ in 0..30 {
        let line = lines.next()?;
        if line.trim_end().ends_with(':') {
            header_done = true;
            break;
        }
    }
    if !header_done {
        return None;
    }
    let rest: Vec<&str> = lines.collect();
    let body = rest.join("\n");
    docstring_at_start(body.trim_start())
}

/// A string literal at the start of `text` (triple- or single-quoted, optional r/u prefix).
fn docstring_at_start(text: &str) -> Option<String> {
    let text = text.trim_start_matches(['r', 'R', 'u', 'U']);
    for quote in ["\"\"\"", "'''", "\"", "'"] {
        if let Some(rest) = text.strip_prefix(quote) {
            let end = rest.find(quote)?;
            let doc = rest[..end].lines().map(str::trim).collect::<Vec<_>>().join("\n");
            return Some(cap(doc.trim().to_owned(), MAX_DOC_CHARS));
        }
    }
    None
}

/// A file's own documentation: a Python module docstring, or the comment above Go's `package`.
pub(crate) fn file_description(lines: &[&str], language: Language) -> String {
    match language {
        Language::Python => {
            let body: Vec<&str> =
                lines.iter().copied().skip_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#')).collect();
            docstring_at_start(&body.join("\n")).unwrap_or_default()
        }
        Language::Go => match lines.iter().position(|l| l.starts_with("package ")) {
            Some(idx) => comment_above(lines, position::one_based(idx), language),
            None => String::new(),
        },
        _ => String::new(),
    }
}

/// The declaration's header: decorators and attributes skipped, up to the body.
pub(crate) fn signature(code: &str, language: Language) -> String {
    let mut lines = code.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = String::new();
    for line in lines.by_ref() {
        if line.starts_with('@') || (language == Language::Rust && line.starts_with("#[")) {
            continue;
        }
        out.push_str(line);
        break;
    }
    if language == Language::Python {
        let mut extra = 0;
        while !out.ends_with(':') && extra < 8 {
            match lines.next() {
                Some(line) => out.push_str(&format!(" {line}")),
                None => break,
            }
            extra += 1;
        }
    }
    let out = out.trim_end_matches('{').trim_end();
    cap(out.to_owned(), MAX_SIGNATURE_CHARS)
}

fn cap(mut text: String, max_chars: usize) -> String {
    if let Some(idx) = position::byte_of_char(&text, max_chars) {
        text.truncate(idx);
        text.push('…');
    }
    text
}
