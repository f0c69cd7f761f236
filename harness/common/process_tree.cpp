#include "common/process_tree.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

namespace skewbench::process_tree {
namespace {

namespace fs = std::filesystem;

std::optional<pid_t> pid_of_name(const std::string& name) {
  pid_t pid = 0;
  const auto* end = name.data() + name.size();
  const auto [rest, error] = std::from_chars(name.data(), end, pid);
  if (error != std::errc() || rest != end || pid <= 0) return std::nullopt;
  return pid;
}

// Every process /proc lists now.
std::vector<ProcessEntry> all_entries() {
  std::vector<ProcessEntry> entries;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto pid = pid_of_name(it->path().filename().string());
    if (!pid) continue;
    if (auto entry = entry_of(*pid)) entries.push_back(*entry);
  }
  return entries;
}

// "socket:[12345]" -> 12345.
std::optional<unsigned long> socket_inode(const std::string& link) {
  constexpr std::string_view prefix = "socket:[";
  if (link.size() < prefix.size() + 2 || link.compare(0, prefix.size(), prefix) != 0 || link.back() != ']') {
    return std::nullopt;
  }
  unsigned long inode = 0;
  const auto* first = link.data() + prefix.size();
  const auto* last = link.data() + link.size() - 1;
  const auto [rest, error] = std::from_chars(first, last, inode);
  if (error != std::errc() || rest != last) return std::nullopt;
  return inode;
}

bool holds_socket(pid_t pid, unsigned long inode) {
  std::error_code ec;
  for (fs::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code link_ec;
    const auto target = fs::read_symlink(it->path(), link_ec);
    if (link_ec) continue;
    if (socket_inode(target.string()) == inode) return true;
  }
  return false;
}

// One table of /proc/net: the inodes of the sockets in state LISTEN (0A) on `port`.
void listening_in(const char* table, int port, std::vector<unsigned long>& inodes) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) {
      continue;
    }
    const auto colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos) continue;
    int local_port = 0;
    const auto* first = local.data() + colon + 1;
    const auto* last = local.data() + local.size();
    const auto [rest, error] = std::from_chars(first, last, local_port, 16);
    if (error == std::errc() && rest == last && local_port == port) inodes.push_back(inode);
  }
}

}  // namespace

bool proc_is_own_namespace() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self", ec);
  return !ec && pid_of_name(self.string()) == ::getpid();
}

std::optional<ProcessEntry> entry_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; the
  // last ')' ends it.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  char state = 0;
  pid_t parent = 0;
  if (!(rest >> state >> parent)) return std::nullopt;
  return ProcessEntry{pid, parent, state == 'Z'};
}

std::vector<ProcessEntry> descendants_of(pid_t root) {
  std::multimap<pid_t, ProcessEntry> children;
  for (const auto& entry : all_entries()) children.emplace(entry.parent, entry);
  std::vector<ProcessEntry> found;
  std::vector<pid_t> parents = {root};
  while (!parents.empty()) {
    const pid_t parent = parents.back();
    parents.pop_back();
    const auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      found.push_back(it->second);
      parents.push_back(it->second.pid);
    }
  }
  return found;
}

bool is_descendant_of(pid_t pid, pid_t root) {
  // A chain of parents is far shorter than this; the bound only guards a
  // /proc that changes while it is read.
  for (int depth = 0; depth < 4096 && pid > 1; ++depth) {
    const auto entry = entry_of(pid);
    if (!entry) return false;
    if (entry->parent == root) return true;
    pid = entry->parent;
  }
  return false;
}

std::string command_line_of(pid_t pid, std::size_t max_chars) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text;
  char c = 0;
  while (text.size() <= max_chars && in.get(c)) text.push_back(c == '\0' ? ' ' : c);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text.size() > max_chars) text = text.substr(0, max_chars) + "...";
  return text;
}

std::vector<unsigned long> listening_socket_inodes(int port) {
  std::vector<unsigned long> inodes;
  listening_in("/proc/net/tcp", port, inodes);
  listening_in("/proc/net/tcp6", port, inodes);
  return inodes;
}

std::vector<pid_t> holders_of_socket(unsigned long inode, const std::vector<pid_t>& pids) {
  std::vector<pid_t> candidates = pids;
  if (candidates.empty()) {
    for (const auto& entry : all_entries()) candidates.push_back(entry.pid);
  }
  std::vector<pid_t> holders;
  for (const pid_t pid : candidates) {
    if (holds_socket(pid, inode)) holders.push_back(pid);
  }
  return holders;
}

}  // namespace skewbench::process_tree
