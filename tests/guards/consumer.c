/* SPDX-License-Identifier: MIT */
/*
 * Built out of tree against the installed library through pkg-config: it
 * must find the headers, link, load and run.
 */
#include <stdio.h>
#include <string.h>

#include <rpcrdma/rpcrdma.h>

int main(void)
{
	if (strcmp(rpcrdma_version_string(), "0.1.0") != 0) {
		fprintf(stderr, "version %s\n", rpcrdma_version_string());
		return 1;
	}
	printf("librpcrdma %s loaded\n", rpcrdma_version_string());
	return 0;
}
