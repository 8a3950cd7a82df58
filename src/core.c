/*
 * core.c -- luaopen_claude_core: assembles the C half of the module. It
 * includes the header of each part and calls its open function; nothing
 * includes anything of core.c's.
 */
#include <signal.h>

#include "budget/budget.h"
#include "context.h"
#include "crypto/crypto.h"
#include "http/client.h"
#include "http/server.h"
#include "http/sse.h"
#include "io/io.h"
#include "json/json.h"
#include "mcp/envelope.h"
#include "mcp/pending.h"
#include "mcp/router.h"
#include "redis/redis.h"
#include "schema/flat.h"
#include "schema/idn.h"
#include "schema/regex.h"
#include "task.h"
#include "trace/trace.h"
#include "yaml/yaml.h"

/* A write to a child that died must be an EPIPE error, not a dead host. */
static void ignore_sigpipe(void) {
  struct sigaction sa;
  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
  }
}

int luaopen_claude_core(lua_State *L) {
  ignore_sigpipe();
  lua_newtable(L);
  claude_open_context(L);
  claude_open_timer(L);
  claude_open_signal(L);
  claude_open_os(L);
  claude_open_stream(L);
  claude_open_process(L);
  claude_open_json(L);
  claude_open_router(L);
  claude_open_envelope(L);
  claude_open_reader(L);
  claude_open_pending(L);
  claude_open_task(L);
  claude_open_http(L);
  claude_open_guard(L);
  claude_open_sse(L);
  claude_open_http_client(L);
  claude_open_crypto(L);
  claude_open_base64(L);
  claude_open_key(L); /* before the two that add methods to claude.core.Key */
  claude_open_jws(L);
  claude_open_key_jwk(L);
  claude_open_fs(L);
  claude_open_budget(L);
  claude_open_regex(L);
  claude_open_idn(L);
  claude_open_flat(L);
  claude_open_busy_poll(L);
  claude_open_redis(L);
  claude_open_yaml(L);
  claude_open_trace_ids(L);
  claude_open_otlp(L);
  lua_pushliteral(L, CLAUDE_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
