#pragma once

// The process tree and the listening sockets as /proc shows them: whose
// descendant a process is, and which processes hold the socket listening on a
// port. It only reads; the supervisor (common/subprocess.hpp) decides whom to
// signal from what it finds here.

#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace skewbench::process_tree {

// True when /proc belongs to this process's pid namespace (/proc/self is
// getpid()). After `unshare --pid --fork` without --mount-proc it is not, and
// a pid read there names another process than the one that pid is here.
bool proc_is_own_namespace();

// A process as /proc/PID/stat gives it.
struct ProcessEntry {
  pid_t pid = 0;
  pid_t parent = 0;
  bool zombie = false;  // exited, not yet reaped by its parent
};

// The entry of one process; nullopt when it is gone.
std::optional<ProcessEntry> entry_of(pid_t pid);

// Every descendant of `root` (root excluded), zombies included, each after
// its parent, read in one pass over /proc.
std::vector<ProcessEntry> descendants_of(pid_t root);

// True when `pid` is a descendant of `root` now (its chain of parents leads
// to root).
bool is_descendant_of(pid_t pid, pid_t root);

// The command line of `pid`, its arguments joined by spaces and cut to
// `max_chars`; empty when it is gone or has none (a kernel thread).
std::string command_line_of(pid_t pid, std::size_t max_chars = 200);

// The inodes of the TCP sockets listening on `port` on any local address, from
// /proc/net/tcp and /proc/net/tcp6 (this network namespace).
std::vector<unsigned long> listening_socket_inodes(int port);

// The processes among `pids` holding an open descriptor of the socket `inode`;
// with `pids` empty, every process /proc lets this one read.
std::vector<pid_t> holders_of_socket(unsigned long inode, const std::vector<pid_t>& pids);

}  // namespace skewbench::process_tree
