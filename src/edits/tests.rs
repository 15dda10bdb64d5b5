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

/// AST candidates of `selector` in `source`, as (kind, name, first line).
fn ast_targets(source: &str, language: Language, selector: &Selector) -> Vec<(String, String, usize)> {
    let parsed = syntax::parse(language, &Rope::from_str(source)).unwrap();
    let lines = position::LineIndex::new(source);
    select::candidates(source, &lines, Some(language), Some(&parsed), selector, Mode::Ast)
        .unwrap()
        .into_iter()
        .map(|c| (c.kind.unwrap(), c.name.unwrap_or_default(), c.start_line))
        .collect()
}

/// An expected AST candidate: (kind, qualified name, first line).
type Expected = (&'static str, &'static str, usize);

/// Member selectors of one language: two types each declaring member `m` (or `f`), beside a
/// free function of the same name.
struct MemberCase {
    language: Language,
    source: &'static str,
    /// `(selector_kind, selector_name)` → every candidate.
    selections: &'static [(Option<&'static str>, &'static str, &'static [Expected])],
}

const MEMBER_CASES: &[MemberCase] = &[
    MemberCase {
        language: Language::Python,
        source: "class A:\n    def m(self):\n        return 1\n\n\nclass B:\n    @staticmethod\n    def m():\n        return 2\n\n\ndef m():\n    return 3\n",
        selections: &[
            (
                Some("function_definition"),
                "m",
                &[
                    ("function_definition", "A.m", 2),
                    ("function_definition", "B.m", 8),
                    ("function_definition", "m", 12),
                ],
            ),
            (Some("function_definition"), "A.m", &[("function_definition", "A.m", 2)]),
            // The issue: a class whose body is one method reported the body (`block`).
            (None, "A.m", &[("function_definition", "A.m", 2)]),
            (None, "B.m", &[("decorated_definition", "B.m", 7)]),
            (Some("function_definition"), "B.m", &[("function_definition", "B.m", 8)]),
            (Some("decorated_definition"), "m", &[("decorated_definition", "B.m", 7)]),
            (Some("function_definition"), "C.m", &[]),
        ],
    },
    MemberCase {
        language: Language::TypeScript,
        source: "export class A {\n  m(): number {\n    return 1;\n  }\n}\n\nnamespace ns {\n  export class B {\n    m(): number { return 2; }\n  }\n}\n\nfunction m(): number {\n  return 3;\n}\n",
        selections: &[
            (Some("method_definition"), "m", &[("method_definition", "A.m", 2), ("method_definition", "ns.B.m", 9)]),
            (Some("method_definition"), "A.m", &[("method_definition", "A.m", 2)]),
            (None, "B.m", &[("method_definition", "ns.B.m", 9)]),
            (None, "ns.B.m", &[("method_definition", "ns.B.m", 9)]),
            (None, "ns::B::m", &[("method_definition", "ns.B.m", 9)]),
            (
                None,
                "m",
                &[
                    ("method_definition", "A.m", 2),
                    ("method_definition", "ns.B.m", 9),
                    ("function_declaration", "m", 13),
                ],
            ),
            (None, "A", &[("export_statement", "A", 1)]),
            (Some("class_declaration"), "A", &[("class_declaration", "A", 1)]),
            (Some("method_definition"), "ns.A.m", &[]),
        ],
    },
    MemberCase {
        language: Language::JavaScript,
        source: "class A {\n  m() {\n    return 1;\n  }\n}\n\nclass B {\n  static m() { return 2; }\n}\n\nfunction m() {\n  return 3;\n}\n",
        selections: &[
            (Some("method_definition"), "m", &[("method_definition", "A.m", 2), ("method_definition", "B.m", 8)]),
            (Some("method_definition"), "B.m", &[("method_definition", "B.m", 8)]),
            (None, "A.m", &[("method_definition", "A.m", 2)]),
            (Some("function_declaration"), "m", &[("function_declaration", "m", 11)]),
        ],
    },
    MemberCase {
        language: Language::Go,
        source: "package p\n\ntype A struct{}\n\ntype B[T any] struct{}\n\nfunc (a *A) m() int {\n\treturn 1\n}\n\nfunc (b B[T]) m() int { return 2 }\n\nfunc m() int { return 3 }\n",
        selections: &[
            (Some("method_declaration"), "m", &[("method_declaration", "A.m", 7), ("method_declaration", "B.m", 11)]),
            (Some("method_declaration"), "A.m", &[("method_declaration", "A.m", 7)]),
            (None, "(*A).m", &[("method_declaration", "A.m", 7)]),
            (None, "B.m", &[("method_declaration", "B.m", 11)]),
            (None, "B[T].m", &[("method_declaration", "B.m", 11)]),
            (Some("function_declaration"), "m", &[("function_declaration", "m", 13)]),
            (Some("method_declaration"), "p.C.m", &[]),
        ],
    },
    MemberCase {
        language: Language::Cpp,
        source: "namespace ns {\nstruct T {\n  int f();\n};\nstruct U {\n  int f() { return 2; }\n};\n}  // namespace ns\n\nint ns::T::f() {\n  return 1;\n}\n\ntemplate <typename X>\nstruct V {\n  X f();\n};\n\ntemplate <typename X>\nX V<X>::f() {\n  return X();\n}\n\nint f() { return 3; }\n",
        selections: &[
            (
                Some("function_definition"),
                "f",
                &[
                    ("function_definition", "ns::U::f", 6),
                    ("function_definition", "ns::T::f", 10),
                    ("function_definition", "V::f", 20),
                    ("function_definition", "f", 24),
                ],
            ),
            (Some("function_definition"), "T::f", &[("function_definition", "ns::T::f", 10)]),
            (Some("function_definition"), "ns::T::f", &[("function_definition", "ns::T::f", 10)]),
            // The in-class declaration and the out-of-line definition are both `T::f`.
            (None, "ns::T::f", &[("field_declaration", "ns::T::f", 3), ("function_definition", "ns::T::f", 10)]),
            (None, "U::f", &[("function_definition", "ns::U::f", 6)]),
            (None, "V<X>::f", &[("field_declaration", "V::f", 16), ("template_declaration", "V::f", 19)]),
            (Some("function_definition"), "V::f", &[("function_definition", "V::f", 20)]),
            (Some("function_definition"), "U::T::f", &[]),
        ],
    },
    MemberCase {
        language: Language::Rust,
        source: "struct A;\nstruct B<T>(T);\n\nimpl A {\n    fn m(&self) -> i32 {\n        1\n    }\n}\n\nimpl<T> B<T> {\n    fn m(&self) -> i32 { 2 }\n}\n\nfn m() -> i32 {\n    3\n}\n",
        selections: &[
            (
                Some("function_item"),
                "m",
                &[("function_item", "A::m", 5), ("function_item", "B::m", 11), ("function_item", "m", 14)],
            ),
            (Some("function_item"), "A::m", &[("function_item", "A::m", 5)]),
            (None, "B.m", &[("function_item", "B::m", 11)]),
            (None, "B<T>::m", &[("function_item", "B::m", 11)]),
        ],
    },
];

#[test]
fn member_selectors_by_kind_and_name_in_every_language() {
    for case in MEMBER_CASES {
        for (kind, name, expected) in case.selections {
            let selector = Selector { kind: kind.map(Into::into), ..self::name(name) };
            let got = ast_targets(case.source, case.language, &selector);
            let expected: Vec<_> = expected.iter().map(|(k, n, line)| (k.to_string(), n.to_string(), *line)).collect();
            assert_eq!(got, expected, "{:?} kind {kind:?} name {name:?}", case.language);
        }
    }
}

#[test]
fn member_ambiguity_lists_qualified_names_and_resolves() {
    let case = &MEMBER_CASES[0];
    let err = run(case.source, Some(case.language), Operation::Delete, None, name("m")).unwrap_err();
    let EditError::Ambiguous { candidates } = err else { panic!("{err:?}") };
    let names: Vec<_> =
        candidates.iter().map(|c| (c.index, c.name.clone().unwrap(), c.kind.clone().unwrap())).collect();
    assert_eq!(
        names,
        [
            (0, "A.m".to_owned(), "function_definition".to_owned()),
            (1, "B.m".to_owned(), "decorated_definition".to_owned()),
            (2, "m".to_owned(), "function_definition".to_owned())
        ]
    );
    let new_b = "@staticmethod\ndef m():\n    return 22";
    let by_index = run(
        case.source,
        Some(case.language),
        Operation::Replace,
        Some(new_b),
        Selector { index: Some(1), ..name("m") },
    )
    .unwrap();
    let by_name = run(case.source, Some(case.language), Operation::Replace, Some(new_b), name("B.m")).unwrap();
    assert_eq!(by_index, case.source.replace("return 2", "return 22"));
    assert_eq!(by_name, by_index);
}

/// The issue's report: `selector_kind: function_definition` + `selector_name: m` found nothing
/// for the only method of a class, and `selector_name: A.m` targeted the class body.
#[test]
fn regression_python_method_by_kind_and_name() {
    let source = "class A:\n    def m(self):\n        return 1\n";
    let by_kind = Selector { kind: Some("function_definition".into()), ..name("m") };
    let planned = plan(
        source,
        Some(Language::Python),
        syntax::parse(Language::Python, &Rope::from_str(source)).as_ref(),
        Operation::Replace,
        Some("def m(self):\n    return 2"),
        &by_kind,
    )
    .unwrap();
    assert_eq!(planned.target.kind.as_deref(), Some("function_definition"));
    assert_eq!(planned.target.name.as_deref(), Some("A.m"));
    assert_eq!(planned.new_text, "class A:\n    def m(self):\n        return 2\n");
    assert_eq!(
        ast_targets(source, Language::Python, &name("A.m")),
        [("function_definition".to_owned(), "A.m".to_owned(), 2)]
    );
    // By kind alone, candidates are named as a name selector would name them.
    let by_kind_only = Selector { kind: Some("function_definition".into()), ..Selector::default() };
    assert_eq!(
        ast_targets(source, Language::Python, &by_kind_only),
        [("function_definition".to_owned(), "A.m".to_owned(), 2)]
    );
}

/// A C++ definition whose declarator breaks a line after the scope (GNU style, as libstdc++'s
/// `basic_string<…>::\n    _M_create`) is named by its bare name and qualified by its scope.
#[test]
fn cpp_scope_on_its_own_line() {
    let source = "template <typename C>\nint\nbasic<C>::\n    create(int n)\n{\n  return n;\n}\n";
    for wanted in ["create", "basic::create", "basic<C>::create"] {
        let selector = Selector { kind: Some("function_definition".into()), ..name(wanted) };
        assert_eq!(
            ast_targets(source, Language::Cpp, &selector),
            [("function_definition".to_owned(), "basic::create".to_owned(), 2)],
            "{wanted}"
        );
    }
}
