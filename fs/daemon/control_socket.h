// The control socket of a running mount: a unix stream socket that answers
// `stampfs stat` and `stampfs unmount`. A client connects, sends one command
// line ("stats\n") and reads the answer until the daemon closes the connection:
//   stats  -> one flat JSON object of every counter (storage/stats.h) + "\n"
//   other  -> what the daemon's handler for that word answers (Listen's
//             `commands`; "commit" in fs/daemon/main.cc), run on the socket's
//             one thread: other clients wait meanwhile
//
// The socket of the mount at MOUNTPOINT is RUNDIR/<first 16 hex of
// sha256(realpath MOUNTPOINT)>.sock, RUNDIR being /run/stampfs for root,
// else $XDG_RUNTIME_DIR/stampfs, else /tmp/stampfs-UID (mode 0700). The
// socket itself is mode 0600: the user who mounted (or root) may ask.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "storage/status.h"

namespace stampfs {

// Where the socket of the mount at `mountpoint` is (the mount point need not
// be mounted; it must exist so its real path is known).
Result<std::string> ControlSocketPath(const std::string& mountpoint);

// True when a live daemon answers on `path` (a leftover socket file of a
// daemon that died does not count).
bool ControlSocketLive(const std::string& path);

// Sends `command` and returns the answer, waiting for it `timeout_ms` at most.
Result<std::string> QueryControlSocket(const std::string& path, const std::string& command,
                                       int timeout_ms = 2000);

class ControlSocket {
 public:
  // Binds `path` (replacing a dead leftover) and answers on a thread until
  // destroyed; the socket file is removed then.
  using Commands = std::map<std::string, std::function<std::string()>>;
  static Result<std::unique_ptr<ControlSocket>> Listen(const std::string& path,
                                                       Commands commands = {});
  ~ControlSocket();
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

 private:
  ControlSocket(std::string path, Commands commands, int listen_fd, int stop_read, int stop_write);
  void Serve();
  void Answer(int fd);

  std::string path_;
  Commands commands_;
  int listen_fd_;
  int stop_read_;  // readable once the destructor wants the thread to end
  int stop_write_;
  std::thread thread_;
};

}  // namespace stampfs
