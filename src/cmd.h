/* SPDX-License-Identifier: Apache-2.0 */
/* Subcommand entry points and the option plumbing they share. */
#pragma once

#define EXIT_USAGE 2

/* Each verb: parse its options with getopt_long, call core, print, return the exit code. */
int cmd_devices(int argc, char **argv);
int cmd_plugin(int argc, char **argv);
int cmd_cdi(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_lint(int argc, char **argv);
int cmd_versions(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_labels(int argc, char **argv);

/* Environment fallbacks shared by the verbs that open NVML. */
const char *cmd_env_or(const char *name, const char *fallback);
