// The control socket: stats over a unix socket, one daemon per socket path.
#include "fs/daemon/control_socket.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace stampfs {
namespace {

// In a directory of this user only, as the daemon's run directory is.
std::string SocketPath() {
  auto dir = std::filesystem::temp_directory_path() / ("stampfs-ctl-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  return (dir / "test.sock").string();
}

TEST(ControlSocket, AnswersStatsAsOneFlatJsonObject) {
  const std::string path = SocketPath();
  auto socket = ControlSocket::Listen(path);
  ASSERT_TRUE(socket.ok()) << socket.status().ToString();
  EXPECT_TRUE(ControlSocketLive(path));
  auto answer = QueryControlSocket(path, "stats");
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  auto json = nlohmann::json::parse(*answer);
  ASSERT_TRUE(json.is_object());
  EXPECT_TRUE(json.contains("requests.total"));
  EXPECT_TRUE(json.contains("bytes.up"));
  auto unknown = QueryControlSocket(path, "format c:");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->rfind("error", 0), 0u);
}

TEST(ControlSocket, ASecondListenerOnALiveSocketIsRefusedAndADeadOneIsReplaced) {
  const std::string path = SocketPath();
  {
    auto first = ControlSocket::Listen(path);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto second = ControlSocket::Listen(path);
    EXPECT_TRUE(second.status().Is(Code::kConflict));
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // removed with its daemon
  EXPECT_FALSE(ControlSocketLive(path));
  auto again = ControlSocket::Listen(path);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

TEST(ControlSocket, ASocketDirectoryOthersMayWriteIsRefused) {
  auto dir =
      std::filesystem::temp_directory_path() / ("stampfs-ctl-open-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  auto socket = ControlSocket::Listen((dir / "x.sock").string());
  EXPECT_FALSE(socket.ok());
  std::filesystem::remove_all(dir);
}

TEST(ControlSocket, ThePathIsFoundFromTheMountPointsRealPath) {
  auto a = ControlSocketPath("/tmp");
  auto b = ControlSocketPath("/tmp/../tmp/");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *ControlSocketPath("/"));
  EXPECT_FALSE(ControlSocketPath("/no/such/dir").ok());
}

}  // namespace
}  // namespace stampfs
