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

/// The one-lookup conversion of a server's position agrees with the two-step one, clamps
/// included, for every line and column (in range and past it) of text with emoji, CJK, CRLF and
/// a lone CR.
/// A range's one-lookup conversion and excerpt agree with converting each end alone and
/// excerpting the start's line, for every pair of positions (on one line, across lines, past
/// the end) of text with emoji, CJK, CRLF, a lone CR and a line longer than the excerpt.
#[test]
fn server_ranges_become_one_based_with_the_start_lines_excerpt() {
    let long = format!("{}😀 tail\n", "x".repeat(40));
    for text in ["a😀b\r\n日本語x\rz\n\n", "no final break 😀", "", long.as_str()] {
        let text = rope(text);
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let positions: Vec<Position> = (0..5).flat_map(|l| (0..46).step_by(3).map(move |c| pos(l, c))).collect();
            for &start in &positions {
                for &end in &positions {
                    let first = two_step_one_based(&text, start, encoding);
                    let last = two_step_one_based(&text, end, encoding);
                    assert_eq!(position_to_one_based(&text, start, encoding).0, first, "{start:?} {encoding:?}");
                    let excerpt = zero_based(first.line as usize)
                        .and_then(|line| line_excerpt(&text, line, first.column as usize, 20));
                    assert_eq!(
                        range_to_one_based(&text, start, end, encoding, 20),
                        (first, last, excerpt),
                        "{start:?}..{end:?} {encoding:?} in {text:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn server_positions_become_one_based_as_through_an_offset() {
    for text in ["a😀b\r\n日本語x\rz\n\n", "no final break 😀", ""] {
        let text = rope(text);
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            for line in 0..6 {
                for character in 0..14 {
                    let at = pos(line, character);
                    let (offset, fidelity) = position_to_offset(&text, at, encoding);
                    let expected = (offset_to_one_based(&text, offset).0, fidelity);
                    assert_eq!(position_to_one_based(&text, at, encoding), expected, "{at:?} {encoding:?} in {text:?}");
                }
            }
        }
    }
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

/// Texts for the plain-text line model; each is checked against the rope's rules below.
const LINE_TEXTS: &[&str] =
    &["", "x", "x\n", "x\ny", "ab\r\ncd\r\n", "ab\rcd", "\r\r\n\r", "\n\n", "a😀b\n日本語x\r\nlast", "trailing\r"];

/// Offsets of every character boundary of `text`, its end included.
fn boundaries(text: &str) -> Vec<usize> {
    text.char_indices().map(|(at, _)| at).chain([text.len()]).collect()
}

#[test]
fn plain_text_lines_agree_with_the_rope() {
    for text in LINE_TEXTS {
        let rope = rope(text);
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), line_count(&rope), "{text:?}");
        assert_eq!(line_count_in(*text), line_count(&rope), "{text:?}");
        let from_rope: Vec<String> = (0..line_count(&rope)).map(|l| line_text(&rope, l).unwrap().to_string()).collect();
        assert_eq!(lines(text).collect::<Vec<_>>(), from_rope, "{text:?}");
        for at in boundaries(text) {
            assert_eq!(index.line(at), rope.byte_to_line(at), "{text:?} line of {at}");
            assert_eq!(index.one_based(at), offset_to_one_based(&rope, at), "{text:?} one_based of {at}");
        }
        for line in 0..=line_count(&rope) + 1 {
            assert_eq!(index.line_start(line), line_to_offset(&rope, line), "{text:?} start of {line}");
        }
        for range in [0..0, 0..text.len(), text.len()..text.len()] {
            assert_eq!(index.line_numbers(&range), line_numbers(&rope, &range), "{text:?} {range:?}");
        }
    }
}

/// (text, byte, line start, line content end, next line start)
#[test]
fn line_boundaries_follow_lsp() {
    let text = "ab\r\ncd\ref\n\ngh";
    let cases = [
        (0, 0, 2, 4),
        (3, 0, 3, 4), // the `\n` of `\r\n` belongs to line 0
        (4, 4, 6, 7),
        (5, 4, 6, 7),
        (7, 7, 9, 10),
        (10, 10, 10, 11),
        (12, 11, 13, 13),
        (99, 11, 13, 13), // past the end: the end
    ];
    for (at, start, content_end, next) in cases {
        assert_eq!(
            (line_start(text, at), line_content_end(text, at), next_line_start(text, at)),
            (start, content_end.max(at.min(text.len())), next),
            "at {at}"
        );
    }
    let spans: Vec<(usize, usize, usize)> =
        line_spans(text).map(|line| (line.start, line.content_end, line.end)).collect();
    assert_eq!(spans, [(0, 2, 4), (4, 6, 7), (7, 9, 10), (10, 10, 11), (11, 13, 13)]);
    assert_eq!(line_spans("").count(), 0);
    assert!(ends_with_line_break("a\r") && ends_with_line_break(b"a\n".as_slice()) && !ends_with_line_break(""));
}

#[test]
fn line_breaks_are_counted_once_each() {
    let cases: &[(&[u8], usize, usize)] = &[
        (b"", 0, 0),
        (b"a", 0, 1),
        (b"a\n", 1, 1),
        (b"a\r\nb", 1, 2),
        (b"a\rb\r", 2, 2),
        (b"\r\r\n\n", 3, 3),
        (b"\xff\n\xfe", 1, 2), // not UTF-8: breaks are ASCII all the same
    ];
    for &(text, breaks, lines) in cases {
        assert_eq!((count_line_breaks(text), line_count_in(text)), (breaks, lines), "{text:?}");
    }
}

#[test]
fn lone_carriage_returns_become_line_feeds_and_offsets_stay() {
    let cases: &[(&[u8], &[u8])] =
        &[(b"a\rb\r\nc\n", b"a\nb\r\nc\n"), (b"\r\r\n\r", b"\n\r\n\n"), (b"no breaks", b"no breaks"), (b"", b"")];
    for (input, expected) in cases {
        let mut bytes = input.to_vec();
        lone_cr_to_lf(&mut bytes);
        assert_eq!(&bytes, expected, "{:?}", String::from_utf8_lossy(input));
    }
}

#[test]
fn complete_lines_wait_for_the_byte_after_a_final_carriage_return() {
    let cases: &[(&[u8], Option<usize>)] = &[
        (b"", None),
        (b"abc", None),
        (b"a\nb", Some(2)),
        (b"a\r\nb", Some(3)),
        (b"a\rb", Some(2)),
        (b"a\nb\r", Some(2)), // the `\r` may be half of a `\r\n`
        (b"\r", None),
        (b"a\r\r", Some(2)),
    ];
    for &(bytes, expected) in cases {
        assert_eq!(complete_lines_end(bytes), expected, "{:?}", String::from_utf8_lossy(bytes));
    }
}

#[test]
fn line_numbers_of_ranges_and_back() {
    let text = rope("one\r\ntwo😀\rthree\n");
    // (range, first and last 1-based line numbers)
    let cases = [
        (0..3, (1, 1)),
        (0..5, (1, 1)), // ending just past the break: still line 1
        (0..6, (1, 2)),
        (5..16, (2, 3)),
        (12..12, (2, 2)), // on the lone `\r` ending line 2
        (13..13, (3, 3)),
        (19..19, (4, 4)), // the empty line after the final break
        (99..120, (4, 4)),
    ];
    for (range, expected) in cases {
        assert_eq!(line_numbers(&text, &range), expected, "{range:?}");
    }
    assert_eq!(line_numbers_to_bytes(&text, 2, 3), 5..19);
    assert_eq!(line_numbers_to_bytes(&text, 1, 1), 0..5);
    assert_eq!(line_numbers_to_bytes(&text, 3, 99), 13..19);
    assert_eq!(line_numbers_to_bytes(&text, 9, 9), 19..19);
    assert_eq!(line_to_offset(&text, 2), 13);
    assert_eq!(line_to_offset(&text, 9), 19);
    let index = LineIndex::new("one\r\ntwo😀\rthree\n");
    assert_eq!(index.line_numbers_to_bytes(2, 3), 5..19);
    assert_eq!(index.line_number_start(0), 0);
    assert_eq!(index.line_number_start(3), 13);
}

#[test]
fn one_and_zero_based_numbers() {
    assert_eq!((one_based(0u32), one_based(41usize), one_based(u64::MAX)), (1, 42, u64::MAX));
    assert_eq!((zero_based(1u32), zero_based(42usize), zero_based(0u64)), (Some(0), Some(41), None));
    let far = Position { line: 3, character: 7 };
    assert_eq!(one_based_without_text(far), OneBased { line: 4, column: 8 });
}

#[test]
fn characters_are_cut_and_counted_on_boundaries() {
    let text = "a😀日b";
    assert_eq!([byte_of_char(text, 0), byte_of_char(text, 2), byte_of_char(text, 3)], [Some(0), Some(5), Some(8)]);
    assert_eq!((byte_of_char(text, 4), byte_of_char("", 0)), (None, None));
    assert_eq!(column_after(5, text), 9);
    let rope = rope("x😀日本\ny");
    assert_eq!(char_limited(&rope, &(0..12), 2), (0..5, true));
    assert_eq!(char_limited(&rope, &(1..12), 9), (1..12, false));
    assert_eq!(char_limited(&rope, &(2..99), 1), (1..5, true)); // inside 😀: from its start
    assert!(is_char_boundary(&rope, 1) && !is_char_boundary(&rope, 2) && is_char_boundary(&rope, 13));
    assert!(!is_char_boundary(&rope, 14));
    assert_eq!((offset_to_char(&rope, 5), offset_to_char(&rope, 99)), (2, 6));
}

#[test]
fn read_window_takes_whole_lines_within_the_budget_and_cuts_a_long_first_line() {
    let text = Rope::from_str("ab\ncdé\nfg\n");
    // Everything fits: lines 1..=3 with their breaks.
    let all = read_window(&text, 1, None, 3, 100);
    assert_eq!((&text.to_string()[all.bytes.clone()], all.last_line, all.cut.clone()), ("ab\ncdé\nfg\n", 3, None));
    // 5 characters from line 1: "ab\n" fits, "cdé\n" does not → continue at line 2.
    let cut = read_window(&text, 1, None, 3, 5);
    assert_eq!(text.byte_slice(cut.bytes.clone()).to_string(), "ab\n");
    assert_eq!((cut.last_line, cut.cut), (1, Some(WindowCut::BeforeLine(2))));
    // From column 2 of line 2 ("dé\n…") with room for 1 character: cut inside the line.
    let inline = read_window(&text, 2, Some(2), 3, 1);
    assert_eq!(text.byte_slice(inline.bytes.clone()).to_string(), "d");
    assert_eq!(inline.cut, Some(WindowCut::InLine { column: 3, taken: 2, line_chars: 3 }));
    assert!(!inline.column_clamped);
    // A column past the line's end starts at its end, and says so.
    let clamped = read_window(&text, 1, Some(9), 1, 100);
    assert!(clamped.column_clamped);
    assert_eq!(text.byte_slice(clamped.bytes).to_string(), "\n");
}

#[test]
fn line_excerpt_windows_a_long_line_around_the_column() {
    let long = format!("{}X{}\nshort  \n", "a".repeat(500), "b".repeat(500));
    let text = Rope::from_str(&long);
    assert_eq!(line_excerpt(&text, 1, 1, 300).as_deref(), Some("short"));
    let excerpt = line_excerpt(&text, 0, 501, 300).unwrap();
    assert!(excerpt.starts_with('…') && excerpt.ends_with('…') && excerpt.contains('X'), "{excerpt}");
    assert_eq!(excerpt.chars().count(), 302);
    assert_eq!(line_excerpt(&text, 5, 1, 300), None);
    let prefixes: Vec<(String, bool)> = line_prefixes(&text, 0..5, 3).map(|(s, cut)| (s.to_string(), cut)).collect();
    assert_eq!(prefixes, [("aaa".to_owned(), true), ("sho".to_owned(), true), (String::new(), false)]);
}

/// `line_text` takes a line within one chunk as a slice of the chunk's `&str`, and a line across
/// chunks from the tree: both must give `Rope::line` without its break. The text is built by
/// edits so that its chunks end mid-line, between a CR and its LF, and next to emoji and CJK.
#[test]
fn line_text_within_and_across_chunks_is_the_ropes_line_without_its_break() {
    let pieces = ["short\n", "a\r\n", "lone\rcr", "😀 emoji 漢字 ", "", "x", "\r", "\n"];
    let mut text = Rope::new();
    for i in 0..4000usize {
        let piece = pieces[i % pieces.len()].repeat(1 + i % 7);
        let at = (i * 7919) % (text.len_chars() + 1);
        text.insert(at, &piece);
        if i % 13 == 0 {
            text.insert(text.len_chars(), &"long line ".repeat(150));
        }
    }
    assert!(text.chunks().count() > 20, "the text spans many chunks");
    let (mut across, mut at_chunk_start) = (0, 0);
    for line in 0..text.len_lines() {
        let whole = text.line(line).to_string();
        let expected = whole.trim_end_matches('\n').trim_end_matches('\r');
        let expected = if whole.ends_with("\r\n") || whole.ends_with('\n') || whole.ends_with('\r') {
            expected
        } else {
            whole.as_str()
        };
        assert_eq!(line_text(&text, line).unwrap().to_string(), expected, "line {line}");
        let start = text.line_to_byte(line);
        let (chunk, chunk_start, _, _) = text.chunk_at_byte(start);
        across += usize::from(text.line_to_byte(line + 1) - chunk_start > chunk.len());
        at_chunk_start += usize::from(line > 0 && start == chunk_start);
    }
    assert!(across > 10, "some lines cross chunks ({across})");
    assert!(at_chunk_start > 0, "a line starts a chunk ({at_chunk_start})");
    assert_eq!(line_text(&text, text.len_lines()), None);
    // The same lines one after the other, from any first line, past the end too.
    for first in [0, 1, 17, text.len_lines() / 2, text.len_lines() - 3] {
        let lines = first..first + 40;
        let one_by_one: Vec<String> =
            lines.clone().filter_map(|line| line_text(&text, line)).map(|s| s.to_string()).collect();
        let in_order: Vec<String> = line_prefixes(&text, lines, usize::MAX).map(|(s, _)| s.to_string()).collect();
        assert_eq!(in_order, one_by_one, "from line {first}");
    }
}

/// A server's position through the rope's own line and character lookups
/// ([`position_to_offset`] then [`offset_to_one_based`]): the reference the one-lookup
/// conversions are held to.
fn two_step_one_based(text: &Rope, position: Position, encoding: Encoding) -> OneBased {
    offset_to_one_based(text, position_to_offset(text, position, encoding).0).0
}

/// Over a text of many chunks, lines within one chunk and across chunks convert a server's
/// positions (ranges and single ones, every encoding) as the rope's own lookups do.
#[test]
fn positions_on_lines_within_and_across_chunks_convert_as_the_ropes_lookups() {
    let pieces = ["short\n", "a\r\n", "lone\rcr", "😀 emoji 漢字 ", "x", "\n"];
    let mut text = Rope::new();
    for i in 0..1200usize {
        let piece = pieces[i % pieces.len()].repeat(1 + i % 5);
        let at = (i * 7919) % (text.len_chars() + 1);
        text.insert(at, &piece);
    }
    assert!(text.chunks().count() > 20, "the text spans many chunks");
    for line in 0..text.len_lines() as u32 + 1 {
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            for column in [0, 2, 9, 40, 500] {
                let (start, end) = (pos(line, column), pos(line, column + 3));
                let first = two_step_one_based(&text, start, encoding);
                let last = two_step_one_based(&text, end, encoding);
                let (got_first, got_last, _) = range_to_one_based(&text, start, end, encoding, 300);
                assert_eq!((got_first, got_last), (first, last), "line {line} {column} {encoding:?}");
                assert_eq!(position_to_one_based(&text, start, encoding).0, first, "line {line} {column} {encoding:?}");
                // Between two encodings a column is clamped to its line (the same one is kept).
                let converted = convert_position(&text, start, encoding, Encoding::Utf32).0;
                if (line as usize) < text.len_lines() && encoding != Encoding::Utf32 {
                    assert_eq!(converted.character + 1, first.column, "line {line} {column} {encoding:?}");
                }
            }
        }
    }
}

/// A text of many chunks (so lines and CRLFs fall across chunk ends) from pieces of `pieces`.
fn chunked_text(pieces: &[u8]) -> Rope {
    const PIECES: [&str; 7] = ["a", "é", "🦀", "\n", "\r", "\r\n", "0123456789abcdefghijklmnopqrstuvwxyz"];
    let text: String = pieces.iter().map(|&piece| PIECES[piece as usize % PIECES.len()]).collect();
    // Built by inserts, as an edited buffer is: chunk ends land anywhere, a CR and its LF apart
    // included.
    let mut rope = Rope::new();
    for (index, part) in text.as_bytes().chunks(61).enumerate() {
        let part = std::str::from_utf8(part).map_or_else(|_| String::from_utf8_lossy(part).into_owned(), str::to_owned);
        let at = if index % 3 == 0 { 0 } else { rope.len_chars() };
        rope.insert(at, &part);
    }
    rope
}

proptest::proptest! {
    /// Every line found by its [`LineStarts`] is the line [`rope_line`] finds, and there are
    /// as many as the rope counts.
    #[test]
    fn line_starts_find_the_lines_the_rope_finds(pieces in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..900)) {
        let text = chunked_text(&pieces);
        let lines = LineStarts::of(&text).unwrap();
        proptest::prop_assert_eq!(lines.len(), text.len_lines());
        let as_string = |line: Option<RopeLine<'_>>| line.map(|line| match line {
            RopeLine::Chunk(within) => within.to_owned(),
            RopeLine::Slice(slice) => slice.to_string(),
        });
        for line in 0..=text.len_lines() {
            proptest::prop_assert_eq!(as_string(lines.line(&text, line)), as_string(rope_line(&text, line)), "line {}", line);
        }
    }
}
