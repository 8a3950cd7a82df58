-- stream_flood through claudelua: counts every byte of assistant text that user code receives,
-- timed from the turn's system/init to its result.
local common = dofile((arg[0]:match("^(.*)/") or ".") .. "/common.lua")
local claude = common.claude

local t_init, t_result, result
local messages, text_bytes = 0, 0
for msg in claude.query("go", { cli_path = common.FAKE }) do
  local ty = msg.type
  if ty == "assistant" then
    messages = messages + 1
    for _, block in ipairs(msg.message.content) do -- as the TS driver does
      if block.type == "text" then text_bytes = text_bytes + #block.text end
    end
  elseif ty == "system" and msg.subtype == "init" and not t_init then
    t_init = common.now()
  elseif ty == "result" then
    t_result = common.now()
    result = msg
  end
end
local seconds = t_init and t_result and (t_result - t_init) or 0
common.report {
  driver = "stream_flood",
  ok = result ~= nil and not result.is_error and t_init ~= nil,
  messages = messages,
  text_bytes = text_bytes,
  seconds = seconds,
  mb_per_s = text_bytes / 1e6 / seconds,
  msgs_per_s = messages / seconds,
}
