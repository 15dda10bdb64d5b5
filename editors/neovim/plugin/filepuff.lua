-- filepuff's user commands; `require("filepuff").setup()` starts the language server.
if vim.g.loaded_filepuff then return end
vim.g.loaded_filepuff = true

vim.api.nvim_create_user_command("FilepuffDoctor", function() require("filepuff").doctor() end,
  { desc = "Show `filepuff doctor`: the language servers found and what each serves" })
vim.api.nvim_create_user_command("FilepuffRestart", function() require("filepuff").restart() end,
  { desc = "Restart filepuff lsp and re-attach its buffers" })
vim.api.nvim_create_user_command("FilepuffMcpConfig", function()
  print(vim.fn.json_encode(require("filepuff").mcp_config()))
end, { desc = "Print the MCP client config that attaches an agent to this Neovim's Engine" })
vim.api.nvim_create_user_command("FilepuffBuild", function()
  local binary, err = require("filepuff.build").run()
  if not binary then
    vim.notify("filepuff: " .. err, vim.log.levels.ERROR)
    return
  end
  vim.notify("filepuff: installed " .. binary, vim.log.levels.INFO)
  -- Run it now, unless setup({ cmd }) names another binary: set up again, restart the clients.
  local filepuff = require("filepuff")
  if filepuff.opts and filepuff.cmd_source ~= "setting" then
    filepuff.setup(filepuff.opts)
    filepuff.restart()
  end
end, { desc = "Install filepuff from the checkout the plugin sits in (cargo install)" })
