/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one YAML reader: YAML text (libyaml events) to a jansson value, for every YAML input gpulet
 * reads (CDI specs, Kubernetes manifests, the plugin's config file).
 *
 * The result is what sigs.k8s.io/yaml's YAMLToJSON makes of the same text, because that is what
 * reads these files for real (the CDI Go library, kubectl, the API server, the NVIDIA device
 * plugin). It converts YAML through its fork of go-yaml v2, so plain scalars are typed by go-yaml
 * v2's resolve table (github.com/kubernetes-sigs/yaml: goyaml.v2/resolve.go resolve() (the fork
 * before commit 69e45c1 moved it to go.yaml.in/yaml/v2); yaml.go convertToJSONableObject()
 * for keys):
 *  - booleans: y Y yes Yes YES on On ON true True TRUE, and n N no No NO off Off OFF false False
 *    FALSE (YAML 1.1, not YAML 1.2's true/false only);
 *  - null: empty, ~ null Null NULL;
 *  - integers: Go's strconv base 0 after dropping '_' (0x.. hex, 0o.. and leading-0 octal, 0b..
 *    binary, optional sign); a positive one above INT64_MAX becomes a JSON real;
 *  - floats: [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)? (so 1e3 and 08 are floats);
 *    .inf/.nan are errors, as they are for YAMLToJSON (JSON has no such numbers);
 *  - everything else, every quoted scalar and every !!str is a string. Timestamps stay the text
 *    written (go-yaml would rewrite 2001-12-14 as 2001-12-14T00:00:00Z); merge keys (<<) are
 *    plain keys.
 * Mapping keys are typed the same way and then written as JSON keys the way sigs.k8s.io/yaml
 * does: `1:` is "1", `on:` is "true", `1.5:` is "1.5"; a null or collection key is an error.
 * (Decoding into a Go struct, sigs.k8s.io/yaml also turns a number or boolean into its text when
 * the field is a string; we keep the JSON type and leave that judgement to the caller.)
 * Aliases share the anchored value (json_incref); a document whose aliases expand beyond a
 * bound is rejected (E2BIG), like go-yaml's "excessive aliasing"; so are more than 256 anchors.
 * Nesting is bounded (64).
 * Errors are "FILE:LINE:COL: what" in err (1-based, the position libyaml reports).
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

enum {
	/* *ret is a JSON array with every document of the stream (an empty document is null);
	 * without it the stream must hold at most one document (none reads as null) */
	YAML_ALL_DOCUMENTS = 1u << 0,
	/* a duplicate key is an error, as yaml.UnmarshalStrict (the CDI library); without it the last
	 * one wins, as yaml.Unmarshal and YAMLToJSON */
	YAML_STRICT = 1u << 1,
};

/* 1-based line and column in the YAML text */
struct yaml_pos {
	unsigned line, col;
};

/* Where each key, key's value, array item and the document of a result start; valid while that result lives. */
struct yaml_where;

/*
 * Read buf[0..len) (filename only names it in messages) into *ret. With ret_where (may be NULL),
 * also the positions table, freed with yaml_where_free(). Returns 0, or -errno with err filled:
 * -EINVAL (syntax, "FILE:LINE:COL: ..."), -E2BIG (too many anchors, aliases expand too far),
 * -ENOMEM. *ret and *ret_where are written only on success.
 */
int yaml_to_json(const char *buf, size_t len, const char *filename, unsigned flags, json_t **ret,
		 struct yaml_where **ret_where, struct gerr *err);

/* Position of the key `key` of `object` (a value in the result): 0, or -ENOENT. */
int yaml_where_key(const struct yaml_where *w, const json_t *object, const char *key, struct yaml_pos *ret);

void yaml_where_free(struct yaml_where *w);
DEFINE_CLEANUP_FUNC(struct yaml_where, yaml_where_free)

/*
 * A value of a result with where it starts, as Go's yaml.v3 Node gives its line and column: a
 * mapping's members with their keys, a sequence's items, in the document's order. A walker over a
 * file's schema reads values and places from it alone, without a lookup per value.
 */
struct yaml_node {
	json_t *v;              /* borrowed from the result */
	const char *key;        /* a mapping member's key (the result's); NULL for an item and the document */
	struct yaml_pos at;     /* where the value starts: its first character, as libyaml reports the node's start
				 * (a null written as nothing: where the parser met the missing value) */
	struct yaml_pos key_at; /* a member: where its key is */
	struct yaml_node *kids; /* a mapping's members or a sequence's items, n of them */
	size_t n;
};
#define YAML_TREE_MAX_NODES (1u << 16) /* a file read this way has a schema: far fewer values */

/*
 * The result doc of yaml_to_json() with its positions w as nodes, down to max_depth levels below
 * the document (deeper collections have no kids). The nodes live while doc and w do; free them with
 * yaml_node_free(). 0; -E2BIG past YAML_TREE_MAX_NODES (aliases can repeat a value), -ENOMEM.
 */
int yaml_where_tree(const struct yaml_where *w, json_t *doc, unsigned max_depth, struct yaml_node **ret);
void yaml_node_free(struct yaml_node *n);
DEFINE_CLEANUP_FUNC(struct yaml_node, yaml_node_free)
