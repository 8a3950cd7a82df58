/*
 * regex_translate.c -- an ECMA-262 pattern (JSON Schema's `pattern`) spelled
 * in PCRE2's syntax, for core.regex (schema/regex.c), which compiles and
 * matches it. (Over 600 lines: one recursive descent over the pattern, whose
 * escapes, classes and groups call one another and share its state.)
 *
 * The pattern is translated, never passed through: PCRE2's syntax is a
 * superset with other meanings (`\v` is a class, `[[:alpha:]]`, `\Q..\E`,
 * possessive `a*+`, `\s` is ASCII). regex.c compiles in UTF mode without
 * PCRE2_UCP, so that `\d`, `\w` and `\b` are ASCII as in ECMA-262; `\s`, `.`
 * and `$` are spelled out here. Named groups become numbered ones (ECMA-262
 * names are Unicode identifiers, PCRE2's are not), which takes a first pass
 * that counts the groups and collects the names. A lookbehind PCRE2 refuses
 * (not of fixed length) can be made a callout instead, its body recorded for
 * regex.c to match end-anchored against the text before the position.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "schema/regex_translate.h"

/* ECMA-262 WhiteSpace and LineTerminator, for \s (PCRE2's \s, without UCP,
 * is the ASCII six). */
#define ECMA_SPACE                                                                             \
  "\\t\\n\\x{0b}\\f\\r\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}" \
  "\\x{205f}\\x{3000}\\x{feff}"

/* \D and \W spelled as ranges: PCRE2's own, in UTF mode without UCP, miss
 * some characters above 255 (and they could not be complemented inside a
 * class anyway). */
#define NOT_DIGIT "\\x{0}-\\x{2f}\\x{3a}-\\x{d7ff}\\x{e000}-\\x{10ffff}"
#define NOT_WORD                                                                               \
  "\\x{0}-\\x{2f}\\x{3a}-\\x{40}\\x{5b}-\\x{5e}\\x{60}\\x{7b}-\\x{d7ff}\\x{e000}-\\x{10ffff}"

/* ECMA-262's long names of general categories; PCRE2 10.42 knows the short */
static const char *const categories[][2] = {
  {"Letter", "L"}, {"Cased_Letter", "L&"}, {"LC", "L&"}, {"Uppercase_Letter", "Lu"},
  {"Lowercase_Letter", "Ll"}, {"Titlecase_Letter", "Lt"}, {"Modifier_Letter", "Lm"},
  {"Other_Letter", "Lo"}, {"Mark", "M"}, {"Combining_Mark", "M"}, {"Nonspacing_Mark", "Mn"},
  {"Spacing_Mark", "Mc"}, {"Enclosing_Mark", "Me"}, {"Number", "N"}, {"Decimal_Number", "Nd"},
  {"digit", "Nd"}, {"Letter_Number", "Nl"}, {"Other_Number", "No"}, {"Punctuation", "P"},
  {"punct", "P"}, {"Connector_Punctuation", "Pc"}, {"Dash_Punctuation", "Pd"},
  {"Open_Punctuation", "Ps"}, {"Close_Punctuation", "Pe"}, {"Initial_Punctuation", "Pi"},
  {"Final_Punctuation", "Pf"}, {"Other_Punctuation", "Po"}, {"Symbol", "S"},
  {"Math_Symbol", "Sm"}, {"Currency_Symbol", "Sc"}, {"Modifier_Symbol", "Sk"},
  {"Other_Symbol", "So"}, {"Separator", "Z"}, {"Space_Separator", "Zs"},
  {"Line_Separator", "Zl"}, {"Paragraph_Separator", "Zp"}, {"Other", "C"}, {"Control", "Cc"},
  {"cntrl", "Cc"}, {"Format", "Cf"}, {"Surrogate", "Cs"}, {"Private_Use", "Co"},
  {"Unassigned", "Cn"}};

typedef struct tr {
  const unsigned char *p; /* the ECMA-262 source */
  size_t n, i;
  luaL_Buffer *b; /* output; NULL while scanning for group names */
  int callouts;   /* lookbehinds become callouts (PCRE2 refused them) */
  int groups;     /* capturing groups seen so far */
  int total;      /* capturing groups in the whole pattern (first pass) */
  int has_names;
  int first;       /* the first pass: counting groups, collecting names */
  const char *err; /* a syntax error, or NULL */
  int unsupported; /* err is a construct we cannot translate, not bad syntax */
  int dotall;      /* inside (?s: ... ) */
  /* group names in order of their groups: name start/length and number */
  struct {
    size_t at, len;
    int group;
  } name[64];
  int nnames;
  claude_regex_lookbehind *lb; /* the translation's (the output pass records them) */
  int nlb;
} tr;

static void out(tr *t, const char *s) {
  if (t->b) luaL_addstring(t->b, s);
}

static void outcp(tr *t, uint32_t cp) {
  char buf[16];
  if (!t->b) return;
  if (cp < 128 && ((cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') ||
                   (cp >= 'a' && cp <= 'z'))) {
    luaL_addchar(t->b, (char)cp);
    return;
  }
  snprintf(buf, sizeof buf, "\\x{%x}", (unsigned)cp);
  luaL_addstring(t->b, buf);
}

static int fail(tr *t, const char *why) {
  if (!t->err) t->err = why;
  return -1;
}

static int is_hex(int c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hexval(int c) {
  if (c <= '9') return c - '0';
  return (c | 32) - 'a' + 10;
}

static int is_digit(int c) {
  return c >= '0' && c <= '9';
}

/* The next code point of the source (UTF-8), advancing; -1 on bad UTF-8. */
static int64_t next_cp(tr *t) {
  const unsigned char *p = t->p;
  size_t i = t->i;
  uint32_t c = p[i], cp;
  int len, k;
  if (c < 0x80) {
    t->i++;
    return c;
  }
  if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 7;
  else if (c >= 0xE0) len = 3, cp = c & 15;
  else if (c >= 0xC2 && c < 0xE0) len = 2, cp = c & 31;
  else return -1;
  if (c > 0xF4 || i + (size_t)len > t->n) return -1;
  for (k = 1; k < len; k++) {
    if ((p[i + k] & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (p[i + k] & 63);
  }
  t->i += (size_t)len;
  return cp;
}

/* n hex digits at i -> value, or -1 (i unchanged). */
static int64_t hexn(tr *t, int n) {
  int64_t v = 0;
  int k;
  if (t->i + (size_t)n > t->n) return -1;
  for (k = 0; k < n; k++) {
    if (!is_hex(t->p[t->i + k])) return -1;
    v = v * 16 + hexval(t->p[t->i + k]);
  }
  t->i += (size_t)n;
  return v;
}

/* After "\u": a code point (surrogate pairs joined), or -1 for a bad
 * \u{...}; *literal set when "u" was an identity escape (Annex B). */
static int64_t unicode_escape(tr *t, int *literal) {
  int64_t v, lo;
  *literal = 0;
  if (t->i < t->n && t->p[t->i] == '{') {
    size_t j = t->i + 1;
    v = 0;
    while (j < t->n && is_hex(t->p[j]) && v <= 0x10FFFF) v = v * 16 + hexval(t->p[j++]);
    if (j < t->n && t->p[j] == '}' && j > t->i + 1 && v <= 0x10FFFF) {
      t->i = j + 1;
      return v;
    }
    return -1;
  }
  v = hexn(t, 4);
  if (v < 0) {
    *literal = 1;
    return 'u';
  }
  if (v >= 0xD800 && v <= 0xDBFF && t->i + 6 <= t->n && t->p[t->i] == '\\' &&
      t->p[t->i + 1] == 'u') {
    size_t save = t->i;
    t->i += 2;
    lo = hexn(t, 4);
    if (lo >= 0xDC00 && lo <= 0xDFFF) return 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
    t->i = save;
  }
  return v;
}

static int is_surrogate(int64_t cp) {
  return cp >= 0xD800 && cp <= 0xDFFF;
}

/* \p{...} / \P{...} after the letter; emits PCRE2's spelling (without
 * brackets inside a class). */
static int property(tr *t, int negate, int inclass) {
  size_t start, end, eq;
  char buf[112];
  const char *name, *value, *pfx = "";
  size_t nlen, vlen;
  if (t->i >= t->n || t->p[t->i] != '{') return fail(t, "\\p must be followed by {name}");
  start = ++t->i;
  while (t->i < t->n && t->p[t->i] != '}') {
    int c = t->p[t->i];
    if (!(c == '_' || c == '=' || is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
      return fail(t, "bad character in \\p{...}");
    t->i++;
  }
  if (t->i >= t->n) return fail(t, "missing } after \\p{");
  end = t->i++;
  if (end == start || end - start > 60) return fail(t, "bad \\p{...} name");
  for (eq = start; eq < end && t->p[eq] != '='; eq++) {}
  name = (const char *)t->p + start;
  nlen = eq - start;
  value = eq < end ? (const char *)t->p + eq + 1 : NULL;
  vlen = eq < end ? end - eq - 1 : 0;
#define IS(s) (nlen == sizeof(s) - 1 && !memcmp(name, s, sizeof(s) - 1))
  if (value) {
    if (vlen == 0) return fail(t, "bad \\p{name=value}");
    if (IS("General_Category") || IS("gc")) pfx = "";
    else if (IS("Script") || IS("sc")) pfx = "sc:";
    else if (IS("Script_Extensions") || IS("scx")) pfx = "scx:";
    else return fail(t, "unknown property in \\p{name=value}");
    name = value, nlen = vlen;
  } else if (IS("ASCII")) {
    snprintf(buf, sizeof buf, "%s%s\\x{0}-\\x{7f}%s", inclass ? "" : "[", negate ? "^" : "",
             inclass ? "" : "]");
    if (inclass && negate) snprintf(buf, sizeof buf, "\\x{80}-\\x{10ffff}");
    out(t, buf);
    return 0;
  } else if (IS("Assigned")) { /* PCRE2 has its complement */
    name = "Cn", nlen = 2, negate = !negate;
  }
#undef IS
  if (*pfx == 0) { /* a general category: its short name ("digit": the test suite's) */
    size_t k;
    for (k = 0; k < sizeof categories / sizeof categories[0]; k++) {
      if (strlen(categories[k][0]) == nlen && !memcmp(categories[k][0], name, nlen)) {
        name = categories[k][1];
        nlen = strlen(name);
        break;
      }
    }
  }
  snprintf(buf, sizeof buf, "\\%c{%s%.*s}", negate ? 'P' : 'p', pfx, (int)nlen, name);
  out(t, buf);
  return 0;
}

/* The number of the group named `name`, or 0. */
static int group_named(tr *t, const unsigned char *name, size_t len) {
  int k;
  for (k = 0; k < t->nnames; k++) {
    if (t->name[k].len == len && !memcmp(t->p + t->name[k].at, name, len))
      return t->name[k].group;
  }
  return 0;
}

/* An escape outside a class, after the backslash. *atom says whether a
 * quantifier may follow. */
static int escape(tr *t, int *atom) {
  int c, lit;
  int64_t cp;
  char buf[32];
  *atom = 1;
  if (t->i >= t->n) return fail(t, "\\ at end of pattern");
  c = t->p[t->i];
  if (c >= 0x80) {
    cp = next_cp(t);
    if (cp < 0) return fail(t, "invalid UTF-8");
    outcp(t, (uint32_t)cp);
    return 0;
  }
  t->i++;
  switch (c) {
  case 'd': out(t, "[0-9]"); return 0;
  case 'D': out(t, "[" NOT_DIGIT "]"); return 0;
  case 'w': out(t, "[A-Za-z0-9_]"); return 0;
  case 'W': out(t, "[" NOT_WORD "]"); return 0;
  case 'b': case 'B':
    snprintf(buf, sizeof buf, "\\%c", c);
    out(t, buf);
    *atom = 0;
    return 0;
  case 's': out(t, "[" ECMA_SPACE "]"); return 0;
  case 'S': out(t, "[^" ECMA_SPACE "]"); return 0;
  case 't': outcp(t, 9); return 0;
  case 'n': outcp(t, 10); return 0;
  case 'v': outcp(t, 11); return 0;
  case 'f': outcp(t, 12); return 0;
  case 'r': outcp(t, 13); return 0;
  case 'c':
    if (t->i < t->n && ((t->p[t->i] | 32) >= 'a' && (t->p[t->i] | 32) <= 'z')) {
      outcp(t, t->p[t->i++] % 32);
    } else { /* Annex B: a backslash and a c */
      outcp(t, '\\');
      outcp(t, 'c');
    }
    return 0;
  case 'x':
    cp = hexn(t, 2);
    outcp(t, cp < 0 ? 'x' : (uint32_t)cp);
    return 0;
  case 'u':
    cp = unicode_escape(t, &lit);
    if (cp < 0) return fail(t, "bad \\u{...} escape");
    if (is_surrogate(cp)) out(t, "(?!)"); /* no UTF-8 text holds a lone surrogate */
    else outcp(t, (uint32_t)cp);
    return 0;
  case 'p': case 'P':
    if (t->i < t->n && t->p[t->i] == '{') return property(t, c == 'P', 0);
    outcp(t, (uint32_t)c);
    return 0;
  case 'k':
    if (t->has_names) {
      size_t s = t->i + 1, e;
      int g;
      if (t->i >= t->n || t->p[t->i] != '<') return fail(t, "\\k must be followed by <name>");
      for (e = s; e < t->n && t->p[e] != '>'; e++) {}
      if (e >= t->n || e == s) return fail(t, "bad \\k<name>");
      t->i = e + 1;
      if (!t->b) return 0;
      if ((g = group_named(t, t->p + s, e - s)) == 0) return fail(t, "\\k names no group");
      snprintf(buf, sizeof buf, "\\g{%d}", g);
      out(t, buf);
      return 0;
    }
    outcp(t, 'k');
    return 0;
  case '0':
    if (t->i >= t->n || !is_digit(t->p[t->i])) {
      outcp(t, 0);
      return 0;
    }
    /* Annex B octal */
    __attribute__((fallthrough));
  default:
    if (is_digit(c)) {
      size_t start = t->i - 1;
      long v = 0;
      while (start < t->n && is_digit(t->p[start]) && v < 100000) v = v * 10 + (t->p[start++] - '0');
      if (c != '0' && v <= t->total) { /* a backreference */
        t->i = start;
        if (t->callouts < 0) {
          t->unsupported = 1;
          return fail(t, "a backreference inside a lookbehind of varying length");
        }
        snprintf(buf, sizeof buf, "\\g{%ld}", v);
        out(t, buf);
        return 0;
      }
      if (c >= '8') { /* Annex B: \8 and \9 are the digits */
        outcp(t, (uint32_t)c);
        return 0;
      }
      v = c - '0';
      while (t->i < t->n && t->p[t->i] >= '0' && t->p[t->i] <= '7' && v * 8 + (t->p[t->i] - '0') <= 0377)
        v = v * 8 + (t->p[t->i++] - '0');
      outcp(t, (uint32_t)v);
      return 0;
    }
    outcp(t, (uint32_t)c); /* an identity escape */
    return 0;
  }
}

/* A class escape after the backslash, inside [...]: a code point in *cp,
 * or -1 for a set, which is emitted at once (the order of a class's items
 * does not matter). \S only sets *notspace: PCRE2 cannot put ECMA-262's
 * "not a space" inside a class, the caller rewrites the class. */
static int class_escape(tr *t, int64_t *cp, int *notspace, int *items) {
  int c, lit;
  *cp = -1;
  if (t->i >= t->n) return fail(t, "\\ at end of pattern");
  if (t->p[t->i] >= 0x80) {
    *cp = next_cp(t);
    return *cp < 0 ? fail(t, "invalid UTF-8") : 0;
  }
  c = t->p[t->i++];
  switch (c) {
  case 'd': out(t, "0-9"); ++*items; return 0;
  case 'w': out(t, "A-Za-z0-9_"); ++*items; return 0;
  case 'D': out(t, NOT_DIGIT); ++*items; return 0;
  case 'W': out(t, NOT_WORD); ++*items; return 0;
  case 's': out(t, ECMA_SPACE); ++*items; return 0;
  case 'S': *notspace = 1; return 0;
  case 'b': *cp = 8; return 0;
  case 't': *cp = 9; return 0;
  case 'n': *cp = 10; return 0;
  case 'v': *cp = 11; return 0;
  case 'f': *cp = 12; return 0;
  case 'r': *cp = 13; return 0;
  case 'c':
    if (t->i < t->n && (((t->p[t->i] | 32) >= 'a' && (t->p[t->i] | 32) <= 'z') ||
                        is_digit(t->p[t->i]) || t->p[t->i] == '_')) {
      *cp = t->p[t->i++] % 32;
    } else {
      t->i--; /* Annex B: the backslash alone, then c */
      *cp = '\\';
    }
    return 0;
  case 'x': {
    int64_t v = hexn(t, 2);
    *cp = v < 0 ? 'x' : v;
    return 0;
  }
  case 'u':
    *cp = unicode_escape(t, &lit);
    return *cp < 0 ? fail(t, "bad \\u{...} escape") : 0;
  case 'p': case 'P':
    if (t->i < t->n && t->p[t->i] == '{') {
      ++*items;
      return property(t, c == 'P', 1);
    }
    *cp = c;
    return 0;
  default:
    if (c >= '0' && c <= '7') { /* \0, and Annex B octal */
      int64_t v = c - '0';
      while (t->i < t->n && t->p[t->i] >= '0' && t->p[t->i] <= '7' &&
             v * 8 + (t->p[t->i] - '0') <= 0377)
        v = v * 8 + (t->p[t->i++] - '0');
      *cp = v;
      return 0;
    }
    *cp = c;
    return 0;
  }
}

/* One class item [lo, hi] of code points; surrogates cannot be in UTF-8
 * text, PCRE2 refuses them in a UTF pattern. */
static void class_range(tr *t, int64_t lo, int64_t hi, int *items) {
  char buf[48];
  int64_t a[2] = {lo, hi < 0xD800 ? hi : 0xD7FF}, z[2] = {lo > 0xDFFF ? lo : 0xE000, hi};
  int k;
  for (k = 0; k < 2; k++) {
    int64_t x = k == 0 ? a[0] : z[0], y = k == 0 ? a[1] : z[1];
    if (x > y || (k == 0 && x >= 0xD800) || (k == 1 && y < 0xE000)) continue;
    if (x == y) snprintf(buf, sizeof buf, "\\x{%x}", (unsigned)x);
    else snprintf(buf, sizeof buf, "\\x{%x}-\\x{%x}", (unsigned)x, (unsigned)y);
    out(t, buf);
    ++*items;
  }
}

/* The items of a class up to and past its ']'. */
static int class_body(tr *t, int *notspace, int *items) {
  for (;;) {
    int64_t lo, hi;
    if (t->i >= t->n) return fail(t, "missing ] after [");
    if (t->p[t->i] == ']') {
      t->i++;
      return 0;
    }
    if (t->p[t->i] == '\\') {
      t->i++;
      if (class_escape(t, &lo, notspace, items) < 0) return -1;
    } else if ((lo = next_cp(t)) < 0) {
      return fail(t, "invalid UTF-8");
    }
    if (t->i + 1 < t->n && t->p[t->i] == '-' && t->p[t->i + 1] != ']') {
      t->i++;
      if (t->p[t->i] == '\\') {
        t->i++;
        if (class_escape(t, &hi, notspace, items) < 0) return -1;
      } else if ((hi = next_cp(t)) < 0) {
        return fail(t, "invalid UTF-8");
      }
      if (lo >= 0 && hi >= 0) {
        if (hi < lo) return fail(t, "range out of order in character class");
        class_range(t, lo, hi, items);
        continue;
      }
      /* Annex B: a class escape at either end makes '-' a literal */
      class_range(t, '-', '-', items);
      if (hi >= 0) class_range(t, hi, hi, items);
    }
    if (lo >= 0) class_range(t, lo, lo, items);
  }
}

/* [...] after the '['. Scanned once to learn whether it holds \S, then
 * emitted. */
static int char_class(tr *t) {
  int negate = 0, notspace = 0, items = 0;
  luaL_Buffer *b = t->b;
  size_t start;
  if (t->i < t->n && t->p[t->i] == '^') negate = 1, t->i++;
  start = t->i;
  t->b = NULL;
  if (class_body(t, &notspace, &items) < 0) {
    t->b = b;
    return -1;
  }
  t->b = b;
  if (!b) return 0;
  t->i = start;
  if (!notspace) {
    if (items == 0) { /* [] matches nothing, [^] anything */
      out(t, negate ? "[\\s\\S]" : "(?!)");
      return class_body(t, &notspace, &items);
    }
    out(t, negate ? "[^" : "[");
    if (class_body(t, &notspace, &items) < 0) return -1;
    out(t, "]");
  } else if (!negate) { /* [x\S]: anything but a space, or x */
    out(t, "(?:[^" ECMA_SPACE "]");
    if (items) out(t, "|[");
    if (class_body(t, &notspace, &items) < 0) return -1;
    out(t, items ? "])" : ")");
  } else { /* [^x\S]: a space that is not x */
    out(t, items ? "(?:(?![" : "(?:");
    if (class_body(t, &notspace, &items) < 0) return -1;
    out(t, items ? "])[" ECMA_SPACE "])" : "[" ECMA_SPACE "])");
  }
  return 0;
}

/* {n}, {n,}, {n,m} at i (on the '{'): 1 and i past it, the quantifier in
 * buf; 0 when it is no quantifier (Annex B: a literal '{'); -1 on error. */
static int braces(tr *t, char *buf, size_t len) {
  size_t j = t->i + 1, a;
  unsigned long lo = 0, hi = 0;
  int has_hi = 1;
  for (a = j; j < t->n && is_digit(t->p[j]); j++)
    if (lo < 100000000) lo = lo * 10 + (t->p[j] - '0');
  if (j == a) return 0;
  hi = lo;
  if (j < t->n && t->p[j] == ',') {
    hi = 0;
    for (a = ++j; j < t->n && is_digit(t->p[j]); j++)
      if (hi < 100000000) hi = hi * 10 + (t->p[j] - '0');
    has_hi = j > a;
  }
  if (j >= t->n || t->p[j] != '}') return 0;
  if (has_hi && hi < lo) return fail(t, "numbers out of order in {} quantifier");
  t->i = j + 1;
  if (has_hi) snprintf(buf, len, "{%lu,%lu}", lo, hi);
  else snprintf(buf, len, "{%lu,}", lo);
  return 1;
}

/* A group's body up to its ')' in the source, skipping escapes and
 * classes: for a lookbehind turned into a callout. -> index of ')' */
static int skip_group(tr *t, size_t *close) {
  size_t j = t->i;
  int depth = 0, inclass = 0;
  for (; j < t->n; j++) {
    unsigned char c = t->p[j];
    if (c == '\\') {
      j++;
      continue;
    }
    if (inclass) {
      if (c == ']') inclass = 0;
      continue;
    }
    if (c == '[') inclass = 1;
    else if (c == '(') depth++;
    else if (c == ')') {
      if (depth == 0) {
        *close = j;
        return 0;
      }
      depth--;
    }
  }
  return fail(t, "missing )");
}

static int disjunction(tr *t, int depth);

/* ( ... ) after the '('. *atom: whether a quantifier may follow. */
static int group(tr *t, int depth, int *atom) {
  const unsigned char *p = t->p;
  int dotall = t->dotall;
  *atom = 1;
  if (t->i < t->n && p[t->i] == '?') {
    t->i++;
    if (t->i >= t->n) return fail(t, "bad group");
    if (p[t->i] == ':') {
      t->i++;
      out(t, "(?:");
    } else if (p[t->i] == '=' || p[t->i] == '!') {
      out(t, p[t->i] == '=' ? "(?=" : "(?!");
      t->i++;
    } else if (p[t->i] == '<' && t->i + 1 < t->n && (p[t->i + 1] == '=' || p[t->i + 1] == '!')) {
      int negate = p[t->i + 1] == '!';
      t->i += 2;
      *atom = 0;
      if (t->callouts > 0) {
        size_t close;
        char buf[16];
        if (skip_group(t, &close) < 0) return -1;
        if (t->b) {
          if (t->nlb >= CLAUDE_REGEX_LOOKBEHIND_MAX) {
            t->unsupported = 1;
            return fail(t, "too many lookbehinds of varying length");
          }
          t->lb[t->nlb].start = t->i;
          t->lb[t->nlb].end = close;
          t->lb[t->nlb].negate = negate;
          t->nlb++;
          snprintf(buf, sizeof buf, "(?C%d)", t->nlb);
          out(t, buf);
        }
        /* still count the groups inside, for the numbering */
        {
          luaL_Buffer *b = t->b;
          int callouts = t->callouts;
          t->b = NULL;
          t->callouts = -1; /* a backreference in there cannot be emulated */
          if (disjunction(t, depth + 1) < 0) return -1;
          t->b = b;
          t->callouts = callouts;
        }
        t->i = close + 1;
        return 0;
      }
      out(t, negate ? "(?<!" : "(?<=");
    } else if (p[t->i] == '<') {
      size_t s = ++t->i;
      while (t->i < t->n && p[t->i] != '>' && p[t->i] != ')') t->i++;
      if (t->i >= t->n || p[t->i] != '>' || t->i == s) return fail(t, "bad group name");
      if (t->first) { /* remember the name */
        if (t->nnames >= (int)(sizeof t->name / sizeof t->name[0])) {
          t->unsupported = 1;
          return fail(t, "more than 64 named groups");
        }
        t->name[t->nnames].at = s;
        t->name[t->nnames].len = t->i - s;
        t->name[t->nnames].group = t->groups + 1;
        t->nnames++;
      }
      t->i++;
      t->groups++;
      out(t, "(");
    } else {
      /* (?ims-ims: ... ) modifiers */
      size_t s = t->i;
      int on = 1, seen_s = -1;
      char buf[16];
      size_t k = 0;
      while (t->i < t->n && (p[t->i] == 'i' || p[t->i] == 'm' || p[t->i] == 's' || p[t->i] == '-')) {
        if (p[t->i] == '-') {
          if (!on) return fail(t, "bad modifiers group");
          on = 0;
        } else if (p[t->i] == 's') {
          seen_s = on;
        }
        t->i++;
      }
      if (t->i >= t->n || p[t->i] != ':' || t->i == s || t->i - s > 7)
        return fail(t, "invalid group");
      buf[k++] = '(';
      buf[k++] = '?';
      for (; s < t->i; s++) {
        if (p[s] != 's') buf[k++] = (char)p[s];
      }
      if (buf[k - 1] == '-') k--;
      if (k == 2) { /* only s: a plain group */
        buf[k++] = ':';
      } else {
        buf[k++] = ':';
      }
      buf[k] = 0;
      t->i++;
      out(t, buf);
      if (seen_s >= 0) t->dotall = seen_s;
    }
  } else {
    t->groups++;
    out(t, "(");
  }
  if (disjunction(t, depth + 1) < 0) return -1;
  if (t->i >= t->n || p[t->i] != ')') return fail(t, "missing )");
  t->i++;
  t->dotall = dotall;
  out(t, ")");
  return 0;
}

static int disjunction(tr *t, int depth) {
  const unsigned char *p = t->p;
  int atom = 0; /* the last term may be quantified */
  if (depth > 200) {
    t->unsupported = 1;
    return fail(t, "groups nested too deeply");
  }
  while (t->i < t->n) {
    unsigned char c = p[t->i];
    char buf[48];
    if (c == ')') {
      if (depth == 0) return fail(t, "unmatched )");
      return 0;
    }
    switch (c) {
    case '|':
      t->i++;
      out(t, "|");
      atom = 0;
      continue;
    case '*': case '+': case '?': case '{':
      if (c == '{') {
        int r = braces(t, buf, sizeof buf);
        if (r < 0) return -1;
        if (r == 0) { /* Annex B: a literal { */
          t->i++;
          outcp(t, '{');
          atom = 1;
          continue;
        }
      } else {
        buf[0] = (char)c;
        buf[1] = 0;
        t->i++;
      }
      if (!atom) return fail(t, "nothing to repeat");
      out(t, buf);
      if (t->i < t->n && p[t->i] == '?') {
        t->i++;
        out(t, "?");
      }
      atom = 0;
      continue;
    case '^':
      t->i++;
      out(t, "^");
      atom = 0;
      continue;
    case '$':
      t->i++;
      out(t, "$");
      atom = 0;
      continue;
    case '.':
      t->i++;
      out(t, t->dotall ? "[\\s\\S]" : "[^\\n\\r\\x{2028}\\x{2029}]");
      atom = 1;
      continue;
    case '(':
      t->i++;
      if (group(t, depth, &atom) < 0) return -1;
      continue;
    case '[':
      t->i++;
      if (char_class(t) < 0) return -1;
      atom = 1;
      continue;
    case '\\':
      t->i++;
      if (escape(t, &atom) < 0) return -1;
      continue;
    default: {
      int64_t cp = next_cp(t);
      if (cp < 0) return fail(t, "invalid UTF-8");
      outcp(t, (uint32_t)cp);
      atom = 1;
    }
    }
  }
  return 0;
}

int claude_regex_translate(lua_State *L, const char *src, size_t n, int callouts,
                           claude_regex_translation *out) {
  tr t;
  luaL_Buffer b;
  int rc;
  memset(&t, 0, sizeof t);
  t.p = (const unsigned char *)src;
  t.n = n;
  t.callouts = callouts;
  t.lb = out->lb;
  t.first = 1;
  out->err = NULL;
  out->unsupported = 0;
  out->nlb = 0;
  /* first: count the groups, collect the names */
  if (disjunction(&t, 0) < 0 || (t.i < t.n && fail(&t, "unmatched )"))) {
    out->err = t.err;
    out->unsupported = t.unsupported;
    return -1;
  }
  t.first = 0;
  t.total = t.groups;
  t.has_names = t.nnames > 0;
  t.i = 0;
  t.groups = 0;
  t.err = NULL;
  t.dotall = 0;
  luaL_buffinit(L, &b);
  t.b = &b;
  rc = disjunction(&t, 0);
  t.b = NULL;
  luaL_pushresult(&b);
  if (rc < 0) {
    lua_pop(L, 1);
    out->err = t.err;
    out->unsupported = t.unsupported;
    return -1;
  }
  out->nlb = t.nlb;
  return 0;
}
