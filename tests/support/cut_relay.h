// CutRelay: a TCP relay on 127.0.0.1 in front of a real server, for tests
// that need a connection lost at an exact point, such as in the middle of a
// result set. The server stays real; only the network between it and the
// client is faulted.
//
// It serves one client connection at a time, in the order they arrive (a
// client that reconnects after a cut gets a fresh relayed connection).
// Armed with CutAfterServerBytes(n), it forwards n more bytes from the
// server to the client and then closes both sides of the connection
// without sending anything else: to the client this is a lost connection,
// not an error the server reported.
//
// Thread-safety: the public methods are safe from any thread.
#pragma once

#include <cstddef>
#include <memory>

#include "base/result.h"

namespace msgx::testing {

class CutRelay {
 public:
  // Listens on a free port of 127.0.0.1 and relays to 127.0.0.1:target_port.
  static Result<std::unique_ptr<CutRelay>> Start(int target_port);
  ~CutRelay();
  CutRelay(const CutRelay&) = delete;
  CutRelay& operator=(const CutRelay&) = delete;

  int port() const;
  // The current connection forwards `bytes` more from the server, then is
  // cut. Connections made after the cut are relayed in full again.
  void CutAfterServerBytes(std::size_t bytes);
  // How many connections have been cut so far.
  int cuts() const;

 private:
  struct Impl;
  explicit CutRelay(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace msgx::testing
