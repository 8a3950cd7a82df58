/*
 * bench/fake_cli.c — a fake `claude` CLI for benchmarks.
 *
 * It accepts whatever argv an SDK passes (recording it in its report), reads stream-json on
 * stdin, writes stream-json on stdout, answers `initialize` the way the real CLI does, waits for
 * the first user message and then plays the workload named by CLAUDELUA_BENCH_WORKLOAD:
 *
 *   startup       one trivial turn (system/init, one assistant text, result)
 *   mcp_flood     MCP handshake with the in-process server if the SDK did not send a manifest,
 *                 then N `tools/call` of `add` with INFLIGHT outstanding; every answer is checked
 *   stream_flood  COUNT assistant messages of SIZE bytes of text each
 *
 * Parameters (environment):
 *   CLAUDELUA_BENCH_WORKLOAD   startup | mcp_flood | stream_flood        (default startup)
 *   CLAUDELUA_BENCH_N          tools/call count                          (default 20000)
 *   CLAUDELUA_BENCH_INFLIGHT   calls kept outstanding                    (default 1)
 *   CLAUDELUA_BENCH_COUNT      assistant messages                        (default 2000)
 *   CLAUDELUA_BENCH_SIZE       text bytes per assistant message          (default 65536)
 *   CLAUDELUA_BENCH_SERVER     in-process server name                    (default calc)
 *   CLAUDELUA_BENCH_TOOL       tool name                                 (default add)
 *   CLAUDELUA_BENCH_REPORT     file the one-line JSON report is appended to (optional)
 *   CLAUDELUA_BENCH_TIMEOUT    seconds without progress before giving up (default 120)
 *
 * A wrong, missing, duplicated or malformed answer is a failure: a message on stderr, a report
 * with "ok":false, and exit status 2.  After the result line it answers any further control
 * requests, plays a trivial turn for any further user message, and exits 0 on stdin EOF.
 *
 * Plain POSIX: poll(2) + read(2)/write(2), stdout non-blocking, nothing else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixtures.h"
#include "json.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ growable buffers */

typedef struct { char *d; size_t off, len, cap; } buf;

static void buf_reserve(buf *b, size_t n)
{
    if (b->off > 0 && (b->off == b->len || b->off > b->cap / 2)) {
        memmove(b->d, b->d + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
    }
    if (b->len + n <= b->cap) return;
    size_t c = b->cap ? b->cap : 65536;
    while (c < b->len + n) c *= 2;
    b->d = realloc(b->d, c);
    if (!b->d) { perror("fake_cli: realloc"); _exit(3); }
    b->cap = c;
}

static void buf_put(buf *b, const void *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->d + b->len, s, n);
    b->len += n;
}

static void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->d + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void buf_span(buf *b, jspan v) { buf_put(b, v.p, (size_t)(v.e - v.p)); }

/* Replaces every occurrence of `from` in `s` by `to`; returns a new string. */
static char *replace_all(const char *s, const char *from, const char *to)
{
    buf b = {0};
    size_t fl = strlen(from);
    for (;;) {
        const char *q = strstr(s, from);
        if (!q) break;
        buf_put(&b, s, (size_t)(q - s));
        buf_puts(&b, to);
        s = q + fl;
    }
    buf_puts(&b, s);
    buf_put(&b, "", 1);
    return b.d;
}

/* ------------------------------------------------------------------ configuration and state */

enum workload { W_STARTUP, W_MCP_FLOOD, W_STREAM_FLOOD };
static const char *const workload_names[] = { "startup", "mcp_flood", "stream_flood" };

static struct {
    enum workload w;
    long n, inflight, count, size, timeout_s;
    const char *server, *tool, *report;
} cfg;

static int g_argc;
static char **g_argv;
static char session_id[40], id_prefix[16];
static char *system_init_line;      /* built once the servers are known */

static buf in, out;
static int out_closed;
static uint64_t t_process_start, t_init_seen, t_user_seen, t_last_progress;

/* What the SDK declared. */
static int saw_initialize, declared_sdk, declared_manifest, declared_mcp_config;
static char handshake_mode[16] = "none";

/* Phases after the first user message. */
enum phase { P_WAIT_INIT, P_HANDSHAKE, P_FLOOD, P_STREAM, P_DONE };
static enum phase phase = P_WAIT_INIT;
static int hs_step;                 /* 0 initialize sent, 1 notification sent, 2 tools/list sent */

/* Outgoing control requests: request_id = "<prefix>-0000-4000-8000-<12 hex of k>". */
enum kind { K_FREE, K_MCP_INIT, K_MCP_NOTIF, K_TOOLS_LIST, K_CALL };
#define HS_BASE 0                   /* k 0..2 are the handshake, calls start at CALL_BASE */
#define CALL_BASE 3
static unsigned char *pend_kind;
static uint64_t *t_sent, *lat;
static long next_call, outstanding, completed;
static uint64_t t_flood_start, t_flood_end;

/* stream_flood */
static char *wire_text;             /* JSON-escaped text of the largest message */
static size_t wire_len_max;
static long stream_sent;
static uint64_t t_stream_start, t_stream_end;
static unsigned long long stream_text_bytes, stream_wire_bytes;
static int turns;

static void write_report(int ok, const char *error);

static void fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fake_cli: FAIL (%s): %s\n", workload_names[cfg.w], msg);
    write_report(0, msg);
    _exit(2);
}

static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0) {
        fprintf(stderr, "fake_cli: bad %s=%s\n", name, s);
        exit(2);
    }
    return v;
}

static const char *env_str(const char *name, const char *dflt)
{
    const char *s = getenv(name);
    return s && *s ? s : dflt;
}

/* ------------------------------------------------------------------ output */

/* Writes as much pending output as the pipe takes without blocking. */
static void flush_out(void)
{
    while (out.off < out.len) {
        ssize_t w = write(1, out.d + out.off, out.len - out.off);
        if (w > 0) { out.off += (size_t)w; continue; }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (w < 0 && errno == EPIPE) {
            out_closed = 1;
            out.off = out.len;
            if (phase != P_DONE) fail("stdout closed by the SDK before the workload finished");
            return;
        }
        fail("write(stdout): %s", strerror(errno));
    }
    out.off = out.len = 0;
}

static size_t out_pending(void) { return out.len - out.off; }

static void uuid_for(char *dst, unsigned long long k)
{
    snprintf(dst, 37, "%.8s-0000-4000-8000-%012llx", id_prefix, k & 0xffffffffffffULL);
}

static void emit_control_request_head(unsigned long long k)
{
    char id[40];
    uuid_for(id, k);
    buf_printf(&out, "{\"type\":\"control_request\",\"request_id\":\"%s\",\"request\":{", id);
}

static void emit_mcp_initialize(void)
{
    emit_control_request_head(HS_BASE + 0);
    buf_printf(&out,
               "\"subtype\":\"mcp_message\",\"server_name\":\"%s\",\"message\":{\"method\":\"initialize\","
               "\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":"
               "\"claude-code\",\"title\":\"Claude Code\",\"version\":\"2.1.330\",\"description\":\"Anthropic's "
               "agentic coding tool\",\"websiteUrl\":\"https://claude.com/claude-code\"}},\"jsonrpc\":\"2.0\","
               "\"id\":0}}}\n",
               cfg.server);
    pend_kind[HS_BASE + 0] = K_MCP_INIT;
}

static void emit_mcp_initialized(void)
{
    emit_control_request_head(HS_BASE + 1);
    buf_printf(&out,
               "\"subtype\":\"mcp_message\",\"server_name\":\"%s\",\"message\":{\"method\":"
               "\"notifications/initialized\",\"jsonrpc\":\"2.0\"}}}\n",
               cfg.server);
    pend_kind[HS_BASE + 1] = K_MCP_NOTIF;
}

static void emit_tools_list(void)
{
    emit_control_request_head(HS_BASE + 2);
    buf_printf(&out,
               "\"subtype\":\"mcp_message\",\"server_name\":\"%s\",\"message\":{\"method\":\"tools/list\","
               "\"jsonrpc\":\"2.0\",\"id\":1}}}\n",
               cfg.server);
    pend_kind[HS_BASE + 2] = K_TOOLS_LIST;
}

static long long arg_a(long i) { return (long long)i * 3 - 1000; }
static long long arg_b(long i) { return (long long)((i * 7919L) % 100003L); }

static void emit_call(long i)
{
    unsigned long long k = CALL_BASE + (unsigned long long)i;
    emit_control_request_head(k);
    buf_printf(&out,
               "\"subtype\":\"mcp_message\",\"server_name\":\"%s\",\"message\":{\"method\":\"tools/call\","
               "\"params\":{\"name\":\"%s\",\"arguments\":{\"a\":%lld,\"b\":%lld},\"_meta\":{"
               "\"claudecode/toolUseId\":\"toolu_01%016lxBench\",\"progressToken\":%ld}},\"jsonrpc\":\"2.0\","
               "\"id\":%ld}}}\n",
               cfg.server, cfg.tool, arg_a(i), arg_b(i), i, i + 2, i + 2);
    pend_kind[k] = K_CALL;
    t_sent[i] = now_ns();
}

static void emit_system_init(void) { buf_puts(&out, system_init_line); }

static void emit_assistant_text(const char *text)
{
    static unsigned long long seq;
    buf_printf(&out,
               "{\"type\":\"assistant\",\"message\":{\"id\":\"msg_01Bench%016llx\",\"type\":\"message\","
               "\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\",\"text\":"
               "\"%s\"}],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25434,"
               "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1,"
               "\"service_tier\":\"standard\"},\"context_management\":null},\"parent_tool_use_id\":null,"
               "\"session_id\":\"%s\",\"uuid\":\"%s-1111-4000-8000-%012llx\",\"request_id\":"
               "\"req_011Bench%016llx\"}\n",
               seq, text, session_id, id_prefix, seq, seq);
    seq++;
}

static void emit_result(const char *text)
{
    uint64_t ms = (now_ns() - t_user_seen) / 1000000u;
    buf_printf(&out,
               "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"api_error_status\":null,"
               "\"duration_ms\":%llu,\"duration_api_ms\":%llu,\"ttft_ms\":1,\"ttft_stream_ms\":1,"
               "\"time_to_request_ms\":1,\"num_turns\":1,\"result\":\"%s\",\"stop_reason\":\"end_turn\","
               "\"session_id\":\"%s\",\"total_cost_usd\":0.000123,\"usage\":{\"input_tokens\":10,"
               "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1,"
               "\"server_tool_use\":{\"web_search_requests\":0,\"web_fetch_requests\":0},\"service_tier\":"
               "\"standard\",\"cache_creation\":{\"ephemeral_1h_input_tokens\":0,\"ephemeral_5m_input_tokens\":0},"
               "\"inference_geo\":\"\",\"iterations\":[],\"speed\":\"standard\"},\"modelUsage\":{"
               "\"claude-sonnet-4-5\":{\"inputTokens\":10,\"outputTokens\":1,\"cacheReadInputTokens\":0,"
               "\"cacheCreationInputTokens\":0,\"webSearchRequests\":0,\"costUSD\":0.000123,\"contextWindow\":"
               "200000,\"maxOutputTokens\":32000}},\"permission_denials\":[],\"terminal_reason\":\"completed\","
               "\"fast_mode_state\":\"off\",\"uuid\":\"%s-2222-4000-8000-%012d\"}\n",
               (unsigned long long)ms, (unsigned long long)ms, text, session_id, id_prefix, turns);
}

/* Answers a control request from the SDK. */
static void answer_success(jspan request_id, const char *body)
{
    buf_puts(&out, "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":");
    buf_span(&out, request_id);
    if (body) {
        buf_puts(&out, ",\"response\":");
        buf_puts(&out, body);
    }
    buf_puts(&out, "}}\n");
}

/* ------------------------------------------------------------------ stream_flood text */

/* Text: lines of 63 printable characters and a newline (escaped on the wire as \n). */
static size_t wire_len_for(size_t text_bytes) { return text_bytes + text_bytes / 64; }

static void build_wire_text(size_t max_text)
{
    static const char pat[] = "The quick brown fox jumps over the lazy dog; 0123456789 ABCDEFG.";
    size_t pl = sizeof pat - 1;
    wire_len_max = wire_len_for(max_text);
    wire_text = malloc(wire_len_max + 1);
    if (!wire_text) fail("out of memory for %zu bytes of text", max_text);
    size_t w = 0;
    for (size_t j = 0; j < max_text; j++) {
        if (j % 64 == 63) { wire_text[w++] = '\\'; wire_text[w++] = 'n'; }
        else wire_text[w++] = pat[j % pl];
    }
}

static void emit_stream_message(long m)
{
    size_t wl = wire_len_for((size_t)cfg.size);
    char head[512], tail[512];
    int hl = snprintf(head, sizeof head,
                      "{\"type\":\"assistant\",\"message\":{\"id\":\"msg_01Stream%016lx\",\"type\":\"message\","
                      "\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\","
                      "\"text\":\"",
                      m);
    int tl = snprintf(tail, sizeof tail,
                      "\"}],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25434,"
                      "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1,"
                      "\"service_tier\":\"standard\"},\"context_management\":null},\"parent_tool_use_id\":null,"
                      "\"session_id\":\"%s\",\"uuid\":\"%s-3333-4000-8000-%012lx\",\"request_id\":"
                      "\"req_011Stream%016lx\"}\n",
                      session_id, id_prefix, m, m);
    buf_reserve(&out, (size_t)hl + wl + (size_t)tl);
    buf_put(&out, head, (size_t)hl);
    char *t = out.d + out.len;
    buf_put(&out, wire_text, wl);
    if (cfg.size >= 8) {                    /* stamp the message number into its first 8 bytes */
        char stamp[9];
        snprintf(stamp, sizeof stamp, "%08lx", (unsigned long)m & 0xffffffffUL);
        memcpy(t, stamp, 8);
    }
    buf_put(&out, tail, (size_t)tl);
    stream_text_bytes += (unsigned long long)cfg.size;
    stream_wire_bytes += (unsigned long long)hl + wl + (unsigned long long)tl;
}

/* ------------------------------------------------------------------ workload driving */

static void finish_turn(const char *text)
{
    if (cfg.w != W_STREAM_FLOOD || phase != P_DONE || turns > 0) emit_assistant_text(text);
    if (cfg.w == W_STARTUP && turns == 0) write_report(1, NULL);
    emit_result(text);
    phase = P_DONE;
    turns++;
}

static void start_calls(void)
{
    phase = P_FLOOD;
    emit_system_init();
    t_flood_start = now_ns();
}

static void build_system_init(void);

static void start_workload(void)
{
    build_system_init();
    if (cfg.w == W_MCP_FLOOD || (cfg.w == W_STARTUP && (declared_sdk || declared_mcp_config))) {
        if (cfg.w == W_MCP_FLOOD && !declared_sdk && !declared_mcp_config)
            fail("no in-process MCP server named \"%s\" was declared (initialize.sdkMcpServers or "
                 "--mcp-config)", cfg.server);
        if (declared_manifest) {
            strcpy(handshake_mode, "manifest");
            if (cfg.w == W_MCP_FLOOD) start_calls();
            else { emit_system_init(); finish_turn("ok"); }
        } else {
            strcpy(handshake_mode, "plain");
            phase = P_HANDSHAKE;
            hs_step = 0;
            emit_mcp_initialize();
        }
        return;
    }
    emit_system_init();
    if (cfg.w == W_STREAM_FLOOD) {
        phase = P_STREAM;
        t_stream_start = now_ns();
    } else {
        finish_turn("ok");
    }
}

/* Keeps the flood going: INFLIGHT calls outstanding, or the output pipe fed. */
static void produce(void)
{
    if (phase == P_FLOOD) {
        while (outstanding < cfg.inflight && next_call < cfg.n) {
            emit_call(next_call++);
            outstanding++;
        }
        if (completed == cfg.n) {
            t_flood_end = now_ns();
            phase = P_DONE;
            write_report(1, NULL);
            finish_turn("done");
        }
    } else if (phase == P_STREAM) {
        while (stream_sent < cfg.count && out_pending() < (1u << 20))
            emit_stream_message(stream_sent++);
    }
}

/* ------------------------------------------------------------------ input handling */

static void on_initialize(jspan line, jspan req, jspan request_id)
{
    jspan servers, manifests, m, tools;
    (void)line;
    saw_initialize = 1;
    t_init_seen = now_ns();
    if (js_get(req, "sdkMcpServers", &servers)) {
        for (int i = 0;; i++) {
            jspan s;
            if (!js_index(servers, i, &s)) break;
            if (js_streq(s, cfg.server)) declared_sdk = 1;
        }
    }
    if (declared_sdk && js_get(req, "sdkMcpServerManifests", &manifests) && js_get(manifests, cfg.server, &m)) {
        /* The manifest must list the tool the flood calls. */
        int found = 0;
        if (JS_PATH(m, &tools, "toolsListResult", "tools")) {
            for (int i = 0;; i++) {
                jspan t, name;
                if (!js_index(tools, i, &t)) break;
                if (js_get(t, "name", &name) && js_streq(name, cfg.tool)) found = 1;
            }
        }
        if (!found) fail("sdkMcpServerManifests.%s.toolsListResult does not list tool \"%s\"", cfg.server, cfg.tool);
        declared_manifest = 1;
    }
    char pid[24];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *body = replace_all(FIX_INIT_RESPONSE, "@PID@", pid);
    answer_success(request_id, body);
    free(body);
}

static void on_call_response(long i, jspan resp, uint64_t t)
{
    jspan sub, mr, id, text, iserr;
    if (!js_get(resp, "subtype", &sub) || !js_streq(sub, "success")) {
        jspan err;
        if (!js_get(resp, "error", &err)) err = resp;
        fail("tools/call #%ld: control_response is not a success: %.*s", i, (int)(err.e - err.p > 300 ? 300 : err.e - err.p), err.p);
    }
    if (!JS_PATH(resp, &mr, "response", "mcp_response"))
        fail("tools/call #%ld: no response.mcp_response", i);
    long long rid;
    if (!js_get(mr, "id", &id) || !js_int(id, &rid) || rid != i + 2)
        fail("tools/call #%ld: mcp_response.id is not %ld", i, i + 2);
    if (JS_PATH(mr, &iserr, "result", "isError") && iserr.e - iserr.p == 4 && !memcmp(iserr.p, "true", 4))
        fail("tools/call #%ld: result.isError is true", i);
    jspan content, c0;
    if (!JS_PATH(mr, &content, "result", "content") || !js_index(content, 0, &c0) || !js_get(c0, "text", &text))
        fail("tools/call #%ld: no result.content[0].text in %.*s", i, (int)(mr.e - mr.p > 300 ? 300 : mr.e - mr.p), mr.p);
    char want[32];
    int wl = snprintf(want, sizeof want, "%lld", arg_a(i) + arg_b(i));
    const char *s;
    size_t n;
    if (!js_raw(text, &s, &n) || n != (size_t)wl || memcmp(s, want, n) != 0)
        fail("tools/call #%ld: add(%lld, %lld) answered %.*s, want \"%s\"", i, arg_a(i), arg_b(i),
             (int)(text.e - text.p > 100 ? 100 : text.e - text.p), text.p, want);
    lat[i] = t - t_sent[i];
    outstanding--;
    completed++;
}

static void on_handshake_response(enum kind k, jspan resp)
{
    jspan sub, mr, x;
    if (!js_get(resp, "subtype", &sub) || !js_streq(sub, "success"))
        fail("MCP handshake step %d: control_response is not a success", (int)k);
    if (k == K_MCP_NOTIF) {
        emit_tools_list();
        return;
    }
    if (!JS_PATH(resp, &mr, "response", "mcp_response"))
        fail("MCP handshake step %d: no response.mcp_response", (int)k);
    if (k == K_MCP_INIT) {
        if (!JS_PATH(mr, &x, "result", "protocolVersion"))
            fail("MCP initialize: no result.protocolVersion");
        emit_mcp_initialized();
    } else if (k == K_TOOLS_LIST) {
        jspan tools;
        int found = 0;
        if (JS_PATH(mr, &tools, "result", "tools")) {
            for (int i = 0;; i++) {
                jspan t, name;
                if (!js_index(tools, i, &t)) break;
                if (js_get(t, "name", &name) && js_streq(name, cfg.tool)) found = 1;
            }
        }
        if (!found) fail("tools/list does not list tool \"%s\"", cfg.tool);
        if (cfg.w == W_MCP_FLOOD) start_calls();
        else { emit_system_init(); finish_turn("ok"); }
    }
}

static void on_control_response(jspan resp, uint64_t t)
{
    jspan rid;
    const char *s;
    size_t n;
    if (!js_get(resp, "request_id", &rid) || !js_raw(rid, &s, &n))
        fail("control_response without response.request_id");
    /* Ours look like <prefix>-0000-4000-8000-<12 hex>. */
    if (n != 36 || memcmp(s, id_prefix, 8) != 0) return;       /* not one of ours: ignored */
    unsigned long long k = 0;
    for (size_t j = 24; j < 36; j++) {
        char c = s[j];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) fail("control_response with a mangled request_id %.*s", (int)n, s);
        k = k * 16 + (unsigned)d;
    }
    if (k >= (unsigned long long)(CALL_BASE + cfg.n))
        fail("control_response for request_id %.*s, which was never sent", (int)n, s);
    enum kind kind = (enum kind)pend_kind[k];
    if (kind == K_FREE) fail("control_response for request_id %.*s: duplicate or never sent", (int)n, s);
    pend_kind[k] = K_FREE;
    if (kind == K_CALL) on_call_response((long)(k - CALL_BASE), resp, t);
    else on_handshake_response(kind, resp);
}

static void on_line(const char *p, const char *e)
{
    jspan line = {p, e}, type, x;
    uint64_t t = now_ns();
    t_last_progress = t;
    if (js_ws(p, e) == e) return;
    if (!js_whole(p, e) || *js_ws(p, e) != '{') {
        /* The real CLI treats this as fatal, with the same kind of message. */
        fprintf(stderr, "Error parsing streaming input line: %.*s: SyntaxError: JSON Parse error\n",
                (int)(e - p > 200 ? 200 : e - p), p);
        fail("a line on stdin is not a JSON object");
    }
    if (!js_get(line, "type", &type)) return;
    if (js_streq(type, "control_response")) {
        if (!js_get(line, "response", &x)) fail("control_response without response");
        on_control_response(x, t);
    } else if (js_streq(type, "control_request")) {
        jspan rid, req, sub;
        if (!js_get(line, "request_id", &rid) || !js_get(line, "request", &req) || !js_get(req, "subtype", &sub))
            fail("control_request without request_id or request.subtype");
        if (js_streq(sub, "initialize")) on_initialize(line, req, rid);
        else if (js_streq(sub, "mcp_status")) answer_success(rid, "{\"mcpServers\":[]}");
        else answer_success(rid, NULL);
    } else if (js_streq(type, "user")) {
        jspan role;
        if (!JS_PATH(line, &role, "message", "role") || !js_streq(role, "user"))
            fail("user line without message.role == \"user\"");
        if (!t_user_seen) {
            t_user_seen = t;
            start_workload();
        } else if (phase == P_DONE) {
            emit_system_init();
            finish_turn("ok");
        }
    }
    /* keep_alive, control_cancel_request, update_environment_variables, ...: ignored */
}

/* Splits the input buffer into lines. */
static void drain_lines(void)
{
    char *p = in.d + in.off, *e = in.d + in.len;
    for (;;) {
        char *nl = memchr(p, '\n', (size_t)(e - p));
        if (!nl) break;
        on_line(p, nl);
        p = nl + 1;
    }
    in.off = (size_t)(p - in.d);
    if (in.off == in.len) in.off = in.len = 0;
}

/* ------------------------------------------------------------------ report */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void json_string(buf *b, const char *s)
{
    buf_puts(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') buf_printf(b, "\\%c", c);
        else if (c < 0x20) buf_printf(b, "\\u%04x", c);
        else buf_put(b, s, 1);
    }
    buf_puts(b, "\"");
}

/* Peak RSS of this process since exec (ru_maxrss would include the pre-exec parent's). */
static long vm_hwm_kb(void)
{
    char b[4096];
    long kb = -1;
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0) return -1;
    b[n] = 0;
    char *q = strstr(b, "VmHWM:");
    if (q) kb = strtol(q + 6, NULL, 10);
    return kb;
}

static void write_report(int ok, const char *error)
{
    static int written;
    if (written || !cfg.report) return;
    written = 1;
    buf b = {0};
    buf_printf(&b, "{\"source\":\"fake_cli\",\"workload\":\"%s\",\"ok\":%s,\"pid\":%d,", workload_names[cfg.w],
               ok ? "true" : "false", (int)getpid());
    if (error) { buf_puts(&b, "\"error\":"); json_string(&b, error); buf_puts(&b, ","); }
    buf_printf(&b, "\"initialize\":%s,\"handshake\":\"%s\",", saw_initialize ? "true" : "false", handshake_mode);
    buf_printf(&b, "\"t_start_ns\":%llu,", (unsigned long long)t_process_start);
    if (t_init_seen) buf_printf(&b, "\"initialize_after_ms\":%.3f,", (t_init_seen - t_process_start) / 1e6);
    if (t_user_seen) buf_printf(&b, "\"user_after_ms\":%.3f,", (t_user_seen - t_process_start) / 1e6);
    if (cfg.w == W_MCP_FLOOD) {
        buf_printf(&b, "\"n\":%ld,\"inflight\":%ld,\"completed\":%ld,", cfg.n, cfg.inflight, completed);
        if (ok && completed > 0) {
            double secs = (t_flood_end - t_flood_start) / 1e9;
            uint64_t *s = malloc(sizeof *s * (size_t)completed);
            memcpy(s, lat, sizeof *s * (size_t)completed);
            qsort(s, (size_t)completed, sizeof *s, cmp_u64);
#define PCT(q) (s[(size_t)((q) * (double)(completed - 1) + 0.5)] / 1e3)
            buf_printf(&b,
                       "\"t_flood_start_ns\":%llu,\"t_flood_end_ns\":%llu,\"seconds\":%.6f,\"calls_per_s\":%.1f,"
                       "\"lat_us\":{\"min\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"max\":%.1f},",
                       (unsigned long long)t_flood_start, (unsigned long long)t_flood_end, secs,
                       completed / secs, PCT(0), PCT(0.5), PCT(0.9), PCT(0.99), PCT(1));
#undef PCT
            /* log-bucketed histogram (2% wide buckets) so several runs can be merged */
            buf_puts(&b, "\"hist\":[");
            long i = 0;
            int first = 1;
            while (i < completed) {
                int bk = s[i] > 0 ? (int)floor(log((double)s[i]) / log(1.02)) : 0;
                long c = 0;
                while (i < completed && (s[i] > 0 ? (int)floor(log((double)s[i]) / log(1.02)) : 0) == bk) { i++; c++; }
                buf_printf(&b, "%s[%d,%ld]", first ? "" : ",", bk, c);
                first = 0;
            }
            buf_puts(&b, "],");
            free(s);
        }
    } else if (cfg.w == W_STREAM_FLOOD) {
        double secs = (t_stream_end - t_stream_start) / 1e9;
        buf_printf(&b,
                   "\"count\":%ld,\"size\":%ld,\"messages\":%ld,\"text_bytes\":%llu,\"wire_bytes\":%llu,"
                   "\"seconds\":%.6f,",
                   cfg.count, cfg.size, stream_sent, stream_text_bytes, stream_wire_bytes, ok ? secs : 0.0);
    }
    buf_printf(&b, "\"fake_peak_rss_kb\":%ld,\"argv\":[", vm_hwm_kb());
    for (int i = 1; i < g_argc; i++) {
        if (i > 1) buf_puts(&b, ",");
        json_string(&b, g_argv[i]);
    }
    buf_puts(&b, "]}\n");
    int fd = open(cfg.report, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) {
        fprintf(stderr, "fake_cli: cannot open report %s: %s\n", cfg.report, strerror(errno));
    } else {
        if (write(fd, b.d, b.len) != (ssize_t)b.len) fprintf(stderr, "fake_cli: short write to report\n");
        close(fd);
    }
    free(b.d);
}

/* ------------------------------------------------------------------ main */

static void build_system_init(void)
{
    char *a, *b, *c, *d, *e2;
    char mcptools[256], mcpservers[256], uuid[40];
    if (declared_sdk || declared_mcp_config) {
        snprintf(mcptools, sizeof mcptools, ",\"mcp__%s__%s\"", cfg.server, cfg.tool);
        snprintf(mcpservers, sizeof mcpservers, "{\"name\":\"%s\",\"status\":\"connected\"}", cfg.server);
    } else {
        mcptools[0] = mcpservers[0] = 0;
    }
    snprintf(uuid, sizeof uuid, "%.8s-4444-4000-8000-000000000000", id_prefix);
    char cwd[1024];
    if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "/");
    a = replace_all(FIX_SYSTEM_INIT, "@SESSION@", session_id);
    b = replace_all(a, "@UUID@", uuid);
    c = replace_all(b, "@CWD@", cwd);
    d = replace_all(c, "@MCPTOOLS@", mcptools);
    e2 = replace_all(d, "@MCPSERVERS@", mcpservers);
    size_t l = strlen(e2);
    system_init_line = malloc(l + 2);
    memcpy(system_init_line, e2, l);
    system_init_line[l] = '\n';
    system_init_line[l + 1] = 0;
    free(a); free(b); free(c); free(d); free(e2);
}

int main(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    t_process_start = now_ns();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--version")) {
            puts("2.1.330 (Claude Code)");
            return 0;
        }
    }

    const char *w = env_str("CLAUDELUA_BENCH_WORKLOAD", "startup");
    if (!strcmp(w, "startup")) cfg.w = W_STARTUP;
    else if (!strcmp(w, "mcp_flood")) cfg.w = W_MCP_FLOOD;
    else if (!strcmp(w, "stream_flood")) cfg.w = W_STREAM_FLOOD;
    else { fprintf(stderr, "fake_cli: unknown CLAUDELUA_BENCH_WORKLOAD=%s\n", w); return 2; }
    cfg.n = env_long("CLAUDELUA_BENCH_N", 20000);
    cfg.inflight = env_long("CLAUDELUA_BENCH_INFLIGHT", 1);
    cfg.count = env_long("CLAUDELUA_BENCH_COUNT", 2000);
    cfg.size = env_long("CLAUDELUA_BENCH_SIZE", 65536);
    cfg.timeout_s = env_long("CLAUDELUA_BENCH_TIMEOUT", 120);
    cfg.server = env_str("CLAUDELUA_BENCH_SERVER", "calc");
    cfg.tool = env_str("CLAUDELUA_BENCH_TOOL", "add");
    cfg.report = env_str("CLAUDELUA_BENCH_REPORT", NULL);
    if (cfg.inflight < 1) cfg.inflight = 1;
    if (cfg.w != W_MCP_FLOOD) cfg.n = 0;

    /* Ids: a per-process prefix keeps several fakes' ids apart, as real UUIDs would be. */
    snprintf(id_prefix, sizeof id_prefix, "%08x", (unsigned)(getpid() * 2654435761u) ^ (unsigned)t_process_start);
    snprintf(session_id, sizeof session_id, "%.8s-5555-4000-8000-%012llx", id_prefix,
             (unsigned long long)(t_process_start & 0xffffffffffffULL));

    /* Python-style declaration: --mcp-config '{"mcpServers":{"calc":{"type":"sdk",...}}}'. */
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--mcp-config") && i + 1 < argc) v = argv[i + 1];
        else if (!strncmp(argv[i], "--mcp-config=", 13)) v = argv[i] + 13;
        if (v && v[0] == '{') {
            jspan cfgj = {v, v + strlen(v)}, srv, type;
            if (JS_PATH(cfgj, &srv, "mcpServers", cfg.server) && js_get(srv, "type", &type) && js_streq(type, "sdk"))
                declared_mcp_config = 1;
        }
    }

    size_t slots = CALL_BASE + (size_t)cfg.n;
    pend_kind = calloc(slots, 1);
    t_sent = calloc((size_t)cfg.n + 1, sizeof *t_sent);
    lat = calloc((size_t)cfg.n + 1, sizeof *lat);
    if (!pend_kind || !t_sent || !lat) { perror("fake_cli: calloc"); return 3; }
    if (cfg.w == W_STREAM_FLOOD) build_wire_text((size_t)cfg.size);

    signal(SIGPIPE, SIG_IGN);
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
    t_last_progress = now_ns();

    int in_eof = 0;
    for (;;) {
        /* a fast reader can take everything written: keep producing until the pipe is full */
        do {
            produce();
            flush_out();
        } while (phase == P_STREAM && stream_sent < cfg.count && out_pending() == 0);
        if (phase == P_STREAM && stream_sent == cfg.count && out_pending() == 0) {
            t_stream_end = now_ns();
            phase = P_DONE;
            write_report(1, NULL);
            finish_turn("done");
            continue;
        }
        if (in_eof && out_pending() == 0 && phase == P_DONE) break;

        struct pollfd fds[2];
        int nf = 0;
        if (!in_eof) fds[nf++] = (struct pollfd){ .fd = 0, .events = POLLIN };
        if (out_pending() && !out_closed) fds[nf++] = (struct pollfd){ .fd = 1, .events = POLLOUT };
        if (nf == 0) break;
        int r = poll(fds, (nfds_t)nf, 1000);
        if (r < 0) {
            if (errno == EINTR) continue;
            fail("poll: %s", strerror(errno));
        }
        if (r == 0) {
            if (now_ns() - t_last_progress > (uint64_t)cfg.timeout_s * 1000000000u)
                fail("no progress for %ld s (phase %d, %ld/%ld calls answered, %ld/%ld messages sent)",
                     cfg.timeout_s, (int)phase, completed, cfg.n, stream_sent, cfg.count);
            continue;
        }
        for (int i = 0; i < nf; i++) {
            if (fds[i].fd == 1 && (fds[i].revents & (POLLERR | POLLHUP))) {
                out_closed = 1;
                if (phase != P_DONE) fail("stdout closed by the SDK before the workload finished");
                out.off = out.len = 0;
            }
            if (fds[i].fd == 1 && (fds[i].revents & POLLOUT)) t_last_progress = now_ns();
            if (fds[i].fd != 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            buf_reserve(&in, 262144);
            ssize_t n = read(0, in.d + in.len, in.cap - in.len);
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                fail("read(stdin): %s", strerror(errno));
            }
            if (n == 0) {
                in_eof = 1;
                if (in.len > in.off) {                  /* a last line without a newline */
                    buf_put(&in, "\n", 1);
                    drain_lines();
                }
                /* Like the real CLI, a turn that needs nothing more from the SDK goes on after
                 * stdin closes (SDKs close it right after the prompt when no server or hook
                 * needs answers); one that still waits for answers cannot. */
                if (phase != P_DONE && phase != P_STREAM)
                    fail("stdin closed before the workload finished (phase %d, %ld/%ld calls answered, "
                         "%ld/%ld messages sent)", (int)phase, completed, cfg.n, stream_sent, cfg.count);
                continue;
            }
            in.len += (size_t)n;
            drain_lines();
        }
    }
    return 0;
}
