//! Repository hygiene checks that are cheap enough to run with the unit tests: every source
//! file opens with a module doc, and line/column arithmetic lives only in
//! `documents/position.rs` (and its submodules).
//!
//! ## What the position check looks for
//! Non-test code of `src/**/*.rs` — comments and string literals blanked out, `tests.rs` and `proptests.rs` files,
//! `#[cfg(test)] mod … { … }` blocks and this file skipped — is matched line by line against:
//! - **off-by-one**: `+ 1`, `- 1`, `+= 1`, `-= 1` (after an optional `as u32`-style cast),
//!   `1 + x`, or `.saturating_sub(1)`/`.checked_add(1)`/… whose operand's last name has a snake_case
//!   part `line`, `col`, `column`, `row`, `character` or `lnum` (`start.line + 1`,
//!   `params.line - 1`, `char_column + 1`, `line_start.saturating_sub(1)`): 0-/1-based
//!   conversions. Use `position::one_based` / `position::zero_based`, or a conversion that
//!   takes the unit as an argument.
//! - **tree-sitter points**: `.row`, `start_position(`, `end_position(`, `.start_pos(`,
//!   `.end_pos(`, `Point {`, `Point::new`: tree-sitter counts rows by `\n` only and columns in
//!   bytes; lines come from byte offsets through `position`.
//! - **rope indexes**: ropey's `byte_to_line`, `line_to_byte`, `char_to_line`, `line_to_char`,
//!   `byte_to_char`, `char_to_byte`, `char_to_utf16_cu`, `utf16_cu_to_char`, `len_lines`,
//!   `len_utf16_cu`, `len_chars` (and their `try_` forms).
//! - **code units**: `encode_utf16(`, `len_utf16`, `.chars().count()`, `char_indices().nth(`:
//!   columns or cuts counted in UTF-16 units or characters by hand.
//! - **line breaks**: `memchr`/`memrchr`/`memchr2`/`…_iter` looking for `b'\n'` or `b'\r'`;
//!   `split('\n')`, `split_inclusive('\n')`, `split_terminator('\n')`, `rsplit('\n')`;
//!   `.lines().enumerate()` (or `.count()`, `.nth(`, `.skip(`, `.zip(`, `.rev(`); `== b'\r'`,
//!   `== '\r'` and `b'\r' =>`: lines split or counted by hand, usually by a rule other than
//!   LSP's (`str::lines` ignores a lone `\r`).
//!
//! It is a tripwire, not a proof: arithmetic on names outside that list (`i + 1` where `i` is
//! a column, `lines[start - 1]`) is not seen. What it finds outside `position` must be moved
//! there or listed in [`ALLOWED`] with the reason it is not a conversion; an entry that no
//! longer matches anything fails the check too, so the list stays short and true.

use std::path::{Path, PathBuf};

use regex::Regex;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// `src/**/*.rs` as (path relative to the crate, text).
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            (relative, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let files = sources();
    assert!(files.len() > 10);
    for (path, text) in files {
        assert!(text.starts_with("//! "), "{path} must open with a `//!` module doc");
    }
}

/// A finding the position check accepts: the file, the rule, a piece of the (cleaned) line,
/// and why it is not a conversion that belongs in `position`.
struct Allowed {
    file: &'static str,
    rule: &'static str,
    snippet: &'static str,
    #[allow(dead_code)] // documentation for the reader of this list
    why: &'static str,
}

/// The accepted findings (see the module doc).
const ALLOWED: &[Allowed] = &[
    Allowed {
        file: "src/tools/diff.rs",
        rule: "code units",
        snippet: "self.kept += marker.chars().count()",
        why: "the diff's output budget is counted in characters of text shown, not a location",
    },
    Allowed {
        file: "src/tools/diff.rs",
        rule: "code units",
        snippet: "let chars = piece.chars().count()",
        why: "the diff's output budget is counted in characters of text shown, not a location",
    },
    Allowed {
        file: "src/backends/transport.rs",
        rule: "line breaks",
        snippet: "memchr::memchr(b'\\n', input)",
        why: "LSP base protocol framing: header lines end in `\\r\\n`; bytes of a stream, not lines of a document",
    },
    Allowed {
        file: "src/mcp/stdio.rs",
        rule: "line breaks",
        snippet: "memchr::memchr(b'\\n', available)",
        why: "MCP stdio framing: one JSON-RPC message per `\\n`-terminated line; not lines of a document",
    },
    Allowed {
        file: "src/tools/file_read.rs",
        rule: "off-by-one",
        snippet: "line_end - line_start + 1 > max_lines",
        why: "paging: the number of lines in a 1-based inclusive range; no unit changes",
    },
    Allowed {
        file: "src/tools/file_read.rs",
        rule: "off-by-one",
        snippet: "next_line_start = Some(line_end + 1)",
        why: "paging: the 1-based line after the last one returned; no unit changes",
    },
    Allowed {
        file: "src/edits/text.rs",
        rule: "line breaks",
        snippet: "normalised.split('\\n')",
        why: "reindent: content already normalised to `\\n` is split to re-indent it; it makes text, no positions",
    },
    Allowed {
        file: "src/index/rank.rs",
        rule: "code units",
        snippet: "q.chars().count(), t.chars().count()",
        why: "lengths of search terms for a fuzzy-match bound, not a location",
    },
    Allowed {
        file: "src/tools/local/search_sink.rs",
        rule: "code units",
        snippet: "let count = text.chars().count()",
        why: "cut_around: the length of a line's text to cut it for display, not a location",
    },
    Allowed {
        file: "src/backends/client/sync.rs",
        rule: "line breaks",
        snippet: "== Some(&b'\\n') && a.len() > suffix && a[a.len() - suffix - 1] == b'\\r'",
        why: "incremental sync keeps a change from splitting a `\\r\\n` (bytes, no line count)",
    },
];

struct Rule {
    name: &'static str,
    pattern: Regex,
}

fn rules() -> Vec<Rule> {
    let rule = |name, pattern: &str| Rule { name, pattern: Regex::new(pattern).unwrap() };
    vec![
        rule(
            "tree-sitter points",
            r"\.row\b|\bstart_position\(|\bend_position\(|\.start_pos\(|\.end_pos\(|\bPoint\s*\{|\bPoint::new\b",
        ),
        rule(
            "rope indexes",
            r"\b(?:try_)?(?:byte_to_line|line_to_byte|char_to_line|line_to_char|byte_to_char|char_to_byte|char_to_utf16_cu|utf16_cu_to_char|len_lines|len_utf16_cu|len_chars)\b",
        ),
        rule("code units", r"encode_utf16\(|\blen_utf16\b|\.chars\(\)\s*\.count\(\)|char_indices\(\)\s*\.nth\("),
        rule(
            "line breaks",
            r"\bmemr?chr[23]?(?:_iter)?\(\s*b'\\[nr]'|\b(?:split|split_inclusive|split_terminator|rsplit)\(\s*'\\n'|\.lines\(\)\s*\.(?:enumerate|count|nth|skip|zip|rev)\(|==\s*b?'\\r'|b'\\r'\s*=>",
        ),
    ]
}

/// Whether the last name of `operand` (`a.b.start_line`) has a line/column part.
fn names_a_line_or_column(operand: &str) -> bool {
    let last = operand.rsplit('.').next().unwrap_or(operand).to_ascii_lowercase();
    last.split('_').any(|part| matches!(part, "line" | "col" | "column" | "row" | "character" | "lnum"))
}

/// The off-by-one rule: `(operand, rest)` patterns whose operand names a line or column.
fn off_by_one(line: &str) -> bool {
    const OPERAND: &str = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*";
    thread_local! {
        static PATTERNS: [Regex; 3] = [
            Regex::new(&format!(r"({OPERAND})(?:\s+as\s+[iu](?:size|8|16|32|64))?\s*[-+]=?\s*1\b")).unwrap(),
            Regex::new(&format!(r"\b1\s*\+\s*({OPERAND})")).unwrap(),
            Regex::new(&format!(r"({OPERAND})\.(?:saturating|checked|wrapping)_(?:add|sub)\(1\)")).unwrap(),
        ];
    }
    PATTERNS.with(|patterns| {
        patterns.iter().any(|pattern| {
            pattern.captures_iter(line).any(|caps| {
                let whole = caps.get(0).unwrap();
                // `1.5` or `1_000` is another number.
                let after = line[whole.end()..].chars().next();
                after.is_none_or(|c| c != '.' && c != '_') && names_a_line_or_column(&caps[1])
            })
        })
    })
}

/// `text` with comments removed and string literals emptied (`""`), char literals and line
/// structure kept.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut idx = 0;
    let newlines = |slice: &[char]| "\n".repeat(slice.iter().filter(|c| **c == '\n').count());
    let ident_before = |idx: usize| idx > 0 && (chars[idx - 1].is_alphanumeric() || chars[idx - 1] == '_');
    while idx < chars.len() {
        let rest = &chars[idx..];
        if rest.starts_with(&['/', '/']) {
            while idx < chars.len() && chars[idx] != '\n' {
                idx += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let end = (idx + 2..chars.len().saturating_sub(1))
                .find(|&i| chars[i] == '*' && chars[i + 1] == '/')
                .map_or(chars.len(), |i| i + 2);
            out.push_str(&newlines(&chars[idx..end]));
            idx = end;
        } else if !ident_before(idx) && raw_string_start(rest).is_some() {
            let (open, hashes) = raw_string_start(rest).unwrap();
            let body = idx + open;
            let end = (body..chars.len())
                .find(|&i| {
                    chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes
                })
                .map_or(chars.len(), |i| i + 1 + hashes);
            out.push_str("\"\"");
            out.push_str(&newlines(&chars[idx..end]));
            idx = end;
        } else if chars[idx] == '"' {
            let mut end = idx + 1;
            while end < chars.len() && chars[end] != '"' {
                end += if chars[end] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            out.push_str(&newlines(&chars[idx..end.min(chars.len())]));
            idx = end + 1;
        } else if chars[idx] == '\'' {
            let len = char_literal_len(rest);
            out.extend(&chars[idx..idx + len.max(1)]);
            idx += len.max(1);
        } else {
            out.push(chars[idx]);
            idx += 1;
        }
    }
    out
}

/// `r"`, `r#"`, `br##"` … at the start of `rest`: (length of the opener, number of `#`).
fn raw_string_start(rest: &[char]) -> Option<(usize, usize)> {
    let mut at = usize::from(rest.first() == Some(&'b'));
    if rest.get(at) != Some(&'r') {
        return None;
    }
    at += 1;
    let hashes = rest[at..].iter().take_while(|c| **c == '#').count();
    (rest.get(at + hashes) == Some(&'"')).then_some((at + hashes + 1, hashes))
}

/// Length of the char literal (`'x'`, `'\n'`, `'\u{1F600}'`) at the start of `rest`; 0 for
/// a lifetime or label.
fn char_literal_len(rest: &[char]) -> usize {
    match rest.get(1) {
        Some('\\') => rest.iter().skip(3).position(|c| *c == '\'').map_or(0, |i| i + 4),
        Some(_) if rest.get(2) == Some(&'\'') => 3,
        _ => 0,
    }
}

/// Findings in one file: (1-based line number, rule, cleaned line).
fn findings(path: &str, text: &str) -> Vec<(usize, &'static str, String)> {
    let is_position = path == "src/documents/position.rs" || path.starts_with("src/documents/position/");
    let is_test_file = path.ends_with("/tests.rs")
        || path.ends_with("/proptests.rs")
        || path.contains("/tests/")
        || path == "src/tidy.rs";
    if is_position || is_test_file {
        return Vec::new();
    }
    let rules = rules();
    let code = code_only(text);
    let mut out = Vec::new();
    let mut in_test_module = false;
    let mut previous = "";
    for (idx, line) in code.lines().enumerate() {
        let number = idx + 1;
        if in_test_module {
            in_test_module = line != "}";
        } else if previous.trim() == "#[cfg(test)]" && line.starts_with("mod ") && line.trim_end().ends_with('{') {
            in_test_module = true;
        } else {
            for rule in &rules {
                if rule.pattern.is_match(line) {
                    out.push((number, rule.name, line.trim().to_owned()));
                }
            }
            if off_by_one(line) {
                out.push((number, "off-by-one", line.trim().to_owned()));
            }
        }
        previous = line;
    }
    out
}

#[test]
fn line_and_column_arithmetic_lives_in_position() {
    let mut unexplained = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for (path, text) in sources() {
        for (number, rule, line) in findings(&path, &text) {
            match ALLOWED.iter().position(|a| a.file == path && a.rule == rule && line.contains(a.snippet)) {
                Some(idx) => used[idx] = true,
                None => unexplained.push(format!("{path}:{number}: [{rule}] {line}")),
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "line/column arithmetic outside documents/position.rs (use its functions, or add an entry with \
         the reason to ALLOWED in src/tidy.rs):\n{}",
        unexplained.join("\n")
    );
    let stale: Vec<&str> = ALLOWED.iter().zip(&used).filter(|(_, used)| !**used).map(|(a, _)| a.snippet).collect();
    assert!(stale.is_empty(), "ALLOWED entries that match nothing any more (remove them): {stale:?}");
}

/// Planted violations are found; the same ideas written through `position`, in comments,
/// strings or test modules are not.
#[test]
fn the_position_check_finds_planted_arithmetic() {
    let cases: &[(&str, Option<&str>)] = &[
        ("let line = start.line as usize + 1;", Some("off-by-one")),
        ("let text = position::line_text(&rope, params.line - 1);", Some("off-by-one")),
        ("self.matches.push((line, char_column + 1, text));", Some("off-by-one")),
        ("let idx = start_line.saturating_sub(1);", Some("off-by-one")),
        ("let span = 1 + end_line;", Some("off-by-one")),
        ("row += 1;", Some("off-by-one")),
        ("let line = node.start_position().row;", Some("tree-sitter points")),
        ("let first = text.byte_to_line(offset);", Some("rope indexes")),
        ("let units = prefix.encode_utf16().count();", Some("code units")),
        ("let column = text[start..at].chars().count();", Some("code units")),
        ("match line.char_indices().nth(max) {", Some("code units")),
        ("let lines = memchr::memchr_iter(b'\\n', bytes).count();", Some("line breaks")),
        ("let rows: Vec<&str> = text.split('\\n').collect();", Some("line breaks")),
        ("for (idx, line) in content.lines().enumerate() {", Some("line breaks")),
        ("if bytes[at] == b'\\r' {", Some("line breaks")),
        // Not findings.
        ("let line = position::one_based(start.line);", None),
        ("let count = rows + 1;", None),
        ("let next = offset + 1.5;", None),
        ("// a comment about line + 1 and byte_to_line", None),
        ("let sql = \"SELECT end_line - start_line + 1 FROM c\";", None),
        ("let raw = r#\"line + 1 \"quoted\" text.split('\\n')\"#;", None),
        ("let first = text.lines().next();", None),
        ("fn f<'a>(x: &'a str) -> char { '\\'' }", None),
        ("#[cfg(test)]\nmod tests {\n    let x = line + 1;\n}", None),
    ];
    for (code, expected) in cases {
        let found = findings("src/planted.rs", code);
        let rules: Vec<&str> = found.iter().map(|(_, rule, _)| *rule).collect();
        match expected {
            Some(rule) => assert!(rules.contains(rule), "{code:?}: expected [{rule}], found {rules:?}"),
            None => assert!(rules.is_empty(), "{code:?}: expected nothing, found {rules:?}"),
        }
    }
}
