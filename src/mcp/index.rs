//! MCP registration of the `index` toolset: `files_list`, `files_search`, `files_get_info`.

use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{ErrorData, tool, tool_router};

use super::McpServer;
use crate::tools::index::{
    self, FileInfo, FilesGetInfoParams, FilesListOutput, FilesListParams, FilesSearchOutput, FilesSearchParams,
};

#[tool_router(router = index_tool_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        description = "List project files and directories (all files, not only code) with metadata: filePath, kind, fileName, extension, language, mimeType, size, fileCount (files inside a directory, any depth). Filters: directory (entries under it), extension, language, filter (path substring); limit (default 50) and offset to continue. From the file index (kept fresh by a file watcher; honours .gitignore).",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FilesListParams>(),
        output_schema = schema_for_output::<FilesListOutput>()
    )]
    async fn files_list(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, index::files_list, index::render_list).await)
    }

    #[tool(
        description = "Ranked search over all project files by path and name (lexical, not embeddings): the query's words are matched against path segments split at camelCase and snake_case, exactly or by prefix/typo/subsequence, weighted by BM25 IDF and path length; score 0-1 = the IDF-weighted share of query words found. topK (default 10), minScore (default 0.3). Returns filePath, fileName, extension, language, size, score.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FilesSearchParams>(),
        output_schema = schema_for_output::<FilesSearchOutput>()
    )]
    async fn files_search(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, index::files_search, index::render_search).await)
    }

    #[tool(
        description = "Full metadata of one file or directory (filePath relative to the root): filePath, kind, fileName, directory, extension, language, mimeType, size, fileCount, mtime (ISO 8601 UTC).",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<FilesGetInfoParams>(),
        output_schema = schema_for_output::<FileInfo>()
    )]
    async fn files_get_info(&self, Parameters(arguments): Parameters<JsonObject>) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, index::files_get_info, index::render_info).await)
    }
}
