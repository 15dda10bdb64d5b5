-- Driven by test_neovim.py inside `nvim --headless --clean`: loads editors/neovim as a plugin
-- manager would, calls require("filepuff").setup() as docs/editors.md shows, opens main.go, waits
-- for the client, asks for a definition, makes an unsaved change, then reports (JSON in
-- $FILEPUFF_TEST_OUT) and stays open until the test has checked the agent's view
-- ($FILEPUFF_TEST_DONE appears), so the Engine with the unsaved buffer stays alive.
local out = os.getenv("FILEPUFF_TEST_OUT")
local done = os.getenv("FILEPUFF_TEST_DONE")

local function report(result)
  local file = assert(io.open(out .. ".tmp", "w"))
  file:write(vim.fn.json_encode(result))
  file:close()
  os.rename(out .. ".tmp", out)
end

local function run()
  vim.opt.runtimepath:prepend(os.getenv("FILEPUFF_PLUGIN"))
  vim.cmd("runtime plugin/filepuff.lua")
  require("filepuff").setup({
    cmd = { os.getenv("FILEPUFF_BIN") },
    env = { FILEPUFF_LOG = "info" },
  })
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("FILEPUFF_TEST_FILE")))
  local filepuff = require("filepuff")
  assert(vim.wait(30000, function() return #vim.lsp.buf_get_clients(0) > 0 end, 50), "no client attached")
  local client = filepuff.clients()[1]
  assert(client, "no filepuff client")
  assert(vim.wait(30000, function() return client.initialized end, 50), "the client did not initialize")

  -- The cursor on `Hello` in the line with emoji: columns are bytes here, UTF-16 on the wire.
  local line = vim.fn.search("greet.Shout(", "n")
  local text = vim.api.nvim_buf_get_lines(0, line - 1, line, false)[1]
  local col = assert(text:find("Hello", 1, true))
  vim.api.nvim_win_set_cursor(0, { line, col }) -- 0-based byte column: on the `e`
  local params = vim.lsp.util.make_position_params()
  local location
  local deadline = vim.loop.now() + 60000
  while location == nil and vim.loop.now() < deadline do
    local answers = vim.lsp.buf_request_sync(0, "textDocument/definition", params, 10000) or {}
    for _, answer in pairs(answers) do
      local result = answer.result
      if result and result.uri then result = { result } end
      if result and result[1] then
        local first = result[1]
        location = { uri = first.uri or first.targetUri, range = first.range or first.targetSelectionRange }
      end
    end
    if location == nil then vim.wait(250) end
  end

  -- An unsaved change: a new first line.
  vim.api.nvim_buf_set_lines(0, 0, 0, false, { "// unsaved from neovim 👋" })
  local changed_tick = vim.api.nvim_buf_get_changedtick(0)
  vim.wait(500) -- the client's didChange debounce
  vim.lsp.buf_request_sync(0, "textDocument/hover", vim.lsp.util.make_position_params(), 5000)

  report({
    version = vim.version(),
    position = params.position,
    location = location,
    root = client.config.root_dir,
    changedtick = changed_tick,
    text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n") .. "\n",
    mcp = filepuff.mcp_config(),
    mcp_command_output = vim.fn.execute("FilepuffMcpConfig"),
    doctor = filepuff.doctor_lines(),
  })
  assert(vim.wait(120000, function() return vim.loop.fs_stat(done) ~= nil end, 100), "the test never finished")
end

local ok, err = pcall(run)
if not ok then
  report({ error = tostring(err) })
  vim.cmd("cquit 1")
end
vim.cmd("qall!")
