//! Language identification: file name → [`Language`], and the names used on the wire.

use std::path::Path;

/// A language filepuff recognises. `Tsx` and `Jsx`-style files are distinct because their
/// grammars differ; `Vue` is parsed with the HTML grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Go,
    TypeScript,
    Tsx,
    JavaScript,
    Python,
    C,
    Cpp,
    Rust,
    Html,
    Vue,
    Elixir,
    Json,
    Yaml,
    Markdown,
    Toml,
    Shell,
}

impl Language {
    /// Every language, in a stable order.
    pub const ALL: [Language; 16] = [
        Language::Go,
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::Python,
        Language::C,
        Language::Cpp,
        Language::Rust,
        Language::Html,
        Language::Vue,
        Language::Elixir,
        Language::Json,
        Language::Yaml,
        Language::Markdown,
        Language::Toml,
        Language::Shell,
    ];

    /// Detects the language from a file name (extension, or a few well-known names).
    pub fn from_path(path: &Path) -> Option<Language> {
        let name = path.file_name()?.to_str()?;
        match name {
            "Makefile" | "makefile" => return None,
            ".bashrc" | ".bash_profile" | ".profile" | ".zshrc" => return Some(Language::Shell),
            "Cargo.lock" | "Pipfile" | "poetry.lock" => return Some(Language::Toml),
            _ => {}
        }
        let ext = name.rsplit_once('.')?.1;
        Language::from_extension(ext)
    }

    /// Detects the language from an extension without the dot (case-insensitive).
    pub fn from_extension(ext: &str) -> Option<Language> {
        let ext = ext.to_ascii_lowercase();
        Some(match ext.as_str() {
            "go" => Language::Go,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "py" | "pyw" | "pyi" => Language::Python,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp" => Language::Cpp,
            "rs" => Language::Rust,
            "html" | "htm" | "xhtml" => Language::Html,
            "vue" => Language::Vue,
            "ex" | "exs" => Language::Elixir,
            "json" | "jsonc" | "json5" => Language::Json,
            "yaml" | "yml" => Language::Yaml,
            "md" | "markdown" | "mdx" => Language::Markdown,
            "toml" => Language::Toml,
            "sh" | "bash" | "zsh" | "ksh" => Language::Shell,
            _ => return None,
        })
    }

    /// The LSP language identifier (LSP 3.17, "Text Document Item", language identifiers).
    pub fn lsp_id(self) -> &'static str {
        match self {
            Language::Go => "go",
            Language::TypeScript => "typescript",
            Language::Tsx => "typescriptreact",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Rust => "rust",
            Language::Html => "html",
            Language::Vue => "vue",
            Language::Elixir => "elixir",
            Language::Json => "json",
            Language::Yaml => "yaml",
            Language::Markdown => "markdown",
            Language::Toml => "toml",
            Language::Shell => "shellscript",
        }
    }

    /// The short name tools show and accept (`go`, `typescript`, `tsx`, `cpp`, …).
    pub fn name(self) -> &'static str {
        match self {
            Language::Go => "go",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Rust => "rust",
            Language::Html => "html",
            Language::Vue => "vue",
            Language::Elixir => "elixir",
            Language::Json => "json",
            Language::Yaml => "yaml",
            Language::Markdown => "markdown",
            Language::Toml => "toml",
            Language::Shell => "shell",
        }
    }

    /// Parses a short name or a common alias (`ts`, `js`, `py`, `c++`, `sh`, `golang`, …).
    pub fn from_name(name: &str) -> Option<Language> {
        let lower = name.to_ascii_lowercase();
        Language::ALL.into_iter().find(|lang| lang.name() == lower || lang.lsp_id() == lower).or_else(|| {
            match lower.as_str() {
                "golang" => Some(Language::Go),
                "c++" | "cxx" => Some(Language::Cpp),
                "bash" | "sh" => Some(Language::Shell),
                "md" => Some(Language::Markdown),
                "yml" => Some(Language::Yaml),
                _ => Language::from_extension(&lower),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_table() {
        let cases = [
            ("net/http/server.go", Some(Language::Go)),
            ("a.ts", Some(Language::TypeScript)),
            ("lib.d.ts", Some(Language::TypeScript)),
            ("App.tsx", Some(Language::Tsx)),
            ("a.jsx", Some(Language::JavaScript)),
            ("a.mjs", Some(Language::JavaScript)),
            ("a.cjs", Some(Language::JavaScript)),
            ("asyncio/base_events.py", Some(Language::Python)),
            ("stdio.h", Some(Language::C)),
            ("x.hpp", Some(Language::Cpp)),
            ("x.CC", Some(Language::Cpp)),
            ("main.rs", Some(Language::Rust)),
            ("index.html", Some(Language::Html)),
            ("App.vue", Some(Language::Vue)),
            ("mix.exs", Some(Language::Elixir)),
            ("package.json", Some(Language::Json)),
            ("ci.yml", Some(Language::Yaml)),
            ("README.md", Some(Language::Markdown)),
            ("Cargo.toml", Some(Language::Toml)),
            ("Cargo.lock", Some(Language::Toml)),
            ("run.sh", Some(Language::Shell)),
            ("Makefile", None),
            ("LICENSE", None),
            ("image.png", None),
        ];
        for (path, expected) in cases {
            assert_eq!(Language::from_path(Path::new(path)), expected, "{path}");
        }
    }

    #[test]
    fn names_round_trip() {
        for lang in Language::ALL {
            assert_eq!(Language::from_name(lang.name()), Some(lang));
            assert_eq!(Language::from_name(lang.lsp_id()), Some(lang));
        }
        assert_eq!(Language::from_name("ts"), Some(Language::TypeScript));
        assert_eq!(Language::from_name("c++"), Some(Language::Cpp));
        assert_eq!(Language::from_name("klingon"), None);
    }
}
