std = "lua54"
max_line_length = 100
include_files = { "lua/**/*.lua", "spec/**/*.lua", "examples/**/*.lua", "bench/**/*.lua",
  "*.rockspec", ".busted", ".luacheckrc" }
files["spec/**/*.lua"] = { std = "+busted" }
