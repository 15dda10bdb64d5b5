//! Unit tests of the local tools: live buffers, batching, byte windows, the output budget.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::workspace::{Config, DocumentId, Workspace};

fn engine_with(files: &[(&str, &str)], config: Config) -> (tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let workspace = Workspace::with_config(dir.path(), config).unwrap();
    (dir, Arc::new(Engine::new(workspace)))
}

fn batch<Q: serde::de::DeserializeOwned>(value: serde_json::Value) -> Batch<Q> {
    serde_json::from_value(value).unwrap()
}

#[test]
fn search_and_read_see_the_unsaved_buffer() {
    let (_dir, engine) = engine_with(&[("a.go", "package a\n\nfunc onDisk() {}\n")], Config::default());
    let path = engine.workspace().resolve("a.go").unwrap().absolute;
    engine.documents().open(DocumentId::from_canonical(&path), "package a\n\nfunc inBuffer() {}\n", 7, "go".to_owned());

    let out = local_search_code(&engine, batch(json!({"pattern": "func \\w+", "path": ""}))).unwrap();
    let data = out.results[0].data.as_ref().unwrap();
    assert_eq!(data.stats.total_occurrences, Some(1));
    let file = &data.files[0];
    assert_eq!((file.path.as_str(), file.buffer_version), ("a.go", Some(7)));
    assert_eq!(file.matches[0].value, "func inBuffer() {}");
    assert_eq!((file.matches[0].line, file.matches[0].column), (3, 0));
    assert_eq!(file.matches[0].location.char_offset, 11);
    let none = local_search_code(&engine, batch(json!({"pattern": "onDisk", "path": ""}))).unwrap();
    assert_eq!(none.results[0].status, QueryStatus::Empty);

    let read = local_get_file_content(&engine, batch(json!({"path": "a.go", "matchString": "inbuffer"}))).unwrap();
    let data = read.results[0].data.as_ref().unwrap();
    assert_eq!(data.buffer_version, Some(7));
    assert_eq!(data.matched_lines, vec![3]);
    assert!(data.content.contains("func inBuffer() {}"), "{}", data.content);
}

#[test]
fn an_unsaved_new_file_is_searched_too() {
    let (_dir, engine) = engine_with(&[("keep.txt", "x\n")], Config::default());
    let path = engine.workspace().root().join("new/file.py");
    engine.documents().open(DocumentId::from_canonical(&path), "def fresh():\n    pass\n", 1, "python".to_owned());
    let out = local_search_code(&engine, batch(json!({"pattern": "fresh", "path": "", "type": "py"}))).unwrap();
    assert_eq!(out.results[0].data.as_ref().unwrap().files[0].path, "new/file.py");
}

#[test]
fn a_batch_with_one_failing_query_answers_every_query() {
    let (_dir, engine) = engine_with(&[("a.txt", "alpha\nbeta\n")], Config::default());
    let out = local_search_code(
        &engine,
        batch(json!({"queries": [
            {"pattern": "alpha", "path": ""},
            {"pattern": "beta", "path": ""},
            {"pattern": "(", "path": ""},
            {"pattern": "gamma", "path": ""},
            {"pattern": "a", "path": "a.txt"},
        ]})),
    )
    .unwrap();
    let statuses: Vec<QueryStatus> = out.results.iter().map(|r| r.status).collect();
    use QueryStatus::*;
    assert_eq!(statuses, [HasResults, HasResults, Error, Empty, HasResults]);
    assert_eq!(out.results[2].error.as_ref().unwrap().code, 2001);
    let six = json!({"queries": [{"pattern": "a"}, {"pattern": "a"}, {"pattern": "a"}, {"pattern": "a"}, {"pattern": "a"}, {"pattern": "a"}]});
    assert_eq!(local_search_code(&engine, batch(six)).unwrap_err().code, 8002);
    // Unbatched, the failure is the call's.
    assert_eq!(local_search_code(&engine, batch(json!({"pattern": "("}))).unwrap_err().code, 2001);
}

#[test]
fn byte_windows_tile_the_file_and_never_split_a_character() {
    let text = "héllo wörld\n".repeat(3);
    let (_dir, engine) = engine_with(&[("u.txt", text.as_str())], Config::default());
    let mut offset = 0;
    let mut rebuilt = String::new();
    loop {
        let out =
            local_get_file_content(&engine, batch(json!({"path": "u.txt", "charOffset": offset, "charLength": 5})))
                .unwrap();
        let data = out.results[0].data.as_ref().unwrap();
        rebuilt.push_str(&data.content);
        let page = data.pagination.as_ref().unwrap();
        assert_eq!(page.char_offset, offset);
        match page.next_char_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(rebuilt, text);
    let conflict =
        local_get_file_content(&engine, batch(json!({"path": "u.txt", "startLine": 1, "fullContent": true})));
    assert_eq!(conflict.unwrap_err().code, 8003);
}

#[test]
fn the_output_budget_bounds_a_huge_search_and_says_how_to_continue() {
    let line = format!("needle {}\n", "x".repeat(180));
    let big = line.repeat(400);
    let files: Vec<(String, String)> = (0..20).map(|i| (format!("f{i:02}.txt"), big.clone())).collect();
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let (_dir, engine) = engine_with(&refs, Config::default());
    let out = local_search_code(
        &engine,
        batch(json!({"pattern": "needle", "path": "", "matchesPerPage": 100, "filesPerPage": 20})),
    )
    .unwrap();
    let size = serde_json::to_string(&out).unwrap().len();
    assert!(size <= 41_000, "{size}");
    let data = out.results[0].data.as_ref().unwrap();
    assert!(data.truncated);
    assert_eq!(data.stats.total_occurrences, Some(8000));
    assert_eq!(data.pagination.total_matches, Some(8000));
    let last = data.files.last().unwrap();
    assert_eq!(last.returned_match_rows, Some(last.matches.len()));
    assert!(out.results[0].hints[0].contains("filePageNumber="), "{:?}", out.results[0].hints);
}

/// Issue 16: a line longer than the output budget (minified code) came back whole from
/// startLine and matchString reads.
#[test]
fn a_line_over_the_budget_comes_back_as_a_window() {
    let line = format!("{}needle{}", "a".repeat(300_000), "b".repeat(300_000));
    let (_dir, engine) = engine_with(&[("min.js", &format!("x\n{line}\n"))], Config::default());
    for query in
        [json!({"path": "min.js", "startLine": 2, "endLine": 2}), json!({"path": "min.js", "matchString": "needle"})]
    {
        let out = local_get_file_content(&engine, batch(query.clone())).unwrap();
        let size = serde_json::to_string(&out).unwrap().len();
        assert!(size <= 41_000, "{query}: {size} bytes");
        let data = out.results[0].data.as_ref().unwrap();
        let next = data.pagination.as_ref().and_then(|p| p.next_char_offset);
        assert!(next.is_some(), "{query}: no continuation");
        if query.get("matchString").is_some() {
            assert!(data.content.contains("needle"), "the window holds the match");
        }
    }
}

/// Rows, columns and byte offsets on text that ASCII-only tests would get right by accident:
/// a BOM, CRLF, a lone CR, characters outside the BMP, invalid UTF-8, two matches on one line.
#[test]
fn rows_columns_and_byte_offsets_follow_octocode_and_the_raw_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let files: [(&str, &[u8]); 4] = [
        ("bom.txt", b"\xef\xbb\xbfbom target\n"),
        ("crlf.txt", "x\r\n😀😀target\r\n\ttarget and target\r\nold\rtarget\n".as_bytes()),
        ("latin1.txt", b"caf\xe9 target\n"),
        ("multi.txt", b"a target\nb\ntarget c\n"),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let engine = Engine::new(Workspace::with_config(dir.path(), Config::default()).unwrap());
    let out = local_search_code(&engine, batch(json!({"pattern": "target", "path": ""}))).unwrap();
    let data = out.results[0].data.as_ref().unwrap();
    // (path, rows, [(line, column, charOffset)])
    type Rows<'a> = Vec<(&'a str, Option<usize>, Vec<(u64, u32, u64)>)>;
    let rows: Rows = data
        .files
        .iter()
        .map(|f| {
            let at = f.matches.iter().map(|m| (m.line, m.column, m.location.char_offset)).collect();
            (f.path.as_str(), f.total_match_rows, at)
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("bom.txt", Some(1), vec![(1, 5, 7)]),
            ("crlf.txt", Some(3), vec![(2, 4, 11), (3, 1, 20), (5, 0, 43)]),
            ("latin1.txt", Some(1), vec![(1, 5, 5)]),
            ("multi.txt", Some(2), vec![(1, 2, 2), (3, 0, 11)]),
        ]
    );
    assert!(data.files.iter().all(|f| f.matches.iter().all(|m| m.location.char_length == 6)));
    assert_eq!(data.stats.total_occurrences, Some(8));
    assert_eq!(data.stats.matched_lines, Some(7));
    assert_eq!(data.pagination.total_matches, Some(7));
    assert_eq!(data.files[1].matches[1].value, "\ttarget and target");
    assert!(out.results[0].hints.iter().any(|h| h.contains("bom.txt line 1 column 6")), "{:?}", out.results[0].hints);

    // A multiline match is one row spanning its lines.
    let multi = local_search_code(
        &engine,
        batch(json!({"pattern": "target\\nb\\ntarget", "path": "multi.txt", "multiline": true})),
    )
    .unwrap();
    let data = multi.results[0].data.as_ref().unwrap();
    let [row] = data.files[0].matches.as_slice() else { panic!("{:?}", data.files) };
    assert_eq!((row.line, row.column, row.location.char_offset, row.location.char_length), (1, 2, 2, 15));
    assert_eq!(row.value, "a target\nb\ntarget c");
    assert_eq!((data.stats.matched_lines, data.pagination.total_matches), (Some(3), Some(1)));
    // Discovery of a multiline pattern reads files whole (a match may span any lines).
    let multi = local_search_code(
        &engine,
        batch(json!({"pattern": "target\\nb\\ntarget", "path": "", "multiline": true, "filesOnly": true})),
    )
    .unwrap();
    let paths: Vec<&str> = multi.results[0].data.as_ref().unwrap().files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["multi.txt"]);

    // Discovery lists the files and counts nothing it did not read.
    let found = local_search_code(&engine, batch(json!({"pattern": "target", "path": "", "filesOnly": true}))).unwrap();
    let data = found.results[0].data.as_ref().unwrap();
    let paths: Vec<&str> = data.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["bom.txt", "crlf.txt", "latin1.txt", "multi.txt"]);
    assert!(data.files.iter().all(|f| f.total_match_rows.is_none() && f.matches.is_empty()));
    assert_eq!((data.stats.total_occurrences, data.pagination.total_matches), (None, None));
}

/// A search's byte offset is where `localGetFileContent` finds the match, invalid UTF-8 (whose
/// replacement characters are longer than the bytes they replace) and a BOM included.
#[test]
fn search_offsets_are_file_content_offsets_in_raw_bytes() {
    let raw: &[u8] = b"\xef\xbb\xbfcaf\xe9 \xff\xfe x\r\nna\xefve target here\n";
    let (dir, engine) = engine_with(&[], Config::default());
    std::fs::write(dir.path().join("odd.txt"), raw).unwrap();
    let found = local_search_code(&engine, batch(json!({"pattern": "target", "path": "odd.txt"}))).unwrap();
    let location = &found.results[0].data.as_ref().unwrap().files[0].matches[0].location;
    let expected = raw.windows(6).position(|w| w == b"target").unwrap() as u64;
    assert_eq!((location.char_offset, location.char_length), (expected, 6));

    let read = |offset: u64, length: u64| {
        let out = local_get_file_content(
            &engine,
            batch(json!({"path": "odd.txt", "charOffset": offset, "charLength": length})),
        )
        .unwrap();
        out.results[0].data.clone().unwrap()
    };
    let window = read(location.char_offset, location.char_length);
    assert_eq!(window.content, "target");
    assert_eq!(window.total_bytes, raw.len());
    // Windows of 2 bytes tile the raw bytes: each is the lossy decoding of its byte range.
    let mut offset = 0;
    let mut covered = Vec::new();
    while offset < raw.len() as u64 {
        let page = read(offset, 2).pagination.unwrap();
        assert_eq!(page.char_offset as u64, offset);
        covered.extend_from_slice(&raw[page.char_offset..page.char_offset + page.char_length]);
        offset = page.next_char_offset.map_or(raw.len() as u64, |next| next as u64);
    }
    assert_eq!(covered, raw);
}

/// Discovery streams files and stops early; it must still find what a content search finds:
/// a match after a lone CR (a line break), none in a binary file, none in a file over the size
/// limit even when the match comes before the limit.
#[test]
fn discovery_lists_exactly_the_files_a_content_search_matches() {
    let mut config = Config::default();
    config.limits.max_file_bytes = 1000;
    let long = format!("target\n{}", "x".repeat(2000));
    let tail = format!("{}\ntarget\n", "y\n".repeat(400));
    let (_dir, engine) = engine_with(
        &[
            ("cr.txt", "old\rtarget\r"),
            ("binary.bin", "target\0"),
            ("big.txt", long.as_str()),
            ("tail.txt", tail.as_str()),
            ("none.txt", "nothing here\n"),
        ],
        config,
    );
    let paths = |files_only: bool| {
        let query = json!({"pattern": "^target$", "path": "", "filesOnly": files_only});
        let out = local_search_code(&engine, batch(query)).unwrap();
        let data = out.results[0].data.clone().unwrap();
        let paths: Vec<String> = data.files.iter().map(|f| f.path.clone()).collect();
        (paths, data.stats.files_searched)
    };
    assert_eq!(paths(false), (vec!["cr.txt".to_owned(), "tail.txt".to_owned()], 4));
    assert_eq!(paths(true), paths(false));
}

#[test]
fn json_len_counts_the_bytes_serde_json_writes() {
    let value = serde_json::json!({"path": "日本/😀.go", "line": 12, "text": "a \"quoted\"\ttab", "none": null});
    assert_eq!(json_len(&value), serde_json::to_string(&value).unwrap().len());
    assert_eq!(json_len(&"x"), 3);
}
