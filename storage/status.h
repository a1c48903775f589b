// Errors as values. Every layer returns Status or Result<T>; nothing below the
// FUSE boundary throws across an interface. fs/fuse/errno_map.cc is the one place a
// Status becomes an errno.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace stampfs {

// Backend-neutral classification. The HTTP status and the service's own error
// code (x-ms-error-code) travel alongside as data.
enum class Code {
  kOk,
  kNotFound,            // 404: blob, entity, container or table missing
  kAlreadyExists,       // 409 *AlreadyExists, insert of an existing key
  kPreconditionFailed,  // 412: If-Match / If-None-Match not satisfied
  kConflict,            // 409 other than AlreadyExists (lease, being deleted, ...)
  kAuth,                // 401/403: wrong key, expired or insufficient SAS
  kThrottled,           // 429/503 after retries ran out
  kTimeout,             // the request's deadline passed
  kTransport,           // connection refused, DNS, TLS: the endpoint is unreachable
  kInvalidArgument,     // rejected before sending, or 400 from the service
  kTooLarge,            // entity, property, batch or request body over a limit
  kCorruption,          // a response we could not parse
  kNotSupported,
  kReadOnly,            // write on a read-only mount or read-only credentials
  kInternal,            // 500 after retries, or a bug
  kCancelled,           // the caller gave up: outcome unknown (storage/cancel.h)
  // File-system outcomes decided above storage/ (each maps to one errno).
  kNotEmpty,            // ENOTEMPTY
  kNotADirectory,       // ENOTDIR
  kIsADirectory,        // EISDIR
  kNameTooLong,         // ENAMETOOLONG
  kNoAttribute,         // ENODATA: no such xattr
  kRange,               // ERANGE: caller's buffer too small
  kNotPermitted,        // EPERM
  kIllegalSequence,     // EILSEQ: a name stampfs cannot store (fs/namespace/names.h)
  kNoSpace,             // ENOSPC: the local cache's disk is full
  kStale,               // ESTALE: an inode this mount no longer has a name or data for
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, int http_status = 0, std::string service_code = {})
      : code_(code),
        http_status_(http_status),
        service_code_(std::move(service_code)),
        message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  int http_status() const { return http_status_; }
  const std::string& service_code() const { return service_code_; }
  const std::string& message() const { return message_; }

  bool Is(Code c) const { return code_ == c; }

  // "NotFound (404 BlobNotFound): message" — safe to log: messages never carry secrets.
  std::string ToString() const;

  // Prefixes context ("put blob a/b: ...") while keeping code and HTTP data.
  Status WithContext(const std::string& context) const;

  // Explicit, greppable way to drop a status on purpose.
  void PermitUnchecked() const {}

 private:
  Code code_ = Code::kOk;
  int http_status_ = 0;
  std::string service_code_;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result built from an OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

// A failed system call on local files (the cache): kNoSpace for a full disk
// or quota (ENOSPC, EDQUOT), else kInternal; "what: strerror".
Status LocalError(const std::string& what, int err);

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// Propagates a failed Status or Result from the current function.
#define STAMPFS_RETURN_IF_ERROR(expr)                              \
  do {                                                             \
    const auto& _st = (expr);                                      \
    if (!_st.ok()) return ::stampfs::StatusOf(_st);                \
  } while (0)

}  // namespace stampfs
