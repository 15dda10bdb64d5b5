//! MCP registration of the `local` toolset: Octocode's four local tools, camelCase names kept.

use rmcp::handler::server::tool::{schema_for_output, schema_for_type};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{ErrorData, tool, tool_router};

use super::McpServer;
use crate::tools::local::{
    self, Batch, BatchOutput, FindFilesQuery, FindFilesResult, GetFileContentQuery, GetFileContentResult,
    SearchCodeQuery, SearchCodeResult, ViewStructureQuery, ViewStructureResult,
};
use crate::tools::render;

#[tool_router(router = local_tool_router, vis = "pub(crate)")]
impl McpServer {
    #[tool(
        name = "localViewStructure",
        description = "Explore a local directory's structure (Octocode-compatible). depth 1-5 (default 1), entriesPerPage (default 20) + entryPageNumber, details (sizes), hidden (dotfiles), extensions, pattern (name glob or substring), filesOnly/directoriesOnly, sortBy name|size|time|extension, summary, showFileLastModified. Honours .gitignore. Batch up to 5 queries with `queries`; each result has status hasResults|empty|error and hints.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<Batch<ViewStructureQuery>>(),
        output_schema = schema_for_output::<BatchOutput<ViewStructureResult>>()
    )]
    async fn local_view_structure(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, local::local_view_structure, render::local).await)
    }

    #[tool(
        name = "localSearchCode",
        description = "Fast pattern search (ripgrep's engine in process; Octocode-compatible). pattern (or searchText; regex unless fixedString) + path; filesOnly for discovery; type, include/exclude globs, excludeDir, noIgnore; smartCase by default (caseSensitive/caseInsensitive), wholeWord, multiline; filesPerPage (default 10, max 20) + filePageNumber, matchesPerPage (matching rows per file, default 10), contextLines, matchContentLength (default 200). Paths are relative to the workspace root; files have totalMatchRows/returnedMatchRows; each row has a 1-based line, a 0-based UTF-16 column (as Octocode) and location.charOffset/charLength in BYTES of the file. Open editor buffers are searched in their unsaved text. Batch up to 5 queries with `queries`.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<Batch<SearchCodeQuery>>(),
        output_schema = schema_for_output::<BatchOutput<SearchCodeResult>>()
    )]
    async fn local_search_code(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, local::local_search_code, render::local).await)
    }

    #[tool(
        name = "localGetFileContent",
        description = "Read a local file with one targeted strategy (Octocode-compatible): matchString (+ matchStringContextLines 1-50, default 5; matchStringIsRegex; matchStringCaseSensitive), or startLine/endLine (1-based), or charOffset/charLength in BYTES (windows never split a character; nextCharOffset continues), or fullContent (small files). Open editor buffers are read in their unsaved text. Output is bounded; hints say how to continue. Batch up to 5 queries with `queries`.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<Batch<GetFileContentQuery>>(),
        output_schema = schema_for_output::<BatchOutput<GetFileContentResult>>()
    )]
    async fn local_get_file_content(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, local::local_get_file_content, render::local).await)
    }

    #[tool(
        name = "localFindFiles",
        description = "Find files by metadata (Octocode-compatible, like find): name/iname/names globs, type f|d|l, modifiedWithin/modifiedBefore/accessedWithin (30m, 2h, 7d), sizeGreater/sizeLess (K/M/G, K=1024), excludeDir, minDepth/maxDepth, regex (name), pathPattern, empty, executable; newest first; filesPerPage (default 20) + filePageNumber; details adds size and permissions. Honours .gitignore. Batch up to 5 queries with `queries`.",
        annotations(read_only_hint = true, open_world_hint = false),
        input_schema = schema_for_type::<Batch<FindFilesQuery>>(),
        output_schema = schema_for_output::<BatchOutput<FindFilesResult>>()
    )]
    async fn local_find_files(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(arguments, local::local_find_files, render::local).await)
    }
}
