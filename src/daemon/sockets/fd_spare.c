// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>

#include "fd_spare.h"
#include "util.h"

static int spare_fd = -1;

int fd_spare_init(void)
{
	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return spare_fd < 0 ? -errno : 0;
}

void fd_spare_fini(void)
{
	spare_fd = safe_close(spare_fd);
}

bool fd_spare_release(void)
{
	if (spare_fd < 0)
		return false;
	spare_fd = safe_close(spare_fd);
	return true;
}

bool fd_spare_restore(void)
{
	return fd_spare_init() == 0;
}
