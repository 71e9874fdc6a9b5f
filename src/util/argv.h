/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Upstream's programs take Go-style single-dash long flags (urfave/cli over Go's flag package:
 * -mig-strategy=mixed). Rewrite each argv token "-name[=value]" whose name is exactly one of the long
 * options in lo (getopt_long's array, ends with a zero row), or looks like one (dashed words), to
 * "--name[=value]", and "-x=value" for a short option x that takes a value to "--LONG=value" (Go's
flag package reads "-o=-" as -o with "-", where getopt would take "=-"). A token made only of
 * letters in shorts (getopt's optstring) stays a group of short options, the value of an option given
 * as the next token is left alone, and so is everything after "--".
 */
struct option;
void argv_single_dash_longs(int argc, char **argv, const struct option *lo, const char *shorts);

/*
 * The first "--name[=value]" token of argv (after argv_single_dash_longs(), before "--") whose name
 * is only the beginning of one of lo's, or NULL. getopt_long takes any unique prefix ("--mig" for
 * --mig-strategy); Go's flag package wants the whole name, and so does gpulet.
 */
const char *argv_inexact_long(int argc, char *const *argv, const struct option *lo, const char *shorts);
