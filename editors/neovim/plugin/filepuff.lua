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
