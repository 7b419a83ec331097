// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "passed_fds.h"
#include "util.h"

int passed_fds_collect(struct passed_fds *p)
{
	char **names = NULL;
	int n, i;

	p->v = NULL;
	p->n = p->cap = 0;
	n = sd_listen_fds_with_names(1, &names);
	if (n <= 0)
		return n;
	p->v = calloc(n, sizeof(*p->v));
	if (!p->v) {
		for (i = 0; i < n; i++)
			safe_close(SD_LISTEN_FDS_START + i);
		n = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		p->v[i].fd = SD_LISTEN_FDS_START + i;
		/* Without LISTEN_FDNAMES every name is "unknown". */
		p->v[i].name = names && names[i] ? names[i] : NULL;
		if (names)
			names[i] = NULL;
	}
	p->n = p->cap = n;
	n = 0;
out:
	if (names) {
		for (i = 0; names[i]; i++)
			free(names[i]);
		free(names);
	}
	return n;
}

int passed_fds_add(struct passed_fds *p, int fd, char *name)
{
	struct passed_fd *v;
	size_t cap;

	if (p->n == p->cap) {
		cap = p->cap ? 2 * p->cap : 64;
		v = reallocarray(p->v, cap, sizeof(*v));
		if (!v) {
			safe_close(fd);
			free(name);
			return -ENOMEM;
		}
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = (struct passed_fd){.fd = fd, .name = name};
	return 0;
}

bool passed_fd_stored(const struct passed_fd *f)
{
	return f->name && !strncmp(f->name, HANDOVER_PREFIX, strlen(HANDOVER_PREFIX));
}

int passed_fds_take(struct passed_fds *p, size_t i)
{
	int fd = p->v[i].fd;

	p->v[i].fd = -1;
	return fd;
}

void passed_fds_release(struct passed_fds *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		safe_close(p->v[i].fd);
		free(p->v[i].name);
	}
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}
