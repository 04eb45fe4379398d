/* SPDX-License-Identifier: MIT */
/* Reading a capture back with tshark (see tshark.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tshark.h"

bool tshark_present(void)
{
	return system("tshark -v >/dev/null 2>&1") == 0;
}

int tshark_fields(const char *pcap, const char *options, const char *const fields[],
		  struct tshark_rows *out)
{
	size_t cap = 0, len = 0, i;
	char cmd[4096];
	int pos;
	FILE *f;

	memset(out, 0, sizeof(*out));
	pos = snprintf(cmd, sizeof(cmd), "tshark -n -r '%s' %s -T fields -E separator=';'",
		       pcap, options ? options : "");
	for (i = 0; fields[i] && pos < (int)sizeof(cmd); i++)
		pos += snprintf(cmd + pos, sizeof(cmd) - (size_t)pos, " -e %s", fields[i]);
	if (pos >= (int)sizeof(cmd) - 16)
		return -1;
	strcat(cmd, " 2>/dev/null");
	f = popen(cmd, "r");
	if (!f)
		return -1;
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			size_t bigger = cap ? cap * 2 : 65536;
			char *text = realloc(out->text, bigger);

			if (!text)
				break;
			out->text = text;
			cap = bigger;
		}
		n = fread(out->text + len, 1, cap - len - 1, f);
		if (!n)
			break;
		len += n;
	}
	if (pclose(f) != 0 || !out->text) {
		tshark_rows_free(out);
		return -1;
	}
	out->text[len] = '\0';
	for (i = 0; i < len; i++)
		out->n += out->text[i] == '\n';
	out->row = calloc(out->n + 1, sizeof(*out->row));
	if (!out->row) {
		tshark_rows_free(out);
		return -1;
	}
	out->n = 0;
	for (char *line = out->text; *line;) {
		char *nl = strchr(line, '\n');

		out->row[out->n++] = line;
		if (!nl)
			break;
		*nl = '\0';
		line = nl + 1;
	}
	return 0;
}

void tshark_rows_free(struct tshark_rows *rows)
{
	free(rows->text);
	free(rows->row);
	memset(rows, 0, sizeof(*rows));
}

const char *tshark_field(const char *row, unsigned int i, char *buf, size_t len)
{
	const char *end;

	while (i-- && row)
		row = strchr(row, ';') ? strchr(row, ';') + 1 : NULL;
	if (!row) {
		buf[0] = '\0';
		return buf;
	}
	end = strchr(row, ';');
	if (!end)
		end = row + strlen(row);
	snprintf(buf, len, "%.*s", (int)(end - row), row);
	return buf;
}
