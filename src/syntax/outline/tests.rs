//! Outline tables: one real-shaped fixture per language under `tests/fixtures/outline/`, and the
//! expected outline as text (`start-end kind name (container)`, children indented).

use std::path::Path;

use ropey::Rope;

use super::*;
use crate::syntax::parse;

fn render(symbols: &[Symbol], depth: usize, out: &mut String) {
    for symbol in symbols {
        let container = symbol.container.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
        out.push_str(&format!(
            "{:indent$}{}-{} {} {}{container}\n",
            "",
            symbol.start_line,
            symbol.end_line,
            symbol.kind.name(),
            symbol.name,
            indent = depth * 2
        ));
        render(&symbol.children, depth + 1, out);
    }
}

fn outline_of(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/outline").join(file);
    let text = Rope::from_str(&std::fs::read_to_string(&path).unwrap());
    let language = Language::from_path(&path).unwrap();
    let parsed = parse(language, &text).unwrap();
    let mut out = String::new();
    render(&outline(&parsed), 0, &mut out);
    out
}

#[test]
fn outlines_per_language() {
    let cases: &[(&str, &str)] = &[
        (
            "sample.go",
            "6-6 variable ErrClosed
9-9 constant MaxSize
10-10 constant minSize
10-10 constant midSize
13-15 struct Server
17-19 interface Handler
21-21 type ID
23-23 type Set
25-27 function New
29-31 method ListenAndServe (*Server)
33-36 method Has (Set[T])
",
        ),
        (
            "sample.py",
            "4-4 constant MAX_RETRIES
8-22 class Queue
  13-14 method __init__
  16-18 method full
  20-22 class Inner
    21-22 method deep
25-29 function helper
32-33 function fetch
",
        ),
        (
            "sample.ts",
            "1-3 interface Shape
5-5 type Id
7-7 enum Color
9-17 class Circle
  10-10 method constructor
  11-13 method area
  14-16 method unit
19-21 function makeCircle
23-23 function square
24-24 constant LIMIT
25-25 variable counter
27-31 module Geometry
  28-30 function origin
33-33 function external
",
        ),
        (
            "sample.c",
            "2-2 macro BUF_SIZE
4-7 struct point
9-9 type point_t
11-11 enum mode
15-15 function add
17-20 function name_of
22-25 function main
",
        ),
        (
            "sample.cpp",
            "3-17 module geo
  5-9 class Shape
    7-7 method area
    8-8 method name
  11-13 struct Point
  15-15 function distance
19-22 method distance (geo)
25-28 function twice
",
        ),
        (
            "sample.rs",
            "5-5 constant LIMIT
7-9 struct Server
11-14 enum Mode
16-18 trait Serve
  17-17 method serve
20-24 impl Server
  21-23 method new
26-30 impl Server (fmt::Display)
  27-29 method fmt
32-34 module inner
  33-33 function helper
36-40 macro shout
42-42 type Alias
",
        ),
        (
            "sample.ex",
            "1-17 module Sample.Greeter
  4-6 function hello
  8-8 function secret
  10-12 function guarded
  14-16 macro loud
",
        ),
        (
            "sample.md",
            "1-15 heading Title
  5-12 heading Install
    9-12 heading From source
  13-15 heading Usage
",
        ),
        ("sample.sh", "4-6 function build\n8-10 function run_tests\n"),
        ("sample.json", "2-2 key name\n3-3 key version\n4-6 key scripts\n"),
        ("sample.yaml", "1-1 key name\n2-3 key on\n4-6 key jobs\n"),
    ];
    for (file, expected) in cases {
        assert_eq!(outline_of(file), *expected, "outline of {file}");
    }
}

#[test]
fn c_prototypes_inside_parse_errors_are_kept() {
    // glibc-style attribute macros make tree-sitter produce ERROR nodes.
    let text = Rope::from_str(
        "extern int sprintf (char *__restrict __s,\n    const char *__restrict __f, ...) __THROWNL;\nextern int puts (const char *__s);\n",
    );
    let parsed = parse(Language::C, &text).unwrap();
    let names: Vec<_> = outline(&parsed).into_iter().map(|s| (s.name, s.start_line, s.end_line)).collect();
    assert_eq!(names, [("sprintf".to_owned(), 1, 2), ("puts".to_owned(), 3, 3)]);
}

#[test]
fn lines_follow_lsp_line_breaks() {
    // A lone CR is a line break for LSP (and for us), though not for tree-sitter's rows.
    let text = Rope::from_str("fn a() {\r}\r\rfn b() {}\r");
    let parsed = parse(Language::Rust, &text).unwrap();
    let lines: Vec<_> = outline(&parsed).into_iter().map(|s| (s.name, s.start_line, s.end_line)).collect();
    assert_eq!(lines, [("a".to_owned(), 1, 2), ("b".to_owned(), 4, 4)]);
}
