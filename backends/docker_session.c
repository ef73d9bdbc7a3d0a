/* SPDX-License-Identifier: MIT */
/* The docker backend's sessions (see docker_session.h).
 *
 * A session is one container (docker_container.c) whose pid 1 is
 * airlock-supervisor, as in a local session's sandbox, and each command is
 * a job of that supervisor: the same protocol (supervisor_client.c), the
 * same kill path, the same exits.  No engine exec per command: runc's exec
 * alone costs more than most commands.  The engine is asked only to make,
 * restart, inspect and remove the container.
 *
 * The supervisor reaches us through a unix socket in a directory of the
 * session's, under the daemon's runtime directory (0700 and ours, checked
 * by runtime_dir(): no other user of this host gets in), bind-mounted
 * read-only into the container.  We listen and the supervisor connects,
 * rather than the other way round, because:
 *  - the container may run as another uid (docker.user: root without
 *    capabilities has no DAC override either), which could not create a
 *    socket in our directory but can connect to one through a read-only
 *    mount; and nothing in the container can write there, so it plants no
 *    file in our runtime directory;
 *  - who connected is the kernel's word: SO_PEERCRED's pid must be the
 *    container's pid 1 as the engine reports it (State.Pid).  Code in the
 *    container has the supervisor's uid and can reach the socket, but is
 *    never its pid 1; and we listen only while a supervisor is awaited (at
 *    open, and after the container restarted).  The supervisor checks us
 *    likewise: its peer must be outside its pid namespace;
 *  - a container restarted (on reuse, or behind our back) gets a new
 *    supervisor that simply connects again.
 *
 * Faults: the connection ends when the container stops, is removed or
 * restarted (dockerd stopping stops it): every running job then ends with
 * an error naming what became of the container (container_fate), and the
 * next command reconnects to a restarted container's new supervisor, or
 * makes a new container, once, and says so; the session's first command,
 * its bootstrap (a login shell), is replayed first; the shell state is
 * the session layer's and carries on.  A dockerd killed outright costs
 * nothing: the container and the connection live on without it.  A daemon that dies closes the
 * connection: the supervisor kills every job's tree and waits for the
 * next daemon (which restarts the container before it reuses it).
 *
 * event_fd is an epoll descriptor over the supervisor's connection and an
 * eventfd for what the backend says itself (lost jobs, notes). */
#define _GNU_SOURCE
#include "docker_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "docker_container.h"
#include "cgroup_oom.h"
#include "posture.h"
#include "supervisor_client.h"
#include "xprintf.h"
#include "monotonic_ms.h"

#define SETUP_TIMEOUT_MS 30000
#define BOOTSTRAP_REPLAY_MS 30000
#define INTERNAL_JOB UINT32_MAX
/* The socket's name in the control directory (SUP_CONTAINER_DIR inside). */
#define SOCKET_NAME (SUP_CONTAINER_SOCKET + sizeof SUP_CONTAINER_DIR)

struct backend_session {
  struct docker_container c;
  char *session;
  int ep, wake;
  int dir_fd;            /* the control directory (O_PATH) */
  int listen_fd;         /* while a supervisor is awaited, else -1 */
  long sup_pid;          /* the connected supervisor's pid on this host */
  struct sup_client sup; /* sup.fd -1: not connected */
  uint32_t live[SUP_MAX_JOBS]; /* jobs started and not ended */
  size_t n_live;
  uint32_t orphans[2 * SUP_MAX_JOBS]; /* jobs to end with orphan_why */
  size_t n_orphans;
  char *orphan_why;
  uint32_t note_job;     /* said on its stderr before its output */
  char *note, *said;     /* said: the note handed out last */
  /* The first command of a session is its bootstrap (session.c runs it
   * before handing the session out): replayed in a new or restarted
   * container, so the shell state directory and the starting directory
   * exist. */
  char **boot_argv, **boot_env;
  char *boot_script;
  size_t boot_script_len;
  int oom_fd; /* the container's memory cgroup's OOM count, or -1 */
};

static void
wake_up (struct backend_session *s)
{
  uint64_t one = 1;
  if (write (s->wake, &one, sizeof one) < 0)
    {
      /* an eventfd cannot overflow at 1 */
    }
}

static void
forget_job (struct backend_session *s, uint32_t job)
{
  for (size_t i = 0; i < s->n_live; i++)
    if (s->live[i] == job)
      {
        s->live[i] = s->live[--s->n_live];
        return;
      }
}

static char **
copy_strv (const char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  char **c = calloc (n + 1, sizeof *c);
  for (size_t i = 0; c && i < n; i++)
    if (!(c[i] = strdup (v[i])))
      return c; /* shorter: harmless for a replay */
  return c;
}

static void
free_strv (char **v)
{
  for (char **p = v; p && *p; p++)
    free (*p);
  free (v);
}

/* GET /containers/ID/json: 0 with *r (any status), -1 with *err. */
static int
inspect_container (struct backend_session *s, struct docker_response *r, char **err)
{
  char *path = xprintf ("/containers/%s/json", s->c.id);
  int rc = path ? docker_call (s->c.eng, "GET", path, NULL, r, err) : -1;
  free (path);
  return rc < 0 ? -1 : 0;
}

/* What became of the session's container: NULL while it runs, else a
 * sentence naming the cause (malloc'd).  *status: the engine's answer (-1:
 * none); *pid: its pid 1 on this host while it runs, else 0.  Either
 * pointer may be NULL. */
static char *
container_fate_of (struct backend_session *s, long *status, long *pid)
{
  struct docker_response r;
  char *err = NULL, *fate;
  long st_, pid_;
  status = status ? status : &st_;
  pid = pid ? pid : &pid_;
  *status = -1;
  *pid = 0;
  if (inspect_container (s, &r, &err) < 0)
    {
      fate = xprintf ("the Docker engine at %s does not answer (%s): dockerd "
                      "stopped or is restarting, and its containers stop with "
                      "it unless live-restore is on",
                      docker_engine_socket (s->c.eng), err ? err : "?");
      free (err);
      return fate;
    }
  *status = r.status;
  const cJSON *st = cJSON_GetObjectItemCaseSensitive (r.json, "State");
  const cJSON *p1 = cJSON_GetObjectItemCaseSensitive (st, "Pid");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive (st, "ExitCode");
  const cJSON *at = cJSON_GetObjectItemCaseSensitive (st, "FinishedAt");
  const cJSON *why = cJSON_GetObjectItemCaseSensitive (st, "Error");
  if (r.status == 404)
    fate = xprintf ("container %s is gone (removed)", s->c.name);
  else if (r.status != 200)
    fate = xprintf ("container %s cannot be inspected: %s", s->c.name,
                    docker_response_message (&r));
  else if (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (st, "Running")))
    {
      fate = NULL;
      *pid = cJSON_IsNumber (p1) ? (long) p1->valuedouble : 0;
    }
  else
    fate = xprintf ("the Docker engine at %s stopped container %s (exit "
                    "code %d%s%s%s%s%s): dockerd stopped or restarted (its "
                    "containers stop with it unless live-restore is on), or "
                    "someone stopped the container",
                    docker_engine_socket (s->c.eng), s->c.name,
                    cJSON_IsNumber (code) ? code->valueint : -1,
                    cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (st, "OOMKilled"))
                        ? ", out of memory" : "",
                    cJSON_IsString (at) ? ", at " : "",
                    cJSON_IsString (at) ? at->valuestring : "",
                    cJSON_IsString (why) && *why->valuestring ? ": " : "",
                    cJSON_IsString (why) ? why->valuestring : "");
  docker_response_free (&r);
  return fate;
}

static char *
container_fate (struct backend_session *s)
{
  return container_fate_of (s, NULL, NULL);
}

/* ---- the supervisor's socket ---- */

/* The control directory, as the container sees it at SUP_CONTAINER_DIR:
 * a real directory of ours (docker_container_plan made it). */
static int
open_control_dir (struct backend_session *s, char **err)
{
  struct stat st;
  s->dir_fd = open (s->c.control_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (s->dir_fd < 0 || fstat (s->dir_fd, &st) < 0 || st.st_uid != getuid ())
    {
      *err = xprintf ("cannot use the session's directory %s: %s", s->c.control_dir,
                      s->dir_fd < 0 ? strerror (errno) : "not ours");
      return -1;
    }
  return 0;
}

/* Listen at the socket the container's supervisor connects to.  Bound
 * through /proc/self/fd: the runtime directory's path may be longer than
 * a socket address holds.  Mode 0666 (the directory 0711): the container
 * may run as another uid; the runtime directory keeps the host's other
 * users out, the peer check the container's other processes. */
static int
listen_open (struct backend_session *s, char **err)
{
  if (s->listen_fd >= 0)
    return 0;
  unlinkat (s->dir_fd, SOCKET_NAME, 0);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", s->dir_fd, SOCKET_NAME);
  int fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0
      || fchmodat (s->dir_fd, SOCKET_NAME, 0666, 0) < 0 || listen (fd, 8) < 0)
    {
      *err = xprintf ("cannot listen for the supervisor in %s: %s", s->c.control_dir,
                      strerror (errno));
      if (fd >= 0)
        close (fd);
      return -1;
    }
  s->listen_fd = fd;
  return 0;
}

static void
listen_close (struct backend_session *s)
{
  if (s->listen_fd < 0)
    return;
  close (s->listen_fd);
  s->listen_fd = -1;
  unlinkat (s->dir_fd, SOCKET_NAME, 0);
}

/* Wait for the container's pid 1 to connect; anything else that connects
 * meanwhile is turned away.  0, or -1 with *err. */
static int
accept_supervisor (struct backend_session *s, char **err)
{
  long long now = monotonic_ms (), until = now + SETUP_TIMEOUT_MS, check_at = now + 1000;
  for (;;)
    {
      int fd = accept4 (s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0)
        {
          struct ucred cred;
          socklen_t len = sizeof cred;
          long pid = 0;
          char *fate = container_fate_of (s, NULL, &pid);
          free (fate);
          if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && pid > 0
              && cred.pid == pid)
            {
              struct epoll_event e = { .events = EPOLLIN, .data.fd = fd };
              epoll_ctl (s->ep, EPOLL_CTL_ADD, fd, &e);
              s->sup.fd = fd;
              s->sup_pid = pid;
              return 0;
            }
          fprintf (stderr, "airlock: session %s: a connection from pid %ld, not the "
                   "container's pid 1 (%ld), turned away\n", s->session,
                   (long) cred.pid, pid);
          close (fd);
          continue;
        }
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        {
          *err = xprintf ("cannot accept the supervisor's connection: %s", strerror (errno));
          return -1;
        }
      now = monotonic_ms ();
      if (now >= until)
        {
          *err = xprintf ("the supervisor of container %s did not connect within %d s",
                          s->c.name, SETUP_TIMEOUT_MS / 1000);
          return -1;
        }
      if (now >= check_at)
        {
          char *fate = container_fate (s);
          if (fate)
            {
              *err = xprintf ("the container's supervisor did not start: %s", fate);
              free (fate);
              return -1;
            }
          check_at = monotonic_ms () + 1000;
        }
      struct pollfd p = { .fd = s->listen_fd, .events = POLLIN };
      poll (&p, 1, (int) ((check_at < until ? check_at : until) - now));
    }
}

static void
hang_up (struct backend_session *s)
{
  if (s->sup.fd < 0)
    return;
  epoll_ctl (s->ep, EPOLL_CTL_DEL, s->sup.fd, NULL);
  close (s->sup.fd); /* the supervisor kills what it ran for us */
  s->sup.fd = -1;
}

/* The supervisor's connection ended (why): its running jobs end as lost,
 * with what became of the container. */
static void
disconnect (struct backend_session *s, const char *why)
{
  hang_up (s);
  if (s->n_live == 0)
    return;
  /* The engine may not have noticed yet that pid 1 is gone: a moment. */
  long status, pid;
  char *fate = NULL;
  for (int i = 0;; i++)
    {
      free (fate);
      fate = container_fate_of (s, &status, &pid);
      if (fate || pid != s->sup_pid || i == 10)
        break;
      poll (NULL, 0, 100);
    }
  const char *sock = docker_engine_socket (s->c.eng);
  free (s->orphan_why);
  if (status < 0)
    s->orphan_why = xprintf ("the Docker engine went away while the command ran "
                             "(dockerd at %s stopped or restarted?): %s", sock, fate);
  else if (fate)
    s->orphan_why = xprintf ("the command did not end by itself: %s", fate);
  else if (pid != s->sup_pid)
    s->orphan_why = xprintf ("the command did not end by itself: container %s was "
                             "restarted (docker restart?), which ends every process "
                             "in it", s->c.name);
  else
    s->orphan_why = xprintf ("the job was lost: %s (container %s)", why, s->c.name);
  free (fate);
  size_t room = sizeof s->orphans / sizeof *s->orphans - s->n_orphans;
  size_t n = s->n_live < room ? s->n_live : room;
  memcpy (s->orphans + s->n_orphans, s->live, n * sizeof *s->live);
  s->n_orphans += n;
  s->n_live = 0;
  wake_up (s);
}

/* Run the bootstrap to its end, ignoring its output. */
static int
replay_bootstrap (struct backend_session *s, char **err)
{
  struct backend_spawn sp = { .job = INTERNAL_JOB,
                              .argv = (const char *const *) s->boot_argv,
                              .envp = (const char *const *) s->boot_env, .cwd = "/",
                              .script = s->boot_script, .script_len = s->boot_script_len };
  if (sup_client_spawn (&s->sup, &sp, err) < 0)
    return -1;
  long long until = monotonic_ms () + BOOTSTRAP_REPLAY_MS;
  for (;;)
    {
      struct backend_event ev;
      const char *why;
      int r = sup_client_next_event (&s->sup, &ev, &why);
      if (r < 0)
        {
          *err = xprintf ("the session's shell could not start again: %s", why);
          return -1;
        }
      if (r == 1 && ev.job == INTERNAL_JOB
          && (ev.type == BACKEND_EXITED || ev.type == BACKEND_ERROR))
        {
          if (ev.type == BACKEND_EXITED && !ev.exit_code && !ev.signal)
            return 0;
          *err = xprintf ("the session's shell could not start again in the container");
          return -1;
        }
      if (r == 1)
        continue;
      long long left = until - monotonic_ms ();
      struct pollfd p = { .fd = s->sup.fd, .events = POLLIN };
      if (left <= 0 || poll (&p, 1, (int) left) == 0)
        {
          *err = xprintf ("the session's shell did not start again within %d s",
                          BOOTSTRAP_REPLAY_MS / 1000);
          return -1;
        }
    }
}

/* A new container, same request; its supervisor connected. */
static int
recreate (struct backend_session *s, char **err)
{
  fprintf (stderr, "airlock: session %s: container %s is gone or stopped; creating "
           "it again\n", s->session, s->c.name);
  docker_container_remove (&s->c); /* a stopped one; a gone one is a no-op */
  int rc = listen_open (s, err) == 0 && docker_container_create (&s->c, err) == 0
               ? accept_supervisor (s, err) : -1;
  listen_close (s);
  return rc;
}

/* Not connected: the container stopped, vanished or restarted since (or
 * its supervisor broke the protocol).  Connect to a running container's
 * supervisor again, else make the container anew, once; then replay the
 * bootstrap.  *note says what happened, for the command's stderr. */
static int
reconnect (struct backend_session *s, char **note, char **err)
{
  long status, pid;
  char *fate = container_fate_of (s, &status, &pid);
  if (status < 0)
    {
      *err = xprintf ("the container of session %s cannot be reached: %s", s->session, fate);
      free (fate);
      return -1;
    }
  int rc = -1;
  bool restarted = false;
  if (!fate)
    {
      /* Running: its supervisor (a new one after a restart) connects
       * again as soon as we listen. */
      restarted = pid != s->sup_pid;
      rc = listen_open (s, err) == 0 ? accept_supervisor (s, err) : -1;
      listen_close (s);
      if (rc < 0)
        {
          fprintf (stderr, "airlock: session %s: %s\n", s->session, *err);
          free (*err);
          *err = NULL;
          fate = xprintf ("its supervisor did not connect again");
        }
    }
  if (rc < 0)
    rc = recreate (s, err);
  if (rc == 0 && s->boot_argv)
    rc = replay_bootstrap (s, err);
  if (rc < 0)
    {
      char *why = *err;
      *err = xprintf ("the container of session %s %s and could not be made to work "
                      "again: %s%s%s", s->session, status == 404 ? "vanished" : "stopped",
                      why ? why : "?", fate ? "; before: " : "", fate ? fate : "");
      free (why);
      free (fate);
      hang_up (s);
      return -1;
    }
  if (!fate)
    *note = xprintf ("airlock: the container of session %s %s; its processes and the "
                     "files of its tmpfs mounts (/tmp, /var/tmp, /run) are gone\n", s->session,
                     restarted ? "had been restarted" : "lost its supervisor's connection");
  else
    *note = xprintf ("airlock: the container of session %s had %s%s%s%s; a new one "
                     "was created (files and processes of the old one are gone)\n",
                     s->session, status == 404 ? "vanished" : "stopped",
                     status != 404 ? " (" : "", status != 404 ? fate : "",
                     status != 404 ? ")" : "");
  free (fate);
  return 0;
}

/* ---- the backend's operations ---- */

static int
docker_spawn (struct backend_session *s, const struct backend_spawn *sp,
              char **err)
{
  if (s->n_live >= SUP_MAX_JOBS)
    {
      *err = xprintf ("too many jobs (%d)", SUP_MAX_JOBS);
      return -1;
    }
  char *note = NULL;
  if (s->sup.fd < 0 && reconnect (s, &note, err) < 0)
    return -1;
  int rc = sup_client_spawn (&s->sup, sp, err);
  if ((rc == -EPIPE || rc == -ECONNRESET) && !note)
    {
      /* It went just now, before we read its end: once more, in a
       * container that works. */
      free (*err);
      *err = NULL;
      disconnect (s, "the container's supervisor exited");
      if (reconnect (s, &note, err) < 0)
        return -1;
      rc = sup_client_spawn (&s->sup, sp, err);
    }
  if (rc < 0)
    {
      free (note);
      return -1;
    }
  s->live[s->n_live++] = sp->job;
  if (note)
    {
      free (s->note);
      s->note = note;
      s->note_job = sp->job;
      wake_up (s);
    }
  if (!s->boot_argv)
    {
      s->boot_argv = copy_strv (sp->argv);
      s->boot_env = copy_strv (sp->envp);
      if (sp->script && (s->boot_script = malloc (sp->script_len ? sp->script_len : 1)))
        {
          memcpy (s->boot_script, sp->script, sp->script_len);
          s->boot_script_len = sp->script_len;
        }
    }
  return 0;
}

static int
docker_write_stdin (struct backend_session *s, uint32_t job, const void *data,
                    size_t n, bool eof)
{
  if (s->sup.fd < 0)
    return -ESRCH;
  return sup_client_write_stdin (&s->sup, job, data, n, eof);
}

/* A terminal job's window size.  The supervisor opened its terminal in
 * the container's own devpts instance (runc mounts a new one at /dev/pts
 * in every container, ptmxmode 0666, so any uid opens /dev/pts/ptmx), and
 * our seccomp profile leaves every terminal ioctl but TIOCSTI and
 * TIOCLINUX (docker_seccomp.c). */
static int
docker_resize (struct backend_session *s, uint32_t job, unsigned rows, unsigned cols)
{
  if (s->sup.fd < 0)
    return -ESRCH;
  return sup_client_resize (&s->sup, job, rows, cols);
}

static int
docker_signal (struct backend_session *s, uint32_t job, int sig)
{
  if (s->sup.fd < 0)
    return -ESRCH;
  return sup_client_signal (&s->sup, job, sig);
}

static int
docker_next_event (struct backend_session *s, struct backend_event *ev,
                   char **err)
{
  (void) err; /* never lost as a whole: the next command recreates */
  uint64_t v;
  if (read (s->wake, &v, sizeof v) < 0 && errno != EAGAIN)
    return 0;
  for (;;)
    {
      if (s->note)
        {
          free (s->said);
          s->said = s->note;
          s->note = NULL;
          *ev = (struct backend_event){ .type = BACKEND_OUTPUT, .job = s->note_job,
                                        .stream = 2, .data = (const uint8_t *) s->said,
                                        .len = strlen (s->said) };
          return 1;
        }
      if (s->n_orphans)
        {
          *ev = (struct backend_event){ .type = BACKEND_ERROR,
                                        .job = s->orphans[--s->n_orphans],
                                        .message = s->orphan_why };
          fprintf (stderr, "airlock: session %s, job %u: %s\n", s->session, ev->job,
                   s->orphan_why);
          return 1;
        }
      if (s->sup.fd < 0)
        return 0;
      const char *why;
      int r = sup_client_next_event (&s->sup, ev, &why);
      if (r < 0)
        {
          disconnect (s, why);
          continue;
        }
      if (r != 1)
        return 0;
      if (ev->type == BACKEND_EXITED || (ev->type == BACKEND_ERROR && ev->job))
        forget_job (s, ev->job);
      return 1;
    }
}

static int
docker_event_fd (struct backend_session *s)
{
  return s->ep;
}

/* The container's fate when it is not running, with the cause. */
static int
docker_health (struct backend_session *s, char **err)
{
  *err = container_fate (s);
  return *err ? -1 : 0;
}

static void
docker_reach (struct backend_session *s, struct backend_reach *r)
{
  r->host_filesystem = s->c.host_access;
  r->host_network = false; /* bridge or none: never the host's namespace */
  r->isolated = true;
}

static bool
has_opt (const cJSON *list, const char *a, const char *b)
{
  const cJSON *o;
  cJSON_ArrayForEach (o, list)
    if (cJSON_IsString (o) && (!strcmp (o->valuestring, a) || (b && !strcmp (o->valuestring, b))))
      return true;
  return false;
}

static bool
mode_is (const cJSON *hc, const char *key, const char *value)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (hc, key);
  return cJSON_IsString (v) && !strcmp (v->valuestring, value);
}

/* What the engine says it set up (the container's HostConfig), then
 * checked on its first process where this host's /proc shows it. */
static int
docker_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  struct docker_response r;
  if (inspect_container (s, &r, err) < 0)
    return -1;
  int rc;
  const cJSON *hc = cJSON_GetObjectItemCaseSensitive (r.json, "HostConfig");
  const cJSON *sec = cJSON_GetObjectItemCaseSensitive (hc, "SecurityOpt");
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive (hc, "CapAdd");
  bool privileged = cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (hc, "Privileged"));
  size_t n = 0;
  p->namespaces[n++] = "mount";
  if (!mode_is (hc, "PidMode", "host"))
    p->namespaces[n++] = "pid";
  if (!mode_is (hc, "IpcMode", "host"))
    p->namespaces[n++] = "ipc";
  if (!mode_is (hc, "UTSMode", "host"))
    p->namespaces[n++] = "uts";
  if (!mode_is (hc, "NetworkMode", "host"))
    p->namespaces[n++] = "net";
  if (mode_is (hc, "CgroupnsMode", "private"))
    p->namespaces[n++] = "cgroup";
  p->namespaces[n] = NULL;
  p->isolation = "container";
  p->seccomp = !privileged && !has_opt (sec, "seccomp=unconfined", "seccomp:unconfined");
  p->no_new_privs = has_opt (sec, "no-new-privileges", "no-new-privileges:true");
  p->capabilities = privileged || cJSON_GetArraySize (caps) ? -1 : 0;
  p->network = mode_is (hc, "NetworkMode", "none") ? "none"
               : mode_is (hc, "NetworkMode", "host") ? "host" : "bridge";
  p->privilege = "docker-engine";
  const cJSON *pid = cJSON_GetObjectItemCaseSensitive (
      cJSON_GetObjectItemCaseSensitive (r.json, "State"), "Pid");
  rc = r.status == 200 ? 0 : -1;
  if (rc < 0)
    *err = xprintf ("cannot inspect container %s (HTTP %ld)", s->c.name, (long) r.status);
  else if (cJSON_IsNumber (pid) && pid->valueint > 0)
    {
      rc = posture_verify ((pid_t) pid->valueint, p, err);
      if (s->oom_fd < 0)
        s->oom_fd = cgroup_oom_open ((pid_t) pid->valueint);
    }
  docker_response_free (&r);
  return rc;
}

/* A container always has a memory cgroup of its own. */
static long long
docker_oom_kills (struct backend_session *s)
{
  return cgroup_oom_kills (s->oom_fd);
}

static void
docker_close (struct backend_session *s)
{
  if (s->oom_fd >= 0)
    close (s->oom_fd);
  hang_up (s);
  if (s->c.id)
    docker_container_remove (&s->c);
  if (s->dir_fd >= 0)
    {
      listen_close (s);
      unlinkat (s->dir_fd, SOCKET_NAME, 0);
      close (s->dir_fd);
      if (s->c.control_dir)
        rmdir (s->c.control_dir);
    }
  docker_container_clear (&s->c);
  if (s->ep >= 0)
    close (s->ep);
  if (s->wake >= 0)
    close (s->wake);
  free_strv (s->boot_argv);
  free_strv (s->boot_env);
  free (s->boot_script);
  free (s->orphan_why);
  free (s->note);
  free (s->said);
  free (s->session);
  free (s);
}

static const struct backend_ops docker_ops = {
  .name = "docker",
  .signal = docker_signal,
  .spawn = docker_spawn,
  .write_stdin = docker_write_stdin,
  .resize = docker_resize,
  .event_fd = docker_event_fd,
  .next_event = docker_next_event,
  .health = docker_health,
  .reach = docker_reach,
  .posture = docker_posture,
  .oom_kills = docker_oom_kills,
  .close = docker_close,
};

const struct backend_ops *
docker_session_ops (void)
{
  return &docker_ops;
}

const char *
docker_session_risk_reasons (struct backend_session *s)
{
  return s->c.reasons;
}

const char *
docker_session_warning (struct backend_session *s)
{
  return s->c.warning;
}

struct backend_session *
docker_session_open (const struct docker_session_options *o, char **cwd,
                     char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s || !(s->session = strdup (o->session)))
    {
      free (s);
      *err = xprintf ("out of memory");
      return NULL;
    }
  s->oom_fd = -1;
  s->dir_fd = s->listen_fd = s->sup.fd = -1;
  s->ep = epoll_create1 (EPOLL_CLOEXEC);
  s->wake = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event e = { .events = EPOLLIN, .data.fd = s->wake };
  bool up = false;
  if (s->ep < 0 || s->wake < 0 || epoll_ctl (s->ep, EPOLL_CTL_ADD, s->wake, &e) < 0)
    *err = xprintf ("epoll: %s", strerror (errno));
  else if (docker_container_plan (&s->c, o, err) == 0 && open_control_dir (s, err) == 0
           && listen_open (s, err) == 0 && docker_container_up (&s->c, err) == 0)
    {
      up = true;
      accept_supervisor (s, err);
    }
  listen_close (s);
  if (*err)
    {
      if (!up)
        {
          free (s->c.id); /* up() removed what it made: nothing to remove */
          s->c.id = NULL;
        }
      docker_close (s);
      return NULL;
    }
  *cwd = strdup (o->mount_workdir ? o->workdir : "/");
  return s;
}
