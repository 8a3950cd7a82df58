-- tools/cli-drift.lua: the names of a sdk.d.ts, what is new against an older one, and what
-- a doc's mapping section does not name (tools/cli-drift runs it on the SDKs from npm).
local harness = require "support.harness"

local OLD = [[
export declare function query(_params: { prompt: string }): Query;
export declare const HOOK_EVENTS: readonly ['PreToolUse', 'Stop'];
export declare type Options = {
    model?: string;
    allowedTools?: string[];
};
export declare type AgentDefinition = {
    description: string;
    prompt: string;
};
export declare type SDKMessage = SDKAssistantMessage | SDKTaskMessage;
export declare type SDKAssistantMessage = {
    type: 'assistant';
    message: unknown;
};
export declare type SDKTaskMessage = {
    type: 'system';
    subtype: 'task_notification';
    status: 'completed' | 'failed';
};
]]

-- one more hook event, option, agent field, message (with a field) and value
local NEW = OLD:gsub("'Stop'%]", "'Stop', 'SolarFlare']")
  :gsub("allowedTools%?: string%[%];", "allowedTools?: string[];\n    nebulaWindow?: number;")
  :gsub("prompt: string;\n}", "prompt: string;\n    warpDrive?: boolean;\n}")
  :gsub("status: 'completed' | 'failed';", "status: 'completed' | 'failed' | 'lost';\n"
    .. "    duration_ms?: number;")
  .. "export declare type SDKHologramMessage = {\n    type: 'hologram';\n};\n"
NEW = NEW:gsub("SDKAssistantMessage | SDKTaskMessage;",
  "SDKAssistantMessage | SDKTaskMessage | SDKHologramMessage;")

local DOC = [[
# API

## The official SDKs, mapped

| `query()` | `claude.query` |
| `model`, `allowed_tools` | options |
| `PreToolUse`, `Stop`, `SolarFlare` | hook events |
| `description`, `prompt` | agent fields |
| `assistant`, `system` / `task_notification` | messages |

## Internal modules

`nebulaWindow` is named here, outside the mapping: it does not count.
]]

local function run(...)
  local args = {}
  for i, a in ipairs { ... } do args[i] = harness.quote(a) end
  local p = assert(io.popen("lua5.4 tools/cli-drift.lua " .. table.concat(args, " ")))
  local out = p:read("a")
  local _, _, code = p:close()
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[l] = true end
  return lines, code, out
end

describe("tools/cli-drift.lua", function()
  local new, old, doc
  before_each(function()
    new = harness.tempfile(NEW, ".d.ts")
    old = harness.tempfile(OLD, ".d.ts")
    doc = harness.tempfile(DOC, ".md")
  end)

  it("lists what is new since the older SDK, nested names and values too", function()
    local lines, _, out = run(new, old, doc)
    for _, want in ipairs { "new: hook_event SolarFlare", "new: option nebulaWindow",
      "new: agent_field warpDrive", "new: message hologram",
      "new: message_field system/task_notification.duration_ms",
      "new: field SDKTaskMessage.status 'lost'" } do
      assert.is_true(lines[want], want .. " in:\n" .. out)
    end
    assert.is_nil(lines["new: option model"], out)
  end)

  it("lists what the mapping does not name, and fails then", function()
    local lines, code, out = run(new, old, doc)
    assert.equal(1, code)
    for _, want in ipairs { "unmapped: option nebulaWindow", "unmapped: agent_field warpDrive",
      "unmapped: message hologram" } do
      assert.is_true(lines[want], want .. " in:\n" .. out)
    end
    -- snake_case in the doc maps the camelCase name; a subtype maps its message
    assert.is_nil(lines["unmapped: option allowedTools"], out)
    assert.is_nil(lines["unmapped: message system/task_notification"], out)
    assert.is_nil(lines["unmapped: hook_event SolarFlare"], out)
  end)

  it("passes when every name is mapped", function()
    local lines, code, out = run(old, doc)
    assert.equal(0, code, out)
    assert.is_true(lines["names: 9 mapped of 9 (0 unmapped); new since the older SDK: "
      .. "(no older SDK given)"], out)
  end)
end)
