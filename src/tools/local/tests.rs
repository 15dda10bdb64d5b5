//! Unit tests of the local tools: live buffers, batching, byte windows, the output budget.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::workspace::{Config, Workspace};

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
    engine.documents().open(path, "package a\n\nfunc inBuffer() {}\n", 7, "go".to_owned());

    let out = local_search_code(&engine, batch(json!({"pattern": "func \\w+", "path": ""}))).unwrap();
    let data = out.results[0].data.as_ref().unwrap();
    assert_eq!(data.total_matches, 1);
    let file = &data.files[0];
    assert_eq!((file.path.as_str(), file.buffer_version), ("a.go", Some(7)));
    assert_eq!(file.matches[0].value, "func inBuffer() {}");
    assert_eq!((file.matches[0].line, file.matches[0].column), (3, 1));
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
    engine.documents().open(path, "def fresh():\n    pass\n", 1, "python".to_owned());
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
    assert_eq!(data.total_matches, 8000);
    assert!(out.results[0].hints[0].contains("filePageNumber="), "{:?}", out.results[0].hints);
}
