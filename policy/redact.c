/* SPDX-License-Identifier: MIT */
/* Secrets out of command lines.  See redact.h.
 *
 * Each pattern marks byte ranges: its capture groups when it has any (the
 * secret inside a recognisable context, e.g. the value after
 * "--password="), else its whole match (a token of a known shape).  The
 * ranges of every pattern over the original text are merged and each
 * merged range becomes one REDACTED, so patterns never see each other's
 * output.
 *
 * Every pattern with a variable-length prefix starts with a lookbehind
 * that lets it start only at the beginning of that prefix (not at each of
 * its characters), which keeps matching linear on long inputs. */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include "redact.h"
#include "xalloc.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An option or assignment value: "double quoted" (unless it starts with
   $, a variable), 'single quoted', or a bare word that does not start
   with $ (a variable), '-' (the next option) or a quote.  Three groups. */
#define VALUE \
  "(?:\"(?![$])((?:[^\"\\\\]|\\\\.)*)\"" \
  "|'([^']*)'" \
  "|(?![-$\"'])([^\\s'\";&|<>()]+))"

/* Word boundaries for names that may contain '-' or '_'. */
#define NOT_AFTER_WORD "(?<![A-Za-z0-9_-])"
/* An option starts the text or follows a blank or a quote. */
#define OPTION_START "(?<![^\\s'\"])"
#define MYSQL "(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow" \
  "|mysqlcheck|mysqlpump|mariadb|mariadb-dump|mariadb-admin)"
#define LOGIN_TOOLS "(?:docker|podman|buildah|skopeo|helm|oras|nerdctl)"
/* The rest of one simple command (up to a pipe, list operator or end),
   stopping at the next occurrence of the command word: a later
   occurrence is a match start of its own, so no stretch of text is
   scanned from many starts. */
#define SAME_COMMAND(words) "\\b(?:(?!" words ")[^|;&\\n])*?"

/* An upper-case variable name that names a secret: its last part (parts
   are separated by '_') is TOKEN, PASSWORD, PASSWD, PASS, KEY, APIKEY,
   CREDENTIAL or CREDENTIALS, or it ends in _PWD, or one of its parts is
   SECRET.  GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY and MYSQL_PWD are;
   TOKENIZERS_PARALLELISM, MONKEY and PWD are not. */
static bool
secret_name (const char *name, size_t len)
{
  static const char *const last_parts[] = {
    "TOKEN", "PASSWORD", "PASSWD", "PASS", "KEY", "APIKEY", "CREDENTIAL",
    "CREDENTIALS",
  };
  size_t start = len;
  while (start > 0 && name[start - 1] != '_')
    start--;
  for (size_t i = 0; i < sizeof last_parts / sizeof last_parts[0]; i++)
    if (len - start == strlen (last_parts[i])
        && !memcmp (name + start, last_parts[i], len - start))
      return true;
  if (start > 1 && len - start == 3 && !memcmp (name + start, "PWD", 3))
    return true;
  for (size_t p = 0; p < len;)
    {
      size_t n = 0;
      while (p + n < len && name[p + n] != '_')
        n++;
      if (n == 6 && !memcmp (name + p, "SECRET", 6))
        return true;
      p += n + 1;
    }
  return false;
}

/* A pattern marks its capture groups, or its whole match when it has
   none.  With a name filter, group 1 is a name that is kept, and the
   other groups are marked only when the filter accepts the name. */
struct pattern
{
  const char *re;
  bool (*name_ok) (const char *name, size_t len);
};

static const struct pattern patterns[] = {
  /* scheme://user:PASSWORD@host */
  { "(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://[^\\s/?#@:'\"]*:"
    "(?![$])([^\\s/?#'\"]+)@", NULL },
  /* secret query parameters */
  { "(?i)[?&](?:password|passwd|pwd|pass|token|access_token|refresh_token"
    "|id_token|api_?key|apikey|secret|client_secret|sig|signature|key|auth"
    "|x-amz-signature|x-amz-credential|x-amz-security-token)"
    "=([^&\\s'\"#]+)", NULL },
  /* Authorization: [scheme] VALUE */
  { "(?i)" NOT_AFTER_WORD "(?:proxy-)?authorization\\s*:\\s*"
    "(?:(?:bearer|basic|token|digest|negotiate|bot|apikey|key|sso-key)\\s+)?"
    "([^\\s'\",]+)", NULL },
  /* API-key and token headers */
  { "(?i)" NOT_AFTER_WORD "(?:x-)?(?:(?:goog-)?api[-_]?key"
    "|(?:auth|access|private|vault|session|csrf)[-_]?token)\\s*:\\s*"
    "([^\\s'\",]+)", NULL },
  /* --option=VALUE, --option VALUE, -option VALUE */
  { "(?i)" OPTION_START "--?(?:password|passwd|pass|token|api[-_]?key|apikey"
    "|access[-_]token|auth[-_]token|refresh[-_]token|bearer[-_]token"
    "|client[-_]secret|secret[-_]key|secret[-_]access[-_]key|access[-_]key"
    "|storepass|keypass|srcstorepass|deststorepass|keystore[-_]password"
    "|db[-_]password)(?:=|\\s+)" VALUE, NULL },
  /* curl -u user:PASSWORD (elsewhere -u is a uid:gid or a flag) */
  { NOT_AFTER_WORD "curl" SAME_COMMAND ("curl") OPTION_START
    "(?:-u\\s*|-U\\s*|--user(?:=|\\s+)|--proxy-user(?:=|\\s+))"
    "(?:\"[^\":]*:((?:[^\"\\\\]|\\\\.)*)\"|'[^':]*:([^']*)'"
    "|[^\\s'\":]*:([^\\s'\";&|<>()]+))", NULL },
  /* mysql -pPASSWORD (a separate word after -p is a database name) */
  { NOT_AFTER_WORD MYSQL SAME_COMMAND (MYSQL) OPTION_START "-p" VALUE, NULL },
  /* sshpass -p PASSWORD */
  { NOT_AFTER_WORD "sshpass" SAME_COMMAND ("sshpass") OPTION_START "-p\\s*"
    VALUE, NULL },
  /* docker login -p PASSWORD */
  { NOT_AFTER_WORD LOGIN_TOOLS "\\s+(?:registry\\s+)?login"
    SAME_COMMAND (LOGIN_TOOLS) OPTION_START "-p\\s*" VALUE, NULL },
  /* NAME=VALUE: an upper-case NAME, judged by secret_name() */
  { "(?<![A-Za-z0-9_])([A-Z0-9_]++)=" VALUE, secret_name },
  /* password=VALUE and friends, any case */
  { "(?i)(?<![A-Za-z0-9_.-])(?:password|passwd|token|secret|api_?key|apikey"
    "|access_token|auth_token|client_secret)=" VALUE, NULL },
  /* JSON "name": "VALUE", also with escaped quotes (\"name\":\"VALUE\") */
  { "(?i)\\\\?\"(?:password|passwd|pass|pwd|token|secret|api[_-]?key|apikey"
    "|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token"
    "|client[_-]?secret|secret[_-]?key|private[_-]?key|token[_-]?secret"
    "|token[_-]?id|credentials?)\\\\?\"\\s*:\\s*\\\\?\""
    "((?:[^\"\\\\]|\\\\[^\"])*)", NULL },
  /* YAML / TOML / INI lines: name: VALUE, name = VALUE */
  { "(?im)^[\\t -]*(?:password|passwd|token|secret|api[_-]?key|apikey"
    "|access[_-]?token|auth[_-]?token|client[_-]?secret|secret[_-]?key"
    "|token[_-]?secret|token[_-]?id)[ \\t]*(?::[ \\t]+|=[ \\t]*)"
    "(?:\"((?:[^\"\\\\\\n]|\\\\.)*)\"|'([^'\\n]*)'"
    "|(?![$\"'|>])([^\\s'\"#]+))", NULL },
  /* PEM private key bodies (to the end of the text if never closed) */
  { "(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(.+?)"
    "(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\\z)", NULL },
  /* token shapes: the whole match */
  { "(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}", NULL },
  { "(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}", NULL },
  { NOT_AFTER_WORD "sk-[A-Za-z0-9_-]{20,}", NULL },
  { "(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}", NULL },
  { "(?<![A-Za-z0-9_])xox[bpasr]-[A-Za-z0-9-]{10,}", NULL },
  { "(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])", NULL },
  { NOT_AFTER_WORD "eyJ[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}\\."
    "[A-Za-z0-9_-]*", NULL },
  { "(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20,}", NULL },
  { "(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{20,}", NULL },
  { NOT_AFTER_WORD "a[ks]-[A-Za-z0-9]{12,}", NULL },
  { "(?<![A-Za-z0-9_])AIza[0-9A-Za-z_-]{35}", NULL },
  { "(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}", NULL },
  { "(?<![A-Za-z0-9_])pypi-[A-Za-z0-9_-]{50,}", NULL },
};

#define N_PATTERNS (sizeof patterns / sizeof patterns[0])

/* Far above what any of the patterns needs on a real command. */
#define MATCH_LIMIT 10000000u

static pcre2_code *compiled[N_PATTERNS];
static uint32_t n_groups[N_PATTERNS];
static pcre2_match_context *match_ctx;
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

/* The patterns are constants: one that does not compile is a bug. */
static void
compile_patterns (void)
{
  for (size_t i = 0; i < N_PATTERNS; i++)
    {
      int code;
      PCRE2_SIZE at;
      compiled[i] = pcre2_compile ((PCRE2_SPTR) patterns[i].re,
                                   PCRE2_ZERO_TERMINATED, PCRE2_NEVER_UTF,
                                   &code, &at, NULL);
      if (!compiled[i])
        {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message (code, msg, sizeof msg);
          fprintf (stderr, "airlock: redact pattern %zu, offset %zu: %s\n",
                   i, (size_t) at, (const char *) msg);
          abort ();
        }
      pcre2_pattern_info (compiled[i], PCRE2_INFO_CAPTURECOUNT,
                          &n_groups[i]);
    }
  match_ctx = pcre2_match_context_create (NULL);
  if (!match_ctx)
    oom ();
  pcre2_set_match_limit (match_ctx, MATCH_LIMIT);
}

struct span
{
  size_t start, end;
};

struct spans
{
  struct span *v;
  size_t n, cap;
};

static void
add_span (struct spans *s, size_t start, size_t end)
{
  if (end <= start)
    return;
  if (s->n == s->cap)
    {
      s->cap = s->cap ? 2 * s->cap : 16;
      s->v = reallocarray (s->v, s->cap, sizeof *s->v);
      if (!s->v)
        oom ();
    }
  s->v[s->n++] = (struct span) { start, end };
}

static int
by_start (const void *a, const void *b)
{
  const struct span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Mark what pattern i finds in text.  False when matching failed. */
static bool
find_secrets (size_t i, const char *text, size_t len,
              pcre2_match_data *md, struct spans *out)
{
  size_t offset = 0;
  while (offset <= len)
    {
      int rc = pcre2_match (compiled[i], (PCRE2_SPTR) text, len, offset, 0,
                            md, match_ctx);
      if (rc == PCRE2_ERROR_NOMATCH)
        return true;
      if (rc < 0)
        return false;
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer (md);
      int first = 1;
      if (patterns[i].name_ok)
        first = patterns[i].name_ok (text + ov[2], ov[3] - ov[2]) ? 2 : rc;
      if (n_groups[i] == 0)
        add_span (out, ov[0], ov[1]);
      else
        for (int g = first; g < rc; g++)
          if (ov[2 * g] != PCRE2_UNSET)
            add_span (out, ov[2 * g], ov[2 * g + 1]);
      offset = ov[1] > offset ? ov[1] : offset + 1;
    }
  return true;
}

char *
redact_secrets (const char *text)
{
  if (!text)
    return NULL;
  pthread_once (&compile_once, compile_patterns);

  size_t len = strlen (text);
  struct spans spans = { NULL, 0, 0 };
  pcre2_match_data *md = pcre2_match_data_create (32, NULL);
  if (!md)
    oom ();
  bool ok = true;
  for (size_t i = 0; i < N_PATTERNS && ok; i++)
    ok = find_secrets (i, text, len, md, &spans);
  pcre2_match_data_free (md);
  if (!ok)
    {
      /* Fail closed. */
      free (spans.v);
      char *all = strdup (REDACTED);
      if (!all)
        oom ();
      return all;
    }

  if (spans.n)
    qsort (spans.v, spans.n, sizeof *spans.v, by_start);
  /* Each merged span shrinks or grows to strlen (REDACTED). */
  size_t cap = len + 1 + spans.n * sizeof REDACTED;
  char *out = malloc (cap);
  if (!out)
    oom ();
  size_t o = 0, at = 0;
  for (size_t k = 0; k < spans.n;)
    {
      size_t start = spans.v[k].start, end = spans.v[k].end;
      for (k++; k < spans.n && spans.v[k].start <= end; k++)
        if (spans.v[k].end > end)
          end = spans.v[k].end;
      if (start < at)
        start = at;
      memcpy (out + o, text + at, start - at);
      o += start - at;
      memcpy (out + o, REDACTED, sizeof REDACTED - 1);
      o += sizeof REDACTED - 1;
      at = end;
    }
  memcpy (out + o, text + at, len - at);
  o += len - at;
  out[o] = '\0';
  free (spans.v);
  return out;
}
