/*
 * poll.h — the stream of a group member's poll file (poll[:FLAG]...).
 *
 * A poll cursor belongs to one open handle (handle.h), its kind's state,
 * and is guarded by the handle's lock. A read with nothing buffered runs
 * one core poll (mk_fetcher_poll_batches, fetcher.h) and formats what it
 * returns a batch at a time (mk_format_records_lines, which also tells
 * where each record's line ends); positions move only when the bytes of a record
 * have been handed to the reader (poll_consumed), by a compare-and-set
 * (mk_group_advance), so a reader that stops early consumed exactly what
 * it read, and a seek or rebalance in between wins.
 *
 * Without :follow an open file returns one poll's records, then EOF; with
 * :follow it polls again (several polls' worth at a time) once what it
 * returned was read, and parks (below) while there is nothing new.
 * :max=N caps the records of the whole open file.
 *
 * Formats: plain gives the values, as records does; :tsv and :json name
 * the topic and partition of each record too (a member reads many):
 *   TOPIC<TAB>PARTITION<TAB>OFFSET<TAB>TIMESTAMP_MS<TAB>KEY<TAB>VALUE[...]
 *   {"topic":"T","partition":P,"offset":...}
 */
#ifndef MK_POLL_H
#define MK_POLL_H

#include "handle.h"

/* The poll kind's operations are mk_poll_handle_ops (nodes.h), its
 * state (h->kind) a struct mk_poll_cursor. */
struct mk_poll_cursor;

/* A read once h->text is all handed out: the next poll's records (or
 * EOF). A :follow poll with nothing new never waits: it fills the read's
 * wait (the partition the next poll starts at, looked at again every
 * MK_POLL_RECHECK_MS: data on the member's other partitions and a new
 * assignment come without that partition's event; the timer is the
 * poll's fetch.max.wait, and each look refreshes the member's session as
 * a consumer's heartbeat would: docs/filesystem.md, Serving model) and
 * returns. */
#define MK_POLL_RECHECK_MS 200

#endif
