/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Upstream's programs take Go-style single-dash long flags (urfave/cli over Go's flag package:
 * -mig-strategy=mixed). Rewrite each argv token "-name[=value]" whose name is exactly one of the long
 * options in lo (getopt_long's array, ends with a zero row), or looks like one (dashed words), to
 * "--name[=value]". A token made only of
 * letters in shorts (getopt's optstring) stays a group of short options, the value of an option given
 * as the next token is left alone, and so is everything after "--".
 */
struct option;
void argv_single_dash_longs(int argc, char **argv, const struct option *lo, const char *shorts);
