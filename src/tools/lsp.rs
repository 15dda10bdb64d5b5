//! `symbol_at`, `find_definition` and `find_references` (seed: filepuff API reference, "LSP
//! Operations"): the file's language server, reached through [`crate::backends`].
//!
//! Units: `line` is 1-based; `column` is 1-based and counts characters (Unicode scalar values),
//! as every filepuff tool does. Each server's own encoding (UTF-8, UTF-16 or UTF-32 code units,
//! negotiated at `initialize`) is converted to and from by `documents::position` only.
//!
//! Agents misreport columns: with `symbol` (the identifier's text) the column may be omitted or
//! off — the tool takes the occurrence of `symbol` on the line nearest to `column`.
//!
//! Before each request the server is given the current text of the file — the open buffer if
//! the editor has one, else the disk — and of every open buffer of its languages, so answers
//! are about what the editor shows.

use std::sync::Arc;
use std::time::Duration;

use lsp_types::request::{GotoDefinition, HoverRequest};
use lsp_types::{
    GotoDefinitionParams, GotoDefinitionResponse, HoverContents, HoverParams, Location, MarkedString,
    PartialResultParams, ReferenceContext, ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, Url,
};
use ropey::Rope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::page::{self, Limits, PageInfo, PageParams};
use super::{ErrorCode, ToolError, error::read_error};
use crate::backends::locations::{ReferencesAsSent, read_locations};
use crate::backends::{BackendError, Completeness, LspClient, Needs, Question};
use crate::cancel::CancelFlag;
use crate::documents::Language;
use crate::documents::position::{self, Encoding, OneBased};
use crate::engine::Engine;
use crate::workspace::{DocumentId, ResolvedPath};

/// Lines of code shown around a definition (before and after its first line).
const PREVIEW_CONTEXT: usize = 3;

/// A position in a file: its path, a 1-based line, and a 1-based character column or the
/// identifier's text.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PositionParams {
    /// Path to the file (relative to the workspace root, absolute inside it, or file://).
    pub file: String,
    /// Line number (1-based).
    pub line: usize,
    /// Column number (1-based, in characters). May be omitted when `symbol` is given.
    pub column: Option<usize>,
    /// The identifier's text; when given, the occurrence on `line` nearest to `column` is used.
    pub symbol: Option<String>,
}

/// Parameters of `find_references`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReferencesParams {
    #[serde(flatten)]
    pub position: PositionParams,
    /// Include the declaration itself (default true).
    pub include_declaration: Option<bool>,
    /// Paging over the references, in file (path) then position order.
    #[serde(flatten)]
    pub page: PageParams,
}

/// A place in a file. Inside the root, `file` is relative and lines/columns are 1-based
/// (columns in characters); outside it (a standard library, a system header) `file` is absolute
/// and `column` is the server's own unit, since filepuff does not read files outside the root.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationInfo {
    // An `Arc`: shared by the locations of one file (an answer names a few dozen files for
    // hundreds of locations). Not a doc comment: that would be the schema's description.
    pub file: Arc<str>,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub outside_root: bool,
    /// The line's text (inside the root), trimmed; a line over 300 characters is cut to a
    /// window around the location, with `…` where it was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How far an answer can be trusted.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AnswerInfo {
    /// The server that answered (name and version).
    pub server: String,
    /// `complete`: the server was settled (no indexing running); `indexing`: it was still
    /// loading or indexing, the answer may be partial; `timed_out`: filepuff waited
    /// `[lsp] ready_timeout_ms` for indexing to finish and it had not.
    pub completeness: String,
    /// True when the server had died and was restarted for this request.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restarted: bool,
    /// The position sent, 1-based line and column (characters), after `symbol` lookup.
    pub line: usize,
    pub column: usize,
    /// True when no language server was installed and the answer comes from tree-sitter by
    /// name: declarations with the identifier's name, or its whole-word occurrences.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
    /// Why the answer is approximate, and how to install the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Result of `find_definition`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DefinitionOutput {
    pub definitions: Vec<DefinitionInfo>,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// One definition with a code preview.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DefinitionInfo {
    #[serde(flatten)]
    pub location: LocationInfo,
    /// Lines around the definition (3 before, 3 after), `cat -n` numbered; inside the root only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

/// Result of `find_references`: one page of the server's references.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReferencesOutput {
    /// This page's references grouped by file, files in path order, references in position
    /// order (a file can continue on the next page).
    pub files: Vec<FileReferences>,
    /// References in the whole answer (as `total`).
    pub total_references: usize,
    /// Files with references in the whole answer.
    pub total_files: usize,
    #[serde(flatten)]
    pub page: PageInfo,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// The references in one file: its path once, then each reference's place in it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileReferences {
    /// Workspace-relative inside the root; absolute outside it (a standard library, a system
    /// header).
    pub file: Arc<str>,
    /// True when the file is outside the root: its references' columns are then the server's
    /// own units and they carry no `text`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub outside_root: bool,
    pub references: Vec<ReferenceInfo>,
}

impl ReferencesOutput {
    /// Its compact JSON, byte for byte as `serde_json::to_string` writes it
    /// (`references_json_is_serde_jsons`), written directly: constant keys and `itoa` digits,
    /// serde_json only for each string's escaping and for the flattened `page` and `answer`.
    /// serde's derived code makes about 30 writer calls per reference; for gopls's 148
    /// references of `packages.Load` that was ~0.4 M instructions a call (docs/performance.md).
    ///
    /// Errors: as `serde_json::to_string`.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let mut out: Vec<u8> = Vec::with_capacity(self.json_estimate());
        let mut digits = itoa::Buffer::new();
        out.extend_from_slice(br#"{"files":["#);
        for (i, group) in self.files.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"file":"#);
            serde_json::to_writer(&mut out, &group.file)?;
            if group.outside_root {
                out.extend_from_slice(br#","outside_root":true"#);
            }
            out.extend_from_slice(br#","references":["#);
            for (j, r) in group.references.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                for (key, value) in [
                    (&br#"{"line":"#[..], r.line),
                    (br#","column":"#, r.column),
                    (br#","end_line":"#, r.end_line),
                    (br#","end_column":"#, r.end_column),
                ] {
                    out.extend_from_slice(key);
                    out.extend_from_slice(digits.format(value).as_bytes());
                }
                if let Some(text) = &r.text {
                    out.extend_from_slice(br#","text":"#);
                    serde_json::to_writer(&mut out, text)?;
                }
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(br#"],"total_references":"#);
        out.extend_from_slice(digits.format(self.total_references).as_bytes());
        out.extend_from_slice(br#","total_files":"#);
        out.extend_from_slice(digits.format(self.total_files).as_bytes());
        // `#[serde(flatten)]`: each one's members follow, in order.
        for flattened in [serde_json::to_vec(&self.page)?, serde_json::to_vec(&self.answer)?] {
            let members = flattened
                .strip_prefix(b"{")
                .and_then(|rest| rest.strip_suffix(b"}"))
                .ok_or_else(|| serde::ser::Error::custom("a flattened field is not a JSON object"))?;
            if !members.is_empty() {
                out.push(b',');
                out.extend_from_slice(members);
            }
        }
        out.push(b'}');
        // Every piece is UTF-8 (constants, digits, serde_json's own output).
        String::from_utf8(out).map_err(serde::ser::Error::custom)
    }

    /// A capacity for [`ReferencesOutput::to_json`] that is usually enough (so the buffer is
    /// allocated once): each reference's keys and digits, its text unescaped, each group's
    /// keys. Lengths only: counting escapes would cost what it saves.
    fn json_estimate(&self) -> usize {
        let text = |r: &ReferenceInfo| r.text.as_ref().map_or(0, String::len);
        let group = |f: &FileReferences| f.file.len() + 48 + f.references.iter().map(|r| 80 + text(r)).sum::<usize>();
        self.files.iter().map(group).sum::<usize>() + 512
    }
}

/// One reference, in its file's group: lines and columns are 1-based, columns in characters
/// inside the root (the server's own units outside it).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReferenceInfo {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    /// The line's text (inside the root), trimmed; a line over 300 characters is cut to a
    /// window around the reference, with `…` where it was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl ReferenceInfo {
    /// The length of its compact JSON ([`super::local::json_len`] of it), counted without
    /// writing it: the page rule measures each of an answer's hundreds of references.
    fn json_len(&self) -> usize {
        use page::{decimal_len, json_string_len};
        // `{"line":…,"column":…,"end_line":…,"end_column":…}`, then `,"text":"…"` when present.
        const KEYS: usize = r#"{"line":,"column":,"end_line":,"end_column":}"#.len();
        KEYS + decimal_len(self.line)
            + decimal_len(self.column)
            + decimal_len(self.end_line)
            + decimal_len(self.end_column)
            + self.text.as_deref().map_or(0, |text| r#","text":"#.len() + json_string_len(text))
    }
}

/// A reference with its file, for paging: its JSON is the reference's alone (the file is
/// counted once per group by [`references_page`]).
struct InFile {
    file: Arc<str>,
    outside_root: bool,
    reference: ReferenceInfo,
}

impl From<LocationInfo> for InFile {
    fn from(location: LocationInfo) -> InFile {
        let LocationInfo { file, line, column, end_line, end_column, outside_root, text } = location;
        InFile { file, outside_root, reference: ReferenceInfo { line, column, end_line, end_column, text } }
    }
}

impl Serialize for InFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.reference.serialize(serializer)
    }
}

/// Result of `symbol_at`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolAtOutput {
    /// The identifier at the position.
    pub symbol: String,
    /// The server's hover text (type, signature, documentation), Markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hover: Option<String>,
    pub definitions: Vec<LocationInfo>,
    #[serde(flatten)]
    pub answer: AnswerInfo,
}

/// Runs `find_definition`.
///
/// Errors: path and read errors (1001–1107); 4001 no server for the language, 4002 server not
/// installed (with the install command), 4003 failed to start, 4004 crashed twice, 4005 timed
/// out twice, 4006 the server's own error; 4007 a position not in the file or `symbol` not on
/// the line.
pub fn find_definition(engine: &Engine, params: PositionParams) -> Result<DefinitionOutput, ToolError> {
    blocking(engine, find_definition_on(engine, &params, &CancelFlag::current(), RunOn::Blocking))
}

/// [`find_definition`] on the thread `on` says. `Ok(None)` only on [`RunOn::Session`], when the
/// answer must come from the tree-sitter fallback.
pub async fn find_definition_on(
    engine: &Engine,
    params: &PositionParams,
    cancel: &CancelFlag,
    on: RunOn,
) -> Result<Option<DefinitionOutput>, ToolError> {
    let target = Target::resolve(engine, params)?;
    if let Some(note) = target.fallback_note(engine) {
        return Ok((on == RunOn::Blocking).then(|| fallback::definition(engine, &target, note)));
    }
    definition_at(engine, &target, cancel).await.map(Some)
}

/// `textDocument/definition` at `target` from its server (no fallback), with each location's
/// preview.
async fn definition_at(engine: &Engine, target: &Target, cancel: &CancelFlag) -> Result<DefinitionOutput, ToolError> {
    let timeout = request_timeout(engine);
    let (locations, answer, encoding) = target
        .ask_async(engine, "textDocument/definition", Needs::Index, cancel, |client, position| {
            let params = GotoDefinitionParams {
                text_document_position_params: position,
                work_done_progress_params: client.work_done(),
                partial_result_params: PartialResultParams::default(),
            };
            async move { client.request::<GotoDefinition>(params, timeout).await.map(definition_locations) }
        })
        .await?;
    let mut locator = Locator::new(engine, encoding);
    let definitions = locations
        .iter()
        .map(|location| {
            let (info, text) = locator.info(location);
            let preview = text.map(|text| preview(&text, info.line));
            DefinitionInfo { location: info, preview }
        })
        .collect();
    Ok(DefinitionOutput { definitions, answer })
}

/// Where a tool that asks a language server runs (the `_on` variants of `find_definition`,
/// `find_references`, `symbol_at` and `hover`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOn {
    /// The MCP session's own thread, the one that reads the language servers' answers: awaiting
    /// a server costs no thread hand-off there. A tree-sitter fallback, which reads many files,
    /// is not run there: the tool answers `Ok(None)`, to be run again with
    /// [`RunOn::Blocking`].
    Session,
    /// A thread that may block: tokio's blocking pool, the CLI.
    Blocking,
}

/// The answer of a tool's `_on` variant run with [`RunOn::Blocking`] on this thread
/// ([`crate::backends::Backends::block_on`]).
fn blocking<O>(
    engine: &Engine,
    run: impl std::future::Future<Output = Result<Option<O>, ToolError>>,
) -> Result<O, ToolError> {
    engine
        .backends()
        .block_on(run)?
        .ok_or_else(|| ToolError::internal("a tool run to block answered that it would not".to_owned()))
}

/// Runs `find_references`. Waits (bounded by `[lsp] ready_timeout_ms`) for the server to finish
/// indexing first, so the list is not silently partial.
///
/// Errors: as [`find_definition`].
pub fn find_references(engine: &Engine, params: ReferencesParams) -> Result<ReferencesOutput, ToolError> {
    blocking(engine, find_references_on(engine, &params, &CancelFlag::current(), RunOn::Blocking))
}

/// [`find_references`] on the thread `on` says (see [`find_definition_on`]).
pub async fn find_references_on(
    engine: &Engine,
    params: &ReferencesParams,
    cancel: &CancelFlag,
    on: RunOn,
) -> Result<Option<ReferencesOutput>, ToolError> {
    let target = Target::resolve(engine, &params.position)?;
    let include_declaration = params.include_declaration.unwrap_or(true);
    if let Some(note) = target.fallback_note(engine) {
        if on == RunOn::Session {
            return Ok(None);
        }
        let (references, answer) = fallback::references(engine, &target, note, include_declaration);
        return Ok(Some(references_page(references, &params.page, engine, answer)));
    }
    let timeout = request_timeout(engine);
    let (locations, answer, encoding) = target
        .ask_async(engine, "textDocument/references", Needs::Index, cancel, move |client, position| {
            let params = ReferenceParams {
                text_document_position: position,
                work_done_progress_params: client.work_done(),
                partial_result_params: PartialResultParams::default(),
                context: ReferenceContext { include_declaration },
            };
            async move {
                client
                    .request_read::<ReferencesAsSent>(params, timeout, read_locations)
                    .await
                    .map(Option::unwrap_or_default)
            }
        })
        .await?;
    let mut locator = Locator::new(engine, encoding);
    let references = locations.iter().map(|location| locator.info_at(&location.uri, location.range).0).collect();
    Ok(Some(references_page(references, &params.page, engine, answer)))
}

/// One page of `references` (in any order; sorted by file, line and column and deduplicated
/// here), grouped by file.
fn references_page(
    mut references: Vec<LocationInfo>,
    page: &PageParams,
    engine: &Engine,
    answer: AnswerInfo,
) -> ReferencesOutput {
    // Unstable (no buffer, fewer moves of these 88-byte values) and still deterministic: the
    // key goes on to the end, and two references equal in all of it are the same reference.
    references.sort_unstable_by(|a, b| {
        (&a.file, a.line, a.column, a.end_line, a.end_column).cmp(&(
            &b.file,
            b.line,
            b.column,
            b.end_line,
            b.end_column,
        ))
    });
    references.dedup_by(|a, b| (&a.file, a.line, a.column) == (&b.file, b.line, b.column));
    let total_files =
        references.windows(2).filter(|pair| pair[0].file != pair[1].file).count() + usize::from(!references.is_empty());
    let limits = Limits::new(page, usize::MAX, engine.workspace().config().limits.max_output_chars);
    // A file's group costs its name and brackets once, where the page enters it.
    let mut last_file: Option<Arc<str>> = None;
    let references: Vec<InFile> = references.into_iter().map(InFile::from).collect();
    let (kept, page) = page::page_measured(references, limits, "references", |r: &InFile| {
        let length = r.reference.json_len();
        if last_file.as_ref() == Some(&r.file) {
            return length;
        }
        last_file = Some(r.file.clone());
        length + r.file.len() + if r.outside_root { 60 } else { 40 }
    });
    let mut files: Vec<FileReferences> = Vec::new();
    for InFile { file, outside_root, reference } in kept {
        match files.last_mut() {
            Some(group) if group.file == file => group.references.push(reference),
            _ => files.push(FileReferences { file, outside_root, references: vec![reference] }),
        }
    }
    ReferencesOutput { files, total_references: page.total, total_files, page, answer }
}

/// Runs `symbol_at`: the identifier, the server's hover and the definition locations.
///
/// Errors: as [`find_definition`].
pub fn symbol_at(engine: &Engine, params: PositionParams) -> Result<SymbolAtOutput, ToolError> {
    blocking(engine, symbol_at_on(engine, &params, &CancelFlag::current(), RunOn::Blocking))
}

/// [`symbol_at`] on the thread `on` says (see [`find_definition_on`]).
pub async fn symbol_at_on(
    engine: &Engine,
    params: &PositionParams,
    cancel: &CancelFlag,
    on: RunOn,
) -> Result<Option<SymbolAtOutput>, ToolError> {
    let target = Target::resolve(engine, params)?;
    let symbol = target.identifier();
    if let Some(note) = target.fallback_note(engine) {
        if on == RunOn::Session {
            return Ok(None);
        }
        let definitions = fallback::definition(engine, &target, note.clone());
        return Ok(Some(SymbolAtOutput {
            symbol,
            hover: None,
            definitions: definitions.definitions.into_iter().map(|d| d.location).collect(),
            answer: definitions.answer,
        }));
    }
    let timeout = request_timeout(engine);
    // Hover and definition are asked at once: the slower of the two sets the time, not their
    // sum (a server answers requests concurrently; the document is synced once, by whichever
    // ask comes first).
    let hover = target.ask_async(engine, "textDocument/hover", Needs::Document, cancel, |client, position| {
        let params =
            HoverParams { text_document_position_params: position, work_done_progress_params: client.work_done() };
        async move { client.request::<HoverRequest>(params, timeout).await }
    });
    let (hover, definitions) = futures::join!(hover, definition_at(engine, &target, cancel));
    let (hover, answer, _) = hover?;
    let hover = hover.map(|hover| hover_text(hover.contents));
    // The hover's error is the tool's; a definition the server could not give is none.
    let definitions = match definitions {
        Ok(out) => out.definitions.into_iter().map(|d| d.location).collect(),
        Err(_) => Vec::new(),
    };
    Ok(Some(SymbolAtOutput { symbol, hover, definitions, answer }))
}

pub(super) fn request_timeout(engine: &Engine) -> Duration {
    Duration::from_millis(engine.backends().config().request_timeout_ms.max(100))
}

/// Name-based answers from tree-sitter when no language server is installed.
mod fallback;

/// A resolved position: the file, its current text and the byte offset asked about.
pub(super) struct Target {
    resolved: ResolvedPath,
    language: Language,
    text: Rope,
    offset: usize,
    at: OneBased,
}

impl Target {
    pub(super) fn language(&self) -> Language {
        self.language
    }

    pub(super) fn resolved(&self) -> &ResolvedPath {
        &self.resolved
    }

    pub(super) fn at(&self) -> OneBased {
        self.at
    }
}

impl Target {
    pub(super) fn resolve(engine: &Engine, params: &PositionParams) -> Result<Target, ToolError> {
        let workspace = engine.workspace();
        let (resolved, lstat) = workspace.resolve_with_lstat(&params.file)?;
        let source = engine
            .documents()
            .text_after_lstat(&resolved.id(), workspace.config().limits.max_file_bytes, lstat.as_ref())
            .map_err(|err| read_error(err, &resolved.relative))?;
        let language = source.language.ok_or_else(|| {
            ToolError::new(
                ErrorCode::LspNoServer,
                format!("{}: unknown language, no language server", resolved.relative),
                "Language servers serve Go, C/C++, Python, TypeScript/JavaScript, Rust and Elixir files.",
            )
            .with("path", resolved.relative.as_str())
        })?;
        let text = source.text;
        let total = position::line_count(&text);
        let bad_position = |message: String| {
            ToolError::new(
                ErrorCode::LspBadPosition,
                message,
                "Lines and columns are 1-based; columns count characters.",
            )
            .with("path", resolved.relative.as_str())
            .with("line", params.line)
            .with("total_lines", total)
        };
        if params.line == 0 || params.line > total.max(1) {
            return Err(bad_position(format!("line {} is not in {} ({total} lines)", params.line, resolved.relative)));
        }
        let line_text = position::zero_based(params.line)
            .and_then(|line| position::line_text(&text, line))
            .map(|l| l.to_string())
            .unwrap_or_default();
        let line_chars: Vec<char> = line_text.trim_end_matches(['\n', '\r']).chars().collect();
        let column = match (&params.symbol, params.column) {
            (Some(symbol), column) => {
                let found = identifier_columns(&line_chars, symbol);
                let wanted = column.unwrap_or(1);
                let Some(best) = found.into_iter().min_by_key(|c| c.abs_diff(wanted)) else {
                    return Err(bad_position(format!(
                        "`{symbol}` is not on line {} of {}",
                        params.line, resolved.relative
                    ))
                    .with("line_text", line_text.trim()));
                };
                best
            }
            (None, Some(column)) if column >= 1 && column <= line_chars.len() + 1 => column,
            (None, Some(column)) => {
                return Err(bad_position(format!(
                    "column {column} is not on line {} ({} characters)",
                    params.line,
                    line_chars.len()
                )));
            }
            (None, None) => return Err(bad_position("give column, or symbol (the identifier's text)".to_owned())),
        };
        let at = OneBased { line: params.line as u32, column: column as u32 };
        let (offset, _) = position::one_based_to_offset(&text, at);
        Ok(Target { resolved, language, text, offset, at })
    }

    /// `Some(why)` when navigation must fall back to tree-sitter: no server is configured for
    /// the language, or the default one is not installed. (A server configured in
    /// `[servers.NAME]` that is missing stays an error: the user asked for it.)
    pub(super) fn fallback_note(&self, engine: &Engine) -> Option<String> {
        match engine.backends().spec_for(self.language) {
            Ok(_) => None,
            Err(BackendError::NoServer { language }) => {
                Some(format!("no language server is configured for {language}; answered by name from tree-sitter"))
            }
            Err(BackendError::NotInstalled { server, command, install_hint })
                if !engine.workspace().config().servers.contains_key(&server) =>
            {
                Some(format!(
                    "{server} (`{command}`) is not installed, so this is a name-based answer from tree-sitter; install it for exact answers: {install_hint}"
                ))
            }
            Err(_) => None,
        }
    }

    /// The file's URI.
    pub(super) fn uri(&self) -> Result<Url, ToolError> {
        Url::from_file_path(&self.resolved.absolute)
            .map_err(|()| ToolError::internal(format!("no file URI for {}", self.resolved.absolute.display())))
    }

    /// The file, relative to the workspace root.
    pub(super) fn relative(&self) -> &str {
        &self.resolved.relative
    }

    /// A target without a position (document-wide requests): the file's first character.
    pub(super) fn file(engine: &Engine, file: &str) -> Result<Target, ToolError> {
        Target::resolve(engine, &PositionParams { file: file.to_owned(), line: 1, column: Some(1), symbol: None })
    }

    /// The identifier around the position (read from the rope around it, not a copy of the
    /// file).
    pub(super) fn identifier(&self) -> String {
        let is_ident = |c: &char| c.is_alphanumeric() || *c == '_' || *c == '$';
        let at = position::offset_to_char(&self.text, self.offset);
        let before = self.text.chars_at(at).reversed().take_while(is_ident).count();
        let after = self.text.chars_at(at).take_while(is_ident).count();
        self.text.slice(at - before..at + after).to_string()
    }

    /// Asks the file's server the request `make` builds at this position (converted into the
    /// server's encoding), through the one ask path ([`crate::backends::Backends::ask`]: sync,
    /// readiness, one retry). Returns the answer, how it was had, and the server's encoding.
    /// Blocks: the synchronous face of [`Target::ask_async`], cancelled by the thread's
    /// [`CancelFlag`].
    pub(super) fn ask<T, F, Fut>(
        &self,
        engine: &Engine,
        method: &'static str,
        needs: Needs,
        make: F,
    ) -> Result<(T, AnswerInfo, Encoding), ToolError>
    where
        T: Serialize,
        F: Fn(Arc<LspClient>, TextDocumentPositionParams) -> Fut,
        Fut: std::future::Future<Output = Result<T, BackendError>>,
    {
        engine.backends().block_on(self.ask_async(engine, method, needs, &CancelFlag::current(), make))
    }

    /// [`Target::ask`], awaited ([`crate::backends::Backends::ask_async`]).
    pub(super) async fn ask_async<T, F, Fut>(
        &self,
        engine: &Engine,
        method: &'static str,
        needs: Needs,
        cancel: &CancelFlag,
        make: F,
    ) -> Result<(T, AnswerInfo, Encoding), ToolError>
    where
        T: Serialize,
        F: Fn(Arc<LspClient>, TextDocumentPositionParams) -> Fut,
        Fut: std::future::Future<Output = Result<T, BackendError>>,
    {
        let id = self.resolved.id();
        let uri = id.uri();
        let question = Question { id: &id, language: self.language, method, text: &self.text, needs };
        let ready_limit = Duration::from_millis(engine.backends().config().ready_timeout_ms);
        let answered = engine
            .backends()
            .ask_async(question, ready_limit, cancel, |client| {
                let (pos, _) = position::offset_to_position(&self.text, self.offset, client.encoding);
                let position = TextDocumentPositionParams {
                    text_document: TextDocumentIdentifier { uri: uri.clone() },
                    position: lsp_types::Position { line: pos.line, character: pos.character },
                };
                make(client, position)
            })
            .await
            .map_err(backend_error)?;
        let client = &answered.client;
        let answer = AnswerInfo {
            server: client.server_info.clone().unwrap_or_else(|| client.name.clone()),
            completeness: answered.completeness.as_str().to_owned(),
            restarted: answered.restarted,
            line: self.at.line as usize,
            column: self.at.column as usize,
            approximate: false,
            note: None,
        };
        Ok((answered.value, answer, client.encoding))
    }
}

/// 1-based columns (characters) where `symbol` occurs on the line as a whole identifier.
fn identifier_columns(line: &[char], symbol: &str) -> Vec<usize> {
    let wanted: Vec<char> = symbol.chars().collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    (0..line.len().saturating_sub(wanted.len() - 1))
        .filter(|&i| line[i..i + wanted.len()] == wanted[..])
        .filter(|&i| i == 0 || !is_ident(line[i - 1]))
        .filter(|&i| line.get(i + wanted.len()).is_none_or(|c| !is_ident(*c)))
        .map(position::one_based)
        .collect()
}

fn definition_locations(response: Option<GotoDefinitionResponse>) -> Vec<Location> {
    match response {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(location)) => vec![location],
        Some(GotoDefinitionResponse::Array(locations)) => locations,
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|link| Location { uri: link.target_uri, range: link.target_selection_range })
            .collect(),
    }
}

/// A location in filepuff's units, and the file's text when it is inside the root.
pub(super) fn location_info(engine: &Engine, location: &Location, encoding: Encoding) -> (LocationInfo, Option<Rope>) {
    Locator::new(engine, encoding).info(location)
}

/// Converts many locations, reading each file once.
pub(super) struct Locator<'e> {
    engine: &'e Engine,
    encoding: Encoding,
    resolver: crate::workspace::Resolver<'e>,
    /// Each referenced file (by the server's URI string), resolved and read once per answer;
    /// hashed cheaply (the keys are a trusted answer's few dozen URIs, looked up per location).
    files: std::collections::HashMap<Arc<str>, usize, rustc_hash::FxBuildHasher>,
    /// What `files` indexes (its key shared), in the order first named. Servers list a file's
    /// locations together: the last one named is compared before anything is hashed.
    found: Vec<(Arc<str>, Referenced)>,
}

/// A file a server's location names, as [`Locator`] found it.
enum Referenced {
    /// Inside the root: its workspace-relative path, its current text and, when known, where
    /// its lines start.
    Inside(Arc<str>, Rope, Option<Arc<position::LineStarts>>),
    /// Outside the root or unreadable: its path as shown (the URI when it is not a local path).
    Outside(Arc<str>),
}

impl<'e> Locator<'e> {
    pub(super) fn new(engine: &'e Engine, encoding: Encoding) -> Locator<'e> {
        let resolver = engine.workspace().resolver();
        Locator { engine, encoding, resolver, files: Default::default(), found: Vec::new() }
    }

    /// The file of `uri`: inside the root with its current text, or outside.
    fn file(&mut self, uri: &str) -> &Referenced {
        let index = match self.found.last() {
            Some((last, _)) if **last == *uri => self.found.len() - 1,
            _ => match self.files.get(uri) {
                Some(&index) => index,
                None => {
                    let file = self.locate(uri);
                    let key: Arc<str> = uri.into();
                    self.files.insert(key.clone(), self.found.len());
                    self.found.push((key, file));
                    self.found.len() - 1
                }
            },
        };
        &self.found[index].1
    }

    fn locate(&mut self, uri: &str) -> Referenced {
        if let Ok((resolved, lstat)) = self.resolver.resolve_uri_str_with_lstat(uri) {
            let limit = self.engine.workspace().config().limits.max_file_bytes;
            if let Ok(source) = self.engine.documents().text_after_lstat(&resolved.id(), limit, lstat.as_ref()) {
                return Referenced::Inside(resolved.relative.into(), source.text, source.lines);
            }
        }
        let path = Url::parse(uri).ok().and_then(|url| url.to_file_path().ok());
        Referenced::Outside(path.map_or_else(|| uri.into(), |p| p.display().to_string().into()))
    }

    /// A location in filepuff's units, and the file's text when it is inside the root.
    pub(super) fn info(&mut self, location: &Location) -> (LocationInfo, Option<Rope>) {
        self.info_at(location.uri.as_str(), location.range)
    }

    /// [`Locator::info`] of a location given as the server sent it (its `uri` as a string:
    /// parsed once per file, not once per location).
    pub(super) fn info_at(&mut self, uri: &str, range: lsp_types::Range) -> (LocationInfo, Option<Rope>) {
        let encoding = self.encoding;
        let position = |p: lsp_types::Position| position::Position { line: p.line, character: p.character };
        match self.file(uri) {
            Referenced::Inside(relative, text, lines) => {
                let (start, end, line_text) = position::range_to_one_based_in(
                    text,
                    lines.as_deref(),
                    position(range.start),
                    position(range.end),
                    encoding,
                    MAX_LINE_CHARS,
                );
                (
                    LocationInfo {
                        file: relative.clone(),
                        line: start.line as usize,
                        column: start.column as usize,
                        end_line: end.line as usize,
                        end_column: end.column as usize,
                        outside_root: false,
                        text: line_text,
                    },
                    Some(text.clone()),
                )
            }
            Referenced::Outside(file) => {
                // No text to count characters in: the columns stay in the server's units.
                let convert = |p: lsp_types::Position| position::one_based_without_text(position(p));
                let (start, end) = (convert(range.start), convert(range.end));
                (
                    LocationInfo {
                        file: file.clone(),
                        line: start.line as usize,
                        column: start.column as usize,
                        end_line: end.line as usize,
                        end_column: end.column as usize,
                        outside_root: true,
                        text: None,
                    },
                    None,
                )
            }
        }
    }
}

/// A server's position (0-based, in its `encoding` units) as filepuff's 1-based line and
/// character column in `text`, clamped as [`position::position_to_one_based`] clamps.
fn server_one_based(text: &Rope, p: lsp_types::Position, encoding: Encoding) -> position::OneBased {
    position::position_to_one_based(text, position::Position { line: p.line, character: p.character }, encoding).0
}

/// Characters of a line shown in a location's `text` or a preview line; a longer line (minified
/// code) is cut to a window of this many characters around the location, marked with `…`.
const MAX_LINE_CHARS: usize = 300;

/// `cat -n` style lines around 1-based `line`, each cut to [`MAX_LINE_CHARS`] characters.
fn preview(text: &Rope, line: usize) -> String {
    let total = position::line_count(text);
    let first = line.saturating_sub(PREVIEW_CONTEXT).max(1);
    let last = (line + PREVIEW_CONTEXT).min(total);
    let mut out = String::new();
    for (number, (shown, cut)) in (first..).zip(position::line_prefixes(text, first - 1..last, MAX_LINE_CHARS)) {
        // Written in place: no string per line.
        use std::fmt::Write as _;
        let _ = writeln!(out, "{number:>6}\t{shown}{}", if cut { "…" } else { "" });
    }
    out
}

pub(super) fn hover_text(contents: HoverContents) -> String {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(ls) => format!("```{}\n{}\n```", ls.language, ls.value),
    };
    match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(items) => items.into_iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    }
}

pub(super) fn backend_error(err: BackendError) -> ToolError {
    let message = err.to_string();
    match err {
        BackendError::NoServer { language } => ToolError::new(
            ErrorCode::LspNoServer,
            message,
            "Configure one under [servers.NAME] in filepuff.toml (command, languages).",
        )
        .with("language", language),
        BackendError::NotInstalled { server, command, install_hint } => {
            ToolError::new(ErrorCode::LspNotInstalled, message, format!("Install it: {install_hint}."))
                .with("server", server)
                .with("command", command)
        }
        BackendError::StartFailed { server, command, message: detail } => ToolError::new(
            ErrorCode::LspStartFailed,
            message,
            "Run the command by hand in the project to see why; `filepuff doctor` lists the servers.",
        )
        .with("server", server)
        .with("command", command)
        .with("detail", detail),
        BackendError::Crashed { server, .. } => ToolError::new(
            ErrorCode::LspCrashed,
            message,
            "The server stopped twice in a row; check its log (FILEPUFF_LOG=debug) and retry.",
        )
        .with("server", server),
        BackendError::Timeout { server, method, ms } => ToolError::new(
            ErrorCode::LspTimeout,
            message,
            "Retry; raise [lsp] request_timeout_ms for very large projects.",
        )
        .with("server", server)
        .with("method", method)
        .with("timeout_ms", ms),
        BackendError::Broken { server, retry_in_secs, .. } => ToolError::new(
            ErrorCode::LspCrashed,
            message,
            "The server keeps stopping (a crash loop); check its log (FILEPUFF_LOG=debug) and its configuration.",
        )
        .with("server", server)
        .with("broken", true)
        .with("retry_in_secs", retry_in_secs),
        BackendError::Server { server, method, .. } => {
            ToolError::new(ErrorCode::LspServerError, message, "Check the position: it should be on an identifier.")
                .with("server", server)
                .with("method", method)
        }
        BackendError::ContentModified { server, method } => ToolError::new(
            ErrorCode::LspServerError,
            message,
            "The file kept changing while the server worked (asked twice); retry.",
        )
        .with("server", server)
        .with("method", method),
        BackendError::Cancelled { server } => {
            ToolError::new(ErrorCode::LspServerError, message, "The call was cancelled; nothing to do.")
                .with("server", server)
                .with("cancelled", true)
        }
    }
}

/// Readable text of `find_definition`.
pub fn render_definition(output: &DefinitionOutput) -> String {
    let mut out = String::new();
    if output.definitions.is_empty() {
        out.push_str("no definition found\n");
    }
    for d in &output.definitions {
        out.push_str(&format!("{}:{}:{}\n", d.location.file, d.location.line, d.location.column));
        if let Some(preview) = &d.preview {
            out.push_str(preview);
        }
    }
    out.push_str(&answer_line(&output.answer));
    out
}

/// Readable text of `find_references`: per file, `path (count)`, then `  line:column  text` per
/// reference. Written with `push_str` and `itoa` (no formatting machinery): an answer holds
/// hundreds of references.
pub fn render_references(output: &ReferencesOutput) -> String {
    let mut numbers = itoa::Buffer::new();
    let references: usize = output.files.iter().map(|file| file.references.len()).sum();
    let mut out = String::with_capacity(references * 64 + output.files.iter().map(|f| f.file.len() + 8).sum::<usize>());
    for file in &output.files {
        out.push_str(&file.file);
        out.push_str(" (");
        out.push_str(numbers.format(file.references.len()));
        out.push_str(")\n");
        for r in &file.references {
            out.push_str("  ");
            out.push_str(numbers.format(r.line));
            out.push(':');
            out.push_str(numbers.format(r.column));
            out.push_str("  ");
            out.push_str(r.text.as_deref().unwrap_or(""));
            out.push('\n');
        }
    }
    out.push_str(&format!("{} reference(s) in {} file(s)\n", output.total_references, output.total_files));
    out.push_str(&output.page.text_line("references").unwrap_or_default());
    out.push_str(&answer_line(&output.answer));
    out
}

/// Readable text of `symbol_at`.
pub fn render_symbol_at(output: &SymbolAtOutput) -> String {
    let mut out = format!("{}\n", output.symbol);
    if let Some(hover) = &output.hover {
        out.push_str(hover.trim_end());
        out.push('\n');
    }
    for d in &output.definitions {
        out.push_str(&format!("defined at {}:{}:{}\n", d.file, d.line, d.column));
    }
    out.push_str(&answer_line(&output.answer));
    out
}

pub(super) fn answer_line(answer: &AnswerInfo) -> String {
    let restarted = if answer.restarted { ", server restarted" } else { "" };
    let note = answer.note.as_deref().map(|n| format!("\nnote: {n}")).unwrap_or_default();
    format!("[{}: {}{restarted}]{note}\n", answer.server, answer.completeness)
}

/// Parameters of `diagnostics`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DiagnosticsParams {
    /// The file whose diagnostics to get; without it, every diagnostic the running servers have
    /// published for files in the workspace.
    pub file: Option<String>,
    /// Paging over the diagnostics, in file (path) then position order.
    #[serde(flatten)]
    pub page: PageParams,
}

/// One diagnostic, 1-based lines and columns (characters; the end is exclusive).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DiagnosticInfo {
    /// The file (workspace-wide results only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    /// error, warning, information or hint.
    pub severity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub message: String,
}

/// Result of `diagnostics`: one page of them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DiagnosticsOutput {
    /// The file asked about; `*` for the whole workspace.
    pub file: String,
    pub diagnostics: Vec<DiagnosticInfo>,
    #[serde(flatten)]
    pub page: PageInfo,
    /// True when the diagnostics are known to be for the file's current text (the synced
    /// version); false when the server did not report for it within `[lsp] ready_timeout_ms`.
    pub current: bool,
    pub server: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restarted: bool,
}

/// Runs `diagnostics` for one file: pulled where the server supports it, else the ones
/// published for the current text — never older ones without saying so (`current: false`).
///
/// Errors: path and read errors; 4001–4006 as [`find_definition`].
pub fn diagnostics(engine: &Engine, params: DiagnosticsParams) -> Result<DiagnosticsOutput, ToolError> {
    let workspace = engine.workspace();
    let limits = Limits::new(&params.page, usize::MAX, workspace.config().limits.max_output_chars);
    let Some(file) = params.file else { return Ok(workspace_diagnostics(engine, limits)) };
    let resolved = workspace.resolve(&file)?;
    let source = engine
        .documents()
        .text(&resolved.id(), workspace.config().limits.max_file_bytes)
        .map_err(|err| read_error(err, &resolved.relative))?;
    let language = source.language.ok_or_else(|| {
        ToolError::new(
            ErrorCode::LspNoServer,
            format!("{}: unknown language, no language server", resolved.relative),
            "",
        )
    })?;
    let found = file_diagnostics(engine, &resolved.id(), language, &source.text)?;
    let (diagnostics, page) = page::page(found.diagnostics, limits, "diagnostics", |_| 0);
    Ok(DiagnosticsOutput {
        file: resolved.relative,
        diagnostics,
        page,
        current: found.current,
        server: found.server,
        restarted: found.restarted,
    })
}

/// Every diagnostic the running servers have published for files inside the workspace, by file
/// and position. Only files a server has analyzed (opened, or checked on its own) appear, and
/// the lists are the latest published, so `current` is false.
fn workspace_diagnostics(engine: &Engine, limits: Limits) -> DiagnosticsOutput {
    let mut out = Vec::new();
    let mut servers = Vec::new();
    for client in engine.backends().running() {
        servers.push(client.server_info.clone().unwrap_or_else(|| client.name.clone()));
        let mut locator = Locator::new(engine, client.encoding);
        for (uri, diagnostics) in client.all_published_diagnostics() {
            for d in diagnostics {
                let (start, _) = locator.info(&Location { uri: uri.clone(), range: d.range });
                if start.outside_root {
                    continue;
                }
                let span = (start.line, start.column, start.end_line, start.end_column);
                out.push(DiagnosticInfo::from_lsp(d, Some(start.file.to_string()), span));
            }
        }
    }
    out.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.end_line, a.end_column, &a.message).cmp(&(
            &b.file,
            b.line,
            b.column,
            b.end_line,
            b.end_column,
            &b.message,
        ))
    });
    servers.sort();
    let (diagnostics, page) = page::page(out, limits, "diagnostics", |_| 0);
    DiagnosticsOutput {
        file: "*".to_owned(),
        diagnostics,
        page,
        current: false,
        server: servers.join(", "),
        restarted: false,
    }
}

impl DiagnosticInfo {
    /// `diagnostic` at `span` (1-based line, column, end line, end column, in characters).
    fn from_lsp(diagnostic: lsp_types::Diagnostic, file: Option<String>, span: (usize, usize, usize, usize)) -> Self {
        let (line, column, end_line, end_column) = span;
        DiagnosticInfo {
            file,
            line,
            column,
            end_line,
            end_column,
            severity: severity_name(diagnostic.severity).to_owned(),
            code: diagnostic.code.map(|code| match code {
                lsp_types::NumberOrString::Number(n) => n.to_string(),
                lsp_types::NumberOrString::String(s) => s,
            }),
            source: diagnostic.source,
            message: diagnostic.message,
        }
    }
}

fn severity_name(severity: Option<lsp_types::DiagnosticSeverity>) -> &'static str {
    match severity {
        Some(lsp_types::DiagnosticSeverity::WARNING) => "warning",
        Some(lsp_types::DiagnosticSeverity::INFORMATION) => "information",
        Some(lsp_types::DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

/// A file's diagnostics from its server (see [`file_diagnostics`]).
#[derive(Debug, Clone)]
pub struct FileDiagnostics {
    /// In position order, 1-based lines and columns.
    pub diagnostics: Vec<DiagnosticInfo>,
    /// Known to be for `text` (see [`LspClient::diagnostics`]).
    pub current: bool,
    /// The servers' names and versions, comma-separated (every server of the language reports
    /// its own diagnostics; one that failed is named with why).
    pub server: String,
    pub restarted: bool,
    /// Whether the servers were ready (started, project loaded) within the wait.
    pub completeness: Completeness,
}

/// The diagnostics of `text` as the content of `id`, from every server of its language that
/// reports them (a type checker's and a linter's, merged in position order, as the editor shows
/// them), each through the one ask path (synced, once the server is ready), converted to 1-based
/// lines and columns.
///
/// Errors: as [`find_definition`]'s server errors (4001–4006).
pub fn file_diagnostics(
    engine: &Engine,
    id: &DocumentId,
    language: Language,
    text: &Rope,
) -> Result<FileDiagnostics, ToolError> {
    let limit = Duration::from_millis(engine.backends().config().ready_timeout_ms);
    file_diagnostics_within(engine, id, language, text, limit)
}

/// [`file_diagnostics`] within `limit`: the wait for the server to be ready and then for its
/// report on `text` share it ([`crate::backends::Backends::ask_within`]).
///
/// Errors: as [`file_diagnostics`].
pub fn file_diagnostics_within(
    engine: &Engine,
    id: &DocumentId,
    language: Language,
    text: &Rope,
    limit: Duration,
) -> Result<FileDiagnostics, ToolError> {
    let uri = id.uri();
    let deadline = std::time::Instant::now() + limit;
    let question = Question { id, language, method: "textDocument/publishDiagnostics", text, needs: Needs::Index };
    // Every server of the language reports its own (a type checker's and a linter's), merged
    // as the editor shows them.
    let answers = engine
        .backends()
        .ask_each(question, limit, |client| {
            let uri = uri.clone();
            async move {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                client.diagnostics(&uri, left).await
            }
        })
        .map_err(backend_error)?;
    let mut merged = FileDiagnostics {
        diagnostics: Vec::new(),
        current: true,
        server: String::new(),
        restarted: false,
        completeness: Completeness::Complete,
    };
    let mut servers = Vec::new();
    for (name, answer) in answers {
        let answered = match answer {
            Ok(answered) => answered,
            Err(err) => {
                // One server failing leaves the others' diagnostics; it is named, not hidden.
                servers.push(format!("{name} (failed: {err})"));
                merged.current = false;
                continue;
            }
        };
        let (raw, current) = answered.value;
        let client = &answered.client;
        let encoding = client.encoding;
        let convert = |p: lsp_types::Position| server_one_based(text, p, encoding);
        merged.diagnostics.extend(raw.into_iter().map(|d| {
            let (start, end) = (convert(d.range.start), convert(d.range.end));
            let span = (start.line as usize, start.column as usize, end.line as usize, end.column as usize);
            DiagnosticInfo::from_lsp(d, None, span)
        }));
        servers.push(client.server_info.clone().unwrap_or_else(|| client.name.clone()));
        merged.current &= current;
        merged.restarted |= answered.restarted;
        if answered.completeness != Completeness::Complete {
            merged.completeness = answered.completeness;
        }
    }
    merged.diagnostics.sort_by_key(|d| (d.line, d.column));
    merged.server = servers.join(", ");
    Ok(merged)
}

/// Readable text of `diagnostics`.
pub fn render_diagnostics(output: &DiagnosticsOutput) -> String {
    let mut out = String::new();
    for d in &output.diagnostics {
        let source = d.source.as_deref().map(|s| format!(" [{s}]")).unwrap_or_default();
        let file = d.file.as_deref().unwrap_or(&output.file);
        out.push_str(&format!("{file}:{}:{}: {}: {}{source}\n", d.line, d.column, d.severity, d.message));
    }
    let current = if output.current { "" } else { " (not confirmed for the current text)" };
    out.push_str(&format!("{} diagnostic(s) from {}{current}\n", output.page.total, output.server));
    out.push_str(&output.page.text_line("diagnostics").unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    //! With a real gopls (skipped when `gopls` is not on PATH; scripts/test puts .tools/bin there).

    use super::*;
    use crate::workspace::{DocumentId, Workspace};
    use std::path::Path;

    /// Issue 16: a reference in a 15 MB one-line file must not bring the whole line back, once
    /// per reference.
    #[test]
    fn a_references_length_is_counted_as_serde_json_writes_it() {
        for text in [None, Some(""), Some("pkgs, err := packages.Load(cfg, src)"), Some("\"q\" \\ \t\u{1} é 😀")] {
            for (line, column) in [(1, 1), (9, 10), (135, 24), (99_999, 1_000_000)] {
                let reference = ReferenceInfo {
                    line,
                    column,
                    end_line: line + 1,
                    end_column: column + 4,
                    text: text.map(str::to_owned),
                };
                assert_eq!(reference.json_len(), super::super::local::json_len(&reference), "{reference:?}");
            }
        }
    }

    proptest::proptest! {
        /// `ReferencesOutput::to_json` is what serde_json writes for it, byte for byte: any
        /// paths and line texts (quotes, backslashes, control characters, non-ASCII), files
        /// outside the root, references without text, and both flattened parts in every shape.
        #[test]
        fn references_json_is_serde_jsons(
            files in proptest::collection::vec(
                ("\\PC{0,12}|[\"\\\\\u{0}-\u{1f}é😀]{0,4}", proptest::bool::ANY, proptest::collection::vec(
                    (0usize..100_000, 0usize..2_000, proptest::option::of("\\PC{0,20}|[\"\\\\\u{0}-\u{1f}]{0,3}")),
                    0..4,
                )),
                0..4,
            ),
            (total_references, total_files, offset, truncated) in (0usize..1_000, 0usize..100, 0usize..50, proptest::bool::ANY),
            next_offset in proptest::option::of(0usize..1_000),
            hint in proptest::option::of("\\PC{0,20}"),
            (restarted, approximate) in (proptest::bool::ANY, proptest::bool::ANY),
            note in proptest::option::of("[a-z\"\n]{0,10}"),
        ) {
            let output = ReferencesOutput {
                files: files
                    .into_iter()
                    .map(|(file, outside_root, references)| FileReferences {
                        file: file.into(),
                        outside_root,
                        references: references
                            .into_iter()
                            .map(|(line, column, text)| ReferenceInfo {
                                line,
                                column,
                                end_line: line + column % 3,
                                end_column: column + 4,
                                text,
                            })
                            .collect(),
                    })
                    .collect(),
                total_references,
                total_files,
                page: PageInfo { total: total_references, offset, returned: 3, truncated, next_offset, hint },
                answer: AnswerInfo {
                    server: "gopls v0.21".into(),
                    completeness: "complete".into(),
                    restarted,
                    line: 7,
                    column: 12,
                    approximate,
                    note,
                },
            };
            let expected = serde_json::to_string(&output).unwrap();
            proptest::prop_assert_eq!(&output.to_json().unwrap(), &expected);
            proptest::prop_assert_eq!(&crate::tools::structured_json(&output).unwrap(), &expected);
        }
    }

    #[test]
    fn references_render_as_a_file_header_then_a_line_per_reference() {
        let reference = |line, column, text: Option<&str>| ReferenceInfo {
            line,
            column,
            end_line: line,
            end_column: column + 4,
            text: text.map(str::to_owned),
        };
        let output = ReferencesOutput {
            files: vec![
                FileReferences {
                    file: "cmd/bundle/main.go".into(),
                    outside_root: false,
                    references: vec![
                        reference(135, 24, Some("pkgs, err := packages.Load(cfg, *dstPath)")),
                        reference(186, 7, None),
                    ],
                },
                FileReferences {
                    file: "/usr/local/go/src/go/types/api.go".into(),
                    outside_root: true,
                    references: vec![reference(1, 1, None)],
                },
            ],
            total_references: 3,
            total_files: 2,
            page: PageInfo::whole(3),
            answer: AnswerInfo {
                server: "gopls v0.21".into(),
                completeness: "complete".into(),
                restarted: false,
                line: 1,
                column: 1,
                approximate: false,
                note: None,
            },
        };
        assert_eq!(
            render_references(&output),
            "cmd/bundle/main.go (2)\n  135:24  pkgs, err := packages.Load(cfg, *dstPath)\n  186:7  \n\
             /usr/local/go/src/go/types/api.go (1)\n  1:1  \n\
             3 reference(s) in 2 file(s)\n[gopls v0.21: complete]\n"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_location() {
        let line = format!("{}needle{}", "a".repeat(10_000), "b".repeat(10_000));
        let text = Rope::from_str(&format!("short\n{line}\n"));
        assert_eq!(position::line_excerpt(&text, 0, 1, MAX_LINE_CHARS).as_deref(), Some("short"));
        let excerpt = position::line_excerpt(&text, 1, 10_001, MAX_LINE_CHARS).unwrap();
        assert!(excerpt.contains("needle") && excerpt.starts_with('…') && excerpt.ends_with('…'), "{excerpt}");
        assert!(excerpt.chars().count() <= MAX_LINE_CHARS + 2);
        let shown = preview(&text, 2);
        assert!(shown.len() < 2 * MAX_LINE_CHARS + 40, "{}", shown.len());
        let cut = format!("     2\t{}…\n", "a".repeat(MAX_LINE_CHARS));
        assert_eq!(shown, format!("     1\tshort\n{cut}"), "`cat -n` lines, the long one cut and marked");
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }

    #[test]
    fn killed_server_restarts_and_sees_unsaved_buffers() {
        if crate::backends::test_program("gopls").is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("go");
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lsp/go"), &root);
        let engine = Engine::new(Workspace::open(&root).unwrap());
        // An unsaved buffer moves Hello three lines down; the disk still has it at line 12.
        let greet = engine.workspace().resolve("greet/greet.go").unwrap().absolute;
        let disk = std::fs::read_to_string(&greet).unwrap();
        let unsaved = disk.replace("// Hello greets name.", "\n\n\n// Hello greets name.");
        engine.documents().open(DocumentId::from_canonical(&greet), &unsaved, 2, "go".to_owned());
        let params = PositionParams { file: "main.go".into(), line: 10, column: None, symbol: Some("Hello".into()) };

        let first = find_definition(&engine, params.clone()).unwrap();
        assert_eq!(
            (first.definitions[0].location.file.as_ref(), first.definitions[0].location.line),
            ("greet/greet.go", 15)
        );
        let pid = engine.backends().running()[0].pid.unwrap();
        std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));

        let started = std::time::Instant::now();
        let again = find_definition(&engine, params).unwrap();
        assert!(again.answer.restarted, "{again:?}");
        assert_eq!(again.definitions[0].location.line, 15, "the new server was given the unsaved buffer");
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
        assert_ne!(engine.backends().running()[0].pid.unwrap(), pid);
    }

    /// A workspace whose Go files `fake` serves, holding `main.go`:
    /// `package main\n\nfunc main() { main() }\n`.
    fn fake_go_workspace(fake: &crate::tests::fake_lsp::FakeServer) -> (tempfile::TempDir, Engine) {
        let dir = fake.go_workspace(&[("main.go", "package main\n\nfunc main() { main() }\n")]);
        let engine = Engine::new(Workspace::open(dir.path()).unwrap());
        (dir, engine)
    }

    /// The async ask path needs no thread but the one polling it: `find_definition_on` run with
    /// [`RunOn::Session`] on a current-thread runtime that also runs the server's client (the
    /// `filepuff mcp` arrangement) starts the server and has its answer, cold and then warm. A
    /// blocking wait anywhere on that path (a `Backends::run`, a sleep) would hang the runtime's
    /// thread for good; the test thread would then give up waiting.
    #[test]
    fn the_session_thread_alone_starts_a_server_and_has_its_answer() {
        use crate::tests::fake_lsp::{FakeServer, Reply, Script, WAIT};
        let fake = FakeServer::register(Script::new(serde_json::json!({"definitionProvider": true})).on(
            "textDocument/definition",
            |_, params| {
                let uri = params["textDocument"]["uri"].clone();
                let range =
                    serde_json::json!({"start": {"line": 2, "character": 5}, "end": {"line": 2, "character": 9}});
                Reply::Result(serde_json::json!([{ "uri": uri, "range": range }]))
            },
        ));
        let (_dir, engine) = fake_go_workspace(&fake);
        let engine = Arc::new(engine);
        let (answers, answered) = std::sync::mpsc::channel();
        let session = {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                engine.backends().adopt_runtime(runtime.handle().clone());
                let params = PositionParams { file: "main.go".to_owned(), line: 3, column: Some(15), symbol: None };
                runtime.block_on(async {
                    for _ in 0..2 {
                        let output = find_definition_on(&engine, &params, &CancelFlag::new(), RunOn::Session).await;
                        let _ = answers.send(output.map(|output| output.map(|o| o.definitions[0].location.clone())));
                    }
                });
                // As `filepuff mcp` ends: the servers stop on the runtime, waited for elsewhere.
                runtime.block_on(async move {
                    let _ = tokio::task::spawn_blocking(move || engine.backends().stop_all()).await;
                });
            })
        };
        for _ in 0..2 {
            let location = answered.recv_timeout(WAIT).expect("an answer without a blocking wait").unwrap().unwrap();
            assert_eq!((&*location.file, location.line, location.column), ("main.go", 3, 6));
        }
        session.join().unwrap();
        assert_eq!(fake.starts(), 1);
    }

    /// `symbol_at` asks its hover and its definition at once, on one resolution of the target:
    /// the fake server answers the hover only once the definition request has arrived too.
    /// Asked one after the other, the hover would wait for a request never sent, and fail.
    #[test]
    fn symbol_at_asks_hover_and_definition_at_once() {
        use crate::tests::fake_lsp::{FakeServer, Reply, Script, WAIT};
        let asked = Arc::new(tokio::sync::Notify::new());
        let script = Script::new(serde_json::json!({"definitionProvider": true, "hoverProvider": true}));
        let on_definition = asked.clone();
        let script = script
            .on("textDocument/definition", move |_, params| {
                on_definition.notify_one();
                let uri = params["textDocument"]["uri"].clone();
                let range =
                    serde_json::json!({"start": {"line": 2, "character": 5}, "end": {"line": 2, "character": 9}});
                Reply::Result(serde_json::json!([{ "uri": uri, "range": range }]))
            })
            .on("textDocument/hover", move |_, _| {
                let asked = asked.clone();
                Reply::Later(Box::pin(async move {
                    match tokio::time::timeout(WAIT / 2, asked.notified()).await {
                        Ok(()) => Reply::Result(serde_json::json!({"contents": "func main()"})),
                        Err(_) => Reply::Error(async_lsp::ErrorCode::REQUEST_FAILED, "no definition asked".to_owned()),
                    }
                }))
            });
        let fake = FakeServer::register(script);
        let (_dir, engine) = fake_go_workspace(&fake);
        let params = PositionParams { file: "main.go".to_owned(), line: 3, column: Some(17), symbol: None };
        let output = symbol_at(&engine, params).unwrap();
        assert_eq!(output.symbol, "main");
        assert_eq!(output.hover.as_deref(), Some("func main()"));
        let definition = &output.definitions[0];
        assert_eq!((&*definition.file, definition.line, definition.column), ("main.go", 3, 6));
        engine.backends().stop_all();
    }

    /// A question about an older text of a document the editor has open (read before the
    /// editor's latest change arrived) is answered about the editor's text: the server's copy
    /// is left as the editor's changes made it. Sending the older text put it at the server
    /// under the version the editor's next change then carried, and that change was dropped:
    /// the server's copy stayed wrong (seen with Neovim after a rename).
    #[test]
    fn a_question_about_an_older_text_leaves_the_editors_document_alone() {
        use crate::documents::TextChange;
        use crate::documents::position::{Encoding, Position};
        use crate::tests::fake_lsp::{FakeServer, Script};
        let fake = FakeServer::register(Script::new(serde_json::json!({})));
        let (_dir, engine) = fake_go_workspace(&fake);
        let id = engine.workspace().resolve("main.go").unwrap().id();
        let first = "package main\n\nfunc main() { main() }\n";
        engine.open_document(id.clone(), "go".to_owned(), 1, first);
        let short = Duration::from_millis(100);
        // Starts the server, which opens the editor's document.
        let _ = file_diagnostics_within(&engine, &id, Language::Go, &Rope::from_str(first), short);
        let at = |line, character| Position { line, character };
        let change = |version: i32, from: (u32, u32), to: (u32, u32), text: &str| {
            let change = TextChange { range: Some((at(from.0, from.1), at(to.0, to.1))), text: text.to_owned() };
            engine.change_document(&id, version, Encoding::Utf16, &[change]).unwrap();
        };
        change(2, (2, 14), (2, 18), "run");
        // Asked about the text of version 1 after version 2 arrived.
        let _ = file_diagnostics_within(&engine, &id, Language::Go, &Rope::from_str(first), short);
        change(3, (2, 5), (2, 9), "start");
        let expected = "package main\n\nfunc start() { run() }\n";
        assert_eq!(engine.documents().get(&id).unwrap().text.to_string(), expected);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let server = runtime.block_on(fake.instance(0));
        let uri = id.uri().to_string();
        let held = runtime
            .block_on(server.wait_for("version 3", |log| {
                log.documents.get(&uri).filter(|document| document.version == 3).cloned()
            }));
        assert_eq!(held.text, expected);
        engine.backends().stop_all();
    }

    /// Two servers of one language (a type checker and a linter) are asked for a file's
    /// diagnostics at once: each gets the document before either has reported. Asked one after
    /// the other, the first would wait for its report while the second had not been sent the
    /// document, and the test, which makes both report only once both have it, would give up.
    #[test]
    fn every_server_of_a_language_is_asked_for_diagnostics_at_once() {
        use crate::tests::fake_lsp::{FakeServer, Script};
        let [checker, linter] = [0, 1].map(|_| FakeServer::register(Script::new(serde_json::json!({}))));
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "[servers.checker]\ncommand = [{:?}]\nlanguages = [\"go\"]\n\
             [servers.linter]\ncommand = [{:?}]\nlanguages = [\"go\"]\n\
             [languages.go]\nservers = [\"checker\", \"linter\"]\n",
            checker.program(),
            linter.program()
        );
        std::fs::write(dir.path().join("filepuff.toml"), config).unwrap();
        std::fs::write(dir.path().join("main.go"), "package main\n\nfunc main() {}\n").unwrap();
        let engine = Arc::new(Engine::new(Workspace::open(dir.path()).unwrap()));
        let id = engine.workspace().resolve("main.go").unwrap().id();
        let text = Rope::from_str("package main\n\nfunc main() {}\n");
        let asking = {
            let (engine, id, text) = (engine.clone(), id.clone(), text.clone());
            std::thread::spawn(move || {
                file_diagnostics_within(&engine, &id, Language::Go, &text, crate::tests::fake_lsp::WAIT)
            })
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let uri = id.uri().to_string();
        runtime.block_on(async {
            let mut opened = Vec::new();
            for (server, name) in [(&checker, "checker"), (&linter, "linter")] {
                let instance = server.instance(0).await;
                let version = instance
                    .wait_for(&format!("{name} has main.go"), |log| log.documents.get(&uri).map(|d| d.version))
                    .await;
                opened.push((instance, name, version));
            }
            for (instance, name, version) in opened {
                let range =
                    serde_json::json!({"start": {"line": 2, "character": 5}, "end": {"line": 2, "character": 9}});
                instance.notify(
                    "textDocument/publishDiagnostics",
                    serde_json::json!({"uri": uri, "version": version, "diagnostics": [
                        {"range": range, "severity": 2, "source": name, "message": format!("from {name}")}
                    ]}),
                );
            }
        });
        let merged = asking.join().unwrap().unwrap();
        let sources: Vec<_> = merged.diagnostics.iter().map(|d| d.source.clone().unwrap_or_default()).collect();
        assert_eq!(sources.len(), 2, "{sources:?}");
        assert!(sources.contains(&"checker".to_owned()) && sources.contains(&"linter".to_owned()), "{sources:?}");
        assert!(merged.current, "{}", merged.server);
        engine.backends().stop_all();
    }
}
