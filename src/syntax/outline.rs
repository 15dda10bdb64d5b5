//! Symbol outlines: the declarations of one file as a tree, from its tree-sitter parse.
//!
//! Each language has a small classifier that maps a node kind to a [`SymbolKind`], finds the
//! symbol's name, and names the node whose children hold nested symbols (a class body, an
//! `impl` block, a namespace). Function bodies are not entered: an outline lists declarations,
//! not locals. Node kinds are those of the grammars bundled by ast-grep-language 0.51.

use ast_grep_core::Node;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_language::SupportLang;

use super::ParsedFile;
use crate::documents::{Language, position};

type SyntaxNode<'r> = Node<'r, StrDoc<SupportLang>>;

/// What a symbol declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Function,
    /// A function bound to a type: a Go method (receiver), a class member, a Rust `impl` item.
    Method,
    Class,
    Struct,
    Interface,
    /// A Rust trait.
    Trait,
    /// A Rust `impl` block (its name is the implementing type).
    Impl,
    /// A type alias or other named type.
    Type,
    Enum,
    Constant,
    Variable,
    /// A C/C++ `#define`.
    Macro,
    /// A module or namespace (Rust `mod`, C++ `namespace`, TypeScript `namespace`, Elixir
    /// `defmodule`).
    Module,
    /// A Markdown heading.
    Heading,
    /// A top-level key of a JSON or YAML document.
    Key,
}

impl SymbolKind {
    /// The lowercase name tools show (`function`, `method`, `class`, …).
    pub fn name(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Interface => "interface",
            SymbolKind::Trait => "trait",
            SymbolKind::Impl => "impl",
            SymbolKind::Type => "type",
            SymbolKind::Enum => "enum",
            SymbolKind::Constant => "constant",
            SymbolKind::Variable => "variable",
            SymbolKind::Macro => "macro",
            SymbolKind::Module => "module",
            SymbolKind::Heading => "heading",
            SymbolKind::Key => "key",
        }
    }
}

/// One declaration in an outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    /// The receiver type of a Go method (`*Server`), the class of a C++ out-of-line method
    /// (`Foo` for `Foo::bar`), the trait of a Rust `impl Trait for Type`.
    pub container: Option<String>,
    /// 1-based first line of the declaration (including its doc-less header).
    pub start_line: usize,
    /// 1-based last line of the declaration, inclusive.
    pub end_line: usize,
    /// Byte range of the declaration's node in the text.
    pub byte_range: std::ops::Range<usize>,
    /// The tree-sitter kind of that node (`function_definition`, `decorated_definition`,
    /// `type_spec`, …): with `byte_range` it identifies the node, since a parent can span the
    /// same bytes (a Python class body holding one method).
    pub node_kind: String,
    /// Nested declarations (class members, `impl` items, module contents).
    pub children: Vec<Symbol>,
}

/// The outline of a parsed file; empty when its language has no classifier (HTML, Vue).
pub fn outline(parsed: &ParsedFile) -> Vec<Symbol> {
    let root = parsed.tree.root();
    let mut ctx = Ctx { parsed, language: parsed.language, in_class: false };
    let mut out = Vec::new();
    match parsed.language {
        Language::Markdown => markdown_sections(&root, &mut ctx, &mut out),
        _ => collect(&root, &mut ctx, &mut out),
    }
    out
}

/// Whether the parse tree has syntax errors (so an outline may be incomplete).
pub fn has_syntax_errors(parsed: &ParsedFile) -> bool {
    parsed.tree.root().get_inner_node().has_error()
}

/// Whether [`outline`] knows the declarations of `language`.
pub fn supports(language: Language) -> bool {
    !matches!(language, Language::Html | Language::Vue | Language::Toml)
}

struct Ctx<'p> {
    parsed: &'p ParsedFile,
    language: Language,
    /// Inside a class, interface or impl body: functions there are methods.
    in_class: bool,
}

/// A classification of one node.
struct Found<'r> {
    kind: SymbolKind,
    name: String,
    container: Option<String>,
    /// The node whose children hold nested symbols, if any.
    body: Option<SyntaxNode<'r>>,
}

impl<'r> Found<'r> {
    fn new(kind: SymbolKind, name: impl Into<String>) -> Found<'r> {
        Found { kind, name: name.into(), container: None, body: None }
    }
    fn body(mut self, body: Option<SyntaxNode<'r>>) -> Found<'r> {
        self.body = body;
        self
    }
    fn container(mut self, container: Option<String>) -> Found<'r> {
        self.container = container;
        self
    }
}

/// What to do with a node that is not itself a symbol.
enum Step<'r> {
    /// One or more symbols declared by this node (a Go `const (...)` block yields several).
    Symbols(Vec<(SyntaxNode<'r>, Found<'r>)>),
    /// Look at this node's children (wrappers: `export`, `#ifdef`, decorators, templates).
    Descend,
    Skip,
}

fn collect<'r>(parent: &SyntaxNode<'r>, ctx: &mut Ctx<'_>, out: &mut Vec<Symbol>) {
    for node in parent.children() {
        if !node.is_named() {
            continue;
        }
        match classify(&node, ctx) {
            Step::Symbols(found) => {
                for (decl, found) in found {
                    out.push(build(&decl, found, ctx));
                }
            }
            Step::Descend => collect(&node, ctx, out),
            Step::Skip => {}
        }
    }
}

fn build(node: &SyntaxNode<'_>, found: Found<'_>, ctx: &mut Ctx<'_>) -> Symbol {
    let mut children = Vec::new();
    if let Some(body) = &found.body {
        let was = ctx.in_class;
        ctx.in_class = matches!(
            found.kind,
            SymbolKind::Class | SymbolKind::Struct | SymbolKind::Interface | SymbolKind::Trait | SymbolKind::Impl
        );
        collect(body, ctx, &mut children);
        ctx.in_class = was;
    }
    symbol(ctx.parsed, found.name, found.kind, found.container, node, children)
}

fn symbol(
    parsed: &ParsedFile,
    name: String,
    kind: SymbolKind,
    container: Option<String>,
    node: &SyntaxNode<'_>,
    children: Vec<Symbol>,
) -> Symbol {
    let range = node.range();
    let node_kind = node.kind().into_owned();
    // The end byte is exclusive: a node ending in a line break ends on the line before it.
    let (start_line, end_line) = position::line_numbers(&parsed.text, &range);
    Symbol { name, kind, container, start_line, end_line, byte_range: range, node_kind, children }
}

fn classify<'r>(node: &SyntaxNode<'r>, ctx: &Ctx<'_>) -> Step<'r> {
    match ctx.language {
        Language::Go => go(node),
        Language::Python => python(node, ctx.in_class),
        Language::TypeScript | Language::Tsx | Language::JavaScript => ecmascript(node, ctx.in_class),
        Language::C | Language::Cpp => c_family(node, ctx.in_class),
        Language::Rust => rust(node, ctx.in_class),
        Language::Elixir => elixir(node),
        Language::Shell => shell(node),
        Language::Json | Language::Yaml => data_keys(node),
        Language::Markdown | Language::Html | Language::Vue | Language::Toml => Step::Skip,
    }
}

fn one<'r>(node: &SyntaxNode<'r>, found: Found<'r>) -> Step<'r> {
    Step::Symbols(vec![(node.clone(), found)])
}

fn field_text(node: &SyntaxNode<'_>, field: &str) -> Option<String> {
    node.field(field).map(|n| n.text().into_owned())
}

// ---- Go -------------------------------------------------------------------------------------

fn go<'r>(node: &SyntaxNode<'r>) -> Step<'r> {
    match node.kind().as_ref() {
        "function_declaration" => named(node, "name", SymbolKind::Function),
        "method_declaration" => {
            let Some(name) = field_text(node, "name") else { return Step::Skip };
            let receiver = node.field("receiver").and_then(|list| go_receiver_type(&list));
            one(node, Found::new(SymbolKind::Method, name).container(receiver))
        }
        "type_declaration" => {
            let specs = node
                .children()
                .filter(|spec| matches!(spec.kind().as_ref(), "type_spec" | "type_alias"))
                .filter_map(|spec| {
                    let name = field_text(&spec, "name")?;
                    let kind = match spec.field("type").map(|t| t.kind().into_owned()).as_deref() {
                        Some("struct_type") => SymbolKind::Struct,
                        Some("interface_type") => SymbolKind::Interface,
                        _ => SymbolKind::Type,
                    };
                    Some((spec, Found::new(kind, name)))
                })
                .collect();
            Step::Symbols(specs)
        }
        "const_declaration" => go_specs(node, "const_spec", SymbolKind::Constant),
        "var_declaration" => go_specs(node, "var_spec", SymbolKind::Variable),
        _ => Step::Skip,
    }
}

/// `const (a = 1; b, c = 2, 3)`: one symbol per name. Newer grammars wrap specs in a list node.
fn go_specs<'r>(node: &SyntaxNode<'r>, spec_kind: &str, kind: SymbolKind) -> Step<'r> {
    let mut found = Vec::new();
    let mut stack = vec![node.clone()];
    while let Some(current) = stack.pop() {
        for child in current.children() {
            if child.kind() == spec_kind {
                for name in child.field_children("name").filter(|n| n.is_named()) {
                    found.push((child.clone(), Found::new(kind, name.text().into_owned())));
                }
            } else if child.kind().ends_with("_list") {
                stack.push(child);
            }
        }
    }
    found.sort_by_key(|(node, _)| node.range().start);
    Step::Symbols(found)
}

/// `(srv *Server)` → `*Server`; `(s Set[T])` → `Set[T]`.
fn go_receiver_type(list: &SyntaxNode<'_>) -> Option<String> {
    let param = list.children().find(|c| c.kind() == "parameter_declaration")?;
    Some(param.field("type")?.text().into_owned())
}

fn named<'r>(node: &SyntaxNode<'r>, field: &str, kind: SymbolKind) -> Step<'r> {
    match field_text(node, field) {
        Some(name) => one(node, Found::new(kind, name)),
        None => Step::Skip,
    }
}

// ---- Python ---------------------------------------------------------------------------------

fn python<'r>(node: &SyntaxNode<'r>, in_class: bool) -> Step<'r> {
    match node.kind().as_ref() {
        "function_definition" => named(node, "name", if in_class { SymbolKind::Method } else { SymbolKind::Function }),
        "class_definition" => match field_text(node, "name") {
            Some(name) => one(node, Found::new(SymbolKind::Class, name).body(node.field("body"))),
            None => Step::Skip,
        },
        // The decorators belong to the declaration: report the whole decorated node.
        "decorated_definition" => match node.field("definition") {
            Some(definition) => match python(&definition, in_class) {
                Step::Symbols(found) => {
                    Step::Symbols(found.into_iter().map(|(_, found)| (node.clone(), found)).collect())
                }
                other => other,
            },
            None => Step::Skip,
        },
        "expression_statement" if !in_class => {
            // Module-level `NAME = …` in upper case is a constant by convention (PEP 8).
            let Some(assignment) = node.child(0).filter(|c| c.kind() == "assignment") else { return Step::Skip };
            let Some(left) = assignment.field("left").filter(|l| l.kind() == "identifier") else { return Step::Skip };
            let name = left.text();
            let is_constant = name.chars().any(|c| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if is_constant { one(node, Found::new(SymbolKind::Constant, name.into_owned())) } else { Step::Skip }
        }
        // A module tree-sitter cannot parse whole keeps its definitions under ERROR nodes.
        "ERROR" => Step::Descend,
        "if_statement" | "try_statement" | "block" | "else_clause" | "elif_clause" | "except_clause"
        | "finally_clause"
            if !in_class =>
        {
            // `if TYPE_CHECKING:` / `try: import x` blocks at module level hold real definitions.
            Step::Descend
        }
        _ => Step::Skip,
    }
}

// ---- JavaScript / TypeScript ----------------------------------------------------------------

fn ecmascript<'r>(node: &SyntaxNode<'r>, in_class: bool) -> Step<'r> {
    let kind = node.kind();
    match kind.as_ref() {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            named(node, "name", SymbolKind::Function)
        }
        "class_declaration" | "abstract_class_declaration" | "class" => match field_text(node, "name") {
            Some(name) => one(node, Found::new(SymbolKind::Class, name).body(node.field("body"))),
            None => Step::Skip,
        },
        "method_definition" | "method_signature" | "abstract_method_signature" if in_class => {
            named(node, "name", SymbolKind::Method)
        }
        "interface_declaration" => named(node, "name", SymbolKind::Interface),
        "type_alias_declaration" => named(node, "name", SymbolKind::Type),
        "enum_declaration" => named(node, "name", SymbolKind::Enum),
        "internal_module" | "module" => match field_text(node, "name") {
            Some(name) => one(node, Found::new(SymbolKind::Module, name).body(node.field("body"))),
            None => Step::Skip,
        },
        "lexical_declaration" | "variable_declaration" if !in_class => {
            let is_const = node.child(0).is_some_and(|c| c.kind() == "const");
            let found = node
                .children()
                .filter(|c| c.kind() == "variable_declarator")
                .filter_map(|declarator| {
                    let name = declarator.field("name").filter(|n| n.kind() == "identifier")?.text().into_owned();
                    let value_kind = declarator.field("value").map(|v| v.kind().into_owned());
                    let kind = match value_kind.as_deref() {
                        Some("arrow_function" | "function_expression" | "function" | "generator_function") => {
                            SymbolKind::Function
                        }
                        Some("class") => SymbolKind::Class,
                        _ if is_const => SymbolKind::Constant,
                        _ => SymbolKind::Variable,
                    };
                    Some((node.clone(), Found::new(kind, name)))
                })
                .collect();
            Step::Symbols(found)
        }
        "export_statement" | "ambient_declaration" | "expression_statement" | "statement_block" => Step::Descend,
        _ => Step::Skip,
    }
}

// ---- C / C++ --------------------------------------------------------------------------------

fn c_family<'r>(node: &SyntaxNode<'r>, in_class: bool) -> Step<'r> {
    let kind = node.kind();
    match kind.as_ref() {
        "function_definition" => c_function(node, in_class),
        // A prototype (`int f(void);`), or a declaration of structs/enums/variables.
        "declaration" | "field_declaration" => {
            if let Some(declarator) = node.field("declarator")
                && let Some(function) = find_function_declarator(&declarator)
            {
                return c_function_named(node, &function, in_class);
            }
            match node.field("type") {
                Some(ty) if c_has_body(&ty) => c_family(&ty, in_class).reanchor(node),
                _ => Step::Skip,
            }
        }
        "struct_specifier" | "union_specifier" | "class_specifier" if c_has_body(node) => {
            let Some(name) = field_text(node, "name") else { return Step::Skip };
            let kind = if kind == "class_specifier" { SymbolKind::Class } else { SymbolKind::Struct };
            one(node, Found::new(kind, name).body(node.field("body")))
        }
        "enum_specifier" if c_has_body(node) => named(node, "name", SymbolKind::Enum),
        "type_definition" => {
            let names: Vec<_> = node
                .field_children("declarator")
                .filter_map(|d| innermost_identifier(&d))
                .map(|name| (node.clone(), Found::new(SymbolKind::Type, name)))
                .collect();
            Step::Symbols(names)
        }
        "alias_declaration" => named(node, "name", SymbolKind::Type),
        "namespace_definition" => {
            let name = field_text(node, "name").unwrap_or_else(|| "(anonymous)".to_owned());
            one(node, Found::new(SymbolKind::Module, name).body(node.field("body")))
        }
        "preproc_def" | "preproc_function_def" => named(node, "name", SymbolKind::Macro),
        "template_declaration"
        | "linkage_specification"
        | "declaration_list"
        | "preproc_if"
        | "preproc_ifdef"
        | "preproc_else"
        | "preproc_elif"
        | "preproc_elifdef"
        | "access_specifier" => Step::Descend,
        "field_declaration_list" => Step::Descend,
        // Headers full of unexpanded macros (`f(void) __THROW;`) parse as ERROR nodes that
        // still hold the function declarator: keep those declarations in the outline.
        "ERROR" => Step::Descend,
        "function_declarator" => c_function_named(node, node, in_class),
        _ => Step::Skip,
    }
}

impl<'r> Step<'r> {
    /// Reports the symbols of an inner node (a `struct` inside a `declaration`) at `outer`'s
    /// range, so the outline covers the whole statement.
    fn reanchor(self, outer: &SyntaxNode<'r>) -> Step<'r> {
        match self {
            Step::Symbols(found) => Step::Symbols(found.into_iter().map(|(_, f)| (outer.clone(), f)).collect()),
            other => other,
        }
    }
}

fn c_has_body(node: &SyntaxNode<'_>) -> bool {
    node.field("body").is_some()
}

fn c_function<'r>(node: &SyntaxNode<'r>, in_class: bool) -> Step<'r> {
    match node.field("declarator").and_then(|d| find_function_declarator(&d)) {
        Some(function) => c_function_named(node, &function, in_class),
        None => Step::Skip,
    }
}

fn c_function_named<'r>(node: &SyntaxNode<'r>, function: &SyntaxNode<'_>, in_class: bool) -> Step<'r> {
    let Some(declarator) = function.field("declarator") else { return Step::Skip };
    let full = declarator.text().into_owned();
    // Trimmed: GNU style breaks a line after the scope (`basic_string<…>::\n    _M_create`).
    let (container, name) = match full.rsplit_once("::") {
        Some((scope, name)) if declarator.kind() == "qualified_identifier" => {
            (Some(scope.trim().to_owned()), name.trim().to_owned())
        }
        _ => (None, full),
    };
    let kind = if in_class || container.is_some() { SymbolKind::Method } else { SymbolKind::Function };
    one(node, Found::new(kind, name).container(container))
}

/// Unwraps pointer/reference/attributed declarators down to the `function_declarator`.
fn find_function_declarator<'r>(declarator: &SyntaxNode<'r>) -> Option<SyntaxNode<'r>> {
    let mut current = declarator.clone();
    for _ in 0..8 {
        match current.kind().as_ref() {
            "function_declarator" => {
                // `int (*f)(void)` is a function pointer variable, not a function.
                let inner = current.field("declarator")?;
                return (inner.kind() != "parenthesized_declarator").then_some(current);
            }
            "pointer_declarator" | "reference_declarator" | "attributed_declarator" => {
                current = current.field("declarator").or_else(|| current.children().filter(|c| c.is_named()).last())?;
            }
            _ => return None,
        }
    }
    None
}

fn innermost_identifier(declarator: &SyntaxNode<'_>) -> Option<String> {
    let mut current = declarator.clone();
    for _ in 0..8 {
        match current.kind().as_ref() {
            "type_identifier" | "identifier" | "primitive_type" => return Some(current.text().into_owned()),
            _ => current = current.field("declarator")?,
        }
    }
    None
}

// ---- Rust -----------------------------------------------------------------------------------

fn rust<'r>(node: &SyntaxNode<'r>, in_class: bool) -> Step<'r> {
    match node.kind().as_ref() {
        "function_item" | "function_signature_item" => {
            named(node, "name", if in_class { SymbolKind::Method } else { SymbolKind::Function })
        }
        "struct_item" | "union_item" => named(node, "name", SymbolKind::Struct),
        "enum_item" => named(node, "name", SymbolKind::Enum),
        "type_item" | "associated_type" => named(node, "name", SymbolKind::Type),
        "const_item" | "static_item" => named(node, "name", SymbolKind::Constant),
        "macro_definition" => named(node, "name", SymbolKind::Macro),
        "trait_item" => match field_text(node, "name") {
            Some(name) => one(node, Found::new(SymbolKind::Trait, name).body(node.field("body"))),
            None => Step::Skip,
        },
        "impl_item" => match field_text(node, "type") {
            Some(name) => {
                let container = field_text(node, "trait");
                one(node, Found::new(SymbolKind::Impl, name).container(container).body(node.field("body")))
            }
            None => Step::Skip,
        },
        "mod_item" => match field_text(node, "name") {
            Some(name) => one(node, Found::new(SymbolKind::Module, name).body(node.field("body"))),
            None => Step::Skip,
        },
        _ => Step::Skip,
    }
}

// ---- Elixir ---------------------------------------------------------------------------------

fn elixir<'r>(node: &SyntaxNode<'r>) -> Step<'r> {
    if node.kind() != "call" {
        return Step::Skip;
    }
    let Some(target) = node.field("target") else { return Step::Skip };
    let keyword = target.text();
    let arguments = node.children().find(|c| c.kind() == "arguments");
    let first_argument = arguments.as_ref().and_then(|a| a.children().find(|c| c.is_named()));
    match keyword.as_ref() {
        "defmodule" | "defprotocol" | "defimpl" => {
            let Some(name) = first_argument.map(|a| a.text().into_owned()) else { return Step::Skip };
            let body = node.children().find(|c| c.kind() == "do_block");
            one(node, Found::new(SymbolKind::Module, name).body(body))
        }
        "def" | "defp" | "defmacro" | "defmacrop" | "defguard" | "defdelegate" => {
            let Some(head) = first_argument else { return Step::Skip };
            // `def f(x) when …` wraps the head in a binary_operator; `def f(x)` is a call.
            let head = if head.kind() == "binary_operator" { head.field("left").unwrap_or(head) } else { head };
            let name = match head.kind().as_ref() {
                "call" => head.field("target").map(|t| t.text().into_owned()),
                "identifier" => Some(head.text().into_owned()),
                _ => None,
            };
            let kind = if keyword.starts_with("defmacro") { SymbolKind::Macro } else { SymbolKind::Function };
            match name {
                Some(name) => one(node, Found::new(kind, name)),
                None => Step::Skip,
            }
        }
        "defstruct" => one(node, Found::new(SymbolKind::Struct, "defstruct")),
        _ => Step::Skip,
    }
}

// ---- Shell, JSON, YAML ----------------------------------------------------------------------

fn shell<'r>(node: &SyntaxNode<'r>) -> Step<'r> {
    match node.kind().as_ref() {
        "function_definition" => named(node, "name", SymbolKind::Function),
        _ => Step::Skip,
    }
}

/// Top-level keys of a JSON object or YAML mapping (one level: configuration files are wide).
fn data_keys<'r>(node: &SyntaxNode<'r>) -> Step<'r> {
    match node.kind().as_ref() {
        "object" | "document" | "block_node" | "block_mapping" | "flow_mapping" | "flow_node" => Step::Descend,
        "pair" | "block_mapping_pair" | "flow_pair" => {
            let Some(key) = node.field("key") else { return Step::Skip };
            let name = key.text();
            let name = name.trim_matches(|c| c == '"' || c == '\'').to_owned();
            one(node, Found::new(SymbolKind::Key, name))
        }
        _ => Step::Skip,
    }
}

// ---- Markdown -------------------------------------------------------------------------------

/// tree-sitter-md nests `section` nodes by heading level; each section starts with its heading.
fn markdown_sections(parent: &SyntaxNode<'_>, ctx: &mut Ctx<'_>, out: &mut Vec<Symbol>) {
    for node in parent.children() {
        if node.kind() != "section" {
            continue;
        }
        let heading = node.children().find(|c| matches!(c.kind().as_ref(), "atx_heading" | "setext_heading"));
        let Some(heading) = heading else {
            markdown_sections(&node, ctx, out);
            continue;
        };
        let title = heading
            .children()
            .find(|c| matches!(c.kind().as_ref(), "inline" | "paragraph"))
            .map(|c| c.text().trim().to_owned())
            .unwrap_or_default();
        let mut children = Vec::new();
        markdown_sections(&node, ctx, &mut children);
        out.push(symbol(ctx.parsed, title, SymbolKind::Heading, None, &node, children));
    }
}

#[cfg(test)]
mod tests;
