#include "storage/client_assertion.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "storage/auth.h"

namespace stampfs {
namespace {

std::string Digest(const EVP_MD* md, const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

// A v4 UUID: what Entra ID expects as jti.
std::string RandomUuid() {
  std::string h = RandomHex(16);
  h[12] = '4';
  h[16] = "89ab"[h[16] % 4];
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

}  // namespace

std::string Base64UrlEncode(const std::string& bytes) {
  std::string s = Base64Encode(bytes);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

Result<std::string> Base64UrlDecode(const std::string& text) {
  std::string s = text;
  for (char& c : s) {
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (c == '+' || c == '/' || c == '=')
      return Status(Code::kInvalidArgument, "not base64url");
  }
  while (s.size() % 4 != 0) s.push_back('=');
  return Base64Decode(s);
}

Result<std::shared_ptr<const ClientCertificate>> ClientCertificate::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status(Code::kInvalidArgument,
                  "cannot read client certificate file " + path + ": " + std::strerror(errno));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return FromPem(buffer.str(), "client certificate file " + path);
}

Result<std::shared_ptr<const ClientCertificate>> ClientCertificate::FromPem(
    const std::string& pem, const std::string& name) {
  std::shared_ptr<ClientCertificate> cert(new ClientCertificate());
  {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* x509 = bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(bio);
    if (!x509) return Status(Code::kInvalidArgument, name + " holds no PEM certificate");
    unsigned char* der = nullptr;
    int len = i2d_X509(x509, &der);
    X509_free(x509);
    if (len <= 0) return Status(Code::kInvalidArgument, name + ": cannot encode the certificate");
    cert->der_.assign(reinterpret_cast<const char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
  }
  {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    // An empty passphrase callback: an encrypted key fails instead of prompting.
    auto no_passphrase = [](char*, int, int, void*) { return 0; };
    cert->key_ = bio ? PEM_read_bio_PrivateKey(bio, nullptr, no_passphrase, nullptr) : nullptr;
    BIO_free(bio);
  }
  if (!cert->key_) {
    return Status(Code::kInvalidArgument,
                  name + " holds no unencrypted private key (PEM, BEGIN PRIVATE KEY)");
  }
  if (EVP_PKEY_base_id(cert->key_) != EVP_PKEY_RSA) {
    return Status(Code::kInvalidArgument, name + ": the private key is not RSA (RS256 needs one)");
  }
  return std::shared_ptr<const ClientCertificate>(std::move(cert));
}

ClientCertificate::~ClientCertificate() { EVP_PKEY_free(key_); }

Result<std::string> ClientCertificate::SignRs256(const std::string& data) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (!ctx) return Status(Code::kInternal, "EVP_MD_CTX_new failed");
  size_t len = 0;
  std::string sig;
  bool ok = EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_) == 1 &&
            EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()),
                           data.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                        reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) return Status(Code::kInternal, "signing the client assertion failed");
  return sig;
}

Result<std::string> MakeClientAssertion(const ClientCertificate& cert, const std::string& client_id,
                                        const std::string& audience, SystemTime now) {
  const int64_t t =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  nlohmann::json header = {{"alg", "RS256"},
                           {"typ", "JWT"},
                           {"x5t", Base64UrlEncode(Digest(EVP_sha1(), cert.der()))},
                           {"x5t#S256", Base64UrlEncode(Digest(EVP_sha256(), cert.der()))}};
  nlohmann::json claims = {{"aud", audience},     {"iss", client_id}, {"sub", client_id},
                           {"jti", RandomUuid()}, {"nbf", t},         {"iat", t},
                           {"exp", t + 600}};
  std::string signing_input = Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(claims.dump());
  auto sig = cert.SignRs256(signing_input);
  STAMPFS_RETURN_IF_ERROR(sig);
  return signing_input + "." + Base64UrlEncode(*sig);
}

}  // namespace stampfs
