/* SPDX-License-Identifier: MIT */
/* Does a Docker session reach the host?  Judged here, in policy/, from
 * facts the docker backend gathers (its configuration, and the inspected
 * options of the named volumes it mounts); the answer decides how much
 * of the approval gate its commands get (hermes-backends.md §3, where the
 * original missed named volumes that bind a host path and the socket). */
#ifndef AIRLOCK_POLICY_DOCKER_RISK_H
#define AIRLOCK_POLICY_DOCKER_RISK_H

#include <stdbool.h>
#include <stddef.h>

struct docker_mount_fact
{
  const char *source; /* as configured: a host path ("/", "~/x", "./x",
                         "../x", "C:\\x") or a volume name */
  const char *target; /* path in the container */
  bool read_only;
  /* For a named volume (source is a name): what GET /volumes/{name}
   * said.  driver NULL: the volume does not exist yet (it will be created
   * by the "local" driver without options). */
  const char *driver;
  const char *const *driver_opts; /* "key=value", NULL-terminated, or NULL */
};

struct docker_risk_facts
{
  const struct docker_mount_fact *mounts;
  size_t n_mounts;
  bool privileged;
  bool pid_host, network_host, ipc_host, uts_host, userns_host;
  const char *const *cap_add; /* NULL-terminated or NULL */
  const char *const *devices; /* host device paths, NULL-terminated or NULL */
  const char *docker_socket;  /* the engine's socket path on the host, to
                                 recognise a mount that exposes it */
};

/* True when the container can reach the host beyond what an isolated
 * container can; *why (malloc'd, may be NULL) lists the reasons, e.g.
 * "volume /home/u:/w binds a host path; capability SYS_ADMIN added". */
bool docker_has_host_access (const struct docker_risk_facts *f, char **why);

/* True for a mount source that is a host path rather than a volume name:
 * starts with '/', '~', "./" or "../", is "." or "..", or is a Windows
 * drive path ("C:\\..." or "C:/..."). */
bool docker_source_is_host_path (const char *source);

/* True when mounting this host path exposes the Docker socket: it is the
 * socket, or a directory containing it (/, /run, /var/run, ...). */
bool docker_path_exposes_socket (const char *host_path, const char *socket);

#endif
