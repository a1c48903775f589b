#include "fs/base/log.h"

#include <syslog.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace stampfs {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<bool> g_syslog{false};
std::mutex g_mu;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

void LogToSyslog() {
  openlog("stampfs", LOG_PID, LOG_DAEMON);
  g_syslog = true;
}

bool ParseLogLevel(const std::string& text, LogLevel* level) {
  for (LogLevel l : {LogLevel::kError, LogLevel::kWarning, LogLevel::kInfo, LogLevel::kDebug}) {
    if (text == LevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) > g_level) return;
  if (g_syslog) {
    static const int kPriority[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    syslog(kPriority[static_cast<int>(level)], "%s", message.c_str());
    return;
  }
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s stampfs %s: %s\n", stamp, LevelName(level), message.c_str());
}

}  // namespace stampfs
