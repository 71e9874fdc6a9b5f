/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays files through a fuzz target without libFuzzer: `fuzz_replay_<target> FILE|DIR...`.
 * Every build runs the committed corpus this way (CTest reliability_fuzz_corpus); a crash or a
 * sanitizer report fails the test and names the file on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 4096);

			if (!nb) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
			cap = cap ? cap * 2 : 4096;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
	/* an exact-size copy so reads past the input land in a redzone */
	uint8_t *exact = malloc(n ? n : 1);

	if (!exact) {
		free(buf);
		return -1;
	}
	if (n)
		memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

static int filter_regular(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	int files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			files++;
			continue;
		}
		struct dirent **names = NULL;
		int n = scandir(argv[i], &names, filter_regular, alphasort);

		if (n < 0) {
			fprintf(stderr, "replay: cannot list %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
			if (replay_file(path) < 0)
				return 1;
			files++;
			free(names[k]);
		}
		free(names);
	}
	if (files == 0) {
		fprintf(stderr, "replay: no input files (an empty corpus proves nothing)\n");
		return 1;
	}
	printf("replay: %d files, no crash\n", files);
	return 0;
}
