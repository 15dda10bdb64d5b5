-- The plugin's build helper: installs the filepuff binary from the checkout the plugin sits in
-- (editors/neovim of the filepuff repository) with `cargo install --locked --path REPO --root
-- DIR`, DIR being stdpath("data")/filepuff, where the plugin looks before PATH. Run by
-- :FilepuffBuild, or as lazy.nvim's `build` (:help filepuff-install). A binary installed any
-- other way (uv tool install filepuff, pipx, npm install -g filepuff, cargo install) is found
-- on PATH instead.

local M = {}

--- Where the helper installs: the `--root` of `cargo install` (the binary is `bin/filepuff`).
function M.install_root()
  return vim.fn.stdpath("data") .. "/filepuff"
end

--- The binary the helper installs.
function M.binary()
  return M.install_root() .. "/bin/filepuff"
end

--- The filepuff checkout holding this plugin (two levels above editors/neovim), or nil.
function M.repository()
  local source = debug.getinfo(1, "S").source:gsub("^@", "")
  -- .../editors/neovim/lua/filepuff/build.lua → the repository root, five levels up.
  local repo = vim.fn.fnamemodify(source, ":p:h:h:h:h:h")
  local manifest = repo .. "/Cargo.toml"
  if vim.fn.filereadable(manifest) == 1 and table.concat(vim.fn.readfile(manifest, "", 10), "\n"):match('name = "filepuff"') then
    return repo
  end
  return nil
end

--- Installs the binary; returns its path, or nil and what went wrong (and what to do).
--- `opts.cargo_args`: more arguments for `cargo install` (e.g. { "--debug" }).
function M.run(opts)
  opts = opts or {}
  local repo = M.repository()
  if not repo then
    return nil, "this plugin is not inside a filepuff checkout: install filepuff with `uv tool install filepuff`, "
      .. "`pipx install filepuff`, `npm install -g filepuff` or `cargo install`, and the plugin finds it on PATH"
  end
  if vim.fn.executable("cargo") ~= 1 then
    return nil, "cargo is not installed (https://rustup.rs), or install filepuff from PyPI or npm and put it on PATH"
  end
  local cmd = { "cargo", "install", "--locked", "--path", repo, "--root", M.install_root() }
  vim.list_extend(cmd, opts.cargo_args or {})
  local output = vim.fn.system(cmd)
  if vim.v.shell_error ~= 0 then
    return nil, "`" .. table.concat(cmd, " ") .. "` failed:\n" .. output
  end
  return M.binary(), nil
end

return M
