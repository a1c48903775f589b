#include "fs/namespace/blob_times.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace stampfs {

namespace {

constexpr int64_t kNsPerSec = 1000000000;

bool AllDigits(const std::string& s, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// Digits [from, to) as a number; REQUIRES AllDigits.
int64_t Number(const std::string& s, size_t from, size_t to) {
  int64_t v = 0;
  for (size_t i = from; i < to; ++i) v = v * 10 + (s[i] - '0');
  return v;
}

// A fraction's digits [from, to) as nanoseconds (past 9 digits: dropped).
int64_t FractionNs(const std::string& s, size_t from, size_t to) {
  int64_t ns = 0;
  for (size_t i = 0; i < 9; ++i) ns = ns * 10 + (from + i < to ? s[from + i] - '0' : 0);
  return ns;
}

std::optional<int64_t> ParseRfc3339(const std::string& s) {
  // YYYY-MM-DDTHH:MM:SS[.f+](Z|+HH:MM|-HH:MM)
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  for (size_t at : {0, 5, 8, 11, 14, 17}) {
    if (!AllDigits(s, at, at + (at == 0 ? 4 : 2))) return std::nullopt;
  }
  struct tm t = {};
  t.tm_year = static_cast<int>(Number(s, 0, 4)) - 1900;
  t.tm_mon = static_cast<int>(Number(s, 5, 7)) - 1;
  t.tm_mday = static_cast<int>(Number(s, 8, 10));
  t.tm_hour = static_cast<int>(Number(s, 11, 13));
  t.tm_min = static_cast<int>(Number(s, 14, 16));
  t.tm_sec = static_cast<int>(Number(s, 17, 19));
  if (t.tm_mon > 11 || t.tm_mday < 1 || t.tm_mday > 31 || t.tm_hour > 23 || t.tm_min > 59 ||
      t.tm_sec > 60) {
    return std::nullopt;
  }
  size_t i = 19;
  int64_t frac = 0;
  if (s[i] == '.') {
    size_t end = i + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == i + 1) return std::nullopt;
    frac = FractionNs(s, i + 1, end);
    i = end;
  }
  int64_t offset = 0;
  if (i + 1 == s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    offset = 0;
  } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':' &&
             AllDigits(s, i + 1, i + 3) && AllDigits(s, i + 4, i + 6)) {
    offset = (Number(s, i + 1, i + 3) * 60 + Number(s, i + 4, i + 6)) * 60;
    if (s[i] == '-') offset = -offset;
  } else {
    return std::nullopt;
  }
  const int64_t secs = static_cast<int64_t>(timegm(&t)) - offset;
  return secs * kNsPerSec + frac;
}

}  // namespace

std::string FormatBlobMtime(int64_t ns) {
  int64_t secs = ns / kNsPerSec;
  int64_t frac = ns % kNsPerSec;
  if (frac < 0) {
    frac += kNsPerSec;
    secs -= 1;
  }
  const time_t t = static_cast<time_t>(secs);
  struct tm utc;
  gmtime_r(&t, &utc);
  char buf[64];
  snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", utc.tm_year + 1900,
           utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
           static_cast<long long>(frac));
  return buf;
}

std::optional<int64_t> ParseBlobMtime(const std::string& s) {
  if (AllDigits(s, 0, s.size())) {
    if (s.size() > 19 || (s.size() == 19 && s > "9223372036854775807")) return std::nullopt;
    const int64_t v = Number(s, 0, s.size());
    return s.size() > 12 ? v : v * kNsPerSec;  // ns (stampfs), else Unix seconds
  }
  if (const size_t dot = s.find('.'); dot != std::string::npos && dot < 12 &&
                                      AllDigits(s, 0, dot) && AllDigits(s, dot + 1, s.size())) {
    return Number(s, 0, dot) * kNsPerSec + FractionNs(s, dot + 1, s.size());
  }
  return ParseRfc3339(s);
}

}  // namespace stampfs
