-- Driven by test_neovim.py inside `nvim --headless --clean` (0.7.2 and 0.11): loads the plugin
-- with cmd = { $FILEPUFF_BIN } (none when empty), opens $FILEPUFF_TEST_FILE (if set) and waits, at most 60 s, until
-- its filepuff lsp serves agents (filepuff/status), then writes `:checkhealth filepuff` to
-- $FILEPUFF_TEST_OUT and quits.
vim.opt.runtimepath:prepend(os.getenv("FILEPUFF_PLUGIN"))
vim.cmd("runtime plugin/filepuff.lua")
local filepuff = require("filepuff")
-- FILEPUFF_TEST_BUILD=1: install the binary with the build helper first (cargo install --debug,
-- reusing the checkout's target/). An empty FILEPUFF_BIN: no cmd, so the plugin resolves it.
if os.getenv("FILEPUFF_TEST_BUILD") == "1" then
  local built, err = require("filepuff.build").run({ cargo_args = { "--debug" } })
  if not built then error(err) end
end
local bin = os.getenv("FILEPUFF_BIN") or ""
filepuff.setup(bin ~= "" and { cmd = { bin } } or {})

local function serving()
  local client = filepuff.clients()[1]
  if not client then return false end
  local ok, answer
  if vim.fn.has("nvim-0.11") == 1 then
    ok, answer = pcall(client.request_sync, client, "filepuff/status", vim.empty_dict(), 2000, 0)
  else
    ok, answer = pcall(client.request_sync, "filepuff/status", vim.empty_dict(), 2000, 0)
  end
  return ok and answer and answer.result and answer.result.agents and answer.result.agents.serving == true
end

local file = os.getenv("FILEPUFF_TEST_FILE") or ""
if file ~= "" then
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  vim.wait(60000, serving, 100)
end
vim.cmd("checkhealth filepuff")
vim.cmd("write! " .. vim.fn.fnameescape(os.getenv("FILEPUFF_TEST_OUT")))
vim.cmd("qall!")
