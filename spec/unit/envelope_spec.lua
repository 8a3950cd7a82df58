-- The envelope readers of the hot paths (src/mcp/envelope.c and answer.c, core.envelope_read):
-- a line of the usual shape comes apart into the values its receiver reads, and those values
-- make the very message the decoder makes of the line; any other line is left to the decoder.
local core = require "claude.core"
local json = require "claude.json"
local call = require "claude.mcp.call"

local MCP_CALL, RPC_RESULT = core.MCP_CALL, core.RPC_RESULT

local canon = require "support.canon_json"

-- The message the values a reader gave stand for (as the receivers rebuild it).
local function rebuild(kind, r)
  if kind == "response" then
    assert.equal(RPC_RESULT, r[1])
    return { jsonrpc = "2.0", id = r[2], result = r[3] }
  end
  assert.equal(MCP_CALL, r[1])
  -- the values are the call record's slots (claude.mcp.call), in order
  local rec = call.new()
  for i = 2, r.n do rec[i - 1] = r[i] end
  local message = call.message(rec)
  if type(r[5]) == "string" then -- a modern envelope as its text: its version follows
    assert.equal(json.decode(r[5])["io.modelcontextprotocol/protocolVersion"], r[8])
  else
    assert.is_nil(r[8])
  end
  if kind == "request" then return message end
  return { type = "control_request", request_id = r[9], request = { subtype = "mcp_message",
    server_name = r[10], message = message } }
end

-- The reader agrees with the decoder on `line`: it takes it and gives its message, or it
-- leaves it (then the decoder says what it is). Returns whether the reader took it.
local function agrees(kind, line)
  if kind == "modern" then kind = "request" end
  local r = table.pack(core.envelope_read(kind, line))
  if r.n == 0 then return false end
  local decoded = json.decode(line)
  assert.is_not_nil(decoded, line)
  assert.equal(canon(decoded), canon(rebuild(kind, r)), line)
  return true
end

local CALL = '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"add",'
  .. '"arguments":{"a":1,"b":-2.5},"_meta":{"claudecode/toolUseId":"toolu_01X",'
  .. '"progressToken":12}}}'
local CONTROL = '{"type":"control_request","request_id":"5d1b-e","request":{"subtype":'
  .. '"mcp_message","server_name":"calc","message":' .. CALL .. '}}'
local RESPONSE = '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"3"}]}}'
local ENVELOPE = '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{}},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1.0","tags":[1,true,null]}'
local MODERN = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add",'
  .. '"arguments":{"a":1},"_meta":{' .. ENVELOPE .. ',"progressToken":"p3"}}}'
local LINES = { request = CALL, control = CONTROL, response = RESPONSE, modern = MODERN }

describe("the envelope readers", function()
  it("take the usual tools/call apart, without decoding the CLI's _meta", function()
    local r = table.pack(core.envelope_read("request", CALL))
    assert.equal(8, r.n)
    assert.equal(MCP_CALL, r[1])
    assert.equal(12, r[2])
    assert.equal("add", r[3])
    assert.same({ a = 1, b = -2.5 }, r[4])
    assert.equal(MCP_CALL, r[5]) -- _meta of the claude CLI's shape: its values follow
    assert.equal(12, r[6])
    assert.equal("toolu_01X", r[7])
    assert.is_true(agrees("request", CALL))
  end)

  it("take the control request around it, and an answer", function()
    local r = table.pack(core.envelope_read("control", CONTROL))
    assert.equal(10, r.n)
    assert.equal("5d1b-e", r[9])
    assert.equal("calc", r[10])
    assert.is_true(agrees("control", CONTROL))
    r = table.pack(core.envelope_read("response", RESPONSE))
    assert.equal(3, r.n)
    assert.equal(7, r[2])
    assert.is_true(agrees("response", RESPONSE))
  end)

  it("hold back no id outside a stream's callback; core.call_id passes other values", function()
    -- (a stream's control reader holds the request id and the tool use id back while their
    -- line is handled: spec/integration/session_spec.lua; here, with no line, strings)
    local r = table.pack(core.envelope_read("control", '{"type":"control_request",'
      .. '"request_id":"r-1","request":{"subtype":"mcp_message","server_name":"s","message":'
      .. '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":'
      .. '{"claudecode/toolUseId":"toolu_1"}}}}}'))
    assert.same({ "toolu_1", "r-1" }, { r[7], r[9] })
    assert.equal("x", core.call_id("x"))
    assert.equal(1, core.call_id(1))
    assert.is_nil(core.call_id(nil))
    assert.error_matches(function() core.call_id(core.MCP_REQUEST_ID) end, "not held now")
    assert.error_matches(function() core.call_id(core.MCP_TOOL_USE_ID) end, "not held now")
  end)

  it("leave the modern era's envelope as its text, its version beside", function()
    local r = table.pack(core.envelope_read("request", MODERN))
    assert.equal(8, r.n)
    assert.equal("{" .. ENVELOPE .. "}", r[5]) -- the envelope alone: the token beside
    assert.same(json.decode("{" .. ENVELOPE .. ',"progressToken":"p3"}'),
      call.envelope_meta(r[5], r[6], r[7]))
    assert.equal("p3", r[6])
    assert.is_nil(r[7])
    assert.equal("2026-07-28", r[8])
    assert.is_true(agrees("request", MODERN))
    -- a log level, an array for the capabilities, a capability the reader cannot skip for
    -- sure (an escape, a fraction), no capabilities: decoded whole
    for _, change in ipairs {
      { '"io.modelcontextprotocol/clientInfo"', '"io.modelcontextprotocol/logLevel":"info",'
        .. '"io.modelcontextprotocol/clientInfo"' },
      { 'clientCapabilities":{"elicitation":{"form":{}},"roots":{}}',
        'clientCapabilities":[]' },
      { '"form":{}', '"form":"\\n"' }, { '"form":{}', '"form":1.5' },
      { '"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{}},',
        '' },
    } do
      local line = MODERN:gsub(change[1]:gsub("%p", "%%%0"), (change[2]:gsub("%%", "%%%%")))
      assert.are_not.equal(MODERN, line)
      r = table.pack(core.envelope_read("request", line))
      assert.equal(8, r.n)
      assert.equal("table", type(r[5]), line)
      assert.is_true(agrees("request", line))
    end
  end)

  it("keep the envelope's text for the next line that spells it, and read any other", function()
    local V = '"io.modelcontextprotocol/protocolVersion":"2026-07-28"'
    local C = '"io.modelcontextprotocol/clientCapabilities":{}'
    local I = '"io.modelcontextprotocol/clientInfo":'
    local function req(meta, id)
      return '{"jsonrpc":"2.0","id":' .. (id or 1) .. ',"method":"tools/call","params":{'
        .. '"name":"add","arguments":{"a":1},"_meta":{' .. meta .. '}}}'
    end
    -- each line after the one before it: the same envelope, one that starts the same and
    -- goes on, the CLI's keys around it or between its members, a key twice, a value that
    -- starts as the last one's did
    local lines = {
      req(ENVELOPE .. ',"progressToken":"p3"'), req(ENVELOPE .. ',"progressToken":4'),
      req('"claudecode/toolUseId":"t","progressToken":5,' .. ENVELOPE),
      req(ENVELOPE), req(ENVELOPE .. ',"claudecode/toolUseId":"t"'),
      req(V .. "," .. C), req(V .. "," .. C .. "," .. I .. '{"name":"n"}'),
      req(V .. "," .. C .. "," .. I .. '{"name":"n"}' .. ',"progressToken":6'),
      req(V .. "," .. C .. ',"progressToken":7,' .. I .. '{}'),
      req(V .. ',"progressToken":8,' .. C), req(V .. ',"progressToken":8,' .. C),
      req(V .. "," .. C),
      req(V .. "," .. C .. "," .. V), req(V .. "," .. C .. "," .. C),
      req(V .. "," .. C .. "," .. I .. "12"), req(V .. "," .. C .. "," .. I .. "123"),
      req(V .. "," .. C .. "," .. I .. "12"), req(V .. "," .. C .. "," .. I .. "12.5"),
      req(V .. "," .. C .. "," .. I .. "true"), req(V .. "," .. C .. "," .. I .. "truex"),
      req(V .. "," .. C .. "," .. I .. '"x"'), req(V .. "," .. C .. "," .. I .. '"xy"'),
      req(V:gsub("2026%-07%-28", "2025-06-18") .. "," .. C),
      req(V:gsub("2026%-07%-28", "2025-06-18") .. "," .. C, 2),
      req(" " .. V .. " , " .. C .. " "), req(" " .. V .. " , " .. C .. " ,\n" .. I .. "{}"),
      req(C .. "," .. V), req(C .. "," .. V .. ',"io.modelcontextprotocol/logLevel":"info"'),
    }
    local kept = 0
    for round = 1, 2 do
      for _, line in ipairs(lines) do
        local r = table.pack(core.envelope_read("request", line))
        if r.n > 0 then
          assert.is_true(agrees("request", line), line)
          if type(r[5]) == "string" then
            kept = kept + 1
            assert.equal(json.decode(r[5])["io.modelcontextprotocol/protocolVersion"], r[8])
          end
        end
        local control = CONTROL:gsub(CALL:gsub("%p", "%%%0"), (line:gsub("%%", "%%%%")))
        if round == 2 and select("#", core.envelope_read("control", control)) > 0 then
          assert.is_true(agrees("control", control), control)
        end
      end
    end
    assert.is_true(kept >= 30)
  end)

  it("give what the decoder gives for arguments and _meta of other shapes", function()
    for _, line in ipairs {
      '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},'
        .. '"_meta":{"traceparent":"00-x","progressToken":"t"}}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":null}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":5}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{}}}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":'
        .. '{"progressToken":1.5}}}',
      ' { "params" : { "_meta" : { "progressToken" : -7 } , "name" : "é" } , "id" : -0 ,'
        .. ' "method" : "tools/call" , "jsonrpc" : "2.0" } \r\n',
      '{"jsonrpc":"2.0","id":999999999999999999,"method":"tools/call","params":{"name":""}}',
    } do
      assert.is_true(agrees("request", line), line)
    end
    for _, line in ipairs {
      '{"jsonrpc":"2.0","id":1,"result":null}', '{"id":1,"result":[1,2],"jsonrpc":"2.0"}',
      '{"jsonrpc":"2.0","id":"x","result":"text"}',
    } do
      assert.is_true(agrees("response", line), line)
    end
  end)

  it("build a tool call's usual result as the decoder does, any other result decoded", function()
    local function item(i) return '{"type":"text","text":"' .. i .. '"}' end
    local items = {}
    for i = 1, 9 do items[i] = item(i) end
    for _, result in ipairs {
      '{"content":[' .. item(3) .. ']}',
      '{"content":[' .. item("") .. '],"isError":true}',
      '{"isError":false,"content":[' .. item("é") .. ']}',
      '{"content":[' .. item(3) .. '],"resultType":"complete"}',
      '{"resultType":"complete","isError":false,"content":[' .. item(3) .. ']}',
      -- "complete" is the keys' own string; any other resultType made from the line
      '{"content":[' .. item(3) .. '],"resultType":"completed"}',
      '{"content":[' .. item(3) .. '],"resultType":"complet"}',
      '{"content":[' .. item(3) .. '],"resultType":"task"}',
      '{"content":[' .. item(3) .. '],"resultType":""}',
      '{"content":[' .. table.concat(items, ",", 1, 8) .. ']}',           -- 8 items
      '{"content":[' .. table.concat(items, ",", 1, 9) .. ']}',           -- 9: decoded
      ' { "content" : [ { "type" : "text" , "text" : "3" } ] , "isError" : true } ',
      '{"content":[]}', '{}', '{"isError":true}',
      '{"content":[{"text":"3","type":"text"}]}',                        -- other order
      '{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}',
      '{"content":[{"type":"text","text":"3","_meta":{}}]}',
      '{"content":[{"type":"text","text":"a\\nb"}]}',                     -- an escape
      '{"content":[{"type":"text","text":3}]}',
      '{"content":[' .. item(3) .. '],"isError":null}',
      '{"content":[' .. item(3) .. '],"isError":1}',
      '{"content":[' .. item(3) .. '],"resultType":7}',
      '{"content":[' .. item(3) .. '],"structuredContent":{"n":3}}',
      '{"content":[' .. item(3) .. '],"content":[' .. item(4) .. ']}',    -- a key twice
      '{"content":[' .. item(3) .. '],}', '{"content":[' .. item(3) .. ',]}',
      '{"content":{"type":"text","text":"3"}}', '{"content":[' .. item(3) .. ']',
      '{"content":[' .. item(3) .. ',{"type":"image","data":"AA==","mimeType":"image/png"}]}',
      '{"content":[' .. item(3) .. ',' .. item(4) .. '],"content":[]}',
      '{"content":[' .. item(3) .. ',{"type":"resource","text":"4"}],"isError":false}',
      '{"content":[{"type":"text","text":"3"} , {"type" :"text","text":"4"}]}',
    } do
      local line = '{"jsonrpc":"2.0","id":1,"result":' .. result .. '}'
      local decoded = json.decode(line)
      local r = table.pack(core.envelope_read("response", line))
      if decoded == nil then
        assert.equal(0, r.n, line)
      else
        assert.is_true(agrees("response", line), line)
        assert.same(decoded.result, r[3], line)
        if type(decoded.result) == "table" and type(decoded.result.content) == "table" then
          assert.equal(getmetatable(decoded.result.content), getmetatable(r[3].content), line)
        end
      end
    end
  end)

  it("leave every other line to the decoder", function()
    for _, line in ipairs {
      CALL:gsub('"add"', '"a\\u0064d"'),                  -- an escape
      CALL:gsub('"name"', '"n\\u0061me"'),                -- an escaped key
      CALL:gsub('"id":12', '"id":12.0'),                  -- an integral float id
      CALL:gsub('"id":12', '"id":1e1'),
      CALL:gsub('"id":12', '"id":null'),
      CALL:gsub('"id":12', '"id":1234567890123456789'),   -- 19 digits
      CALL:gsub('"id":12', '"id":012'),                   -- not JSON
      CALL:gsub('"2.0"', '"2.1"'),
      CALL:gsub('"tools/call"', '"tools/list"'),
      CALL:gsub('"name":"add"', '"name":7'),
      CALL:gsub('"arguments":{"a":1,"b":-2.5}', '"arguments":"x"'),
      CALL:gsub('"jsonrpc":"2.0",', ''),                  -- a key missing
      CALL:gsub('"id":12,', '"id":12,"id":13,'),          -- a key twice
      CALL:gsub('"id":12,', '"id":12,"extra":1,'),        -- a key the reader does not know
      CALL:gsub('"name":"add",', '"name":"add","task":{},'),
      CALL:gsub('"toolu_01X"', '"toolu_\1X"'),            -- a control character
      CALL:gsub('"toolu_01X"', '"toolu_\xff"'),           -- not UTF-8
      CALL:gsub('"toolu_01X"', '"toolu_\xc3\xa9"'),       -- UTF-8, decoded whole
      CALL .. "x", CALL:sub(1, -2), "[" .. CALL .. "]", "", "{}", "null",
      CALL:gsub('"b":%-2.5', '"b":-2.5e'),                -- bad inside the arguments
    } do
      if type(line) == "string" then
        local r = table.pack(core.envelope_read("request", line))
        if r.n > 0 then
          -- only UTF-8 in _meta keeps the reader: it must then agree
          assert.is_true(agrees("request", line), line)
        end
      end
    end
    local function read(kind, line) return select("#", core.envelope_read(kind, line)) end
    assert.equal(0, read("request", (CALL:gsub('"id":12', '"id":12.0'))))
    assert.equal(0, select("#", core.envelope_read("request", CALL .. "x")))
    assert.equal(0, read("request", (CALL:gsub('"id":12,', '"id":12,"id":13,'))))
    assert.equal(0, read("control",
      (CONTROL:gsub('"subtype":"mcp_message"', '"subtype":"interrupt"'))))
    assert.equal(0, select("#", core.envelope_read("response",
      '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}')))
    assert.equal(0, select("#", core.envelope_read("response",
      '{"jsonrpc":"2.0","id":1,"result":{},"error":null}')))
  end)

  it("count nesting from the whole line, as the decoder does", function()
    local function nest(n) return string.rep("[", n) .. string.rep("]", n) end
    -- the arguments' value sits 3 levels deep in a request, 5 in a control request: the
    -- decoder takes 20000 levels in all
    assert.is_true(agrees("request", (CALL:gsub('"a":1', '"a":' .. nest(19997)))))
    assert.is_true(agrees("control", (CONTROL:gsub('"a":1', '"a":' .. nest(19995)))))
    local line = CONTROL:gsub('"a":1', '"a":' .. nest(19996))
    assert.equal(0, select("#", core.envelope_read("control", line)))
    assert.is_nil(json.decode(line))
    line = CALL:gsub('"a":1', '"a":' .. nest(19998))
    assert.equal(0, select("#", core.envelope_read("request", line)))
    assert.is_nil(json.decode(line))
  end)

  -- Lines of the usual shape, mangled byte by byte: whatever the reader takes, it takes as
  -- the decoder does; whatever the decoder refuses, the reader leaves.
  it("agree with the decoder on thousands of mangled lines", function()
    local rnd = 12345
    local function random(n) -- a fixed sequence, the same on every run
      rnd = (rnd * 1103515245 + 12345) % 2147483648
      return rnd % n + 1
    end
    local alphabet = ' {}[]",:\\0123456789.-+eEtrufalsn\t\nabcé\xff\1'
    local taken = 0
    for kind, base in pairs(LINES) do
      for _ = 1, 3000 do
        local line = base
        for _ = 1, random(3) do
          local at, how = random(#line), random(3)
          local c = alphabet:sub(random(#alphabet), random(#alphabet)):sub(1, 1)
          if how == 1 then
            line = line:sub(1, at - 1) .. line:sub(at + 1)
          elseif how == 2 then
            line = line:sub(1, at - 1) .. c .. line:sub(at)
          else
            line = line:sub(1, at - 1) .. c .. line:sub(at + 1)
          end
        end
        if agrees(kind, line) then taken = taken + 1 end
      end
    end
    assert.is_true(taken > 100) -- many mangled lines are still of the usual shape
  end)
end)
