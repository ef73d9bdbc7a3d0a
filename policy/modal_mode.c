/* SPDX-License-Identifier: MIT */
/* Modal mode resolution and direct-credential discovery.  See
 * modal_mode.h.
 *
 * The credentials file is Modal's ~/.modal.toml, one table per profile,
 * as `modal token set` writes it.  Its small TOML subset is parsed here
 * (a general TOML library would be a new dependency for six lines of
 * syntax); what falls outside the subset is reported, never guessed at.
 * Token values are wiped from memory once looked at and never quoted. */
#define _GNU_SOURCE
#include "modal_mode.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A real file is a few hundred bytes; the bound keeps a hostile one
 * cheap. */
#define MAX_CONFIG_BYTES (256 * 1024)
#define MAX_PROFILES 256

#define CREDENTIALS_HOWTO \
  "set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run `modal token set` " \
  "(it writes ~/.modal.toml)"

/* ---- allocation ---- */

static void
free_secret (char *s)
{
  if (s)
    {
      explicit_bzero (s, strlen (s));
      free (s);
    }
}

/* ---- modes ---- */

int
modal_mode_parse (const char *text, enum modal_mode *out)
{
  static const struct
  {
    const char *word;
    enum modal_mode mode;
  } words[] = {
    { "auto", MODAL_AUTO },
    { "direct", MODAL_DIRECT },
    { "managed", MODAL_MANAGED },
  };
  if (!text)
    return -EINVAL;
  const char *start = text + strspn (text, " \t\r\n");
  size_t len = strlen (start);
  while (len > 0 && strchr (" \t\r\n", start[len - 1]))
    len--;
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (len == strlen (words[i].word)
        && !strncasecmp (start, words[i].word, len))
      {
        *out = words[i].mode;
        return 0;
      }
  return -EINVAL;
}

const char *
modal_mode_name (enum modal_mode mode)
{
  switch (mode)
    {
    case MODAL_AUTO:
      return "auto";
    case MODAL_DIRECT:
      return "direct";
    case MODAL_MANAGED:
      return "managed";
    }
  return "invalid";
}

const char *
modal_backend_name (enum modal_backend backend)
{
  switch (backend)
    {
    case MODAL_NONE:
      return "none";
    case MODAL_USE_DIRECT:
      return "direct";
    case MODAL_USE_MANAGED:
      return "managed";
    }
  return "invalid";
}

/* ---- resolution ---- */

/* Why the managed way cannot be used, or NULL when it can. */
static const char *
managed_problem (const struct modal_inputs *in)
{
  switch (in->entitlement)
    {
    case MODAL_QUERY_FAILED:
      return "the tool gateway entitlement could not be checked (the query "
             "failed, which counts as not entitled)";
    case MODAL_NOT_ENTITLED:
      return "this account is not entitled to the tool gateway (the "
             "entitlement check said no)";
    case MODAL_ENTITLED:
      break;
    default:
      return "the tool gateway entitlement is unknown";
    }
  if (!in->gateway_origin && !in->gateway_token)
    return "the tool gateway is not ready: no gateway origin is configured "
           "and no access token is available";
  if (!in->gateway_origin)
    return "the tool gateway is not ready: no gateway origin (URL) is "
           "configured";
  if (!in->gateway_token)
    return "the tool gateway is not ready: no access token is available "
           "(log in to the gateway's account again)";
  return NULL;
}

static char *
direct_detail (const struct modal_inputs *in)
{
  if (in->direct_why_not && *in->direct_why_not)
    return xasprintf (" (%s)", in->direct_why_not);
  return xstrdup ("");
}

enum modal_backend
modal_resolve (const struct modal_inputs *in, char **err)
{
  char *msg = NULL;
  enum modal_backend use = MODAL_NONE;
  const char *managed_no = in ? managed_problem (in) : NULL;

  if (!in)
    msg = xstrdup ("Modal: no facts to choose a backend from");
  else
    switch (in->mode)
      {
      case MODAL_MANAGED:
        if (!managed_no)
          use = MODAL_USE_MANAGED;
        else if (in->has_direct)
          msg = xasprintf ("Modal is set to managed mode, but %s. Direct "
                           "Modal credentials were found: set the Modal "
                           "mode to direct or auto to use them.",
                           managed_no);
        else
          msg = xasprintf ("Modal is set to managed mode, but %s. To use "
                           "your own Modal account instead, set the Modal "
                           "mode to direct or auto and " CREDENTIALS_HOWTO
                           ".", managed_no);
        break;
      case MODAL_DIRECT:
        if (in->has_direct)
          use = MODAL_USE_DIRECT;
        else
          {
            char *detail = direct_detail (in);
            msg = xasprintf ("Modal is set to direct mode, but no Modal "
                             "credentials were found%s. To fix it, "
                             CREDENTIALS_HOWTO ".%s", detail,
                             managed_no ? ""
                             : " The tool gateway is available: set the "
                               "Modal mode to managed or auto to use it.");
            free (detail);
          }
        break;
      case MODAL_AUTO:
        if (!managed_no)
          use = MODAL_USE_MANAGED;
        else if (in->has_direct)
          use = MODAL_USE_DIRECT;
        else
          {
            char *detail = direct_detail (in);
            msg = xasprintf ("Modal (auto mode) has neither way to run: "
                             "managed is unavailable because %s, and no "
                             "direct Modal credentials were found%s. To use "
                             "your own Modal account, " CREDENTIALS_HOWTO ".",
                             managed_no, detail);
            free (detail);
          }
        break;
      default:
        msg = xasprintf ("Modal: invalid mode %d", (int) in->mode);
        break;
      }

  if (err)
    *err = msg;
  else
    free (msg);
  return use;
}

/* ---- the environment ---- */

static const char *
env_get (const char *const *envp, const char *name)
{
  size_t n = strlen (name);
  for (; envp && *envp; envp++)
    if (!strncmp (*envp, name, n) && (*envp)[n] == '=')
      return *envp + n + 1;
  return NULL;
}

static bool
env_set (const char *const *envp, const char *name)
{
  const char *v = env_get (envp, name);
  return v && *v;
}

/* ---- the TOML subset ---- */

struct profile
{
  char *name;
  unsigned line;
  char *token_id, *token_secret;  /* NULL: absent */
  bool id_not_string, secret_not_string;
  bool active;
};

struct config_file
{
  const char *path;
  struct profile *profiles;
  size_t n;
  char *error;    /* "PATH:LINE: what" */
};

struct cursor
{
  const char *p;
  unsigned line;
  struct config_file *cf;
};

static bool __attribute__ ((format (printf, 2, 3)))
syntax_error (struct cursor *c, const char *fmt, ...)
{
  if (c->cf->error)
    return false;
  va_list ap;
  char *what;
  va_start (ap, fmt);
  int n = vasprintf (&what, fmt, ap);
  va_end (ap);
  if (n < 0)
    oom ();
  c->cf->error = xasprintf ("%s:%u: %s", c->cf->path, c->line, what);
  free (what);
  return false;
}

static void
skip_blanks (struct cursor *c)
{
  while (*c->p == ' ' || *c->p == '\t')
    c->p++;
}

/* Only a comment or nothing may follow. */
static bool
end_of_line (struct cursor *c)
{
  skip_blanks (c);
  if (*c->p == '#')
    {
      for (c->p++; *c->p; c->p++)
        if ((unsigned char) *c->p < 0x20 && *c->p != '\t')
          return syntax_error (c, "control character in a comment");
      return true;
    }
  if (*c->p)
    return syntax_error (c, "unexpected text after the value");
  return true;
}

/* Append a code point as UTF-8 (at most 4 bytes: never more than the
   escape it comes from). */
static void
put_utf8 (char **o, uint32_t cp)
{
  char *q = *o;
  if (cp < 0x80)
    *q++ = (char) cp;
  else if (cp < 0x800)
    {
      *q++ = (char) (0xc0 | (cp >> 6));
      *q++ = (char) (0x80 | (cp & 0x3f));
    }
  else if (cp < 0x10000)
    {
      *q++ = (char) (0xe0 | (cp >> 12));
      *q++ = (char) (0x80 | ((cp >> 6) & 0x3f));
      *q++ = (char) (0x80 | (cp & 0x3f));
    }
  else
    {
      *q++ = (char) (0xf0 | (cp >> 18));
      *q++ = (char) (0x80 | ((cp >> 12) & 0x3f));
      *q++ = (char) (0x80 | ((cp >> 6) & 0x3f));
      *q++ = (char) (0x80 | (cp & 0x3f));
    }
  *o = q;
}

/* The escape after a backslash (c->p on the backslash; left on the
   escape's last character).  NULL, or what is wrong. */
static const char *
parse_escape (struct cursor *c, char **o)
{
  static const char simple[] = "btnfre\"\\";
  static const char decoded[] = "\b\t\n\f\r\x1b\"\\";
  c->p++;
  const char *k = *c->p ? strchr (simple, *c->p) : NULL;
  if (k)
    {
      *(*o)++ = decoded[k - simple];
      return NULL;
    }
  int digits = *c->p == 'u' ? 4 : *c->p == 'U' ? 8 : 0;
  if (!digits)
    return "invalid escape sequence in a string";
  uint32_t cp = 0;
  for (int i = 0; i < digits; i++)
    {
      char h = c->p[1];
      int v = h >= '0' && h <= '9' ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (v < 0)
        return "invalid \\u or \\U escape in a string";
      cp = (cp << 4) | (uint32_t) v;
      c->p++;
    }
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return "escape of an invalid code point";
  put_utf8 (o, cp);
  return NULL;
}

/* A "basic" or 'literal' one-line string at c->p (on the quote); *out is
   malloc'd.  The decoded text is never longer than the source line, so
   one buffer of the rest of the line holds it. */
static bool
parse_string (struct cursor *c, char **out)
{
  char quote = *c->p;
  if (c->p[1] == quote && c->p[2] == quote)
    return syntax_error (c, "multi-line strings are not supported");
  size_t cap = strlen (c->p) + 1;
  char *buf = malloc (cap);
  if (!buf)
    oom ();
  char *o = buf;
  const char *problem = NULL;
  for (c->p++; !problem; c->p++)
    {
      unsigned char ch = (unsigned char) *c->p;
      if (ch == '\0')
        {
          problem = "unterminated string";
          break;
        }
      if (ch == (unsigned char) quote)
        break;
      if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
        problem = "control character in a string";
      else if (ch != '\\' || quote == '\'')
        *o++ = (char) ch;
      else
        problem = parse_escape (c, &o);
    }
  if (problem)
    {
      explicit_bzero (buf, cap);
      free (buf);
      return syntax_error (c, "%s", problem);
    }
  c->p++;       /* the closing quote */
  *o = '\0';
  *out = buf;
  return true;
}

static bool
is_bare_key_char (char ch)
{
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')
         || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

static bool
parse_key (struct cursor *c, char **out)
{
  if (*c->p == '"' || *c->p == '\'')
    return parse_string (c, out);
  const char *start = c->p;
  while (is_bare_key_char (*c->p))
    c->p++;
  if (c->p == start)
    return syntax_error (c, "expected a key or a [table]");
  *out = strndup (start, (size_t) (c->p - start));
  if (!*out)
    oom ();
  return true;
}

enum value_kind { V_STRING, V_BOOL, V_NUMBER };

struct value
{
  enum value_kind kind;
  char *text;     /* V_STRING */
  bool boolean;   /* V_BOOL */
};

static bool
at_word_end (const char *p)
{
  return !*p || *p == ' ' || *p == '\t' || *p == '#';
}

static bool
parse_value (struct cursor *c, struct value *v)
{
  memset (v, 0, sizeof *v);
  if (*c->p == '"' || *c->p == '\'')
    {
      v->kind = V_STRING;
      return parse_string (c, &v->text);
    }
  if (!strncmp (c->p, "true", 4) && at_word_end (c->p + 4))
    {
      v->kind = V_BOOL;
      v->boolean = true;
      c->p += 4;
      return true;
    }
  if (!strncmp (c->p, "false", 5) && at_word_end (c->p + 5))
    {
      v->kind = V_BOOL;
      c->p += 5;
      return true;
    }
  /* Numbers (and dates) only matter for keys this code ignores: any run
     of number characters is taken. */
  const char *start = c->p;
  if (*c->p == '+' || *c->p == '-')
    c->p++;
  if (*c->p >= '0' && *c->p <= '9')
    {
      while (*c->p && strchr ("0123456789_.eE+-:TZ", *c->p))
        c->p++;
      v->kind = V_NUMBER;
      return true;
    }
  c->p = start;
  if (*c->p == '[' || *c->p == '{')
    return syntax_error (c, "arrays and inline tables are not supported");
  if (!*c->p)
    return syntax_error (c, "missing value after '='");
  return syntax_error (c, "unrecognised value (expected a quoted string, "
                       "true, false or a number)");
}

static struct profile *
find_profile (struct config_file *cf, const char *name)
{
  for (size_t i = 0; i < cf->n; i++)
    if (!strcmp (cf->profiles[i].name, name))
      return &cf->profiles[i];
  return NULL;
}

static bool
parse_table_header (struct cursor *c, struct profile **current)
{
  c->p++;
  if (*c->p == '[')
    return syntax_error (c, "arrays of tables ([[...]]) are not supported");
  skip_blanks (c);
  char *name;
  if (!parse_key (c, &name))
    return false;
  skip_blanks (c);
  if (*c->p == '.')
    {
      free (name);
      return syntax_error (c, "dotted table names are not supported");
    }
  if (*c->p != ']')
    {
      free (name);
      return syntax_error (c, "expected ']' to close the table name");
    }
  c->p++;
  if (find_profile (c->cf, name))
    {
      syntax_error (c, "table [%s] is defined twice", name);
      free (name);
      return false;
    }
  if (c->cf->n >= MAX_PROFILES)
    {
      free (name);
      return syntax_error (c, "more than %d profiles", MAX_PROFILES);
    }
  struct profile *grown = reallocarray (c->cf->profiles, c->cf->n + 1,
                                        sizeof *grown);
  if (!grown)
    oom ();
  c->cf->profiles = grown;
  *current = &grown[c->cf->n++];
  memset (*current, 0, sizeof **current);
  (*current)->name = name;
  (*current)->line = c->line;
  return end_of_line (c);
}

/* key = value inside a profile.  Duplicate keys are tracked by name in a
   small list per line pass: a profile has few keys. */
struct seen_keys
{
  char **names;
  size_t n;
};

static bool
parse_key_value (struct cursor *c, struct profile *cur, struct seen_keys *seen)
{
  char *key;
  if (!parse_key (c, &key))
    return false;
  skip_blanks (c);
  if (*c->p == '.')
    {
      free (key);
      return syntax_error (c, "dotted keys are not supported");
    }
  if (*c->p != '=')
    {
      free (key);
      return syntax_error (c, "expected '=' after the key");
    }
  c->p++;
  skip_blanks (c);
  if (!cur)
    {
      free (key);
      return syntax_error (c, "key outside any [profile] table");
    }
  for (size_t i = 0; i < seen->n; i++)
    if (!strcmp (seen->names[i], key))
      {
        syntax_error (c, "key '%s' is defined twice in [%s]", key, cur->name);
        free (key);
        return false;
      }
  char **grown = reallocarray (seen->names, seen->n + 1, sizeof *grown);
  if (!grown)
    oom ();
  seen->names = grown;
  seen->names[seen->n++] = key;

  struct value v;
  if (!parse_value (c, &v))
    return false;
  if (!strcmp (key, "token_id") || !strcmp (key, "token_secret"))
    {
      bool is_id = !strcmp (key, "token_id");
      if (v.kind == V_STRING)
        *(is_id ? &cur->token_id : &cur->token_secret) = v.text;
      else
        *(is_id ? &cur->id_not_string : &cur->secret_not_string) = true;
    }
  else
    {
      if (!strcmp (key, "active"))
        {
          if (v.kind != V_BOOL)
            {
              free_secret (v.text);
              return syntax_error (c, "'active' must be true or false");
            }
          cur->active = v.boolean;
        }
      free_secret (v.text);
    }
  return end_of_line (c);
}

static void
seen_keys_clear (struct seen_keys *s)
{
  for (size_t i = 0; i < s->n; i++)
    free (s->names[i]);
  free (s->names);
  s->names = NULL;
  s->n = 0;
}

/* Parse text (NUL-terminated, modified in place: lines are split). */
static bool
parse_config (struct config_file *cf, char *text)
{
  struct cursor c = { .cf = cf, .line = 0 };
  struct profile *cur = NULL;
  struct seen_keys seen = { NULL, 0 };
  bool ok = true;

  if (!strncmp (text, "\xef\xbb\xbf", 3))
    text += 3;
  for (char *line = text; ok && line;)
    {
      char *nl = strchr (line, '\n');
      if (nl)
        *nl = '\0';
      size_t len = strlen (line);
      if (len && line[len - 1] == '\r')
        line[len - 1] = '\0';
      c.p = line;
      c.line++;
      skip_blanks (&c);
      if (*c.p == '\0' || *c.p == '#')
        ok = end_of_line (&c);
      else if (*c.p == '[')
        {
          ok = parse_table_header (&c, &cur);
          seen_keys_clear (&seen);
        }
      else
        ok = parse_key_value (&c, cur, &seen);
      line = nl ? nl + 1 : NULL;
    }
  seen_keys_clear (&seen);
  return ok;
}

static void
config_file_clear (struct config_file *cf)
{
  for (size_t i = 0; i < cf->n; i++)
    {
      free (cf->profiles[i].name);
      free_secret (cf->profiles[i].token_id);
      free_secret (cf->profiles[i].token_secret);
    }
  free (cf->profiles);
  free (cf->error);
  cf->profiles = NULL;
  cf->n = 0;
  cf->error = NULL;
}

/* ---- reading the file ---- */

/* Read the whole file; NULL and *why set on failure. */
static char *
read_config (const char *path, char **why)
{
  /* O_NONBLOCK: a FIFO planted at the path must not hang the broker. */
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    {
      *why = errno == ENOENT ? xasprintf ("%s does not exist", path)
             : xasprintf ("%s cannot be opened: %s", path, strerror (errno));
      return NULL;
    }
  struct stat st;
  if (fstat (fd, &st) < 0)
    {
      *why = xasprintf ("%s: %s", path, strerror (errno));
      close (fd);
      return NULL;
    }
  if (S_ISDIR (st.st_mode))
    {
      *why = xasprintf ("%s is a directory, not a file", path);
      close (fd);
      return NULL;
    }
  if (!S_ISREG (st.st_mode))
    {
      *why = xasprintf ("%s is not a regular file", path);
      close (fd);
      return NULL;
    }
  if (st.st_size > MAX_CONFIG_BYTES)
    {
      *why = xasprintf ("%s is larger than %d bytes", path, MAX_CONFIG_BYTES);
      close (fd);
      return NULL;
    }
  size_t cap = (size_t) st.st_size + 1, len = 0;
  char *buf = malloc (cap + 1);
  if (!buf)
    oom ();
  for (;;)
    {
      ssize_t n = read (fd, buf + len, cap - len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          *why = xasprintf ("%s cannot be read: %s", path, strerror (errno));
          explicit_bzero (buf, len);
          free (buf);
          close (fd);
          return NULL;
        }
      if (n == 0)
        break;
      len += (size_t) n;
      if (len == cap)
        {
          /* The file grew while being read. */
          *why = xasprintf ("%s changed while being read", path);
          explicit_bzero (buf, len);
          free (buf);
          close (fd);
          return NULL;
        }
    }
  close (fd);
  buf[len] = '\0';
  if (memchr (buf, '\0', len))
    {
      *why = xasprintf ("%s contains a NUL byte", path);
      explicit_bzero (buf, len);
      free (buf);
      return NULL;
    }
  return buf;
}

/* ---- choosing the profile ---- */

static struct profile *
choose_profile (struct config_file *cf, const char *const *envp, char **why)
{
  const char *wanted = env_get (envp, "MODAL_PROFILE");
  if (wanted && *wanted)
    {
      struct profile *p = find_profile (cf, wanted);
      if (!p)
        *why = xasprintf ("%s has no profile [%s] (selected by "
                          "MODAL_PROFILE)", cf->path, wanted);
      return p;
    }

  struct profile *active = NULL;
  for (size_t i = 0; i < cf->n; i++)
    if (cf->profiles[i].active)
      {
        if (active)
          {
            *why = xasprintf ("%s marks several profiles active ([%s] and "
                              "[%s]): keep one `active = true` or set "
                              "MODAL_PROFILE", cf->path, active->name,
                              cf->profiles[i].name);
            return NULL;
          }
        active = &cf->profiles[i];
      }
  if (active)
    return active;
  if (cf->n == 0)
    {
      *why = xasprintf ("%s holds no profile", cf->path);
      return NULL;
    }
  if (cf->n == 1)
    return &cf->profiles[0];
  struct profile *def = find_profile (cf, "default");
  if (!def)
    *why = xasprintf ("%s has %zu profiles, none marked `active = true` and "
                      "none named [default]: set MODAL_PROFILE or mark one "
                      "active", cf->path, cf->n);
  return def;
}

/* Why this profile's tokens are not usable, or NULL. */
static char *
profile_problem (const struct config_file *cf, const struct profile *p)
{
  const char *missing = NULL;
  if (p->id_not_string)
    missing = "a token_id that is not a string";
  else if (p->secret_not_string)
    missing = "a token_secret that is not a string";
  else if (!p->token_id && !p->token_secret)
    missing = "neither token_id nor token_secret";
  else if (!p->token_id)
    missing = "no token_id";
  else if (!p->token_secret)
    missing = "no token_secret";
  else if (!*p->token_id)
    missing = "an empty token_id";
  else if (!*p->token_secret)
    missing = "an empty token_secret";
  if (!missing)
    return NULL;
  return xasprintf ("profile [%s] in %s (line %u) has %s", p->name, cf->path,
                    p->line, missing);
}

static int
from_file (const char *path, const char *const *envp,
           struct modal_credentials *out, char **why)
{
  char *text = read_config (path, why);
  if (!text)
    return -1;
  struct config_file cf = { .path = path };
  size_t text_len = strlen (text);
  bool parsed = parse_config (&cf, text);
  explicit_bzero (text, text_len);
  free (text);
  if (!parsed)
    {
      *why = cf.error;
      cf.error = NULL;
      config_file_clear (&cf);
      return -1;
    }
  struct profile *p = choose_profile (&cf, envp, why);
  if (!p)
    {
      config_file_clear (&cf);
      return -1;
    }
  char *problem = profile_problem (&cf, p);
  if (problem)
    {
      *why = problem;
      config_file_clear (&cf);
      return -1;
    }
  out->token_id = p->token_id;
  out->token_secret = p->token_secret;
  out->source = xasprintf ("%s (profile %s)", path, p->name);
  p->token_id = p->token_secret = NULL;
  config_file_clear (&cf);
  return 0;
}

int
modal_load_direct_credentials (const char *const *envp, const char *home,
                               struct modal_credentials *out, char **why_not)
{
  struct modal_credentials found = { NULL, NULL, NULL };
  char *why = NULL;
  int rc = -1;

  bool have_id = env_set (envp, "MODAL_TOKEN_ID");
  bool have_secret = env_set (envp, "MODAL_TOKEN_SECRET");
  if (have_id && have_secret)
    {
      found.token_id = xstrdup (env_get (envp, "MODAL_TOKEN_ID"));
      found.token_secret = xstrdup (env_get (envp, "MODAL_TOKEN_SECRET"));
      found.source = xstrdup ("environment");
      rc = 0;
    }
  else
    {
      const char *env_note
        = have_id ? "MODAL_TOKEN_ID is set but MODAL_TOKEN_SECRET is not; "
          : have_secret ? "MODAL_TOKEN_SECRET is set but MODAL_TOKEN_ID is "
                          "not; "
          : "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set; ";
      const char *override = env_get (envp, "MODAL_CONFIG_PATH");
      if (!home || !*home)
        home = env_get (envp, "HOME");
      char *path = NULL;
      if (override && *override)
        path = xstrdup (override);
      else if (home && *home)
        path = xasprintf ("%s%s.modal.toml", home,
                          home[strlen (home) - 1] == '/' ? "" : "/");
      char *file_why = NULL;
      if (!path)
        file_why = xstrdup ("no home directory to look for ~/.modal.toml in");
      else
        rc = from_file (path, envp, &found, &file_why);
      if (rc < 0)
        why = xasprintf ("%s%s", env_note, file_why);
      free (file_why);
      free (path);
    }

  if (rc == 0 && out)
    *out = found;
  else
    modal_credentials_clear (&found);
  if (why_not)
    *why_not = why;
  else
    free (why);
  return rc;
}

void
modal_credentials_clear (struct modal_credentials *c)
{
  if (!c)
    return;
  free_secret (c->token_id);
  free_secret (c->token_secret);
  free (c->source);
  c->token_id = c->token_secret = c->source = NULL;
}

bool
modal_has_direct_credentials (const char *const *envp, const char *home,
                              char **why_not)
{
  return modal_load_direct_credentials (envp, home, NULL, why_not) == 0;
}
