#include "storage/status.h"

#include <cerrno>
#include <cstring>

namespace stampfs {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kPreconditionFailed: return "PreconditionFailed";
    case Code::kConflict: return "Conflict";
    case Code::kAuth: return "Auth";
    case Code::kThrottled: return "Throttled";
    case Code::kTimeout: return "Timeout";
    case Code::kTransport: return "Transport";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kTooLarge: return "TooLarge";
    case Code::kCorruption: return "Corruption";
    case Code::kNotSupported: return "NotSupported";
    case Code::kReadOnly: return "ReadOnly";
    case Code::kInternal: return "Internal";
    case Code::kCancelled: return "Cancelled";
    case Code::kNotEmpty: return "NotEmpty";
    case Code::kNotADirectory: return "NotADirectory";
    case Code::kIsADirectory: return "IsADirectory";
    case Code::kNameTooLong: return "NameTooLong";
    case Code::kNoAttribute: return "NoAttribute";
    case Code::kRange: return "Range";
    case Code::kNotPermitted: return "NotPermitted";
    case Code::kIllegalSequence: return "IllegalSequence";
    case Code::kNoSpace: return "NoSpace";
    case Code::kStale: return "Stale";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out = CodeName(code_);
  if (http_status_ != 0 || !service_code_.empty()) {
    out += " (";
    if (http_status_ != 0) out += std::to_string(http_status_);
    if (http_status_ != 0 && !service_code_.empty()) out += " ";
    out += service_code_;
    out += ")";
  }
  if (!message_.empty()) out += ": " + message_;
  return out;
}

Status LocalError(const std::string& what, int err) {
  const Code code = err == ENOSPC || err == EDQUOT ? Code::kNoSpace : Code::kInternal;
  return Status(code, what + ": " + std::strerror(err));
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_, http_status_, service_code_);
}

}  // namespace stampfs
