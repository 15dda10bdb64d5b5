//! Unit tests of edit planning: selectors, operations, indentation, line endings, validation.

use ropey::Rope;

use super::*;

fn run(
    source: &str,
    language: Option<Language>,
    op: Operation,
    content: Option<&str>,
    selector: Selector,
) -> Result<String, EditError> {
    let parsed = language.and_then(|l| syntax::parse(l, &Rope::from_str(source)));
    plan(source, language, parsed.as_ref(), op, content, &selector).map(|p| p.new_text)
}

fn name(name: &str) -> Selector {
    Selector { name: Some(name.into()), ..Selector::default() }
}

fn text(text: &str) -> Selector {
    Selector { text: Some(text.into()), ..Selector::default() }
}

const GO: &str = "package p\n\n// Hello greets.\nfunc Hello() {\n\tprintln(\"hi\")\n}\n\nfunc (s *Server) Hello() {}\n\nfunc Other() {}\n";

#[test]
fn go_function_replaced_by_name_and_kind() {
    let selector = Selector { kind: Some("function_declaration".into()), ..name("Hello") };
    let out =
        run(GO, Some(Language::Go), Operation::Replace, Some("func Hello() {\n\tprintln(\"new\")\n}\n"), selector)
            .unwrap();
    assert_eq!(out, GO.replace("println(\"hi\")", "println(\"new\")"));
}

#[test]
fn ambiguity_lists_every_candidate() {
    let err = run(GO, Some(Language::Go), Operation::Delete, None, name("Hello")).unwrap_err();
    let EditError::Ambiguous { candidates } = err else { panic!("{err:?}") };
    let lines: Vec<_> = candidates.iter().map(|c| (c.start_line, c.kind.clone().unwrap(), c.excerpt.clone())).collect();
    assert_eq!(
        lines,
        [
            (4, "function_declaration".to_owned(), "func Hello() {".to_owned()),
            (8, "method_declaration".to_owned(), "func (s *Server) Hello() {}".to_owned())
        ]
    );
    let by_receiver = run(GO, Some(Language::Go), Operation::Delete, None, name("Server.Hello")).unwrap();
    assert_eq!(by_receiver, "package p\n\n// Hello greets.\nfunc Hello() {\n\tprintln(\"hi\")\n}\n\nfunc Other() {}\n");
    let err =
        run(GO, Some(Language::Go), Operation::Delete, None, Selector { index: Some(2), ..name("Hello") }).unwrap_err();
    assert!(matches!(err, EditError::IndexOutOfRange { index: 2, .. }));
    let picked =
        run(GO, Some(Language::Go), Operation::Delete, None, Selector { index: Some(0), ..name("Hello") }).unwrap();
    // The doc comment goes with the function, and one of the two blank lines around it.
    assert_eq!(picked, "package p\n\nfunc (s *Server) Hello() {}\n\nfunc Other() {}\n");
}

#[test]
fn insert_before_goes_above_the_doc_comment() {
    let out = run(
        GO,
        Some(Language::Go),
        Operation::InsertBefore,
        Some("func New() {}\n"),
        Selector { line: Some(4), ..name("Hello") },
    )
    .unwrap();
    assert!(out.starts_with("package p\n\nfunc New() {}\n// Hello greets.\nfunc Hello() {"), "{out}");
}

const PY: &str =
    "class A:\n    def first(self):\n        return 1\n\n    @property\n    def second(self):\n        return 2\n";

#[test]
fn python_methods_insert_at_the_class_indentation() {
    let out =
        run(PY, Some(Language::Python), Operation::InsertAfter, Some("def added(self):\n    return 3"), name("first"))
            .unwrap();
    assert_eq!(out, PY.replace("return 1\n", "return 1\n    def added(self):\n        return 3\n"));
    let out = run(
        PY,
        Some(Language::Python),
        Operation::InsertBefore,
        Some("        def zero(self):\n            return 0\n"),
        name("A.first"),
    )
    .unwrap();
    assert_eq!(out, PY.replace("class A:\n", "class A:\n    def zero(self):\n        return 0\n"));
    // A decorated method is one declaration: insert_before goes above the decorator.
    let out = run(PY, Some(Language::Python), Operation::InsertBefore, Some("x = 1"), name("second")).unwrap();
    assert!(out.contains("\n    x = 1\n    @property\n"), "{out}");
    let only_def = run(
        PY,
        Some(Language::Python),
        Operation::Replace,
        Some("def second(self):\n    return 22"),
        Selector { kind: Some("function_definition".into()), ..name("second") },
    )
    .unwrap();
    assert!(only_def.ends_with("    @property\n    def second(self):\n        return 22\n"), "{only_def}");
}

#[test]
fn text_regex_and_lines() {
    let md = "# Title\n\n## Installation\n\nrun it\n";
    assert_eq!(
        run(md, Some(Language::Markdown), Operation::Replace, Some("## Getting Started"), text("## Installation"))
            .unwrap(),
        md.replace("## Installation", "## Getting Started")
    );
    let json = "{\n  \"name\": \"x\",\n  \"version\": \"1.0.0\"\n}\n";
    let selector = Selector { pattern: Some(r#""version":\s*"[^"]+""#.into()), ..Selector::default() };
    assert_eq!(
        run(json, Some(Language::Json), Operation::Replace, Some(r#""version": "2.0.0""#), selector).unwrap(),
        json.replace("1.0.0", "2.0.0")
    );
    let yaml = "a: 1\nb: 2\nc: 3\nd: 4\n";
    let lines = Selector { line: Some(2), line_end: Some(3), ..Selector::default() };
    assert_eq!(
        run(yaml, Some(Language::Yaml), Operation::Replace, Some("x: 9"), lines.clone()).unwrap(),
        "a: 1\nx: 9\nd: 4\n"
    );
    assert_eq!(run(yaml, Some(Language::Yaml), Operation::Delete, None, lines.clone()).unwrap(), "a: 1\nd: 4\n");
    assert_eq!(
        run(yaml, Some(Language::Yaml), Operation::InsertAfter, Some("z: 0\n"), lines).unwrap(),
        "a: 1\nb: 2\nc: 3\nz: 0\nd: 4\n"
    );
    let err = run(yaml, None, Operation::Delete, None, Selector { line: Some(9), ..Selector::default() }).unwrap_err();
    assert!(matches!(err, EditError::LinePastEnd { line: 9, total: 4 }));
}

#[test]
fn final_newline_bom_and_crlf_are_kept() {
    let no_final = "one\ntwo";
    assert_eq!(
        run(no_final, None, Operation::Delete, None, Selector { line: Some(2), ..Selector::default() }).unwrap(),
        "one"
    );
    assert_eq!(
        run(no_final, None, Operation::InsertAfter, Some("three\n"), Selector { line: Some(2), ..Selector::default() })
            .unwrap(),
        "one\ntwo\nthree"
    );
    assert_eq!(
        run(no_final, None, Operation::Replace, Some("TWO\n"), Selector { line: Some(2), ..Selector::default() })
            .unwrap(),
        "one\nTWO"
    );
    let bom = "\u{feff}first\nsecond\n";
    assert_eq!(
        run(bom, None, Operation::InsertBefore, Some("zero"), Selector { line: Some(1), ..Selector::default() })
            .unwrap(),
        "\u{feff}zero\nfirst\nsecond\n"
    );
    let crlf = "package p\r\n\r\nfunc A() {\r\n}\r\n";
    let out =
        run(crlf, Some(Language::Go), Operation::InsertAfter, Some("func B() {\n\treturn\n}"), name("A")).unwrap();
    assert_eq!(out, "package p\r\n\r\nfunc A() {\r\n}\r\nfunc B() {\r\n\treturn\r\n}\r\n");
}

#[test]
fn content_is_verbatim() {
    let go = "package p\n\nvar s = \"a\"\n";
    let out = run(go, Some(Language::Go), Operation::Replace, Some(r#""a\nb\t\"c\"""#), text("\"a\"")).unwrap();
    assert_eq!(out, "package p\n\nvar s = \"a\\nb\\t\\\"c\\\"\"\n");
}

#[test]
fn syntax_breaking_edits_are_refused_and_old_errors_do_not_block() {
    let err = run(GO, Some(Language::Go), Operation::Replace, Some("func Other() {"), name("Other")).unwrap_err();
    let EditError::Syntax { errors, .. } = err else { panic!("{err:?}") };
    assert!(!errors.is_empty());
    assert!(errors[0].line >= 10, "{errors:?}");
    let broken = "package p\n\nfunc A() { x := }\n\nfunc B() {}\n";
    let out = run(broken, Some(Language::Go), Operation::Replace, Some("func B() { return }"), name("B")).unwrap();
    assert!(out.ends_with("func B() { return }\n"));
    let json = "{\"a\": 1}\n";
    let err = run(json, Some(Language::Json), Operation::Replace, Some("1,"), text("1")).unwrap_err();
    assert!(matches!(err, EditError::Syntax { .. }), "{err:?}");
}

#[test]
fn selector_errors_are_typed() {
    assert!(matches!(run("x", None, Operation::Delete, None, Selector::default()), Err(EditError::NoSelector)));
    assert!(matches!(run("x", None, Operation::Replace, None, text("x")), Err(EditError::ContentMissing { .. })));
    assert!(matches!(run("x", None, Operation::Delete, None, name("x")), Err(EditError::NotCode { .. })));
    assert!(matches!(run("x", None, Operation::Delete, None, text("y")), Err(EditError::NoMatch)));
    let mixed = Selector { text: Some("a".into()), name: Some("b".into()), ..Selector::default() };
    assert!(matches!(run("x", None, Operation::Delete, None, mixed), Err(EditError::SelectorConflict(_))));
    let kind = Selector { kind: Some("function_decl".into()), ..Selector::default() };
    let err = run(GO, Some(Language::Go), Operation::Delete, None, kind).unwrap_err();
    let EditError::UnknownKind { suggestions, .. } = err else { panic!("{err:?}") };
    assert_eq!(suggestions[0], "function_declaration");
    let bad = Selector { pattern: Some("(".into()), ..Selector::default() };
    assert!(matches!(run("x", None, Operation::Delete, None, bad), Err(EditError::InvalidRegex { .. })));
}

#[test]
fn kind_only_with_line_narrowing() {
    let selector = Selector { kind: Some("function_declaration".into()), line: Some(10), ..Selector::default() };
    let out = run(GO, Some(Language::Go), Operation::Replace, Some("func Other() { return }"), selector).unwrap();
    assert!(out.ends_with("func Other() { return }\n"));
}
