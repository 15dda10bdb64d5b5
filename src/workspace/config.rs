//! `filepuff.toml`: the optional per-workspace configuration file, and its defaults.
//!
//! Every key is documented in `docs/configuration.md`; unknown keys are refused so that a typo
//! does not silently fall back to a default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The file name looked up at the workspace root.
pub const CONFIG_FILE_NAME: &str = "filepuff.toml";

/// `filepuff.toml` could not be read or parsed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// The effective configuration: defaults overlaid with `filepuff.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub limits: LimitsConfig,
    pub search: SearchConfig,
    pub read: ReadConfig,
    pub walk: WalkConfig,
    pub lsp: LspConfig,
    pub graph: GraphConfig,
    pub mcp: McpConfig,
    pub index: IndexConfig,
    /// `[servers.NAME]`: overrides of the default language servers, or new ones.
    pub servers: std::collections::BTreeMap<String, ServerConfig>,
    /// `[languages.NAME]`: which servers serve a language.
    pub languages: std::collections::BTreeMap<String, LanguageConfig>,
}

/// `[lsp]`: how filepuff talks to language servers.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LspConfig {
    /// Longest wait for one answer from a server, in milliseconds (default 30000); a server that
    /// does not answer in time is restarted and the request retried once.
    pub request_timeout_ms: u64,
    /// Longest wait, in milliseconds, for a server to finish indexing before answering requests
    /// that depend on it (references); the answer then says `timed_out` (default 20000).
    pub ready_timeout_ms: u64,
    /// Longest wait, in milliseconds, for the diagnostics before and after an agent's edit
    /// (`edit_apply`, `rename_symbol`): each of the two waits — for the server to be ready
    /// (started, project loaded) and to report for the text — is bounded by it; past it the
    /// result says `timed_out` (default 10000).
    pub edit_diagnostics_timeout_ms: u64,
    /// Seconds without a request after which a server is shut down (default 600; 0 = never).
    pub idle_shutdown_secs: u64,
    /// Behind `filepuff lsp`: how long, in milliseconds, the editor's `initialize` waits for the
    /// workspace's servers to start before answering (default: `request_timeout_ms`). A server
    /// that starts later has its features registered with the editor afterwards
    /// (`client/registerCapability`) where the editor supports that.
    pub initialize_wait_ms: Option<u64>,
    /// Behind `filepuff lsp`: whether an agent's edit of a document open in the editor is also
    /// saved to disk once the editor applied it (default false: the editor's buffer holds it,
    /// unsaved, like any edit made there).
    pub save_agent_edits: bool,
    /// Largest message, in bytes, a language server may send (default 64 MiB). A server that
    /// declares a larger `Content-Length` is stopped and treated as crashed.
    pub max_message_bytes: usize,
    /// Longest header line, in bytes, a language server may send (default 64 KiB); output
    /// without a line break for longer stops the server as above.
    pub max_header_bytes: usize,
    /// Seconds a server stays reported broken after 10 starts within 30 s (a crash loop) before
    /// it is tried again (default 300); `filepuff/restart` from the editor tries at once.
    pub broken_cooldown_secs: u64,
}

impl Default for LspConfig {
    fn default() -> Self {
        LspConfig {
            request_timeout_ms: 30_000,
            ready_timeout_ms: 20_000,
            edit_diagnostics_timeout_ms: 10_000,
            idle_shutdown_secs: 600,
            initialize_wait_ms: None,
            save_agent_edits: false,
            max_message_bytes: 64 << 20,
            max_header_bytes: 64 << 10,
            broken_cooldown_secs: 300,
        }
    }
}

/// `[servers.NAME]`: one language server. For a default server (gopls, clangd, basedpyright,
/// typescript-language-server, rust-analyzer, elixir-ls) every key is optional and overrides the
/// default; a new name needs `command` and `languages`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Program and arguments, e.g. `["pyright-langserver", "--stdio"]`.
    pub command: Option<Vec<String>>,
    /// Language names it serves (`go`, `python`, `cpp`, …).
    pub languages: Option<Vec<String>>,
    /// Extra environment variables for the process.
    pub env: std::collections::BTreeMap<String, String>,
    /// Files whose directory is a project root (nearest ancestor of a file, inside the root).
    pub root_markers: Option<Vec<String>>,
    /// Sent as `initializationOptions` in `initialize`.
    pub initialization_options: Option<toml::Value>,
    /// Answered to `workspace/configuration` (looked up by section, dotted).
    pub settings: Option<toml::Value>,
    /// Never start this server.
    pub disabled: bool,
    /// Offer only this `positionEncoding` (`utf-8`, `utf-16`, `utf-32`) to the server instead of
    /// the editor's; filepuff translates positions where the two differ.
    pub position_encoding: Option<String>,
}

/// `[languages.NAME]`: how one language is served.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageConfig {
    /// Every server that serves the language, in order (e.g. `["basedpyright", "ruff"]`):
    /// diagnostics, completions, code actions and workspace symbols are merged from all of
    /// them; single answers (definition, hover, formatting, …) come from the first that offers
    /// the method, full servers before linters (`backends::route`). Default: the first
    /// installed server of the language.
    pub servers: Option<Vec<String>>,
    /// The servers that answer navigation (definition, hover, references, rename, symbols, …),
    /// in order, e.g. `["basedpyright"]`; servers not named are not asked for it. Default: every
    /// server of `servers` that offers the method, full servers before linters.
    pub navigation: Option<Vec<String>>,
}

/// `[limits]`: sizes that protect memory and an agent's context.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest file, in bytes, that `file_read` loads or `file_search` searches (default 16 MiB).
    pub max_file_bytes: u64,
    /// Characters (of JSON) a list-returning tool returns per call before it stops and says how
    /// to continue (default 40000, about 10k tokens). A batch of n queries gives each 1/n.
    pub max_output_chars: usize,
    /// Bytes of memory the parse-tree cache may keep, by its estimate (`syntax::estimated_bytes`:
    /// 14 × source bytes + 80 × tree nodes); least recently used trees go first (default 512 MiB).
    pub syntax_cache_bytes: usize,
}

/// `[search]`: defaults for `file_search`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Matching lines returned when the caller gives no `max_results` (default 100).
    pub max_results: usize,
    /// Context lines before and after each match when the caller gives none (default 2).
    pub context_lines: usize,
    /// Longest line text returned, in characters; longer lines are cut (default 300).
    pub max_line_chars: usize,
    /// Worker threads for the walk; 0 picks the number of CPUs (default 0).
    pub threads: usize,
}

/// `[read]`: defaults for `file_read`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadConfig {
    /// Lines returned when the caller gives no `max_lines` (default 2000).
    pub default_max_lines: usize,
    /// `file_read`'s output budget when the caller gives no `max_chars`: characters of content
    /// returned (a longer line is cut, with where to continue), and separately of the outline
    /// (default 100000).
    pub max_chars: usize,
}

/// `[walk]`: which files walks visit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WalkConfig {
    /// Visit hidden files and directories (default false; `.git` is never searched).
    pub hidden: bool,
    /// Honour `.gitignore` only inside a git repository, as ripgrep does (default false:
    /// `.gitignore` files are honoured everywhere).
    pub require_git: bool,
    /// Follow symlinks during walks; targets outside the root are still skipped (default false).
    pub follow_symlinks: bool,
    /// Gitignore lines, relative to the root, of what every walk leaves out; `!pattern`
    /// re-includes what an earlier line left out (default none). See `search/walk.rs`.
    pub exclude: Vec<String>,
}

/// `[graph]`: the persistent code knowledge graph.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphConfig {
    /// The SQLite database file; relative paths are relative to the workspace root (default
    /// `.filepuff/graph.db`). Several filepuff processes may share one file.
    pub path: PathBuf,
    /// A PostgreSQL database shared by a team instead of the SQLite file at `path`:
    /// `postgres://user:password@host:port/dbname` (libpq's URL form; `sslmode=require` asks
    /// for TLS). `FILEPUFF_GRAPH_URL` overrides it. See docs/graph.md.
    pub store: Option<String>,
    /// Where `graph index` takes `calls` relationships from: `auto` (the language server where
    /// one is installed, else syntax; the default), `lsp` (a missing server is an error) or
    /// `syntax` (by name, approximate). `--calls` overrides it.
    pub calls: String,
    /// Longest time, in milliseconds, `graph index` spends asking a server about one file
    /// (default 20000); past it the file's calls come from syntax.
    pub lsp_file_timeout_ms: u64,
    /// Files `graph index` asks one server about at once (default 4).
    pub lsp_files_in_flight: usize,
}

impl Default for GraphConfig {
    fn default() -> Self {
        GraphConfig {
            path: PathBuf::from(".filepuff/graph.db"),
            store: None,
            calls: "auto".to_owned(),
            lsp_file_timeout_ms: 20_000,
            lsp_files_in_flight: 4,
        }
    }
}

/// `[mcp]`: the MCP face.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Toolsets served (`core`, `lsp`, `local`, `index`, `graph`, `all`, `default`); `None`
    /// keeps the default (`core`, `lsp`). `--toolsets` overrides it.
    pub toolsets: Option<Vec<String>>,
}

/// `[index]`: the file index behind `files_list`, `files_search`, `files_get_info`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    /// Keep the index fresh with a file watcher (default true); without it, the index is rebuilt
    /// when older than a few seconds at query time.
    pub watch: bool,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig { watch: true }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_file_bytes: 16 * 1024 * 1024,
            max_output_chars: 40_000,
            syntax_cache_bytes: 512 * 1024 * 1024,
        }
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig { max_results: 100, context_lines: 2, max_line_chars: 300, threads: 0 }
    }
}

impl Default for ReadConfig {
    fn default() -> Self {
        ReadConfig { default_max_lines: 2000, max_chars: 100_000 }
    }
}

impl Config {
    /// Reads `root/filepuff.toml`; a missing file gives the defaults.
    pub fn load(root: &Path) -> Result<Config, ConfigError> {
        let path = root.join(CONFIG_FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text).map_err(|message| ConfigError { path, message }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(err) => Err(ConfigError { path, message: err.to_string() }),
        }
    }

    /// Parses the text of a config file; the error is a one-line message with the location.
    pub fn parse(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|err| err.to_string().trim().replace('\n', " "))
    }
}

/// What an editor may set through `initializationOptions` when it starts `filepuff lsp`
/// (the editor packages' server overrides): the same shapes as `[servers.NAME]` and
/// `[languages.NAME]` in `filepuff.toml`, as JSON. Entries replace the file's entries of the
/// same name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EditorOptions {
    pub servers: std::collections::BTreeMap<String, ServerConfig>,
    pub languages: std::collections::BTreeMap<String, LanguageConfig>,
}

impl Config {
    /// This configuration with an editor's `initializationOptions` laid over it.
    ///
    /// Errors: the options are not [`EditorOptions`] (the message names the bad field).
    pub fn with_editor_options(mut self, options: &serde_json::Value) -> Result<Config, String> {
        if options.is_null() {
            return Ok(self);
        }
        let options: EditorOptions = serde_json::from_value(options.clone()).map_err(|err| err.to_string())?;
        self.servers.extend(options.servers);
        self.languages.extend(options.languages);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example in docs/configuration.md is a valid configuration (and uncommenting its
    /// commented keys keeps it valid): the documentation cannot drift from the keys.
    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../docs/configuration.md");
        let start = doc.find("```toml\n").expect("a toml block") + "```toml\n".len();
        let block = &doc[start..start + doc[start..].find("```").expect("closed")];
        let config = Config::parse(block).unwrap();
        assert_eq!(
            config.languages["python"].servers.as_deref(),
            Some(&["basedpyright".to_owned(), "ruff".to_owned()][..])
        );
        let uncommented: String = block
            .lines()
            .map(|l| {
                l.strip_prefix("# position_encoding").map_or(l.to_owned(), |rest| format!("position_encoding{rest}"))
            })
            .collect::<Vec<_>>()
            .join("\n");
        let config = Config::parse(&uncommented).unwrap();
        assert_eq!(config.servers["gopls"].position_encoding.as_deref(), Some("utf-8"));
    }

    #[test]
    fn editor_options_overlay_servers_and_languages() {
        let config = Config::parse("[servers.gopls]\ncommand = [\"gopls\", \"-v\"]\n").unwrap();
        let options = serde_json::json!({
            "servers": { "gopls": { "command": ["/opt/gopls"], "settings": { "gopls": { "staticcheck": true } } } },
            "languages": { "python": { "servers": ["basedpyright", "ruff"] } }
        });
        let config = config.with_editor_options(&options).unwrap();
        assert_eq!(config.servers["gopls"].command.as_deref(), Some(&["/opt/gopls".to_owned()][..]));
        assert!(config.servers["gopls"].settings.is_some());
        assert_eq!(config.languages["python"].servers.as_ref().map(Vec::len), Some(2));
        let bad = Config::default().with_editor_options(&serde_json::json!({ "servrs": {} }));
        assert!(bad.unwrap_err().contains("servrs"));
    }

    #[test]
    fn defaults_when_empty() {
        let config = Config::parse("").unwrap();
        assert_eq!(config.search.max_results, 100);
        assert_eq!(config.limits.max_file_bytes, 16 * 1024 * 1024);
        assert!(!config.walk.require_git);
        assert_eq!(config.graph.path, PathBuf::from(".filepuff/graph.db"));
    }

    #[test]
    fn overrides_and_unknown_keys() {
        let config = Config::parse("[search]\nmax_results = 7\n[walk]\nexclude = [\"vendor/\"]\n").unwrap();
        assert_eq!(config.search.max_results, 7);
        assert_eq!(config.search.context_lines, 2);
        assert_eq!(config.walk.exclude, vec!["vendor/".to_owned()]);
        let config = Config::parse("[mcp]\ntoolsets = [\"core\", \"local\"]\n[index]\nwatch = false\n").unwrap();
        assert_eq!(config.mcp.toolsets, Some(vec!["core".to_owned(), "local".to_owned()]));
        assert!(!config.index.watch && config.limits.max_output_chars == 40_000);
        let err = Config::parse("[search]\nmax_result = 7\n").unwrap_err();
        assert!(err.contains("max_result"), "{err}");
    }
}
