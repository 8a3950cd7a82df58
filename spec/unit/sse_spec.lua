-- The SSE parser (src/sse.c) through core.sse_parser: the WHATWG event
-- stream rules as a table of rows, each also fed split at every byte.
local core = require "claude.core"

local BOM = "\239\187\191"

-- { name, stream, events = { {event, data, id, retry}... }, last_id, retry }
local rows = {
  { "one event", "data: hello\n\n", { { "message", "hello" } } },
  { "no space after the colon", "data:hello\n\n", { { "message", "hello" } } },
  { "only one space is removed", "data:  hello\n\n", { { "message", " hello" } } },
  { "a tab is kept", "data:\thello\n\n", { { "message", "\thello" } } },
  { "data lines joined with LF", "data: a\ndata: b\ndata: c\n\n", { { "message", "a\nb\nc" } } },
  { "an empty data line", "data\n\n", { { "message", "" } } },
  { "an empty data value", "data:\n\n", { { "message", "" } } },
  { "data ending in an empty line", "data: a\ndata:\n\n", { { "message", "a\n" } } },
  { "CRLF line ends", "data: a\r\ndata: b\r\n\r\n", { { "message", "a\nb" } } },
  { "CR line ends", "data: a\rdata: b\r\r", { { "message", "a\nb" } } },
  { "mixed line ends", "data: a\r\n\ndata: b\r\rdata: c\n\r\n",
    { { "message", "a" }, { "message", "b" }, { "message", "c" } } },
  { "CR then CRLF is two line ends", "data: a\r\r\n", { { "message", "a" } } },
  { "comments are skipped", ": hello\ndata: x\n:\n\n", { { "message", "x" } } },
  { "a comment alone dispatches nothing", ": keep-alive\n\n", {} },
  { "the event type", "event: update\ndata: x\n\n", { { "update", "x" } } },
  { "the event type resets after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n",
    { { "a", "1" }, { "message", "2" } } },
  { "an event without data is not dispatched, and its type goes",
    "event: a\n\ndata: x\n\n", { { "message", "x" } } },
  { "an empty event type means message", "event:\ndata: x\n\n", { { "message", "x" } } },
  { "the id persists across events", "id: 1\ndata: x\n\ndata: y\n\n",
    { { "message", "x", "1" }, { "message", "y", "1" } }, "1" },
  { "an empty id resets it", "id: 1\ndata: x\n\nid\ndata: y\n\n",
    { { "message", "x", "1" }, { "message", "y" } } },
  { "an id containing NUL is ignored", "id: 1\ndata: x\n\nid: a\0b\ndata: y\n\n",
    { { "message", "x", "1" }, { "message", "y", "1" } }, "1" },
  { "an id-only block sets the id", "id: 5\n\n", {}, "5" },
  { "retry with digits", "retry: 1500\ndata: x\n\n", { { "message", "x", nil, 1500 } },
    nil, 1500 },
  { "retry with other characters is ignored", "retry: 15x\nretry: -1\nretry:\nretry: 1 \n"
    .. "data: x\n\n", { { "message", "x" } } },
  { "a retry-only block sets the time", "retry: 10\n\n", {}, nil, 10 },
  { "a huge retry saturates", "retry: 99999999999999999999999\n\n", {}, nil, 1000000000000 },
  { "a leading BOM is skipped", BOM .. "data: x\n\n", { { "message", "x" } } },
  { "only the first BOM is skipped", BOM .. BOM .. "data: x\n\ndata: y\n\n",
    { { "message", "y" } } },
  { "a BOM prefix that is no BOM is data", "\239data: x\n\ndata: y\n\n", { { "message", "y" } } },
  { "a BOM later in the stream is kept", "data: " .. BOM .. "x\n\n",
    { { "message", BOM .. "x" } } },
  { "unknown fields are ignored", "foo: bar\ndata: x\nDATA: no\n\n", { { "message", "x" } } },
  { "a field name with a space is unknown", " data: x\n\n", {} },
  { "colons in the value", "data: a:b: c\n\n", { { "message", "a:b: c" } } },
  { "blank lines between events", "\n\ndata: a\n\n\n\ndata: b\n\n",
    { { "message", "a" }, { "message", "b" } } },
  { "no dispatch at the end of the stream", "data: x\n", {} },
  { "no dispatch without a line end", "data: x", {} },
  { "UTF-8 and NUL bytes are kept", "data: h\195\169llo \226\156\147 a\0b\n\n",
    { { "message", "h\195\169llo \226\156\147 a\0b" } } },
  { "JSON-RPC over SSE", 'event: message\nid: s1-9\ndata: {"jsonrpc":"2.0","id":1}\n\n',
    { { "message", '{"jsonrpc":"2.0","id":1}', "s1-9" } }, "s1-9" },
}

local function as_rows(events)
  local out = {}
  for i, ev in ipairs(events) do out[i] = { ev.event, ev.data, ev.id, ev.retry } end
  return out
end

-- Feeds the chunks to a new parser; returns its events as rows, its last
-- event ID and retry, and the errors it reported.
local function parse(chunks, max)
  local p <close> = core.sse_parser(max)
  local events, errs = {}, {}
  for _, chunk in ipairs(chunks) do
    local list, err = p:feed(chunk)
    for _, ev in ipairs(list) do events[#events + 1] = ev end
    if err then errs[#errs + 1] = err end
  end
  return as_rows(events), p:last_event_id(), p:retry(), errs
end

local function bytes(s)
  local out = {}
  for i = 1, #s do out[i] = s:sub(i, i) end
  return out
end

describe("the SSE parser", function()
  for _, row in ipairs(rows) do
    local name, stream, want, want_id, want_retry = row[1], row[2], row[3], row[4], row[5]
    it(name, function()
      local events, id, retry = parse({ stream })
      assert.same(want, events)
      assert.equal(want_id, id)
      assert.equal(want_retry, retry)
    end)
  end

  it("gives the same events however the stream is split", function()
    for _, row in ipairs(rows) do
      local stream, want = row[2], row[3]
      assert.same(want, (parse(bytes(stream))), row[1] .. " (byte by byte)")
      for cut = 1, #stream - 1 do
        assert.same(want, (parse({ stream:sub(1, cut), stream:sub(cut + 1) })),
          row[1] .. " (cut at " .. cut .. ")")
      end
    end
  end)

  it("keeps a CRLF split between chunks as one line end", function()
    local p <close> = core.sse_parser()
    assert.same({}, p:feed("data: a\r"))
    assert.same({}, p:feed("\ndata: b\r"))
    local events = p:feed("\n\r\n")
    assert.same({ { "message", "a\nb" } }, as_rows(events))
  end)

  it("hands out each event as soon as its blank line is in", function()
    local p <close> = core.sse_parser()
    assert.same({ { "message", "1" } }, as_rows(p:feed("data: 1\n\ndata: 2\n")))
    assert.same({ { "message", "2" } }, as_rows(p:feed("\n")))
  end)

  it("drops an event over the limit with an error and keeps the ones around it", function()
    local stream = "data: before\n\ndata: " .. string.rep("x", 100) .. "\ndata: more\n\n"
      .. "data: after\n\n"
    local events, _, _, errs = parse({ stream }, 32)
    assert.same({ { "message", "before" }, { "message", "after" } }, events)
    assert.equal(1, #errs)
    assert.matches("1 SSE event%(s%) dropped: an event exceeds the limit of 32 bytes", errs[1])
    local split_events, _, _, split_errs = parse(bytes(stream), 32)
    assert.same(events, split_events)
    assert.equal(1, #split_errs)
  end)

  it("counts data lines of one event together against the limit", function()
    local stream = string.rep("data: 0123456789\n", 5) .. "\ndata: ok\n\n"
    local events, _, _, errs = parse({ stream }, 40)
    assert.same({ { "message", "ok" } }, events)
    assert.equal(1, #errs)
  end)

  it("has no limit with max_event 0", function()
    local big = string.rep("y", 1 << 20)
    local events = parse({ "data: " .. big .. "\n\n" }, 0)
    assert.equal(big, events[1][2])
  end)

  it("rejects bad arguments", function()
    assert.has_error(function() core.sse_parser(-1) end)
    local p = core.sse_parser()
    assert.has_error(function() p:feed(nil) end)
    p:close()
    assert.has_error(function() p:feed("data: x\n\n") end, "attempt to use a closed SSE parser")
    assert.equal("claude.SSEParser (closed)", tostring(p))
  end)
end)
