//! Position conversion tables: non-BMP emoji, CJK, CRLF and lone CR, lines and columns past the
//! end. Each row is checked in both directions where the conversion is exact.

use super::*;

fn rope(text: &str) -> Rope {
    Rope::from_str(text)
}

fn pos(line: u32, character: u32) -> Position {
    Position { line, character }
}

/// (text, byte offset, encoding, expected position) — all exact, so they must round-trip.
#[test]
fn exact_conversions_round_trip() {
    // "a😀b": 😀 is U+1F600, 4 bytes in UTF-8, a surrogate pair (2 units) in UTF-16, 1 char.
    let emoji = "a😀b\n";
    // "日本語x": each CJK char is 3 bytes, 1 UTF-16 unit, 1 char.
    let cjk = "日本語x\n";
    let crlf = "ab\r\ncd\r\n";
    let lone_cr = "ab\rcd";
    let cases: &[(&str, usize, Encoding, Position)] = &[
        (emoji, 0, Encoding::Utf8, pos(0, 0)),
        (emoji, 1, Encoding::Utf8, pos(0, 1)),
        (emoji, 5, Encoding::Utf8, pos(0, 5)),
        (emoji, 5, Encoding::Utf16, pos(0, 3)),
        (emoji, 5, Encoding::Utf32, pos(0, 2)),
        (emoji, 6, Encoding::Utf16, pos(0, 4)),
        (emoji, 7, Encoding::Utf16, pos(1, 0)),
        (cjk, 3, Encoding::Utf8, pos(0, 3)),
        (cjk, 3, Encoding::Utf16, pos(0, 1)),
        (cjk, 9, Encoding::Utf16, pos(0, 3)),
        (cjk, 9, Encoding::Utf32, pos(0, 3)),
        (cjk, 10, Encoding::Utf32, pos(0, 4)),
        (crlf, 2, Encoding::Utf16, pos(0, 2)),
        (crlf, 4, Encoding::Utf16, pos(1, 0)),
        (crlf, 5, Encoding::Utf8, pos(1, 1)),
        (crlf, 8, Encoding::Utf8, pos(2, 0)),
        (lone_cr, 3, Encoding::Utf16, pos(1, 0)),
        (lone_cr, 5, Encoding::Utf32, pos(1, 2)),
        ("", 0, Encoding::Utf16, pos(0, 0)),
    ];
    for &(text, offset, encoding, expected) in cases {
        let text_rope = rope(text);
        let (got, fidelity) = offset_to_position(&text_rope, offset, encoding);
        assert_eq!((got, fidelity), (expected, Fidelity::Exact), "{text:?} offset {offset} {encoding:?}");
        let (back, fidelity) = position_to_offset(&text_rope, expected, encoding);
        assert_eq!((back, fidelity), (offset, Fidelity::Exact), "{text:?} {expected:?} {encoding:?}");
    }
}

/// Untrusted input clamps and says so.
#[test]
fn out_of_range_positions_clamp() {
    let text = rope("a😀b\r\nxyz\n");
    let cases: &[(Position, Encoding, usize)] = &[
        // Column inside the surrogate pair of 😀 (UTF-16 unit 2) → start of 😀 (byte 1).
        (pos(0, 2), Encoding::Utf16, 1),
        // Column inside 😀's UTF-8 bytes → start of 😀.
        (pos(0, 3), Encoding::Utf8, 1),
        // Column past the line's end → end of line, before "\r\n" (byte 6).
        (pos(0, 99), Encoding::Utf16, 6),
        (pos(0, 5), Encoding::Utf32, 6),
        // Line 1 column past end → before its "\n".
        (pos(1, 10), Encoding::Utf8, 11),
        // Line past the end → end of text.
        (pos(7, 0), Encoding::Utf16, 12),
        (pos(u32::MAX, u32::MAX), Encoding::Utf8, 12),
    ];
    for &(position, encoding, expected) in cases {
        assert_eq!(
            position_to_offset(&text, position, encoding),
            (expected, Fidelity::Clamped),
            "{position:?} {encoding:?}"
        );
    }
    // Byte offsets inside a character or past the end.
    assert_eq!(offset_to_position(&text, 2, Encoding::Utf16), (pos(0, 1), Fidelity::Clamped));
    assert_eq!(offset_to_position(&text, 4, Encoding::Utf32), (pos(0, 1), Fidelity::Clamped));
    assert_eq!(offset_to_position(&text, 999, Encoding::Utf16), (pos(2, 0), Fidelity::Clamped));
}

#[test]
fn the_empty_last_line_is_addressable() {
    // LSP allows a position on the (empty) line after a final break.
    let text = rope("x\n");
    assert_eq!(position_to_offset(&text, pos(1, 0), Encoding::Utf16), (2, Fidelity::Exact));
    assert_eq!(position_to_offset(&text, pos(2, 0), Encoding::Utf16), (2, Fidelity::Clamped));
}

#[test]
fn one_based_mcp_columns_count_characters() {
    let text = rope("\tx := \"😀\" + y\n日本 z\n");
    // `y` is the 13th character on line 1 (😀 counts as one).
    let y = text.to_string().find('y').unwrap();
    assert_eq!(offset_to_one_based(&text, y), (OneBased { line: 1, column: 13 }, Fidelity::Exact));
    assert_eq!(one_based_to_offset(&text, OneBased { line: 1, column: 13 }), (y, Fidelity::Exact));
    let z = text.to_string().find('z').unwrap();
    assert_eq!(offset_to_one_based(&text, z), (OneBased { line: 2, column: 4 }, Fidelity::Exact));
    assert_eq!(one_based_to_offset(&text, OneBased { line: 0, column: 0 }), (0, Fidelity::Clamped));
    assert_eq!(OneBased { line: 0, column: 3 }.to_position(), None);
}

#[test]
fn columns_within_a_line_string() {
    let line = "a😀日b";
    let b = line.find('b').unwrap(); // byte 8
    assert_eq!(column_in_line(line, b, Encoding::Utf8), (8, Fidelity::Exact));
    assert_eq!(column_in_line(line, b, Encoding::Utf16), (4, Fidelity::Exact));
    assert_eq!(column_in_line(line, b, Encoding::Utf32), (3, Fidelity::Exact));
    assert_eq!(column_in_line(line, 3, Encoding::Utf32), (1, Fidelity::Clamped));
    assert_eq!(column_in_line(line, 100, Encoding::Utf32), (4, Fidelity::Clamped));
    assert_eq!(byte_in_line(line, 4, Encoding::Utf16), (b, Fidelity::Exact));
    assert_eq!(byte_in_line(line, 2, Encoding::Utf16), (1, Fidelity::Clamped));
    assert_eq!(byte_in_line("ab\r\n", 9, Encoding::Utf16), (2, Fidelity::Clamped));
}

#[test]
fn line_counts_and_line_text() {
    let cases = [("", 0), ("x", 1), ("x\n", 1), ("x\ny", 2), ("x\r\ny\r\n", 2), ("x\ry", 2), ("\n\n", 2)];
    for (text, expected) in cases {
        assert_eq!(line_count(&rope(text)), expected, "{text:?}");
    }
    let text = rope("ab\r\ncd\ref\n");
    let lines: Vec<String> = (0..3).map(|line| line_text(&text, line).unwrap().to_string()).collect();
    assert_eq!(lines, ["ab", "cd", "ef"]);
    assert_eq!(line_text(&text, 3).unwrap().to_string(), "");
    assert!(line_text(&text, 4).is_none());
}

#[test]
fn encoding_names_are_lsp_position_encoding_kinds() {
    for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
        assert_eq!(Encoding::from_lsp_name(encoding.lsp_name()), Some(encoding));
    }
    assert_eq!(Encoding::from_lsp_name("utf-7"), None);
}
