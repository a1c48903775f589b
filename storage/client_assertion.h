// Certificate credentials of a service principal: a JWT client assertion
// signed RS256 with the certificate's private key (Entra ID's
// "private_key_jwt"), naming the certificate by its SHA-1 (x5t) and SHA-256
// (x5t#S256) thumbprints.
#pragma once

#include <memory>
#include <string>

#include "storage/status.h"
#include "storage/token_credential.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace stampfs {

std::string Base64UrlEncode(const std::string& bytes);  // no padding
Result<std::string> Base64UrlDecode(const std::string& text);

class ClientCertificate {
 public:
  // A PEM file holding the certificate and its RSA private key (unencrypted),
  // in either order, as `az ad sp create-for-rbac --create-cert` writes it.
  // Errors name the file, never its contents.
  static Result<std::shared_ptr<const ClientCertificate>> Load(const std::string& path);
  static Result<std::shared_ptr<const ClientCertificate>> FromPem(const std::string& pem,
                                                                  const std::string& name);
  ~ClientCertificate();
  ClientCertificate(const ClientCertificate&) = delete;
  ClientCertificate& operator=(const ClientCertificate&) = delete;

  const std::string& der() const { return der_; }  // the certificate, DER
  // RS256 (RSASSA-PKCS1-v1_5 with SHA-256) of `data`.
  Result<std::string> SignRs256(const std::string& data) const;

 private:
  ClientCertificate() = default;
  std::string der_;
  ::evp_pkey_st* key_ = nullptr;
};

// header.claims.signature for the token endpoint `audience`
// (AUTHORITY/TENANT/oauth2/v2.0/token): iss = sub = client_id, a random jti,
// nbf = iat = now, exp = now + 10 minutes.
Result<std::string> MakeClientAssertion(const ClientCertificate& cert, const std::string& client_id,
                                        const std::string& audience, SystemTime now);

}  // namespace stampfs
