-- Driven by test_neovim.py inside `nvim --headless --clean` (Neovim 0.11+): serves named steps
-- over a Unix socket ($FILEPUFF_TEST_SOCKET), one JSON line {"id", "step", "args"} in, one
-- {"id", "result"} or {"id", "error"} line out. Each step runs on Neovim's main loop
-- (vim.schedule), and between steps Neovim is idle as it is between a person's commands: an
-- agent's workspace/applyEdit reaches it the way it does in use, and each step is one undo block.
-- The `setup` step loads editors/neovim as a plugin manager would and calls
-- require("filepuff").setup() as docs/editors.md shows.
local uv = vim.uv or vim.loop
local NAME = "filepuff"
local steps = {}
-- The didOpen/didClose notifications Neovim sent to filepuff (LspNotify), oldest first.
local sent = {}

local function client_of(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr or 0, name = NAME })[1]
end

local function buffer_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr or 0, 0, -1, false), "\n") .. "\n"
end

local function client_info(client)
  return {
    id = client.id,
    root_dir = client.config.root_dir,
    offset_encoding = client.offset_encoding,
    initialized = client.initialized == true,
    stopped = client:is_stopped(),
  }
end

--- Ends the current undo block, as Neovim does before it waits for the next key.
local function end_undo_block()
  vim.o.undolevels = vim.o.undolevels
end

--- Sends the buffer's pending didChange (the client debounces them) and waits for filepuff to
--- answer a request of its own sent after it: filepuff handles the editor's messages in order,
--- so the change is in its Engine when this returns. Returns the `filepuff/status` answer.
function steps.sync()
  local bufnr = vim.api.nvim_get_current_buf() -- not 0: the client flushes changes of a real number
  local client = assert(client_of(bufnr), "no filepuff client for this buffer")
  local answer, err = client:request_sync("filepuff/status", vim.empty_dict(), 10000, bufnr)
  assert(answer and not answer.err, "filepuff/status: " .. vim.inspect(answer and answer.err or err))
  return answer.result
end

--- Loads the plugin and calls setup(opts), the options of docs/editors.md plus `cmd`.
function steps.setup(args)
  vim.opt.runtimepath:prepend(args.plugin)
  vim.cmd("runtime plugin/filepuff.lua")
  require("filepuff").setup(args.options)
  vim.api.nvim_create_autocmd("LspNotify", {
    callback = function(event)
      local method = event.data.method
      if method == "textDocument/didOpen" or method == "textDocument/didClose" then
        local document = event.data.params.textDocument
        table.insert(sent, { method = method, uri = document.uri, version = document.version or vim.NIL })
      end
    end,
  })
  return {
    version = tostring(vim.version()),
    -- The 0.11+ path: a vim.lsp.config entry, enabled; the older paths make an autocmd group.
    enabled = vim.lsp.is_enabled(NAME),
    config_cmd = vim.lsp.config[NAME].cmd,
  }
end

--- Waits until an initialized filepuff client serves the current buffer; returns steps.buffer().
function steps.wait_client()
  local ok = vim.wait(30000, function()
    local client = client_of(0)
    return client ~= nil and client.initialized == true and not client:is_stopped()
  end, 20)
  assert(ok, "no initialized filepuff client attached to " .. vim.api.nvim_buf_get_name(0))
  return steps.buffer()
end

--- Opens a file and waits until the filepuff client serves it.
function steps.edit(args)
  vim.cmd("edit " .. vim.fn.fnameescape(args.path))
  return steps.wait_client()
end

--- The current buffer and its filepuff client.
function steps.buffer()
  local client = client_of(0)
  return {
    bufnr = vim.api.nvim_get_current_buf(),
    name = vim.api.nvim_buf_get_name(0),
    uri = vim.uri_from_bufnr(0),
    cwd = vim.fn.getcwd(),
    changedtick = vim.api.nvim_buf_get_changedtick(0),
    modified = vim.bo.modified,
    text = buffer_text(0),
    client = client and client_info(client) or vim.NIL,
  }
end

--- The filepuff clients Neovim has (a stopped one until its process exits).
function steps.clients()
  local found = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = NAME })) do
    table.insert(found, client_info(client))
  end
  return found
end

--- The didOpen/didClose notifications sent since the last call.
function steps.sent()
  local found = sent
  sent = {}
  return found
end

--- Replaces lines [first, last) (0-based, end-exclusive, -1 for the end) as typing would, and
--- syncs: the text is filepuff's when this returns.
function steps.set_lines(args)
  vim.api.nvim_buf_set_lines(0, args.first, args.last, false, args.lines)
  end_undo_block()
  steps.sync()
  return buffer_text(0)
end

--- Runs an Ex command (`edit!`, `FilepuffRestart`, `file NAME`, …) and returns its output.
function steps.command(args)
  local output = vim.fn.execute(args.command)
  end_undo_block()
  return output
end

--- Types `keys` (Neovim's key notation, e.g. "O// typing" or " more<Esc>") as a person would:
--- queued like typed keys and handled after this step, in whatever mode they lead to — unlike
--- the other steps, the undo block is not ended (a person still in Insert mode).
function steps.type(args)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(args.keys, true, false, true), "t", false)
  return true
end

--- The current mode (`nvim_get_mode().mode`: "n", "i", …) and the current buffer's text.
function steps.state()
  return { mode = vim.api.nvim_get_mode().mode, text = buffer_text(0) }
end

--- Undo (`u` in normal mode), then sync.
function steps.undo()
  vim.cmd("normal! u")
  steps.sync()
  return buffer_text(0)
end

--- Puts the cursor on the first `needle` in 1-based `line` (byte column + args.offset) and asks
--- `method` there until a non-empty answer comes (the server may still be loading) or
--- args.timeout_ms passes. Returns the position sent (in the client's encoding) and the answer.
function steps.request(args)
  local client = assert(client_of(0), "no filepuff client for this buffer")
  local text = vim.api.nvim_buf_get_lines(0, args.line - 1, args.line, false)[1]
  local byte = assert(text:find(args.needle, 1, true), args.needle .. " not on line " .. args.line)
  vim.api.nvim_win_set_cursor(0, { args.line, byte - 1 + (args.offset or 0) })
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local deadline = uv.now() + (args.timeout_ms or 30000)
  local result
  repeat
    local answer = client:request_sync(args.method, params, 10000, vim.api.nvim_get_current_buf())
    result = answer and answer.result
    if result == vim.NIL or (type(result) == "table" and next(result) == nil) then result = nil end
    if result == nil then vim.wait(200) end
  until result ~= nil or uv.now() > deadline
  return { position = params.position, result = result or vim.NIL }
end

--- `vim.lsp.buf.rename(args.new_name)` with the cursor on the first `needle` of 1-based
--- `line`, as a person renames; waits until every buffer holding `args.wait_for` (paths) has the
--- new name, and syncs the current buffer (see steps.sync). Returns the text of each loaded buffer with a name, and whether it is modified.
function steps.rename(args)
  local text = vim.api.nvim_buf_get_lines(0, args.line - 1, args.line, false)[1]
  local byte = assert(text:find(args.needle, 1, true), args.needle .. " not on line " .. args.line)
  vim.api.nvim_win_set_cursor(0, { args.line, byte - 1 })
  vim.lsp.buf.rename(args.new_name)
  local function renamed(path)
    local bufnr = vim.fn.bufnr(path)
    if bufnr < 0 or not vim.api.nvim_buf_is_loaded(bufnr) then return false end
    return buffer_text(bufnr):find(args.new_name, 1, true) ~= nil
  end
  local ok = vim.wait(30000, function()
    for _, path in ipairs(args.wait_for) do
      if not renamed(path) then return false end
    end
    return true
  end, 50)
  assert(ok, "the rename did not reach " .. vim.inspect(args.wait_for))
  end_undo_block()
  steps.sync() -- the current buffer's didChange is debounced: flushed, and in filepuff's Engine
  local buffers = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(bufnr)
    if name ~= "" and vim.api.nvim_buf_is_loaded(bufnr) then
      buffers[name] = { text = buffer_text(bufnr), modified = vim.bo[bufnr].modified }
    end
  end
  return buffers
end

--- The buffer's diagnostics as Neovim shows them (0-based lines, byte columns).
function steps.diagnostics()
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(found, {
      lnum = d.lnum,
      col = d.col,
      end_lnum = d.end_lnum,
      end_col = d.end_col,
      severity = d.severity,
      message = d.message,
      source = d.source or vim.NIL,
    })
  end
  return found
end

--- Puts the cursor at 1-based `line`, 0-based byte `col`, optionally selecting (`visual`: "v" or
--- "V") from there to `to_line`/`to_col` as the person would (Visual mode stays on), and returns
--- the number of focus reports the plugin sent so far (the test waits for the next one).
function steps.cursor(args)
  local before = require("filepuff.focus").sent
  vim.cmd("normal! \27") -- leave Visual mode
  vim.api.nvim_win_set_cursor(0, { args.line, args.col })
  if args.visual then
    vim.api.nvim_feedkeys(args.visual, "nx", false)
    vim.api.nvim_win_set_cursor(0, { args.to_line, args.to_col })
  end
  return { sent = before, mode = vim.api.nvim_get_mode().mode }
end

--- The plugin's focus reports: how many were sent, and the last one sent to the filepuff client.
function steps.focus()
  local focus = require("filepuff.focus")
  local client = client_of(0) or vim.lsp.get_clients({ name = NAME })[1]
  return { sent = focus.sent, last = client and focus.last[client.id] or vim.NIL, mode = vim.api.nvim_get_mode().mode }
end

--- The person's side of filepuff.confirm: vim.ui.select is replaced by one that records the
--- prompt and the diff on screen and waits for steps.decide (as a person takes their time).
local pending = nil
function steps.intercept_select()
  vim.ui.select = function(items, opts, on_choice)
    local diff = vim.fn.bufnr(require("filepuff.confirm").DIFF_NAME)
    pending = {
      items = items,
      prompt = opts.prompt,
      diff = diff ~= -1 and vim.api.nvim_buf_get_lines(diff, 0, -1, false) or vim.NIL,
      on_choice = on_choice,
    }
  end
  return true
end

--- The text of buffer `bufnr` (the current one may be the diff on screen).
function steps.text(args)
  return buffer_text(args.bufnr)
end

--- The question being asked, if any (items, prompt, the diff shown).
function steps.asked()
  if not pending then return vim.NIL end
  return { items = pending.items, prompt = pending.prompt, diff = pending.diff }
end

--- Answers the pending question with `choice` ("Accept" / "Decline").
function steps.decide(args)
  local question = assert(pending, "nothing is being asked")
  pending = nil
  question.on_choice(args.choice)
  return true
end

function steps.quit()
  vim.schedule(function() vim.cmd("qall!") end)
  return true
end

local function handle(conn, line)
  local ok_decode, request = pcall(vim.json.decode, line)
  if not ok_decode or type(request) ~= "table" then
    conn:write(vim.json.encode({ error = "not a JSON request: " .. line }) .. "\n")
    return
  end
  local step = steps[request.step]
  local ok, result = xpcall(function()
    assert(step, "no step " .. tostring(request.step))
    return step(request.args or {})
  end, debug.traceback)
  local reply = ok and { id = request.id, result = result } or { id = request.id, error = tostring(result) }
  local encoded_ok, encoded = pcall(vim.json.encode, reply)
  if not encoded_ok then
    encoded = vim.json.encode({ id = request.id, error = "the result does not encode: " .. encoded })
  end
  conn:write(encoded .. "\n")
end

local server = assert(uv.new_pipe(false))
assert(server:bind(assert(os.getenv("FILEPUFF_TEST_SOCKET"), "FILEPUFF_TEST_SOCKET is not set")))
assert(server:listen(4, function(listen_err)
  assert(not listen_err, listen_err)
  local conn = uv.new_pipe(false)
  server:accept(conn)
  local pending = ""
  conn:read_start(function(err, chunk)
    if err or not chunk then
      -- The test went away: so does this Neovim (its filepuff lsp gets shutdown and exit).
      conn:close()
      vim.schedule(function() vim.cmd("qall!") end)
      return
    end
    pending = pending .. chunk
    while true do
      local newline = pending:find("\n", 1, true)
      if not newline then break end
      local line = pending:sub(1, newline - 1)
      pending = pending:sub(newline + 1)
      vim.schedule(function() handle(conn, line) end)
    end
  end)
end))
