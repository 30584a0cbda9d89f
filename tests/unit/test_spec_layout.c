/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) 2026 The INCA authors
 */

/*
 * Keeps docs/protocol.md and lib/include/inca/wire.h from drifting apart:
 * reads the document at run time and checks its tables (header and control
 * body layouts, message types, data types, operations, flags, capability
 * bits, NACK reasons, validation reasons) against the C definitions, and
 * decodes every worked example frame with the real codec, comparing it with
 * the field values the document states next to it.
 *
 * The document's conventions this test relies on (documented in the
 * document itself where a reader needs them):
 * - a table belongs to the heading right above it (exact heading text);
 * - cells may be wrapped in backquotes;
 * - a worked example is a ```hex block preceded by a line
 *   "fields: key=value ..." listing every non-zero field.
 */

#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inca/wire.h>

#ifndef INCA_SOURCE_ROOT
#error "INCA_SOURCE_ROOT must be defined (meson passes it)"
#endif

#define MAX_COLS 8
#define MAX_ROWS 64
#define MAX_EX 32
#define MAX_FRAME 10000

/* The document, split into lines. */
struct doc {
	char *text;
	char **lines;
	size_t n;
};

struct table {
	unsigned int ncols, nrows;
	char head[MAX_COLS][64];
	char cell[MAX_ROWS][MAX_COLS][256];
};

static const char *
doc_path(void)
{
	/* An override lets one check a modified copy of the document. */
	const char *p = getenv("INCA_SPEC_PATH");

	return p != NULL ? p : INCA_SOURCE_ROOT "/docs/protocol.md";
}

static void
doc_load(struct doc *d)
{
	FILE *f = fopen(doc_path(), "r");
	size_t cap = 0, len = 0, i;
	char *p;

	ck_assert_msg(f != NULL, "cannot open %s: %s", doc_path(), strerror(errno));
	d->text = NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			d->text = realloc(d->text, cap);
			ck_assert_ptr_nonnull(d->text);
		}
		i = fread(d->text + len, 1, cap - len - 1, f);
		if (i == 0)
			break;
		len += i;
	}
	fclose(f);
	d->text[len] = '\0';
	d->n = 0;
	for (p = d->text; *p; p++)
		d->n += *p == '\n';
	d->lines = calloc(d->n + 1, sizeof(*d->lines));
	ck_assert_ptr_nonnull(d->lines);
	d->n = 0;
	for (p = d->text; *p;) {
		d->lines[d->n++] = p;
		p = strchr(p, '\n');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
}

static void
doc_free(struct doc *d)
{
	free(d->lines);
	free(d->text);
}

static int
is_heading(const char *l)
{
	return l[0] == '#';
}

static const char *
heading_text(const char *l)
{
	while (*l == '#')
		l++;
	while (*l == ' ')
		l++;
	return l;
}

/* Line index of the one heading whose text is exactly @name. */
static size_t
find_heading(const struct doc *d, const char *name)
{
	size_t i, found = (size_t)-1;
	int in_code = 0;

	for (i = 0; i < d->n; i++) {
		if (strncmp(d->lines[i], "```", 3) == 0)
			in_code = !in_code;
		if (in_code || !is_heading(d->lines[i]))
			continue;
		if (strcmp(heading_text(d->lines[i]), name) == 0) {
			ck_assert_msg(found == (size_t)-1, "heading '%s' appears twice", name);
			found = i;
		}
	}
	ck_assert_msg(found != (size_t)-1, "no heading '%s' in %s", name, doc_path());
	return found;
}

/* Trim blanks and one pair of surrounding backquotes, in place. */
static char *
trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	if (n >= 2 && s[0] == '`' && s[n - 1] == '`') {
		s[n - 1] = '\0';
		s++;
	}
	return s;
}

/* Split a table line "| a | b |" into cells. Returns the cell count. */
static unsigned int
split_row(const char *line, char out[][256], unsigned int max)
{
	char buf[2048], *p, *bar;
	unsigned int n = 0;

	ck_assert_msg(strlen(line) < sizeof(buf), "table line too long: %s", line);
	strcpy(buf, line);
	p = trim(buf);
	ck_assert_msg(p[0] == '|' && p[strlen(p) - 1] == '|', "bad table line: %s", line);
	p++;
	p[strlen(p) - 1] = '\0';
	for (;;) {
		bar = strchr(p, '|');
		if (bar)
			*bar = '\0';
		ck_assert_msg(n < max, "too many cells: %s", line);
		snprintf(out[n++], 256, "%s", trim(p));
		if (!bar)
			break;
		p = bar + 1;
	}
	return n;
}

/* The first table after the heading @name, before any other heading. */
static void
table_under(const struct doc *d, const char *name, struct table *t)
{
	size_t i = find_heading(d, name) + 1;
	char cells[MAX_COLS][256];
	unsigned int n, c;

	memset(t, 0, sizeof(*t));
	while (i < d->n && d->lines[i][0] != '|') {
		ck_assert_msg(!is_heading(d->lines[i]), "no table under '%s'", name);
		i++;
	}
	ck_assert_msg(i < d->n, "no table under '%s'", name);
	t->ncols = split_row(d->lines[i], cells, MAX_COLS);
	for (c = 0; c < t->ncols; c++)
		snprintf(t->head[c], sizeof(t->head[c]), "%s", cells[c]);
	i++;
	ck_assert_msg(i < d->n && strncmp(d->lines[i], "|---", 4) == 0,
		      "table under '%s' lacks its separator row", name);
	for (i++; i < d->n && d->lines[i][0] == '|'; i++) {
		ck_assert_msg(t->nrows < MAX_ROWS, "table under '%s' too long", name);
		n = split_row(d->lines[i], t->cell[t->nrows], MAX_COLS);
		ck_assert_msg(n == t->ncols, "'%s': row with %u cells, header has %u: %s",
			      name, n, t->ncols, d->lines[i]);
		t->nrows++;
	}
}

/* A whole cell as an unsigned number (decimal or 0x hex). */
static unsigned long
cell_num(const char *s, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	ck_assert_msg(*s != '\0' && *end == '\0' && errno == 0 && isdigit((unsigned char)*s),
		      "%s: '%s' is not a number", what, s);
	return v;
}

/* Layout tables. */

struct field {
	const char *name;
	size_t off, size;
};

#define FIELD(s, m) { #m, offsetof(struct s, m), sizeof(((struct s *)0)->m) }

static const struct field hdr_fields[] = {
	FIELD(inca_hdr, version), FIELD(inca_hdr, type), FIELD(inca_hdr, dtype),
	FIELD(inca_hdr, op), FIELD(inca_hdr, job), FIELD(inca_hdr, rank),
	FIELD(inca_hdr, token), FIELD(inca_hdr, slot), FIELD(inca_hdr, flags),
	FIELD(inca_hdr, exp), FIELD(inca_hdr, seq), FIELD(inca_hdr, offset),
	FIELD(inca_hdr, count), FIELD(inca_hdr, reason), FIELD(inca_hdr, bitmap),
};

static const struct field ctrl_fields[] = {
	FIELD(inca_ctrl, ver_min), FIELD(inca_ctrl, ver_max), FIELD(inca_ctrl, dtypes),
	FIELD(inca_ctrl, ops), FIELD(inca_ctrl, max_elems), FIELD(inca_ctrl, nworkers),
	FIELD(inca_ctrl, pool_size), FIELD(inca_ctrl, window), FIELD(inca_ctrl, caps),
	FIELD(inca_ctrl, hb_ms), FIELD(inca_ctrl, evict_ms), FIELD(inca_ctrl, pool_base),
	FIELD(inca_ctrl, session),
};

static void
check_layout(const char *heading, const struct field *fields, size_t nfields,
	     size_t struct_size)
{
	struct doc d;
	struct table *t = malloc(sizeof(*t));
	unsigned int seen[32] = { 0 };
	size_t r, k, end = 0;
	unsigned long off, size;

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_le(nfields, 32);
	doc_load(&d);
	table_under(&d, heading, t);
	ck_assert_msg(t->ncols == 4 && !strcmp(t->head[0], "offset") &&
		      !strcmp(t->head[1], "size") && !strcmp(t->head[2], "field") &&
		      !strcmp(t->head[3], "description"),
		      "'%s' table columns must be | offset | size | field | description |",
		      heading);
	for (r = 0; r < t->nrows; r++) {
		const char *name = t->cell[r][2];

		for (k = 0; k < nfields && strcmp(fields[k].name, name) != 0; k++)
			;
		ck_assert_msg(k < nfields, "'%s': field '%s' is not in the C struct", heading,
			      name);
		ck_assert_msg(!seen[k], "'%s': field '%s' listed twice", heading, name);
		seen[k] = 1;
		off = cell_num(t->cell[r][0], name);
		size = cell_num(t->cell[r][1], name);
		ck_assert_msg(off == fields[k].off, "'%s': %s at offset %lu, C says %zu",
			      heading, name, off, fields[k].off);
		ck_assert_msg(size == fields[k].size, "'%s': %s has size %lu, C says %zu",
			      heading, name, size, fields[k].size);
		ck_assert_msg(off == end, "'%s': %s does not follow the previous field",
			      heading, name);
		ck_assert_msg(strlen(t->cell[r][3]) > 0, "'%s': %s has no description",
			      heading, name);
		end = off + size;
	}
	for (k = 0; k < nfields; k++)
		ck_assert_msg(seen[k], "'%s': C field '%s' is missing", heading, fields[k].name);
	ck_assert_msg(end == struct_size, "'%s': fields end at %zu, struct has %zu", heading,
		      end, struct_size);
	free(t);
	doc_free(&d);
}

START_TEST(test_header_table)
{
	check_layout("Header", hdr_fields, sizeof(hdr_fields) / sizeof(hdr_fields[0]),
		     sizeof(struct inca_hdr));
	ck_assert_uint_eq(sizeof(struct inca_hdr), INCA_HDR_LEN);
}
END_TEST

START_TEST(test_ctrl_table)
{
	check_layout("Control body", ctrl_fields, sizeof(ctrl_fields) / sizeof(ctrl_fields[0]),
		     sizeof(struct inca_ctrl));
	ck_assert_uint_eq(sizeof(struct inca_ctrl), INCA_CTRL_LEN);
}
END_TEST

/* Value tables: a (value, name) bijection with the C definitions. */

struct named {
	const char *name;
	unsigned long value;
};

static void
check_values(const char *heading, const char *name_col, const struct named *want,
	     size_t nwant)
{
	struct doc d;
	struct table *t = malloc(sizeof(*t));
	unsigned int seen[64] = { 0 };
	size_t r, k;
	unsigned long v;

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_le(nwant, 64);
	doc_load(&d);
	table_under(&d, heading, t);
	ck_assert_msg(t->ncols >= 2 && !strcmp(t->head[0], "value") &&
		      !strcmp(t->head[1], name_col),
		      "'%s' table must start with | value | %s |", heading, name_col);
	for (r = 0; r < t->nrows; r++) {
		for (k = 0; k < nwant && strcmp(want[k].name, t->cell[r][1]) != 0; k++)
			;
		ck_assert_msg(k < nwant, "'%s': '%s' is not defined in wire.h", heading,
			      t->cell[r][1]);
		ck_assert_msg(!seen[k], "'%s': '%s' listed twice", heading, want[k].name);
		seen[k] = 1;
		v = cell_num(t->cell[r][0], want[k].name);
		ck_assert_msg(v == want[k].value, "'%s': %s = %lu in the document, %lu in C",
			      heading, want[k].name, v, want[k].value);
	}
	for (k = 0; k < nwant; k++)
		ck_assert_msg(seen[k], "'%s': %s is missing", heading, want[k].name);
	free(t);
	doc_free(&d);
}

START_TEST(test_msg_types)
{
	static const struct named want[] = {
#define INCA_X_(n, v, s) { #n, v },
		INCA_MSG_TYPES(INCA_X_)
#undef INCA_X_
	};

	check_values("Message types", "type", want, sizeof(want) / sizeof(want[0]));
}
END_TEST

START_TEST(test_nack_reasons)
{
	static const struct named want[] = {
#define INCA_X_(n, v, s) { #n, v },
		INCA_NACK_REASONS(INCA_X_)
#undef INCA_X_
	};

	check_values("NACK reasons", "reason", want, sizeof(want) / sizeof(want[0]));
}
END_TEST

START_TEST(test_dtypes_ops)
{
	struct named dt[INCA_DTYPE_COUNT], op[INCA_OP_COUNT];
	static const unsigned int sizes[] = {
#define INCA_X_(n, v, s) s,
		INCA_DTYPES(INCA_X_)
#undef INCA_X_
	};
	struct table *t = malloc(sizeof(*t));
	struct doc d;
	unsigned int i;

	ck_assert_ptr_nonnull(t);
	/* The document uses the lower-case names users write in configs. */
	for (i = 0; i < INCA_DTYPE_COUNT; i++) {
		dt[i].name = inca_dtype_name(i);
		dt[i].value = i;
	}
	for (i = 0; i < INCA_OP_COUNT; i++) {
		op[i].name = inca_op_name(i);
		op[i].value = i;
	}
	check_values("Data types", "dtype", dt, INCA_DTYPE_COUNT);
	check_values("Operations", "op", op, INCA_OP_COUNT);

	/* And the size column of the data types. */
	doc_load(&d);
	table_under(&d, "Data types", t);
	ck_assert_str_eq(t->head[2], "size");
	for (i = 0; i < t->nrows; i++) {
		unsigned long v = cell_num(t->cell[i][0], "dtype value");

		ck_assert_uint_lt(v, sizeof(sizes) / sizeof(sizes[0]));
		ck_assert_uint_eq(cell_num(t->cell[i][2], t->cell[i][1]), sizes[v]);
		ck_assert_uint_eq(inca_dtype_size(v), sizes[v]);
	}
	free(t);
	doc_free(&d);
}
END_TEST

START_TEST(test_flags_caps)
{
	static const struct named flags[] = {
		{ "SET", INCA_F_SET }, { "RETX", INCA_F_RETX },
		{ "LAST", INCA_F_LAST }, { "BFP", INCA_F_BFP },
		{ "ROUTED", INCA_F_ROUTED }, { "GATHER", INCA_F_GATHER },
		{ "BRIEF", INCA_F_BRIEF },
	};
	static const struct named caps[] = {
		{ "NATIVE_FLOAT", INCA_CAP_NATIVE_FLOAT }, { "BFP", INCA_CAP_BFP },
		{ "SEQ_CHECK", INCA_CAP_SEQ_CHECK }, { "FIXED_COUNT", INCA_CAP_FIXED_COUNT },
		{ "ROCE", INCA_CAP_ROCE }, { "ROUTED", INCA_CAP_ROUTED },
	};
	unsigned long all = 0;
	size_t i;

	check_values("Header flags", "flag", flags, sizeof(flags) / sizeof(flags[0]));
	check_values("Capability bits", "capability", caps, sizeof(caps) / sizeof(caps[0]));
	/* The lists above are complete: they cover the masks exactly. */
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		all |= flags[i].value;
	ck_assert_uint_eq(all, INCA_F_MASK);
	all = 0;
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		all |= caps[i].value;
	ck_assert_uint_eq(all, INCA_CAP_MASK);
}
END_TEST

/*
 * The validation tables name every reason of enum inca_wire_err but OK
 * exactly once: frame reasons in "Frame checks", message reasons in
 * "Message checks", the latter in the order inca_msg_decode() applies them
 * (the enum's order); the order columns count 1, 2, 3...
 */
static unsigned int
check_reason_table(const char *heading, unsigned int *seen, unsigned int lo, unsigned int hi,
		   int enum_order)
{
	struct table *t = malloc(sizeof(*t));
	struct doc d;
	unsigned int r, e, prev = 0, n;

	ck_assert_ptr_nonnull(t);
	doc_load(&d);
	table_under(&d, heading, t);
	ck_assert_msg(t->ncols >= 2 && !strcmp(t->head[0], "order") &&
		      !strcmp(t->head[1], "reason"),
		      "'%s' table must start with | order | reason |", heading);
	for (r = 0; r < t->nrows; r++) {
		ck_assert_uint_eq(cell_num(t->cell[r][0], "order"), r + 1);
		for (e = 0; e < INCA_WIRE_ERR_COUNT &&
		     strcmp(inca_wire_err_name(e), t->cell[r][1]) != 0; e++)
			;
		ck_assert_msg(e < INCA_WIRE_ERR_COUNT && e != INCA_WIRE_OK,
			      "'%s': '%s' is not a reason of enum inca_wire_err", heading,
			      t->cell[r][1]);
		ck_assert_msg(e >= lo && e < hi, "'%s': %s belongs in the other table", heading,
			      t->cell[r][1]);
		ck_assert_msg(!seen[e], "%s listed twice", t->cell[r][1]);
		seen[e] = 1;
		if (enum_order)
			ck_assert_msg(e > prev, "'%s': %s is out of order", heading,
				      t->cell[r][1]);
		prev = e;
		ck_assert_msg(strlen(t->cell[r][2]) > 0, "%s: no condition", t->cell[r][1]);
	}
	n = t->nrows;
	free(t);
	doc_free(&d);
	return n;
}

START_TEST(test_validation)
{
	unsigned int seen[INCA_WIRE_ERR_COUNT] = { 0 };
	unsigned int e;

	check_reason_table("Frame checks", seen, INCA_WIRE_OK + 1, INCA_WIRE_SHORT, 0);
	check_reason_table("Message checks", seen, INCA_WIRE_SHORT, INCA_WIRE_ROCE_SHORT, 1);
	check_reason_table("RoCEv2 checks", seen, INCA_WIRE_ROCE_SHORT, INCA_WIRE_ERR_COUNT, 1);
	for (e = INCA_WIRE_OK + 1; e < INCA_WIRE_ERR_COUNT; e++)
		ck_assert_msg(seen[e], "validation tables lack %s", inca_wire_err_name(e));
}
END_TEST

/* Every section a reader needs is there, and the default port is stated. */
START_TEST(test_sections)
{
	static const char *const sections[] = {
		"Overview", "Encapsulation", "Header", "Control body", "Message types",
		"Data types and operations", "Payload classes", "Slots and shadow sets",
		"Job lifecycle, membership, tokens, heartbeats, eviction", "NACK reasons",
		"Validation", "Tofino subset", "Worked examples", "Sessions (job incarnations)",
	};
	struct doc d;
	size_t i, h;
	int port = 0;
	char want[16], title[32];

	doc_load(&d);
	snprintf(title, sizeof(title), "version %d", INCA_PROTO_VERSION);
	ck_assert_msg(strncmp(d.lines[0], "# ", 2) == 0 && strstr(d.lines[0], title) != NULL,
		      "the title must say '%s'", title);
	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		find_heading(&d, sections[i]);
	snprintf(want, sizeof(want), "%d", INCA_UDP_PORT);
	h = find_heading(&d, "Encapsulation");
	for (i = h + 1; i < d.n && !is_heading(d.lines[i]); i++)
		port |= strstr(d.lines[i], want) != NULL;
	ck_assert_msg(port, "Encapsulation does not state the default port %s", want);
	doc_free(&d);
}
END_TEST

/* Worked examples. */

/*
 * The RoCEv2 ICRC as docs/protocol.md defines it, bit by bit: the CRC-32
 * of the Ethernet FCS over 8 bytes of ones and the IPv4 packet without its
 * last 4 bytes (the ICRC), the variant fields taken as ones. Written from
 * the spec, independently of incad's (DPDK's rte_net_crc).
 */
static uint32_t
spec_icrc(const uint8_t *ip, size_t ip_len)
{
	uint32_t crc = 0xffffffff;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4, i;
	unsigned int k;
	uint8_t b;

	for (i = 0; i < 8 + ip_len - INCA_ICRC_LEN; i++) {
		size_t o = i - 8;

		if (i < 8 || o == 1 || o == 8 || o == 10 || o == 11 || o == ihl + 6 ||
		    o == ihl + 7 || o == ihl + 8 + 4)
			b = 0xff;   /* ones; TOS, TTL, IPv4 and UDP checksums, BTH byte 4 */
		else
			b = ip[o];
		crc ^= b;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

struct example {
	size_t line;
	uint8_t frame[MAX_FRAME];
	size_t len;
	struct inca_msg m;
	int32_t elems[INCA_MAX_ELEMS];
};

static unsigned long
parse_num(const char *key, const char *v)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 0);
	ck_assert_msg(*v && *end == '\0' && errno == 0, "%s=%s is not a number", key, v);
	return x;
}

/* A name from a table of names (or a number). */
static unsigned long
parse_named(const char *key, const char *v, const char *(*name)(unsigned), unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (strcmp(name(i), v) == 0)
			return i;
	return parse_num(key, v);
}

static void
parse_addr(const char *key, const char *v, uint32_t *ip, uint16_t *port)
{
	unsigned int a, b, c, d2, p;
	char tail;

	ck_assert_msg(sscanf(v, "%u.%u.%u.%u:%u%c", &a, &b, &c, &d2, &p, &tail) == 5 &&
		      a < 256 && b < 256 && c < 256 && d2 < 256 && p < 65536,
		      "%s=%s is not address:port", key, v);
	*ip = (a << 24) | (b << 16) | (c << 8) | d2;
	*port = (uint16_t)p;
}

static uint32_t
rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* The bytes of a ```hex block starting after line @i; offsets checked. */
static size_t
parse_hex(const struct doc *d, size_t i, uint8_t *out, size_t *n)
{
	char buf[512], *tok, *save;
	unsigned int byte;
	unsigned long off;
	char *end;

	*n = 0;
	for (i++; i < d->n && strncmp(d->lines[i], "```", 3) != 0; i++) {
		ck_assert_msg(strlen(d->lines[i]) < sizeof(buf), "hex line too long");
		strcpy(buf, d->lines[i]);
		for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
			if (tok[strlen(tok) - 1] == ':') {
				/* An offset label must say where the line is. */
				off = strtoul(tok, &end, 16);
				ck_assert_msg(end == tok + strlen(tok) - 1 && off == *n,
					      "line %zu: offset %s, expected %04zx", i + 1, tok, *n);
				continue;
			}
			ck_assert_msg(strlen(tok) == 2 && isxdigit((unsigned char)tok[0]) &&
				      isxdigit((unsigned char)tok[1]),
				      "line %zu: '%s' is not a hex byte", i + 1, tok);
			sscanf(tok, "%x", &byte);
			ck_assert_uint_lt(*n, MAX_FRAME);
			out[(*n)++] = (uint8_t)byte;
		}
	}
	ck_assert_msg(i < d->n, "unterminated hex block");
	return i;
}

/*
 * Check one example: the frame parses and decodes, every stated field has
 * its value, every field not stated is zero (version 1), and the frame is
 * exactly what inca_frame_build makes of the message.
 */
static void
check_example(const struct doc *d, size_t fields_line, struct example *ex)
{
	char buf[2048], *tok, *save, *eq, seen_keys[64][32];
	unsigned int nkeys = 0, k, i;
	struct inca_msg want = { .version = INCA_PROTO_VERSION };
	struct inca_ctrl_info cw, cg;
	uint32_t src_ip = 0, dst_ip = 0;
	uint16_t src_port = 0, dst_port = 0;
	int have_src = 0, have_dst = 0, have_elems = 0, have_ctrl = 0;
	unsigned int nelems = 0;
	struct inca_frame f;
	struct inca_msg *m = &ex->m;
	enum inca_wire_err e;
	static uint8_t rebuilt[MAX_FRAME];
	size_t n;
	/* RoCEv2 fields: BTH, DETH; the JOIN extension. -1: not stated. */
	long long bth_dqpn = -1, bth_psn = -1, deth_qkey = -1, deth_sqpn = -1;
	long long ext_qpn = -1, ext_qkey = -1;
	struct inca_roce_info ri;
	struct inca_roce_ext rx;
	const uint8_t *rmsg = NULL;
	size_t rlen = 0, ip_len;
	uint32_t crc;

	memset(&cw, 0, sizeof(cw));
	ck_assert_msg(strlen(d->lines[fields_line]) < sizeof(buf), "fields line too long");
	strcpy(buf, d->lines[fields_line] + strlen("fields:"));
	for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		eq = strchr(tok, '=');
		ck_assert_msg(eq != NULL, "line %zu: '%s' is not key=value", fields_line + 1,
			      tok);
		*eq++ = '\0';
		for (k = 0; k < nkeys; k++)
			ck_assert_msg(strcmp(seen_keys[k], tok) != 0, "line %zu: %s twice",
				      fields_line + 1, tok);
		ck_assert_uint_lt(nkeys, 64);
		snprintf(seen_keys[nkeys++], sizeof(seen_keys[0]), "%s", tok);
#define IS(k) (strcmp(tok, k) == 0)
		if (IS("src")) {
			parse_addr(tok, eq, &src_ip, &src_port);
			have_src = 1;
		} else if (IS("dst")) {
			parse_addr(tok, eq, &dst_ip, &dst_port);
			have_dst = 1;
		} else if (IS("version")) {
			want.version = parse_num(tok, eq);
		} else if (IS("type")) {
			want.type = parse_named(tok, eq, inca_msg_type_name, INCA_MSG_MAX_);
		} else if (IS("dtype")) {
			want.dtype = parse_named(tok, eq, inca_dtype_name, INCA_DTYPE_COUNT);
		} else if (IS("op")) {
			want.op = parse_named(tok, eq, inca_op_name, INCA_OP_COUNT);
		} else if (IS("reason")) {
			want.reason = parse_named(tok, eq, inca_nack_name, INCA_NACK_MAX_);
		} else if (IS("job")) {
			want.job = parse_num(tok, eq);
		} else if (IS("rank")) {
			want.rank = parse_num(tok, eq);
		} else if (IS("token")) {
			want.token = parse_num(tok, eq);
		} else if (IS("slot")) {
			want.slot = parse_num(tok, eq);
		} else if (IS("flags")) {
			want.flags = parse_num(tok, eq);
		} else if (IS("exp")) {
			want.exp = (int8_t)strtol(eq, NULL, 0);
		} else if (IS("seq")) {
			want.seq = parse_num(tok, eq);
		} else if (IS("offset")) {
			want.offset = parse_num(tok, eq);
		} else if (IS("count")) {
			want.count = parse_num(tok, eq);
		} else if (IS("bitmap")) {
			want.bitmap = parse_num(tok, eq);
		} else if (IS("bth_dqpn")) {
			bth_dqpn = parse_num(tok, eq);
		} else if (IS("bth_psn")) {
			bth_psn = parse_num(tok, eq);
		} else if (IS("deth_qkey")) {
			deth_qkey = parse_num(tok, eq);
		} else if (IS("deth_sqpn")) {
			deth_sqpn = parse_num(tok, eq);
		} else if (IS("roce_qpn")) {
			ext_qpn = parse_num(tok, eq);
		} else if (IS("roce_qkey")) {
			ext_qkey = parse_num(tok, eq);
		} else if (IS("elems")) {
			char *el, *s2;

			have_elems = 1;
			for (el = strtok_r(eq, ",", &s2); el; el = strtok_r(NULL, ",", &s2)) {
				char *end;
				long v;

				ck_assert_uint_lt(nelems, INCA_MAX_ELEMS);
				errno = 0;
				v = strtol(el, &end, 0);
				/* Decimal is a signed int32, hex a 32-bit pattern. */
				ck_assert_msg(*end == '\0' && errno == 0 &&
					      (strncmp(el, "0x", 2) == 0 ?
					       v >= 0 && v <= (long)UINT32_MAX :
					       v >= INT32_MIN && v <= INT32_MAX),
					      "elems: '%s' is not an int32 or a 0x pattern", el);
				ex->elems[nelems++] = (int32_t)(uint32_t)v;
			}
		} else {
			have_ctrl = 1;
#define CTRL(fld) else if (IS(#fld)) cw.fld = parse_num(tok, eq)
			if (0)
				;
			CTRL(ver_min); CTRL(ver_max); CTRL(dtypes); CTRL(ops);
			CTRL(max_elems); CTRL(nworkers); CTRL(pool_size); CTRL(window);
			CTRL(caps); CTRL(hb_ms); CTRL(evict_ms); CTRL(pool_base); CTRL(session);
			else
				ck_abort_msg("line %zu: unknown key '%s'", fields_line + 1, tok);
#undef CTRL
		}
#undef IS
	}
	ck_assert_msg(have_src && have_dst, "line %zu: src= and dst= are required",
		      fields_line + 1);

	e = inca_frame_parse(ex->frame, ex->len, dst_port, &f);
	ck_assert_msg(e == INCA_WIRE_OK, "example at line %zu: frame: %s", fields_line + 1,
		      inca_wire_err_name(e));
	ck_assert_uint_eq(f.src_ip, src_ip);
	ck_assert_uint_eq(f.src_port, src_port);
	ck_assert_uint_eq(f.dst_ip, dst_ip);
	ck_assert_uint_eq(f.dst_port, dst_port);
	if (dst_port == INCA_ROCE_PORT) {
		/* A RoCEv2 example: every BTH/DETH field stated, the ICRC right. */
		ck_assert_msg(bth_dqpn >= 0 && bth_psn >= 0 && deth_qkey >= 0 && deth_sqpn >= 0,
			      "example at line %zu: a RoCEv2 frame states bth_dqpn, bth_psn, "
			      "deth_qkey and deth_sqpn", fields_line + 1);
		e = inca_roce_parse(f.msg, f.msg_len, &ri, &rmsg, &rlen);
		ck_assert_msg(e == INCA_WIRE_OK, "example at line %zu: RoCE: %s",
			      fields_line + 1, inca_wire_err_name(e));
		ck_assert_uint_eq(ri.dqpn, bth_dqpn);
		ck_assert_uint_eq(ri.psn, bth_psn);
		ck_assert_uint_eq(ri.qkey, deth_qkey);
		ck_assert_uint_eq(ri.sqpn, deth_sqpn);
		ip_len = INCA_ENCAP_LEN - 14 + f.msg_len;
		crc = spec_icrc(ex->frame + 14, ip_len);
		ck_assert_msg(rd32(ex->frame + 14 + ip_len - 4) ==
			      (((crc & 0xff) << 24) | ((crc & 0xff00) << 8) | ((crc >> 8) & 0xff00) |
			       (crc >> 24)),
			      "example at line %zu: ICRC is not %08x (least significant byte first)",
			      fields_line + 1, crc);
	} else {
		ck_assert_msg(bth_dqpn < 0 && bth_psn < 0 && deth_qkey < 0 && deth_sqpn < 0,
			      "example at line %zu: RoCE fields in a UDP frame", fields_line + 1);
		rmsg = f.msg;
		rlen = f.msg_len;
	}
	e = inca_msg_decode(rmsg, rlen, 0, m);
	ck_assert_msg(e == INCA_WIRE_OK, "example at line %zu: message: %s", fields_line + 1,
		      inca_wire_err_name(e));
	if (inca_roce_ext_decode(m, &rx)) {
		ck_assert_msg(ext_qpn >= 0 && ext_qkey >= 0, "example at line %zu: a RoCE "
			      "extension not stated (roce_qpn, roce_qkey)", fields_line + 1);
		ck_assert_uint_eq(rx.qpn, ext_qpn);
		ck_assert_uint_eq(rx.qkey, ext_qkey);
	} else {
		ck_assert_msg(ext_qpn < 0 && ext_qkey < 0, "example at line %zu: roce_qpn or "
			      "roce_qkey stated, no extension", fields_line + 1);
	}

#define SAME(fld) ck_assert_msg(m->fld == want.fld, "example at line %zu: " #fld " is %lld, " \
				"stated %lld", fields_line + 1, (long long)m->fld, \
				(long long)want.fld)
	SAME(version); SAME(type); SAME(dtype); SAME(op); SAME(job); SAME(rank);
	SAME(token); SAME(slot); SAME(flags); SAME(exp); SAME(seq); SAME(offset);
	SAME(count); SAME(reason); SAME(bitmap);
#undef SAME

	if ((m->type == INCA_MSG_CONTRIB || m->type == INCA_MSG_RESULT) &&
	    (m->flags & INCA_F_BRIEF)) {
		ck_assert_msg(!have_elems && !have_ctrl && m->body_len == 0,
			      "example at line %zu: a BRIEF data message states no elems= "
			      "and has no body", fields_line + 1);
	} else if (m->type == INCA_MSG_CONTRIB || m->type == INCA_MSG_RESULT) {
		ck_assert_msg(have_elems && !have_ctrl, "example at line %zu: a data message "
			      "states elems= and no control fields", fields_line + 1);
		ck_assert_msg(nelems == m->count, "example at line %zu: %u elems, count %u",
			      fields_line + 1, nelems, m->count);
		ck_assert_msg(m->dtype == INCA_DTYPE_INT32 || m->dtype == INCA_DTYPE_FP32,
			      "examples state 32-bit elements only");
		for (i = 0; i < nelems; i++)
			ck_assert_msg(rd32((const uint8_t *)m->body + 4 * i) ==
				      (uint32_t)ex->elems[i],
				      "example at line %zu: element %u differs", fields_line + 1, i);
	} else {
		ck_assert_msg(!have_elems, "elems= in a control message");
		ck_assert_msg(m->body_len >= INCA_CTRL_LEN || !have_ctrl,
			      "example at line %zu: control fields stated, no body",
			      fields_line + 1);
		if (m->body_len >= INCA_CTRL_LEN) {
			inca_ctrl_decode(m->body, &cg);
#define SAME(fld) ck_assert_msg(cg.fld == cw.fld, "example at line %zu: " #fld " is %lu, " \
				"stated %lu", fields_line + 1, (unsigned long)cg.fld, \
				(unsigned long)cw.fld)
			SAME(ver_min); SAME(ver_max); SAME(dtypes); SAME(ops);
			SAME(max_elems); SAME(nworkers); SAME(pool_size); SAME(window);
			SAME(caps); SAME(hb_ms); SAME(evict_ms); SAME(pool_base); SAME(session);
#undef SAME
		}
	}

	/* Exactly the frame the codec builds (TTL, DF, id, checksums); a RoCE
	 * one with BTH and DETH from inca_roce_encap(), UDP checksum 0. */
	ck_assert_ptr_eq(f.msg, ex->frame + INCA_ENCAP_LEN);
	if (dst_port == INCA_ROCE_PORT) {
		memcpy(rebuilt + INCA_ENCAP_LEN + INCA_ROCE_HDR_LEN, rmsg, rlen);
		ck_assert_uint_eq(inca_roce_encap(rebuilt + INCA_ENCAP_LEN, &ri, rlen), f.msg_len);
		memcpy(rebuilt + INCA_ENCAP_LEN + f.msg_len - INCA_ICRC_LEN,
		       f.msg + f.msg_len - INCA_ICRC_LEN, INCA_ICRC_LEN);
	} else {
		memcpy(rebuilt + INCA_ENCAP_LEN, f.msg, f.msg_len);
	}
	n = inca_frame_build(rebuilt, ex->frame, ex->frame + 6, src_ip, dst_ip, src_port,
			     dst_port, f.msg_len);
	if (dst_port == INCA_ROCE_PORT) {
		rebuilt[40] = 0;
		rebuilt[41] = 0;
	}
	ck_assert_uint_eq(n, ex->len);
	ck_assert_msg(memcmp(rebuilt, ex->frame, n) == 0,
		      "example at line %zu: not the frame inca_frame_build makes",
		      fields_line + 1);
}

/* Parse and check every example; returns how many there are. */
static size_t
load_examples(struct example *ex, size_t max)
{
	struct doc d;
	size_t i, j, n = 0, prev;

	doc_load(&d);
	for (i = 0; i < d.n; i++) {
		if (strcmp(d.lines[i], "```hex") != 0)
			continue;
		/* The last non-blank line above is the fields line. */
		for (prev = i; prev > 0 && d.lines[prev - 1][0] == '\0'; prev--)
			;
		ck_assert_msg(prev > 0 && strncmp(d.lines[prev - 1], "fields:", 7) == 0,
			      "hex block at line %zu has no 'fields:' line above it", i + 1);
		ck_assert_uint_lt(n, max);
		ex[n].line = prev - 1;
		j = parse_hex(&d, i, ex[n].frame, &ex[n].len);
		check_example(&d, prev - 1, &ex[n]);
		n++;
		i = j;
	}
	doc_free(&d);
	return n;
}

START_TEST(test_examples)
{
	struct example *ex = calloc(MAX_EX, sizeof(*ex));
	static const unsigned int need[] = {
		INCA_MSG_JOIN, INCA_MSG_JOIN_ACK, INCA_MSG_CONTRIB, INCA_MSG_RESULT,
		INCA_MSG_NACK,
	};
	size_t n, i, k;

	ck_assert_ptr_nonnull(ex);
	n = load_examples(ex, MAX_EX);
	ck_assert_uint_ge(n, 5);
	for (k = 0; k < sizeof(need) / sizeof(need[0]); k++) {
		for (i = 0; i < n && ex[i].m.type != need[k]; i++)
			;
		ck_assert_msg(i < n, "no worked example of %s", inca_msg_type_name(need[k]));
	}
	free(ex);
}
END_TEST

/*
 * A RESULT example is what the CONTRIB examples of the same chunk produce:
 * bitmap = their ranks, and for int32 SUM the wrapping sum of their elements
 * (computed here in uint32, where overflow is defined).
 */
START_TEST(test_example_result)
{
	struct example *ex = calloc(MAX_EX, sizeof(*ex));
	size_t n, r, c, checked = 0;
	uint32_t ranks, sum;
	unsigned int i;

	ck_assert_ptr_nonnull(ex);
	n = load_examples(ex, MAX_EX);
	for (r = 0; r < n; r++) {
		const struct inca_msg *rm = &ex[r].m;

		if (rm->type != INCA_MSG_RESULT)
			continue;
		ranks = 0;
		/* A rank's chunk may be shown twice (by UDP and by RoCEv2). */
		for (c = 0; c < n; c++) {
			const struct inca_msg *cm = &ex[c].m;

			if (cm->type != INCA_MSG_CONTRIB || cm->job != rm->job ||
			    cm->slot != rm->slot || cm->seq != rm->seq ||
			    (cm->flags & INCA_F_SET) != (rm->flags & INCA_F_SET))
				continue;
			ck_assert_uint_eq(cm->count, rm->count);
			ck_assert_uint_eq(cm->offset, rm->offset);
			ck_assert_uint_eq(cm->token, rm->token);
			ck_assert_uint_eq(cm->flags & ~(INCA_F_RETX | INCA_F_BRIEF),
					  rm->flags & ~(INCA_F_RETX | INCA_F_BRIEF));
			ranks |= UINT32_C(1) << cm->rank;
		}
		ck_assert_msg(ranks == rm->bitmap, "RESULT at line %zu: bitmap 0x%x, the "
			      "CONTRIB examples are from 0x%x", ex[r].line + 1, rm->bitmap, ranks);
		/* A BRIEF RESULT has no elements; a gathered one is the
		 * root's, the sum with the others' BRIEF (no) elements. */
		if (rm->dtype != INCA_DTYPE_INT32 || rm->op != INCA_OP_SUM ||
		    (rm->flags & INCA_F_BRIEF))
			continue;
		for (i = 0; i < rm->count; i++) {
			uint32_t summed = 0;

			sum = 0;
			for (c = 0; c < n; c++) {
				const struct inca_msg *cm = &ex[c].m;

				if (cm->type == INCA_MSG_CONTRIB && cm->job == rm->job &&
				    cm->slot == rm->slot && cm->seq == rm->seq &&
				    !(summed & (UINT32_C(1) << cm->rank))) {
					summed |= UINT32_C(1) << cm->rank;
					sum += (uint32_t)ex[c].elems[i];
				}
			}
			ck_assert_msg(sum == (uint32_t)ex[r].elems[i],
				      "RESULT at line %zu: element %u is not the sum",
				      ex[r].line + 1, i);
		}
		checked++;
	}
	ck_assert_msg(checked > 0, "no int32 SUM RESULT example with its contributions");
	free(ex);
}
END_TEST

static Suite *
spec_suite(void)
{
	Suite *s = suite_create("spec_layout");
	const struct {
		const char *name;
		const TTest *test;
	} tests[] = {
		{ "header_table", test_header_table },
		{ "ctrl_table", test_ctrl_table },
		{ "msg_types", test_msg_types },
		{ "nack_reasons", test_nack_reasons },
		{ "dtypes_ops", test_dtypes_ops },
		{ "flags_caps", test_flags_caps },
		{ "validation", test_validation },
		{ "sections", test_sections },
		{ "examples", test_examples },
		{ "example_result", test_example_result },
	};
	size_t i;
	TCase *tc;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		tc = tcase_create(tests[i].name);
		tcase_set_timeout(tc, 30);
		tcase_add_test(tc, tests[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(spec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
