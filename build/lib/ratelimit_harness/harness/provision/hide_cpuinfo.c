/* Preloaded into the server on virtual time, beside libfaketime (harness/provision/
 * virtual_time.py): /proc/cpuinfo cannot be opened with fopen().
 *
 * Why: Valkey 9 built with USE_PROCESSOR_CLOCK takes the x86 TSC for its monotonic clock when
 * /proc/cpuinfo lists constant_tsc, and its ustime() then reads the wall clock at most once per
 * millisecond of the TSC, answering that reading plus the TSC's microseconds since. The TSC is
 * an instruction, out of libfaketime's reach, so TIME lands up to 1 ms past the instant in the
 * clock file. Without /proc/cpuinfo Valkey keeps clock_gettime(CLOCK_MONOTONIC), which
 * libfaketime leaves real (DONT_FAKE_MONOTONIC=1), and ustime() reads the wall clock every time:
 * exactly the file's instant. Valkey reads /proc/cpuinfo nowhere else.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef FILE *(*opener)(const char *, const char *);

static FILE *open_unless_cpuinfo(opener *real, const char *name, const char *path,
                                 const char *mode) {
    if (path != NULL && strcmp(path, "/proc/cpuinfo") == 0) {
        errno = ENOENT;
        return NULL;
    }
    if (*real == NULL) {
        *real = (opener)dlsym(RTLD_NEXT, name);
        if (*real == NULL) {
            errno = ENOSYS;
            return NULL;
        }
    }
    return (*real)(path, mode);
}

FILE *fopen(const char *path, const char *mode) {
    static opener real;
    return open_unless_cpuinfo(&real, "fopen", path, mode);
}

FILE *fopen64(const char *path, const char *mode) {
    static opener real;
    return open_unless_cpuinfo(&real, "fopen64", path, mode);
}
