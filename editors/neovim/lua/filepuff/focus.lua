-- What the person is looking at, for agents: sends `filepuff/editorFocus` (docs/lsp.md) to the
-- filepuff clients, debounced, when the focused buffer, its cursor, its selection, its text or
-- the window's scroll position change. Positions are LSP positions in the client's negotiated
-- encoding (0-based lines; the selection's end and the visible range's end are exclusive).

local M = {}

local METHOD = "filepuff/editorFocus"

--- Milliseconds of quiet before a report is sent.
M.debounce_ms = 150
--- How many reports were sent, and the last one per client id (for :checkhealth and tests).
M.sent = 0
M.last = {}

local timer = nil

local function notify(client, method, params)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- The LSP position of (0-based row, 0-based byte col) in `bufnr`, in `encoding`; a col past
--- the end of the line is its end.
local function position(bufnr, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  col = math.max(0, math.min(col, #line))
  return { line = row, character = vim.lsp.util.character_offset(bufnr, row, col, encoding) }
end

--- The byte just after the character starting at byte `col` (0-based) of `row`.
local function after_char(bufnr, row, col)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  if col >= #line then return #line end
  local char = vim.fn.strcharpart(line:sub(col + 1), 0, 1)
  return col + math.max(#char, 1)
end

local function before(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] <= b[2])
end

--- The selection of the current window as an LSP range, or nil outside Visual mode.
local function selection(bufnr, encoding)
  local mode = vim.api.nvim_get_mode().mode
  local kind = mode:sub(1, 1)
  if kind ~= "v" and kind ~= "V" and kind ~= "\22" then return nil end
  local v = vim.fn.getpos("v")
  local anchor = { v[2] - 1, v[3] - 1 }
  local cursor = vim.api.nvim_win_get_cursor(0)
  local active = { cursor[1] - 1, cursor[2] }
  local first, last = anchor, active
  if not before(first, last) then first, last = active, anchor end
  if kind == "V" then
    local line = vim.api.nvim_buf_get_lines(bufnr, last[1], last[1] + 1, false)[1] or ""
    return { start = position(bufnr, first[1], 0, encoding), ["end"] = position(bufnr, last[1], #line, encoding) }
  end
  return {
    start = position(bufnr, first[1], first[2], encoding),
    ["end"] = position(bufnr, last[1], after_char(bufnr, last[1], last[2]), encoding),
  }
end

--- The report for `client`: the current buffer when the client serves it, else no document.
function M.params(client)
  local bufnr = vim.api.nvim_get_current_buf()
  local attached = client.attached_buffers and client.attached_buffers[bufnr]
  if not attached then
    return { textDocument = vim.NIL }
  end
  local encoding = client.offset_encoding or "utf-16"
  local cursor = vim.api.nvim_win_get_cursor(0)
  local first, last = vim.fn.line("w0"), vim.fn.line("w$")
  local last_line = vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or ""
  local versions = vim.lsp.util.buf_versions
  return {
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = versions and versions[bufnr] or nil },
    cursor = position(bufnr, cursor[1] - 1, cursor[2], encoding),
    selection = selection(bufnr, encoding) or vim.NIL,
    visibleRange = {
      start = position(bufnr, first - 1, 0, encoding),
      ["end"] = position(bufnr, last - 1, #last_line, encoding),
    },
  }
end

--- Sends the current focus to every filepuff client whose last report differs.
function M.report_now()
  for _, client in ipairs(require("filepuff").clients()) do
    local stopped = require("filepuff").is_stopped(client)
    if client.initialized ~= false and not stopped then
      local ok, params = pcall(M.params, client)
      if ok and not vim.deep_equal(params, M.last[client.id]) then
        if notify(client, METHOD, params) ~= false then
          M.last[client.id] = params
          M.sent = M.sent + 1
        end
      end
    end
  end
end

--- Schedules a report after M.debounce_ms without another change.
function M.schedule()
  if timer == nil then timer = (vim.uv or vim.loop).new_timer() end
  timer:stop()
  timer:start(M.debounce_ms, 0, vim.schedule_wrap(M.report_now))
end

--- Reports on focus, cursor, selection, scroll and text changes (and when a client attaches):
--- an edit that leaves the cursor where it was still changes the version and the visible range.
function M.setup()
  local group = vim.api.nvim_create_augroup("filepuff_focus", { clear = true })
  local events = {
    "BufEnter", "WinEnter", "CursorMoved", "CursorMovedI", "FocusGained", "ModeChanged", "WinScrolled",
    "TextChanged", "TextChangedI", "LspAttach",
  }
  for _, event in ipairs(events) do
    -- Older Neovims lack some events (ModeChanged: 0.7; LspAttach: 0.8): skip those.
    pcall(vim.api.nvim_create_autocmd, event, { group = group, callback = function() M.schedule() end })
  end
end

return M
