/*
 * libskewbench-wallclock: a process's wall clock, read from a file that
 * skewbench writes (docs/real-clocks.md, "Two clock libraries").
 *
 * Preloaded (LD_PRELOAD) into a process skewbench starts, it answers every
 * read of the wall clock (clock_gettime of CLOCK_REALTIME, CLOCK_REALTIME_COARSE
 * and CLOCK_TAI, gettimeofday, time, timespec_get) with the whole Unix second
 * held in the file named by $SKEWBENCH_WALL_CLOCK_FILE, read again at every
 * call: a clock that stands still until skewbench writes the next second.
 * Every other clock (CLOCK_MONOTONIC and the rest) goes to the kernel as it
 * is, so timers and timeouts keep real time.
 *
 * It exists beside libfaketime for the programs libfaketime 0.9.10 cannot
 * start: its initialisation allocates memory, and a program whose allocator
 * reads a clock or makes a condition variable while it initialises itself
 * (jemalloc, as in Redis and Valkey) deadlocks in that allocation. This
 * library allocates nothing, looks up no symbol and has no constructor: it
 * reads its file with system calls, and the environment once.
 *
 * It fakes the reading of the wall clock only: a wait until an absolute
 * CLOCK_REALTIME time (pthread_cond_timedwait, sem_timedwait) is still the
 * kernel's, on the real clock, which is why skewbench starts Redis with its
 * jemalloc background thread off (its target files).
 *
 * A file that cannot be read or does not hold a second is not a time: the
 * process writes why on stderr and aborts, so that a wrong clock is seen,
 * never used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define EXPORTED __attribute__((visibility("default")))

static void fail(const char* why) {
  static const char prefix[] = "libskewbench-wallclock: ";
  (void)!write(STDERR_FILENO, prefix, sizeof prefix - 1);
  (void)!write(STDERR_FILENO, why, strlen(why));
  (void)!write(STDERR_FILENO, "\n", 1);
  abort();
}

/* The clock file's path, copied from the environment at the first read:
 * a program that rewrites its environment later (Redis moves it for its
 * process title) keeps reading the same file. */
static char clock_path[4096];
static atomic_int clock_path_state; /* 0 unset, 1 being copied, 2 ready */

static const char* clock_file(void) {
  if (atomic_load(&clock_path_state) == 2) return clock_path;
  int expected = 0;
  if (atomic_compare_exchange_strong(&clock_path_state, &expected, 1)) {
    const char* path = getenv("SKEWBENCH_WALL_CLOCK_FILE");
    if (path == NULL || path[0] == '\0') fail("SKEWBENCH_WALL_CLOCK_FILE is not set");
    if (strlen(path) >= sizeof clock_path) fail("SKEWBENCH_WALL_CLOCK_FILE is too long");
    strcpy(clock_path, path);
    atomic_store(&clock_path_state, 2);
  }
  while (atomic_load(&clock_path_state) != 2) {
  }
  return clock_path;
}

/* The second in the file: digits, an optional newline, nothing else. */
static int64_t file_seconds(void) {
  int fd;
  do {
    fd = (int)syscall(SYS_openat, AT_FDCWD, clock_file(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    fail(errno == EMFILE ? "cannot open the clock file: out of file descriptors" : "cannot open the clock file");
  char text[32];
  long length;
  do {
    length = (long)syscall(SYS_read, fd, text, sizeof text - 1);
  } while (length < 0 && errno == EINTR);
  syscall(SYS_close, fd);
  if (length <= 0) fail("cannot read the clock file");
  int64_t seconds = 0;
  long i = 0;
  for (; i < length && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (seconds > (INT64_MAX - 9) / 10) fail("the second in the clock file is too large");
    seconds = seconds * 10 + (text[i] - '0');
  }
  if (i == 0 || (i < length && !(text[i] == '\n' && i + 1 == length))) {
    fail("the clock file holds no Unix second (digits and a newline)");
  }
  return seconds;
}

static int is_wall_clock(clockid_t clock) {
  return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_TAI;
}

EXPORTED int clock_gettime(clockid_t clock, struct timespec* ts) {
  if (!is_wall_clock(clock)) return (int)syscall(SYS_clock_gettime, clock, ts);
  ts->tv_sec = (time_t)file_seconds();
  ts->tv_nsec = 0;
  return 0;
}

EXPORTED int __clock_gettime(clockid_t clock, struct timespec* ts) { return clock_gettime(clock, ts); }

EXPORTED int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  tv->tv_sec = (time_t)file_seconds();
  tv->tv_usec = 0;
  if (tz != NULL) memset(tz, 0, sizeof(struct timezone));
  return 0;
}

EXPORTED time_t time(time_t* out) {
  const time_t now = (time_t)file_seconds();
  if (out != NULL) *out = now;
  return now;
}

EXPORTED int timespec_get(struct timespec* ts, int base) {
  if (base != TIME_UTC || clock_gettime(CLOCK_REALTIME, ts) != 0) return 0;
  return base;
}
