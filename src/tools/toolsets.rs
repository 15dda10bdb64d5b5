//! Toolsets: the one table that says which toolset every tool belongs to, and the selection of
//! toolsets a server serves (`--toolsets`, `[mcp] toolsets`).
//!
//! Tools not built yet (the LSP tools, the graph tools) are listed all the same, so that a
//! selection and `filepuff tools` mean the same thing before and after they arrive.

use std::collections::BTreeSet;

/// A group of tools, switched on or off together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Toolset {
    /// Search, read, structural query, edits, and (with the LSP work) navigation.
    Core,
    /// Language-server tools beyond the core navigation.
    Lsp,
    /// Octocode-compatible local exploration (camelCase names).
    Local,
    /// The file index: metadata listing and ranked path/name search.
    Index,
    /// The persistent knowledge graph of components.
    Graph,
}

impl Toolset {
    /// Every toolset, in a stable order.
    pub const ALL: [Toolset; 5] = [Toolset::Core, Toolset::Lsp, Toolset::Local, Toolset::Index, Toolset::Graph];

    /// The name used on the command line and in `filepuff.toml`.
    pub fn name(self) -> &'static str {
        match self {
            Toolset::Core => "core",
            Toolset::Lsp => "lsp",
            Toolset::Local => "local",
            Toolset::Index => "index",
            Toolset::Graph => "graph",
        }
    }

    /// Parses a toolset name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Toolset> {
        Toolset::ALL.into_iter().find(|set| set.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// Every tool name and its toolset. Names are exactly the wire names (Octocode's are camelCase).
pub const TOOLS: &[(&str, Toolset)] = &[
    ("ping", Toolset::Core),
    ("file_search", Toolset::Core),
    ("file_read", Toolset::Core),
    ("ast_query", Toolset::Core),
    ("edit_preview", Toolset::Core),
    ("edit_apply", Toolset::Core),
    ("symbol_at", Toolset::Core),
    ("find_definition", Toolset::Core),
    ("find_references", Toolset::Core),
    ("show_in_editor", Toolset::Core),
    ("editor_state", Toolset::Core),
    ("hover", Toolset::Lsp),
    ("document_symbols", Toolset::Lsp),
    ("workspace_symbols", Toolset::Lsp),
    ("diagnostics", Toolset::Lsp),
    ("rename_symbol", Toolset::Lsp),
    ("call_hierarchy", Toolset::Lsp),
    ("localViewStructure", Toolset::Local),
    ("localSearchCode", Toolset::Local),
    ("localGetFileContent", Toolset::Local),
    ("localFindFiles", Toolset::Local),
    ("files_list", Toolset::Index),
    ("files_search", Toolset::Index),
    ("files_get_info", Toolset::Index),
    ("add_component", Toolset::Graph),
    ("update_component", Toolset::Graph),
    ("add_relationship", Toolset::Graph),
    ("get_component", Toolset::Graph),
    ("find_related_components", Toolset::Graph),
    ("search_code", Toolset::Graph),
    ("update_status", Toolset::Graph),
    ("get_project_status", Toolset::Graph),
    ("find_next_tasks", Toolset::Graph),
    ("prepare_context", Toolset::Graph),
    ("continue_implementation", Toolset::Graph),
    ("get_implementation_plan", Toolset::Graph),
    ("analyze_code", Toolset::Graph),
];

/// The toolset of a tool, `None` for a name not in [`TOOLS`].
pub fn toolset_of(tool: &str) -> Option<Toolset> {
    TOOLS.iter().find(|(name, _)| *name == tool).map(|(_, set)| *set)
}

/// The toolsets served when neither `--toolsets` nor `[mcp] toolsets` says otherwise: `core`
/// and `lsp`. The others repeat what these do under another vocabulary (`local`: Octocode's
/// names for search/read/find; `index`: a file index) or are large and stateful (`graph`, 13
/// tools), and every listed tool costs the agent context on every turn, used or not.
pub const DEFAULT_TOOLSETS: [Toolset; 2] = [Toolset::Core, Toolset::Lsp];

/// A set of enabled toolsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsetSelection {
    enabled: BTreeSet<Toolset>,
}

impl Default for ToolsetSelection {
    fn default() -> Self {
        ToolsetSelection { enabled: DEFAULT_TOOLSETS.into_iter().collect() }
    }
}

impl ToolsetSelection {
    /// Every toolset.
    pub fn all() -> ToolsetSelection {
        ToolsetSelection { enabled: Toolset::ALL.into_iter().collect() }
    }

    /// Parses names such as `["core", "local"]`; `all` selects every toolset, `default` the
    /// defaults. Errors: the first unknown name, with the valid ones.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<ToolsetSelection, String> {
        let mut enabled = BTreeSet::new();
        for name in names {
            let name = name.as_ref().trim();
            match name {
                "" => {}
                "all" => enabled.extend(Toolset::ALL),
                "default" => enabled.extend(DEFAULT_TOOLSETS),
                _ => match Toolset::from_name(name) {
                    Some(set) => {
                        enabled.insert(set);
                    }
                    None => {
                        let valid: Vec<&str> = Toolset::ALL.iter().map(|s| s.name()).collect();
                        return Err(format!(
                            "unknown toolset {name:?}; valid toolsets: {}, all, default",
                            valid.join(", ")
                        ));
                    }
                },
            }
        }
        Ok(ToolsetSelection { enabled })
    }

    /// Parses a comma-separated list (`core,local`).
    pub fn parse_list(list: &str) -> Result<ToolsetSelection, String> {
        ToolsetSelection::parse(&list.split(',').collect::<Vec<_>>())
    }

    /// Whether `set` is enabled.
    pub fn contains(&self, set: Toolset) -> bool {
        self.enabled.contains(&set)
    }

    /// Whether `tool` is served: its toolset is enabled. A tool missing from [`TOOLS`] is served
    /// only when every toolset is on (a new tool nobody classified yet is not hidden by
    /// accident in a full selection, nor leaked into a narrow one).
    pub fn serves(&self, tool: &str) -> bool {
        match toolset_of(tool) {
            Some(set) => self.contains(set),
            None => self.enabled.len() == Toolset::ALL.len(),
        }
    }

    /// The enabled toolsets' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.enabled.iter().map(|set| set.name()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_toolset_and_names_are_unique() {
        let mut seen = BTreeSet::new();
        for (name, _) in TOOLS {
            assert!(seen.insert(*name), "{name} is listed twice");
        }
        assert_eq!(toolset_of("localSearchCode"), Some(Toolset::Local));
        assert_eq!(toolset_of("files_search"), Some(Toolset::Index));
        assert_eq!(toolset_of("analyze_code"), Some(Toolset::Graph));
        assert_eq!(toolset_of("nope"), None);
    }

    #[test]
    fn parsing_selections() {
        let selection = ToolsetSelection::parse_list("core, local").unwrap();
        assert_eq!(selection.names(), ["core", "local"]);
        assert!(selection.serves("file_read") && selection.serves("localFindFiles"));
        assert!(!selection.serves("files_list") && !selection.serves("unclassified"));
        assert_eq!(ToolsetSelection::parse_list("all").unwrap(), ToolsetSelection::all());
        assert!(ToolsetSelection::all().serves("unclassified"));
        assert_eq!(ToolsetSelection::parse_list("default").unwrap(), ToolsetSelection::default());
        let err = ToolsetSelection::parse_list("core,lcoal").unwrap_err();
        assert!(err.contains("lcoal") && err.contains("index"), "{err}");
    }
}
