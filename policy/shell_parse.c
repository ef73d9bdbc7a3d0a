/* SPDX-License-Identifier: MIT */
/* The approval gate's shell tokenizer (see shell_parse.h).
 *
 * It reads a command line the way bash's parser does, as far as that
 * decides what runs: quotes, escapes, backslash-newline, comments,
 * operators, reserved words, heredocs, brace expansion, and the nested
 * scripts of $(...), `...`, <(...), (...), {...}.  On top of bash's view
 * it looks through wrappers (sudo rm, docker exec C rm), and it finds the
 * scripts a command runs (shell_script): shells' -c strings, eval, find
 * -exec, heredocs, here-strings and echo fed to a shell or interpreter,
 * interpreters' inline code (whose shell calls inline_code.c reads),
 * database commands, files the line writes and then runs, and what a
 * variable the line set to a literal would make a command.  Where bash
 * would report a syntax error, it goes on and treats what follows as
 * commands: a judge may see commands bash would not run, never the other
 * way round.
 *
 * Bounds: every byte of a text is read a bounded number of times (the
 * lexer only moves forward; look-ahead is one byte past blanks and
 * continuations), nesting is at most MAX_NEST deep, and nested scripts,
 * copies of wrapped commands' words and brace expansions have budgets
 * proportional to the top-level command they come from (see
 * segment_bytes).  `work` counts the steps. */
#define _GNU_SOURCE
#include "shell_parse.h"
#include "chars.h"
#include "inline_code.h"

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
/* Nested scripts may add up to NESTED_BASE plus this many times the
 * length of the top-level command they are in; wrapped commands' words
 * and brace expansions COPY_BASE plus this many times. */
#define NESTED_BUDGET 4
#define COPY_BUDGET 4
#define NESTED_BASE 512
#define COPY_BASE 512
#define MAX_BRACE_WORDS 4096 /* words one brace expansion may make */
#define MAX_CODE_PIECES 32   /* -e CODE options of one interpreter */
#define MAX_VARS 256         /* literal values of variables remembered */
#define MAX_VAR_LINES 16     /* readings of one command with them */

/* ---- state ---- */

struct heredoc
{
  char *delim;
  bool quoted;      /* the delimiter was quoted: the body is literal */
  bool strip_tabs;  /* <<- */
  const char *reader; /* the language of whoever runs it, or NULL: data */
  bool piped;       /* its command's output goes down a pipe */
  char *write_to;   /* cat > F <<EOF: the file the body is written to */
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

/* A file this command line writes with known content (cat > F <<EOF,
 * echo TEXT > F), and one it runs (./F, bash F, python3 F). */
struct written
{
  char *path;
  char *content;
  bool dynamic;
  bool ran;
};

struct file_run
{
  char *path;
  const char *lang; /* NULL: from its #! line */
};

/* A variable the command line sets to a literal value (x=/, x="rm -rf
 * ~", export X=1; the arguments of sh -c SCRIPT as $0 $1 ... $@). */
struct var
{
  char *name;
  char *value;
};

struct parser
{
  struct shell_parse *out;
  struct var *vars;
  size_t n_vars, cap_vars;
  size_t cap_cmds, cap_scripts;
  unsigned next_list;
  unsigned nest;
  /* The budgets of the top-level command being read (see
   * SHELL_PARSE_WORK_PER_BYTE): it began at seg_start of the top text,
   * or begins at the next token when seg_fresh; extra_bytes counts text
   * judged on its own (a file that is run, a script given as input). */
  const struct text *top;
  size_t seg_start;
  bool seg_fresh;
  unsigned long long extra_bytes;
  unsigned long long nested_spent; /* bytes of nested scripts */
  unsigned long long copy_spent;   /* bytes of copied and expanded words */
  unsigned long long expansions;   /* expansions read so far */
  struct written *files;
  size_t n_files, cap_files;
  struct file_run *runs;
  size_t n_runs, cap_runs;
  bool stop; /* a limit was hit or memory ran out */
  bool nomem;
};

/* A word being read. */
struct word
{
  char *v;
  size_t len, cap;
  bool quoted;         /* a quote or an escape was used */
  bool expands;        /* an expansion the shell performs at run time */
  size_t *braces;      /* offsets of unquoted { , } (brace expansion) */
  size_t n_braces, cap_braces;
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
  bool *expanded;
  size_t cap_expanded;
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
  bool piped_in; /* the next command reads a pipe (after any command) */
  size_t pipe_slot; /* the previous simple command when pipe_pending */
  size_t pipe_hd_first, pipe_hd_end;
  /* heredoc bodies of that command, kept until the reader is known */
  struct deferred *deferred;
  size_t n_deferred, cap_deferred;
  /* NAME () or function NAME: the definition's body comes next */
  char *func_name;
  size_t func_start;
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

/* Text written down a pipe, kept in case a shell or interpreter reads it. */
struct deferred
{
  char *text;
  bool dynamic;
};

static int parse_list (struct parser *P, struct text *T, struct frame *F);
static bool record_script (struct parser *P, const char *lang,
                           const char *text, size_t len, bool dynamic);
static void run_script (struct parser *P, unsigned depth, const char *lang,
                        const char *text, size_t len, bool dynamic);
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

/* ---- budgets ---- */

/* Bytes of the top-level command being read, which its budgets are
 * proportional to. */
static unsigned long long
segment_bytes (const struct parser *P)
{
  unsigned long long n = P->extra_bytes;
  if (!P->seg_fresh && P->top && P->top->pos > P->seg_start)
    n += P->top->pos - P->seg_start;
  return n;
}

static unsigned long long
left (const struct parser *P, unsigned long long spent,
      unsigned long long base, unsigned long long per_byte)
{
  unsigned long long credit = base + per_byte * segment_bytes (P);
  return credit > spent ? credit - spent : 0;
}

static unsigned long long
nested_left (const struct parser *P)
{
  return left (P, P->nested_spent, NESTED_BASE, NESTED_BUDGET);
}

/* Take n bytes of nested script (or of copies); false, and the parse
 * truncated, when that is more than is left. */
static bool
spend_nested (struct parser *P, unsigned long long n)
{
  if (n > nested_left (P))
    {
      P->out->truncated = true;
      return false;
    }
  P->nested_spent += n;
  return true;
}

static bool
spend_copy (struct parser *P, unsigned long long n)
{
  if (n > left (P, P->copy_spent, COPY_BASE, COPY_BUDGET))
    {
      P->out->truncated = true;
      return false;
    }
  P->copy_spent += n;
  return true;
}

/* A top-level command ends (; && || & newline): the next one starts
 * with fresh budgets at its first token. */
static void
segment_end (struct parser *P, const struct text *T, const struct frame *F)
{
  if (T == P->top && F->lines_are_lists)
    P->seg_fresh = true;
}

static void
segment_begin (struct parser *P, const struct text *T)
{
  if (!P->seg_fresh || T != P->top)
    return;
  P->seg_fresh = false;
  P->seg_start = T->pos;
  P->extra_bytes = 0;
  P->nested_spent = P->copy_spent = 0;
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

/* An expansion the shell performs when it runs the command: the word's
 * value is not known before. */
static void
wexpand (struct parser *P, struct word *w)
{
  P->expansions++;
  if (w)
    w->expands = true;
}

/* An unquoted { , or }: brace expansion may apply. */
static void
wbrace (struct parser *P, struct word *w)
{
  if (!w || P->nomem || !GROW (P, w->braces, w->cap_braces, w->n_braces + 1))
    return;
  w->braces[w->n_braces++] = w->len;
}

static void
word_free (struct word *w)
{
  free (w->v);
  free (w->braces);
  w->v = NULL;
  w->braces = NULL;
  w->len = w->cap = w->n_braces = w->cap_braces = 0;
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
              int d = hex_digit ((unsigned char) s[T->pos]);
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
  wexpand (P, w);
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
    {
      free (T->hd[i].delim);
      free (T->hd[i].write_to);
    }
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
  if (T->s[start] == '$')
    wexpand (P, w);
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
  wexpand (P, w);
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
        {
          wspecial (w, false);
          /* $? $$ $! $# are numbers: they cannot add syntax */
          if (!strchr ("?$!#", c))
            wexpand (P, w);
        }
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
          if (c == '{' || c == ',' || c == '}')
            wbrace (P, w);
          else if ((c == '*' || c == '?' || c == '[') && w
                   && !(w->len && w->v[w->len - 1] == '$' && c != '['))
            w->expands = true; /* a glob: file names ($? and $* are not) */
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
  segment_begin (P, T);
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
  word_free (&t->w);
  free (t->fd);
  t->fd = NULL;
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
builder_push (struct parser *P, struct builder *B, char *v, bool expanded,
              size_t base)
{
  if (B->n_words >= MAX_WORDS)
    {
      P->out->truncated = true;
      free (v);
      return;
    }
  if (!GROW (P, B->words, B->cap_words, B->n_words + 2)
      || !GROW (P, B->expanded, B->cap_expanded, B->n_words + 2))
    {
      free (v);
      return;
    }
  if (B->n_words == 0)
    B->base0 = base;
  B->expanded[B->n_words] = expanded;
  B->words[B->n_words++] = v;
  B->words[B->n_words] = NULL;
}

/* ---- brace expansion ---- */

/* A word being expanded: its bytes, and which of them are unquoted
 * braces and commas. */
struct bword
{
  char *s;
  bool *act;
  size_t len;
};

static bool
bword_make (struct parser *P, struct bword *out, const struct bword *src,
            size_t pre, const char *mid, const bool *mid_act, size_t mid_len,
            size_t post)
{
  size_t tail = src->len - post;
  size_t len = pre + mid_len + tail;
  if (!spend_copy (P, len + 1))
    {
      P->stop = true; /* refused as too complex: no need to read on */
      return false;
    }
  P->out->work += len + 1;
  out->s = malloc (len + 1);
  out->act = malloc (len + 1);
  if (!out->s || !out->act)
    {
      free (out->s);
      free (out->act);
      nomem (P);
      return false;
    }
  memcpy (out->s, src->s, pre);
  memcpy (out->act, src->act, pre);
  memcpy (out->s + pre, mid, mid_len);
  if (mid_act)
    memcpy (out->act + pre, mid_act, mid_len);
  else
    memset (out->act + pre, 0, mid_len);
  memcpy (out->s + pre + mid_len, src->s + post, tail);
  memcpy (out->act + pre + mid_len, src->act + post, tail);
  out->s[len] = '\0';
  out->len = len;
  return true;
}

/* {x..y} or {x..y..step} of numbers or single letters: its values into
 * vals (a NUL-separated list); false when it is none. */
static bool
brace_sequence (struct parser *P, const char *s, size_t len, char **vals,
                size_t *n_vals, size_t *vals_len)
{
  char buf[64];
  if (len >= sizeof buf)
    return false;
  memcpy (buf, s, len);
  buf[len] = '\0';
  char *dots = strstr (buf, "..");
  if (!dots)
    return false;
  *dots = '\0';
  char *b = dots + 2, *step_s = strstr (b, "..");
  if (step_s)
    {
      *step_s = '\0';
      step_s += 2;
    }
  long long step = 1;
  char *end;
  if (step_s)
    {
      step = strtoll (step_s, &end, 10);
      if (!*step_s || *end)
        return false;
      if (step < 0)
        step = -step;
      if (step == 0)
        step = 1;
    }
  bool letters = strlen (buf) == 1 && strlen (b) == 1
                 && ((buf[0] >= 'a' && buf[0] <= 'z')
                     || (buf[0] >= 'A' && buf[0] <= 'Z'))
                 && ((b[0] >= 'a' && b[0] <= 'z') || (b[0] >= 'A' && b[0] <= 'Z'));
  long long x, y;
  if (letters)
    {
      x = (unsigned char) buf[0];
      y = (unsigned char) b[0];
    }
  else
    {
      x = strtoll (buf, &end, 10);
      if (!*buf || *end)
        return false;
      y = strtoll (b, &end, 10);
      if (!*b || *end)
        return false;
    }
  unsigned long long count = (unsigned long long) ((x > y ? x - y : y - x) / step) + 1;
  if (count > MAX_BRACE_WORDS)
    {
      P->out->truncated = true;
      return false;
    }
  struct word out;
  word_init (&out);
  for (unsigned long long k = 0; k < count && !P->nomem; k++)
    {
      long long v = x > y ? x - (long long) k * step : x + (long long) k * step;
      char item[32];
      int n = letters ? snprintf (item, sizeof item, "%c", (char) v)
                      : snprintf (item, sizeof item, "%lld", v);
      wput (P, &out, item, (size_t) n + 1); /* with its NUL */
    }
  *vals = out.v;
  *n_vals = (size_t) count;
  *vals_len = out.len;
  return !P->nomem;
}

/* Expand the first brace expression of w that bash would expand,
 * appending the results (each a new bword) to q; false when w has none. */
static bool
brace_step (struct parser *P, const struct bword *w, struct bword **q,
            size_t *n_q, size_t *cap_q)
{
  /* the matching close and the comma count of each active open */
  size_t *stack = malloc ((w->len + 1) * sizeof *stack);
  size_t *close = malloc ((w->len + 1) * sizeof *close);
  size_t *commas = calloc (w->len + 1, sizeof *commas);
  bool done = false;
  if (!stack || !close || !commas)
    {
      nomem (P);
      goto out;
    }
  size_t depth = 0;
  P->out->work += w->len;
  for (size_t i = 0; i < w->len; i++)
    {
      close[i] = SIZE_MAX;
      if (!w->act[i])
        continue;
      if (w->s[i] == '{')
        stack[depth++] = i;
      else if (w->s[i] == '}' && depth)
        close[stack[--depth]] = i;
      else if (w->s[i] == ',' && depth)
        commas[stack[depth - 1]]++;
    }
  for (size_t i = 0; i < w->len && !done && !P->stop; i++)
    {
      if (!w->act[i] || w->s[i] != '{' || close[i] == SIZE_MAX)
        continue;
      size_t j = close[i];
      if (commas[i] == 0)
        {
          /* {x..y}: a sequence (only literal text inside) */
          bool plain = true;
          for (size_t k = i + 1; k < j && plain; k++)
            plain = !w->act[k];
          char *vals = NULL;
          size_t n_vals = 0, vals_len = 0;
          if (!plain || !brace_sequence (P, w->s + i + 1, j - i - 1, &vals,
                                         &n_vals, &vals_len))
            {
              free (vals);
              continue;
            }
          for (size_t k = 0, off = 0; k < n_vals && !P->stop; k++)
            {
              size_t l = strlen (vals + off);
              if (!GROW (P, *q, *cap_q, *n_q + 1)
                  || !bword_make (P, &(*q)[*n_q], w, i, vals + off, NULL, l,
                                  j + 1))
                break;
              (*n_q)++;
              off += l + 1;
            }
          free (vals);
          done = true;
          break;
        }
      /* alternatives: the parts between active commas at this depth */
      size_t start = i + 1, d = 0;
      for (size_t k = i + 1; k <= j && !P->stop; k++)
        {
          if (k < j && w->act[k] && w->s[k] == '{')
            d++;
          else if (k < j && w->act[k] && w->s[k] == '}')
            d--;
          if (k == j || (d == 0 && w->act[k] && w->s[k] == ','))
            {
              if (!GROW (P, *q, *cap_q, *n_q + 1)
                  || !bword_make (P, &(*q)[*n_q], w, i, w->s + start,
                                  w->act + start, k - start, j + 1))
                break;
              (*n_q)++;
              start = k + 1;
            }
        }
      done = true;
    }
out:
  free (stack);
  free (close);
  free (commas);
  return done;
}

/* Brace expansion of a word with unquoted braces, as bash does it before
 * anything else: {rm,-rf,/} is the three words rm -rf /, x{a,b} is xa xb,
 * {1..3} is 1 2 3.  Results go to the builder in order; empty ones are
 * dropped.  Too many words or bytes truncate the parse. */
static void
brace_expand (struct parser *P, struct builder *B, struct word *w)
{
  struct bword first = { .s = w->v, .len = w->len };
  first.act = calloc (w->len + 1, sizeof *first.act);
  if (!first.act)
    {
      nomem (P);
      return;
    }
  for (size_t k = 0; k < w->n_braces; k++)
    if (w->braces[k] < w->len)
      first.act[w->braces[k]] = true;
  /* a stack of words still to expand, the next one on top */
  struct bword *todo = NULL, *next = NULL;
  size_t n_todo = 0, cap_todo = 0, n_next = 0, cap_next = 0, made = 0;
  struct bword cur = first;
  bool own = false; /* cur is ours to free */
  for (;;)
    {
      n_next = 0;
      if (!P->stop && brace_step (P, &cur, &next, &n_next, &cap_next))
        {
          /* push in reverse, so the first alternative comes out first */
          for (size_t k = n_next; k > 0; k--)
            if (GROW (P, todo, cap_todo, n_todo + 1))
              todo[n_todo++] = next[k - 1];
            else
              {
                free (next[k - 1].s);
                free (next[k - 1].act);
              }
        }
      else if (!P->stop && cur.len > 0)
        {
          if (++made > MAX_BRACE_WORDS)
            {
              P->out->truncated = true;
              P->stop = true;
            }
          else
            {
              char *v = dup_n (P, cur.s, cur.len);
              const char *slash = v ? strrchr (v, '/') : NULL;
              if (v)
                builder_push (P, B, v, w->expands,
                              slash ? (size_t) (slash - v) + 1 : 0);
            }
        }
      if (own)
        {
          free (cur.s);
          free (cur.act);
        }
      if (n_todo == 0)
        break;
      cur = todo[--n_todo];
      own = true;
    }
  while (n_todo > 0)
    {
      n_todo--;
      free (todo[n_todo].s);
      free (todo[n_todo].act);
    }
  free (todo);
  free (next);
  free (first.act);
}

static void
builder_add_word (struct parser *P, struct builder *B, struct word *w)
{
  if (w->n_braces >= 2 && w->v)
    {
      brace_expand (P, B, w);
      word_free (w);
      return;
    }
  size_t base = w->base;
  bool expanded = w->expands;
  char *v = word_take (P, w);
  word_free (w);
  if (v)
    builder_push (P, B, v, expanded, base);
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
  free (B->expanded);
  free_redirs (B->redirs, B->n_redirs);
  memset (B, 0, sizeof *B);
}

static const char *
base_name (const char *s)
{
  const char *slash = strrchr (s, '/');
  return slash && slash[1] ? slash + 1 : s;
}

/* A command's name as the rules see it: the last path component, except
 * for a file right in /etc, which holds no programs (/etc/passwd run as a
 * command is no passwd). */
static const char *
command_name (const char *path)
{
  const char *p = path;
  if (*p != '/')
    return base_name (path);
  p += strspn (p, "/");
  if (strncmp (p, "etc/", 4) == 0)
    {
      p += 4 + strspn (p + 4, "/");
      if (*p && !strchr (p, '/'))
        return path;
    }
  return base_name (path);
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
          if (!strchr (x, '=') && name_list_has (wr->long_args, x + 2, strlen (x + 2)))
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
  /* a shell script to parse: w[arg] from byte off, then (joined by
   * spaces) the words up to script_end */
  bool script;
  size_t arg, off, script_end;
  const char *stdin_lang; /* what it runs its stdin as, or NULL */
  bool code;              /* an interpreter given code (classify_runner) */
  size_t script_file;     /* the operand naming a script it runs, or 0 */
  const char *file_lang;  /* that script's language (NULL: its #! line) */
};

/* Where a script operand means stdin. */
static bool
is_stdin_path (const char *x)
{
  return strcmp (x, "-") == 0 || strcmp (x, "/dev/stdin") == 0
         || strcmp (x, "/dev/fd/0") == 0 || strcmp (x, "/proc/self/fd/0") == 0;
}

/* ---- interpreters: code in other languages ---- */

enum
{
  R_STDIN = 1,     /* no code and no script operand: code on stdin */
  R_STDIN_DB = 2,  /* no code option: code on stdin (operands name a database) */
  R_SCRIPT = 4,    /* no code option: the first operand is a script file */
  R_PROGRAM = 8,   /* no code option: the first operand is the code (awk) */
  R_DB_CODE = 16,  /* a database, then code (sqlite3 DB "SQL" ...) */
  R_ALL_CODE = 32, /* the operands are the code (redis-cli SET k v) */
  R_STOP = 64,     /* the code option ends the options (python -c) */
  R_DASH_LONG = 128, /* long options take one dash (sqlite3 -cmd) */
  R_PERMUTE = 256,   /* options may follow operands (psql DB -c SQL) */
};

struct runner
{
  const char *name;      /* without a version: python3.11 is python */
  const char *lang;      /* see shell_script */
  const char *code_opts; /* short options whose argument is code */
  const char *code_long; /* long options whose argument is code: "|eval|" */
  const char *arg_opts;  /* short options with an argument */
  const char *arg_long;  /* long options with an argument */
  const char *attached;  /* short options whose argument is only attached */
  const char *file_opts; /* short options naming a file of code */
  const char *end_opts;  /* short options after which nothing is code */
  const char *eval_sub;  /* a subcommand whose operand is code */
  unsigned short flags;
  char join; /* between pieces of code (perl -e a -e b) */
};

static const struct runner runners[] = {
  { "python", "python", "c", "", "WXQ", "|check-hash-based-pycs|", "", "",
    "m", NULL, R_STDIN | R_SCRIPT | R_STOP, '\n' },
  { "pypy", "python", "c", "", "WXQ", "", "", "", "m", NULL,
    R_STDIN | R_SCRIPT | R_STOP, '\n' },
  { "perl", "perl", "eE", "", "", "", "0CdDFiIlMmx", "", "", NULL,
    R_STDIN | R_SCRIPT, '\n' },
  { "ruby", "ruby", "e", "", "rICE", "|require|encoding|", "FKTWx0", "", "",
    NULL, R_STDIN | R_SCRIPT, '\n' },
  { "node", "node", "ep", "|eval|print|", "r",
    "|require|import|loader|experimental-loader|input-type|env-file|"
    "conditions|title|inspect-port|",
    "", "", "", NULL, R_STDIN | R_SCRIPT, '\n' },
  { "nodejs", "node", "ep", "|eval|print|", "r", "|require|import|loader|", "",
    "", "", NULL, R_STDIN | R_SCRIPT, '\n' },
  { "bun", "node", "ep", "|eval|print|", "r", "|require|preload|", "", "", "",
    NULL, R_SCRIPT, '\n' },
  { "deno", "node", "", "", "", "", "", "", "", "eval", 0, '\n' },
  { "php", "php", "rRBE", "", "cdz", "", "", "f", "", NULL, R_STDIN | R_SCRIPT,
    '\n' },
  { "lua", "lua", "e", "", "l", "", "", "", "", NULL, R_STDIN | R_SCRIPT,
    '\n' },
  { "luajit", "lua", "e", "", "lbj", "", "", "", "", NULL, R_STDIN | R_SCRIPT,
    '\n' },
  { "Rscript", "r", "e", "", "", "", "", "", "", NULL, R_STDIN | R_SCRIPT,
    '\n' },
  { "R", "r", "e", "", "", "|file|", "", "", "", NULL, R_STDIN, '\n' },
  { "osascript", "applescript", "e", "", "l", "", "", "", "", NULL,
    R_STDIN | R_SCRIPT, '\n' },
  { "awk", "awk", "e", "|source|", "Fv", "|field-separator|assign|", "", "f",
    "", NULL, R_PROGRAM, '\n' },
  { "gawk", "awk", "e", "|source|", "FvlE", "|field-separator|assign|", "",
    "f", "", NULL, R_PROGRAM, '\n' },
  { "mawk", "awk", "", "", "FvW", "", "", "f", "", NULL, R_PROGRAM, '\n' },
  { "nawk", "awk", "", "", "Fv", "", "", "f", "", NULL, R_PROGRAM, '\n' },
  { "psql", "sql", "c", "|command|", "dhpUvLoTFRP",
    "|dbname|host|port|username|set|variable|output|log-file|"
    "field-separator|record-separator|pset|table-attr|",
    "", "f", "", NULL, R_STDIN_DB | R_PERMUTE, '\n' },
  { "mysql", "sql", "e", "|execute|", "uhPDS",
    "|user|host|port|database|socket|defaults-file|defaults-extra-file|",
    "p", "", "", NULL, R_STDIN_DB | R_PERMUTE, '\n' },
  { "mariadb", "sql", "e", "|execute|", "uhPDS",
    "|user|host|port|database|socket|defaults-file|defaults-extra-file|",
    "p", "", "", NULL, R_STDIN_DB | R_PERMUTE, '\n' },
  { "sqlite", "sql", "", "|cmd|", "",
    "|init|separator|newline|nullvalue|vfs|mmap|maxsize|heap|escape|", "",
    "", "", NULL, R_DASH_LONG | R_DB_CODE | R_STDIN, '\n' },
  { "duckdb", "sql", "", "|cmd|c|s|", "", "|init|separator|nullvalue|", "",
    "", "", NULL, R_DASH_LONG | R_DB_CODE | R_STDIN, '\n' },
  { "cqlsh", "sql", "e", "|execute|", "uk", "|username|keyspace|", "", "f", "",
    NULL, R_STDIN_DB | R_PERMUTE, '\n' },
  { "clickhouse-client", "sql", "q", "|query|", "hudp",
    "|host|port|user|password|database|", "", "", "", NULL, R_STDIN_DB | R_PERMUTE, '\n' },
  { "mongosh", "mongo", "", "|eval|", "uph",
    "|host|port|username|password|authenticationDatabase|", "", "f", "", NULL,
    R_STDIN_DB | R_PERMUTE, '\n' },
  { "mongo", "mongo", "", "|eval|", "uph",
    "|host|port|username|password|authenticationDatabase|", "", "f", "", NULL,
    R_STDIN_DB | R_PERMUTE, '\n' },
  { "redis-cli", "redis", "", "", "hpsauirndD",
    "|user|pass|askpass|cacert|cacertdir|cert|key|sni|pattern|count|"
    "quoted-pattern|eval|rdb|functions-rdb|pipe-timeout|memkeys-samples|",
    "", "", "", NULL, R_ALL_CODE | R_STDIN, ' ' },
};

static const struct runner *
find_runner (const char *name)
{
  size_t n = strlen (name), k = n;
  /* python3.11, perl5.36, sqlite3 */
  while (k > 1 && ((name[k - 1] >= '0' && name[k - 1] <= '9')
                   || name[k - 1] == '.'))
    k--;
  for (size_t i = 0; i < sizeof runners / sizeof runners[0]; i++)
    {
      size_t l = strlen (runners[i].name);
      if ((l == n || l == k) && strncmp (runners[i].name, name, l) == 0)
        return &runners[i];
    }
  return NULL;
}

/* The code an interpreter is given in its words a..b: pieces (word,
 * byte offset), the operand naming a script file, what it runs stdin as. */
struct code_spec
{
  const struct runner *r;
  size_t piece[MAX_CODE_PIECES][2];
  size_t n;
  bool more; /* more pieces than room */
  size_t script;
  const char *stdin_lang;
};

static void
add_piece (struct code_spec *cs, size_t word, size_t off)
{
  if (cs->n == MAX_CODE_PIECES)
    {
      cs->more = true;
      return;
    }
  cs->piece[cs->n][0] = word;
  cs->piece[cs->n][1] = off;
  cs->n++;
}

/* Fill cs for an interpreter; false when w[a] is none. */
static bool
classify_runner (char *const *w, size_t a, size_t b, struct code_spec *cs)
{
  memset (cs, 0, sizeof *cs);
  const struct runner *r = cs->r = find_runner (base_name (w[a]));
  if (!r)
    return false;
  bool file = false, stop = false, ended = false;
  size_t i = a + 1;
  while (i < b && !stop && !ended)
    {
      const char *x = w[i];
      if (strcmp (x, "--") == 0)
        {
          i++;
          break;
        }
      if (x[0] != '-' || !x[1])
        {
          if (!(r->flags & R_PERMUTE))
            break;
          i++; /* a database name: options may follow */
          continue;
        }
      if (x[1] == '-' || (r->flags & R_DASH_LONG))
        {
          const char *name = x + 1 + (x[1] == '-');
          const char *eq = strchr (name, '=');
          size_t nl = eq ? (size_t) (eq - name) : strlen (name);
          if (name_list_has (r->code_long, name, nl))
            {
              if (eq)
                add_piece (cs, i, (size_t) (eq + 1 - x));
              else if (i + 1 < b)
                add_piece (cs, ++i, 0);
              stop = (r->flags & R_STOP) != 0;
            }
          else if (nl == 4 && strncmp (name, "file", 4) == 0)
            {
              file = true;
              i += !eq;
            }
          else if (name_list_has (r->arg_long, name, nl) && !eq)
            i++;
          i++;
          continue;
        }
      for (size_t j = 1; x[j]; j++)
        {
          char c = x[j];
          if (strchr (r->code_opts, c))
            {
              /* node -pe CODE: the rest of the word is more code options */
              bool more = x[j + 1]
                          && strspn (x + j + 1, r->code_opts) == strlen (x + j + 1);
              if (x[j + 1] && !more)
                add_piece (cs, i, j + 1);
              else if (i + 1 < b)
                add_piece (cs, ++i, 0);
              stop = (r->flags & R_STOP) != 0;
              break;
            }
          if (strchr (r->end_opts, c))
            {
              ended = true;
              break;
            }
          if (strchr (r->attached, c))
            break;
          if (strchr (r->arg_opts, c) || strchr (r->file_opts, c))
            {
              file |= strchr (r->file_opts, c) != NULL;
              if (!x[j + 1])
                i++;
              break;
            }
        }
      i++;
    }
  if (ended || cs->n || file)
    return true;
  if (r->eval_sub)
    {
      if (i + 1 < b && strcmp (w[i], r->eval_sub) == 0)
        add_piece (cs, i + 1, 0);
      return true;
    }
  if (r->flags & R_PROGRAM)
    {
      if (i < b)
        add_piece (cs, i, 0);
      return true;
    }
  if (r->flags & (R_DB_CODE | R_ALL_CODE))
    {
      for (size_t k = i + ((r->flags & R_DB_CODE) != 0); k < b; k++)
        add_piece (cs, k, 0);
      if (!cs->n)
        cs->stdin_lang = r->lang;
      return true;
    }
  if (r->flags & R_STDIN_DB)
    {
      cs->stdin_lang = r->lang;
      return true;
    }
  if (i < b && (r->flags & R_SCRIPT) && !is_stdin_path (w[i]))
    cs->script = i;
  else if (r->flags & R_STDIN)
    cs->stdin_lang = r->lang;
  return true;
}

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
  else if (i >= it->b || dash_s || is_stdin_path (w[i]))
    it->stdin_lang = "sh"; /* -s: the operands are its arguments */
  else
    {
      it->script_file = i;
      it->file_lang = "sh";
    }
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

/* docker exec [opts] CONTAINER CMD..., docker compose exec SERVICE CMD,
 * kubectl exec POD -- CMD: the index of CMD in w[a..b), or 0. */
static size_t
container_exec (char *const *w, size_t a, size_t b)
{
  const char *name = base_name (w[a]);
  bool kube = strcmp (name, "kubectl") == 0 || strcmp (name, "oc") == 0;
  bool compose = strcmp (name, "docker-compose") == 0
                 || strcmp (name, "podman-compose") == 0;
  bool engine = strcmp (name, "docker") == 0 || strcmp (name, "podman") == 0
                || strcmp (name, "nerdctl") == 0;
  if (!kube && !compose && !engine)
    return 0;
  static const char global_args[]
      = "|-H|--host|--context|-c|--config|-l|--log-level|--tlscacert|"
        "--tlscert|--tlskey|-f|--file|-p|--project-name|--profile|"
        "--env-file|--project-directory|-n|--namespace|--kubeconfig|"
        "--cluster|--user|-s|--server|--token|";
  size_t i = a + 1;
  for (;;)
    {
      while (i < b && w[i][0] == '-')
        i += name_list_has (global_args, w[i], strlen (w[i])) ? 2 : 1;
      if (i < b && engine && !compose && strcmp (w[i], "compose") == 0)
        {
          compose = true;
          i++;
          continue;
        }
      if (i < b && engine && strcmp (w[i], "container") == 0)
        {
          i++;
          continue;
        }
      break;
    }
  if (i >= b || strcmp (w[i], "exec") != 0)
    return 0;
  i++;
  if (kube)
    for (size_t k = i; k < b; k++)
      if (strcmp (w[k], "--") == 0)
        return k + 1 < b ? k + 1 : 0;
  static const char exec_args[]
      = "|-e|--env|-u|--user|-w|--workdir|--env-file|--detach-keys|--index|"
        "-c|--container|-n|--namespace|";
  while (i < b && w[i][0] == '-')
    i += name_list_has (exec_args, w[i], strlen (w[i])) ? 2 : 1;
  return i + 1 < b ? i + 1 : 0; /* past the container */
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
  if (strcmp (name, "trap") == 0)
    {
      /* trap 'CMD' SIGNAL...: CMD runs when the signal comes */
      size_t i = a + 1;
      if (i < b && strcmp (w[i], "--") == 0)
        i++;
      if (i + 1 < b && w[i][0] != '-')
        {
          it->script = true;
          it->arg = i;
          it->off = 0;
          it->script_end = i + 1;
        }
      return 0;
    }
  if (strcmp (name, "source") == 0 || strcmp (name, ".") == 0)
    {
      if (a + 1 < b && is_stdin_path (w[a + 1]))
        it->stdin_lang = "sh";
      else if (a + 1 < b)
        {
          it->script_file = a + 1;
          it->file_lang = "sh";
        }
      return 0;
    }
  size_t into = container_exec (w, a, b);
  if (into)
    {
      if (max == 0 || into >= b)
        return 0;
      subs[0][0] = into;
      subs[0][1] = b;
      return 1;
    }
  struct code_spec cs;
  if (classify_runner (w, a, b, &cs))
    {
      it->code = cs.n > 0;
      it->stdin_lang = cs.stdin_lang;
      if (cs.script)
        {
          it->script_file = cs.script;
          it->file_lang = cs.r->lang;
        }
      return 0;
    }
  if (strcmp (name, "su") == 0 || strcmp (name, "script") == 0)
    {
      if (!find_dash_c (w, a, b, it, "sgGwCEoqTt") && name[0] == 's'
          && name[1] == 'u')
        it->stdin_lang = "sh";
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
      it->stdin_lang = file ? NULL : "sh";
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
      it->stdin_lang = (wr->flags & WF_STDIN) ? "sh" : NULL;
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
  if (n > nested_left (P))
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
      to->redirs[i].expanded = from->redirs[i].expanded;
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
  c->expanded = calloc (b - a + 1, sizeof *c->expanded);
  if (!c->expanded)
    {
      nomem (P);
      return;
    }
  for (size_t i = a; i < b && x->expanded; i++)
    c->expanded[i - a] = x->expanded[i];
  c->path = dup (P, x->words[a]);
  c->words[0] = dup (P, command_name (x->words[a]));
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

static void note_run (struct parser *P, const char *path, const char *lang);
static void set_var (struct parser *P, const char *name, size_t name_len,
                     const char *value, size_t value_len);

/* Whether any of words a..b is expanded (flags may be NULL). */
static bool
any_expanded (const bool *flags, size_t a, size_t b)
{
  for (size_t i = a; flags && i < b; i++)
    if (flags[i])
      return true;
  return false;
}

/* The code an interpreter (words a..b of w) is given, run as a script of
 * its language. */
static void
run_code (struct parser *P, unsigned depth, char *const *w,
          const bool *expanded, size_t a, size_t b)
{
  struct code_spec cs;
  if (!classify_runner (w, a, b, &cs) || cs.n == 0)
    return;
  size_t total = 0;
  for (size_t k = 0; k < cs.n; k++)
    total += strlen (w[cs.piece[k][0]] + cs.piece[k][1]) + 1;
  if (total > nested_left (P))
    {
      P->out->truncated = true;
      return;
    }
  char *code = malloc (total + 1);
  if (!code)
    {
      nomem (P);
      return;
    }
  size_t len = 0;
  bool dynamic = cs.more;
  for (size_t k = 0; k < cs.n; k++)
    {
      const char *x = w[cs.piece[k][0]] + cs.piece[k][1];
      size_t l = strlen (x);
      if (k)
        code[len++] = cs.r->join;
      memcpy (code + len, x, l);
      len += l;
      /* redis-cli: only the command's name could change what runs */
      if (expanded && expanded[cs.piece[k][0]]
          && (cs.r->join != ' ' || k == 0))
        dynamic = true;
    }
  code[len] = '\0';
  P->out->work += len;
  run_script (P, depth, cs.r->lang, code, len, dynamic);
  free (code);
}

/* Look through the command at `slot`: record the commands it wraps right
 * after it, then parse the scripts it runs.  Returns what it (or a
 * command it wraps) runs its stdin as (NULL: data). */
static const char *
analyze (struct parser *P, struct frame *F, size_t slot)
{
  /* the words array outlives any move of the commands array */
  char **w = P->out->cmds[slot].words;
  bool *expanded = P->out->cmds[slot].expanded;
  const char *path0 = P->out->cmds[slot].path;
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
      return NULL;
    }
  for (size_t i = 0; i < k_words; i++)
    size[i + 1] = size[i] + strlen (w[i]) + 1;
  P->out->work += size[k_words];
  size_t n_items = 1;
  const char *stdin_lang = NULL;
  items[0].b = k_words;

  for (size_t i = 0; i < n_items; i++)
    {
      size_t room = MAX_WRAPPED + 1 - n_items;
      size_t n = classify (w, &items[i], subs, room);
      if (!stdin_lang)
        stdin_lang = items[i].stdin_lang;
      if (n > 0 && items[i].level + 1 > MAX_PEEL)
        {
          P->out->truncated = true;
          continue;
        }
      for (size_t k = 0; k < n; k++)
        {
          /* wrappers of wrappers copy the same words again: bounded */
          size_t cost = size[subs[k][1]] - size[subs[k][0]];
          if (!spend_copy (P, cost))
            break;
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
        {
          fill_wrapped (P, &o->cmds[slot + k], &o->cmds[slot], items[k].a,
                        items[k].b);
          o->cmds[slot + k].stdin_lang = items[k].stdin_lang;
        }
    }
  else
    n_items = 1;
  o->cmds[slot].stdin_lang = stdin_lang;

  for (size_t i = 0; i < n_items && !P->stop; i++)
    {
      const struct item *it = &items[i];
      if (it->script)
        {
          /* sh -c SCRIPT NAME ARGS: $0 is NAME, $1 ... and $@ the ARGS */
          if (it->script_end < it->b && is_shell (base_name (w[it->a])))
            {
              for (size_t k = it->script_end; k < it->b && k - it->script_end < 10; k++)
                {
                  char d = (char) ('0' + (k - it->script_end));
                  set_var (P, &d, 1, w[k], strlen (w[k]));
                }
              size_t len = 0;
              char *all = it->script_end + 1 < it->b
                              ? join_words (P, w, it->script_end + 1, 0, it->b, &len)
                              : NULL;
              if (all)
                {
                  set_var (P, "@", 1, all, len);
                  set_var (P, "*", 1, all, len);
                }
              free (all);
            }
          size_t len = 0;
          char *s = join_words (P, w, it->arg, it->off, it->script_end, &len);
          if (s)
            run_script (P, F->depth, "sh", s, len,
                        any_expanded (expanded, it->arg, it->script_end));
          free (s);
        }
      if (it->code)
        run_code (P, F->depth, w, expanded, it->a, it->b);
      /* a file it runs: ./x.sh, bash x.sh, python3 x.py; <(cmd): a
       * script that is another command's output */
      if (it->script_file && strncmp (w[it->script_file], "<(", 2) == 0)
        record_script (P, it->file_lang ? it->file_lang : "sh",
                       w[it->script_file], strlen (w[it->script_file]), true);
      else if (it->script_file)
        note_run (P, w[it->script_file], it->file_lang);
      const char *path = i == 0 ? path0 : w[it->a];
      if (strchr (path, '/') && !is_shell (base_name (path)))
        note_run (P, path, NULL);
    }
  free (items);
  free (subs);
  free (size);
  return stdin_lang;
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
    free (L->deferred[i].text);
  free (L->deferred);
  L->deferred = NULL;
  L->n_deferred = L->cap_deferred = 0;
}

static void
defer (struct parser *P, struct list_state *L, char *text, bool dynamic)
{
  if (!text)
    return;
  if (!GROW (P, L->deferred, L->cap_deferred, L->n_deferred + 1))
    {
      free (text);
      return;
    }
  L->deferred[L->n_deferred++] = (struct deferred) { text, dynamic };
}

static bool
is_here_string (const char *op)
{
  return strcmp (op + strspn (op, "0123456789"), "<<<") == 0;
}

/* The first word of echo's that is text, past its options. */
static size_t
echo_text_start (const struct shell_command *c, bool *escapes)
{
  size_t a = 1;
  *escapes = false;
  while (a < c->n_words && c->words[a][0] == '-' && c->words[a][1]
         && strspn (c->words[a] + 1, "neE") == strlen (c->words[a] + 1))
    *escapes |= strchr (c->words[a], 'e') != NULL, a++;
  return a;
}

/* Text the command at `slot` writes down a pipe, kept in case a shell
 * reads it (echo 'rm -rf /' | sh): here-strings and echo's arguments. */
static void
defer_piped_text (struct parser *P, struct list_state *L, size_t slot)
{
  const struct shell_command *c = &P->out->cmds[slot];
  for (size_t i = 0; i < c->n_redirs; i++)
    if (is_here_string (c->redirs[i].op))
      defer (P, L, dup (P, c->redirs[i].target), c->redirs[i].expanded);
  if (strcmp (c->words[0], "echo") != 0)
    return;
  bool escapes;
  size_t a = echo_text_start (c, &escapes);
  if (a < c->n_words)
    {
      size_t len = 0;
      defer (P, L, join_words (P, c->words, a, 0, c->n_words, &len),
             escapes || any_expanded (c->expanded, a, c->n_words));
    }
}

/* ---- variables with literal values ---- */

static void
set_var (struct parser *P, const char *name, size_t name_len,
         const char *value, size_t value_len)
{
  if (P->n_vars >= MAX_VARS || P->nomem
      || !GROW (P, P->vars, P->cap_vars, P->n_vars + 1))
    return;
  char *n = dup_n (P, name, name_len), *v = dup_n (P, value, value_len);
  if (!n || !v)
    {
      free (n);
      free (v);
      return;
    }
  P->vars[P->n_vars++] = (struct var) { n, v };
  P->out->work += name_len + value_len;
}

/* NAME=value: remembered when the value is literal.  Every value a name
 * is given is kept: which one holds when it is used depends on what
 * runs (a subshell's assignment does not leak), so each is judged. */
static void
note_assignment (struct parser *P, const char *word, bool expands)
{
  const char *eq = strchr (word, '=');
  if (!eq || expands || eq == word)
    return;
  size_t n = (size_t) (eq - word);
  if (word[n - 1] == '+' || memchr (word, '[', n))
    return; /* x+=y, a[i]=y: not a plain value */
  set_var (P, word, n, eq + 1, strlen (eq + 1));
}

/* The name a word refers to when it is exactly $NAME or ${NAME} (or $1,
 * $@ ...): its length, 0 when it is not one. */
static size_t
var_ref (const char *w, const char **name)
{
  if (w[0] != '$')
    return 0;
  bool brace = w[1] == '{';
  const char *p = w + 1 + brace;
  size_t n = 0;
  if (name_start ((unsigned char) p[0]))
    while (name_byte ((unsigned char) p[n]))
      n++;
  else if ((p[0] >= '0' && p[0] <= '9') || p[0] == '@' || p[0] == '*')
    n = 1;
  if (n == 0 || (brace ? (p[n] != '}' || p[n + 1]) : p[n] != '\0'))
    return 0;
  *name = p;
  return n;
}

/* A command using variables the line gave literal values ($x -rf / after
 * x=rm): each reading of it with those values is judged too, as a
 * command line of its own, so hiding a command in a variable hides
 * nothing.  Up to MAX_VAR_LINES readings. */
static void
judge_var_readings (struct parser *P, unsigned depth, size_t slot)
{
  const struct shell_command *c = &P->out->cmds[slot];
  size_t n_words = c->n_words;
  if (P->n_vars == 0 || !c->expanded)
    return;
  /* for each word, the variable it names (count of values), or none */
  size_t combos = 1;
  bool any = false;
  for (size_t i = 0; i < n_words && combos <= MAX_VAR_LINES; i++)
    {
      const char *nm, *w = i ? c->words[i] : c->path;
      size_t nl = c->expanded[i] ? var_ref (w, &nm) : 0;
      size_t k = 0;
      for (size_t v = 0; nl && v < P->n_vars; v++)
        k += strlen (P->vars[v].name) == nl && !strncmp (P->vars[v].name, nm, nl);
      if (k)
        {
          any = true;
          combos *= k;
        }
    }
  if (!any)
    return;
  if (combos > MAX_VAR_LINES)
    combos = MAX_VAR_LINES; /* the first ones: a bound, not a verdict */
  char **words = c->words;
  const bool *expanded = c->expanded;
  const char *path = c->path;
  /* every character any literal IFS holds */
  char ifs[64] = "";
  for (size_t v = 0; v < P->n_vars; v++)
    if (strcmp (P->vars[v].name, "IFS") == 0)
      for (const char *q = P->vars[v].value; *q && strlen (ifs) + 1 < sizeof ifs; q++)
        if (!strchr (ifs, *q))
          strncat (ifs, q, 1);
  for (size_t r = 0; r < combos && !P->stop; r++)
    {
      struct word line;
      word_init (&line);
      size_t rest = r;
      for (size_t i = 0; i < n_words; i++)
        {
          const char *nm, *w = i ? words[i] : path;
          size_t nl = expanded[i] ? var_ref (w, &nm) : 0;
          size_t k = 0, pick = SIZE_MAX;
          for (size_t v = 0; nl && v < P->n_vars; v++)
            if (strlen (P->vars[v].name) == nl
                && !strncmp (P->vars[v].name, nm, nl))
              k++;
          if (k)
            {
              size_t want = rest % k, seen = 0;
              rest /= k;
              for (size_t v = 0; v < P->n_vars && pick == SIZE_MAX; v++)
                if (strlen (P->vars[v].name) == nl
                    && !strncmp (P->vars[v].name, nm, nl) && seen++ == want)
                  pick = v;
            }
          if (i)
            wputc (P, &line, ' ');
          const char *x = pick != SIZE_MAX ? P->vars[pick].value : w;
          size_t from = line.len;
          wput (P, &line, x, strlen (x));
          /* IFS=, makes commas split words as blanks do */
          for (size_t k = from; pick != SIZE_MAX && ifs[0] && k < line.len; k++)
            if (strchr (ifs, line.v[k]))
              line.v[k] = ' ';
        }
      if (line.v && spend_copy (P, line.len))
        run_script (P, depth, "sh", line.v, line.len, false);
      free (line.v);
    }
}

/* ---- files written, then run ---- */

/* ./x.sh and x.sh name the same file. */
static const char *
file_key (const char *path)
{
  while (path[0] == '.' && path[1] == '/')
    path += 2 + strspn (path + 2, "/");
  return path;
}

static void
note_write (struct parser *P, const char *path, const char *content,
            size_t len, bool dynamic)
{
  if (P->nomem || !*path || !GROW (P, P->files, P->cap_files, P->n_files + 1))
    return;
  struct written *f = &P->files[P->n_files];
  *f = (struct written) { .dynamic = dynamic };
  f->path = dup (P, file_key (path));
  f->content = dup_n (P, content, len);
  if (!f->path || !f->content)
    {
      free (f->path);
      free (f->content);
      return;
    }
  P->n_files++;
  P->out->work += len;
}

static void
note_run (struct parser *P, const char *path, const char *lang)
{
  if (P->nomem || !GROW (P, P->runs, P->cap_runs, P->n_runs + 1))
    return;
  char *key = dup (P, file_key (path));
  if (key)
    P->runs[P->n_runs++] = (struct file_run) { key, lang };
}

/* The file a command writes its output to (> F, >> F), or NULL. */
static const char *
output_file (const struct shell_command *c)
{
  const char *out = NULL;
  for (size_t i = 0; i < c->n_redirs; i++)
    {
      const char *op = c->redirs[i].op + strspn (c->redirs[i].op, "0123456789");
      if ((strcmp (op, ">") == 0 || strcmp (op, ">>") == 0
           || strcmp (op, ">|") == 0)
          && c->redirs[i].op[0] != '2' && !c->redirs[i].expanded)
        out = c->redirs[i].target;
    }
  return out;
}

/* echo TEXT > F, printf TEXT > F: F's content is known (or dynamic); cat
 * > F <<EOF and tee F <<EOF: the body will be (noted on the heredoc). */
/* curl -o F URL, curl -O URL, wget URL, wget -O F URL: the file a
 * download writes (NULL: standard output or none); its content is only
 * known when it runs. */
static const char *
download_file (const struct shell_command *c, struct word *scratch,
               struct parser *P)
{
  bool curl = strcmp (c->words[0], "curl") == 0;
  if (!curl && strcmp (c->words[0], "wget") != 0)
    return NULL;
  const char *out = NULL, *url = NULL;
  bool remote_name = !curl; /* wget names the file after the URL */
  for (size_t i = 1; i < c->n_words; i++)
    {
      const char *x = c->words[i];
      if (strncmp (x, "--output=", 9) == 0 || strncmp (x, "--output-document=", 18) == 0)
        out = strchr (x, '=') + 1;
      else if ((strcmp (x, "--output") == 0 || strcmp (x, "--output-document") == 0)
               && i + 1 < c->n_words)
        out = c->words[++i];
      else if (x[0] == '-' && x[1] != '-')
        {
          const char *o = strchr (x, curl ? 'o' : 'O');
          if (curl && strchr (x, 'O'))
            remote_name = true;
          if (o)
            out = o[1] ? o + 1 : i + 1 < c->n_words ? c->words[++i] : NULL;
        }
      else if (strstr (x, "://"))
        url = x;
    }
  if (out)
    return strcmp (out, "-") == 0 ? NULL : out;
  if (!remote_name || !url)
    return NULL;
  /* the last component of the URL's path */
  const char *path = strstr (url, "://") + 3;
  size_t n = strcspn (path, "?#");
  const char *slash = memrchr (path, '/', n);
  if (!slash || slash + 1 >= path + n)
    return NULL;
  scratch->len = 0;
  wput (P, scratch, slash + 1, (size_t) (path + n - slash - 1));
  return scratch->v;
}

static void
note_writes (struct parser *P, struct text *T, size_t slot, size_t hd_first)
{
  const struct shell_command *c = &P->out->cmds[slot];
  const char *name = c->words[0];
  const char *out = output_file (c);
  struct word url_name;
  word_init (&url_name);
  const char *got = download_file (c, &url_name, P);
  if (got)
    note_write (P, got, "", 0, true);
  free (url_name.v);
  if (strcmp (name, "tee") == 0)
    for (size_t i = 1; i < c->n_words && !out; i++)
      if (c->words[i][0] != '-')
        out = c->words[i];
  if (!out)
    return;
  if (strcmp (name, "cat") == 0 || strcmp (name, "tee") == 0)
    {
      for (size_t i = hd_first; i < T->n_hd; i++)
        if (!T->hd[i].write_to)
          T->hd[i].write_to = dup (P, out);
      for (size_t i = 0; i < c->n_redirs; i++)
        if (is_here_string (c->redirs[i].op))
          note_write (P, out, c->redirs[i].target, strlen (c->redirs[i].target),
                      c->redirs[i].expanded);
      return;
    }
  bool echo = strcmp (name, "echo") == 0;
  if (!echo && strcmp (name, "printf") != 0)
    return;
  bool dynamic = false;
  size_t a = 1;
  if (echo)
    a = echo_text_start (c, &dynamic);
  else if (a < c->n_words && strcmp (c->words[a], "--") == 0)
    a++;
  struct word text;
  word_init (&text);
  for (size_t i = a; i < c->n_words; i++)
    {
      const char *x = c->words[i];
      if (i > a)
        wputc (P, &text, ' ');
      if (!echo)
        {
          /* printf: a format without conversions, and simple escapes */
          if (i > a || strchr (x, '%'))
            dynamic = true;
          for (; *x; x++)
            if (*x == '\\' && (x[1] == 'n' || x[1] == 't' || x[1] == '\\'))
              {
                wputc (P, &text, x[1] == 'n' ? '\n' : x[1] == 't' ? '\t' : '\\');
                x++;
              }
            else
              {
                dynamic |= *x == '\\';
                wputc (P, &text, *x);
              }
          continue;
        }
      wput (P, &text, x, strlen (x));
    }
  if (echo)
    wputc (P, &text, '\n');
  dynamic |= any_expanded (c->expanded, a, c->n_words);
  note_write (P, out, text.v ? text.v : "", text.len, dynamic);
  free (text.v);
}

/* End the simple command being built; `connector` is what followed. */
static void
finish_command (struct parser *P, struct text *T, struct frame *F,
                struct list_state *L, const char *connector)
{
  struct builder *B = &L->b;
  const char *stdin_lang = NULL;
  bool recorded = false;

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
          char *name = dup (P, command_name (first) == first
                                   ? first
                                   : first + (first[B->base0] ? B->base0 : 0));
          if (name)
            {
              c->path = first;
              B->words[0] = name;
              c->words = B->words;
              c->expanded = B->expanded;
              c->n_words = B->n_words;
              c->redirs = B->redirs;
              c->n_redirs = B->n_redirs;
              c->connector = connector;
              c->heredoc = B->heredoc;
              B->words = NULL;
              B->expanded = NULL;
              B->n_words = 0;
              B->redirs = NULL;
              B->n_redirs = 0;
              recorded = true;
              note_writes (P, T, B->slot, B->hd_first);
              if (strcmp (name, "export") == 0 || strcmp (name, "declare") == 0
                  || strcmp (name, "local") == 0 || strcmp (name, "readonly") == 0
                  || strcmp (name, "typeset") == 0)
                for (size_t i = 1; i < c->n_words; i++)
                  note_assignment (P, c->words[i], c->expanded[i]);
              /* kept: nested parses may move the commands array */
              struct shell_redirect *rd = c->redirs;
              size_t n_rd = c->n_redirs;
              judge_var_readings (P, F->depth, B->slot);
              stdin_lang = analyze (P, F, B->slot);
              /* a here-string fed to a shell or interpreter is a script */
              for (size_t i = 0; stdin_lang && i < n_rd; i++)
                if (is_here_string (rd[i].op))
                  run_script (P, F->depth, stdin_lang, rd[i].target,
                              strlen (rd[i].target), rd[i].expanded);
            }
        }
      for (size_t i = B->hd_first; i < T->n_hd; i++)
        {
          if (!T->hd[i].reader)
            T->hd[i].reader = stdin_lang;
          T->hd[i].piped = is_pipe (connector);
        }
    }

  /* the previous command's heredocs went down a pipe into this one */
  if (L->pipe_pending && stdin_lang)
    {
      for (size_t i = L->pipe_hd_first; i < L->pipe_hd_end && i < T->n_hd;
           i++)
        if (!T->hd[i].reader)
          T->hd[i].reader = stdin_lang;
      for (size_t i = 0; i < L->n_deferred && !P->stop; i++)
        run_script (P, F->depth, stdin_lang, L->deferred[i].text,
                    strlen (L->deferred[i].text), L->deferred[i].dynamic);
    }
  /* a pipe whose text this judge cannot read (cat x | sh, (a; b) | sh):
   * a script of the reader's that is only known when it runs, "| " and
   * the command writing into the pipe.  Not for a database (cat dump.sql
   * | psql is psql -f dump.sql): only for what runs programs */
  if (L->piped_in && stdin_lang && L->n_deferred == 0
      && (strcmp (stdin_lang, "sh") == 0 || inline_code_known (stdin_lang))
      && !(L->pipe_pending && L->pipe_hd_end > L->pipe_hd_first))
    {
      char *up = L->pipe_pending ? shell_command_text (&P->out->cmds[L->pipe_slot])
                                 : NULL;
      struct word t;
      word_init (&t);
      wput (P, &t, "| ", 2);
      wput (P, &t, up ? up : "(...)", strlen (up ? up : "(...)"));
      free (up);
      if (t.v)
        record_script (P, stdin_lang, t.v, t.len, true);
      free (t.v);
    }
  free_deferred (L);
  if (recorded && is_pipe (connector))
    defer_piped_text (P, L, B->slot);
  L->piped_in = is_pipe (connector);
  L->pipe_slot = B->slot;
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
  unsigned long long expansions = P->expansions;
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
  bool dynamic = P->expansions != expansions;
  /* a body going down a pipe whose reader is not known yet (the
   * newline came right after the '|') is kept until it is */
  bool later = !h->reader && h->piped && L->after_op;
  if (!h->reader && !later && !h->write_to)
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
  if (h->write_to)
    note_write (P, h->write_to, d.v ? d.v : "", d.len, dynamic);
  if (h->reader)
    {
      run_script (P, F->depth, h->reader, d.v ? d.v : "", d.len, dynamic);
      free (d.v);
    }
  else if (later)
    defer (P, L, word_take (P, &d), dynamic);
  else
    free (d.v);
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
      word_free (&target);
      return;
    }
  size_t fl = t->fd ? strlen (t->fd) : 0, ol = strlen (t->op);
  char *op = malloc (fl + ol + 1);
  if (!op)
    {
      word_free (&target);
      nomem (P);
      return;
    }
  memcpy (op, t->fd ? t->fd : "", fl);
  memcpy (op + fl, t->op, ol + 1);
  bool quoted = target.quoted, expands = target.expands;
  char *value = word_take (P, &target);
  word_free (&target);
  if (!value)
    {
      free (op);
      return;
    }
  B->redirs[B->n_redirs].op = op;
  B->redirs[B->n_redirs].target = value;
  B->redirs[B->n_redirs].expanded = expands;
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

/* A function's body has been read: its definition is a script of its own
 * ("NAME BODY", the body as written), so that rules can see what the
 * function does with its own name (a fork bomb calls itself twice). */
static void
function_defined (struct parser *P, struct text *T, struct list_state *L)
{
  if (!L->func_name)
    return;
  size_t nl = strlen (L->func_name);
  size_t from = L->func_start < T->pos ? L->func_start : T->pos;
  size_t body = T->pos - from;
  char *text = malloc (nl + 1 + body + 1);
  if (!text)
    nomem (P);
  else
    {
      memcpy (text, L->func_name, nl);
      text[nl] = ' ';
      memcpy (text + nl + 1, T->s + from, body);
      text[nl + 1 + body] = '\0';
      record_script (P, "function", text, nl + 1 + body, false);
      free (text);
    }
  free (L->func_name);
  L->func_name = NULL;
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
      if (L.func_name && t.kind != T_NEWLINE
          && !(t.kind == T_OP && strcmp (t.op, "(") == 0)
          && !(t.kind == T_WORD && plain (&t.w, "{")))
        {
          free (L.func_name);
          L.func_name = NULL;
        }

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
          segment_end (P, T, F);
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
                  free (L.func_name);
                  L.func_name = dup (P, L.b.words[0]);
                  token_free (&t);
                  lex_token (P, T, F, &t);
                  L.func_start = T->pos;
                  builder_clear (&L.b);
                  continue;
                }
              if (L.func_name && !L.b.started && peek_nonblank (P, T) == ')')
                {
                  /* function NAME () compound */
                  token_free (&t);
                  lex_token (P, T, F, &t);
                  L.func_start = T->pos;
                  continue;
                }
              finish_command (P, T, F, &L, "");
              int r = open_subshell (P, T, F, false);
              function_defined (P, T, &L);
              if (r == RET_EOF)
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
          if (!is_pipe (op))
            segment_end (P, T, F);
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
          free (L.func_name);
          L.func_name = word_take (P, &t.w);
          L.func_start = T->pos;
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
              function_defined (P, T, &L);
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
          note_assignment (P, t.w.v, t.w.expands);
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
  free (L.func_name);
  builder_clear (&L.b);
  return ret;
}

/* Parse s as a list one level deeper (the caller has paid for it). */
static void
parse_text (struct parser *P, unsigned depth, const char *s, size_t len)
{
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

/* A command substitution's text (backquotes): its own list, one level
 * deeper. */
static void
parse_nested_text (struct parser *P, unsigned depth, const char *s,
                   size_t len)
{
  if (!P->stop && spend_nested (P, len))
    parse_text (P, depth, s, len);
}

/* Keep a script for the rules; false when the budget is spent. */
static bool
record_script (struct parser *P, const char *lang, const char *text,
               size_t len, bool dynamic)
{
  if (P->stop || !spend_nested (P, len + 1))
    return false;
  struct shell_parse *o = P->out;
  if (!GROW (P, o->scripts, P->cap_scripts, o->n_scripts + 1))
    return false;
  char *copy = dup_n (P, text, len);
  if (!copy)
    return false;
  o->scripts[o->n_scripts++] = (struct shell_script) { lang, copy, len,
                                                       dynamic };
  o->work += len + 1;
  return true;
}

struct code_ctx
{
  struct parser *P;
  unsigned depth;
  const char *lang;
};

static void
code_runs (void *data, enum code_run what, const char *text, size_t len,
           bool dynamic)
{
  struct code_ctx *c = data;
  if (what == CODE_DOWNLOADS)
    {
      char *path = dup_n (c->P, text, len);
      if (path)
        note_write (c->P, path, "", 0, true);
      free (path);
      return;
    }
  run_script (c->P, c->depth, what == CODE_RUNS_SHELL ? "sh" : c->lang, text,
              len, dynamic);
}

/* A script of lang, run by a command at depth: kept for the rules; a
 * shell script is parsed into commands, and so is every command line
 * that inline code hands to a shell. */
static void
run_script (struct parser *P, unsigned depth, const char *lang,
            const char *text, size_t len, bool dynamic)
{
  if (!record_script (P, lang, text, len, dynamic))
    return;
  if (strcmp (lang, "sh") == 0)
    parse_text (P, depth, text, len);
  else if (inline_code_known (lang) && nest_enter (P))
    {
      struct code_ctx c = { P, depth + 1, lang };
      if (!inline_code_scan (lang, text, len, code_runs, &c, &P->out->work))
        nomem (P);
      nest_leave (P);
    }
}

/* The language a file's #! line names: "sh" without one, NULL for a
 * program that is neither a shell nor an interpreter read here. */
static const char *
shebang_lang (const char *content)
{
  if (content[0] != '#' || content[1] != '!')
    return "sh";
  const char *p = content + 2, *end = p + strcspn (p, "\n");
  char word[64];
  for (int k = 0; k < 3; k++)
    {
      p += strspn (p, " \t");
      size_t n = strcspn (p, " \t\n");
      if (p >= end || n == 0 || n >= sizeof word)
        return NULL;
      memcpy (word, p, n);
      word[n] = '\0';
      p += n;
      const char *name = base_name (word);
      if (strcmp (name, "env") == 0 || name[0] == '-')
        continue; /* #!/usr/bin/env [-S] python3 */
      if (is_shell (name))
        return "sh";
      const struct runner *r = find_runner (name);
      return r ? r->lang : NULL;
    }
  return NULL;
}

/* Files the command line wrote and then ran (cat > x.sh <<EOF ...; bash
 * x.sh): their content is a script of the command line too, once each,
 * with a budget of its own. */
static void
run_written_files (struct parser *P)
{
  for (size_t r = 0; r < P->n_runs && !P->stop; r++)
    for (size_t f = P->n_files; f > 0; f--)
      {
        struct written *w = &P->files[f - 1];
        if (strcmp (w->path, P->runs[r].path) != 0)
          continue;
        if (!w->ran)
          {
            w->ran = true;
            const char *lang = P->runs[r].lang ? P->runs[r].lang
                                                : shebang_lang (w->content);
            P->seg_fresh = false;
            P->seg_start = P->top->pos;
            P->extra_bytes = strlen (w->content) + 1;
            P->nested_spent = P->copy_spent = 0;
            if (lang)
              run_script (P, 0, lang, w->content, strlen (w->content),
                          w->dynamic);
          }
        break;
      }
}

/* ---- the API ---- */

static void
free_command (struct shell_command *c)
{
  for (char **w = c->words; w && *w; w++)
    free (*w);
  free (c->words);
  free (c->expanded);
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
  for (size_t i = 0; i < p->n_scripts; i++)
    free (p->scripts[i].text);
  free (p->scripts);
  free (p->normalized);
  free (p);
}

static void
parser_free (struct parser *P)
{
  for (size_t i = 0; i < P->n_vars; i++)
    {
      free (P->vars[i].name);
      free (P->vars[i].value);
    }
  free (P->vars);
  for (size_t i = 0; i < P->n_files; i++)
    {
      free (P->files[i].path);
      free (P->files[i].content);
    }
  free (P->files);
  for (size_t i = 0; i < P->n_runs; i++)
    free (P->runs[i].path);
  free (P->runs);
}

/* Normalize, then parse as lang: the shell's grammar for "sh", else the
 * one script. */
static struct shell_parse *
parse_as (const char *lang, const char *text, size_t len)
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

  struct text t = { .s = pre, .end = n, .cont = calloc (n + 1, 1) };
  struct parser P = { .out = p, .top = &t, .seg_fresh = true };
  if (!t.cont)
    nomem (&P);
  else if (strcmp (lang, "sh") == 0)
    {
      struct frame f = {
        .list = UINT_MAX,
        .close = CLOSE_EOF,
        .lines_are_lists = true,
      };
      parse_list (&P, &t, &f);
    }
  else
    {
      /* the whole input is the script: its budgets are its own */
      P.seg_fresh = false;
      P.extra_bytes = n + 1;
      run_script (&P, 0, lang, pre, n, false);
      t.pos = n;
    }
  drop_heredocs (&t, 0);
  free (t.hd);
  if (!P.nomem)
    run_written_files (&P);
  parser_free (&P);
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

struct shell_parse *
shell_parse (const char *text, size_t len)
{
  return parse_as ("sh", text, len);
}

struct shell_parse *
shell_parse_script (const char *lang, const char *text, size_t len)
{
  return parse_as (lang ? lang : "sh", text, len);
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
