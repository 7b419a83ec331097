/* SPDX-License-Identifier: GPL-2.0-only */
/* Re-reading the configuration file while running (SIGHUP, vsockmapctl reload). */
#ifndef VSOCKMAP_RELOAD_H
#define VSOCKMAP_RELOAD_H

#include <stddef.h>

struct daemon;

struct reload_result {
	size_t added, removed, unchanged, failed;
};

/*
 * Apply the configuration file again. An invalid file changes nothing: returns -EINVAL with
 * "PATH:LINE: what is wrong" in err. Otherwise returns 0, or the first error of a section
 * that could not be opened (named in err; the other sections are applied).
 */
int daemon_reload(struct daemon *d, struct reload_result *res, char *err, size_t errlen);

#endif
