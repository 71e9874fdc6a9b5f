/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: a command line through the option engine (src/util/optspec.h, src/util/argv.h):
 * the input's lines are the arguments, read against a table with a row of every kind, as a verb's
 * flags are (Go-style single-dash names, groups of short letters, values in the next token).
 */
#include "fuzz.h"
#include "util/enumtab.h"
#include "util/optspec.h"

#define MAX_ARGS 64

struct fz {
	const char *argv_text;
	char *str, *path;
	char buf[16];
	bool set, sw;
	unsigned n, bits;
	int64_t dur;
	int color;
};

static const struct enum_name colors[] = {{1, "red"}, {2, "green"}, {4, "blue"}};
static const struct enum_name words[] = {{-1, "infinite"}};

static int call(void *opts, const char *value, struct gerr *err)
{
	(void)opts;
	(void)err;
	return value && value[0] == 's' ? OPTSPEC_DONE : 0;
}

#define F(x) offsetof(struct fz, x)
static const struct optspec rows[] = {
    {.name = "text", .short_name = 't', .kind = OPT_ARGV, .arg = "T", .off = F(argv_text)},
    {.name = "str", .short_name = 's', .kind = OPT_STR, .arg = "S", .def = "d", .off = F(str), .max = 64},
    {.name = "path", .kind = OPT_PATH, .arg = "P", .off = F(path)},
    {.name = "buf", .kind = OPT_STR, .arg = "B", .off = F(buf), .size = sizeof(((struct fz *)0)->buf)},
    {.name = "set", .short_name = 'e', .kind = OPT_SET, .off = F(set)},
    {.name = "sw", .short_name = 'w', .alias = "switch", .kind = OPT_BOOL, .off = F(sw)},
    {.name = "n", .kind = OPT_UINT, .arg = "N", .off = F(n), .min = 1, .max = 10},
    {.name = "dur", .kind = OPT_DURATION, .arg = "D", .off = F(dur), .max = 3600000, OPTSPEC_NAMES(words)},
    {.name = "color", .short_name = 'c', .kind = OPT_ENUM, .arg = "C", .off = F(color), OPTSPEC_NAMES(colors)},
    {.name = "bits", .kind = OPT_FLAGS, .arg = "B", .off = F(bits), OPTSPEC_NAMES(colors)},
    {.name = "call", .kind = OPT_CALL, .arg = "X", .call = call},
    {.name = "list", .kind = OPT_CALL, .call = call},
    {.name = "help", .short_name = 'h', .kind = OPT_HELP},
    {.name = "version", .kind = OPT_VERSION},
    {0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct optspec_cli cli = {.rows = rows, .env = OPT_ENV_EMPTY_URFAVE, .version_v = true};
	char *text = fuzz_cstr(data, size), *argv[MAX_ARGS + 1] = {(char *)"verb"};
	struct fz opts = {0};
	enum optspec_action action;
	enum optspec_fail fail;
	struct gerr err = {0};
	int argc = 1;

	if (!text)
		return 0;
	for (char *save = NULL, *tok = strtok_r(text, "\n", &save); tok && argc < MAX_ARGS;
	     tok = strtok_r(NULL, "\n", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	optspec_parse(&cli, argc, argv, &opts, &action, &fail, &err);
	optspec_free(rows, &opts);
	free(text);
	return 0;
}
