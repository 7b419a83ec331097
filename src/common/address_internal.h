/* SPDX-License-Identifier: GPL-2.0-only */
/* The value parsers of address_values.c that address.c uses for an address's options. */
#ifndef VSOCKMAP_ADDRESS_INTERNAL_H
#define VSOCKMAP_ADDRESS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NAME_CMP_MAX  64   /* longer words are never close to any of our names */
#define SUGGEST_MAX   2	   /* edit distance up to which "did you mean" is offered */
#define TIMEOUT_MAX_S 3600 /* seconds, for connect-timeout= and the like */

/*
 * Unsigned decimal with no sign, no base prefix: 0, -EINVAL when text does not start with a
 * digit, -ERANGE above max. *end is where the digits stop.
 */
int parse_decimal(const char *text, uint64_t max, uint64_t *val, const char **end);
/* The whole of text as a number from min to max, or -EINVAL with "what: ..." in err. */
int parse_number(const char *what, const char *text, uint64_t min, uint64_t max, uint64_t *val,
		 char *err, size_t errlen);
/* mode=0660: octal permission bits, or -EINVAL with the reason in err. */
int parse_mode(const char *text, mode_t *mode, char *err, size_t errlen);

#endif
