// One line per event, to stderr in the foreground and to syslog as a daemon.
// Messages never carry secrets: Status messages are built without keys or SAS.
#pragma once

#include <string>

namespace stampfs {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

void SetLogLevel(LogLevel level);
// Switches output to syslog (ident "stampfs").
void LogToSyslog();
bool ParseLogLevel(const std::string& text, LogLevel* level);

void Log(LogLevel level, const std::string& message);
inline void LogError(const std::string& m) { Log(LogLevel::kError, m); }
inline void LogWarning(const std::string& m) { Log(LogLevel::kWarning, m); }
inline void LogInfo(const std::string& m) { Log(LogLevel::kInfo, m); }
inline void LogDebug(const std::string& m) { Log(LogLevel::kDebug, m); }

}  // namespace stampfs
