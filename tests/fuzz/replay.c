/* SPDX-License-Identifier: MIT */
/*
 * Stand-in for libFuzzer's main when the compiler has none (gcc): runs every
 * file of the directories (or the files) named on the command line through
 * LLVMFuzzerTestOneInput() once, each from an exactly-sized heap copy so
 * that sanitizers and valgrind see any read past its end. Fails if nothing
 * was run, so that a missing corpus cannot pass for a clean one.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	unsigned char *data;
	struct stat st;
	size_t got;
	FILE *f;

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	data = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!data) {
		fclose(f);
		return -1;
	}
	got = fread(data, 1, (size_t)st.st_size, f);
	fclose(f);
	if (got != (size_t)st.st_size) {
		fprintf(stderr, "replay: %s: short read\n", path);
		free(data);
		return -1;
	}
	LLVMFuzzerTestOneInput(data, got);
	free(data);
	return 0;
}

static int run_dir(const char *dir, unsigned long *count)
{
	struct dirent *de;
	char path[4096];
	struct stat st;
	DIR *d;
	int rc = 0;

	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path)) {
			rc = -1;
			break;
		}
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (run_file(path) != 0) {
			rc = -1;
			break;
		}
		(*count)++;
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	struct stat st;
	int i;

	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count) != 0)
				return 1;
		} else {
			if (run_file(argv[i]) != 0)
				return 1;
			count++;
		}
	}
	printf("replayed %lu inputs\n", count);
	return count ? 0 : 1;
}
