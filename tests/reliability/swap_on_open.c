/* An LD_PRELOAD shim for test_run_binding.py: the first open(2) of a file named
 * $HEC_SWAP_TARGET (its base name) first renames $HEC_SWAP_WITH over it. The roles check an
 * upload's or a result's signed digest when they index the files (through C++ streams, which
 * do not come here) and read the content later with open(2): this swaps the file between the
 * two, deterministically. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static int swapped;

static void swap_if_target(const char* path) {
  const char* target = getenv("HEC_SWAP_TARGET");
  const char* with = getenv("HEC_SWAP_WITH");
  if (target == NULL || with == NULL || path == NULL) return;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strcmp(base, target) != 0) return;
  if (__atomic_exchange_n(&swapped, 1, __ATOMIC_SEQ_CST)) return;
  if (rename(with, path) != 0) perror("swap_on_open: rename");
}

#define OPEN_SHIM(name)                                           \
  int name(const char* path, int flags, ...) {                    \
    mode_t mode = 0;                                              \
    if (flags & (O_CREAT | O_TMPFILE)) {                          \
      va_list ap;                                                 \
      va_start(ap, flags);                                        \
      mode = (mode_t)va_arg(ap, int);                             \
      va_end(ap);                                                 \
    }                                                             \
    swap_if_target(path);                                         \
    int (*real)(const char*, int, ...) = dlsym(RTLD_NEXT, #name); \
    return real(path, flags, mode);                               \
  }

OPEN_SHIM(open)
OPEN_SHIM(open64)
