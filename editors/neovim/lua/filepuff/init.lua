-- filepuff for Neovim: starts `filepuff lsp` (one language server in front of gopls, clangd,
-- basedpyright, ruff, typescript-language-server) for the configured filetypes, with the root from
-- markers, and tells agents how to attach to the same Engine (`filepuff mcp --root ROOT`); reports
-- what the person looks at (filepuff.focus) and asks them about agents' edits that need their
-- confirmation (filepuff.confirm).
-- Neovim 0.11+: vim.lsp.config/vim.lsp.enable; 0.8–0.10: vim.lsp.start; 0.7: vim.lsp.start_client
-- and vim.lsp.buf_attach_client.

local M = {}

local NAME = "filepuff"

M.defaults = {
  -- The binary and any arguments before `lsp` (a path, or a name on PATH). nil: the binary
  -- :FilepuffBuild installed, else `filepuff` on PATH (M.resolve_cmd).
  cmd = nil,
  filetypes = { "go", "python", "c", "cpp", "typescript", "typescriptreact", "javascript", "javascriptreact" },
  -- The nearest ancestor of the file holding one of these is the workspace root.
  root_markers = { "filepuff.toml", ".git", "go.work", "go.mod", "pyproject.toml", "package.json",
                   "compile_commands.json", "compile_flags.txt", ".clangd" },
  -- Server overrides, in the shapes of filepuff.toml's [servers.NAME] and [languages.NAME]:
  -- sent as initializationOptions (docs/lsp.md), e.g. { gopls = { command = { "/opt/gopls" } } }.
  servers = nil,
  languages = nil,
  -- Extra environment for filepuff and the servers it starts, e.g. { FILEPUFF_LOG = "info" }.
  env = nil,
  on_attach = nil,
  capabilities = nil,
  -- Tell filepuff (and so agents, through the editor_state tool) which file the person looks at,
  -- with cursor, selection and visible lines (`filepuff/editorFocus`, debounced).
  report_focus = true,
}

M.config = vim.deepcopy(M.defaults)

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

--- The command to run and where it came from: `cmd` when given ("setting"); else the binary the
--- build helper installed ("build", filepuff.build); else `filepuff` on PATH ("PATH", its full
--- path when found). The same order as the VS Code extension's (setting, bundled, PATH).
function M.resolve_cmd(cmd)
  if type(cmd) == "table" and #cmd > 0 then
    cmd = vim.deepcopy(cmd)
    -- `{ "filepuff", "lsp" }`, as a bare vim.lsp.start({ cmd = ... }) has it: the subcommand is
    -- the plugin's to add (M.lsp_cmd), and :FilepuffMcpConfig's `mcp` would follow it. Kept
    -- when it is an option's value (`--root lsp`).
    if #cmd > 1 and cmd[#cmd] == "lsp" and not vim.startswith(cmd[#cmd - 1], "-") then table.remove(cmd) end
    return cmd, "setting"
  end
  local built = require("filepuff.build").binary()
  if vim.fn.executable(built) == 1 then return { built }, "build" end
  local found = vim.fn.exepath("filepuff")
  return { found ~= "" and found or "filepuff" }, "PATH"
end

--- The resolved command (binary and arguments before the subcommand), resolving on first use
--- when setup() has not run.
function M.command()
  if not M.config.cmd then M.config.cmd, M.cmd_source = M.resolve_cmd(nil) end
  return M.config.cmd
end

--- The `initializationOptions` filepuff lsp takes, or nil when nothing is overridden.
function M.init_options()
  local options = {}
  if M.config.servers and next(M.config.servers) then options.servers = M.config.servers end
  if M.config.languages and next(M.config.languages) then options.languages = M.config.languages end
  if next(options) then return options end
  return nil
end

--- The `filepuff lsp` command line.
function M.lsp_cmd()
  local cmd = vim.deepcopy(M.command())
  table.insert(cmd, "lsp")
  return cmd
end

--- The workspace root for a directory: its nearest ancestor (itself included) holding a root
--- marker, else the cwd.
function M.root_for(dir)
  while true do
    for _, marker in ipairs(M.config.root_markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then return dir end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then return vim.fn.getcwd() end
    dir = parent
  end
end

--- The client capabilities: Neovim's, the user's, and what the plugin adds — versioned
--- `documentChanges` and `changeAnnotationSupport`, so filepuff can send an agent's edit that needs
--- the person's confirmation (handled by filepuff.confirm).
function M.capabilities()
  local added = { workspace = { workspaceEdit = { documentChanges = true, changeAnnotationSupport = { groupsOnLabel = false } } } }
  return vim.tbl_deep_extend("force", vim.lsp.protocol.make_client_capabilities(), M.config.capabilities or {}, added)
end

--- The handlers the plugin sets on its client.
function M.handlers()
  return { ["workspace/applyEdit"] = require("filepuff.confirm").handler }
end

--- The workspace root of a buffer: the nearest ancestor holding a root marker, else the cwd.
function M.root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr or 0)
  return M.root_for(name ~= "" and vim.fn.fnamemodify(name, ":p:h") or vim.fn.getcwd())
end

--- The client configuration for a root (what vim.lsp.start / start_client take).
function M.client_config(root)
  return {
    name = NAME,
    cmd = M.lsp_cmd(),
    cmd_env = M.config.env,
    root_dir = root,
    init_options = M.init_options(),
    capabilities = M.capabilities(),
    handlers = M.handlers(),
    on_attach = M.config.on_attach,
  }
end

--- The running filepuff clients.
function M.clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ name = NAME }) or vim.lsp.get_active_clients()
  local found = {}
  for _, client in ipairs(all) do
    if client.name == NAME then table.insert(found, client) end
  end
  return found
end

local function client_for_root(root)
  for _, client in ipairs(M.clients()) do
    if client.config.root_dir == root and not M.is_stopped(client) then return client end
  end
  return nil
end

--- Starts (or reuses) the client of the buffer's root and attaches it to the buffer.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.api.nvim_buf_get_option(bufnr, "buftype") ~= "" then return end
  local root = M.root_dir(bufnr)
  if vim.lsp.start then
    -- 0.8+: reuses a client of the same name and root.
    vim.api.nvim_buf_call(bufnr, function()
      vim.lsp.start(M.client_config(root), { bufnr = bufnr })
    end)
    return
  end
  local client = client_for_root(root)
  local id = client and client.id or vim.lsp.start_client(M.client_config(root))
  if id then vim.lsp.buf_attach_client(bufnr, id) end
end

local function filetype_served(bufnr)
  return vim.tbl_contains(M.config.filetypes, vim.api.nvim_buf_get_option(bufnr, "filetype"))
end

--- Configures and enables filepuff. Options: see M.defaults and :help filepuff.
function M.setup(opts)
  M.opts = opts or {}
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  M.config.cmd, M.cmd_source = M.resolve_cmd(opts and opts.cmd)
  if M.config.report_focus then require("filepuff.focus").setup() end
  if vim.lsp.config and vim.lsp.enable and has("0.11") then
    vim.lsp.config(NAME, {
      cmd = M.lsp_cmd(),
      cmd_env = M.config.env,
      filetypes = M.config.filetypes,
      root_markers = M.config.root_markers,
      init_options = M.init_options(),
      capabilities = M.capabilities(),
      handlers = M.handlers(),
      on_attach = M.config.on_attach,
    })
    vim.lsp.enable(NAME)
    return
  end
  local group = vim.api.nvim_create_augroup("filepuff", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args) M.attach(args.buf) end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and filetype_served(bufnr) then M.attach(bufnr) end
  end
end

--- Stops the filepuff clients and starts them again for every open buffer they served.
function M.restart()
  local clients = M.clients()
  local buffers = {}
  for _, client in ipairs(clients) do
    for bufnr in pairs(client.attached_buffers or {}) do buffers[bufnr] = true end
    -- 0.11 has methods (client:stop()); the field functions are deprecated from 0.12.
    if vim.fn.has("nvim-0.11") == 1 then client:stop() else client.stop() end
  end
  -- Wait until each client is gone, not just told to stop (is_stopped() turns true when `exit`
  -- is sent): the new filepuff lsp then finds the agent socket free sooner.
  vim.wait(5000, function()
    for _, client in ipairs(clients) do
      if vim.lsp.get_client_by_id(client.id) ~= nil then return false end
    end
    return true
  end, 50)
  for bufnr in pairs(buffers) do
    if vim.api.nvim_buf_is_loaded(bufnr) then M.attach(bufnr) end
  end
end

--- Runs `filepuff doctor` in the current buffer's root; returns its output lines.
function M.doctor_lines()
  local cmd = vim.deepcopy(M.command())
  vim.list_extend(cmd, { "--root", M.root_dir(0), "doctor" })
  local output = vim.fn.system(cmd)
  return vim.split(output, "\n", { trimempty = true })
end

--- Whether `client` has stopped (`client:is_stopped()` from Neovim 0.11, where the
--- `client.is_stopped()` form is deprecated; the old form before).
function M.is_stopped(client)
  if vim.fn.has("nvim-0.11") == 1 then return client:is_stopped() end
  return client.is_stopped()
end

--- Shows `filepuff doctor` in a scratch buffer named `filepuff://doctor` (replacing the one an
--- earlier call left open).
function M.doctor()
  local lines = M.doctor_lines()
  local previous = vim.fn.bufnr("filepuff://doctor")
  if previous ~= -1 then vim.api.nvim_buf_delete(previous, { force = true }) end
  vim.cmd("botright new")
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(bufnr, "buftype", "nofile")
  vim.api.nvim_buf_set_option(bufnr, "bufhidden", "wipe")
  vim.api.nvim_buf_set_option(bufnr, "modifiable", false)
  vim.api.nvim_buf_set_name(bufnr, "filepuff://doctor")
end

--- The MCP client configuration that attaches an agent to this Neovim's Engine: `filepuff mcp
--- --root ROOT`, ROOT being the running client's workspace (else the current buffer's root).
function M.mcp_config()
  local client = M.clients()[1]
  local root = client and client.config.root_dir or M.root_dir(0)
  local cmd = M.command()
  local program = vim.fn.exepath(cmd[1])
  local args = {}
  for i = 2, #cmd do table.insert(args, cmd[i]) end
  vim.list_extend(args, { "mcp", "--root", root })
  return { mcpServers = { filepuff = { command = program ~= "" and program or cmd[1], args = args } } }
end

return M
