/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading /proc/<pid>/mountinfo (proc(5)): the jail finds every procfs and other kernel file system
 * of its mount namespace there (isolate.c). Mount points are the kernel's octal-escaped paths, which
 * hold names the image and the pod chose.
 */
#pragma once

/*
 * The next line of text at *cursor (changed in place; *cursor moves past it): its mount point,
 * unescaped, and its file system type, both pointing into the text. 1: a line; 0: no more lines;
 * -EINVAL: a line without the fields ("ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE ...").
 */
int mountinfo_next(char **cursor, char **ret_point, char **ret_type);
