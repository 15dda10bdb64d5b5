//! Property tests of edit selectors and planning (issue 16, "fuzzing in the project"): for any
//! text and any selector an agent can send, [`plan`] answers without panicking, and an edit it
//! plans is a splice of the text at character boundaries.
//!
//! Run with more cases: `PROPTEST_CASES=5000 cargo test edits::proptests`. A failing case is
//! saved under `proptest-regressions/` (the corpus, kept in the repository) and replayed first.

use proptest::prelude::*;
use ropey::Rope;

use super::*;

/// Source files with a grammar, to be mutated: AST selectors need real declarations.
const CODE: &[(Language, &str)] = &[
    (
        Language::Go,
        "package p\n\n// Hello greets.\nfunc Hello() {\n\tprintln(\"hi\")\n}\n\ntype Server struct{}\n\nfunc (s *Server) Hello() {}\n\nconst X = 1\n",
    ),
    (
        Language::Python,
        "import os\n\nclass A:\n    @staticmethod\n    def m(x):\n        return x\n\n\ndef f(a, b=2):\n    '''doc'''\n    return a + b\n",
    ),
    (Language::Rust, "struct T;\n\nimpl T {\n    fn f(&self) -> u8 { 1 }\n}\n\n/// g\npub fn g() {}\n"),
    (Language::Cpp, "namespace ns {\nstruct T {\n  void f();\n};\n}\n\nvoid ns::T::f() {}\nint main() { return 0; }\n"),
    (Language::Json, "{\n  \"a\": 1,\n  \"b\": [true, null],\n  \"c\": {\"d\": \"é\"}\n}\n"),
    (Language::TypeScript, "export class C {\n  m(): number { return 1 }\n}\nfunction f(x: string) { return x }\n"),
];

/// Lines of short text with every line break LSP knows (and a BOM sometimes).
fn plain_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[a-z ]{0,12}",
        "[\\t a-zé😀€()\\[\\]{}.*+?^$|\\\\]{0,8}",
        any::<String>().prop_map(|s| s.chars().filter(|c| *c != '\0').take(10).collect()),
    ];
    let brk = prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("")];
    (any::<bool>(), prop::collection::vec((line, brk), 0..8)).prop_map(|(bom, lines)| {
        let mut text = if bom { "\u{feff}".to_owned() } else { String::new() };
        for (line, brk) in lines {
            text.push_str(&line);
            text.push_str(brk);
        }
        text
    })
}

/// One of [`CODE`], with a few characters inserted or removed at random places (so also
/// broken code: tree-sitter's error recovery feeds the outline).
fn code() -> impl Strategy<Value = (Language, String)> {
    (0..CODE.len(), prop::collection::vec((any::<prop::sample::Index>(), "[{}();\"a-z \\n]{0,3}", any::<bool>()), 0..4))
        .prop_map(|(which, mutations)| {
            let (language, base) = CODE[which];
            let mut text = base.to_owned();
            for (at, insert, remove) in mutations {
                let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
                let at = boundaries[at.index(boundaries.len())];
                if remove && at < text.len() {
                    let next = text[at..].chars().next().map_or(0, char::len_utf8);
                    text.replace_range(at..at + next, "");
                } else {
                    text.insert_str(at, &insert);
                }
            }
            (language, text)
        })
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        Just(Operation::Replace),
        Just(Operation::InsertBefore),
        Just(Operation::InsertAfter),
        Just(Operation::Delete)
    ]
}

/// A selector as an agent might send it: any mix of fields, plausible or not.
fn selector(text: String) -> impl Strategy<Value = Selector> {
    let kind = prop::option::weighted(
        0.3,
        prop_oneof![
            Just("function_declaration".to_owned()),
            Just("function_definition".to_owned()),
            Just("method_declaration".to_owned()),
            Just("class_definition".to_owned()),
            Just("pair".to_owned()),
            "[a-z_]{1,12}",
        ],
    );
    let name = prop::option::weighted(
        0.3,
        prop_oneof![
            Just("Hello".to_owned()),
            Just("Server.Hello".to_owned()),
            Just("A.m".to_owned()),
            Just("ns::T::f".to_owned()),
            Just("T::f".to_owned()),
            Just("(*Server).Hello".to_owned()),
            Just("f".to_owned()),
            Just("a".to_owned()),
            "[A-Za-z_.:()*]{0,10}",
        ],
    );
    let line = prop::option::weighted(0.3, 0usize..14);
    let line_end = prop::option::weighted(0.2, 0usize..14);
    let index = prop::option::weighted(0.3, 0usize..4);
    // Text selectors are mostly pieces of the text itself, so that they match.
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let piece = (any::<prop::sample::Index>(), 0usize..12).prop_map(move |(start, len)| {
        let from = start.index(boundaries.len());
        let to = (from + len).min(boundaries.len() - 1);
        text[boundaries[from]..boundaries[to]].to_owned()
    });
    let selector_text = prop::option::weighted(0.4, prop_oneof![piece, "[a-z\\n]{0,4}"]);
    let pattern = prop::option::weighted(
        0.2,
        prop_oneof![Just("(".to_owned()), Just("[a-z]+".to_owned()), Just("^".to_owned()), "[a-z.*+?()\\[\\]|^$]{0,6}"],
    );
    (kind, name, line, line_end, index, selector_text, pattern).prop_map(
        |(kind, name, line, line_end, index, text, pattern)| Selector {
            kind,
            name,
            line,
            line_end,
            index,
            text,
            pattern,
        },
    )
}

/// The checks every successful plan must pass.
fn check_plan(source: &str, planned: &PlannedEdit, selector: &Selector) -> Result<(), TestCaseError> {
    let range = &planned.edit.range;
    prop_assert!(range.start <= range.end && range.end <= source.len(), "{range:?} of {}", source.len());
    prop_assert!(source.is_char_boundary(range.start) && source.is_char_boundary(range.end));
    let spliced = format!("{}{}{}", &source[..range.start], planned.edit.new_text, &source[range.end..]);
    prop_assert_eq!(&planned.new_text, &spliced);
    prop_assert!(planned.candidates >= 1);
    prop_assert!(1 <= planned.target.start_line && planned.target.start_line <= planned.target.end_line);
    let target = &planned.target.range;
    prop_assert!(target.start <= target.end && target.end <= source.len());
    if planned.mode == Mode::Text
        && let Some(text) = &selector.text
    {
        prop_assert_eq!(&source[target.clone()], text.as_str());
    }
    // A byte order mark is never moved or split.
    if source.starts_with(BOM) {
        prop_assert!(planned.new_text.starts_with(BOM), "the BOM moved");
    }
    Ok(())
}

const BOM: char = '\u{feff}';

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any selector on any plain text: an answer, never a panic; a planned edit is a splice.
    #[test]
    fn any_selector_on_any_text_plans_a_splice_or_says_why(
        (source, selector) in plain_text().prop_flat_map(|text| (Just(text.clone()), selector(text))),
        op in operation(),
        content in prop::option::of("[a-z\\n\\r]{0,6}"),
    ) {
        if let Ok(planned) = plan(&source, None, None, op, content.as_deref(), &selector) {
            check_plan(&source, &planned, &selector)?;
        }
    }

    /// AST, text and line selectors on real (and randomly broken) code of six languages.
    #[test]
    fn any_selector_on_mutated_code_plans_a_splice_or_says_why(
        ((language, source), selector) in code().prop_flat_map(|(language, text)| (Just((language, text.clone())), selector(text))),
        op in operation(),
        content in prop::option::of(prop_oneof![Just("func Z() {}\n".to_owned()), Just("x = 1".to_owned()), "[a-z(){}\\n]{0,8}"]),
    ) {
        let parsed = crate::syntax::parse(language, &Rope::from_str(&source));
        if let Ok(planned) = plan(&source, Some(language), parsed.as_ref(), op, content.as_deref(), &selector) {
            check_plan(&source, &planned, &selector)?;
        }
    }

    /// A text selector deletes exactly the chosen occurrence (the first, with selector_index 0).
    #[test]
    fn a_text_selector_deletes_exactly_its_first_occurrence(
        (source, start, len) in plain_text()
            .prop_map(|t| t.trim_start_matches(BOM).to_owned())
            .prop_filter("not empty", |t| !t.is_empty())
            .prop_flat_map(|t| {
                let n = t.chars().count();
                (Just(t), 0..n)
            })
            .prop_flat_map(|(t, start)| {
                let n = t.chars().count();
                (Just(t), Just(start), 1..=(n - start).min(5))
            }),
    ) {
        let chars: Vec<(usize, char)> = source.char_indices().collect();
        let from = chars[start].0;
        let to = chars.get(start + len).map_or(source.len(), |(at, _)| *at);
        let wanted = &source[from..to];
        let selector = Selector { text: Some(wanted.to_owned()), index: Some(0), ..Selector::default() };
        let planned = plan(&source, None, None, Operation::Delete, None, &selector).unwrap();
        prop_assert_eq!(planned.new_text, source.replacen(wanted, "", 1));
    }
}
