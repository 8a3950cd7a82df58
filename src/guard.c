/*
 * guard.c -- the network questions the input guards ask (lua/claude/guard/):
 * which addresses a host name resolves to, and what kind of address each one
 * is. (Where a path really leads is fs.c's core.realpath.)
 *
 *   core.resolve(host, callback)       -> starts a look-up; callback(list) or
 *                                         callback(nil, message, code); list
 *                                         items are { address =, family = 4|6 }
 *   core.address_class(address)        -> "public", "loopback", "private",
 *                                         "link_local", "metadata", "unspecified",
 *                                         "multicast", "shared", "reserved",
 *                                         or nil when it is not an address
 *
 * Classification is done on the binary address, so every spelling of one
 * (0x7f.1, 2130706433, ::ffff:127.0.0.1, fe80::1%eth0) lands in one class,
 * and an IPv6 address that carries an IPv4 one (NAT64, 6to4, Teredo, mapped)
 * in the class of the one it carries.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

/* ---- address classes ---------------------------------------------------- */

static int v4_in(uint32_t a, uint32_t net, int bits) {
  uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
  return (a & mask) == (net & mask);
}

#define V4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (d))

static const char *class_v4(uint32_t a) {
  /* cloud instance metadata: AWS, GCP, Azure, OpenStack; Alibaba Cloud */
  if (a == V4(169, 254, 169, 254) || a == V4(100, 100, 100, 200)) return "metadata";
  if (v4_in(a, V4(0, 0, 0, 0), 8)) return "unspecified";
  if (v4_in(a, V4(127, 0, 0, 0), 8)) return "loopback";
  if (v4_in(a, V4(10, 0, 0, 0), 8) || v4_in(a, V4(172, 16, 0, 0), 12) ||
      v4_in(a, V4(192, 168, 0, 0), 16))
    return "private";
  if (v4_in(a, V4(169, 254, 0, 0), 16)) return "link_local";
  if (v4_in(a, V4(100, 64, 0, 0), 10)) return "shared"; /* carrier-grade NAT */
  if (v4_in(a, V4(224, 0, 0, 0), 4)) return "multicast";
  /* IANA's IPv4 special-purpose registry: protocol assignments (DS-Lite, NAT64
   * discovery, PCP and TURN anycast), documentation, the 6to4 relay anycast,
   * benchmarking, 240/4 and the broadcast address */
  if (v4_in(a, V4(192, 0, 0, 0), 24) || v4_in(a, V4(192, 0, 2, 0), 24) ||
      v4_in(a, V4(192, 88, 99, 0), 24) || v4_in(a, V4(198, 18, 0, 0), 15) ||
      v4_in(a, V4(198, 51, 100, 0), 24) || v4_in(a, V4(203, 0, 113, 0), 24) ||
      v4_in(a, V4(240, 0, 0, 0), 4))
    return "reserved";
  return "public";
}

static int zeros(const unsigned char *b, int from, int to) {
  for (; from < to; from++)
    if (b[from] != 0) return 0;
  return 1;
}

#define V4_AT(b, i) V4((b)[i], (b)[(i) + 1], (b)[(i) + 2], (b)[(i) + 3])

/* An IPv6 address that carries an IPv4 one reaches that IPv4 host (through a
 * translator, a tunnel relay or the host's own stack), so it is classed by
 * it. The rest follows IANA's IPv6 special-purpose registry; what lies
 * outside global unicast (2000::/3) and the ranges below is reserved. */
static const char *class_v6(const unsigned char *b) {
  static const unsigned char ec2_metadata[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0,
                                                 0,    0, 0,    0,    0, 0, 2, 0x54};
  if (zeros(b, 0, 10)) {
    if (b[10] == 0xff && b[11] == 0xff) return class_v4(V4_AT(b, 12)); /* ::ffff:a.b.c.d mapped */
    if (b[10] == 0 && b[11] == 0) {
      if (zeros(b, 12, 15) && b[15] <= 1) return b[15] == 1 ? "loopback" : "unspecified";
      return class_v4(V4_AT(b, 12)); /* ::a.b.c.d, the deprecated IPv4-compatible form */
    }
  }
  if (zeros(b, 0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0)
    return class_v4(V4_AT(b, 12)); /* ::ffff:0:a.b.c.d, IPv4-translated (SIIT) */
  if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
    if (zeros(b, 4, 12)) return class_v4(V4_AT(b, 12)); /* NAT64 64:ff9b::/96 */
    /* local-use NAT64 64:ff9b:1::/48: where the IPv4 address sits is the
     * operator's choice (RFC 6052 formats), so it cannot be read back */
    if (b[4] == 0 && b[5] == 1) return "private";
    return "reserved";
  }
  if (memcmp(b, ec2_metadata, 16) == 0) return "metadata";
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) { /* Teredo 2001::/32 */
    uint32_t client = V4_AT(b, 12) ^ 0xffffffffu;                /* stored inverted */
    return class_v4(client);
  }
  if (b[0] == 0x20 && b[1] == 0x02) return class_v4(V4_AT(b, 2)); /* 6to4 2002::/16 */
  /* the rest of the IETF protocol assignments 2001::/23 (PCP and TURN anycast,
   * benchmarking, AMT, AS112, ORCHID, drone ids), documentation 2001:db8::/32 */
  if (b[0] == 0x20 && b[1] == 0x01 && (b[2] & 0xfe) == 0) return "reserved";
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "reserved";
  if (b[0] == 0x3f && (b[1] & 0xf0) == 0xf0) return "reserved"; /* documentation 3fff::/20 */
  if ((b[0] & 0xe0) == 0x20) return "public"; /* global unicast 2000::/3 */
  if ((b[0] & 0xfe) == 0xfc) return "private"; /* unique local fc00::/7 */
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link_local";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private"; /* old site-local */
  if (b[0] == 0xff) return "multicast";
  /* 100::/64 discard-only, 5f00::/16 SRv6 and all space IANA has not
   * allocated */
  return "reserved";
}

/* The class of a numeric address, or NULL when s is not one. inet_aton
 * accepts the short and octal/hex spellings browsers and resolvers do. */
static const char *address_class(const char *s) {
  struct in_addr a4;
  struct in6_addr a6;
  char buf[INET6_ADDRSTRLEN + 1];
  const char *pct = strchr(s, '%'); /* a zone index: fe80::1%eth0 */
  if (pct != NULL && (size_t)(pct - s) < sizeof buf) {
    memcpy(buf, s, (size_t)(pct - s));
    buf[pct - s] = '\0';
    s = buf;
  }
  if (inet_pton(AF_INET6, s, &a6) == 1) return class_v6(a6.s6_addr);
  if (inet_aton(s, &a4) == 1) return class_v4(ntohl(a4.s_addr));
  return NULL;
}

/* core.address_class(address) */
static int l_address_class(lua_State *L) {
  const char *c = address_class(luaL_checkstring(L, 1));
  if (c == NULL) return 0;
  lua_pushstring(L, c);
  return 1;
}

/* ---- name resolution ---------------------------------------------------- */

/* A pending look-up. It counts as a live handle, so the context outlives it,
 * and is on the context's object list, so a closing state cancels it. */
typedef struct lookup {
  claude_handle hdr;
  uv_getaddrinfo_t req;
  int cb_ref;
} lookup;

static void lookup_teardown(claude_handle *h) {
  lookup *q = (lookup *)h;
  uv_cancel((uv_req_t *)&q->req); /* fails harmlessly once it runs */
}

/* Pushes the addresses of res as a list, without duplicates. */
static void push_addresses(lua_State *L, const struct addrinfo *res) {
  int n = 0;
  lua_newtable(L);
  for (; res != NULL; res = res->ai_next) {
    char buf[INET6_ADDRSTRLEN];
    int family = res->ai_family == AF_INET6 ? 6 : 4;
    const void *src = family == 6 ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                                  : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
    int i, dup = 0;
    if (res->ai_family != AF_INET && res->ai_family != AF_INET6) continue;
    if (inet_ntop(res->ai_family, src, buf, sizeof buf) == NULL) continue;
    for (i = 1; i <= n && !dup; i++) {
      lua_rawgeti(L, -1, i);
      lua_getfield(L, -1, "address");
      dup = strcmp(lua_tostring(L, -1), buf) == 0;
      lua_pop(L, 2);
    }
    if (dup) continue;
    lua_createtable(L, 0, 2);
    lua_pushstring(L, buf);
    lua_setfield(L, -2, "address");
    lua_pushinteger(L, family);
    lua_setfield(L, -2, "family");
    lua_rawseti(L, -2, ++n);
  }
}

typedef struct lookup_result {
  lookup *q;
  int status;
  struct addrinfo *res;
} lookup_result;

/* Protected: calls the look-up's callback with its result. */
static int lookup_deliver_p(lua_State *L) {
  lookup_result *r = (lookup_result *)lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->q->cb_ref);
  if (r->status != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "cannot resolve: %s", uv_strerror(r->status));
    lua_pushstring(L, uv_err_name(r->status));
    lua_call(L, 3, 0);
  } else {
    push_addresses(L, r->res);
    lua_call(L, 1, 0);
  }
  return 0;
}

static void lookup_done(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  lookup *q = (lookup *)req->data;
  claude_ctx *ctx = q->hdr.ctx;
  claude_object_unlink(&q->hdr);
  if (!ctx->closing && q->cb_ref != LUA_NOREF) {
    lookup_result r;
    lua_State *L = claude_cb_state(ctx);
    r.q = q;
    r.status = status;
    r.res = res;
    lua_pushcfunction(L, lookup_deliver_p);
    lua_pushlightuserdata(L, &r);
    claude_pcall(ctx, L, 1);
  }
  if (!ctx->closing) claude_unref(ctx, &q->cb_ref);
  uv_freeaddrinfo(res);
  free(q);
  claude_handle_closed(ctx); /* last: it may free the context */
}

/* core.resolve(host, callback): both address families, TCP. */
static int l_resolve(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  size_t len;
  const char *host = luaL_checklstring(L, 1, &len);
  struct addrinfo hints;
  lookup *q;
  int err;
  if (strlen(host) != len) return luaL_argerror(L, 1, "host contains a NUL byte");
  luaL_checktype(L, 2, LUA_TFUNCTION);
  q = (lookup *)calloc(1, sizeof *q);
  if (q == NULL) return luaL_error(L, "claude: out of memory");
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  q->req.data = q;
  err = uv_getaddrinfo(ctx->loop, &q->req, lookup_done, host, NULL, &hints);
  if (err != 0) {
    free(q);
    return claude_push_uv_error(L, err);
  }
  q->cb_ref = claude_ref(ctx, L, 2);
  claude_object_link(ctx, &q->hdr, "lookup", lookup_teardown);
  claude_handle_opened(ctx);
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg guard_functions[] = {
  {"resolve", l_resolve}, {"address_class", l_address_class},
  {NULL, NULL}};

/* Adds the guard functions to the module table on top of the stack. */
void claude_open_guard(lua_State *L) { luaL_setfuncs(L, guard_functions, 0); }
