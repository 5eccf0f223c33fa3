-- Neovim (0.7 or later) as the editor: opens $LWIRC_DRAFT with `lwirc lsp` ($LWIRC_BIN) as
-- its language server, waits for the diagnostics, applies the `source.fixAll.lwirc` code
-- action as the editor applies any workspace edit, waits for the diagnostics again, and
-- writes what it saw to $LWIRC_OUT: one line per diagnostic, `before|after CODE LINE:COL`,
-- then `done`. Run: nvim --headless --clean -u NONE -c "luafile nvim.lua"
local out = assert(io.open(os.getenv("LWIRC_OUT"), "w"))
local function finish(status)
  out:write(status .. "\n")
  out:close()
  vim.cmd("qa!")
end

vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("LWIRC_DRAFT")))
local buf = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = "lwirc",
  cmd = { os.getenv("LWIRC_BIN"), "lsp" },
  root_dir = vim.fn.fnamemodify(os.getenv("LWIRC_DRAFT"), ":h"),
  init_options = { debounceMs = 0 },
})
if not client_id then
  return finish("the client did not start")
end
vim.lsp.buf_attach_client(buf, client_id)

local function code_of(d)
  return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or "?"
end
local function dump(tag)
  local all = vim.diagnostic.get(buf)
  table.sort(all, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  for _, d in ipairs(all) do
    out:write(string.format("%s %s %d:%d\n", tag, code_of(d), d.lnum, d.col))
  end
end

if not vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 20) then
  return finish("no diagnostics")
end
dump("before")
local before = #vim.diagnostic.get(buf)

local client = vim.lsp.get_client_by_id(client_id)
local params = vim.lsp.util.make_range_params()
params.context = { diagnostics = {}, only = { "source.fixAll" } }
local results = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 20000) or {}
local applied = 0
for _, response in pairs(results) do
  for _, action in ipairs(response.result or {}) do
    if action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
      applied = applied + 1
    end
  end
end
if applied ~= 1 then
  return finish("fix-all actions applied: " .. applied)
end
if not vim.wait(20000, function()
  local n = #vim.diagnostic.get(buf)
  return n > 0 and n < before
end, 20) then
  return finish("the diagnostics did not change after the fix-all")
end
dump("after")
vim.lsp.stop_client(client_id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 20)
finish("done")
