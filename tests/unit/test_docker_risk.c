/* SPDX-License-Identifier: MIT */
/* Unit tests for the Docker host-access judgment (policy/docker_risk.c).
 *
 * One table of container configurations, each with the expected answer
 * and words its reasons must contain; then the socket-exposure cases that
 * need real paths (a symlinked socket directory in a temporary directory),
 * and the rule that every reason is listed, "; "-separated. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker_risk.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))
#define OPTS(...) ((const char *const[]) { __VA_ARGS__, NULL })
#define SOCK "/var/run/docker.sock"

struct risk_case
{
  const char *name;
  bool has_mount;
  struct docker_mount_fact mount;
  bool privileged, pid, net, ipc, uts, userns;
  const char *const *caps;
  const char *const *devices;
  bool expect;
  const char *why[3];   /* substrings the reasons must contain */
};

#define MOUNT(src, tgt) .has_mount = true, .mount = { .source = (src), \
                                                      .target = (tgt) }
#define VOLUME(src, drv, opts) .has_mount = true, \
  .mount = { .source = (src), .target = "/data", .driver = (drv), \
             .driver_opts = (opts) }

static const struct risk_case cases[] = {
  /* nothing at all */
  { "plain container", .expect = false },
  /* every spelling of a host path */
  { "absolute path", MOUNT ("/home/u", "/w"), .expect = true,
    .why = { "volume /home/u:/w binds a host path" } },
  { "tilde", MOUNT ("~", "/w"), .expect = true, .why = { "~:/w" } },
  { "tilde subdir", MOUNT ("~/src", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "tilde user", MOUNT ("~alice/src", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "dot slash", MOUNT ("./build", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "dot dot slash", MOUNT ("../up", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "dot", MOUNT (".", "/w"), .expect = true, .why = { "binds" } },
  { "dot dot", MOUNT ("..", "/w"), .expect = true, .why = { "binds" } },
  { "windows backslash", MOUNT ("C:\\Users\\u", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "windows slash", MOUNT ("d:/work", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "leading blank", MOUNT ("  /etc", "/w"), .expect = true,
    .why = { "binds a host path" } },
  { "unc share", MOUNT ("\\\\server\\share", "/w"), .expect = true,
    .why = { "binds a host path" } },
  /* named volumes */
  { "volume does not exist yet", VOLUME ("cache", NULL, NULL),
    .expect = false },
  { "local volume, no options", VOLUME ("cache", "local", NULL),
    .expect = false },
  { "local volume, empty options", VOLUME ("cache", "local", OPTS (NULL)),
    .expect = false },
  { "tmpfs volume", VOLUME ("scratch", "local",
                            OPTS ("type=tmpfs", "device=tmpfs",
                                  "o=size=100m,uid=1000")),
    .expect = false },
  { "bind volume type none", VOLUME ("src", "local",
                                     OPTS ("type=none", "o=bind",
                                           "device=/srv/src")),
    .expect = true, .why = { "volume src:/data binds host path /srv/src" } },
  { "rbind without type", VOLUME ("src", "local",
                                  OPTS ("o=ro,rbind", "device=/srv")),
    .expect = true, .why = { "binds host path /srv" } },
  { "type none without o", VOLUME ("src", "local",
                                   OPTS ("type=none", "device=/opt")),
    .expect = true, .why = { "binds host path /opt" } },
  { "bind of the socket dir", VOLUME ("run", "local",
                                      OPTS ("type=none", "o=bind",
                                            "device=/run")),
    .expect = true, .why = { "binds host path /run",
                             "exposes the Docker socket" } },
  { "host block device", VOLUME ("disk", "local",
                                 OPTS ("type=ext4", "device=/dev/sdb1")),
    .expect = true, .why = { "binds host path /dev/sdb1" } },
  { "o=bindx is not bind", VOLUME ("v", "local",
                                   OPTS ("type=tmpfs", "o=bindx")),
    .expect = false },
  { "remote nfs", VOLUME ("nfs", "local",
                          OPTS ("type=nfs", "o=addr=10.0.0.5,rw",
                                "device=:/export")),
    .expect = false },
  { "nfs served by this host", VOLUME ("nfs", "local",
                                       OPTS ("type=nfs",
                                             "o=addr=127.0.0.1,rw",
                                             "device=:/export")),
    .expect = true, .why = { "served by this host" } },
  { "cifs to localhost", VOLUME ("smb", "local",
                                 OPTS ("type=cifs", "device=//localhost/s")),
    .expect = true, .why = { "served by this host" } },
  { "remote cifs", VOLUME ("smb", "local",
                           OPTS ("type=cifs", "device=//files.lan/s",
                                 "o=username=u")),
    .expect = false },
  { "overlay cannot be judged", VOLUME ("ov", "local",
                                        OPTS ("type=overlay",
                                              "o=lowerdir=/etc")),
    .expect = true, .why = { "file system type 'overlay'" } },
  { "unknown local option", VOLUME ("v", "local", OPTS ("copy=yes")),
    .expect = true, .why = { "driver option 'copy'", "cannot be judged" } },
  { "option without value", VOLUME ("v", "local", OPTS ("type")),
    .expect = true, .why = { "without a value" } },
  { "plugin driver", VOLUME ("shared", "rexray", NULL), .expect = true,
    .why = { "driver 'rexray'", "cannot be judged" } },
  { "not a volume name", MOUNT ("src/dir", "/w"), .expect = true,
    .why = { "neither a host path nor a volume name" } },
  { "anonymous volume", MOUNT ("", "/w"), .expect = false },
  /* socket exposure by host path */
  { "the socket itself", MOUNT (SOCK, "/var/run/docker.sock"),
    .expect = true, .why = { "binds a host path",
                             "exposes the Docker socket" } },
  { "the root", MOUNT ("/", "/host"), .expect = true,
    .why = { "exposes the Docker socket" } },
  { "/var", MOUNT ("/var", "/v"), .expect = true,
    .why = { "exposes the Docker socket" } },
  { "/var/run", MOUNT ("/var/run", "/r"), .expect = true,
    .why = { "exposes the Docker socket" } },
  { "/run", MOUNT ("/run/", "/r"), .expect = true,
    .why = { "exposes the Docker socket" } },
  { "/run/user does not", MOUNT ("/run/user", "/r"), .expect = true,
    .why = { "binds a host path" } },
  /* flags */
  { "privileged", .privileged = true, .expect = true,
    .why = { "privileged" } },
  { "pid host", .pid = true, .expect = true, .why = { "pid=host" } },
  { "network host", .net = true, .expect = true, .why = { "network=host" } },
  { "ipc host", .ipc = true, .expect = true, .why = { "ipc=host" } },
  { "uts host", .uts = true, .expect = true, .why = { "uts=host" } },
  { "userns host", .userns = true, .expect = true,
    .why = { "userns=host" } },
  { "one capability", .caps = OPTS ("NET_RAW"), .expect = true,
    .why = { "capabilities added: NET_RAW" } },
  { "several capabilities", .caps = OPTS ("SYS_ADMIN", "NET_ADMIN"),
    .expect = true, .why = { "capabilities added: SYS_ADMIN, NET_ADMIN" } },
  { "empty capability list", .caps = OPTS (NULL), .expect = false },
  { "a device", .devices = OPTS ("/dev/fuse"), .expect = true,
    .why = { "host devices: /dev/fuse" } },
};

static void
test_table (void **state)
{
  (void) state;
  assert_true (N_ELEMENTS (cases) >= 30);
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      const struct risk_case *c = &cases[i];
      struct docker_risk_facts f = {
        .mounts = c->has_mount ? &c->mount : NULL,
        .n_mounts = c->has_mount ? 1 : 0,
        .privileged = c->privileged,
        .pid_host = c->pid, .network_host = c->net, .ipc_host = c->ipc,
        .uts_host = c->uts, .userns_host = c->userns,
        .cap_add = c->caps, .devices = c->devices,
        .docker_socket = SOCK,
      };
      char *why = (char *) "unset";
      bool got = docker_has_host_access (&f, &why);
      if (got != c->expect)
        fail_msg ("%s: expected %d, got %d (%s)", c->name, c->expect, got,
                  why ? why : "no reason");
      if (!c->expect)
        {
          if (why)
            fail_msg ("%s: no host access yet a reason: %s", c->name, why);
        }
      else
        {
          assert_non_null (why);
          for (size_t k = 0; k < N_ELEMENTS (c->why) && c->why[k]; k++)
            if (!strstr (why, c->why[k]))
              fail_msg ("%s: reason \"%s\" lacks \"%s\"", c->name, why,
                        c->why[k]);
        }
      free (why);
      /* why is optional. */
      assert_int_equal (docker_has_host_access (&f, NULL), c->expect);
    }
}

static void
test_source_is_host_path (void **state)
{
  (void) state;
  static const char *const host[] = {
    "/", "/x", "~", "~/x", "~bob/x", "./x", "../x", ".", "..", "C:\\x",
    "c:/x", ".\\x", "..\\x", "\\\\srv\\x", " /x",
  };
  static const char *const named[] = {
    "data", "my_vol", "v1.2-x", "", ".x", "..x", "C:", "c:x", "x/y",
  };
  for (size_t i = 0; i < N_ELEMENTS (host); i++)
    if (!docker_source_is_host_path (host[i]))
      fail_msg ("'%s' should be a host path", host[i]);
  for (size_t i = 0; i < N_ELEMENTS (named); i++)
    if (docker_source_is_host_path (named[i]))
      fail_msg ("'%s' should not be a host path", named[i]);
  assert_false (docker_source_is_host_path (NULL));
}

static void
test_socket_paths (void **state)
{
  (void) state;
  /* /var/run is a symlink to /run on Debian: each spelling reaches the
     other.  These hold lexically too, so they hold where it is not. */
  assert_true (docker_path_exposes_socket ("/var/run/docker.sock", SOCK));
  assert_true (docker_path_exposes_socket ("/var/run", SOCK));
  assert_true (docker_path_exposes_socket ("/var/run/", SOCK));
  assert_true (docker_path_exposes_socket ("/var", SOCK));
  assert_true (docker_path_exposes_socket ("/", SOCK));
  assert_true (docker_path_exposes_socket ("//var//./run", SOCK));
  assert_true (docker_path_exposes_socket ("/var/lib/../run", SOCK));
  assert_true (docker_path_exposes_socket ("/run", "unix:///run/docker.sock"));
  /* NULL socket: the default one. */
  assert_true (docker_path_exposes_socket ("/var/run", NULL));
  assert_false (docker_path_exposes_socket ("/var/lib", SOCK));
  assert_false (docker_path_exposes_socket ("/var/run/docker", SOCK));
  assert_false (docker_path_exposes_socket ("/var/run/docker.sock2", SOCK));
  assert_false (docker_path_exposes_socket ("/home", SOCK));
  assert_false (docker_path_exposes_socket ("", SOCK));
  assert_false (docker_path_exposes_socket (NULL, SOCK));

  char real[PATH_MAX];
  if (realpath ("/var/run", real) && !strcmp (real, "/run"))
    {
      /* Only true through the symlink. */
      assert_true (docker_path_exposes_socket ("/run", SOCK));
      assert_true (docker_path_exposes_socket ("/var/run", "/run/docker.sock"));
    }
  else
    print_message ("note: /var/run is not a symlink to /run here; "
                   "the symlink case is covered by test_symlinked_dir\n");
}

/* A socket directory reached through a symlink, in a temporary tree:
   T/real/engine.sock, T/link -> real. */
static void
test_symlinked_dir (void **state)
{
  (void) state;
  char tmpl[] = "/tmp/airlock-docker-risk-XXXXXX";
  char *t = mkdtemp (tmpl);
  assert_non_null (t);
  char real[512], link[512], sock_real[600], sock_link[600], other[512];
  snprintf (real, sizeof real, "%s/real", t);
  snprintf (link, sizeof link, "%s/link", t);
  snprintf (other, sizeof other, "%s/other", t);
  snprintf (sock_real, sizeof sock_real, "%s/engine.sock", real);
  snprintf (sock_link, sizeof sock_link, "%s/engine.sock", link);
  assert_int_equal (mkdir (real, 0700), 0);
  assert_int_equal (mkdir (other, 0700), 0);
  assert_int_equal (symlink ("real", link), 0);
  FILE *fp = fopen (sock_real, "w");
  assert_non_null (fp);
  fclose (fp);

  /* The mount names the real directory, the socket is given via the
     link, and the other way round. */
  assert_true (docker_path_exposes_socket (real, sock_link));
  assert_true (docker_path_exposes_socket (link, sock_real));
  assert_true (docker_path_exposes_socket (sock_link, sock_real));
  assert_true (docker_path_exposes_socket (t, sock_link));
  assert_false (docker_path_exposes_socket (other, sock_link));
  assert_false (docker_path_exposes_socket (other, sock_real));

  /* The same through the whole judgment, and through a named volume. */
  struct docker_mount_fact m[] = {
    { .source = link, .target = "/s" },
    { .source = "sockdir", .target = "/t", .driver = "local",
      .driver_opts = OPTS ("type=none", "o=bind", "device=/placeholder") },
  };
  char device[600];
  snprintf (device, sizeof device, "device=%s", real);
  const char *opts[] = { "type=none", "o=bind", device, NULL };
  m[1].driver_opts = opts;
  struct docker_risk_facts f = { .mounts = m, .n_mounts = 2,
                                 .docker_socket = sock_real };
  char *why = NULL;
  assert_true (docker_has_host_access (&f, &why));
  assert_non_null (why);
  char expect[700];
  snprintf (expect, sizeof expect, "volume %s:/s exposes the Docker socket",
            link);
  if (!strstr (why, expect))
    fail_msg ("'%s' lacks '%s'", why, expect);
  if (!strstr (why, "volume sockdir:/t exposes the Docker socket"))
    fail_msg ("'%s' lacks the named volume's socket reason", why);
  free (why);

  unlink (sock_real);
  unlink (link);
  rmdir (real);
  rmdir (other);
  rmdir (t);
}

/* Every reason is listed, in order, "; "-separated. */
static void
test_all_reasons (void **state)
{
  (void) state;
  struct docker_mount_fact m[] = {
    { .source = "/home/u", .target = "/w", .read_only = true },
    { .source = "cache", .target = "/c", .driver = "local" },
    { .source = "ext", .target = "/e", .driver = "weird" },
  };
  struct docker_risk_facts f = {
    .mounts = m, .n_mounts = N_ELEMENTS (m), .privileged = true,
    .pid_host = true, .network_host = true, .ipc_host = true,
    .uts_host = true, .userns_host = true,
    .cap_add = OPTS ("SYS_ADMIN"), .devices = OPTS ("/dev/kvm", "/dev/fuse"),
    .docker_socket = SOCK,
  };
  char *why = NULL;
  assert_true (docker_has_host_access (&f, &why));
  assert_string_equal (why,
                       "volume /home/u:/w binds a host path; "
                       "volume ext:/e uses driver 'weird', which cannot be "
                       "judged; "
                       "privileged; "
                       "host PID namespace (pid=host); "
                       "host network (network=host); "
                       "host IPC namespace (ipc=host); "
                       "host UTS namespace (uts=host); "
                       "host user namespace (userns=host); "
                       "capabilities added: SYS_ADMIN; "
                       "host devices: /dev/kvm, /dev/fuse");
  free (why);

  /* No facts at all: fail closed. */
  why = NULL;
  assert_true (docker_has_host_access (NULL, &why));
  assert_non_null (why);
  free (why);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_table),
    cmocka_unit_test (test_source_is_host_path),
    cmocka_unit_test (test_socket_paths),
    cmocka_unit_test (test_symlinked_dir),
    cmocka_unit_test (test_all_reasons),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
