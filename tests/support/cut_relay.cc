#include "tests/support/cut_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace msgx::testing {
namespace {

constexpr std::size_t kNoCut = static_cast<std::size_t>(-1);

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// Writes all of [data, data + n) to fd; false when the peer is gone.
bool WriteAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

struct CutRelay::Impl {
  int target_port = 0;
  int listen_fd = -1;
  int port = 0;
  int wake[2] = {-1, -1};  // the destructor writes here to end the thread
  std::mutex mu;
  std::size_t server_budget = kNoCut;  // guarded by mu
  std::atomic<int> cuts{0};
  std::thread thread;

  // Relays one accepted client until either side closes, the budget runs
  // out, or the relay is asked to stop. Returns false to stop.
  bool Serve(int client) {
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in to = Loopback(target_port);
    if (server < 0 || ::connect(server, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
      if (server >= 0) ::close(server);
      return true;  // the client sees its connection closed
    }
    bool keep_running = true;
    char buf[16384];
    for (;;) {
      pollfd fds[3] = {{client, POLLIN, 0}, {server, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[2].revents != 0) {
        keep_running = false;
        break;
      }
      if (fds[0].revents != 0) {
        const ssize_t n = ::recv(client, buf, sizeof(buf), 0);
        if (n <= 0 || !WriteAll(server, buf, static_cast<std::size_t>(n))) break;
      }
      if (fds[1].revents != 0) {
        const ssize_t n = ::recv(server, buf, sizeof(buf), 0);
        if (n <= 0) break;
        std::size_t forward = static_cast<std::size_t>(n);
        bool cut = false;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (server_budget != kNoCut) {
            if (forward >= server_budget) {
              forward = server_budget;
              cut = true;
              server_budget = kNoCut;
            } else {
              server_budget -= forward;
            }
          }
        }
        if (!WriteAll(client, buf, forward)) break;
        if (cut) {
          cuts.fetch_add(1);
          break;
        }
      }
    }
    ::shutdown(client, SHUT_RDWR);
    ::close(server);
    return keep_running;
  }

  void Run() {
    for (;;) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const bool keep_running = Serve(client);
      ::close(client);
      if (!keep_running) return;
    }
  }
};

Result<std::unique_ptr<CutRelay>> CutRelay::Start(int target_port) {
  auto impl = std::make_unique<Impl>();
  impl->target_port = target_port;
  impl->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) return Status::Infra(std::string("relay socket: ") + strerror(errno));
  sockaddr_in any = Loopback(0);
  socklen_t len = sizeof(any);
  if (::bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 ||
      ::listen(impl->listen_fd, 8) != 0 ||
      ::getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&any), &len) != 0 ||
      ::pipe2(impl->wake, O_CLOEXEC) != 0) {
    const std::string why = strerror(errno);
    ::close(impl->listen_fd);
    return Status::Infra("relay listen: " + why);
  }
  impl->port = ntohs(any.sin_port);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<CutRelay>(new CutRelay(std::move(impl)));
}

CutRelay::CutRelay(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CutRelay::~CutRelay() {
  const char stop = 1;
  (void)!::write(impl_->wake[1], &stop, 1);
  impl_->thread.join();
  ::close(impl_->listen_fd);
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

int CutRelay::port() const { return impl_->port; }

void CutRelay::CutAfterServerBytes(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->server_budget = bytes;
}

int CutRelay::cuts() const { return impl_->cuts.load(); }

}  // namespace msgx::testing
