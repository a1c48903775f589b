#include "storage/content_md5.h"

#include <openssl/evp.h>

#include "storage/auth.h"

namespace stampfs {

struct ContentMd5::State {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~State() { EVP_MD_CTX_free(ctx); }
};

ContentMd5::ContentMd5() : state_(std::make_unique<State>()) {
  EVP_DigestInit_ex(state_->ctx, EVP_md5(), nullptr);
}

ContentMd5::~ContentMd5() = default;

void ContentMd5::Update(const char* data, size_t size) {
  EVP_DigestUpdate(state_->ctx, data, size);
}

std::string ContentMd5::Finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &len);
  return Base64Encode(std::string(reinterpret_cast<const char*>(digest), len));
}

std::string ContentMd5::Of(const std::string& bytes) {
  ContentMd5 md5;
  md5.Update(bytes.data(), bytes.size());
  return md5.Finish();
}

}  // namespace stampfs
