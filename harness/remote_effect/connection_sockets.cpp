#include "remote_effect/connection_sockets.hpp"

#include <charconv>
#include <filesystem>
#include <system_error>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace skewbench::remote_effect {
namespace {

// Numeric host and port of a socket address, formatted like cpp-httplib does.
bool describe(const sockaddr_storage& address, socklen_t length, std::string& host, int& port) {
  char host_buffer[NI_MAXHOST];
  char port_buffer[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host_buffer, sizeof(host_buffer), port_buffer,
                    sizeof(port_buffer), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  host = host_buffer;
  const std::string_view port_text(port_buffer);
  return std::from_chars(port_text.data(), port_text.data() + port_text.size(), port).ec == std::errc{};
}

std::optional<SocketEndpoints> tcp_endpoints(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return std::nullopt;
  int type = 0;
  socklen_t type_length = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 || type != SOCK_STREAM) {
    return std::nullopt;
  }
  sockaddr_storage local{};
  socklen_t local_length = sizeof(local);
  sockaddr_storage peer{};
  socklen_t peer_length = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0) {
    return std::nullopt;  // not connected (a listening socket, or already shut down)
  }
  if (local.ss_family != AF_INET && local.ss_family != AF_INET6) return std::nullopt;
  SocketEndpoints endpoints;
  endpoints.fd = fd;
  if (!describe(local, local_length, endpoints.local_addr, endpoints.local_port) ||
      !describe(peer, peer_length, endpoints.peer_addr, endpoints.peer_port)) {
    return std::nullopt;
  }
  return endpoints;
}

}  // namespace

std::vector<SocketEndpoints> connected_tcp_sockets() {
  std::vector<SocketEndpoints> sockets;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const auto name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc{}) continue;
    if (auto endpoints = tcp_endpoints(fd)) sockets.push_back(std::move(*endpoints));
  }
  return sockets;
}

std::optional<int> find_connection_socket(int local_port, std::string_view peer_addr, int peer_port) {
  for (const auto& socket : connected_tcp_sockets()) {
    if (socket.local_port == local_port && socket.peer_port == peer_port && socket.peer_addr == peer_addr) {
      return socket.fd;
    }
  }
  return std::nullopt;
}

}  // namespace skewbench::remote_effect
