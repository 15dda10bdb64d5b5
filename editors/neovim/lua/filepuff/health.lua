-- :checkhealth filepuff — whether the binary is found and runs (its version), the language
-- servers `filepuff doctor --json` reports for the current root, and the agents' socket of the
-- running `filepuff lsp` (from its `filepuff/status` answer: the socket path and whether agents
-- are served on it). Neovim 0.10+ reports through vim.health.start/ok/…, 0.8–0.9 through
-- vim.health.report_*, 0.7 through require("health").report_*.

local M = {}

local report = (function()
  local health = vim.health
  if health and health.start then
    return { start = health.start, ok = health.ok, info = health.info, warn = health.warn, error = health.error }
  end
  health = health or require("health")
  return {
    start = health.report_start,
    ok = health.report_ok,
    info = health.report_info,
    warn = health.report_warn,
    error = health.report_error,
  }
end)()

--- Runs `cmd` (a list); returns its stdout and whether it exited 0.
local function run(cmd)
  local output = vim.fn.system(cmd)
  return output, vim.v.shell_error == 0
end

local SOURCES = {
  setting = "from setup({ cmd = ... })",
  build = "installed by :FilepuffBuild",
  PATH = "found on PATH",
}

local function check_binary(filepuff)
  report.start("filepuff: binary")
  local program = filepuff.command()[1]
  local path = vim.fn.exepath(program)
  if path == "" then
    report.error(string.format("%q is not found (cmd = %s)", program, vim.inspect(filepuff.config.cmd)), {
      "Install filepuff with one of: uv tool install filepuff, pipx install filepuff, npm install -g filepuff,",
      "cargo install --path . in its repository, or :FilepuffBuild (into " .. require("filepuff.build").binary() .. "),",
      'or give its full path: require("filepuff").setup({ cmd = { "/path/to/filepuff" } })',
    })
    return false
  end
  local output, ok = run({ path, "--version" })
  local version = vim.trim(output)
  if not ok or not version:match("^filepuff ") then
    report.error(string.format("%s does not run: `%s --version` said %q", path, path, version))
    return false
  end
  report.ok(string.format("%s (%s) %s", version, path, SOURCES[filepuff.cmd_source] or ""))
  return true
end

--- The root to report on: the running client's, else the cwd's (:checkhealth shows its report in
--- a buffer of its own, so the current buffer says nothing).
local function current_root(filepuff)
  for _, client in ipairs(filepuff.clients()) do
    if client.config.root_dir then return client.config.root_dir end
  end
  return filepuff.root_for(vim.fn.getcwd())
end

local function check_servers(filepuff)
  local root = current_root(filepuff)
  report.start("filepuff: language servers (filepuff doctor, root " .. root .. ")")
  local cmd = vim.deepcopy(filepuff.command())
  vim.list_extend(cmd, { "--root", root, "doctor", "--json" })
  local output, ok = run(cmd)
  local decoded_ok, entries = pcall(vim.fn.json_decode, output)
  if not ok or not decoded_ok or type(entries) ~= "table" then
    report.error("`" .. table.concat(cmd, " ") .. "` failed: " .. vim.trim(output))
    return
  end
  local serving = 0
  for _, entry in ipairs(entries) do
    local serves = type(entry.serves) == "table" and entry.serves or {}
    local version = type(entry.version) == "string" and entry.version or nil
    if entry.disabled == true then
      report.info(entry.name .. ": disabled in the configuration")
    elseif #serves > 0 then
      serving = serving + 1
      report.ok(string.format("%s %s: serves %s", entry.name, version or "(version unknown)", table.concat(serves, ", ")))
    elseif version then
      report.info(string.format("%s %s: installed, not used (another server comes first for its languages)", entry.name, version))
    else
      local hint = type(entry.install_hint) == "string" and entry.install_hint or nil
      report.info(string.format("%s: not installed (for %s)", entry.name, table.concat(entry.languages or {}, ", ")),
        hint and { "install: " .. hint } or nil)
    end
  end
  if serving == 0 then
    report.warn("no language server is installed for this root: filepuff serves syntax only")
  end
end

local function request_status(client)
  local bufnr = next(client.attached_buffers or {}) or 0
  local answer, err
  if vim.fn.has("nvim-0.11") == 1 then
    answer, err = client:request_sync("filepuff/status", vim.empty_dict(), 5000, bufnr)
  else
    answer, err = client.request_sync("filepuff/status", vim.empty_dict(), 5000, bufnr)
  end
  if not answer or answer.err then return nil, vim.inspect(answer and answer.err or err) end
  return answer.result, nil
end

local function check_socket(filepuff)
  report.start("filepuff: agents' socket")
  local clients = {}
  for _, client in ipairs(filepuff.clients()) do
    local stopped = require("filepuff").is_stopped(client)
    if not stopped then table.insert(clients, client) end
  end
  if #clients == 0 then
    report.warn("filepuff lsp is not running in this Neovim: agents (filepuff mcp --root ROOT) read the files on disk", {
      "Open a file of a served filetype (" .. table.concat(filepuff.config.filetypes, ", ") .. ")",
    })
    return
  end
  for _, client in ipairs(clients) do
    local status, err = request_status(client)
    -- Without a root marker Neovim 0.11 starts the client with no root_dir; filepuff then takes
    -- its working directory, and says which in its status.
    local agents_status = status and type(status.agents) == "table" and status.agents or {}
    local root = client.config.root_dir or (type(agents_status.root) == "string" and agents_status.root) or "?"
    if not status then
      report.error(string.format("filepuff lsp (client %d, root %s) did not answer filepuff/status: %s", client.id, root, err))
    else
      local agents = type(status.agents) == "table" and status.agents or {}
      local socket = type(agents.socket) == "string" and agents.socket or "?"
      if agents.serving == true then
        report.ok(string.format("root %s: agents attach on %s (filepuff mcp --root %s)", root, socket, root))
      else
        report.warn(string.format("root %s: not serving agents on %s yet", root, socket), {
          "It starts once Neovim has opened its buffers; another filepuff lsp of this root may still own it",
        })
      end
    end
  end
end

function M.check()
  local filepuff = require("filepuff")
  if check_binary(filepuff) then
    check_servers(filepuff)
  end
  check_socket(filepuff)
end

return M
