-- The official JSON-Schema-Test-Suite (spec/vendor/JSON-Schema-Test-Suite, see its
-- README.md): every test of every required file of draft 2020-12, 2019-09, draft-07 and
-- draft-04, each a row, plus the optional files listed below. A schema the validator refuses
-- fails every test of its group: 0 wrong and 0 refused is the bar. refRemote's documents
-- come from the suite's remotes/ through a loader, as a user's would.
--
-- The optional format/ files run with `formats = true` (format asserted), for 2020-12 and
-- draft-07, from tests/<draft>/optional/format/ when that folder is there: under
-- spec/vendor (see its README.md) or under $JSON_SCHEMA_TEST_SUITE (a checkout of the suite).
local json = require "claude.json"
local schema = require "claude.schema"

local ROOT = "spec/vendor/JSON-Schema-Test-Suite"

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- http://localhost:1234/... is the suite's remotes/ directory
local function loader(uri)
  local rel = uri:match("^http://localhost:1234/(.*)$")
  if not rel or rel:find("..", 1, true) then return nil, "not one of the suite's remotes" end
  return read(ROOT .. "/remotes/" .. rel)
end

local function list(dir)
  local out = {}
  local p = assert(io.popen("ls " .. dir))
  for name in p:lines() do
    if name:match("%.json$") then out[#out + 1] = name end
  end
  p:close()
  table.sort(out)
  return out
end

local DRAFTS = {
  { dir = "draft2020-12", dialect = "2020-12", optional = { "anchor", "bignum",
    "cross-draft", "dependencies-compatibility", "dynamicRef", "ecmascript-regex",
    "float-overflow", "id", "no-schema", "non-bmp-regex", "refOfUnknownKeyword",
    "unknownKeyword" } },
  { dir = "draft2019-09", dialect = "2019-09", optional = { "anchor", "bignum",
    "cross-draft", "dependencies-compatibility", "ecmascript-regex", "float-overflow", "id",
    "no-schema", "non-bmp-regex", "refOfUnknownKeyword", "unknownKeyword" } },
  { dir = "draft7", dialect = "draft-07", optional = { "bignum", "cross-draft",
    "ecmascript-regex", "float-overflow", "id", "non-bmp-regex", "unknownKeyword" } },
  { dir = "draft4", dialect = "draft-04", optional = { "bignum", "ecmascript-regex",
    "float-overflow", "id", "non-bmp-regex" } },
}

-- The format files: ROOT's, or those of a checkout named by JSON_SCHEMA_TEST_SUITE.
local FORMAT_DRAFTS = { ["draft2020-12"] = true, draft7 = true }
local function format_files(draft)
  if not FORMAT_DRAFTS[draft] then return {} end
  for _, root in ipairs { ROOT, os.getenv("JSON_SCHEMA_TEST_SUITE") } do
    local dir = root .. "/tests/" .. draft .. "/optional/format"
    if read(dir .. "/email.json") then
      local out = {}
      for _, name in ipairs(list(dir)) do out[#out + 1] = dir .. "/" .. name end
      return out
    end
  end
  return {}
end

-- One `it` per test of the file at `path`, its schemas compiled with `opts`.
local function run_file(path, title, opts)
  local groups = assert(json.decode(assert(read(path))))
  describe(title, function()
    for gi, group in ipairs(groups) do
      local validate, err = schema.compile(group.schema, opts)
      for ti, test in ipairs(group.tests) do
        it(("%d.%d %s: %s"):format(gi, ti, group.description, test.description), function()
          assert(validate, err and err.message)
          local ok, verr = validate(test.data)
          if test.valid then
            assert(ok == true, verr and verr.message)
          else
            assert(ok == nil, "accepted an invalid value")
            assert.equal("validation", verr.kind)
          end
        end)
      end
    end
  end)
end

for _, draft in ipairs(DRAFTS) do
  local dir = ROOT .. "/tests/" .. draft.dir
  local files = list(dir)
  for _, name in ipairs(draft.optional) do
    if read(dir .. "/optional/" .. name .. ".json") then
      files[#files + 1] = "optional/" .. name .. ".json"
    end
  end
  describe("JSON-Schema-Test-Suite " .. draft.dir, function()
    for _, file in ipairs(files) do
      run_file(dir .. "/" .. file, file, { dialect = draft.dialect, loader = loader })
    end
    for _, path in ipairs(format_files(draft.dir)) do
      run_file(path, "optional/format/" .. path:match("[^/]+$") .. " (formats = true)",
        { dialect = draft.dialect, loader = loader, formats = true })
    end
  end)
end
