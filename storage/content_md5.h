// The MD5 a blob's Content-MD5 property holds: base64 of the 16-byte digest
// of the whole content (what Azure computes for Put Blob and what
// `x-ms-blob-content-md5` sets on Put Block List).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace stampfs {

class ContentMd5 {
 public:
  ContentMd5();
  ~ContentMd5();
  ContentMd5(const ContentMd5&) = delete;
  ContentMd5& operator=(const ContentMd5&) = delete;

  void Update(const char* data, size_t size);
  // Base64 of the digest of everything updated so far; call once.
  std::string Finish();

  static std::string Of(const std::string& bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stampfs
