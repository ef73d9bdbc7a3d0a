/* SPDX-License-Identifier: MIT */
/* Bring `lo` up in the sandbox's new network namespace with libnl-3.
 *
 * libnl is loaded here with dlopen(), not linked: its library constructors
 * read NLCB, NLDBG and NLSYSCONFDIR from the environment, and libnl-route's
 * parses a classid file named by NLSYSCONFDIR, all before main().  In a
 * setuid binary that would hand the caller's environment to root-run code.
 * Loaded here, the constructors run after the environment was cleared, in
 * the sandbox process, which holds no privilege outside its namespaces, and
 * before pivot_root, so the library comes from the host and never from a
 * caller-supplied --rootfs. */
#define _GNU_SOURCE
#include "loopback.h"

#include <dlfcn.h>
#include <errno.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "util.h"

#define LIBNL_ROUTE_SONAME "libnl-route-3.so.200"

struct libnl {
  struct nl_cb *(*cb_alloc) (enum nl_cb_kind);
  void (*cb_put) (struct nl_cb *);
  struct nl_sock *(*socket_alloc_cb) (struct nl_cb *);
  void (*socket_free) (struct nl_sock *);
  int (*connect) (struct nl_sock *, int);
  const char *(*geterror) (int);
  int (*link_get_kernel) (struct nl_sock *, int, const char *,
                          struct rtnl_link **);
  struct rtnl_link *(*link_alloc) (void);
  void (*link_set_flags) (struct rtnl_link *, unsigned int);
  int (*link_change) (struct nl_sock *, struct rtnl_link *,
                      struct rtnl_link *, int);
  void (*link_put) (struct rtnl_link *);
};

static void *
sym (void *h, const char *name)
{
  void *p = dlsym (h, name);
  if (!p)
    fail (AL_STEP_LOOPBACK, 0, "libnl lacks %s", name);
  return p;
}

static void
load (struct libnl *nl)
{
  void *h = dlopen (LIBNL_ROUTE_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    fail (AL_STEP_LOOPBACK, 0, "cannot load %s: %s (install libnl-route-3-200)",
          LIBNL_ROUTE_SONAME, dlerror ());
  nl->cb_alloc = sym (h, "nl_cb_alloc");
  nl->cb_put = sym (h, "nl_cb_put");
  nl->socket_alloc_cb = sym (h, "nl_socket_alloc_cb");
  nl->socket_free = sym (h, "nl_socket_free");
  nl->connect = sym (h, "nl_connect");
  nl->geterror = sym (h, "nl_geterror");
  nl->link_get_kernel = sym (h, "rtnl_link_get_kernel");
  nl->link_alloc = sym (h, "rtnl_link_alloc");
  nl->link_set_flags = sym (h, "rtnl_link_set_flags");
  nl->link_change = sym (h, "rtnl_link_change");
  nl->link_put = sym (h, "rtnl_link_put");
  /* Debug output would go to the sandbox's stdout: force it off whatever a
   * constructor made of the (already empty) environment. */
  int *debug = dlsym (h, "nl_debug");
  if (debug)
    *debug = 0;
}

void
loopback_up (void)
{
  struct libnl nl;
  load (&nl);
  /* An explicit default callback set, never the library's global default
   * that NLCB=debug would have switched to dumping messages. */
  struct nl_cb *cb = nl.cb_alloc (NL_CB_DEFAULT);
  struct nl_sock *sk = cb ? nl.socket_alloc_cb (cb) : NULL;
  if (!sk)
    fail (AL_STEP_LOOPBACK, ENOMEM, "cannot allocate a netlink socket");
  /* The socket is opened here, in the process that already lives in the
   * new network namespace: it can only ever see and change that one. */
  int err = nl.connect (sk, NETLINK_ROUTE);
  struct rtnl_link *lo = NULL, *change = NULL;
  if (err == 0)
    err = nl.link_get_kernel (sk, 0, "lo", &lo);
  if (err == 0)
    {
      change = nl.link_alloc ();
      if (!change)
        fail (AL_STEP_LOOPBACK, ENOMEM, "rtnl_link_alloc");
      nl.link_set_flags (change, IFF_UP);
      err = nl.link_change (sk, lo, change, 0);
    }
  if (err < 0)
    fail (AL_STEP_LOOPBACK, 0, "cannot bring lo up: %s", nl.geterror (err));
  nl.link_put (change);
  nl.link_put (lo);
  nl.socket_free (sk);
  nl.cb_put (cb);
}
