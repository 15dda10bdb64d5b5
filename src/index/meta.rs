//! File metadata the index reports: language (by extension or well-known name) and MIME type.

use std::path::Path;

use crate::documents::Language;

/// Languages beyond the ones filepuff parses, by extension (lower case, without the dot).
const MORE_LANGUAGES: &[(&str, &str)] = &[
    ("java", "java"),
    ("kt", "kotlin"),
    ("kts", "kotlin"),
    ("scala", "scala"),
    ("rb", "ruby"),
    ("php", "php"),
    ("cs", "csharp"),
    ("swift", "swift"),
    ("m", "objective-c"),
    ("mm", "objective-cpp"),
    ("lua", "lua"),
    ("pl", "perl"),
    ("pm", "perl"),
    ("r", "r"),
    ("dart", "dart"),
    ("zig", "zig"),
    ("hs", "haskell"),
    ("ml", "ocaml"),
    ("erl", "erlang"),
    ("clj", "clojure"),
    ("css", "css"),
    ("scss", "scss"),
    ("less", "less"),
    ("sql", "sql"),
    ("xml", "xml"),
    ("svg", "xml"),
    ("proto", "protobuf"),
    ("graphql", "graphql"),
    ("ini", "ini"),
    ("cfg", "ini"),
    ("rst", "restructuredtext"),
    ("txt", "plaintext"),
    ("s", "assembly"),
    ("asm", "assembly"),
    ("bat", "batch"),
    ("ps1", "powershell"),
    ("fish", "fish"),
    ("vim", "vim"),
    ("tf", "terraform"),
    ("csv", "csv"),
    ("diff", "diff"),
    ("patch", "diff"),
    ("mod", "go.mod"),
    ("sum", "go.sum"),
];

/// The language of a file, as the index names it (`go`, `python`, `typescript`, `yaml`, `java`,
/// …), from its extension or a well-known name (`Makefile`, `Dockerfile`); `None` when unknown.
pub fn language(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "Makefile" | "makefile" | "GNUmakefile" => return Some("makefile"),
        "Dockerfile" => return Some("dockerfile"),
        "CMakeLists.txt" => return Some("cmake"),
        _ => {}
    }
    if let Some(language) = Language::from_path(Path::new(name)) {
        return Some(language.name());
    }
    let ext = extension(name)?;
    let ext = ext.to_ascii_lowercase();
    MORE_LANGUAGES.iter().find(|(e, _)| *e == ext).map(|(_, l)| *l)
}

/// The extension without the dot (`None` for none, or a dotfile's leading dot only).
pub fn extension(name: &str) -> Option<&str> {
    match name.rfind('.') {
        Some(0) | None => None,
        Some(idx) if idx + 1 < name.len() => Some(&name[idx + 1..]),
        Some(_) => None,
    }
}

/// The MIME type: `inode/directory` for a directory; `text/x-<language>` for a known language
/// that mime_guess's table lacks or calls `text/plain` (`text/x-python`, `text/x-go`); else
/// mime_guess's type, or `application/octet-stream`.
pub fn mime_type(path: &str, is_dir: bool) -> String {
    if is_dir {
        return "inode/directory".to_owned();
    }
    let guess = mime_guess::from_path(path).first_raw();
    match (guess, language(path)) {
        (None | Some("text/plain"), Some(language)) if language != "plaintext" => format!("text/x-{language}"),
        (Some(mime), _) => mime.to_owned(),
        (None, _) => "application/octet-stream".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_and_mime_types() {
        assert_eq!(language("net/http/server.go"), Some("go"));
        assert_eq!(language("json/decoder.py"), Some("python"));
        assert_eq!(language("a/Main.java"), Some("java"));
        assert_eq!(language("Makefile"), Some("makefile"));
        assert_eq!(language("LICENSE"), None);
        assert_eq!(mime_type("x.json", false), "application/json");
        assert_eq!(mime_type("x.png", false), "image/png");
        assert_eq!(mime_type("a/b.py", false), "text/x-python");
        assert_eq!(mime_type("notes.txt", false), "text/plain");
        assert_eq!(mime_type("src", true), "inode/directory");
        assert_eq!(mime_type("LICENSE", false), "application/octet-stream");
        assert_eq!(extension(".gitignore"), None);
        assert_eq!(extension("a.tar.gz"), Some("gz"));
    }
}
