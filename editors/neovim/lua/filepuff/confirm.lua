-- Edits the person approves: filepuff sends an agent's edit made with `confirm: true` as a
-- `workspace/applyEdit` whose change annotations have `needsConfirmation: true` (LSP 3.16
-- "ChangeAnnotation"). This handler shows the edit as a unified diff and asks the person
-- (vim.ui.select: Accept / Decline); a declined edit is answered `applied: false` with a reason
-- and nothing changes. Edits without such an annotation are applied as Neovim always does. Either
-- way an applied edit is an undo step of its own, also when it arrives while the person types.

local M = {}

--- The diff buffer's name, and the choices offered.
M.DIFF_NAME = "filepuff://proposed-edit"
M.ACCEPT = "Accept"
M.DECLINE = "Decline"

--- Whether any change of `edit` (a WorkspaceEdit) carries an annotation that needs confirmation.
function M.needs_confirmation(edit)
  local annotations = edit.changeAnnotations or {}
  local function needs(id)
    local annotation = id and annotations[id]
    return type(annotation) == "table" and annotation.needsConfirmation == true
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if needs(change.annotationId) then return true end
    for _, text_edit in ipairs(change.edits or {}) do
      if needs(text_edit.annotationId) then return true end
    end
  end
  for _, text_edits in pairs(edit.changes or {}) do
    for _, text_edit in ipairs(text_edits) do
      if needs(text_edit.annotationId) then return true end
    end
  end
  return false
end

--- The text edits of `edit` per URI, in order.
local function text_edits(edit)
  local found = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument and change.edits then
      table.insert(found, { uri = change.textDocument.uri, edits = change.edits })
    end
  end
  for uri, edits in pairs(edit.changes or {}) do
    table.insert(found, { uri = uri, edits = edits })
  end
  return found
end

local diff = vim.text and vim.text.diff or vim.diff

--- The unified diff of `edit` against the buffers (loaded from disk when not open), as lines.
function M.diff_lines(edit, encoding)
  local lines = {}
  for _, item in ipairs(text_edits(edit)) do
    local bufnr = vim.uri_to_bufnr(item.uri)
    vim.fn.bufload(bufnr)
    local before = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
    local scratch = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(scratch, 0, -1, false, before)
    vim.lsp.util.apply_text_edits(item.edits, scratch, encoding)
    local after = vim.api.nvim_buf_get_lines(scratch, 0, -1, false)
    vim.api.nvim_buf_delete(scratch, { force = true })
    local name = vim.fn.fnamemodify(vim.uri_to_fname(item.uri), ":.")
    table.insert(lines, "--- a/" .. name)
    table.insert(lines, "+++ b/" .. name)
    local hunks = diff(table.concat(before, "\n") .. "\n", table.concat(after, "\n") .. "\n", { result_type = "unified", ctxlen = 3 })
    vim.list_extend(lines, vim.split(hunks, "\n", { trimempty = true }))
  end
  return lines
end

--- Shows `lines` in a split; returns its window.
local function show(lines)
  local existing = vim.fn.bufnr(M.DIFF_NAME)
  if existing ~= -1 then vim.api.nvim_buf_delete(existing, { force = true }) end
  vim.cmd("botright new")
  local bufnr = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].buftype = "nofile"
  vim.bo[bufnr].bufhidden = "wipe"
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].filetype = "diff"
  vim.api.nvim_buf_set_name(bufnr, M.DIFF_NAME)
  return vim.api.nvim_get_current_win()
end

--- Asks the person with vim.ui.select; returns the choice (nil when dismissed). Inside the
--- coroutine Neovim runs server requests in, an asynchronous vim.ui.select is waited for by
--- yielding, so Neovim stays responsive while the person decides.
function M.ask(prompt)
  local co = coroutine.running()
  local done, choice, waiting = false, nil, false
  vim.ui.select({ M.ACCEPT, M.DECLINE }, { prompt = prompt }, function(item)
    choice, done = item, true
    if waiting then coroutine.resume(co) end
  end)
  if not done then
    if co then
      waiting = true
      coroutine.yield()
    else
      vim.wait(300000, function() return done end, 50)
    end
  end
  return choice
end

--- Ends the current undo block of every loaded buffer `edit` changes, so that an agent's edit
--- is an undo step of its own: made while the person is typing (Insert mode), it would join the
--- person's insert, and one `u` would take both back.
local function break_undo(edit)
  local uris = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then table.insert(uris, change.textDocument.uri) end
  end
  for uri in pairs(edit.changes or {}) do table.insert(uris, uri) end
  for _, uri in ipairs(uris) do
    local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
    if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
      vim.api.nvim_buf_call(bufnr, function() vim.o.undolevels = vim.o.undolevels end)
    end
  end
end

--- `apply` (which applies `edit`) as an undo step of its own in each buffer it changes.
local function as_own_undo_step(edit, apply)
  if type(edit) == "table" then break_undo(edit) end
  local result = { apply() }
  if type(edit) == "table" then break_undo(edit) end
  return (table.unpack or unpack)(result)
end

--- The `workspace/applyEdit` handler of the filepuff client.
function M.handler(err, params, ctx, config)
  local default = vim.lsp.handlers["workspace/applyEdit"]
  if err or type(params) ~= "table" or type(params.edit) ~= "table" or not M.needs_confirmation(params.edit) then
    local edit = type(params) == "table" and params.edit or nil
    return as_own_undo_step(edit, function() return default(err, params, ctx, config) end)
  end
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or "utf-16"
  local edit = params.edit
  local label = params.label
  for _, annotation in pairs(edit.changeAnnotations or {}) do
    label = label or annotation.label
  end
  local ok, lines = pcall(M.diff_lines, edit, encoding)
  if not ok then
    return { applied = false, failureReason = "cannot show the proposed edit: " .. tostring(lines) }
  end
  local previous = vim.api.nvim_get_current_win()
  local window = show(lines)
  -- Drawn now: Neovim's own vim.ui.select (inputlist) blocks until answered, and nothing is
  -- redrawn while it waits, so without this the person would decide without seeing the diff.
  vim.cmd("redraw")
  -- filepuff's labels already start with "filepuff: " (e.g. "filepuff: replace in main.go").
  local what = (label or "the proposed edit"):gsub("^filepuff: ", "")
  local choice = M.ask("filepuff: apply " .. what .. "?")
  if vim.api.nvim_win_is_valid(window) then vim.api.nvim_win_close(window, true) end
  if vim.api.nvim_win_is_valid(previous) then vim.api.nvim_set_current_win(previous) end
  if choice ~= M.ACCEPT then
    return { applied = false, failureReason = "the person declined the edit in Neovim" }
  end
  local applied, message = as_own_undo_step(edit, function() return pcall(vim.lsp.util.apply_workspace_edit, edit, encoding) end)
  if not applied then return { applied = false, failureReason = tostring(message) } end
  return { applied = true }
end

return M
