/*
 * main.c -- the claudelua executable.
 *
 * Shaped after lua.c: main() runs pmain() under lua_pcall, so every error
 * becomes a message and an exit status. The difference: each chunk (the
 * script, -e strings) runs as a task on the claude loop, through
 * claude._main, so its top level may wait; SIGINT cancels that task through
 * the loop. The Lua half of the module is compiled in (claude_preload), so
 * the executable works from any directory it is built, installed or copied
 * to; CLAUDELUA_LUA_PATH=dir takes the Lua files from dir instead (for
 * working on them without rebuilding).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <uv.h>

#include "claude.h"
#include "host/alloc.h"
#include "host/repl.h"

static const char *progname = "claudelua";

static void print_help(FILE *out) {
  fprintf(out,
          "usage: %s [options] [script [args]]\n"
          "       %s mcp [options] tools.lua [args]   serve MCP tools (%s mcp --help)\n"
          "       %s remote   serve claude to Neovim or LuaJIT over stdio (claude.thin)\n"
          "Runs a Lua 5.4 script with the claude module; its top level may wait.\n"
          "Available options are:\n"
          "  -e stat   execute string 'stat'\n"
          "  -l name   require library 'name' into global 'name'\n"
          "  -i        enter interactive mode after executing 'script'\n"
          "  -v        show version information (also --version)\n"
          "  -E        ignore environment variables\n"
          "  -W        turn warnings on\n"
          "  --demo    run offline: every claude.query and claude.connect uses the\n"
          "            real claude CLI against a scripted Messages API on 127.0.0.1\n"
          "            (no key, no network; the model calls each MCP tool once)\n"
          "  --demo=scenario.json  the same, with the model's turns from the file\n"
          "  -h        show this help (also --help)\n"
          "  --        stop handling options\n"
          "  -         stop handling options and execute stdin\n"
          "Environment: LUA_INIT_5_4, LUA_INIT, LUA_PATH, LUA_CPATH as for lua;\n"
          "  CLAUDELUA_DEMO=1 (or =scenario.json)  as --demo\n"
          "  CLAUDELUA_LUA_PATH=dir  load the claude Lua modules from dir (a checkout's\n"
          "                          lua/) instead of the copies built into %s\n",
          progname, progname, progname, progname, progname);
}

/* Edit distance of two short strings (for "did you mean"), capped at 9. */
static int distance(const char *a, const char *b) {
  int row[32], i, j, la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 30 || lb > 30) return 9;
  for (j = 0; j <= lb; j++) row[j] = j;
  for (i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = i;
    for (j = 1; j <= lb; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb] < 9 ? row[lb] : 9;
}

static void print_usage(const char *badoption) {
  static const char *const longs[] = {"--help", "--version", "--demo", NULL};
  const char *best = NULL;
  int i, d = 3;
  if ((badoption[1] == 'e' || badoption[1] == 'l') && badoption[2] == '\0') {
    fprintf(stderr, "%s: '%s' needs argument\n", progname, badoption);
    return print_help(stderr);
  }
  for (i = 0; badoption[1] == '-' && longs[i]; i++) {
    int di = distance(badoption, longs[i]);
    if (di < d) d = di, best = longs[i];
  }
  if (best)
    fprintf(stderr, "%s: unrecognized option '%s' (did you mean '%s'?)\n", progname, badoption,
            best);
  else
    fprintf(stderr, "%s: unrecognized option '%s'\n", progname, badoption);
  print_help(stderr);
}

static void message(const char *msg) { fprintf(stderr, "%s: %s\n", progname, msg); }

static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    message(msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  int status;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  status = lua_pcall(L, narg, nres, base);
  lua_remove(L, base);
  return status;
}

static void print_version(void) {
  printf("claudelua %s (%s, libuv %s)\n", CLAUDE_VERSION, LUA_RELEASE, uv_version_string());
}

/* arg table: script at 0, its arguments positive, the options negative */
static void createargtable(lua_State *L, char **argv, int argc, int script) {
  int i, narg;
  if (script == argc) script = 0;
  narg = argc - (script + 1);
  lua_createtable(L, narg, script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/* Runs the function below `narg` arguments as the main task; returns the
 * exit status it asks for (0 when it succeeded). */
static int run_task(lua_State *L, int narg) {
  int status, code = 0;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "claude");
  status = docall(L, 1, 1);
  if (status != LUA_OK) {
    report(L, status);
    lua_pop(L, narg + 1);
    return 1;
  }
  lua_getfield(L, -1, "_main");
  lua_remove(L, -2);
  lua_insert(L, -(narg + 2));
  status = docall(L, narg + 1, 4);
  if (status != LUA_OK) return report(L, status), 1;
  if (!lua_toboolean(L, -4)) {
    const char *msg = lua_tostring(L, -3);
    const char *command = lua_tostring(L, -1); /* the command that failed: its name leads */
    code = (int)luaL_optinteger(L, -2, 1);
    if (code == 130) message("interrupted");
    else if (command != NULL) fprintf(stderr, "%s %s: %s\n", progname, command, msg ? msg : "error");
    else message(msg ? msg : "error");
  }
  lua_pop(L, 4);
  return code;
}

static int dochunk(lua_State *L, int status) {
  if (status != LUA_OK) return report(L, status), 1;
  return run_task(L, 0);
}

static int dolibrary(lua_State *L, const char *name) {
  int status;
  lua_getglobal(L, "require");
  lua_pushstring(L, name);
  status = docall(L, 1, 1);
  if (status == LUA_OK) lua_setglobal(L, name);
  return report(L, status) == LUA_OK ? 0 : 1;
}

static int pushargs(lua_State *L) {
  int i, n;
  if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
  n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

static int handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  int status;
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL;
  status = luaL_loadfile(L, fname);
  if (status != LUA_OK) return report(L, status), 1;
  return run_task(L, pushargs(L));
}

#define has_error 1
#define has_v 2
#define has_e 4
#define has_E 8
#define has_help 16
#define has_i 32
#define has_demo 64

/* the scenario file of --demo=FILE (NULL: the tool tour) */
static const char *demo_scenario = NULL;

static int collectargs(char **argv, int *first) {
  int args = 0, i;
  for (i = 1; argv[i] != NULL; i++) {
    *first = i;
    if (argv[i][0] != '-') return args;
    switch (argv[i][1]) {
      case '-':
        if (strcmp(argv[i], "--version") == 0) {
          args |= has_v;
          break;
        }
        if (strcmp(argv[i], "--help") == 0) return has_help;
        if (strncmp(argv[i], "--demo", 6) == 0 && (argv[i][6] == '\0' || argv[i][6] == '=')) {
          args |= has_demo;
          if (argv[i][6] == '=') demo_scenario = argv[i] + 7;
          break;
        }
        if (argv[i][2] != '\0') return has_error;
        *first = i + 1;
        return args;
      case '\0': return args;
      case 'h':
        if (argv[i][2] != '\0') return has_error;
        return has_help;
      case 'E':
        if (argv[i][2] != '\0') return has_error;
        args |= has_E;
        break;
      case 'W':
        if (argv[i][2] != '\0') return has_error;
        break;
      case 'i':
        if (argv[i][2] != '\0') return has_error;
        args |= has_i | has_v; /* -i implies -v, as in lua */
        break;
      case 'v':
        if (argv[i][2] != '\0') return has_error;
        args |= has_v;
        break;
      case 'e': args |= has_e; /* fall through */
      case 'l':
        if (argv[i][2] == '\0') {
          i++;
          if (argv[i] == NULL || argv[i][0] == '-') return has_error;
        }
        break;
      default: return has_error;
    }
  }
  *first = i;
  return args;
}

static int runargs(lua_State *L, char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
      case 'e':
      case 'l': {
        const char *extra = argv[i] + 2;
        int code;
        if (*extra == '\0') extra = argv[++i];
        code = option == 'e' ? dochunk(L, luaL_loadbuffer(L, extra, strlen(extra), "=(command line)"))
                             : dolibrary(L, extra);
        if (code != 0) return code;
        break;
      }
      case 'W': lua_warning(L, "@on", 0); break;
    }
  }
  return 0;
}

/* The claude modules: the copies compiled in, or with CLAUDELUA_LUA_PATH=dir
 * (not under -E) the files in dir, ahead of everything on package.path. */
static void open_claude(lua_State *L, int noenv) {
  const char *dir = noenv ? NULL : getenv("CLAUDELUA_LUA_PATH");
  if (dir == NULL || dir[0] == '\0') {
    claude_preload(L);
    return;
  }
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_claude_core);
  lua_setfield(L, -2, "claude.core");
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 3);
}

/* os.exit closes the state by default here, so that the claude context
 * ends its children and flushes its pipes before the process goes. */
static int os_exit_closing(lua_State *L) {
  int status;
  if (lua_isboolean(L, 1)) status = lua_toboolean(L, 1) ? EXIT_SUCCESS : EXIT_FAILURE;
  else status = (int)luaL_optinteger(L, 1, EXIT_SUCCESS);
  if (lua_isnoneornil(L, 2) || lua_toboolean(L, 2)) lua_close(L);
  exit(status);
  return 0;
}

static void replace_os_exit(lua_State *L) {
  lua_getglobal(L, "os");
  lua_pushcfunction(L, os_exit_closing);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}

/* Demo mode (--demo, or CLAUDELUA_DEMO=1 or =scenario.json unless -E):
 * claude.testing.demo points every CLI this process starts at a scripted
 * Messages API on 127.0.0.1. Started before the first chunk; stopped with
 * the state. */
static int start_demo(lua_State *L, int args) {
  static const char chunk[] =
      "local scenario = ...\n"
      "local ok, err = require('claude.testing.demo').start { scenario = scenario }\n"
      "if not ok then error(require('claude.errors').message(err), 0) end";
  const char *scenario = demo_scenario;
  int status;
  if (!(args & has_demo)) {
    const char *env = (args & has_E) ? NULL : getenv("CLAUDELUA_DEMO");
    if (env == NULL || env[0] == '\0' || strcmp(env, "0") == 0) return 0;
    if (strcmp(env, "1") != 0) scenario = env;
  }
  status = luaL_loadbuffer(L, chunk, sizeof chunk - 1, "=--demo");
  if (status == LUA_OK) {
    if (scenario != NULL && scenario[0] != '\0') lua_pushstring(L, scenario);
    else lua_pushnil(L);
    status = lua_pcall(L, 1, 0, 0); /* its error is one line, no traceback */
  }
  return report(L, status) == LUA_OK ? 0 : 1;
}

static int handle_luainit(lua_State *L) {
  const char *name = "=LUA_INIT_5_4";
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=LUA_INIT";
    init = getenv(name + 1);
  }
  if (init == NULL) return 0;
  if (init[0] == '@') return dochunk(L, luaL_loadfile(L, init + 1));
  return dochunk(L, luaL_loadbuffer(L, init, strlen(init), name));
}

/* `claudelua mcp [options] tools.lua [args]` serves the tools file as an MCP
 * server (lua/claude/mcp/server/command.lua); `claudelua remote` serves a host
 * that cannot load claude (Neovim: lua/claude/remote.lua). Either runs as the
 * main task, with the arguments after the subcommand. */
static int handle_subcommand(lua_State *L, const char *name, const char *chunk, char **argv,
                             int argc) {
  int i, status = luaL_loadbuffer(L, chunk, strlen(chunk), name);
  if (status != LUA_OK) return report(L, status), 1;
  luaL_checkstack(L, argc, "too many arguments");
  for (i = 2; i < argc; i++) lua_pushstring(L, argv[i]);
  return run_task(L, argc - 2);
}

/* The interactive mode (-i, or no script with a terminal on stdin):
 * lua/claude/repl.lua reads lines through repl.c, as the main task. */
static int doREPL(lua_State *L) {
  static const char chunk[] = "return require('claude.repl').run(...)";
  int status = luaL_loadbuffer(L, chunk, sizeof chunk - 1, "=claudelua -i");
  if (status != LUA_OK) return report(L, status), 1;
  claudelua_repl_push(L);
  return run_task(L, 1);
}

/* The registry's CLAUDE_ALLOC_TRIM_KEY: the pool's free slabs back to the
 * system (core.memory_trim). */
#ifndef CLAUDELUA_PLAIN_ALLOC
static int alloc_trim(lua_State *L) {
  claude_alloc *pool = (claude_alloc *)lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, (lua_Integer)claude_alloc_trim(pool));
  return 1;
}
#endif

static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  claude_alloc *pool = (claude_alloc *)lua_touserdata(L, 3);
  int script = 0, code;
  int mcp = argc > 1 && strcmp(argv[1], "mcp") == 0;
  int remote = argc > 1 && strcmp(argv[1], "remote") == 0;
  int args = (mcp || remote) ? 0 : collectargs(argv, &script);
  luaL_checkversion(L);
  if (argv[0] && argv[0][0]) progname = argv[0];
  if (args == has_error) {
    print_usage(argv[script]);
    lua_pushinteger(L, 1);
    return 1;
  }
  if (args == has_help) {
    print_help(stdout);
    lua_pushinteger(L, 0);
    return 1;
  }
  if (args & has_v) print_version();
  if (args & has_E) {
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  /* tool budgets' memory limit kept by our allocator (alloc.c), no wrapper */
  claude_budget_use_meter(L, claude_alloc_meter(pool), claude_alloc_metered_fn, pool);
#ifndef CLAUDELUA_PLAIN_ALLOC /* (a sanitizer build: no slabs to give back) */
  lua_pushlightuserdata(L, pool);
  lua_pushcclosure(L, alloc_trim, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, CLAUDE_ALLOC_TRIM_KEY);
#endif
  luaL_openlibs(L);
  replace_os_exit(L);
  open_claude(L, args & has_E);
  if (!mcp && !remote) createargtable(L, argv, argc, script);
  /* Generational like lua.c, but with minor collections after 50% growth
   * (Lua: 20%) and major ones after 300% (Lua: 100%): messages wait in a
   * queue for a turn of the loop, survive a minor collection, get promoted,
   * and with Lua's defaults then cost major collections (-9% on small
   * messages); the incremental collector costs 7% at 50 sessions instead.
   * docs/architecture.md. */
  lua_gc(L, LUA_GCGEN, 50, 300);
  if (mcp) {
    createargtable(L, argv, argc, 1);
    code = handle_subcommand(L, "=claudelua mcp",
                             "return require('claude.mcp.server.command').main(...)", argv, argc);
    goto done;
  }
  if (remote) { /* demo mode from CLAUDELUA_DEMO, for the host that starts it */
    createargtable(L, argv, argc, 1);
    if ((code = start_demo(L, 0)) == 0)
      code = handle_subcommand(L, "=claudelua remote",
                               "return require('claude.remote').main(...)", argv, argc);
    goto done;
  }
  if ((code = start_demo(L, args)) != 0) goto done;
  if (!(args & has_E) && (code = handle_luainit(L)) != 0) goto done;
  if ((code = runargs(L, argv, script)) != 0) goto done;
  if (script < argc && (code = handle_script(L, argv + script)) != 0) goto done;
  if (args & has_i) {
    code = doREPL(L);
  } else if (script == argc && !(args & (has_e | has_v))) {
    if (isatty(0)) {
      print_version();
      code = doREPL(L);
    } else {
      code = dochunk(L, luaL_loadfile(L, NULL));
    }
  }
done:
  lua_pushinteger(L, code);
  return 1;
}

/* The state's panic and warning functions, as luaL_newstate sets them (they
 * are static in lauxlib), for a state made with our own allocator. */
static int panic(lua_State *L) {
  const char *msg = lua_tostring(L, -1);
  if (msg == NULL) msg = "error object is not a string";
  lua_writestringerror("PANIC: unprotected error in call to Lua API (%s)\n", msg);
  return 0;
}

static void warn_on(void *ud, const char *message, int tocont);
static void warn_off(void *ud, const char *message, int tocont);

static int warn_control(lua_State *L, const char *message, int tocont) {
  if (tocont || *(message++) != '@') return 0;
  if (strcmp(message, "off") == 0) lua_setwarnf(L, warn_off, L);
  else if (strcmp(message, "on") == 0) lua_setwarnf(L, warn_on, L);
  return 1;
}

static void warn_off(void *ud, const char *message, int tocont) {
  warn_control((lua_State *)ud, message, tocont);
}

static void warn_cont(void *ud, const char *message, int tocont) {
  lua_State *L = (lua_State *)ud;
  lua_writestringerror("%s", message);
  if (tocont) {
    lua_setwarnf(L, warn_cont, L);
  } else {
    lua_writestringerror("%s", "\n");
    lua_setwarnf(L, warn_on, L);
  }
}

static void warn_on(void *ud, const char *message, int tocont) {
  if (warn_control((lua_State *)ud, message, tocont)) return;
  lua_writestringerror("%s", "Lua warning: ");
  warn_cont(ud, message, tocont);
}

int main(int argc, char **argv) {
  int status, code;
  claude_alloc *pool = claude_alloc_new();
  lua_State *L = pool ? lua_newstate(claude_alloc_fn, pool) : NULL;
  if (L == NULL) {
    message("cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_atpanic(L, panic);
  lua_setwarnf(L, warn_off, L);
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  lua_pushlightuserdata(L, pool);
  status = lua_pcall(L, 3, 1, 0);
  code = status == LUA_OK ? (int)lua_tointeger(L, -1) : 1;
  if (status != LUA_OK) report(L, status);
  lua_close(L);
  claude_alloc_free(pool);
  return code;
}
