/* SPDX-License-Identifier: MIT */
/* What inline interpreter code hands on to be run (see inline_code.h).
 *
 * Two passes over the code, both linear:
 *   1. a lexer for the language's comments, string literals (quotes,
 *      prefixes, heredoc-free forms, interpolation) and punctuation makes
 *      tokens;
 *   2. calls of the functions that run a command line, a program or code
 *      are found among the tokens and their literal arguments read.
 * Then a fail-safe: a function name that occurs in the raw text as a call
 * more often than pass 2 read it (a lexer confused by a regex literal, an
 * alias, a string naming the function for getattr) is reported as
 * dynamic, so that what the judge could not read needs approval. */
#define _GNU_SOURCE
#include "inline_code.h"
#include "chars.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Past this many steps per byte a scan stops and reports what is left
 * as dynamic: calls nested in calls rescan their arguments. */
#define WORK_PER_BYTE 64
#define MAX_ALIASES 32

/* ---- growing strings ---- */

struct sbuf
{
  char *s;
  size_t len, cap;
  bool nomem;
};

static void
sb_add (struct sbuf *b, const char *s, size_t n)
{
  if (b->nomem)
    return;
  if (b->len + n + 1 > b->cap)
    {
      size_t cap = b->cap ? b->cap : 32;
      while (cap < b->len + n + 1)
        cap *= 2;
      char *p = realloc (b->s, cap);
      if (!p)
        {
          b->nomem = true;
          return;
        }
      b->s = p;
      b->cap = cap;
    }
  memcpy (b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void
sb_addc (struct sbuf *b, char c)
{
  sb_add (b, &c, 1);
}

static void
sb_str (struct sbuf *b, const char *s)
{
  sb_add (b, s, strlen (s));
}

/* ---- languages ---- */

enum
{
  S_PY_PREFIX = 1 << 0,   /* r'' b'' f'' u'' rb'' ...; triple quotes */
  S_TEMPLATE = 1 << 1,    /* `...${x}...` (JavaScript) */
  S_BACKTICK = 1 << 2,    /* `...` runs a shell (Perl, Ruby, PHP) */
  S_SINGLE_RAW = 1 << 3,  /* '...': only \\ and \' are escapes */
  S_INTERP_VAR = 1 << 4,  /* "...$x..." interpolates (Perl, PHP) */
  S_INTERP_HASH = 1 << 5, /* "...#{x}..." interpolates (Ruby) */
  S_PERL_Q = 1 << 6,      /* q() qq() qw() qx() */
  S_RUBY_PCT = 1 << 7,    /* %q() %Q() %() %w() %x() */
  S_LUA_LONG = 1 << 8,    /* [[...]], [==[...]==] */
  S_NO_SINGLE = 1 << 9,   /* ' is no quote (awk, AppleScript) */
  S_REGEX = 1 << 10,      /* /.../ literals where an operand is expected */
  S_PERL_RE = 1 << 11,    /* s/// m// tr/// y/// qr// */
};

enum
{
  C_HASH = 1,    /* # to the end of the line */
  C_SLASH = 2,   /* // and slash-star comments */
  C_DASH = 4,    /* -- (Lua: --[[ ]] too), AppleScript */
  C_PSTAR = 8,   /* (* *) AppleScript */
};

enum call_kind
{
  K_SHELL,  /* first argument: a command line (a list: an argv) */
  K_LIST,   /* one argument: a command line; more, or a list: an argv */
  K_ARGV,   /* first argument: a list is an argv, a string a command line */
  K_PROG,   /* a program, then a list of its arguments */
  K_SKIP1,  /* every literal string but the first (os.execvp(path, argv)) */
  K_EVAL,   /* code in the same language */
  K_OPEN,   /* open("cmd |"), open("| cmd"), open(FH, "-|", cmd...) */
  K_IMPORT, /* require(x), import(x): a name only known at run time */
  K_OPAQUE, /* runs something this scanner does not read */
  K_DOWNLOAD, /* urlretrieve(url, path): path is downloaded */
  K_REFLECT,  /* getattr(os, x): a function looked up by name */
};

enum
{
  F_BARE = 1,  /* a builtin: not after '.', '->' or '::' (re.compile is not compile) */
  F_QUAL = 2,  /* only after one of quals ("subprocess.run"), or an alias */
  F_NEEDS = 4, /* only when the code names the language's `needs` module */
};

struct call_def
{
  const char *name;
  unsigned char kind;
  unsigned char flags;
  const char *quals; /* "|a|b|" */
};

struct lang_def
{
  const char *name;
  unsigned strings;
  unsigned comments;
  const char *concat; /* the string concatenation operator; "" juxtaposes */
  bool paren_free;    /* calls without parentheses: system "ls" */
  bool adjacent;      /* "a" "b" is "ab" */
  const char *needs;  /* for F_NEEDS */
  const struct call_def *calls;
};

static const struct call_def python_calls[] = {
  { "system", K_SHELL, 0, NULL },
  { "popen", K_SHELL, 0, NULL },
  { "getoutput", K_SHELL, 0, NULL },
  { "getstatusoutput", K_SHELL, 0, NULL },
  { "run", K_ARGV, F_QUAL, "|subprocess|sp|" },
  { "call", K_ARGV, F_QUAL, "|subprocess|sp|" },
  { "check_call", K_ARGV, 0, NULL },
  { "check_output", K_ARGV, 0, NULL },
  { "Popen", K_ARGV, 0, NULL },
  { "spawn", K_ARGV, F_QUAL, "|pty|" },
  { "execl", K_SKIP1, 0, NULL },
  { "execle", K_SKIP1, 0, NULL },
  { "execlp", K_SKIP1, 0, NULL },
  { "execlpe", K_SKIP1, 0, NULL },
  { "execv", K_SKIP1, 0, NULL },
  { "execve", K_SKIP1, 0, NULL },
  { "execvp", K_SKIP1, 0, NULL },
  { "execvpe", K_SKIP1, 0, NULL },
  { "spawnl", K_SKIP1, 0, NULL },
  { "spawnle", K_SKIP1, 0, NULL },
  { "spawnlp", K_SKIP1, 0, NULL },
  { "spawnlpe", K_SKIP1, 0, NULL },
  { "spawnv", K_SKIP1, 0, NULL },
  { "spawnve", K_SKIP1, 0, NULL },
  { "spawnvp", K_SKIP1, 0, NULL },
  { "spawnvpe", K_SKIP1, 0, NULL },
  { "posix_spawn", K_SKIP1, 0, NULL },
  { "posix_spawnp", K_SKIP1, 0, NULL },
  { "create_subprocess_shell", K_SHELL, 0, NULL },
  { "urlretrieve", K_DOWNLOAD, 0, NULL },
  { "getattr", K_REFLECT, F_BARE, NULL },
  { "create_subprocess_exec", K_PROG, 0, NULL },
  { "exec", K_EVAL, F_BARE, NULL },
  { "eval", K_EVAL, F_BARE, NULL },
  { "compile", K_EVAL, F_BARE, NULL },
  { "__import__", K_IMPORT, F_BARE, NULL },
  { "import_module", K_IMPORT, 0, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def node_calls[] = {
  { "exec", K_SHELL, F_NEEDS, NULL },
  { "execSync", K_SHELL, F_NEEDS, NULL },
  { "spawn", K_PROG, F_NEEDS, NULL },
  { "spawnSync", K_PROG, F_NEEDS, NULL },
  { "execFile", K_PROG, F_NEEDS, NULL },
  { "execFileSync", K_PROG, F_NEEDS, NULL },
  { "spawn", K_ARGV, F_QUAL, "|Bun|" },
  { "spawnSync", K_ARGV, F_QUAL, "|Bun|" },
  { "Command", K_OPAQUE, F_QUAL, "|Deno|" },
  { "run", K_OPAQUE, F_QUAL, "|Deno|" },
  { "eval", K_EVAL, F_BARE, NULL },
  { "Function", K_EVAL, F_BARE, NULL },
  { "runInThisContext", K_EVAL, 0, NULL },
  { "runInNewContext", K_EVAL, 0, NULL },
  { "runInContext", K_EVAL, 0, NULL },
  { "Script", K_EVAL, F_QUAL, "|vm|" },
  { "require", K_IMPORT, F_BARE, NULL },
  { "import", K_IMPORT, F_BARE, NULL },
  { "binding", K_OPAQUE, F_QUAL, "|process|" },
  { NULL, 0, 0, NULL },
};

static const struct call_def perl_calls[] = {
  { "system", K_LIST, 0, NULL },
  { "exec", K_LIST, 0, NULL },
  { "readpipe", K_SHELL, 0, NULL },
  { "open", K_OPEN, 0, NULL },
  { "open2", K_OPAQUE, 0, NULL },
  { "open3", K_OPAQUE, 0, NULL },
  { "eval", K_EVAL, 0, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def ruby_calls[] = {
  { "system", K_LIST, 0, NULL },
  { "exec", K_LIST, 0, NULL },
  { "spawn", K_LIST, 0, NULL },
  { "popen", K_LIST, 0, NULL },
  { "popen2", K_LIST, 0, NULL },
  { "popen2e", K_LIST, 0, NULL },
  { "popen3", K_LIST, 0, NULL },
  { "capture2", K_LIST, 0, NULL },
  { "capture2e", K_LIST, 0, NULL },
  { "capture3", K_LIST, 0, NULL },
  { "pipeline", K_OPAQUE, 0, NULL },
  { "open", K_OPEN, 0, NULL },
  { "eval", K_EVAL, 0, NULL },
  { "instance_eval", K_EVAL, 0, NULL },
  { "class_eval", K_EVAL, 0, NULL },
  { "module_eval", K_EVAL, 0, NULL },
  { "send", K_REFLECT, 0, NULL },
  { "public_send", K_REFLECT, 0, NULL },
  { "__send__", K_REFLECT, 0, NULL },
  { "method", K_REFLECT, 0, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def php_calls[] = {
  { "system", K_SHELL, 0, NULL },
  { "exec", K_SHELL, 0, NULL },
  { "shell_exec", K_SHELL, 0, NULL },
  { "passthru", K_SHELL, 0, NULL },
  { "popen", K_SHELL, 0, NULL },
  { "proc_open", K_ARGV, 0, NULL },
  { "pcntl_exec", K_PROG, 0, NULL },
  { "eval", K_EVAL, F_BARE, NULL },
  { "assert", K_EVAL, F_BARE, NULL },
  { "create_function", K_EVAL, F_BARE, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def lua_calls[] = {
  { "execute", K_SHELL, F_QUAL, "|os|" },
  { "popen", K_SHELL, F_QUAL, "|io|" },
  { "load", K_EVAL, F_BARE, NULL },
  { "loadstring", K_EVAL, F_BARE, NULL },
  { "dostring", K_EVAL, F_BARE, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def awk_calls[] = {
  { "system", K_SHELL, 0, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def r_calls[] = {
  { "system", K_SHELL, 0, NULL },
  { "shell", K_SHELL, 0, NULL },
  { "system2", K_PROG, 0, NULL },
  { "pipe", K_SHELL, F_BARE, NULL },
  { "eval", K_EVAL, F_BARE, NULL },
  { "download.file", K_DOWNLOAD, 0, NULL },
  { NULL, 0, 0, NULL },
};

static const struct call_def no_calls[] = { { NULL, 0, 0, NULL } };

static const struct lang_def langs[] = {
  { "python", S_PY_PREFIX, C_HASH, "+", false, true, NULL, python_calls },
  { "node", S_TEMPLATE | S_REGEX, C_SLASH, "+", false, false,
    "child_process", node_calls },
  { "perl",
    S_BACKTICK | S_SINGLE_RAW | S_INTERP_VAR | S_PERL_Q | S_REGEX
        | S_PERL_RE,
    C_HASH, ".", true, false, NULL, perl_calls },
  { "ruby",
    S_BACKTICK | S_SINGLE_RAW | S_INTERP_HASH | S_RUBY_PCT | S_REGEX,
    C_HASH, "+", true, true, NULL, ruby_calls },
  { "php", S_BACKTICK | S_SINGLE_RAW | S_INTERP_VAR, C_HASH | C_SLASH, ".",
    false, false, NULL, php_calls },
  { "lua", S_LUA_LONG, C_DASH, "..", true, false, NULL, lua_calls },
  { "awk", S_NO_SINGLE | S_REGEX, C_HASH, NULL, false, true, NULL,
    awk_calls },
  { "r", 0, C_HASH, NULL, false, false, NULL, r_calls },
  { "applescript", S_NO_SINGLE, C_DASH | C_PSTAR, "&", false, false, NULL,
    no_calls },
};

static const struct lang_def *
find_lang (const char *name)
{
  for (size_t i = 0; name && i < sizeof langs / sizeof langs[0]; i++)
    if (strcmp (langs[i].name, name) == 0)
      return &langs[i];
  return NULL;
}

bool
inline_code_known (const char *lang)
{
  return find_lang (lang) != NULL;
}

/* ---- tokens ---- */

enum tok_kind
{
  T_IDENT,
  T_STR,      /* a string literal: value */
  T_WORDS,    /* qw() %w(): words separated by blanks */
  T_SHELLSTR, /* `...`, qx(), %x(): a command line */
  T_PUNCT,    /* op: one or two characters */
  T_OTHER,    /* numbers, regex literals, anything else */
};

struct token
{
  enum tok_kind kind;
  size_t start, end; /* in the code */
  char op[3];
  bool nl;      /* a newline came before it */
  bool dynamic; /* a string with an interpolation */
  char *value;  /* T_STR, T_WORDS, T_SHELLSTR */
  size_t vlen;
  size_t match; /* for ( [ {: the index of the closing token (or n) */
  bool used;    /* read as (part of) what runs: judged on its own */
};

struct scan
{
  const struct lang_def *L;
  const char *s;
  size_t n, pos;
  struct token *t;
  size_t nt, cap;
  bool nomem;
  unsigned long long *work, work_limit;
  code_run_fn *fn;
  void *ctx;
  const char *aliases[MAX_ALIASES]; /* identifiers bound to a call */
  const struct call_def *alias_of[MAX_ALIASES]; /* or NULL */
  const char *alias_qual[MAX_ALIASES]; /* a qualifier it stands for */
  size_t n_aliases;
  size_t *found; /* per call_def: calls read */
  bool needs_seen;
  bool any_dynamic; /* something dynamic was reported already */
};

static bool
ident_start (unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
         || c >= 0x80;
}

static bool
ident_byte (unsigned char c)
{
  return ident_start (c) || (c >= '0' && c <= '9');
}

static struct token *
push (struct scan *S, enum tok_kind kind, size_t start, bool nl)
{
  if (S->nt == S->cap)
    {
      size_t cap = S->cap ? 2 * S->cap : 64;
      struct token *t = realloc (S->t, cap * sizeof *t);
      if (!t)
        {
          S->nomem = true;
          return NULL;
        }
      S->t = t;
      S->cap = cap;
    }
  struct token *t = &S->t[S->nt++];
  memset (t, 0, sizeof *t);
  t->kind = kind;
  t->start = start;
  t->nl = nl;
  return t;
}

/* The closing delimiter for an opening one (q{...}, %w[...]). */
static char
closer (char open)
{
  switch (open)
    {
    case '(':
      return ')';
    case '[':
      return ']';
    case '{':
      return '}';
    case '<':
      return '>';
    default:
      return open;
    }
}

enum
{
  Q_ESCAPES = 1,  /* C-like backslash escapes */
  Q_RAW = 2,      /* only \\ and \<close> */
  Q_VERBATIM = 4, /* no escapes at all (Python raw strings keep \) */
  Q_INTERP = 8,   /* the language's interpolation applies */
  Q_FSTRING = 16, /* {expr} fields, {{ }} braces (Python f-strings) */
  Q_TEMPLATE = 32 /* ${expr} (JavaScript templates) */
};

/* Skip an interpolated expression starting at S->pos (just after its
 * opener), up to the matching close: braces nest, strings inside are
 * skipped roughly. */
static void
skip_braced (struct scan *S, char open, char close, size_t end)
{
  int depth = 1;
  while (S->pos < end && depth > 0)
    {
      char c = S->s[S->pos++];
      if (c == '\\')
        S->pos++;
      else if (c == open && open != close)
        depth++;
      else if (c == close)
        depth--;
    }
}

/* A quoted body from S->pos up to the unescaped close character (nesting
 * `open` when it differs, as Perl's q{} does).  The value is decoded;
 * *dynamic when it interpolates.  S->pos ends past the close. */
static void
read_quoted (struct scan *S, struct token *t, char open, char close,
             unsigned how, size_t triple)
{
  struct sbuf b = { 0 };
  int depth = 1;
  const struct lang_def *L = S->L;
  while (S->pos < S->n)
    {
      char c = S->s[S->pos];
      if (triple)
        {
          if (c == close && S->pos + 2 < S->n && S->s[S->pos + 1] == close
              && S->s[S->pos + 2] == close)
            {
              S->pos += 3;
              break;
            }
        }
      else if (c == close && open == close)
        {
          S->pos++;
          break;
        }
      else if (c == close && --depth == 0)
        {
          S->pos++;
          break;
        }
      else if (c == open && open != close)
        depth++;
      if (c == '\\' && S->pos + 1 < S->n && !(how & Q_VERBATIM))
        {
          char e = S->s[S->pos + 1];
          S->pos += 2;
          if (how & Q_RAW)
            {
              if (e != '\\' && e != close && e != open)
                sb_addc (&b, '\\');
              sb_addc (&b, e);
              continue;
            }
          int v;
          switch (e)
            {
            case 'n': sb_addc (&b, '\n'); break;
            case 't': sb_addc (&b, '\t'); break;
            case 'r': sb_addc (&b, '\r'); break;
            case '0': sb_addc (&b, '\0'); break;
            case '\n': break; /* a continued line */
            case 'x':
              if (S->pos + 1 < S->n && (v = hex_digit (S->s[S->pos])) >= 0
                  && hex_digit (S->s[S->pos + 1]) >= 0)
                {
                  sb_addc (&b, (char) (v * 16 + hex_digit (S->s[S->pos + 1])));
                  S->pos += 2;
                }
              else
                sb_addc (&b, 'x');
              break;
            default:
              sb_addc (&b, e);
            }
          continue;
        }
      if (c == '\\' && (how & Q_VERBATIM) && S->pos + 1 < S->n
          && S->s[S->pos + 1] == close)
        {
          /* r'\'' keeps both, and the quote does not close */
          sb_add (&b, S->s + S->pos, 2);
          S->pos += 2;
          continue;
        }
      bool interp = false;
      if ((how & Q_INTERP) && (L->strings & S_INTERP_VAR) && S->pos + 1 < S->n
          && (c == '$' || (c == '@' && strcmp (L->name, "perl") == 0))
          && (ident_start ((unsigned char) S->s[S->pos + 1])
              || S->s[S->pos + 1] == '{'
              || (c == '$' && S->s[S->pos + 1] == ':')))
        {
          interp = true;
          S->pos++;
          if (S->s[S->pos] == '{')
            {
              S->pos++;
              skip_braced (S, '{', '}', S->n);
            }
          else
            while (S->pos < S->n
                   && (ident_byte ((unsigned char) S->s[S->pos])
                       || S->s[S->pos] == ':'))
              S->pos++;
        }
      else if ((how & Q_INTERP) && (L->strings & S_INTERP_HASH) && c == '#'
               && S->pos + 1 < S->n
               && (S->s[S->pos + 1] == '{' || S->s[S->pos + 1] == '@'
                   || S->s[S->pos + 1] == '$'))
        {
          interp = true;
          S->pos += 2;
          if (S->s[S->pos - 1] == '{')
            skip_braced (S, '{', '}', S->n);
          else
            while (S->pos < S->n && ident_byte ((unsigned char) S->s[S->pos]))
              S->pos++;
        }
      else if ((how & Q_TEMPLATE) && c == '$' && S->pos + 1 < S->n
               && S->s[S->pos + 1] == '{')
        {
          interp = true;
          S->pos += 2;
          skip_braced (S, '{', '}', S->n);
        }
      else if ((how & Q_FSTRING) && c == '{')
        {
          if (S->pos + 1 < S->n && S->s[S->pos + 1] == '{')
            {
              sb_addc (&b, '{');
              S->pos += 2;
              continue;
            }
          interp = true;
          S->pos++;
          skip_braced (S, '{', '}', S->n);
        }
      else if ((how & Q_FSTRING) && c == '}' && S->pos + 1 < S->n
               && S->s[S->pos + 1] == '}')
        {
          sb_addc (&b, '}');
          S->pos += 2;
          continue;
        }
      if (interp)
        {
          t->dynamic = true;
          sb_str (&b, "$_");
          continue;
        }
      sb_addc (&b, c);
      S->pos++;
    }
  if (b.nomem)
    S->nomem = true;
  t->value = b.s ? b.s : strdup ("");
  if (!t->value)
    S->nomem = true;
  t->vlen = b.len;
}

/* The end of a Lua long bracket whose body starts at `from` (eq: the
 * number of '=' in its opener); *body_end (may be NULL) gets where the
 * body ends. */
static size_t
long_bracket_end (const char *s, size_t n, size_t from, size_t eq,
                  size_t *body_end)
{
  for (size_t e = from; e < n; e++)
    {
      if (s[e] != ']')
        continue;
      size_t k = e + 1, e2 = 0;
      while (k < n && s[k] == '=')
        k++, e2++;
      if (k < n && s[k] == ']' && e2 == eq)
        {
          if (body_end)
            *body_end = e;
          return k + 1;
        }
    }
  if (body_end)
    *body_end = n;
  return n;
}

/* Where a '/' starts a regex literal rather than dividing: after an
 * operator, an opening bracket, a comma, or at the start. */
static bool
regex_may_start (const struct scan *S)
{
  if (S->nt == 0)
    return true;
  const struct token *p = &S->t[S->nt - 1];
  if (p->kind == T_PUNCT)
    return strchr (")]}", p->op[0]) == NULL;
  if (p->kind == T_IDENT)
    {
      static const char *const kw[] = { "split", "grep", "if", "unless",
                                        "and", "or", "not", "return",
                                        "when", "while", "until", "typeof",
                                        "in", "of", NULL };
      size_t len = p->end - p->start;
      for (const char *const *k = kw; *k; k++)
        if (strlen (*k) == len && memcmp (S->s + p->start, *k, len) == 0)
          return true;
    }
  return false;
}

/* Skip a delimited part starting at S->pos (the opening delimiter). */
static void
skip_delimited (struct scan *S)
{
  if (S->pos >= S->n)
    return;
  char open = S->s[S->pos++], close = closer (open);
  int depth = 1;
  while (S->pos < S->n)
    {
      char c = S->s[S->pos++];
      if (c == '\\')
        S->pos++;
      else if (c == close && --depth == 0)
        return;
      else if (c == open && open != close)
        depth++;
      else if (c == '\n' && open == '/' && !(S->L->strings & S_PERL_RE))
        return; /* a JavaScript or awk regex ends at the line */
    }
}

static void
lex (struct scan *S)
{
  const struct lang_def *L = S->L;
  const char *s = S->s;
  bool nl = false;
  while (S->pos < S->n && !S->nomem)
    {
      size_t p = S->pos;
      unsigned char c = (unsigned char) s[p];
      *S->work += 1;
      if (c == '\n')
        {
          nl = true;
          S->pos++;
          continue;
        }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')
        {
          S->pos++;
          continue;
        }
      /* comments */
      bool line_comment
          = ((L->comments & C_HASH) && c == '#')
            || ((L->comments & C_SLASH) && c == '/' && p + 1 < S->n
                && s[p + 1] == '/')
            || ((L->comments & C_DASH) && c == '-' && p + 1 < S->n
                && s[p + 1] == '-');
      if (line_comment && (L->comments & C_DASH) && c == '-' && p + 3 < S->n
          && s[p + 2] == '[' && (s[p + 3] == '[' || s[p + 3] == '='))
        {
          /* Lua: --[[ ... ]], --[==[ ... ]==] */
          size_t q = p + 3, eq = 0;
          while (q < S->n && s[q] == '=')
            q++, eq++;
          if (q < S->n && s[q] == '[')
            {
              S->pos = long_bracket_end (s, S->n, q + 1, eq, NULL);
              *S->work += S->pos - p;
              continue;
            }
        }
      if (line_comment)
        {
          const char *e = memchr (s + p, '\n', S->n - p);
          S->pos = e ? (size_t) (e - s) : S->n;
          *S->work += S->pos - p;
          continue;
        }
      if ((L->comments & C_SLASH) && c == '/' && p + 1 < S->n && s[p + 1] == '*')
        {
          const char *e = memmem (s + p + 2, S->n - p - 2, "*/", 2);
          S->pos = e ? (size_t) (e - s) + 2 : S->n;
          *S->work += S->pos - p;
          continue;
        }
      if ((L->comments & C_PSTAR) && c == '(' && p + 1 < S->n && s[p + 1] == '*')
        {
          const char *e = memmem (s + p + 2, S->n - p - 2, "*)", 2);
          S->pos = e ? (size_t) (e - s) + 2 : S->n;
          *S->work += S->pos - p;
          continue;
        }
      bool had_nl = nl;
      nl = false;

      /* identifiers, and the string forms that start like one */
      bool dollar_ident = (L->strings & S_TEMPLATE) != 0; /* JavaScript */
      if (ident_start (c) || (c == '$' && (L->strings & S_INTERP_VAR))
          || (c == '$' && dollar_ident))
        {
          size_t q = p + 1;
          bool r_lang = strcmp (L->name, "r") == 0; /* download.file */
          while (q < S->n && (ident_byte ((unsigned char) s[q])
                              || (dollar_ident && s[q] == '$')
                              || (r_lang && s[q] == '.')))
            q++;
          size_t len = q - p;
          char next = q < S->n ? s[q] : '\0';
          if ((L->strings & S_PY_PREFIX) && len <= 2 && (next == '\'' || next == '"')
              && strspn (s + p, "rRbBuUfF") >= len)
            {
              bool raw = memchr (s + p, 'r', len) || memchr (s + p, 'R', len);
              bool f = memchr (s + p, 'f', len) || memchr (s + p, 'F', len);
              struct token *t = push (S, T_STR, p, had_nl);
              if (!t)
                return;
              S->pos = q + 1;
              size_t triple = 0;
              if (S->pos + 1 < S->n && s[S->pos] == next && s[S->pos + 1] == next)
                {
                  S->pos += 2;
                  triple = 1;
                }
              read_quoted (S, t, next, next,
                           (raw ? Q_VERBATIM : Q_ESCAPES) | (f ? Q_FSTRING : 0),
                           triple);
              t->end = S->pos;
              *S->work += S->pos - p;
              continue;
            }
          if ((L->strings & S_PERL_Q) && len <= 2 && q < S->n
              && (len == 1 ? s[p] == 'q'
                           : s[p] == 'q' && strchr ("qwx", s[p + 1]))
              && next && strchr ("({[</|!#,", next))
            {
              char kind = len == 1 ? 'q' : s[p + 1];
              struct token *t = push (S, kind == 'w' ? T_WORDS
                                         : kind == 'x' ? T_SHELLSTR
                                                       : T_STR,
                                      p, had_nl);
              if (!t)
                return;
              S->pos = q + 1;
              read_quoted (S, t, next, closer (next),
                           kind == 'q' || kind == 'w' || next == '\''
                               ? Q_RAW
                               : Q_ESCAPES | Q_INTERP,
                           0);
              t->end = S->pos;
              *S->work += S->pos - p;
              continue;
            }
          if ((L->strings & S_PERL_RE) && len <= 2 && next
              && strchr ("/{(!|#,", next)
              && ((len == 1 && strchr ("smy", s[p]))
                  || (len == 2 && (!memcmp (s + p, "tr", 2)
                                   || !memcmp (s + p, "qr", 2)))))
            {
              /* a regex, a substitution or a transliteration */
              struct token *t = push (S, T_OTHER, p, had_nl);
              if (!t)
                return;
              S->pos = q;
              bool two = s[p] == 's' || s[p] == 'y' || s[p] == 't';
              skip_delimited (S);
              if (two)
                {
                  if (strchr ("({[<", next))
                    while (S->pos < S->n && (s[S->pos] == ' ' || s[S->pos] == '\n'))
                      S->pos++;
                  else
                    S->pos--;
                  skip_delimited (S);
                }
              while (S->pos < S->n && ident_byte ((unsigned char) s[S->pos]))
                S->pos++;
              t->end = S->pos;
              *S->work += S->pos - p;
              continue;
            }
          struct token *t = push (S, T_IDENT, p, had_nl);
          if (!t)
            return;
          t->end = q;
          S->pos = q;
          *S->work += len;
          continue;
        }
      if (c >= '0' && c <= '9')
        {
          size_t q = p + 1;
          while (q < S->n && (ident_byte ((unsigned char) s[q]) || s[q] == '.'))
            q++;
          struct token *t = push (S, T_OTHER, p, had_nl);
          if (!t)
            return;
          t->end = q;
          S->pos = q;
          continue;
        }
      /* quotes */
      if (c == '"' || (c == '\'' && !(L->strings & S_NO_SINGLE)))
        {
          struct token *t = push (S, T_STR, p, had_nl);
          if (!t)
            return;
          S->pos = p + 1;
          size_t triple = 0;
          if ((L->strings & S_PY_PREFIX) && S->pos + 1 < S->n
              && s[S->pos] == (char) c && s[S->pos + 1] == (char) c)
            {
              S->pos += 2;
              triple = 1;
            }
          unsigned how = c == '\'' && (L->strings & S_SINGLE_RAW)
                             ? Q_RAW
                             : Q_ESCAPES | (c == '"' ? Q_INTERP : 0);
          read_quoted (S, t, (char) c, (char) c, how, triple);
          t->end = S->pos;
          *S->work += S->pos - p;
          continue;
        }
      if (c == '`' && (L->strings & (S_TEMPLATE | S_BACKTICK)))
        {
          struct token *t = push (S, L->strings & S_BACKTICK ? T_SHELLSTR
                                                             : T_STR,
                                  p, had_nl);
          if (!t)
            return;
          S->pos = p + 1;
          read_quoted (S, t, '`', '`',
                       Q_ESCAPES
                           | (L->strings & S_TEMPLATE ? Q_TEMPLATE : Q_INTERP),
                       0);
          t->end = S->pos;
          *S->work += S->pos - p;
          continue;
        }
      if (c == '%' && (L->strings & S_RUBY_PCT) && p + 1 < S->n)
        {
          char k = s[p + 1], d = k;
          size_t skip = 1;
          if (strchr ("qQwWxi", k) && p + 2 < S->n)
            {
              d = s[p + 2];
              skip = 2;
            }
          else
            k = 'Q';
          if (d && strchr ("({[<|!/", d) && regex_may_start (S))
            {
              struct token *t = push (S, k == 'w' || k == 'W' || k == 'i'
                                         ? T_WORDS
                                         : k == 'x' ? T_SHELLSTR
                                                    : T_STR,
                                      p, had_nl);
              if (!t)
                return;
              S->pos = p + skip + 1;
              read_quoted (S, t, d, closer (d),
                           k == 'q' || k == 'w' ? Q_RAW : Q_ESCAPES | Q_INTERP,
                           0);
              t->end = S->pos;
              *S->work += S->pos - p;
              continue;
            }
        }
      if (c == '[' && (L->strings & S_LUA_LONG) && p + 1 < S->n
          && (s[p + 1] == '[' || s[p + 1] == '='))
        {
          size_t q = p + 1, eq = 0;
          while (q < S->n && s[q] == '=')
            q++, eq++;
          if (q < S->n && s[q] == '[')
            {
              struct token *t = push (S, T_STR, p, had_nl);
              if (!t)
                return;
              size_t body = q + 1, e;
              S->pos = long_bracket_end (s, S->n, body, eq, &e);
              t->value = strndup (s + body, e - body);
              if (!t->value)
                S->nomem = true;
              t->vlen = e - body;
              t->end = S->pos;
              *S->work += S->pos - p;
              continue;
            }
        }
      if (c == '/' && (L->strings & S_REGEX) && regex_may_start (S))
        {
          struct token *t = push (S, T_OTHER, p, had_nl);
          if (!t)
            return;
          skip_delimited (S);
          while (S->pos < S->n && ident_byte ((unsigned char) s[S->pos]))
            S->pos++;
          t->end = S->pos;
          *S->work += S->pos - p;
          continue;
        }
      /* punctuation: the two-character operators that matter */
      struct token *t = push (S, T_PUNCT, p, had_nl);
      if (!t)
        return;
      t->op[0] = (char) c;
      S->pos = p + 1;
      if (p + 1 < S->n)
        {
          char d = s[p + 1];
          if ((c == '.' && d == '.') || (c == '-' && d == '>')
              || (c == ':' && d == ':') || (c == '=' && d == '>'))
            {
              t->op[1] = d;
              S->pos = p + 2;
            }
        }
      t->end = S->pos;
    }
}

/* Opening brackets know their closing token (n when unbalanced). */
static void
match_brackets (struct scan *S)
{
  size_t *stack = malloc ((S->nt + 1) * sizeof *stack);
  if (!stack)
    {
      S->nomem = true;
      return;
    }
  size_t depth = 0;
  for (size_t i = 0; i < S->nt; i++)
    {
      struct token *t = &S->t[i];
      t->match = S->nt;
      if (t->kind != T_PUNCT || t->op[1])
        continue;
      char c = t->op[0];
      if (c == '(' || c == '[' || c == '{')
        stack[depth++] = i;
      else if ((c == ')' || c == ']' || c == '}') && depth > 0)
        {
          /* a stray closer of another kind closes what is open: the
           * judge reads on rather than giving up */
          S->t[stack[--depth]].match = i;
        }
    }
  free (stack);
  *S->work += S->nt;
}

static bool
is_punct (const struct token *t, const char *op)
{
  return t->kind == T_PUNCT && strcmp (t->op, op) == 0;
}

static bool
ident_is (const struct scan *S, const struct token *t, const char *name)
{
  size_t len = t->end - t->start;
  return t->kind == T_IDENT && strlen (name) == len
         && memcmp (S->s + t->start, name, len) == 0;
}

/* ---- arguments ---- */

/* Tokens i..i+2 naming the running interpreter's own program, as a word
 * (sys.executable is python3): NULL when they do not. */
static const char *
self_path (const struct scan *S, size_t i)
{
  static const char *const names[][4] = {
    { "python", "sys", "executable", "python3" },
    { "node", "process", "execPath", "node" },
  };
  if (!is_punct (&S->t[i + 1], "."))
    return NULL;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strcmp (S->L->name, names[k][0]) == 0 && ident_is (S, &S->t[i], names[k][1])
        && ident_is (S, &S->t[i + 2], names[k][2]))
      return names[k][3];
  return NULL;
}

/* An expression of tokens [a, b): a string made of literals (joined by
 * the language's concatenation), else dynamic.  The literal parts are
 * kept, each unknown run as "$_". */
static void
eval_string (struct scan *S, size_t a, size_t b, struct sbuf *out,
             bool *dynamic)
{
  const char *cat = S->L->concat;
  bool adjacent = S->L->adjacent;
  bool want_str = true, any = false, last_unknown = false;
  for (size_t i = a; i < b; i++)
    {
      const struct token *t = &S->t[i];
      *S->work += 1;
      if (t->kind == T_STR)
        {
          S->t[i].used = true;
          if (!want_str && !adjacent)
            *dynamic = true;
          sb_add (out, t->value, t->vlen);
          *dynamic |= t->dynamic;
          want_str = false;
          any = true;
          last_unknown = false;
          continue;
        }
      if (!want_str && cat && t->kind == T_PUNCT && strcmp (t->op, cat) == 0)
        {
          want_str = true;
          continue;
        }
      /* the interpreter itself: sys.executable, process.execPath */
      const char *self = want_str && i + 2 < b ? self_path (S, i) : NULL;
      if (self)
        {
          sb_str (out, self);
          want_str = false;
          any = true;
          last_unknown = false;
          i += 2;
          continue;
        }
      *dynamic = true;
      if (!last_unknown)
        sb_str (out, any ? " $_" : "$_");
      last_unknown = true;
      any = true;
      if (t->kind == T_PUNCT && t->match < b && t->match > i)
        i = t->match; /* a call or a group: one unknown */
    }
  if (!any || want_str)
    *dynamic = true;
}

/* Shell-quote a literal word. */
static void
quote_word (struct sbuf *out, const char *w, size_t n)
{
  sb_addc (out, '\'');
  for (size_t i = 0; i < n; i++)
    if (w[i] == '\'')
      sb_str (out, "'\\''");
    else
      sb_addc (out, w[i]);
  sb_addc (out, '\'');
}

/* One argv word from the expression [a, b).  An argument unknown until
 * run time is a word of unknown value ("$_"): no shell reads an argv, so
 * only an unknown program makes the command line dynamic. */
static void
argv_word (struct scan *S, size_t a, size_t b, struct sbuf *out,
           bool *dynamic)
{
  struct sbuf w = { 0 };
  bool dyn = false;
  eval_string (S, a, b, &w, &dyn);
  bool program = out->len == 0;
  if (out->len)
    sb_addc (out, ' ');
  if (dyn)
    {
      *dynamic |= program;
      sb_str (out, "$_");
    }
  else
    quote_word (out, w.s ? w.s : "", w.len);
  if (w.nomem)
    out->nomem = true;
  free (w.s);
}

/* The top-level comma-separated parts of tokens [a, b). */
static size_t
split_args (struct scan *S, size_t a, size_t b, size_t (*parts)[2], size_t max)
{
  size_t n = 0, start = a;
  for (size_t i = a; i <= b; i++)
    {
      *S->work += 1;
      if (i == b || is_punct (&S->t[i], ","))
        {
          if (n < max && i > start)
            {
              parts[n][0] = start;
              parts[n][1] = i;
              n++;
            }
          start = i + 1;
          continue;
        }
      const struct token *t = &S->t[i];
      if (t->kind == T_PUNCT && t->match < b && t->match > i)
        i = t->match;
    }
  return n;
}

/* A list literal at [a, b): [x, y], (x, y), qw(x y), %w(x y), array(...),
 * c(...); its words appended to out as argv.  False: not a list. */
static bool
argv_list (struct scan *S, size_t a, size_t b, struct sbuf *out,
           bool *dynamic)
{
  if (a >= b)
    return false;
  const struct token *t = &S->t[a];
  if (t->kind == T_WORDS && b == a + 1)
    {
      S->t[a].used = true;
      const char *v = t->value;
      size_t i = 0;
      while (i < t->vlen)
        {
          while (i < t->vlen && strchr (" \t\n", v[i]))
            i++;
          size_t j = i;
          while (j < t->vlen && !strchr (" \t\n", v[j]))
            j++;
          if (j > i)
            {
              if (out->len)
                sb_addc (out, ' ');
              quote_word (out, v + i, j - i);
            }
          i = j;
        }
      *dynamic |= t->dynamic;
      return true;
    }
  size_t open = a;
  if ((ident_is (S, t, "array") || ident_is (S, t, "c")) && a + 1 < b)
    open = a + 1;
  const struct token *o = &S->t[open];
  if (o->kind != T_PUNCT || (o->op[0] != '[' && o->op[0] != '(') || o->op[1]
      || o->match != b - 1)
    return false;
  size_t parts[256][2];
  size_t n = split_args (S, open + 1, b - 1, parts, 256);
  for (size_t k = 0; k < n; k++)
    argv_word (S, parts[k][0], parts[k][1], out, dynamic);
  if (n == 256)
    *dynamic = true;
  return true;
}

static void
emit (struct scan *S, enum code_run what, struct sbuf *b, bool dynamic)
{
  if (b->nomem)
    {
      S->nomem = true;
      return;
    }
  S->any_dynamic |= dynamic;
  S->fn (S->ctx, what, b->s ? b->s : "", b->len, dynamic);
}

/* A first argument that is a command line, or a list that is an argv. */
static void
shell_or_argv (struct scan *S, size_t a, size_t b, enum code_run what)
{
  struct sbuf out = { 0 };
  bool dynamic = false;
  if (what == CODE_RUNS_CODE || !argv_list (S, a, b, &out, &dynamic))
    eval_string (S, a, b, &out, &dynamic);
  emit (S, what, &out, dynamic);
  free (out.s);
}

/* An argument that configures the call rather than naming a word:
 * { stdio: ... }, exception: true, out => x, shell=True. */
static bool
option_arg (const struct scan *S, size_t a, size_t b)
{
  const struct token *t = &S->t[a];
  if (t->kind == T_PUNCT && t->op[0] == '{')
    return true;
  if (a + 1 < b && (t->kind == T_IDENT || t->kind == T_STR)
      && (is_punct (&S->t[a + 1], ":") || is_punct (&S->t[a + 1], "=")
          || is_punct (&S->t[a + 1], "=>")))
    return true;
  return false;
}

/* Read the call at token i (the name; its arguments at [a, b)). */
static void
read_call (struct scan *S, const struct call_def *d, size_t a, size_t b)
{
  size_t parts[64][2];
  size_t n = split_args (S, a, b, parts, 64);
  struct sbuf out = { 0 };
  bool dynamic = false;
  /* Ruby and Perl: a leading environment hash is not the command */
  size_t first = 0;
  if (n > 1 && S->t[parts[0][0]].kind == T_PUNCT
      && S->t[parts[0][0]].op[0] == '{')
    first = 1;
  /* platform.system(), os.popen(): no command line, nothing run */
  if (n == 0)
    {
      if (d->kind == K_OPAQUE)
        emit (S, CODE_RUNS_SHELL, &out, true);
      return;
    }
  switch (d->kind)
    {
    case K_SHELL:
    case K_ARGV:
      shell_or_argv (S, parts[first][0], parts[first][1], CODE_RUNS_SHELL);
      return;
    case K_EVAL:
      shell_or_argv (S, parts[0][0], parts[0][1], CODE_RUNS_CODE);
      return;
    case K_IMPORT:
      eval_string (S, parts[0][0], parts[0][1], &out, &dynamic);
      if (dynamic)
        emit (S, CODE_RUNS_CODE, &out, true);
      /* require('child' + '_process') names it too */
      else if (S->L->needs && out.s && strstr (out.s, S->L->needs))
        S->needs_seen = true;
      free (out.s);
      return;
    case K_REFLECT:
      /* getattr(os, name), Kernel.send(:system, ...): a function picked
       * by name at run time from a module that runs commands */
      for (size_t i = a; i < b; i++)
        {
          const struct token *t = &S->t[i];
          static const char *const mods[] = { "os", "subprocess", "pty",
                                              "commands", "posix", "Kernel",
                                              "__import__", "Open3", "IO",
                                              NULL };
          for (const char *const *m = mods; *m && t->kind == T_IDENT; m++)
            if (ident_is (S, t, *m))
              {
                emit (S, CODE_RUNS_SHELL, &out, true);
                free (out.s);
                return;
              }
        }
      free (out.s);
      return;
    case K_LIST:
      if (n - first == 1)
        {
          shell_or_argv (S, parts[first][0], parts[first][1],
                         CODE_RUNS_SHELL);
          return;
        }
      for (size_t k = first; k < n; k++)
        if (!option_arg (S, parts[k][0], parts[k][1])
            && !argv_list (S, parts[k][0], parts[k][1], &out, &dynamic))
          argv_word (S, parts[k][0], parts[k][1], &out, &dynamic);
      break;
    case K_PROG:
      argv_word (S, parts[0][0], parts[0][1], &out, &dynamic);
      for (size_t k = 1; k < n; k++)
        {
          if (option_arg (S, parts[k][0], parts[k][1]))
            break; /* options */
          if (!argv_list (S, parts[k][0], parts[k][1], &out, &dynamic))
            argv_word (S, parts[k][0], parts[k][1], &out, &dynamic);
        }
      break;
    case K_SKIP1:
      {
        /* [mode,] path, then the argv (a list, or the words themselves,
         * arg0 first); a list ends it (what follows is the environment) */
        bool path_seen = false;
        for (size_t k = 0; k < n; k++)
          {
            const struct token *t = &S->t[parts[k][0]];
            bool literal = t->kind == T_STR && parts[k][1] == parts[k][0] + 1;
            if (!path_seen)
              {
                if (literal)
                  {
                    path_seen = true;
                    continue;
                  }
                if (k == 0 && t->kind == T_IDENT)
                  continue; /* os.P_WAIT */
                path_seen = true;
              }
            if (argv_list (S, parts[k][0], parts[k][1], &out, &dynamic))
              break;
            argv_word (S, parts[k][0], parts[k][1], &out, &dynamic);
          }
        if (!path_seen)
          dynamic = true;
        break;
      }
    case K_OPEN:
      {
        /* open(FH, "cmd |"), open(FH, "-|", "cmd", args), open("|cmd") */
        for (size_t k = 0; k < n && k < 2; k++)
          {
            const struct token *t = &S->t[parts[k][0]];
            if (t->kind != T_STR || parts[k][1] != parts[k][0] + 1)
              continue;
            const char *v = t->value;
            size_t len = t->vlen;
            while (len && v[len - 1] == ' ')
              len--;
            if ((len == 2 && (!memcmp (v, "-|", 2) || !memcmp (v, "|-", 2)))
                && k + 1 < n)
              {
                if (n - k - 1 == 1)
                  {
                    shell_or_argv (S, parts[k + 1][0], parts[k + 1][1],
                                   CODE_RUNS_SHELL);
                    return;
                  }
                for (size_t j = k + 1; j < n; j++)
                  argv_word (S, parts[j][0], parts[j][1], &out, &dynamic);
                emit (S, CODE_RUNS_SHELL, &out, dynamic);
                free (out.s);
                return;
              }
            if (len && (v[0] == '|' || v[len - 1] == '|'))
              {
                size_t from = v[0] == '|', to = v[len - 1] == '|' ? len - 1 : len;
                if (from > to)
                  from = to;
                sb_add (&out, v + from, to - from);
                emit (S, CODE_RUNS_SHELL, &out, t->dynamic);
                free (out.s);
                return;
              }
          }
        /* a mode or file only known at run time may be a pipe */
        for (size_t k = 0; k < n && k < 2; k++)
          if (S->t[parts[k][0]].kind == T_STR && S->t[parts[k][0]].dynamic)
            emit (S, CODE_RUNS_SHELL, &out, true);
        free (out.s);
        return;
      }
    case K_OPAQUE:
      eval_string (S, a, b, &out, &dynamic);
      emit (S, CODE_RUNS_SHELL, &out, true);
      free (out.s);
      return;
    case K_DOWNLOAD:
      if (n > 1)
        {
          eval_string (S, parts[1][0], parts[1][1], &out, &dynamic);
          if (!dynamic)
            emit (S, CODE_DOWNLOADS, &out, true);
        }
      free (out.s);
      return;
    }
  emit (S, CODE_RUNS_SHELL, &out, dynamic);
  free (out.s);
}

static bool qualifier_in (const struct scan *S, const char *quals,
                          const struct token *q);

/* The definition of a call named by token i, if the code calls one
 * there; d_index gets its index in the language's table. */
static const struct call_def *
call_at (struct scan *S, size_t i, size_t *d_index)
{
  const struct token *t = &S->t[i];
  if (t->kind != T_IDENT)
    return NULL;
  const char *name = S->s + t->start;
  size_t len = t->end - t->start;
  bool after_dot = i > 0
                   && (is_punct (&S->t[i - 1], ".") || is_punct (&S->t[i - 1], "->")
                       || is_punct (&S->t[i - 1], "::"));
  const struct token *q = i > 1 && after_dot ? &S->t[i - 2] : NULL;
  for (size_t k = 0; S->L->calls[k].name; k++)
    {
      const struct call_def *d = &S->L->calls[k];
      if (strlen (d->name) != len || memcmp (d->name, name, len) != 0)
        continue;
      if ((d->flags & F_BARE) && after_dot)
        continue;
      if ((d->flags & F_NEEDS) && !S->needs_seen)
        continue;
      if ((d->flags & F_QUAL) && !qualifier_in (S, d->quals, q))
        continue;
      *d_index = k;
      return d;
    }
  /* an alias: from subprocess import run as r; r("...") */
  for (size_t k = 0; k < S->n_aliases && !after_dot; k++)
    if (S->alias_of[k] && strlen (S->aliases[k]) == len
        && memcmp (S->aliases[k], name, len) == 0)
      {
        *d_index = (size_t) (S->alias_of[k] - S->L->calls);
        return S->alias_of[k];
      }
  return NULL;
}

/* Python imports that rename: from subprocess import run as r makes r
 * an alias of run; import subprocess as sub makes sub a qualifier
 * like subprocess. */
static void
note_aliases (struct scan *S)
{
  if (strcmp (S->L->name, "python") != 0)
    return;
  for (size_t i = 0; i < S->nt && !S->nomem; i++)
    {
      if (!ident_is (S, &S->t[i], "import"))
        continue;
      for (size_t j = i + 1; j < S->nt && !(j > i + 1 && S->t[j].nl)
                             && !is_punct (&S->t[j], ";");
           j++)
        {
          const struct token *t = &S->t[j];
          if (t->kind != T_IDENT)
            continue;
          size_t as = j;
          if (j + 2 < S->nt && ident_is (S, &S->t[j + 1], "as")
              && S->t[j + 2].kind == T_IDENT)
            as = j + 2;
          const struct token *a = &S->t[as];
          const char *bound = NULL;
          const struct call_def *d = NULL;
          if (ident_is (S, t, "subprocess") && as != j)
            bound = "subprocess"; /* a qualifier */
          for (size_t k = 0; !bound && S->L->calls[k].name; k++)
            if (ident_is (S, t, S->L->calls[k].name)
                && S->L->calls[k].kind != K_EVAL
                && S->L->calls[k].kind != K_IMPORT)
              d = &S->L->calls[k];
          if ((bound || d) && S->n_aliases < MAX_ALIASES)
            {
              char *nm = strndup (S->s + a->start, a->end - a->start);
              if (!nm)
                {
                  S->nomem = true;
                  return;
                }
              S->aliases[S->n_aliases] = nm;
              S->alias_of[S->n_aliases] = d;
              S->alias_qual[S->n_aliases++] = bound;
            }
          j = as;
        }
    }
}

/* The qualifier token q, with import aliases resolved. */
static bool
qualifier_in (const struct scan *S, const char *quals, const struct token *q)
{
  if (!q || q->kind != T_IDENT)
    return false;
  const char *name = S->s + q->start;
  size_t len = q->end - q->start;
  if (name_list_has (quals, name, len))
    return true;
  for (size_t k = 0; k < S->n_aliases; k++)
    if (S->alias_qual[k] && strlen (S->aliases[k]) == len
        && !memcmp (S->aliases[k], name, len)
        && name_list_has (quals, S->alias_qual[k], strlen (S->alias_qual[k])))
      return true;
  return false;
}

/* awk: print ... | "cmd", "cmd" | getline. */
static void
awk_pipes (struct scan *S)
{
  for (size_t i = 0; i + 1 < S->nt; i++)
    {
      const struct token *t = &S->t[i];
      if (!is_punct (t, "|"))
        continue;
      struct sbuf out = { 0 };
      bool dynamic = false;
      if (ident_is (S, &S->t[i + 1], "getline") && i > 0)
        {
          /* the command is the expression right before the pipe */
          size_t a = i;
          while (a > 0 && (S->t[a - 1].kind == T_STR
                           || S->t[a - 1].kind == T_IDENT)
                 && !ident_is (S, &S->t[a - 1], "while")
                 && !ident_is (S, &S->t[a - 1], "if"))
            a--;
          eval_string (S, a, i, &out, &dynamic);
        }
      else
        {
          size_t b = i + 1;
          while (b < S->nt && (S->t[b].kind == T_STR || S->t[b].kind == T_IDENT)
                 && !S->t[b].nl && !ident_is (S, &S->t[b], "getline"))
            b++;
          eval_string (S, i + 1, b, &out, &dynamic);
        }
      emit (S, CODE_RUNS_SHELL, &out, dynamic);
      free (out.s);
    }
}

/* AppleScript: do shell script "...". */
static void
applescript_shell (struct scan *S)
{
  for (size_t i = 0; i + 3 < S->nt; i++)
    if (ident_is (S, &S->t[i], "do") && ident_is (S, &S->t[i + 1], "shell")
        && ident_is (S, &S->t[i + 2], "script"))
      {
        size_t b = i + 3;
        while (b < S->nt && !S->t[b].nl)
          b++;
        shell_or_argv (S, i + 3, b, CODE_RUNS_SHELL);
      }
}

/* The arguments of a call without parentheses (system "ls", exec "x"):
 * up to the end of the statement. */
static size_t
bare_args_end (const struct scan *S, size_t a)
{
  size_t b = a;
  while (b < S->nt)
    {
      const struct token *t = &S->t[b];
      if (b > a && t->nl)
        break;
      if (t->kind == T_PUNCT && strchr (";)}]", t->op[0]) && !t->op[1])
        break;
      if (ident_is (S, t, "or") || ident_is (S, t, "and")
          || ident_is (S, t, "if") || ident_is (S, t, "unless"))
        break;
      if (t->kind == T_PUNCT && t->match < S->nt && t->match > b)
        b = t->match;
      b++;
    }
  return b;
}

static void
find_calls (struct scan *S, size_t *found)
{
  for (size_t i = 0; i < S->nt && !S->nomem; i++)
    {
      const struct token *t = &S->t[i];
      if (*S->work > S->work_limit)
        {
          struct sbuf none = { 0 };
          emit (S, CODE_RUNS_SHELL, &none, true);
          return;
        }
      if (t->kind == T_SHELLSTR)
        {
          S->t[i].used = true;
          struct sbuf out = { 0 };
          sb_add (&out, t->value, t->vlen);
          emit (S, CODE_RUNS_SHELL, &out, t->dynamic);
          free (out.s);
          continue;
        }
      /* zx and Bun: $`command` */
      if (!strcmp (S->L->name, "node") && ident_is (S, t, "$") && i + 1 < S->nt
          && S->t[i + 1].kind == T_STR && S->s[S->t[i + 1].start] == '`')
        {
          struct sbuf out = { 0 };
          sb_add (&out, S->t[i + 1].value, S->t[i + 1].vlen);
          emit (S, CODE_RUNS_SHELL, &out, S->t[i + 1].dynamic);
          free (out.s);
          continue;
        }
      size_t k;
      const struct call_def *d = call_at (S, i, &k);
      if (!d || i + 1 >= S->nt)
        continue;
      const struct token *n = &S->t[i + 1];
      if (is_punct (n, "("))
        {
          size_t close = n->match;
          read_call (S, d, i + 2, close);
          found[k]++;
        }
      else if (S->L->paren_free
               && (n->kind == T_STR || n->kind == T_WORDS
                   || n->kind == T_SHELLSTR
                   || (n->kind == T_IDENT && strcmp (S->L->name, "lua") != 0
                       && (d->kind != K_EVAL || S->s[n->start] == '$'))))
        {
          /* perl's eval {...} is a block, not code in a string */
          read_call (S, d, i + 1, bare_args_end (S, i + 1));
          found[k]++;
        }
    }
}

/* Whether byte `at` lies inside a token whose text was judged on its
 * own (a string that runs as a command line or as code). */
static bool
inside_used (const struct scan *S, size_t at)
{
  size_t lo = 0, hi = S->nt;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      if (S->t[mid].start <= at)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo > 0 && S->t[lo - 1].used && at < S->t[lo - 1].end;
}

/* The fail-safe: calls of each function in the raw text (a name not
 * inside a longer identifier, then '(' or, where calls need no
 * parentheses, a quote), against those read; and string literals that
 * are exactly such a name (getattr(os, "system")). */
static void
fail_safe (struct scan *S, const size_t *found)
{
  const struct call_def *calls = S->L->calls;
  bool unread = false;
  if (S->any_dynamic)
    return; /* already only known at run time */
  for (size_t k = 0; calls[k].name && !unread; k++)
    {
      const struct call_def *d = &calls[k];
      if (d->kind == K_IMPORT || ((d->flags & F_NEEDS) && !S->needs_seen))
        continue;
      size_t len = strlen (d->name), seen = 0;
      for (const char *p = S->s; (p = memmem (p, S->n - (size_t) (p - S->s),
                                              d->name, len)) != NULL;
           p += len)
        {
          *S->work += 1;
          size_t at = (size_t) (p - S->s);
          if (at > 0 && ident_byte ((unsigned char) S->s[at - 1]))
            continue;
          if (inside_used (S, at))
            continue;
          size_t q = at + len;
          if (q < S->n && ident_byte ((unsigned char) S->s[q]))
            continue;
          bool dot = at > 0 && (S->s[at - 1] == '.' || S->s[at - 1] == '>'
                                || S->s[at - 1] == ':');
          /* Ruby's :system, a symbol naming the function */
          if (S->L->strings & S_INTERP_HASH && at > 0 && S->s[at - 1] == ':'
              && !(at > 1 && S->s[at - 2] == ':') && d->kind != K_EVAL
              && d->kind != K_REFLECT && d->kind != K_OPEN)
            {
              unread = true;
              break;
            }
          if ((d->flags & F_BARE) && dot)
            continue;
          if (d->flags & F_QUAL)
            {
              /* QUAL.name */
              if (!dot)
                continue;
              size_t e = at - 1, st = e;
              while (st > 0 && ident_byte ((unsigned char) S->s[st - 1]))
                st--;
              struct token qt = { .kind = T_IDENT, .start = st, .end = e };
              if (!qualifier_in (S, d->quals, &qt))
                continue;
            }
          while (q < S->n && (S->s[q] == ' ' || S->s[q] == '\t'))
            q++;
          if (q < S->n
              && (S->s[q] == '('
                  || (S->L->paren_free && d->kind != K_EVAL
                      && strchr ("\"'`", S->s[q]))))
            seen++;
        }
      if (seen > found[k])
        unread = true;
    }
  for (size_t i = 0; i < S->nt && !unread; i++)
    {
      const struct token *t = &S->t[i];
      if (t->kind != T_STR || !t->vlen || t->vlen > 32)
        continue;
      for (size_t k = 0; calls[k].name && !unread; k++)
        if (calls[k].kind != K_EVAL && calls[k].kind != K_IMPORT
            && !(calls[k].flags & F_QUAL)
            && strlen (calls[k].name) == t->vlen
            && !memcmp (calls[k].name, t->value, t->vlen)
            && (S->L->needs == NULL || !(calls[k].flags & F_NEEDS)
                || S->needs_seen))
          unread = true;
    }
  if (unread)
    {
      struct sbuf none = { 0 };
      emit (S, CODE_RUNS_SHELL, &none, true);
    }
}

bool
inline_code_scan (const char *lang, const char *code, size_t len,
                  code_run_fn *fn, void *ctx, unsigned long long *work)
{
  const struct lang_def *L = find_lang (lang);
  if (!L)
    return true;
  unsigned long long scratch = 0;
  struct scan S = {
    .L = L, .s = code, .n = len, .fn = fn, .ctx = ctx,
    .work = work ? work : &scratch,
  };
  S.work_limit = *S.work + WORK_PER_BYTE * ((unsigned long long) len + 16);
  S.needs_seen = L->needs && memmem (code, len, L->needs, strlen (L->needs));
  size_t n_calls = 0;
  while (L->calls[n_calls].name)
    n_calls++;
  size_t *found = calloc (n_calls + 1, sizeof *found);
  if (!found)
    return false;
  lex (&S);
  if (!S.nomem)
    match_brackets (&S);
  if (!S.nomem)
    note_aliases (&S);
  if (!S.nomem)
    find_calls (&S, found);
  if (!S.nomem && !strcmp (L->name, "awk"))
    awk_pipes (&S);
  if (!S.nomem && !strcmp (L->name, "applescript"))
    applescript_shell (&S);
  if (!S.nomem)
    fail_safe (&S, found);
  for (size_t i = 0; i < S.nt; i++)
    free (S.t[i].value);
  free (S.t);
  for (size_t i = 0; i < S.n_aliases; i++)
    free ((char *) S.aliases[i]);
  free (found);
  return !S.nomem;
}
