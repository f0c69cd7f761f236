#pragma once

// cpp-httplib hands a request handler the peer's address but not the socket.
// Two behaviours need the socket itself: dropping an acknowledgement (close the
// connection without a response byte) and closing idle keep-alive connections
// at shutdown. These helpers find a connection's descriptor by scanning
// /proc/self/fd for TCP sockets and comparing their addresses, which works
// with any cpp-httplib version.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skewbench::remote_effect {

struct SocketEndpoints {
  int fd = -1;
  std::string local_addr;  // numeric, as getnameinfo(NI_NUMERICHOST) prints it
  int local_port = 0;
  std::string peer_addr;
  int peer_port = 0;
};

// Every connected TCP socket of this process (listening sockets excluded).
std::vector<SocketEndpoints> connected_tcp_sockets();

// The descriptor of the connection with this local port and this peer, if any.
std::optional<int> find_connection_socket(int local_port, std::string_view peer_addr, int peer_port);

}  // namespace skewbench::remote_effect
