/*
 * bench/mcp_tiny_server.c -- the smallest stdio MCP server that answers
 * tools/call of `add`, so that a client benchmark measures the client: one
 * JSON-RPC message per line in, one per line out, stdout flushed when stdin
 * has nothing more buffered (answers to a burst go out in one write).
 *
 * It answers initialize (echoing the offered protocol version), tools/list
 * (one tool, add), tools/call (the sum of arguments a and b as text), ping,
 * and ignores notifications. Parsing is a scanner for the fields it needs,
 * not a JSON parser: the clients under test send well-formed messages.
 *
 * `mcp_tiny_server modern` speaks the 2026-07-28 era as well: it answers
 * server/discover, and its results say `"resultType":"complete"`. Without
 * the argument server/discover is an unknown method (a legacy server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The raw JSON value after "key": in line (a number or a string with its
 * quotes), copied into out; returns 0 when the key is absent. */
static int field(const char *line, const char *key, char *out, size_t cap) {
  char pat[64];
  const char *p, *end;
  size_t n;
  snprintf(pat, sizeof pat, "\"%s\":", key);
  p = strstr(line, pat);
  if (p == NULL) return 0;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p == '"') {
    end = strchr(p + 1, '"');
    if (end == NULL) return 0;
    end++;
  } else {
    end = p;
    while (*end && *end != ',' && *end != '}' && *end != ']') end++;
  }
  n = (size_t)(end - p);
  if (n >= cap) n = cap - 1;
  memcpy(out, p, n);
  out[n] = '\0';
  return 1;
}

int main(int argc, char **argv) {
  int modern = argc > 1 && strcmp(argv[1], "modern") == 0;
  const char *rt = modern ? ",\"resultType\":\"complete\"" : "";
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  char id[64], method[64], a[64], b[64], version[64];
  while ((len = getline(&line, &cap, stdin)) > 0) {
    if (!field(line, "method", method, sizeof method)) continue; /* a response: none expected */
    if (!field(line, "id", id, sizeof id)) continue;              /* a notification */
    if (strcmp(method, "\"tools/call\"") == 0) {
      const char *args = strstr(line, "\"arguments\":");
      if (args == NULL || !field(args, "a", a, sizeof a) || !field(args, "b", b, sizeof b)) {
        printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32602,"
               "\"message\":\"a and b expected\"}}\n", id);
      } else {
        printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
               "\"text\":\"%lld\"}]%s}}\n", id, atoll(a) + atoll(b), rt);
      }
    } else if (strcmp(method, "\"initialize\"") == 0) {
      if (!field(line, "protocolVersion", version, sizeof version))
        strcpy(version, "\"2025-06-18\"");
      printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":%s,"
             "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"tiny\","
             "\"version\":\"1.0.0\"}}}\n", id, version);
    } else if (modern && strcmp(method, "\"server/discover\"") == 0) {
      printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"supportedVersions\":"
             "[\"2026-07-28\"],\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":"
             "\"tiny\",\"version\":\"1.0.0\"},\"resultType\":\"complete\",\"ttlMs\":0,"
             "\"cacheScope\":\"private\"}}\n", id);
    } else if (strcmp(method, "\"tools/list\"") == 0) {
      printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":\"add\","
             "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
             "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}}]%s%s}}\n", id, rt,
             modern ? ",\"ttlMs\":0,\"cacheScope\":\"private\"" : "");
    } else if (strcmp(method, "\"ping\"") == 0) {
      printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", id);
    } else {
      printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,"
             "\"message\":\"Method not found\"}}\n", id);
    }
    /* flush once the burst that arrived together is answered */
    if (stdin->_IO_read_ptr >= stdin->_IO_read_end) fflush(stdout);
  }
  free(line);
  return 0;
}
