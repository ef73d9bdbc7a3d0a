/* The approval gate's shell tokenizer (see shell_parse.h).
 *
 * It reads a command line the way bash's parser does, as far as that
 * decides what runs: quotes, escapes, backslash-newline, comments,
 * operators, reserved words, heredocs, and the nested scripts of $(...),
 * `...`, <(...), (...), {...}.  On top of bash's view it looks through
 * wrappers (sudo rm), shells' -c strings, eval, find -exec and heredocs
 * fed to a shell.  Where bash would report a syntax error, it goes on and
 * treats what follows as commands: a judge may see commands bash would
 * not run, never the other way round.
 *
 * Bounds: every byte of a text is read a bounded number of times (the
 * lexer only moves forward; look-ahead is one byte past blanks and
 * continuations), nesting is at most MAX_NEST deep, and nested scripts
 * (-c strings, eval, backquotes, heredocs fed to a shell) share a budget
 * proportional to the input.  `work` counts the steps. */
#define _GNU_SOURCE
#include "shell_parse.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

#define MAX_NEST 64      /* lists, quotes and substitutions inside each other */
#define MAX_CMDS 50000   /* commands of one parse */
#define MAX_WORDS 65536  /* words of one command */
#define MAX_WRAPPED 64   /* wrapped commands found in one simple command */
#define MAX_PEEL 16      /* wrappers inside wrappers */
/* Nested scripts may add up to this many times the text's length, and
 * wrapped commands' words this many times. */
#define NESTED_BUDGET 4
#define COPY_BUDGET 4

/* ---- state ---- */

struct heredoc
{
  char *delim;
  bool quoted;     /* the delimiter was quoted: the body is literal */
  bool strip_tabs; /* <<- */
  bool to_shell;   /* a shell reads it: the body is a script */
  bool piped;      /* its command's output goes down a pipe */
};

/* One text being read: the normalized line, or a nested script. */
struct text
{
  const char *s;
  size_t pos, end;
  /* cont[i]: byte i belongs to a backslash-newline bash removes */
  unsigned char *cont;
  /* heredocs whose bodies start at the next newline */
  struct heredoc *hd;
  size_t n_hd, cap_hd;
};

struct parser
{
  struct shell_parse *out;
  size_t cap_cmds;
  unsigned next_list;
  unsigned nest;
  unsigned long long budget; /* bytes of nested scripts still allowed */
  unsigned long long copy_budget; /* bytes of wrapped commands' words */
  bool stop;                 /* a limit was hit or memory ran out */
  bool nomem;
};

/* A word being read. */
struct word
{
  char *v;
  size_t len, cap;
  bool quoted;         /* a quote or an escape was used */
  size_t plain_prefix; /* length before the first quote, escape or
                          expansion (SIZE_MAX: none) */
  size_t base;         /* just after the last literal '/' */
  bool fd_prefix;      /* digits only, right before '<' or '>' */
};

enum close_kind
{
  CLOSE_EOF,
  CLOSE_PAREN,
  CLOSE_BRACE,
};

enum
{
  RET_EOF,    /* the text ended */
  RET_CLOSED, /* the list's own closing token */
  RET_PAREN,  /* a ')' that closes an enclosing list */
};

/* One list: a line, a script, or the inside of brackets. */
struct frame
{
  unsigned list; /* UINT_MAX until its first command */
  unsigned depth;
  enum close_kind close;
  bool no_heredoc;      /* inside (( )) and $(( )): '<<' is a shift */
  bool lines_are_lists; /* the top level */
  size_t hd_base;       /* the heredocs its newlines read: [hd_base, n_hd) */
  /* the command whose word is being read, when words make commands:
   * it takes its place before the commands of a substitution in it */
  struct builder *open;
};

struct builder
{
  bool started;
  size_t slot;
  char **words;
  size_t n_words, cap_words;
  size_t base0; /* words[0]'s last path component */
  struct shell_redirect *redirs;
  size_t n_redirs, cap_redirs;
  bool heredoc;
  size_t hd_first; /* heredocs it registered: [hd_first, n_hd) */
};

enum mode
{
  M_CMD,       /* words make a simple command */
  M_FOR,       /* after for/select: words are not commands */
  M_CASE_WORD, /* after case: the subject, up to 'in' */
  M_PATTERN,   /* case patterns, up to ')' */
  M_COND,      /* inside [[ ]] */
  M_FUNC_NAME, /* after 'function' */
  M_COPROC,    /* after 'coproc': a name or the command */
  M_ARRAY,     /* NAME=( words ): not commands */
};

struct list_state
{
  struct builder b;
  enum mode mode;
  unsigned cases;       /* case statements open in this list */
  unsigned cond_parens; /* parentheses open inside [[ ]] */
  bool after_op;        /* right after | || && |&: a newline continues */
  /* the previous command's output goes down a pipe */
  bool pipe_pending;
  size_t pipe_hd_first, pipe_hd_end;
  /* heredoc bodies of that command, kept until the reader is known */
  char **deferred;
  size_t n_deferred, cap_deferred;
};

struct token
{
  enum
  {
    T_EOF,
    T_NEWLINE,
    T_OP,
    T_REDIR,
    T_WORD,
  } kind;
  const char *op; /* T_OP, T_REDIR: a static string */
  char *fd;       /* T_REDIR: descriptor prefix ("2"), or NULL */
  struct word w;  /* T_WORD */
};

static int parse_list (struct parser *P, struct text *T, struct frame *F);
static bool builder_start (struct parser *P, struct text *T, struct frame *F,
                           struct builder *B);
static void lex_dollar (struct parser *P, struct text *T, struct frame *F,
                        struct word *w, bool in_dq);
static void lex_dquote (struct parser *P, struct text *T, struct frame *F,
                        struct word *w, bool heredoc_body);

/* ---- memory ---- */

static void
nomem (struct parser *P)
{
  P->nomem = true;
  P->stop = true;
}

/* Make room for `need` elements; false (and P stopped) when impossible. */
static bool
grow (struct parser *P, void **arr, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return true;
  size_t n = *cap ? *cap : 8;
  while (n < need)
    {
      if (n > SIZE_MAX / 2 / size)
        {
          nomem (P);
          return false;
        }
      n *= 2;
    }
  void *p = realloc (*arr, n * size);
  if (!p)
    {
      nomem (P);
      return false;
    }
  *arr = p;
  *cap = n;
  return true;
}

#define GROW(P, arr, cap, need)                                                \
  ({                                                                           \
    void *grow_p_ = (arr);                                                     \
    bool grow_ok_ = grow ((P), &grow_p_, &(cap), (need), sizeof *(arr));       \
    (arr) = grow_p_;                                                           \
    grow_ok_;                                                                  \
  })

static char *
dup_n (struct parser *P, const char *s, size_t n)
{
  char *p = strndup (s, n);
  if (!p)
    nomem (P);
  return p;
}

static char *
dup (struct parser *P, const char *s)
{
  return dup_n (P, s, strlen (s));
}

static bool
nest_enter (struct parser *P)
{
  if (P->stop)
    return false;
  if (P->nest >= MAX_NEST)
    {
      P->out->truncated = true;
      P->stop = true;
      return false;
    }
  P->nest++;
  return true;
}

static void
nest_leave (struct parser *P)
{
  P->nest--;
}

/* ---- words ---- */

static void
wput (struct parser *P, struct word *w, const char *s, size_t n)
{
  if (!w || n == 0 || P->nomem)
    return;
  if (!GROW (P, w->v, w->cap, w->len + n + 1))
    return;
  memcpy (w->v + w->len, s, n);
  w->len += n;
  w->v[w->len] = '\0';
  P->out->work += n;
}

static void
wputc (struct parser *P, struct word *w, char c)
{
  wput (P, w, &c, 1);
}

/* A quote, escape or expansion begins here. */
static void
wspecial (struct word *w, bool quoted)
{
  if (!w)
    return;
  if (w->plain_prefix == SIZE_MAX)
    w->plain_prefix = w->len;
  if (quoted)
    w->quoted = true;
}

/* A literal character of the word (quoted or not). */
static void
wlit (struct parser *P, struct word *w, char c)
{
  wputc (P, w, c);
  if (w && c == '/')
    w->base = w->len;
}

/* Text of the input as written, from..to, without the backslash-newline
 * pairs bash removes. */
static void
wraw (struct parser *P, struct text *T, struct word *w, size_t from, size_t to)
{
  if (!w)
    return;
  size_t i = from;
  while (i < to)
    {
      size_t j = i;
      while (j < to && !T->cont[j])
        j++;
      wput (P, w, T->s + i, j - i);
      while (j < to && T->cont[j])
        j++;
      i = j;
    }
}

static void
word_init (struct word *w)
{
  memset (w, 0, sizeof *w);
  w->plain_prefix = SIZE_MAX;
}

/* The value, never NULL; the word gives it up. */
static char *
word_take (struct parser *P, struct word *w)
{
  char *v = w->v ? w->v : dup (P, "");
  w->v = NULL;
  w->len = w->cap = 0;
  return v;
}

static bool
plain (const struct word *w, const char *kw)
{
  return !w->quoted && w->plain_prefix == SIZE_MAX && w->v
         && strcmp (w->v, kw) == 0;
}

static bool
name_start (unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
name_byte (unsigned char c)
{
  return name_start (c) || (c >= '0' && c <= '9');
}

/* NAME=..., NAME+=..., NAME[...]=... within s[0..lim). */
static bool
assignment_prefix (const char *s, size_t lim)
{
  size_t i = 0;
  if (lim == 0 || !name_start ((unsigned char) s[0]))
    return false;
  while (i < lim && name_byte ((unsigned char) s[i]))
    i++;
  if (i < lim && s[i] == '[')
    {
      const char *e = memchr (s + i, ']', lim - i);
      if (!e)
        return false;
      i = (size_t) (e - s) + 1;
    }
  if (i < lim && s[i] == '+')
    i++;
  return i < lim && s[i] == '=';
}

/* A word bash takes as an assignment: the name part is unquoted. */
static bool
is_assignment (const struct word *w)
{
  if (!w->v)
    return false;
  size_t lim = w->plain_prefix == SIZE_MAX ? w->len : w->plain_prefix;
  return assignment_prefix (w->v, lim);
}

/* ---- reading ---- */

static void
advance (struct parser *P, struct text *T)
{
  T->pos++;
  P->out->work++;
}

/* The current byte, past the backslash-newline pairs bash removes while
 * reading (outside single quotes, comments and quoted heredocs, where
 * this is never called).  EOF at the end. */
static int
peekc (struct parser *P, struct text *T)
{
  while (T->pos + 1 < T->end && T->s[T->pos] == '\\'
         && T->s[T->pos + 1] == '\n')
    {
      T->cont[T->pos] = T->cont[T->pos + 1] = 1;
      T->pos += 2;
      P->out->work++;
    }
  return T->pos < T->end ? (unsigned char) T->s[T->pos] : EOF;
}

/* The byte after the current one, past continuations, without moving. */
static int
peek_next (struct parser *P, const struct text *T)
{
  size_t j = T->pos + 1;
  while (j + 1 < T->end && T->s[j] == '\\' && T->s[j + 1] == '\n')
    {
      j += 2;
      P->out->work++;
    }
  return j < T->end ? (unsigned char) T->s[j] : EOF;
}

/* The next byte that is not a blank, without moving. */
static int
peek_nonblank (struct parser *P, const struct text *T)
{
  size_t j = T->pos;
  for (;;)
    {
      if (j + 1 < T->end && T->s[j] == '\\' && T->s[j + 1] == '\n')
        j += 2;
      else if (j < T->end && (T->s[j] == ' ' || T->s[j] == '\t'))
        j++;
      else
        break;
      P->out->work++;
    }
  return j < T->end ? (unsigned char) T->s[j] : EOF;
}

static bool
metachar (int c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&'
         || c == '|' || c == '(' || c == ')' || c == '<' || c == '>';
}

/* 'single quoted': literal, up to the next quote or the end. */
static void
lex_squote (struct parser *P, struct text *T, struct word *w)
{
  advance (P, T);
  const char *q = memchr (T->s + T->pos, '\'', T->end - T->pos);
  size_t stop = q ? (size_t) (q - T->s) : T->end;
  for (size_t i = T->pos; i < stop; i++)
    wlit (P, w, T->s[i]);
  P->out->work += stop - T->pos;
  T->pos = q ? stop + 1 : stop;
}

static int
hex_value (int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* $'ANSI-C quoted': escapes decoded; the current byte is the quote.  A
 * decoded NUL ends the string's contribution, as in bash. */
static void
lex_ansi_c (struct parser *P, struct text *T, struct word *w)
{
  const char *s = T->s;
  bool ended = false;
  advance (P, T);
  while (T->pos < T->end)
    {
      char c = s[T->pos];
      if (c == '\'')
        {
          advance (P, T);
          return;
        }
      if (c != '\\' || T->pos + 1 >= T->end)
        {
          if (!ended)
            wlit (P, w, c);
          advance (P, T);
          continue;
        }
      char e = s[T->pos + 1];
      T->pos += 2;
      P->out->work += 2;
      unsigned long v = 0;
      int digits = 0, max = 0, base = 16;
      bool number = true;
      switch (e)
        {
        case 'a': v = 7; number = false; break;
        case 'b': v = 8; number = false; break;
        case 'e': case 'E': v = 27; number = false; break;
        case 'f': v = 12; number = false; break;
        case 'n': v = 10; number = false; break;
        case 'r': v = 13; number = false; break;
        case 't': v = 9; number = false; break;
        case 'v': v = 11; number = false; break;
        case '\\': case '\'': case '"': case '?':
          v = (unsigned char) e;
          number = false;
          break;
        case 'x': max = 2; break;
        case 'u': max = 4; break;
        case 'U': max = 8; break;
        case 'c':
          if (T->pos < T->end)
            {
              v = (unsigned char) s[T->pos] & 0x1f;
              advance (P, T);
              number = false;
              break;
            }
          /* fall through */
        default:
          if (e >= '0' && e <= '7')
            {
              base = 8;
              max = 2;
              v = (unsigned long) (e - '0');
              digits = 1;
              break;
            }
          /* not an escape: both bytes stay */
          if (!ended)
            {
              wlit (P, w, '\\');
              wlit (P, w, e);
            }
          continue;
        }
      if (number)
        {
          int extra = 0;
          while (extra < max && T->pos < T->end)
            {
              int d = hex_value ((unsigned char) s[T->pos]);
              if (d < 0 || d >= base)
                break;
              v = v * (unsigned long) base + (unsigned long) d;
              advance (P, T);
              extra++;
            }
          digits += extra;
          if (digits == 0)
            {
              /* "\x" with no digit stays as written */
              if (!ended)
                {
                  wlit (P, w, '\\');
                  wlit (P, w, e);
                }
              continue;
            }
        }
      if (ended)
        continue;
      if (v == 0)
        {
          ended = true;
          continue;
        }
      if (e == 'u' || e == 'U')
        {
          uint8_t buf[6];
          int n = v <= 0x10ffff ? u8_uctomb (buf, (ucs4_t) v, sizeof buf) : -1;
          if (n > 0)
            for (int k = 0; k < n; k++)
              wlit (P, w, (char) buf[k]);
        }
      else
        wlit (P, w, (char) (v & 0xff));
    }
}

static void parse_nested_text (struct parser *P, unsigned depth,
                               const char *s, size_t len);

/* `command`: the backslashes before $ ` \ (and " inside double quotes)
 * are removed and the result is a script.  The current byte is the
 * opening backquote. */
static void
lex_backquote (struct parser *P, struct text *T, struct frame *F,
               struct word *w, bool in_dq)
{
  size_t start = T->pos;
  struct word d;
  word_init (&d);
  wspecial (w, false);
  advance (P, T);
  for (;;)
    {
      int c = peekc (P, T);
      if (c == EOF || P->stop)
        break;
      if (c == '`')
        {
          advance (P, T);
          break;
        }
      if (c == '\\' && T->pos + 1 < T->end)
        {
          char n = T->s[T->pos + 1];
          if (n == '$' || n == '`' || n == '\\' || (in_dq && n == '"'))
            {
              wputc (P, &d, n);
              T->pos += 2;
              P->out->work += 2;
              continue;
            }
        }
      wputc (P, &d, (char) c);
      advance (P, T);
    }
  wraw (P, T, w, start, T->pos);
  if (F->open)
    builder_start (P, T, F, F->open);
  parse_nested_text (P, F->depth, d.v ? d.v : "", d.len);
  free (d.v);
}

/* Forget heredocs registered from index `base` on. */
static void
drop_heredocs (struct text *T, size_t base)
{
  for (size_t i = base; i < T->n_hd; i++)
    free (T->hd[i].delim);
  if (T->n_hd > base)
    T->n_hd = base;
}

/* $(...), $((...)), <(...), >(...): a nested list in place.  The current
 * byte is '(' and `start` is where the expansion began ('$', '<', '>').
 * Bash reads heredocs begun inside a command substitution within it, so
 * those left unread at its end have no body here either. */
static void
lex_comsub (struct parser *P, struct text *T, struct frame *F,
            struct word *w, size_t start)
{
  wspecial (w, false);
  /* $(( is arithmetic, or a subshell inside a command substitution when
   * it turns out not to be: read it as the latter with '<<' meaning a
   * shift, which finds every command either reading could run. */
  advance (P, T);
  bool arith = peekc (P, T) == '(';
  if (F->open)
    builder_start (P, T, F, F->open);
  if (!nest_enter (P))
    return;
  struct frame nf = {
    .list = UINT_MAX,
    .depth = F->depth + 1,
    .close = CLOSE_PAREN,
    .no_heredoc = arith,
    .hd_base = T->n_hd,
  };
  parse_list (P, T, &nf);
  drop_heredocs (T, nf.hd_base);
  nest_leave (P);
  wraw (P, T, w, start, T->pos);
}

/* ${...}: kept as written; command substitutions inside are found. */
static void
lex_brace (struct parser *P, struct text *T, struct frame *F,
           struct word *w, size_t start, bool in_dq)
{
  wspecial (w, false);
  advance (P, T);
  if (!nest_enter (P))
    return;
  for (;;)
    {
      int c = peekc (P, T);
      if (c == EOF || P->stop)
        break;
      if (c == '}')
        {
          advance (P, T);
          break;
        }
      if (c == '\\')
        {
          advance (P, T);
          if (T->pos < T->end)
            advance (P, T);
        }
      else if (c == '\'' && !in_dq)
        lex_squote (P, T, NULL);
      else if (c == '"')
        lex_dquote (P, T, F, NULL, false);
      else if (c == '$')
        lex_dollar (P, T, F, NULL, in_dq);
      else if (c == '`')
        lex_backquote (P, T, F, NULL, in_dq);
      else
        advance (P, T);
    }
  nest_leave (P);
  wraw (P, T, w, start, T->pos);
}

/* '$' and what follows.  The current byte is the '$'. */
static void
lex_dollar (struct parser *P, struct text *T, struct frame *F,
            struct word *w, bool in_dq)
{
  size_t start = T->pos;
  advance (P, T);
  int c = peekc (P, T);
  if (c == '(')
    lex_comsub (P, T, F, w, start);
  else if (c == '{')
    lex_brace (P, T, F, w, start, in_dq);
  else if (c == '\'' && !in_dq)
    {
      wspecial (w, true);
      lex_ansi_c (P, T, w);
    }
  else if (c == '"' && !in_dq)
    {
      /* $"..." (translated): a double-quoted string */
      lex_dquote (P, T, F, w, false);
    }
  else
    {
      if (c != EOF && (name_byte ((unsigned char) c) || strchr ("@*#?$!-", c)))
        wspecial (w, false);
      wputc (P, w, '$');
    }
}

/* "double quoted", or (heredoc_body) the body of a heredoc with an
 * unquoted delimiter, which has the same expansions and no closing
 * quote.  The current byte is the opening quote (not for a body). */
static void
lex_dquote (struct parser *P, struct text *T, struct frame *F,
            struct word *w, bool heredoc_body)
{
  if (!nest_enter (P))
    return;
  if (!heredoc_body)
    {
      wspecial (w, true);
      advance (P, T);
    }
  for (;;)
    {
      int c = peekc (P, T);
      if (c == EOF || P->stop)
        break;
      if (c == '"' && !heredoc_body)
        {
          advance (P, T);
          break;
        }
      if (c == '\\' && T->pos + 1 < T->end)
        {
          char n = T->s[T->pos + 1];
          if (n == '$' || n == '`' || n == '\\' || (n == '"' && !heredoc_body))
            {
              wlit (P, w, n);
              T->pos += 2;
              P->out->work += 2;
              continue;
            }
        }
      if (c == '$')
        lex_dollar (P, T, F, w, true);
      else if (c == '`')
        lex_backquote (P, T, F, w, true);
      else
        {
          wlit (P, w, (char) c);
          advance (P, T);
        }
    }
  nest_leave (P);
}

/* An unquoted word, up to a metacharacter.  The current byte starts it. */
static void
lex_word (struct parser *P, struct text *T, struct frame *F, struct word *w)
{
  for (;;)
    {
      int c = peekc (P, T);
      if (c == EOF || P->stop)
        break;
      if (c == '<' || c == '>')
        {
          if (peek_next (P, T) == '(')
            {
              /* process substitution, also inside a word (bash) */
              size_t start = T->pos;
              advance (P, T);
              peekc (P, T);
              lex_comsub (P, T, F, w, start);
              continue;
            }
          w->fd_prefix = w->len > 0 && w->plain_prefix == SIZE_MAX
                         && strspn (w->v, "0123456789") == w->len;
          break;
        }
      if (metachar (c))
        break;
      switch (c)
        {
        case '\\':
          /* a backslash before a newline was removed by peekc */
          wspecial (w, true);
          advance (P, T);
          if (T->pos < T->end)
            {
              wlit (P, w, T->s[T->pos]);
              advance (P, T);
            }
          else
            wlit (P, w, '\\');
          break;
        case '\'':
          wspecial (w, true);
          lex_squote (P, T, w);
          break;
        case '"':
          lex_dquote (P, T, F, w, false);
          break;
        case '$':
          lex_dollar (P, T, F, w, false);
          break;
        case '`':
          lex_backquote (P, T, F, w, false);
          break;
        default:
          wlit (P, w, (char) c);
          advance (P, T);
        }
    }
}

/* The operator of a redirection starting at '<' or '>'. */
static const char *
lex_redir_op (struct parser *P, struct text *T)
{
  int c = peekc (P, T);
  advance (P, T);
  int n = peekc (P, T);
  if (c == '<')
    {
      if (n == '<')
        {
          advance (P, T);
          int m = peekc (P, T);
          if (m == '<')
            {
              advance (P, T);
              return "<<<";
            }
          if (m == '-')
            {
              advance (P, T);
              return "<<-";
            }
          return "<<";
        }
      if (n == '&')
        {
          advance (P, T);
          return "<&";
        }
      if (n == '>')
        {
          advance (P, T);
          return "<>";
        }
      return "<";
    }
  if (n == '>')
    {
      advance (P, T);
      return ">>";
    }
  if (n == '&')
    {
      advance (P, T);
      return ">&";
    }
  if (n == '|')
    {
      advance (P, T);
      return ">|";
    }
  return ">";
}

/* The next token.  Comments are skipped. */
static void
lex_token (struct parser *P, struct text *T, struct frame *F,
           struct token *t)
{
  memset (t, 0, sizeof *t);
  word_init (&t->w);
  for (;;)
    {
      int c = peekc (P, T);
      if (c == ' ' || c == '\t')
        {
          advance (P, T);
          continue;
        }
      if (c == '#')
        {
          /* to the end of the line, backslashes and all */
          const char *nl = memchr (T->s + T->pos, '\n', T->end - T->pos);
          size_t stop = nl ? (size_t) (nl - T->s) : T->end;
          P->out->work += stop - T->pos;
          T->pos = stop;
          continue;
        }
      break;
    }
  if (P->stop)
    {
      t->kind = T_EOF;
      return;
    }
  int c = peekc (P, T);
  switch (c)
    {
    case EOF:
      t->kind = T_EOF;
      return;
    case '\n':
      advance (P, T);
      t->kind = T_NEWLINE;
      return;
    case ';':
      advance (P, T);
      t->kind = T_OP;
      t->op = ";";
      if (peekc (P, T) == ';')
        {
          advance (P, T);
          t->op = ";;";
          if (peekc (P, T) == '&')
            {
              advance (P, T);
              t->op = ";;&";
            }
        }
      else if (peekc (P, T) == '&')
        {
          advance (P, T);
          t->op = ";&";
        }
      return;
    case '&':
      advance (P, T);
      t->kind = T_OP;
      t->op = "&";
      if (peekc (P, T) == '&')
        {
          advance (P, T);
          t->op = "&&";
        }
      else if (peekc (P, T) == '>')
        {
          advance (P, T);
          t->kind = T_REDIR;
          t->op = "&>";
          if (peekc (P, T) == '>')
            {
              advance (P, T);
              t->op = "&>>";
            }
        }
      return;
    case '|':
      advance (P, T);
      t->kind = T_OP;
      t->op = "|";
      if (peekc (P, T) == '|')
        {
          advance (P, T);
          t->op = "||";
        }
      else if (peekc (P, T) == '&')
        {
          advance (P, T);
          t->op = "|&";
        }
      return;
    case '(':
      advance (P, T);
      t->kind = T_OP;
      t->op = "(";
      return;
    case ')':
      advance (P, T);
      t->kind = T_OP;
      t->op = ")";
      return;
    case '<':
    case '>':
      if (peek_next (P, T) != '(')
        {
          t->kind = T_REDIR;
          t->op = lex_redir_op (P, T);
          return;
        }
      break;
    default:
      break;
    }
  t->kind = T_WORD;
  lex_word (P, T, F, &t->w);
  if (t->w.fd_prefix && !P->stop)
    {
      t->kind = T_REDIR;
      t->fd = word_take (P, &t->w);
      t->op = lex_redir_op (P, T);
    }
}

static void
token_free (struct token *t)
{
  free (t->w.v);
  free (t->fd);
  t->w.v = t->fd = NULL;
}

/* ---- commands ---- */

static bool
reserve_slot (struct parser *P, struct frame *F, size_t *slot)
{
  struct shell_parse *o = P->out;
  if (o->n_cmds >= MAX_CMDS)
    {
      o->truncated = true;
      P->stop = true;
      return false;
    }
  if (!GROW (P, o->cmds, P->cap_cmds, o->n_cmds + 1))
    return false;
  if (F->list == UINT_MAX)
    F->list = P->next_list++;
  struct shell_command *c = &o->cmds[o->n_cmds];
  memset (c, 0, sizeof *c);
  c->list = F->list;
  c->depth = F->depth;
  c->connector = "";
  *slot = o->n_cmds++;
  return true;
}

static bool
builder_start (struct parser *P, struct text *T, struct frame *F,
               struct builder *B)
{
  if (B->started)
    return true;
  if (!reserve_slot (P, F, &B->slot))
    return false;
  B->started = true;
  B->hd_first = T->n_hd;
  return true;
}

static void
builder_add_word (struct parser *P, struct builder *B, struct word *w)
{
  if (B->n_words >= MAX_WORDS)
    {
      P->out->truncated = true;
      return;
    }
  if (!GROW (P, B->words, B->cap_words, B->n_words + 2))
    return;
  if (B->n_words == 0)
    B->base0 = w->base;
  char *v = word_take (P, w);
  if (!v)
    return;
  B->words[B->n_words++] = v;
  B->words[B->n_words] = NULL;
}

static void
free_words (char **v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (v[i]);
  free (v);
}

static void
free_redirs (struct shell_redirect *r, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (r[i].op);
      free (r[i].target);
    }
  free (r);
}

static void
builder_clear (struct builder *B)
{
  free_words (B->words, B->n_words);
  free_redirs (B->redirs, B->n_redirs);
  memset (B, 0, sizeof *B);
}

static const char *
base_name (const char *s)
{
  const char *slash = strrchr (s, '/');
  return slash && slash[1] ? slash + 1 : s;
}

/* ---- wrappers ---- */

enum
{
  WF_ASSIGN = 1,  /* NAME=value words before the command are skipped */
  WF_NUMOPT = 2,  /* -NUMBER is an option (nice -10) */
  WF_JOIN = 4,    /* the command's words are also one shell string */
  WF_STDIN = 8,   /* without a command: a shell reading stdin */
  WF_DASH = 16,   /* a lone '-' is an option (env -) */
  WF_NOARGS = 32, /* options that mean "no command" (see no_cmd) */
};

struct wrapper
{
  const char *name;
  const char *arg_opts;  /* short options with an argument */
  const char *opt_opts;  /* short options whose argument is only attached */
  const char *long_args; /* long options with an argument: "|a|b|" */
  unsigned char operands; /* operands before the command (timeout 5) */
  unsigned char flags;
  const char *no_cmd;     /* short options after which nothing runs */
};

/* Commands that run their arguments as a command.  Options are the ones
 * that take an argument, so the command is found after them. */
static const struct wrapper wrappers[] = {
  { "sudo", "acCDgpRrTtUu", "h",
    "|user|group|close-from|chdir|prompt|role|type|other-user|"
    "command-timeout|chroot|host|",
    0, WF_ASSIGN | WF_STDIN | WF_NOARGS, "elvkK" },
  { "doas", "aCu", "", "", 0, WF_STDIN, NULL },
  { "env", "uCSP", "", "|unset|chdir|split-string|", 0, WF_ASSIGN | WF_DASH,
    NULL },
  { "exec", "a", "", "", 0, 0, NULL },
  { "nohup", "", "", "", 0, 0, NULL },
  { "setsid", "", "", "", 0, 0, NULL },
  { "time", "fo", "", "|format|output|", 0, 0, NULL },
  { "command", "", "", "", 0, WF_NOARGS, "vV" },
  { "builtin", "", "", "", 0, 0, NULL },
  { "xargs", "EIdLnPsa", "eil",
    "|arg-file|delimiter|max-args|max-procs|max-chars|process-slot-var|", 0,
    0, NULL },
  { "timeout", "ks", "", "|kill-after|signal|", 1, 0, NULL },
  { "nice", "n", "", "|adjustment|", 0, WF_NUMOPT, NULL },
  { "ionice", "cnpPu", "", "|class|classdata|pid|pgid|uid|", 0, WF_NOARGS,
    "pPu" },
  { "stdbuf", "ioe", "", "|input|output|error|", 0, 0, NULL },
  { "chroot", "", "", "|userspec|groups|", 1, WF_STDIN, NULL },
  { "watch", "nq", "d", "|interval|", 0, WF_JOIN, NULL },
  { "strace", "abeEIoOpPsSuUX", "", "", 0, 0, NULL },
  { "ltrace", "aADeFlnopsuwx", "", "", 0, 0, NULL },
  { "flock", "Ew", "", "|timeout|conflict-exit-code|", 1, 0, NULL },
  { "unbuffer", "", "", "", 0, 0, NULL },
  { "busybox", "", "", "", 0, 0, NULL },
  { "toybox", "", "", "", 0, 0, NULL },
  { "nsenter", "tSG", "mutinpUCrwT", "|target|setuid|setgid|", 0, 0, NULL },
  { "unshare", "SGRw", "",
    "|setuid|setgid|root|wd|map-user|map-group|", 0, 0, NULL },
  { "taskset", "", "", "", 1, WF_NOARGS, "p" },
  { "chrt", "TPD", "", "|sched-runtime|sched-period|sched-deadline|", 1,
    WF_NOARGS, "p" },
  { "pkexec", "", "", "|user|", 0, 0, NULL },
  { "runuser", "ugGsw", "",
    "|user|group|supp-group|shell|whitelist-environment|", 0, 0, NULL },
  { "sg", "", "", "", 1, WF_JOIN, NULL },
  { "ssh", "BbcDEeFIiJLlmOoPpQRSWw", "", "", 1, WF_JOIN | WF_STDIN, NULL },
  { "fakeroot", "lsib", "", "|lib|faked|", 0, 0, NULL },
  { "fakechroot", "", "", "", 0, 0, NULL },
  { "eatmydata", "", "", "", 0, 0, NULL },
  { "nocache", "", "", "", 0, 0, NULL },
  { "chronic", "", "", "", 0, 0, NULL },
  { "catchsegv", "", "", "", 0, 0, NULL },
  { "dbus-run-session", "", "", "", 0, 0, NULL },
  { "proxychains", "f", "", "", 0, 0, NULL },
  { "proxychains4", "f", "", "", 0, 0, NULL },
  { "torsocks", "upaP", "", "", 0, 0, NULL },
  { "firejail", "", "", "", 0, 0, NULL },
  { "systemd-run", "pEuMHs", "",
    "|unit|property|description|slice|setenv|uid|gid|working-directory|"
    "nice|machine|host|",
    0, 0, NULL },
  { "xvfb-run", "nsfep", "",
    "|server-num|server-args|auth-file|error-file|xauth-protocol|", 0, 0,
    NULL },
  { "valgrind", "", "", "", 0, 0, NULL },
  { "faketime", "", "", "", 1, 0, NULL },
  { "caffeinate", "tw", "", "", 0, 0, NULL },
};

static const char *const shells[] = {
  "bash", "sh", "dash", "zsh", "ksh", "ash", "mksh", "yash", "posh",
  "rbash", "fish", "ksh93", "pdksh", "lksh", "oksh", "csh", "tcsh",
};

static const struct wrapper *
find_wrapper (const char *name)
{
  for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++)
    if (strcmp (wrappers[i].name, name) == 0)
      return &wrappers[i];
  return NULL;
}

static bool
is_shell (const char *name)
{
  for (size_t i = 0; i < sizeof shells / sizeof shells[0]; i++)
    if (strcmp (shells[i], name) == 0)
      return true;
  return false;
}

static bool
long_takes_arg (const char *list, const char *opt)
{
  size_t n = strlen (opt);
  for (const char *p = list; (p = strstr (p, opt)) != NULL; p++)
    if (p > list && p[-1] == '|' && p[n] == '|')
      return true;
  return false;
}

static bool
has_opt (const char *set, char c)
{
  return set && c && strchr (set, c) != NULL;
}

/* Skip a wrapper's options from w[i]; the index of the first operand.
 * *no_cmd_hit gets an option after which nothing runs (sudo -e). */
static size_t
skip_options (const struct wrapper *wr, char *const *w, size_t i, size_t b,
              const char **no_cmd_hit)
{
  while (i < b)
    {
      const char *x = w[i];
      if ((wr->flags & WF_ASSIGN) && assignment_prefix (x, strlen (x)))
        {
          i++;
          continue;
        }
      if ((wr->flags & WF_DASH) && strcmp (x, "-") == 0)
        {
          i++;
          continue;
        }
      if (x[0] != '-' || x[1] == '\0')
        break;
      if (strcmp (x, "--") == 0)
        {
          i++;
          break;
        }
      if (x[1] == '-')
        {
          if (!strchr (x, '=') && long_takes_arg (wr->long_args, x + 2))
            i++;
          i++;
          continue;
        }
      if ((wr->flags & WF_NUMOPT) && x[1] >= '0' && x[1] <= '9')
        {
          i++;
          continue;
        }
      for (size_t j = 1; x[j]; j++)
        {
          if ((wr->flags & WF_NOARGS) && has_opt (wr->no_cmd, x[j]))
            *no_cmd_hit = x;
          if (has_opt (wr->opt_opts, x[j]))
            break;
          if (has_opt (wr->arg_opts, x[j]))
            {
              if (!x[j + 1])
                i++;
              break;
            }
        }
      i++;
    }
  /* an option's argument may have been missing */
  return i < b ? i : b;
}

/* What one command (words a..b of a simple command) leads to. */
struct item
{
  size_t a, b;
  unsigned level;
  /* a script to parse: w[arg] from byte off, then (joined by spaces)
   * the words up to script_end */
  bool script;
  size_t arg, off, script_end;
  bool stdin_shell; /* a shell that reads its script from stdin */
};

/* A script argument: -c CMD, -cCMD, --command=CMD, --command CMD.
 * Returns whether one was found among w[a+1..b). */
static bool
find_dash_c (char *const *w, size_t a, size_t b, struct item *it,
             const char *short_letters)
{
  for (size_t i = a + 1; i < b; i++)
    {
      const char *x = w[i];
      if (strcmp (x, "--") == 0)
        return false;
      if (strncmp (x, "--command", 9) == 0
          || strncmp (x, "--session-command", 17) == 0)
        {
          const char *eq = strchr (x, '=');
          if (eq)
            {
              it->script = true;
              it->arg = i;
              it->off = (size_t) (eq + 1 - x);
              it->script_end = i + 1;
              return true;
            }
          if (i + 1 < b)
            {
              it->script = true;
              it->arg = i + 1;
              it->off = 0;
              it->script_end = i + 2;
              return true;
            }
          return false;
        }
      if (x[0] != '-' || x[1] == '-')
        continue;
      for (size_t j = 1; x[j]; j++)
        {
          if (strchr (short_letters, x[j]))
            break; /* an option whose argument is the rest: not -c */
          if (x[j] == 'c')
            {
              it->script = true;
              if (x[j + 1])
                {
                  it->arg = i;
                  it->off = j + 1;
                  it->script_end = i + 1;
                  return true;
                }
              if (i + 1 < b)
                {
                  it->arg = i + 1;
                  it->off = 0;
                  it->script_end = i + 2;
                  return true;
                }
              it->script = false;
              return false;
            }
        }
    }
  return false;
}

/* A shell: -c makes its first operand a script; no operand at all means
 * it reads its script from stdin. */
static void
classify_shell (char *const *w, struct item *it)
{
  bool dash_c = false, dash_s = false;
  size_t i = it->a + 1;
  while (i < it->b)
    {
      const char *x = w[i];
      if (strcmp (x, "--") == 0 || strcmp (x, "-") == 0)
        {
          i++;
          break;
        }
      if ((x[0] != '-' && x[0] != '+') || x[1] == '\0')
        break;
      if (x[0] == '-' && x[1] == '-')
        {
          if (strncmp (x, "--command", 9) == 0)
            {
              /* fish */
              const char *eq = strchr (x, '=');
              it->script = eq || i + 1 < it->b;
              it->arg = eq ? i : i + 1;
              it->off = eq ? (size_t) (eq + 1 - x) : 0;
              it->script_end = it->arg + 1;
              return;
            }
          if (strcmp (x, "--rcfile") == 0 || strcmp (x, "--init-file") == 0)
            i++;
          i++;
          continue;
        }
      for (size_t j = 1; x[j]; j++)
        if (x[j] == 'c')
          dash_c = true;
        else if (x[j] == 's')
          dash_s = true;
        else if (x[j] == 'o' || x[j] == 'O')
          i++;
      i++;
    }
  if (dash_c)
    {
      if (i < it->b)
        {
          it->script = true;
          it->arg = i;
          it->off = 0;
          it->script_end = i + 1;
        }
    }
  else if (i >= it->b || dash_s)
    it->stdin_shell = true; /* -s: the operands are its arguments */
}

/* find ... -exec CMD ... ; (or +): each CMD is wrapped. */
static size_t
classify_find (char *const *w, const struct item *it, size_t (*subs)[2],
               size_t max)
{
  size_t n = 0;
  for (size_t i = it->a + 1; i < it->b; i++)
    {
      const char *x = w[i];
      if (strcmp (x, "-exec") && strcmp (x, "-execdir") && strcmp (x, "-ok")
          && strcmp (x, "-okdir"))
        continue;
      size_t start = i + 1, j = start;
      while (j < it->b && strcmp (w[j], ";") != 0
             && !(strcmp (w[j], "+") == 0 && strcmp (w[j - 1], "{}") == 0))
        j++;
      if (j > start && n < max)
        {
          subs[n][0] = start;
          subs[n][1] = j;
          n++;
        }
      i = j;
    }
  return n;
}

/* Fill `it` and the wrapped commands it leads to (subs: word ranges). */
static size_t
classify (char *const *w, struct item *it, size_t (*subs)[2], size_t max)
{
  const char *name = base_name (w[it->a]);
  size_t a = it->a, b = it->b;

  if (is_shell (name))
    {
      classify_shell (w, it);
      return 0;
    }
  if (strcmp (name, "eval") == 0)
    {
      if (a + 1 < b)
        {
          it->script = true;
          it->arg = a + 1;
          it->off = 0;
          it->script_end = b;
        }
      return 0;
    }
  if (strcmp (name, "find") == 0)
    return classify_find (w, it, subs, max);
  if (strcmp (name, "su") == 0 || strcmp (name, "script") == 0)
    {
      if (!find_dash_c (w, a, b, it, "sgGwCEoqTt") && name[0] == 's'
          && name[1] == 'u')
        it->stdin_shell = true;
      return 0;
    }
  if ((strcmp (name, "runuser") == 0 || strcmp (name, "flock") == 0)
      && find_dash_c (w, a, b, it, "ugGswEw"))
    return 0;
  if ((strcmp (name, "at") == 0 || strcmp (name, "batch") == 0))
    {
      bool file = false;
      for (size_t i = a + 1; i < b; i++)
        if (strncmp (w[i], "-f", 2) == 0)
          file = true;
      it->stdin_shell = !file;
      return 0;
    }

  const struct wrapper *wr = find_wrapper (name);
  if (!wr || max == 0)
    return 0;
  const char *no_cmd = NULL;
  size_t i = skip_options (wr, w, a + 1, b, &no_cmd);
  if (strcmp (name, "env") == 0)
    {
      /* env -S STRING / --split-string=STRING: a command line of its own */
      for (size_t k = a + 1; k < i; k++)
        {
          const char *x = w[k];
          size_t off = 0, arg = k;
          if (strncmp (x, "--split-string", 14) == 0)
            {
              const char *eq = strchr (x, '=');
              if (eq)
                off = (size_t) (eq + 1 - x);
              else
                arg = k + 1;
            }
          else if (x[0] == '-' && x[1] == 'S')
            {
              if (x[2])
                off = 2;
              else
                arg = k + 1;
            }
          else
            continue;
          if (arg < b)
            {
              it->script = true;
              it->arg = arg;
              it->off = off;
              it->script_end = b;
            }
          return 0;
        }
    }
  if (no_cmd)
    return 0;
  if (strcmp (name, "watch") == 0)
    for (size_t k = a + 1; k < i; k++)
      if (strcmp (w[k], "-x") == 0 || strcmp (w[k], "--exec") == 0)
        goto plain_wrapper;
  if (i + wr->operands > b)
    return 0;
  i += wr->operands;
  if (strcmp (name, "sg") == 0 && i < b && strcmp (w[i], "-c") == 0)
    i++;
  if (i >= b)
    {
      it->stdin_shell = (wr->flags & WF_STDIN) != 0;
      return 0;
    }
  if (wr->flags & WF_JOIN)
    {
      it->script = true;
      it->arg = i;
      it->off = 0;
      it->script_end = b;
    }
plain_wrapper:
  if (i >= b)
    return 0;
  subs[0][0] = i;
  subs[0][1] = b;
  return 1;
}

/* ---- what a finished simple command leads to ---- */

/* words[a..b) of a command, joined by single spaces, the first from
 * byte off. */
static char *
join_words (struct parser *P, char *const *w, size_t a, size_t off,
            size_t b, size_t *len)
{
  size_t n = 0;
  for (size_t i = a; i < b; i++)
    n += strlen (w[i]) + 1;
  n -= off < n ? off : n;
  if (n > P->budget)
    {
      /* too much nested script */
      P->out->truncated = true;
      *len = n;
      return NULL;
    }
  char *s = malloc (n + 1);
  if (!s)
    {
      nomem (P);
      return NULL;
    }
  size_t k = 0;
  for (size_t i = a; i < b; i++)
    {
      const char *x = w[i] + (i == a ? off : 0);
      size_t l = strlen (x);
      if (i > a)
        s[k++] = ' ';
      memcpy (s + k, x, l);
      k += l;
    }
  s[k] = '\0';
  *len = k;
  P->out->work += k;
  return s;
}

static bool
copy_redirs (struct parser *P, struct shell_command *to,
             const struct shell_command *from)
{
  if (from->n_redirs == 0)
    return true;
  to->redirs = calloc (from->n_redirs, sizeof *to->redirs);
  if (!to->redirs)
    {
      nomem (P);
      return false;
    }
  for (size_t i = 0; i < from->n_redirs; i++)
    {
      to->redirs[i].op = dup (P, from->redirs[i].op);
      to->redirs[i].target = dup (P, from->redirs[i].target);
      to->n_redirs++;
      if (!to->redirs[i].op || !to->redirs[i].target)
        return false;
    }
  return true;
}

/* A wrapped command: words w[a..b) of the command at `slot`. */
static void
fill_wrapped (struct parser *P, struct shell_command *c,
              const struct shell_command *x, size_t a, size_t b)
{
  c->list = x->list;
  c->depth = x->depth;
  c->connector = x->connector;
  c->heredoc = x->heredoc;
  c->wrapped = true;
  c->words = calloc (b - a + 1, sizeof *c->words);
  if (!c->words)
    {
      nomem (P);
      return;
    }
  c->path = dup (P, x->words[a]);
  c->words[0] = dup (P, base_name (x->words[a]));
  if (!c->path || !c->words[0])
    return;
  c->n_words = 1;
  for (size_t i = a + 1; i < b; i++)
    {
      c->words[c->n_words] = dup (P, x->words[i]);
      if (!c->words[c->n_words])
        return;
      c->n_words++;
      P->out->work += strlen (x->words[i]);
    }
  copy_redirs (P, c, x);
}

/* Look through the command at `slot`: record the commands it wraps right
 * after it, then parse the scripts it runs.  Returns whether it (or a
 * command it wraps) is a shell reading its script from stdin. */
static bool
analyze (struct parser *P, struct frame *F, size_t slot)
{
  /* the words array outlives any move of the commands array */
  char **w = P->out->cmds[slot].words;
  size_t k_words = P->out->cmds[slot].n_words;
  struct item *items = calloc (MAX_WRAPPED + 1, sizeof *items);
  size_t (*subs)[2] = calloc (MAX_WRAPPED, sizeof *subs);
  /* size[i]: bytes of words before w[i], to price a copy at once */
  size_t *size = calloc (k_words + 1, sizeof *size);
  if (!items || !subs || !size)
    {
      free (items);
      free (subs);
      free (size);
      nomem (P);
      return false;
    }
  for (size_t i = 0; i < k_words; i++)
    size[i + 1] = size[i] + strlen (w[i]) + 1;
  P->out->work += size[k_words];
  size_t n_items = 1;
  bool stdin_shell = false;
  items[0].b = k_words;

  for (size_t i = 0; i < n_items; i++)
    {
      size_t room = MAX_WRAPPED + 1 - n_items;
      size_t n = classify (w, &items[i], subs, room);
      stdin_shell |= items[i].stdin_shell;
      if (n > 0 && items[i].level + 1 > MAX_PEEL)
        {
          P->out->truncated = true;
          continue;
        }
      for (size_t k = 0; k < n; k++)
        {
          /* wrappers of wrappers copy the same words again: bounded */
          size_t cost = size[subs[k][1]] - size[subs[k][0]];
          if (cost > P->copy_budget)
            {
              P->out->truncated = true;
              break;
            }
          P->copy_budget -= cost;
          items[n_items].a = subs[k][0];
          items[n_items].b = subs[k][1];
          items[n_items].level = items[i].level + 1;
          n_items++;
        }
      if (n == room && room > 0)
        P->out->truncated = true;
    }

  /* wrapped commands go right after the wrapper, before what its words'
   * substitutions found */
  size_t n_new = n_items - 1;
  struct shell_parse *o = P->out;
  if (n_new > 0 && o->n_cmds + n_new > MAX_CMDS)
    {
      o->truncated = true;
      n_new = 0;
    }
  if (n_new > 0 && GROW (P, o->cmds, P->cap_cmds, o->n_cmds + n_new))
    {
      size_t tail = o->n_cmds - slot - 1;
      memmove (&o->cmds[slot + 1 + n_new], &o->cmds[slot + 1],
               tail * sizeof *o->cmds);
      memset (&o->cmds[slot + 1], 0, n_new * sizeof *o->cmds);
      o->n_cmds += n_new;
      o->work += tail + n_new;
      for (size_t k = 1; k <= n_new && !P->nomem; k++)
        fill_wrapped (P, &o->cmds[slot + k], &o->cmds[slot], items[k].a,
                      items[k].b);
    }

  for (size_t i = 0; i < n_items && !P->stop; i++)
    if (items[i].script)
      {
        size_t len = 0;
        char *s = join_words (P, w, items[i].arg, items[i].off,
                              items[i].script_end, &len);
        if (s || len > P->budget)
          parse_nested_text (P, F->depth, s ? s : "", len);
        free (s);
      }
  free (items);
  free (subs);
  free (size);
  return stdin_shell;
}

static bool
is_pipe (const char *op)
{
  return strcmp (op, "|") == 0 || strcmp (op, "|&") == 0;
}

static void
free_deferred (struct list_state *L)
{
  for (size_t i = 0; i < L->n_deferred; i++)
    free (L->deferred[i]);
  free (L->deferred);
  L->deferred = NULL;
  L->n_deferred = L->cap_deferred = 0;
}

static void
defer (struct parser *P, struct list_state *L, char *text)
{
  if (!text)
    return;
  if (!GROW (P, L->deferred, L->cap_deferred, L->n_deferred + 1))
    {
      free (text);
      return;
    }
  L->deferred[L->n_deferred++] = text;
}

/* Text the command at `slot` writes down a pipe, kept in case a shell
 * reads it (echo 'rm -rf /' | sh): here-strings and echo's arguments. */
static void
defer_piped_text (struct parser *P, struct list_state *L, size_t slot)
{
  const struct shell_command *c = &P->out->cmds[slot];
  for (size_t i = 0; i < c->n_redirs; i++)
    if (strcmp (c->redirs[i].op + strspn (c->redirs[i].op, "0123456789"),
                "<<<") == 0)
      defer (P, L, dup (P, c->redirs[i].target));
  if (strcmp (c->words[0], "echo") != 0)
    return;
  size_t a = 1;
  while (a < c->n_words && c->words[a][0] == '-' && c->words[a][1]
         && strspn (c->words[a] + 1, "neE") == strlen (c->words[a] + 1))
    a++;
  if (a < c->n_words)
    {
      size_t len = 0;
      defer (P, L, join_words (P, c->words, a, 0, c->n_words, &len));
    }
}

/* End the simple command being built; `connector` is what followed. */
static void
finish_command (struct parser *P, struct text *T, struct frame *F,
                struct list_state *L, const char *connector)
{
  struct builder *B = &L->b;
  bool stdin_shell = false, recorded = false;

  if (B->started && (B->n_words > 0 || B->n_redirs > 0) && !P->nomem)
    {
      if (B->n_words == 0)
        {
          /* only redirections (> /etc/passwd): one empty word */
          struct word e;
          word_init (&e);
          builder_add_word (P, B, &e);
        }
      struct shell_command *c = &P->out->cmds[B->slot];
      if (B->n_words > 0)
        {
          char *first = B->words[0];
          char *name = dup (P, first + (first[B->base0] ? B->base0 : 0));
          if (name)
            {
              c->path = first;
              B->words[0] = name;
              c->words = B->words;
              c->n_words = B->n_words;
              c->redirs = B->redirs;
              c->n_redirs = B->n_redirs;
              c->connector = connector;
              c->heredoc = B->heredoc;
              B->words = NULL;
              B->n_words = 0;
              B->redirs = NULL;
              B->n_redirs = 0;
              recorded = true;
              /* kept: nested parses may move the commands array */
              struct shell_redirect *rd = c->redirs;
              size_t n_rd = c->n_redirs;
              stdin_shell = analyze (P, F, B->slot);
              /* a here-string fed to a shell is a script */
              for (size_t i = 0; stdin_shell && i < n_rd; i++)
                if (strcmp (rd[i].op + strspn (rd[i].op, "0123456789"),
                            "<<<") == 0)
                  parse_nested_text (P, F->depth, rd[i].target,
                                     strlen (rd[i].target));
            }
        }
      for (size_t i = B->hd_first; i < T->n_hd; i++)
        {
          T->hd[i].to_shell |= stdin_shell;
          T->hd[i].piped = is_pipe (connector);
        }
    }

  /* the previous command's heredocs went down a pipe into this one */
  if (L->pipe_pending && stdin_shell)
    {
      for (size_t i = L->pipe_hd_first; i < L->pipe_hd_end && i < T->n_hd;
           i++)
        T->hd[i].to_shell = true;
      for (size_t i = 0; i < L->n_deferred && !P->stop; i++)
        parse_nested_text (P, F->depth, L->deferred[i],
                           strlen (L->deferred[i]));
    }
  free_deferred (L);
  if (recorded && is_pipe (connector))
    defer_piped_text (P, L, B->slot);
  L->pipe_pending = B->started && is_pipe (connector);
  L->pipe_hd_first = B->hd_first;
  L->pipe_hd_end = T->n_hd;
  builder_clear (B);
}

/* ---- heredocs ---- */

/* The body of heredoc h, which starts at the current position: up to a
 * line equal to the delimiter (bash compares the line after removing
 * backslash-newline pairs unless the delimiter was quoted), or the end. */
static void
read_heredoc (struct parser *P, struct text *T, struct frame *F,
              struct list_state *L, struct heredoc *h)
{
  const char *s = T->s;
  size_t start = T->pos, body_end = T->end;
  size_t dl = strlen (h->delim);
  struct word line;
  word_init (&line);

  while (T->pos < T->end && !P->nomem)
    {
      size_t ls = T->pos, j = ls;
      line.len = 0;
      while (j < T->end && s[j] != '\n')
        {
          if (!h->quoted && s[j] == '\\' && j + 1 < T->end)
            {
              if (s[j + 1] != '\n')
                wput (P, &line, s + j, 2);
              j += 2;
              continue;
            }
          wputc (P, &line, s[j]);
          j++;
        }
      P->out->work += j - ls;
      const char *l = line.v ? line.v : "";
      size_t ll = line.len;
      if (h->strip_tabs)
        while (ll > 0 && *l == '\t')
          l++, ll--;
      T->pos = j < T->end ? j + 1 : T->end;
      if (ll == dl && memcmp (l, h->delim, dl) == 0)
        {
          body_end = ls;
          break;
        }
    }
  free (line.v);
  if (P->stop)
    return;

  size_t after = T->pos;
  if (!h->quoted)
    {
      /* expansions in the body run in the shell that reads the line */
      struct text body = *T;
      body.pos = start;
      body.end = body_end;
      body.hd = NULL;
      body.n_hd = body.cap_hd = 0;
      lex_dquote (P, &body, F, NULL, true);
      drop_heredocs (&body, 0);
      free (body.hd);
    }
  /* a body going down a pipe whose reader is not known yet (the
   * newline came right after the '|') is kept until it is */
  bool later = !h->to_shell && h->piped && L->after_op;
  if (!h->to_shell && !later)
    return;

  /* what the reading shell gets: the outer shell has removed
   * backslash-newlines and the backslashes before $ ` \ */
  struct word d;
  word_init (&d);
  for (size_t i = start; i < body_end && !P->nomem; i++)
    {
      if (!h->quoted && s[i] == '\\' && i + 1 < body_end)
        {
          char n = s[i + 1];
          if (n == '\n')
            {
              i++;
              continue;
            }
          if (n == '$' || n == '`' || n == '\\')
            {
              wputc (P, &d, n);
              i++;
              continue;
            }
        }
      wputc (P, &d, s[i]);
    }
  if (h->to_shell)
    {
      parse_nested_text (P, F->depth, d.v ? d.v : "", d.len);
      free (d.v);
    }
  else
    defer (P, L, word_take (P, &d));
  T->pos = after;
}

/* At a newline: the bodies of the heredocs this list may read. */
static void
read_heredocs (struct parser *P, struct text *T, struct frame *F,
               struct list_state *L)
{
  for (size_t i = F->hd_base; i < T->n_hd && !P->stop; i++)
    read_heredoc (P, T, F, L, &T->hd[i]);
  drop_heredocs (T, F->hd_base);
}

/* The target of a redirection; for << and <<- the heredoc is noted. */
static void
read_redirect (struct parser *P, struct text *T, struct frame *F,
               struct list_state *L, struct token *t)
{
  struct builder *B = &L->b;
  struct word target;
  word_init (&target);
  while (peekc (P, T) == ' ' || peekc (P, T) == '\t')
    advance (P, T);
  int c = peekc (P, T);
  if (c != EOF && (!metachar (c) || ((c == '<' || c == '>')
                                     && peek_next (P, T) == '(')))
    lex_word (P, T, F, &target);
  if (!builder_start (P, T, F, B)
      || !GROW (P, B->redirs, B->cap_redirs, B->n_redirs + 1))
    {
      free (target.v);
      return;
    }
  size_t fl = t->fd ? strlen (t->fd) : 0, ol = strlen (t->op);
  char *op = malloc (fl + ol + 1);
  if (!op)
    {
      free (target.v);
      nomem (P);
      return;
    }
  memcpy (op, t->fd ? t->fd : "", fl);
  memcpy (op + fl, t->op, ol + 1);
  bool quoted = target.quoted;
  char *value = word_take (P, &target);
  if (!value)
    {
      free (op);
      return;
    }
  B->redirs[B->n_redirs].op = op;
  B->redirs[B->n_redirs].target = value;
  B->n_redirs++;

  bool doc = strcmp (t->op, "<<") == 0 || strcmp (t->op, "<<-") == 0;
  if (doc || strcmp (t->op, "<<<") == 0)
    B->heredoc = true;
  if (doc && !F->no_heredoc)
    {
      char *delim = dup (P, value);
      if (!delim || !GROW (P, T->hd, T->cap_hd, T->n_hd + 1))
        {
          free (delim);
          return;
        }
      T->hd[T->n_hd++] = (struct heredoc) {
        .delim = delim,
        .quoted = quoted,
        .strip_tabs = t->op[2] == '-',
      };
    }
}

/* ---- lists ---- */

static bool
is_keyword (const struct word *w, const char *const *list)
{
  for (; *list; list++)
    if (plain (w, *list))
      return true;
  return false;
}

/* Reserved words after which a command may start at once. */
static const char *const keep_cmdpos[] = {
  "if", "then", "else", "elif", "do", "while", "until", "!", "fi", "done",
  NULL,
};

/* ( list ): the '(' has been read.  "((" is arithmetic or two
 * subshells; it is read as subshells in which '<<' is a shift, which
 * finds every command either reading could run. */
static int
open_subshell (struct parser *P, struct text *T, struct frame *F,
               bool arith)
{
  arith = arith || peekc (P, T) == '(';
  if (!nest_enter (P))
    return RET_EOF;
  struct frame nf = {
    .list = UINT_MAX,
    .depth = F->depth + 1,
    .close = CLOSE_PAREN,
    .no_heredoc = F->no_heredoc || arith,
    .hd_base = F->hd_base,
  };
  int r = parse_list (P, T, &nf);
  nest_leave (P);
  return r;
}

/* Read a list up to its closing token (F->close) or the end of the text. */
static int
parse_list (struct parser *P, struct text *T, struct frame *F)
{
  struct list_state L;
  memset (&L, 0, sizeof L);
  int ret = RET_EOF;
  struct token t;
  memset (&t, 0, sizeof t);

  while (!P->stop)
    {
      token_free (&t);
      F->open = L.mode == M_CMD || L.mode == M_PATTERN || L.mode == M_COPROC
                    ? &L.b
                    : NULL;
      lex_token (P, T, F, &t);
      F->open = NULL;
      if (P->stop)
        break;

      if (t.kind == T_EOF)
        break;

      if (t.kind == T_NEWLINE)
        {
          if (L.mode != M_PATTERN && L.mode != M_CASE_WORD
              && L.mode != M_ARRAY)
            L.mode = M_CMD;
          bool continued = L.mode == M_CMD && !L.b.started && L.after_op;
          if (L.mode == M_CMD && !continued)
            finish_command (P, T, F, &L, F->lines_are_lists ? "" : "\n");
          read_heredocs (P, T, F, &L);
          if (F->lines_are_lists && !continued)
            F->list = UINT_MAX;
          continue;
        }

      if (t.kind == T_REDIR)
        {
          if (L.mode == M_COND)
            continue; /* < and > compare strings there */
          L.mode = M_CMD;
          L.after_op = false;
          F->open = &L.b;
          read_redirect (P, T, F, &L, &t);
          F->open = NULL;
          continue;
        }

      if (t.kind == T_OP)
        {
          const char *op = t.op;
          bool case_end = strcmp (op, ";;") == 0 || strcmp (op, ";&") == 0
                          || strcmp (op, ";;&") == 0;
          if (L.mode == M_PATTERN)
            {
              /* ( pattern | pattern ) */
              if (strcmp (op, "|") == 0 || strcmp (op, "(") == 0 || case_end)
                continue;
              L.mode = M_CMD;
              if (strcmp (op, ")") == 0)
                continue;
            }
          if (L.mode == M_ARRAY && strcmp (op, ")") == 0)
            {
              L.mode = M_CMD;
              continue;
            }
          if (L.mode == M_COND)
            {
              if (strcmp (op, "(") == 0)
                {
                  L.cond_parens++;
                  continue;
                }
              if (strcmp (op, ")") == 0 && L.cond_parens > 0)
                {
                  L.cond_parens--;
                  continue;
                }
              if (strcmp (op, "&&") == 0 || strcmp (op, "||") == 0
                  || strcmp (op, "|") == 0)
                continue;
            }
          if (L.mode == M_FOR && strcmp (op, "(") == 0)
            {
              /* for (( ... )): arithmetic */
              L.mode = M_CMD;
              if (open_subshell (P, T, F, true) == RET_EOF)
                goto out;
              continue;
            }
          L.mode = M_CMD;
          L.after_op = false;

          if (strcmp (op, "(") == 0)
            {
              if (L.b.started && L.b.n_words == 1 && L.b.n_redirs == 0
                  && peek_nonblank (P, T) == ')')
                {
                  /* NAME () compound: a function definition */
                  token_free (&t);
                  lex_token (P, T, F, &t);
                  builder_clear (&L.b);
                  continue;
                }
              finish_command (P, T, F, &L, "");
              if (open_subshell (P, T, F, false) == RET_EOF)
                goto out;
              continue;
            }
          if (strcmp (op, ")") == 0)
            {
              finish_command (P, T, F, &L, "");
              if (F->close == CLOSE_PAREN)
                {
                  ret = RET_CLOSED;
                  goto out;
                }
              if (F->close == CLOSE_BRACE)
                {
                  ret = RET_PAREN;
                  goto out;
                }
              continue; /* unbalanced at the top: ignored */
            }
          if (case_end)
            {
              finish_command (P, T, F, &L, ";");
              if (L.cases > 0)
                L.mode = M_PATTERN;
              continue;
            }
          finish_command (P, T, F, &L, op);
          L.after_op = strcmp (op, "|") == 0 || strcmp (op, "|&") == 0
                       || strcmp (op, "&&") == 0 || strcmp (op, "||") == 0;
          continue;
        }

      /* a word */
      L.after_op = false;
      switch (L.mode)
        {
        case M_FOR:
          if (plain (&t.w, "do"))
            L.mode = M_CMD;
          else if (plain (&t.w, "{"))
            {
              L.mode = M_CMD;
              goto open_brace;
            }
          continue;
        case M_CASE_WORD:
          if (plain (&t.w, "in"))
            {
              L.mode = M_PATTERN;
              L.cases++;
            }
          continue;
        case M_COND:
          if (plain (&t.w, "]]"))
            L.mode = M_CMD;
          continue;
        case M_ARRAY:
          continue;
        case M_FUNC_NAME:
          L.mode = M_CMD;
          continue;
        case M_COPROC:
          {
            L.mode = M_CMD;
            int n = peek_nonblank (P, T);
            if (n == '{' || n == '(')
              continue; /* coproc NAME { ...; } */
            break;
          }
        case M_PATTERN:
          {
            if (plain (&t.w, "esac"))
              {
                L.cases--;
                L.mode = M_CMD;
                continue;
              }
            /* a pattern is followed by ')' or '|'; anything else means
             * this is no pattern bash would accept: read on as commands */
            int n = peek_nonblank (P, T);
            if (n == ')' || n == '|')
              continue;
            L.mode = M_CMD;
            break;
          }
        case M_CMD:
          break;
        }

      if (!L.b.started)
        {
          if (is_keyword (&t.w, keep_cmdpos))
            continue;
          if (plain (&t.w, "{"))
            {
            open_brace:
              if (!nest_enter (P))
                break;
              struct frame nf = {
                .list = UINT_MAX,
                .depth = F->depth + 1,
                .close = CLOSE_BRACE,
                .no_heredoc = F->no_heredoc,
                .hd_base = F->hd_base,
              };
              int r = parse_list (P, T, &nf);
              nest_leave (P);
              if (r == RET_EOF)
                goto out;
              if (r == RET_PAREN && F->close != CLOSE_EOF)
                {
                  ret = F->close == CLOSE_PAREN ? RET_CLOSED : RET_PAREN;
                  goto out;
                }
              continue;
            }
          if (plain (&t.w, "}") && F->close == CLOSE_BRACE)
            {
              ret = RET_CLOSED;
              goto out;
            }
          if (plain (&t.w, "for") || plain (&t.w, "select"))
            {
              L.mode = M_FOR;
              continue;
            }
          if (plain (&t.w, "case"))
            {
              L.mode = M_CASE_WORD;
              continue;
            }
          if (plain (&t.w, "esac"))
            {
              if (L.cases > 0)
                L.cases--;
              continue;
            }
          if (plain (&t.w, "function"))
            {
              L.mode = M_FUNC_NAME;
              continue;
            }
          if (plain (&t.w, "[["))
            {
              L.mode = M_COND;
              L.cond_parens = 0;
              continue;
            }
          if (plain (&t.w, "coproc"))
            {
              L.mode = M_COPROC;
              continue;
            }
          if (plain (&t.w, "time"))
            {
              /* the keyword before a compound command; otherwise it is
               * read as the wrapper /usr/bin/time would be */
              int n = peek_nonblank (P, T);
              if (n == '{' || n == '(' || n == '!')
                continue;
            }
        }
      if (L.b.n_words == 0 && is_assignment (&t.w))
        {
          builder_start (P, T, F, &L.b);
          if (t.w.v[t.w.len - 1] == '=' && T->pos < T->end
              && T->s[T->pos] == '(')
            {
              /* NAME=(a b c): an array's words, not a subshell */
              advance (P, T);
              L.mode = M_ARRAY;
            }
          continue;
        }
      if (builder_start (P, T, F, &L.b))
        builder_add_word (P, &L.b, &t.w);
    }

out:
  token_free (&t);
  if (!P->nomem)
    finish_command (P, T, F, &L, "");
  free_deferred (&L);
  builder_clear (&L.b);
  return ret;
}

/* A script found inside the text (-c string, eval, backquotes, a heredoc
 * or here-string fed to a shell): its own list, one level deeper. */
static void
parse_nested_text (struct parser *P, unsigned depth, const char *s,
                   size_t len)
{
  if (P->stop)
    return;
  if (len > P->budget)
    {
      P->out->truncated = true;
      return;
    }
  P->budget -= len;
  if (!nest_enter (P))
    return;
  struct text t = { .s = s, .end = len, .cont = calloc (len + 1, 1) };
  if (!t.cont)
    nomem (P);
  else
    {
      struct frame f = {
        .list = UINT_MAX,
        .depth = depth + 1,
        .close = CLOSE_EOF,
      };
      parse_list (P, &t, &f);
    }
  drop_heredocs (&t, 0);
  free (t.hd);
  free (t.cont);
  nest_leave (P);
}

/* ---- the API ---- */

static void
free_command (struct shell_command *c)
{
  for (char **w = c->words; w && *w; w++)
    free (*w);
  free (c->words);
  free (c->path);
  free_redirs (c->redirs, c->n_redirs);
}

void
shell_parse_free (struct shell_parse *p)
{
  if (!p)
    return;
  for (size_t i = 0; i < p->n_cmds; i++)
    free_command (&p->cmds[i]);
  free (p->cmds);
  free (p->normalized);
  free (p);
}

struct shell_parse *
shell_parse (const char *text, size_t len)
{
  struct shell_parse *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  size_t n = 0;
  char *pre = policy_prenormalize (text, len, &n, &p->work);
  if (!pre)
    {
      free (p);
      return NULL;
    }

  struct parser P = {
    .out = p,
    .budget = NESTED_BUDGET * ((unsigned long long) n + 1) + 1024,
    .copy_budget = COPY_BUDGET * ((unsigned long long) n + 1) + 1024,
  };
  struct text t = { .s = pre, .end = n, .cont = calloc (n + 1, 1) };
  if (!t.cont)
    nomem (&P);
  else
    {
      struct frame f = {
        .list = UINT_MAX,
        .close = CLOSE_EOF,
        .lines_are_lists = true,
      };
      parse_list (&P, &t, &f);
    }
  drop_heredocs (&t, 0);
  free (t.hd);
  if (P.nomem)
    {
      free (t.cont);
      free (pre);
      shell_parse_free (p);
      return NULL;
    }

  /* drop the slots of commands that turned out to have no words
   * (assignments only, function names) */
  size_t k = 0;
  for (size_t i = 0; i < p->n_cmds; i++)
    if (p->cmds[i].n_words > 0)
      p->cmds[k++] = p->cmds[i];
    else
      free_command (&p->cmds[i]);
  p->n_cmds = k;
  p->work += k;

  /* the normalized text: the continuations bash removes are gone */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!t.cont[i])
      pre[m++] = pre[i];
  pre[m] = '\0';
  p->normalized = pre;
  p->work += n;
  free (t.cont);
  return p;
}

char *
shell_command_text (const struct shell_command *c)
{
  size_t n = 0;
  for (size_t i = 0; i < c->n_words; i++)
    n += strlen (c->words[i]) + 1;
  char *s = malloc (n + 1);
  if (!s)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < c->n_words; i++)
    {
      size_t l = strlen (c->words[i]);
      if (i > 0)
        s[k++] = ' ';
      memcpy (s + k, c->words[i], l);
      k += l;
    }
  s[k] = '\0';
  return s;
}
