/*
 * bench/responder.c — the smallest possible "SDK": it starts the fake CLI, sends `initialize`
 * and one user message, answers the fake's MCP requests directly and counts the text of the
 * assistant messages.  Whatever it measures is the fake's own ceiling: no real SDK can drive
 * the fake faster than this.
 *
 *   responder [--plain] FAKE [ARGS...]
 *
 * The workload and its parameters are the fake's environment (CLAUDELUA_BENCH_*), which the
 * responder passes on.  --plain declares the server without a manifest, so the fake runs the
 * MCP handshake over mcp_message.  Prints one JSON line on stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct { char *d; size_t len, cap; } buf;

static void put(buf *b, const void *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t c = b->cap ? b->cap : 65536;
        while (c < b->len + n) c *= 2;
        b->d = realloc(b->d, c);
        if (!b->d) { perror("responder: realloc"); exit(3); }
        b->cap = c;
    }
    memcpy(b->d + b->len, s, n);
    b->len += n;
}
static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }
static void span(buf *b, jspan v) { put(b, v.p, (size_t)(v.e - v.p)); }

static int to_child = -1;
static buf out;

static void flush_all(void)
{
    size_t off = 0;
    while (off < out.len) {
        ssize_t w = write(to_child, out.d + off, out.len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EPIPE) break;
            perror("responder: write");
            exit(3);
        }
        off += (size_t)w;
    }
    out.len = 0;
}

static const char *server = "calc", *tool = "add";
static long messages, calls, results;
static unsigned long long text_bytes;
static uint64_t t_start, t_init, t_end;

/* Starts an answer to control request `rid` with an mcp_response for JSON-RPC id `id`. */
static void mcp_head(jspan rid, jspan id)
{
    puts_(&out, "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":");
    span(&out, rid);
    puts_(&out, ",\"response\":{\"mcp_response\":{\"jsonrpc\":\"2.0\",\"id\":");
    if (id.p) span(&out, id); else puts_(&out, "0");
    puts_(&out, ",\"result\":");
}

static void on_line(const char *p, const char *e)
{
    jspan line = {p, e}, type;
    if (!js_get(line, "type", &type)) return;
    if (js_streq(type, "control_request")) {
        jspan rid, req, sub, msg, method, id = {0, 0};
        if (!js_get(line, "request_id", &rid) || !js_get(line, "request", &req) || !js_get(req, "subtype", &sub)) {
            fprintf(stderr, "responder: malformed control_request\n");
            exit(2);
        }
        if (!js_streq(sub, "mcp_message") || !js_get(req, "message", &msg) || !js_get(msg, "method", &method)) {
            puts_(&out, "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":");
            span(&out, rid);
            puts_(&out, ",\"response\":{}}}\n");
            return;
        }
        js_get(msg, "id", &id);
        if (js_streq(method, "tools/call")) {
            jspan a, b;
            long long x, y;
            if (!JS_PATH(msg, &a, "params", "arguments", "a") || !JS_PATH(msg, &b, "params", "arguments", "b") ||
                !js_int(a, &x) || !js_int(b, &y)) {
                fprintf(stderr, "responder: tools/call without integer a, b\n");
                exit(2);
            }
            char t[64];
            mcp_head(rid, id);
            snprintf(t, sizeof t, "{\"content\":[{\"type\":\"text\",\"text\":\"%lld\"}]}}}}}\n", x + y);
            puts_(&out, t);
            calls++;
        } else if (js_streq(method, "initialize")) {
            mcp_head(rid, id);
            char t[256];
            snprintf(t, sizeof t,
                     "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":"
                     "{\"name\":\"%s\",\"version\":\"1.0.0\"}}}}}}\n", server);
            puts_(&out, t);
        } else if (js_streq(method, "tools/list")) {
            mcp_head(rid, id);
            char t[512];
            snprintf(t, sizeof t,
                     "{\"tools\":[{\"name\":\"%s\",\"description\":\"Add two numbers\",\"inputSchema\":{\"type\":"
                     "\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}},"
                     "\"required\":[\"a\",\"b\"]}}]}}}}}\n", tool);
            puts_(&out, t);
        } else {                                   /* notifications */
            mcp_head(rid, (jspan){0, 0});
            puts_(&out, "{}}}}}\n");
        }
    } else if (js_streq(type, "assistant")) {
        jspan content;
        messages++;
        if (JS_PATH(line, &content, "message", "content")) {
            for (int i = 0;; i++) {
                jspan c, ct, text;
                if (!js_index(content, i, &c)) break;
                if (js_get(c, "type", &ct) && js_streq(ct, "text") && js_get(c, "text", &text))
                    text_bytes += js_decoded_len(text);
            }
        }
    } else if (js_streq(type, "system")) {
        jspan sub;
        if (!t_init && js_get(line, "subtype", &sub) && js_streq(sub, "init")) t_init = now_ns();
    } else if (js_streq(type, "result")) {
        results++;
        t_end = now_ns();
    }
}

int main(int argc, char **argv)
{
    int plain = 0, ai = 1;
    if (ai < argc && !strcmp(argv[ai], "--plain")) { plain = 1; ai++; }
    if (ai >= argc) {
        fprintf(stderr, "usage: responder [--plain] FAKE [ARGS...]\n");
        return 2;
    }
    if (getenv("CLAUDELUA_BENCH_SERVER")) server = getenv("CLAUDELUA_BENCH_SERVER");
    if (getenv("CLAUDELUA_BENCH_TOOL")) tool = getenv("CLAUDELUA_BENCH_TOOL");
    signal(SIGPIPE, SIG_IGN);

    int pin[2], pout[2];
    if (pipe(pin) || pipe(pout)) { perror("responder: pipe"); return 3; }
    t_start = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        close(pin[0]); close(pin[1]); close(pout[0]); close(pout[1]);
        char **av = calloc((size_t)(argc - ai + 8), sizeof *av);
        int k = 0;
        av[k++] = argv[ai];
        av[k++] = "--output-format"; av[k++] = "stream-json"; av[k++] = "--verbose";
        av[k++] = "--input-format"; av[k++] = "stream-json";
        for (int i = ai + 1; i < argc; i++) av[k++] = argv[i];
        execv(argv[ai], av);
        perror("responder: exec");
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    to_child = pin[1];
    int from_child = pout[0];

    /* initialize (manifest form unless --plain), then the first user message at once, as the TS SDK does */
    char init[2048];
    if (plain)
        snprintf(init, sizeof init,
                 "{\"request_id\":\"resp_init\",\"type\":\"control_request\",\"request\":{\"subtype\":\"initialize\","
                 "\"sdkMcpServers\":[\"%s\"]}}\n", server);
    else
        snprintf(init, sizeof init,
                 "{\"request_id\":\"resp_init\",\"type\":\"control_request\",\"request\":{\"subtype\":\"initialize\","
                 "\"sdkMcpServers\":[\"%s\"],\"sdkMcpServerManifests\":{\"%s\":{\"initializeResult\":{"
                 "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"%s\","
                 "\"version\":\"1.0.0\"}},\"toolsListResult\":{\"tools\":[{\"name\":\"%s\",\"description\":"
                 "\"Add two numbers\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                 "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}}]}}}}}\n",
                 server, server, server, tool);
    puts_(&out, init);
    puts_(&out, "{\"type\":\"user\",\"session_id\":\"\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                "\"text\":\"go\"}]},\"parent_tool_use_id\":null}\n");
    flush_all();

    buf in = {0};
    size_t off = 0, scanned = 0;             /* scanned: bytes after off known to hold no newline */
    int closed_stdin = 0;
    for (;;) {
        if (in.cap - in.len < 1 << 20) {
            if (off) { memmove(in.d, in.d + off, in.len - off); in.len -= off; scanned -= off; off = 0; }
            if (in.cap - in.len < 1 << 20) {
                size_t c = in.cap ? in.cap * 2 : 4 << 20;
                while (c - in.len < 1 << 20) c *= 2;
                in.d = realloc(in.d, c);
                in.cap = c;
            }
        }
        ssize_t n = read(from_child, in.d + in.len, in.cap - in.len);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("responder: read");
            return 3;
        }
        if (n == 0) break;
        in.len += (size_t)n;
        if (scanned < off) scanned = off;
        for (;;) {
            char *p = in.d + off, *nl = memchr(in.d + scanned, '\n', in.len - scanned);
            if (!nl) { scanned = in.len; break; }
            on_line(p, nl);
            off = scanned = (size_t)(nl + 1 - in.d);
        }
        if (off == in.len) off = in.len = scanned = 0;
        if (out.len) flush_all();
        if (results && !closed_stdin) {          /* one-shot: close stdin after the first result */
            close(to_child);
            closed_stdin = 1;
        }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    double secs = t_end && t_init ? (t_end - t_init) / 1e9 : 0;
    printf("{\"source\":\"responder\",\"ok\":%s,\"fake_exit\":%d,\"plain\":%s,\"results\":%ld,\"calls\":%ld,"
           "\"messages\":%ld,\"text_bytes\":%llu,\"seconds\":%.6f,\"wall_s\":%.6f}\n",
           code == 0 && results ? "true" : "false", code, plain ? "true" : "false", results, calls, messages,
           text_bytes, secs, (now_ns() - t_start) / 1e9);
    return code == 0 && results ? 0 : 1;
}
