/*
 * bench/json.h — a small, fast JSON scanner shared by the benchmark's fake CLI
 * and its minimal responder.  It never builds a tree: it walks a line in place,
 * skips values it does not need, and hands back spans.
 *
 * A span is [p, e): p points at the first byte of a value, e one past its end.
 * Every function takes the end of the buffer and never reads past it.
 */
#ifndef CLAUDELUA_BENCH_JSON_H
#define CLAUDELUA_BENCH_JSON_H

#include <stddef.h>
#include <string.h>

typedef struct { const char *p, *e; } jspan;

static inline const char *js_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* p at the opening quote; returns one past the closing quote, or NULL. */
static inline const char *js_skip_string(const char *p, const char *e)
{
    p++;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q) return NULL;
        /* count the backslashes right before the quote */
        const char *b = q;
        while (b > p && b[-1] == '\\') b--;
        if (((q - b) & 1) == 0) return q + 1;
        p = q + 1;
    }
}

/* Skips one value of any kind; returns one past it, or NULL if malformed. */
static inline const char *js_skip(const char *p, const char *e)
{
    int depth = 0;
    p = js_ws(p, e);
    if (p >= e) return NULL;
    do {
        p = js_ws(p, e);
        if (p >= e) return NULL;
        switch (*p) {
        case '"':
            p = js_skip_string(p, e);
            if (!p) return NULL;
            break;
        case '{': case '[':
            depth++; p++;
            continue;
        case '}': case ']':
            if (depth == 0) return NULL;
            depth--; p++;
            break;
        case ',': case ':':
            if (depth == 0) return NULL;
            p++;
            continue;
        default: {
            const char *s = p;
            while (p < e && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                             *p == '-' || *p == '+' || *p == '.' || *p == 'E')) p++;
            if (p == s) return NULL;
            break;
        }
        }
    } while (depth > 0);
    return p;
}

/* True if [p,e) holds exactly one JSON value (surrounding blanks allowed). */
static inline int js_whole(const char *p, const char *e)
{
    const char *q = js_skip(p, e);
    return q && js_ws(q, e) == e;
}

/* v is an object span; finds member key (plain ASCII, no escapes). */
static inline int js_get(jspan v, const char *key, jspan *out)
{
    size_t kl = strlen(key);
    const char *p = js_ws(v.p, v.e), *e = v.e;
    if (p >= e || *p != '{') return 0;
    p = js_ws(p + 1, e);
    if (p < e && *p == '}') return 0;
    while (p < e) {
        if (*p != '"') return 0;
        const char *ks = p + 1, *ke = js_skip_string(p, e);
        if (!ke) return 0;
        p = js_ws(ke, e);
        if (p >= e || *p != ':') return 0;
        p = js_ws(p + 1, e);
        const char *vs = p, *ve = js_skip(p, e);
        if (!ve) return 0;
        if ((size_t)(ke - 1 - ks) == kl && memcmp(ks, key, kl) == 0) {
            out->p = vs; out->e = ve;
            return 1;
        }
        p = js_ws(ve, e);
        if (p < e && *p == ',') p = js_ws(p + 1, e);
        else return 0;
    }
    return 0;
}

/* v is an array span; finds element i. */
static inline int js_index(jspan v, int i, jspan *out)
{
    const char *p = js_ws(v.p, v.e), *e = v.e;
    if (p >= e || *p != '[') return 0;
    p = js_ws(p + 1, e);
    if (p < e && *p == ']') return 0;
    for (int k = 0; p < e; k++) {
        const char *ve = js_skip(p, e);
        if (!ve) return 0;
        if (k == i) { out->p = p; out->e = ve; return 1; }
        p = js_ws(ve, e);
        if (p < e && *p == ',') p = js_ws(p + 1, e);
        else return 0;
    }
    return 0;
}

/* Follows a path of keys; NULL ends it.  Returns 1 if every key was found. */
static inline int js_path(jspan v, jspan *out, const char *const *keys)
{
    jspan cur = v;
    for (; *keys; keys++)
        if (!js_get(cur, *keys, &cur)) return 0;
    *out = cur;
    return 1;
}
#define JS_PATH(v, out, ...) js_path((v), (out), (const char *const[]){ __VA_ARGS__, NULL })

/* True if the span is the string literal "s" (s: plain ASCII, no escapes). */
static inline int js_streq(jspan v, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(v.e - v.p) == n + 2 && v.p[0] == '"' && memcmp(v.p + 1, s, n) == 0;
}

/* Raw contents of a string span without the quotes (escapes left as they are). */
static inline int js_raw(jspan v, const char **s, size_t *n)
{
    if (v.e - v.p < 2 || v.p[0] != '"') return 0;
    *s = v.p + 1; *n = (size_t)(v.e - v.p - 2);
    return 1;
}

/* Parses an integer span (no fraction, no exponent). */
static inline int js_int(jspan v, long long *out)
{
    const char *p = v.p;
    int neg = 0;
    long long x = 0;
    if (p < v.e && *p == '-') { neg = 1; p++; }
    if (p >= v.e) return 0;
    for (; p < v.e; p++) {
        if (*p < '0' || *p > '9') return 0;
        x = x * 10 + (*p - '0');
    }
    *out = neg ? -x : x;
    return 1;
}

/* Length in UTF-8 bytes of the decoded contents of a string span. */
static inline size_t js_decoded_len(jspan v)
{
    const char *p = v.p + 1, *e = v.e - 1;
    size_t n = 0;
    for (;;) {
        const char *q = memchr(p, '\\', (size_t)(e - p));
        if (!q) return n + (size_t)(e - p);
        n += (size_t)(q - p);
        if (q + 1 < e && q[1] == 'u' && q + 6 <= e) {
            unsigned cp = 0;
            for (int i = 2; i < 6; i++) {
                char c = q[i];
                cp = cp * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
            }
            if (cp >= 0xD800 && cp < 0xDC00) { n += 4; p = q + 12; }  /* surrogate pair */
            else { n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3; p = q + 6; }
        } else {
            n += 1; p = q + 2;
        }
        if (p > e) return n;
    }
}

#endif
