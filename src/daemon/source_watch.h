/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The source watch: once a second, every kernel-path redirect is asked whether its client's
 * socket is still in the sockhash (redirect_check_source_mapped()). A unix client's
 * shutdown(SHUT_RD) takes it out without an event the daemon could wait for.
 */
#ifndef VSOCKMAP_SOURCE_WATCH_H
#define VSOCKMAP_SOURCE_WATCH_H

struct daemon;

/* Start the timer where the kernel carries (d->dp). 0 or -errno. */
int source_watch_start(struct daemon *d);

void source_watch_stop(struct daemon *d);

#endif
