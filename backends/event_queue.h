/* SPDX-License-Identifier: MIT */
/* Events a backend has for the session layer, in order, each with its own
 * copy of its bytes or message: what next_event hands out stays valid
 * until the next call (backend.h), so the queue keeps the last one given. */
#ifndef AIRLOCK_BACKENDS_EVENT_QUEUE_H
#define AIRLOCK_BACKENDS_EVENT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

struct event_item;

struct event_queue {
  struct event_item *head, *tail;
  struct event_item *given; /* the last one popped */
};

/* ev with a copy of data (len bytes) or else of msg; false when out of
 * memory (the event is dropped). */
bool event_queue_push (struct event_queue *q, const struct backend_event *ev,
                       const void *data, size_t len, const char *msg);
/* Frees the one given before; true with *ev filled, false when empty. */
bool event_queue_pop (struct event_queue *q, struct backend_event *ev);
bool event_queue_empty (const struct event_queue *q);
void event_queue_clear (struct event_queue *q);

#endif
