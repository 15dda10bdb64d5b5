//! The graph toolset on the MCP face: thirteen tools over [`crate::tools::graph`], in their own
//! router (`McpServer::graph_tool_router`) that `McpServer::new` adds to the core one.

use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{ErrorData, tool, tool_router};

use super::McpServer;
use crate::tools::graph::{self as graph, render};

#[tool_router(router = graph_tool_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        description = "Add a code component (file, class, function, method, variable, module, interface) to the persistent knowledge graph. status: planned (default), partial, implemented. Returns its UUID. The graph is stored in SQLite under the workspace (.filepuff/graph.db) and survives restarts.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        input_schema = schema_for_type::<graph::AddComponentParams>(),
        output_schema = schema_for_output::<graph::AddComponentOutput>()
    )]
    async fn add_component(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::add_component, render::add_component).await)
    }

    #[tool(
        description = "Update a component's code_text, status and/or description; bumps its version once. A status change is recorded in its status history.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        input_schema = schema_for_type::<graph::UpdateComponentParams>(),
        output_schema = schema_for_output::<graph::UpdateComponentOutput>()
    )]
    async fn update_component(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::update_component, render::update_component).await)
    }

    #[tool(
        description = "Add a relationship between two components: imports, calls, inherits, contains, depends_on or implements (source -> target; 'A depends_on B' puts B first in plans). Adding the same source, target and type again replaces its metadata.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::AddRelationshipParams>(),
        output_schema = schema_for_output::<graph::AddRelationshipOutput>()
    )]
    async fn add_relationship(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::add_relationship, render::add_relationship).await)
    }

    #[tool(
        description = "Get a component by ID or exact name: code, description, file and 1-based lines, version, metadata, status history; include_related adds its direct relationships (both directions).",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::GetComponentParams>(),
        output_schema = schema_for_output::<graph::GetComponentOutput>()
    )]
    async fn get_component(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::get_component, render::get_component).await)
    }

    #[tool(
        description = "Find components related to a component, breadth-first up to depth levels (default 1), following relationships in both directions, each component once (cycles are not re-entered); relationship_types filters which relationships are followed.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::FindRelatedParams>(),
        output_schema = schema_for_output::<graph::FindRelatedOutput>()
    )]
    async fn find_related_components(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::find_related_components, render::find_related_components).await)
    }

    #[tool(
        description = "Ranked search of the knowledge graph (SQLite FTS5, BM25) over component names (camelCase and snake_case split), descriptions and code; no network. component_types filters; limit default 10.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::SearchCodeParams>(),
        output_schema = schema_for_output::<graph::SearchCodeOutput>()
    )]
    async fn search_code(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::search_code, render::search_code).await)
    }

    #[tool(
        description = "Set a component's implementation status (planned, partial, implemented) with optional notes; the change is kept in its status history.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        input_schema = schema_for_type::<graph::UpdateStatusParams>(),
        output_schema = schema_for_output::<graph::UpdateStatusOutput>()
    )]
    async fn update_status(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::update_status, render::update_status).await)
    }

    #[tool(
        description = "Implementation status across the project: total components, counts per status, implementation percentage ((implemented + partial/2) / total), the components (first 200). filters: component_type, status, file_path (file or directory), name (substring); grouping: type, status, file or language.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::ProjectStatusParams>(),
        output_schema = schema_for_output::<graph::ProjectStatusOutput>()
    )]
    async fn get_project_status(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::get_project_status, render::get_project_status).await)
    }

    #[tool(
        description = "Suggest the next components to implement (not yet implemented). priority_type dependencies (default): those whose dependencies are all implemented first, then those blocking the most others; complexity: the smallest first. limit default 5.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::FindNextTasksParams>(),
        output_schema = schema_for_output::<graph::FindNextTasksOutput>()
    )]
    async fn find_next_tasks(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::find_next_tasks, render::find_next_tasks).await)
    }

    #[tool(
        description = "Assemble minimal context for a task within max_tokens (default 4000, counted with the cl100k_base tokenizer): primary components in full (relevant_components, else the best search matches for task_description), related components as summaries (signature + doc), then names only; the result says what was left out.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::PrepareContextParams>(),
        output_schema = schema_for_output::<graph::PrepareContextOutput>()
    )]
    async fn prepare_context(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::prepare_context, render::prepare_context).await)
    }

    #[tool(
        description = "Context to continue implementing a component within max_tokens (default 4000, cl100k_base): the component in full, its dependencies, implemented code nearby in full, its dependents as summaries, then names; says what was left out.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::ContinueImplementationParams>(),
        output_schema = schema_for_output::<graph::ContinueImplementationOutput>()
    )]
    async fn continue_implementation(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::continue_implementation, render::continue_implementation).await)
    }

    #[tool(
        description = "Plan the implementation of pending components (component_ids, default all not implemented, plus their unimplemented dependencies up to dependencies_depth, default 1): topological order in dependency groups and steps. Dependency cycles are reported (cycles, has_cycles) and planned together, never looped on.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::ImplementationPlanParams>(),
        output_schema = schema_for_output::<graph::ImplementationPlanOutput>()
    )]
    async fn get_implementation_plan(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::get_implementation_plan, render::get_implementation_plan).await)
    }

    #[tool(
        description = "Analyze code with tree-sitter (Go, Python, TypeScript/JavaScript, C/C++, Rust, Elixir, shell) and update the knowledge graph: components for the file and its declarations, contains/imports/inherits/implements relationships, and calls: from the file's language server (call hierarchy, resolved across files and packages) when code_text is the file's current text and a server is installed, else by name (marked approximate); `calls` in the result says which. Re-analysing the same file_path updates components in place (stable ids), never duplicates.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<graph::AnalyzeCodeParams>(),
        output_schema = schema_for_output::<graph::AnalyzeCodeOutput>()
    )]
    async fn analyze_code(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, graph::analyze_code, render::analyze_code).await)
    }
}
