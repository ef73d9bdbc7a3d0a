/* SPDX-License-Identifier: MIT */
#include "event_queue.h"

#include <stdlib.h>
#include <string.h>

struct event_item {
  struct event_item *next;
  struct backend_event ev;
  void *data;
};

static void
item_free (struct event_item *it)
{
  if (it)
    free (it->data);
  free (it);
}

bool
event_queue_push (struct event_queue *q, const struct backend_event *ev, const void *data,
                  size_t len, const char *msg)
{
  struct event_item *it = calloc (1, sizeof *it);
  if (!it)
    return false;
  it->ev = *ev;
  if (data && len && (it->data = malloc (len)))
    {
      memcpy (it->data, data, len);
      it->ev.data = it->data;
      it->ev.len = len;
    }
  else if (msg && (it->data = strdup (msg)))
    it->ev.message = it->data;
  if (q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
  return true;
}

bool
event_queue_pop (struct event_queue *q, struct backend_event *ev)
{
  item_free (q->given);
  q->given = q->head;
  if (!q->given)
    return false;
  q->head = q->given->next;
  if (!q->head)
    q->tail = NULL;
  *ev = q->given->ev;
  return true;
}

bool
event_queue_empty (const struct event_queue *q)
{
  return !q->head;
}

void
event_queue_clear (struct event_queue *q)
{
  while (q->head)
    {
      struct event_item *it = q->head;
      q->head = it->next;
      item_free (it);
    }
  item_free (q->given);
  *q = (struct event_queue){ 0 };
}
