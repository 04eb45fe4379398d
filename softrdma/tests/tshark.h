/* SPDX-License-Identifier: MIT */
/*
 * Reading a capture back with tshark (Debian package tshark): one row per
 * packet, the requested fields separated by ';' as tshark prints them.
 */
#ifndef SOFTRDMA_TSHARK_H
#define SOFTRDMA_TSHARK_H

#include <stdbool.h>
#include <stddef.h>

struct tshark_rows {
	char *text;		/* tshark's output, split in place */
	char **row;
	size_t n;
};

/* Is tshark installed? */
bool tshark_present(void);
/*
 * Run tshark on pcap with extra options (e.g. a display filter), printing
 * fields (a NULL-terminated list). Returns 0, or -1 if tshark failed.
 */
int tshark_fields(const char *pcap, const char *options, const char *const fields[],
		  struct tshark_rows *out);
void tshark_rows_free(struct tshark_rows *rows);
/* Field i of a row ("" when absent), copied into buf. */
const char *tshark_field(const char *row, unsigned int i, char *buf, size_t len);

#endif /* SOFTRDMA_TSHARK_H */
