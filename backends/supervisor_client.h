/* SPDX-License-Identifier: MIT */
/* The broker's side of the supervisor protocol (supervisor_protocol.h):
 * one connected SOCK_SEQPACKET socket to a session's airlock-supervisor,
 * whoever made it (the local helper's socketpair, or the socket a docker
 * container's supervisor connects to).  Everything the supervisor sends
 * is untrusted: code in the sandbox runs as its uid and could forge it;
 * it is decoded strictly and only ever describes the sandbox's own jobs. */
#ifndef AIRLOCK_BACKENDS_SUPERVISOR_CLIENT_H
#define AIRLOCK_BACKENDS_SUPERVISOR_CLIENT_H

#include "backend.h"
#include "supervisor_protocol.h"

struct sup_client {
  int fd;
  struct al_writer w;
  uint8_t buf[AL_MAX_MESSAGE];
  struct sup_msg msg;
};

/* 0, or -errno (-EPIPE: the supervisor is gone); *err says it in words. */
int sup_client_spawn (struct sup_client *c, const struct backend_spawn *sp,
                      char **err);
int sup_client_write_stdin (struct sup_client *c, uint32_t job,
                            const void *data, size_t n, bool eof);
int sup_client_signal (struct sup_client *c, uint32_t job, int sig);
int sup_client_resize (struct sup_client *c, uint32_t job, unsigned rows,
                       unsigned cols);
int sup_client_ping (struct sup_client *c);

#define SUP_CLIENT_PONG 2
/* Without blocking: 1 with *ev (its data valid until the next call), 0
 * when nothing is there, SUP_CLIENT_PONG for a ping's answer, -1 when the
 * connection ended or the supervisor broke the protocol (*why). */
int sup_client_next_event (struct sup_client *c, struct backend_event *ev,
                           const char **why);

#endif
