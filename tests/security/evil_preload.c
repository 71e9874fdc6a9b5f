/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The image's LD_PRELOAD library of the hook-environment attack (test_hook_attacks.py): were the
 * hook a dynamic executable started with the container's environment, this constructor would run
 * as root on the host before the hook's main and leave a file in the host canary (CANARY).
 */
#include <fcntl.h>
#include <unistd.h>

#ifndef CANARY
#error "build with -DCANARY=\"/host/canary/dir\""
#endif

__attribute__((constructor)) static void pwn(void)
{
	int fd = open(CANARY "/pwned-by-ld-preload", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
}
