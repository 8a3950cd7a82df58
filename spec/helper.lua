-- Loaded by busted before the specs (see .busted): finds the built module.
local build = os.getenv("CLAUDELUA_BUILD") or "build"
package.cpath = build .. "/?.so;" .. package.cpath
