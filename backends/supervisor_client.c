/* SPDX-License-Identifier: MIT */
/* The broker's side of the supervisor protocol (see supervisor_client.h). */
#define _GNU_SOURCE
#include "supervisor_client.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "xprintf.h"

static int
send_w (struct sup_client *c)
{
  size_t n = al_finish (&c->w);
  if (n == 0)
    return -EMSGSIZE;
  if (send (c->fd, c->w.buf, n, MSG_NOSIGNAL) != (ssize_t) n)
    return -errno;
  return 0;
}

/* Data for one of a job's input pipes (SUP_STDIN or SUP_SCRIPT), in
 * messages of at most SUP_MAX_DATA bytes. */
static int
send_chunks (struct sup_client *c, enum sup_msg_type type, uint32_t job,
             const void *data, size_t n, bool eof)
{
  const uint8_t *p = data;
  do
    {
      size_t chunk = n > SUP_MAX_DATA ? SUP_MAX_DATA : n;
      sup_begin (&c->w, type);
      sup_put_u32 (&c->w, SUP_F_JOB, job);
      sup_put_bytes (&c->w, SUP_F_DATA, p, chunk);
      sup_put_u32 (&c->w, SUP_F_EOF, eof && chunk == n);
      int rc = send_w (c);
      if (rc < 0)
        return rc;
      p += chunk;
      n -= chunk;
    }
  while (n > 0);
  return 0;
}

int
sup_client_spawn (struct sup_client *c, const struct backend_spawn *sp,
                  char **err)
{
  sup_begin (&c->w, SUP_SPAWN);
  sup_put_u32 (&c->w, SUP_F_JOB, sp->job);
  for (const char *const *a = sp->argv; *a; a++)
    sup_put_str (&c->w, SUP_F_ARGV, *a);
  for (const char *const *e = sp->envp; e && *e; e++)
    sup_put_str (&c->w, SUP_F_ENV, *e);
  sup_put_str (&c->w, SUP_F_CWD, sp->cwd);
  sup_put_u32 (&c->w, SUP_F_STDIN, sp->stdin_pipe);
  sup_put_u32 (&c->w, SUP_F_SCRIPT, sp->script != NULL);
  if (sp->pty)
    {
      sup_put_u32 (&c->w, SUP_F_ROWS, sp->pty->rows);
      sup_put_u32 (&c->w, SUP_F_COLS, sp->pty->cols);
      sup_put_str (&c->w, SUP_F_TERM, sp->pty->term);
    }
  int rc = send_w (c);
  /* The script follows on its own pipe (backend.h): never in argv. */
  if (rc == 0 && sp->script)
    rc = send_chunks (c, SUP_SCRIPT, sp->job, sp->script, sp->script_len, true);
  if (rc < 0)
    *err = xprintf ("cannot start the command: %s", strerror (-rc));
  return rc;
}

int
sup_client_write_stdin (struct sup_client *c, uint32_t job, const void *data,
                        size_t n, bool eof)
{
  return send_chunks (c, SUP_STDIN, job, data, n, eof);
}

int
sup_client_signal (struct sup_client *c, uint32_t job, int sig)
{
  sup_begin (&c->w, SUP_SIGNAL);
  sup_put_u32 (&c->w, SUP_F_JOB, job);
  sup_put_u32 (&c->w, SUP_F_SIGNAL, (uint32_t) sig);
  return send_w (c);
}

int
sup_client_resize (struct sup_client *c, uint32_t job, unsigned rows, unsigned cols)
{
  sup_begin (&c->w, SUP_RESIZE);
  sup_put_u32 (&c->w, SUP_F_JOB, job);
  sup_put_u32 (&c->w, SUP_F_ROWS, rows);
  sup_put_u32 (&c->w, SUP_F_COLS, cols);
  return send_w (c);
}

int
sup_client_ping (struct sup_client *c)
{
  sup_begin (&c->w, SUP_PING);
  return send_w (c);
}

int
sup_client_next_event (struct sup_client *c, struct backend_event *ev,
                       const char **why)
{
  ssize_t n = recv (c->fd, c->buf, sizeof c->buf, MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return 0;
  if (n <= 0)
    return *why = "the sandbox's supervisor exited", -1;
  const char *bad;
  if ((size_t) n > sizeof c->buf || sup_decode (c->buf, (size_t) n, &c->msg, &bad) < 0)
    return *why = "the supervisor sent a malformed message", -1;
  struct sup_msg *m = &c->msg;
  *ev = (struct backend_event){ .job = m->job };
  switch (m->type)
    {
    case SUP_STARTED:
      ev->type = BACKEND_STARTED;
      ev->pid = m->pid;
      return 1;
    case SUP_OUTPUT:
      ev->type = BACKEND_OUTPUT;
      ev->stream = (int) m->stream;
      ev->data = m->data;
      ev->len = m->data_len;
      return 1;
    case SUP_EXITED:
      ev->type = BACKEND_EXITED;
      ev->exit_code = (int) m->exit_code;
      ev->signal = SUP_HAS (m, SUP_F_SIGNAL) ? (int) m->signal : 0;
      return 1;
    case SUP_ERROR:
      ev->type = BACKEND_ERROR;
      ev->message = m->message;
      return 1;
    case SUP_PONG:
      return SUP_CLIENT_PONG;
    default:
      return *why = "the supervisor sent a request", -1;
    }
}
