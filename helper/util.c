/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int channel_fd = -1;

/* One writer is enough: the helper is single-threaded and each process
 * (monitor, sandbox init) builds one message at a time. */
static struct al_writer writer;

bool
channel_send (struct al_writer *w, int fd)
{
  size_t n = al_finish (w);
  if (n == 0 || channel_fd < 0)
    return false;
  struct iovec iov = { .iov_base = w->buf, .iov_len = n };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE (sizeof (int))];
  } ctl;
  if (fd >= 0)
    {
      mh.msg_control = ctl.buf;
      mh.msg_controllen = sizeof ctl.buf;
      struct cmsghdr *c = CMSG_FIRSTHDR (&mh);
      *c = (struct cmsghdr) { .cmsg_len = CMSG_LEN (sizeof fd),
                              .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS };
      memcpy (CMSG_DATA (c), &fd, sizeof fd);
    }
  ssize_t r;
  do
    r = sendmsg (channel_fd, &mh, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  return r == (ssize_t) n;
}

noreturn void
fail (enum al_step step, int err, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);

  struct al_writer *w = &writer;
  al_begin (w, AL_MSG_REPORT);
  al_put_u32 (w, AL_F_EVENT, AL_EV_SETUP_FAILED);
  al_put_u32 (w, AL_F_STEP, step);
  al_put_u32 (w, AL_F_ERRNO, (uint32_t) err);
  al_put_str (w, AL_F_MESSAGE, msg);
  if (!channel_send (w, -1))
    {
      /* No broker to tell: stderr is the only place left.  fd 2 is valid
       * (sanitize_process() reopened it on /dev/null if it was closed). */
      if (err)
        dprintf (2, "airlock-helper: %s: %s: %s\n", al_step_name (step), msg,
                 strerror (err));
      else
        dprintf (2, "airlock-helper: %s: %s\n", al_step_name (step), msg);
    }
  _exit (EXIT_SETUP_FAILED);
}

bool
write_all (int fd, const void *buf, size_t n)
{
  const char *p = buf;
  while (n > 0)
    {
      ssize_t r = write (fd, p, n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return false;
      p += r;
      n -= (size_t) r;
    }
  return true;
}

int
write_knob (int dirfd, const char *name, const char *value)
{
  int fd = openat (dirfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = write_all (fd, value, strlen (value)) ? 0 : -errno;
  if (rc == 0 && close (fd) < 0)
    return -errno;
  if (rc < 0)
    close (fd);
  return rc;
}
