#pragma once

// The process's one stop request (SIGINT, SIGTERM) as a file descriptor that
// any wait can poll beside what it waits for: a wait on a socket, a child or
// a delay wakes the moment a stop is asked for, instead of finishing first or
// polling a flag now and then.

namespace skewbench {

// An eventfd that becomes readable, and stays readable, once request_stop()
// ran. Created on first use; call it once before installing a signal handler
// that calls request_stop(), so that the handler never creates it.
int stop_request_fd();

// Makes stop_request_fd() readable. Async-signal-safe once the descriptor
// exists: a signal handler may call it.
void request_stop() noexcept;

// True once request_stop() ran (a poll of stop_request_fd() that never waits).
bool stop_requested();

// Waits up to `timeout_ms` for readability of `fd` or of `stop_fd` (-1 for
// none); true when `stop_fd` is readable. EINTR is retried.
bool wait_readable_or_stop(int fd, int stop_fd, int timeout_ms);

}  // namespace skewbench
