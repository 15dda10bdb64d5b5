//! Extraction: the components and relationships of one parsed file, from its tree-sitter parse.
//!
//! Components come from the symbol outline (`crate::syntax::outline`), so every language with an
//! outline is covered the same way. Relationships:
//! - `contains`: file → top-level symbol, class → member, receiver type → Go method (also a C++
//!   out-of-line method's class, a Rust `impl`'s type);
//! - `imports`: file → module (Go import paths, Python modules with relative imports resolved
//!   against the file's directory, JS/TS module specifiers, C/C++ includes, Rust `use` paths);
//! - `inherits` / `implements`: Python bases, JS/TS `extends`/`implements`, C++ base classes,
//!   TS interface `extends`, Rust `impl Trait for Type`;
//! - `calls`: call expressions inside a function or method, by callee name. Without a language
//!   server these are name matches, resolved later by [`super::index`]; they carry
//!   `{"approximate": true, "source": "syntax"}`.
//!
//! Nothing here touches the database; [`apply`](super::index::apply) writes a [`FileAnalysis`].

use std::ops::Range;

use ast_grep_core::Node;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_language::SupportLang;

use super::doc_text::{comment_above, file_description, python_docstring, signature};
use super::{ComponentType, RelationshipType};
use crate::documents::{Language, position};
use crate::syntax::{ParsedFile, Symbol, SymbolKind, outline};

type SyntaxNode<'r> = Node<'r, StrDoc<SupportLang>>;

/// One declaration found in a file.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedSymbol {
    pub name: String,
    /// `Class.method`, `Outer.Inner`; the name for top-level symbols.
    pub qualified_name: String,
    pub component_type: ComponentType,
    /// The outline kind (`struct`, `enum`, `constant`, …), kept in metadata.
    pub kind: &'static str,
    /// Index of the enclosing symbol in the same file, if any.
    pub parent: Option<usize>,
    /// A type named by the declaration rather than enclosing it (a Go method's receiver type, a
    /// C++ out-of-line method's class, a Rust `impl`'s type): resolved to a `contains` edge.
    pub receiver: Option<String>,
    /// 1-based first line.
    pub start_line: u32,
    /// 1-based last line, inclusive.
    pub end_line: u32,
    /// Byte range in the file.
    pub byte_range: Range<usize>,
    pub code_text: String,
    /// The doc comment or docstring, markers stripped.
    pub description: String,
    /// The declaration's first line(s), without the body.
    pub signature: String,
}

/// Who a relationship found by name starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    /// A symbol of this file, by index.
    Symbol(usize),
    /// A type known only by name (the type of a Rust `impl Trait for Type`).
    Named(String),
}

/// A relationship whose target is known only by name, resolved against the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedLink {
    pub source: SourceRef,
    pub target_name: String,
    pub relationship_type: RelationshipType,
}

/// What one file declares and refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct FileAnalysis {
    /// Workspace-relative path (or the caller's label for code without a file).
    pub file_path: String,
    pub language: Language,
    pub line_count: u32,
    /// The module docstring or package comment.
    pub description: String,
    pub symbols: Vec<ExtractedSymbol>,
    /// Imported module names, in order, without duplicates.
    pub imports: Vec<String>,
    /// `inherits`, `implements` and `calls` by name.
    pub links: Vec<NamedLink>,
    /// Whether the parser reported syntax errors.
    pub has_syntax_errors: bool,
    /// The text analysed (symbols' byte ranges are into it).
    pub source: String,
}

/// Whether files of `language` are analysed (languages with code declarations; not Markdown,
/// JSON, YAML, HTML, Vue or TOML).
pub fn analyses(language: Language) -> bool {
    outline::supports(language)
        && !matches!(language, Language::Markdown | Language::Json | Language::Yaml | Language::Html | Language::Vue)
}

/// The outline kind's component type; `None` for kinds that are not code components (`impl`
/// blocks are folded into their type, headings and keys are documents' structure).
pub fn component_type_of(kind: SymbolKind) -> Option<ComponentType> {
    Some(match kind {
        SymbolKind::Function | SymbolKind::Macro => ComponentType::Function,
        SymbolKind::Method => ComponentType::Method,
        SymbolKind::Class | SymbolKind::Struct | SymbolKind::Enum | SymbolKind::Type => ComponentType::Class,
        SymbolKind::Interface | SymbolKind::Trait => ComponentType::Interface,
        SymbolKind::Constant | SymbolKind::Variable => ComponentType::Variable,
        SymbolKind::Module => ComponentType::Module,
        SymbolKind::Impl | SymbolKind::Heading | SymbolKind::Key => return None,
    })
}

/// Extracts the components and relationships of `parsed`, labelled `file_path`.
pub fn extract(parsed: &ParsedFile, file_path: &str) -> FileAnalysis {
    let text = parsed.text.to_string();
    let lines: Vec<&str> = position::lines(&text).collect();
    let mut analysis = FileAnalysis {
        file_path: file_path.to_owned(),
        language: parsed.language,
        line_count: position::line_count(&parsed.text) as u32,
        description: file_description(&lines, parsed.language),
        symbols: Vec::new(),
        imports: Vec::new(),
        links: Vec::new(),
        has_syntax_errors: outline::has_syntax_errors(parsed),
        source: String::new(),
    };
    let symbols = outline::outline(parsed);
    let mut walker = SymbolWalker { text: &text, lines: &lines, language: parsed.language, out: &mut analysis };
    for symbol in &symbols {
        walker.add(symbol, None, None, "");
    }
    scan_tree(parsed, &mut analysis);
    analysis.source = text;
    analysis
}

struct SymbolWalker<'a> {
    text: &'a str,
    lines: &'a [&'a str],
    language: Language,
    out: &'a mut FileAnalysis,
}

impl SymbolWalker<'_> {
    fn add(&mut self, symbol: &Symbol, parent: Option<usize>, receiver: Option<&str>, prefix: &str) {
        if symbol.kind == SymbolKind::Impl {
            // `impl Type` / `impl Trait for Type`: members belong to Type.
            let type_name = base_type_name(&symbol.name);
            if let Some(trait_name) = &symbol.container {
                self.out.links.push(NamedLink {
                    source: SourceRef::Named(type_name.clone()),
                    target_name: base_type_name(trait_name),
                    relationship_type: RelationshipType::Implements,
                });
            }
            for child in &symbol.children {
                self.add(child, None, Some(&type_name), &format!("{type_name}."));
            }
            return;
        }
        let Some(component_type) = component_type_of(symbol.kind) else { return };
        if symbol.name == "_" || symbol.name.is_empty() {
            return;
        }
        // A Go method's receiver, a C++ `Foo::bar` definition: the container names a type.
        let own_receiver = match (&symbol.container, symbol.kind) {
            (Some(container), SymbolKind::Method) if parent.is_none() && receiver.is_none() => {
                Some(base_type_name(container))
            }
            _ => None,
        };
        let receiver = own_receiver.as_deref().or(receiver);
        let qualified_name = match (&own_receiver, prefix) {
            (Some(receiver), _) => format!("{receiver}.{}", symbol.name),
            (None, prefix) => format!("{prefix}{}", symbol.name),
        };
        let range = symbol.byte_range.start.min(self.text.len())..symbol.byte_range.end.min(self.text.len());
        let code_text = self.text.get(range.clone()).unwrap_or_default().to_owned();
        let description = match self.language {
            Language::Python => python_docstring(&code_text)
                .unwrap_or_else(|| comment_above(self.lines, symbol.start_line, self.language)),
            _ => comment_above(self.lines, symbol.start_line, self.language),
        };
        let signature = signature(&code_text, self.language);
        let index = self.out.symbols.len();
        self.out.symbols.push(ExtractedSymbol {
            name: symbol.name.clone(),
            qualified_name: qualified_name.clone(),
            component_type,
            kind: symbol.kind.name(),
            parent,
            receiver: if parent.is_none() { receiver.map(str::to_owned) } else { None },
            start_line: symbol.start_line as u32,
            end_line: symbol.end_line as u32,
            byte_range: range,
            code_text,
            description,
            signature,
        });
        for child in &symbol.children {
            self.add(child, Some(index), None, &format!("{qualified_name}."));
        }
    }
}

/// `*Server` → `Server`; `Set[T]` → `Set`; `Vec<T>` → `Vec`; `fmt::Display` → `Display`;
/// `ns::Foo` → `Foo`.
pub fn base_type_name(text: &str) -> String {
    let text = text.trim().trim_start_matches(['*', '&']).trim();
    let text = text.trim_start_matches("mut ").trim_start_matches("dyn ");
    let text = text.split(['[', '<', '(']).next().unwrap_or(text);
    let text = text.rsplit("::").next().unwrap_or(text);
    let text = text.rsplit('.').next().unwrap_or(text);
    text.trim().to_owned()
}

/// One pass over the tree: imports, bases and calls.
fn scan_tree(parsed: &ParsedFile, analysis: &mut FileAnalysis) {
    let root = parsed.tree.root();
    // Functions and methods by byte range, for attributing calls to their innermost caller.
    let callers: Vec<(Range<usize>, usize)> = analysis
        .symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.component_type, ComponentType::Function | ComponentType::Method))
        .map(|(idx, s)| (s.byte_range.clone(), idx))
        .collect();
    let mut calls: Vec<(usize, String)> = Vec::new();
    for node in root.dfs() {
        if !node.is_named() {
            continue;
        }
        let kind = node.kind();
        match (analysis.language, kind.as_ref()) {
            (Language::Go, "import_spec") => {
                if let Some(path) = node.field("path") {
                    push_import(analysis, unquote(&path.text()));
                }
            }
            (Language::Python, "import_statement") => {
                for name in node.field_children("name") {
                    let module = if name.kind() == "aliased_import" { name.field("name") } else { Some(name) };
                    if let Some(module) = module {
                        push_import(analysis, module.text().to_string());
                    }
                }
            }
            (Language::Python, "import_from_statement") => {
                if let Some(module) = node.field("module_name") {
                    let text = module.text();
                    let name = if module.kind() == "relative_import" {
                        python_relative_module(&analysis.file_path, &text)
                    } else {
                        text.to_string()
                    };
                    push_import(analysis, name);
                }
            }
            (Language::TypeScript | Language::Tsx | Language::JavaScript, "import_statement" | "export_statement") => {
                if let Some(source) = node.field("source") {
                    push_import(analysis, unquote(&source.text()));
                }
            }
            (Language::C | Language::Cpp, "preproc_include") => {
                if let Some(path) = node.field("path") {
                    push_import(analysis, path.text().trim_matches(['"', '<', '>']).to_owned());
                }
            }
            (Language::Rust, "use_declaration") => {
                if let Some(argument) = node.field("argument") {
                    push_import(analysis, rust_use_module(&argument.text()));
                }
            }
            (Language::Python, "class_definition") => {
                if let Some(bases) = node.field("superclasses") {
                    for base in bases
                        .children()
                        .filter(|b| b.is_named() && matches!(b.kind().as_ref(), "identifier" | "attribute"))
                    {
                        push_base(analysis, &node, &base.text(), RelationshipType::Inherits);
                    }
                }
            }
            (
                Language::TypeScript | Language::Tsx | Language::JavaScript,
                "class_declaration" | "class" | "abstract_class_declaration",
            ) => {
                for heritage in node.children().filter(|c| c.kind() == "class_heritage") {
                    ecmascript_heritage(analysis, &node, &heritage);
                }
            }
            (Language::TypeScript | Language::Tsx, "interface_declaration") => {
                for clause in node.children().filter(|c| c.kind() == "extends_type_clause") {
                    for base in clause.children().filter(|c| c.is_named()) {
                        push_base(analysis, &node, &base.text(), RelationshipType::Inherits);
                    }
                }
            }
            (Language::Cpp, "class_specifier" | "struct_specifier") => {
                for clause in node.children().filter(|c| c.kind() == "base_class_clause") {
                    for base in clause.children().filter(|c| {
                        matches!(c.kind().as_ref(), "type_identifier" | "qualified_identifier" | "template_type")
                    }) {
                        push_base(analysis, &node, &base.text(), RelationshipType::Inherits);
                    }
                }
            }
            (_, "call_expression" | "call" | "new_expression") => {
                if let Some(callee) = callee_name(&node)
                    && let Some(caller) = innermost(&callers, node.range().start)
                    && !calls.iter().any(|(c, n)| *c == caller && *n == callee)
                {
                    calls.push((caller, callee));
                }
            }
            _ => {}
        }
    }
    for (caller, callee) in calls {
        analysis.links.push(NamedLink {
            source: SourceRef::Symbol(caller),
            target_name: callee,
            relationship_type: RelationshipType::Calls,
        });
    }
}

fn push_import(analysis: &mut FileAnalysis, module: String) {
    let module = module.trim().to_owned();
    if !module.is_empty() && !analysis.imports.contains(&module) {
        analysis.imports.push(module);
    }
}

/// Records a base of the class declared by `class_node` (found by its name field and range).
fn push_base(analysis: &mut FileAnalysis, class_node: &SyntaxNode<'_>, base: &str, kind: RelationshipType) {
    let Some(class_name) = class_node.field("name").map(|n| n.text().to_string()) else { return };
    let start = class_node.range().start;
    let owner = analysis
        .symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name == class_name && s.byte_range.start <= start && start < s.byte_range.end)
        .min_by_key(|(_, s)| s.byte_range.len())
        .map(|(idx, _)| idx);
    let target = base_type_name(base);
    if let Some(owner) = owner
        && !target.is_empty()
    {
        analysis.links.push(NamedLink {
            source: SourceRef::Symbol(owner),
            target_name: target,
            relationship_type: kind,
        });
    }
}

fn ecmascript_heritage(analysis: &mut FileAnalysis, class_node: &SyntaxNode<'_>, heritage: &SyntaxNode<'_>) {
    for clause in heritage.children().filter(|c| c.is_named()) {
        match clause.kind().as_ref() {
            "extends_clause" => {
                for value in clause.children().filter(|c| c.is_named() && c.kind() != "type_arguments") {
                    push_base(analysis, class_node, &value.text(), RelationshipType::Inherits);
                }
            }
            "implements_clause" => {
                for value in clause.children().filter(|c| c.is_named()) {
                    push_base(analysis, class_node, &value.text(), RelationshipType::Implements);
                }
            }
            // JavaScript: `class A extends B` has the expression directly under class_heritage.
            _ => push_base(analysis, class_node, &clause.text(), RelationshipType::Inherits),
        }
    }
}

/// The called name of a call node: the last identifier of its function expression.
fn callee_name(node: &SyntaxNode<'_>) -> Option<String> {
    let function = node.field("function").or_else(|| node.field("constructor"))?;
    let target = match function.kind().as_ref() {
        "identifier" | "field_identifier" | "property_identifier" | "type_identifier" => function,
        _ => ["field", "attribute", "property", "name"].iter().find_map(|f| function.field(f))?,
    };
    let name = target.text();
    let name = name.rsplit("::").next().unwrap_or(&name).trim();
    let valid = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    valid.then(|| name.to_owned())
}

fn innermost(callers: &[(Range<usize>, usize)], offset: usize) -> Option<usize> {
    callers
        .iter()
        .filter(|(range, _)| range.contains(&offset))
        .min_by_key(|(range, _)| range.len())
        .map(|(_, idx)| *idx)
}

fn unquote(text: &str) -> String {
    text.trim().trim_matches(['"', '\'', '`']).to_owned()
}

/// `from .scanner import x` in `json/decoder.py` → `json.scanner`; `from .. import y` in
/// `a/b/c.py` → `a`.
pub fn python_relative_module(file_path: &str, relative: &str) -> String {
    let level = relative.chars().take_while(|&c| c == '.').count();
    let rest = &relative[level..];
    let mut package: Vec<&str> = file_path.split('/').collect();
    package.pop(); // the file itself
    for _ in 1..level {
        package.pop();
    }
    if !rest.is_empty() {
        package.push(rest);
    }
    package.join(".")
}

/// `std::collections::HashMap` → `std::collections`; `crate::a::{b, c}` → `crate::a`;
/// `serde::Serialize as S` → `serde`; `anyhow` → `anyhow`.
pub fn rust_use_module(text: &str) -> String {
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((prefix, _)) = text.split_once("::{") {
        return prefix.to_owned();
    }
    let path = text.split(" as ").next().unwrap_or(&text);
    match path.rsplit_once("::") {
        Some((prefix, _)) => prefix.to_owned(),
        None => path.to_owned(),
    }
}
