// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the control protocol's decoder as the daemon runs it. The first byte
 * sets the size of the chunks the rest arrives in; the line buffer splits them into lines
 * (at most LINE_MAX bytes each, so the too-long path runs too), and each line is decoded as
 * a request. A decoded request must format back into a line that decodes to the same
 * command; any object must give a response status without crashing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "control_proto.h"

#define LINE_MAX_FUZZ 512

static void decode(const char *line, size_t len)
{
	struct json_object *req, *again;
	const char *command, *command2, *text;
	char err[256], *out;
	size_t out_len;
	int r;

	r = control_request_decode(line, len, &req, &command, err, sizeof(err));
	if (r < 0) {
		if (r != -EPROTO && r != -EINVAL && r != -ENOMEM)
			abort();
		if (r != -ENOMEM && (!memchr(err, '\0', sizeof(err)) || strchr(err, '\n')))
			abort();
		return;
	}
	(void)control_response_status(req, &text);
	if (control_format_line(req, CONTROL_REQUEST_MAX * 4, &out, &out_len) == 0) {
		if (out_len == 0 || out[out_len - 1] != '\n')
			abort();
		if (control_request_decode(out, out_len - 1, &again, &command2, err, sizeof(err)))
			abort();
		if (strcmp(command, command2))
			abort();
		json_object_put(again);
		free(out);
	}
	json_object_put(req);
}

/* Returns -EMSGSIZE when the daemon would answer and close the connection. */
static int take_lines(struct line_buffer *lb)
{
	size_t len;
	char *line;
	int r;

	while ((r = line_buffer_next(lb, &line, &len)) != 0) {
		if (r == -EMSGSIZE)
			return r;
		if (r != 1 || len > LINE_MAX_FUZZ || line[len] != '\0')
			abort();
		decode(line, len);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct line_buffer lb;
	size_t chunk, off;

	if (size == 0)
		return 0;
	chunk = (size_t)data[0] + 1;
	line_buffer_init(&lb, LINE_MAX_FUZZ);
	for (off = 1; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (line_buffer_append(&lb, data + off, n) < 0 || take_lines(&lb) < 0)
			goto out;
	}
	line_buffer_set_eof(&lb);
	take_lines(&lb);
out:
	line_buffer_free(&lb);
	return 0;
}
