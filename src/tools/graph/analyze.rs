//! `analyze_code`: extract components and relationships from code with tree-sitter and write
//! them into the graph (stable ids: re-analysing updates in place, never duplicates).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ComponentBrief, graph_error, store};
use crate::documents::Language;
use crate::engine::Engine;
use crate::graph::analyze::{analyses, extract};
use crate::graph::apply::{Anchor, apply, resolve};
use crate::graph::calls::{
    CallTargets, CallsJob, CallsMode, LspCallsLimits, NotAnswered, ask_servers, write_file_calls,
};
use crate::graph::{ComponentChanges, ComponentType, RelationshipType};
use crate::tools::{ErrorCode, ToolError};

/// Extracted components listed in the result at most (the counts cover all).
const MAX_LISTED: usize = 100;

/// Parameters of `analyze_code`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AnalyzeCodeParams {
    /// The code to analyze (the text given is analysed, not the file on disk).
    pub code_text: String,
    /// Path of the file the code is (workspace-relative); selects the language and gives the
    /// components their file. Re-analysing the same path updates its components in place.
    pub file_path: Option<String>,
    /// ID of an existing component whose code this is: its code_text is replaced (version
    /// bumped) and the declarations found become its members.
    pub component_id: Option<String>,
    /// Language name (go, python, typescript, tsx, javascript, c, cpp, rust, elixir, shell)
    /// when neither file_path nor the component tells; default python.
    pub language: Option<String>,
}

/// Result of `analyze_code`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AnalyzeCodeOutput {
    pub success: bool,
    /// The file component (or the component given by component_id).
    pub component_id: String,
    pub component: ComponentBrief,
    pub message: String,
    pub language: String,
    pub components_added: usize,
    pub components_updated: usize,
    pub components_unchanged: usize,
    pub components_removed: usize,
    /// Relationships written (contains, imports, inherits, implements, calls).
    pub relationships: usize,
    /// The declarations found (the first 100).
    pub components: Vec<ComponentBrief>,
    /// Whether the parser reported syntax errors (the extraction may be incomplete).
    pub syntax_errors: bool,
    /// Where the `calls` relationships came from.
    pub calls: CallsInfo,
}

/// Where `analyze_code` took `calls` from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CallsInfo {
    /// `lsp`: the file's language server (call hierarchy), because code_text is the file's
    /// current text; `syntax`: by callee name, each marked approximate.
    pub source: String,
    /// The server, for `lsp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Why the calls are by name, for `syntax`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Runs `analyze_code`.
///
/// Errors: path errors (1001–1005) for file_path; 3001 a language without a grammar or outline;
/// 7003 unknown component_id; store failures.
pub fn analyze_code(engine: &Engine, params: AnalyzeCodeParams) -> Result<AnalyzeCodeOutput, ToolError> {
    let relative = match &params.file_path {
        Some(path) => Some(engine.workspace().resolve(path)?.relative),
        None => None,
    };
    let store = store(engine)?;
    let anchor_component = match &params.component_id {
        Some(id) => Some(
            store
                .component(id)
                .map_err(|err| graph_error(err, engine))?
                .ok_or_else(|| graph_error(crate::graph::GraphError::NotFound { identifier: id.clone() }, engine))?,
        ),
        None => None,
    };
    let language = match (&params.language, &relative, &anchor_component) {
        (Some(name), _, _) => language_by_name(name)?,
        (None, Some(path), _) if Language::from_path(std::path::Path::new(path)).is_some() => {
            Language::from_path(std::path::Path::new(path)).unwrap_or(Language::Python)
        }
        (None, _, Some(component)) => component
            .language
            .as_deref()
            .and_then(|l| Language::ALL.into_iter().find(|x| x.name() == l))
            .or_else(|| component.file_path.as_deref().and_then(|p| Language::from_path(std::path::Path::new(p))))
            .unwrap_or(Language::Python),
        _ => Language::Python,
    };
    if !analyses(language) {
        return Err(unsupported(language.name()));
    }
    let rope = ropey::Rope::from_str(&params.code_text);
    let parsed = crate::syntax::parse(language, &rope).ok_or_else(|| unsupported(language.name()))?;
    let label = match (&relative, &anchor_component) {
        (Some(path), _) => path.clone(),
        (None, Some(component)) => {
            component.file_path.clone().unwrap_or_else(|| format!("<component {}>", component.id))
        }
        (None, None) => format!("<snippet {:016x}>.{}", fnv1a(&params.code_text), extension(language)),
    };
    let analysis = extract(&parsed, &label);
    if let Some(component) = &anchor_component {
        let changes = ComponentChanges { code_text: Some(params.code_text.clone()), ..ComponentChanges::default() };
        store.update_component(&component.id, &changes, "analyze_code").map_err(|err| graph_error(err, engine))?;
    }
    let key_prefix = anchor_component.as_ref().map(|c| format!("component:{}", c.id));
    let job = match (&relative, &anchor_component) {
        (Some(path), None) => server_job(engine, path, language, &params.code_text, &analysis),
        _ => Err("the code is not a file's (no file_path, or a component_id)".to_owned()),
    };
    let server = job.as_ref().ok().map(|(_, server)| server.clone());
    let mut applied = store
        .write(|tx| {
            let anchor = match (&anchor_component, &key_prefix) {
                (Some(component), Some(prefix)) => Anchor::Component { id: &component.id, key_prefix: prefix },
                _ => Anchor::File,
            };
            apply(tx, &analysis, anchor, server.as_deref())
        })
        .map_err(|err| graph_error(err, engine))?;
    // The server is asked with no store lock held; its calls replace the file's calls by name.
    let answered = match &job {
        Ok((job, _)) if !applied.kept_calls => {
            let limits = LspCallsLimits::from_config(&engine.workspace().config().graph, engine.backends().config());
            let max_bytes = engine.workspace().config().limits.max_file_bytes;
            let mut outcome =
                ask_servers(engine.backends(), engine.documents(), std::slice::from_ref(job), &limits, max_bytes);
            Some(outcome.remove(0))
        }
        _ => None,
    };
    let calls = match (&job, &answered) {
        (Ok((_, server)), None) => CallsInfo { source: "lsp".to_owned(), server: Some(server.clone()), note: None },
        (Ok(_), Some(Ok(found))) => {
            CallsInfo { source: "lsp".to_owned(), server: Some(found.server.clone()), note: None }
        }
        (Ok(_), Some(Err(NotAnswered::Unavailable(why) | NotAnswered::Failed(why)))) | (Err(why), _) => {
            CallsInfo { source: "syntax".to_owned(), server: None, note: Some(why.clone()) }
        }
    };
    if calls.source == "lsp" {
        applied.pending.retain(|link| link.relationship_type() != RelationshipType::Calls);
    }
    let resolved = store
        .write(|tx| {
            let mut written = 0;
            if let (Ok((job, _)), Some(Ok(found))) = (&job, &answered) {
                let mut targets = CallTargets::new(engine.workspace());
                written += write_file_calls(tx, &mut targets, &job.relative, found)?;
            }
            written += resolve(tx, &applied.pending)?;
            crate::graph::delete_unused_sources(tx)?;
            Ok(written)
        })
        .map_err(|err| graph_error(err, engine))?;
    let anchor = store
        .component(&applied.file_id)
        .map_err(|err| graph_error(err, engine))?
        .ok_or_else(|| ToolError::internal("the analysed component vanished"))?;
    let mut components = Vec::new();
    for id in applied.symbol_ids.iter().take(MAX_LISTED) {
        if let Some(c) = store.component(id).map_err(|err| graph_error(err, engine))? {
            components.push(ComponentBrief::from(&c));
        }
    }
    let counts = &applied.counts;
    Ok(AnalyzeCodeOutput {
        success: true,
        component_id: anchor.id.clone(),
        component: ComponentBrief::from(&anchor),
        message: "Successfully analyzed and updated knowledge graph".to_owned(),
        language: language.name().to_owned(),
        components_added: counts.added,
        components_updated: counts.updated,
        components_unchanged: counts.unchanged,
        components_removed: counts.removed,
        relationships: counts.relationships + resolved,
        components,
        syntax_errors: analysis.has_syntax_errors,
        calls,
    })
}

/// The file's server, when its calls can come from it: calls wanted from servers (`[graph]
/// calls` is not `syntax`), a server installed for the language, functions to ask about, and
/// `code_text` equal to what the server will read (the open buffer, else the file on disk).
/// Otherwise why not.
fn server_job(
    engine: &Engine,
    relative: &str,
    language: Language,
    code_text: &str,
    analysis: &crate::graph::analyze::FileAnalysis,
) -> Result<(CallsJob, String), String> {
    let config = engine.workspace().config();
    if CallsMode::parse(&config.graph.calls) == Some(CallsMode::Syntax) {
        return Err("[graph] calls = \"syntax\"".to_owned());
    }
    let callers =
        analysis.symbols.iter().any(|s| matches!(s.component_type, ComponentType::Function | ComponentType::Method));
    if !callers {
        return Err("no functions or methods".to_owned());
    }
    let server = engine.backends().spec_for(language).map_err(|err| err.to_string())?.0.name.clone();
    let resolved = engine.workspace().resolve(relative).map_err(|err| err.to_string())?;
    let current = engine
        .documents()
        .text(&resolved.id(), config.limits.max_file_bytes)
        .map_err(|_| format!("{relative} is not on disk, so {server} cannot see this code"))?;
    if current.text != code_text {
        return Err(format!("code_text is not {relative}'s current text, which is what {server} sees"));
    }
    Ok((CallsJob { relative: resolved.relative.clone(), absolute: resolved.absolute, language }, server))
}

fn language_by_name(name: &str) -> Result<Language, ToolError> {
    let wanted = name.trim().to_ascii_lowercase();
    Language::ALL
        .into_iter()
        .find(|l| l.name() == wanted)
        .or_else(|| Language::from_extension(&wanted))
        .ok_or_else(|| unsupported(name))
}

fn unsupported(name: &str) -> ToolError {
    let supported: Vec<&str> = Language::ALL.into_iter().filter(|l| analyses(*l)).map(|l| l.name()).collect();
    ToolError::new(
        ErrorCode::ParseLanguageUnsupported,
        format!("analyze_code cannot extract components from {name}"),
        format!("Pass a file_path or language of one of: {}.", supported.join(", ")),
    )
    .with("language", name)
    .with("supported", supported)
}

fn extension(language: Language) -> &'static str {
    match language {
        Language::Go => "go",
        Language::TypeScript => "ts",
        Language::Tsx => "tsx",
        Language::JavaScript => "js",
        Language::Python => "py",
        Language::C => "c",
        Language::Cpp => "cpp",
        Language::Rust => "rs",
        Language::Elixir => "ex",
        Language::Shell => "sh",
        _ => "txt",
    }
}

/// FNV-1a, 64 bits: a stable label for code analysed without a path.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Renders `analyze_code`.
pub fn render_text(output: &AnalyzeCodeOutput) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "{} ({}): {} added, {} updated, {} unchanged, {} removed; {} relationships; component {}\n",
        output.message,
        output.language,
        output.components_added,
        output.components_updated,
        output.components_unchanged,
        output.components_removed,
        output.relationships,
        output.component_id
    );
    for c in &output.components {
        let _ = writeln!(
            out,
            "  {} {} {}:{} {}",
            c.component_type,
            c.name,
            c.file_path.as_deref().unwrap_or(""),
            c.start_line.unwrap_or(0),
            c.id
        );
    }
    match (&output.calls.server, &output.calls.note) {
        (Some(server), _) => out.push_str(&format!("calls from {server}\n")),
        (None, Some(note)) => out.push_str(&format!("calls by name (approximate): {note}\n")),
        (None, None) => {}
    }
    if output.syntax_errors {
        out.push_str("note: the parser found syntax errors; the extraction may be incomplete\n");
    }
    out
}
