-- One source of truth for performance figures: what README.md quotes between
-- `<!-- figures: docs/performance.md DATE -->` and `<!-- /figures -->` comes from the
-- sections of docs/performance.md dated DATE, and DATE is that file's latest run.
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The sections of a Markdown text, by their `## ` heading.
local function sections(text)
  local out, heading, body = {}, "", {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local h = line:match("^## (.*)$")
    if h then
      out[#out + 1] = { heading = heading, body = table.concat(body, "\n") }
      heading, body = h, {}
    else
      body[#body + 1] = line
    end
  end
  out[#out + 1] = { heading = heading, body = table.concat(body, "\n") }
  return out
end

-- The figures of a text: numbers (with thousands separators and decimals), as written.
local function numbers(text)
  local out = {}
  for n in text:gmatch("%d[%d,]*%.?%d*") do out[#out + 1] = (n:gsub("[.,]$", "")) end
  return out
end

describe("the README's performance figures", function()
  local readme = read("README.md")
  local perf = read("docs/performance.md")

  it("are docs/performance.md's latest run", function()
    local latest = ""
    for _, sec in ipairs(sections(perf)) do
      local date = sec.heading:match("%((%d%d%d%d%-%d%d%-%d%d)%)")
      if date and date > latest then latest = date end
    end
    local dated = {}
    for _, sec in ipairs(sections(perf)) do
      if sec.heading:find("(" .. latest .. ")", 1, true) then
        dated[#dated + 1] = sec.body
      end
    end
    local source = " " .. table.concat(dated, "\n"):gsub("[^%d,.]", " ") .. " "
    local quoted = 0
    for date, region in readme:gmatch("<!%-%- figures: docs/performance%.md (%S+) %-%->(.-)"
      .. "<!%-%- /figures %-%->") do
      assert.equal(latest, date, "README quotes the run of " .. date .. ", not the latest")
      -- not figures: file names, versions, dates
      region = region:gsub("`[^`]*`", ""):gsub("%d+%.%d+%.%d+", ""):gsub("%d+%-%d+%-%d+", "")
      for _, n in ipairs(numbers(region)) do
        if #n > 1 then
          assert(source:find(" " .. n:gsub("%p", "%%%0") .. "[ ,.]"),
            "README quotes " .. n .. ", which docs/performance.md's sections of " .. latest
            .. " do not have")
          quoted = quoted + 1
        end
      end
    end
    assert(quoted >= 20, "README quotes no figures (or lost its <!-- figures --> marks)")
  end)
end)
