// A stand-in for Microsoft Entra ID on loopback, for the integration and e2e
// tests of Entra ID sign-in: it serves the token endpoints stampfs calls and
// issues JWTs that Azurite's `--oauth basic` accepts (audience
// https://storage.azure.com, issuer https://sts.windows.net/TENANT/, iat, nbf,
// exp; Azurite does not check the signature in basic mode, so the signature
// part is random bytes).
//
//   GET  /metadata/identity/oauth2/token   IMDS: Metadata: true, api-version, resource
//   GET  /msi/token                        App Service: X-IDENTITY-HEADER, api-version=2019-08-01
//   POST /TENANT/oauth2/v2.0/token         client credentials: client_secret, or a
//                                          client_assertion (the federated token, or a JWT
//                                          signed RS256 by the certificate, checked)
//   GET  /stats                            {"imds":N,"appservice":N,"secret":N,"certificate":N,
//                                           "workload":N,"refused":N}
// Anything it refuses gets an OAuth error answer and counts as "refused".
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "storage/status.h"

namespace stampfs::testing {

struct TokenServerOptions {
  std::string tenant_id = "72f988bf-86f1-41af-91ab-2d7cd011db47";
  std::string client_id = "0b5a8a4c-1d2e-4f60-9a7b-c8d9e0f1a2b3";
  std::string client_secret;    // accepted client_secret (empty: none)
  std::string federated_token;  // accepted workload assertion (empty: none)
  std::string cert_pem;         // certificate whose signed assertions are accepted
  std::string identity_header;  // App Service's X-IDENTITY-HEADER (empty: form off)
  std::string audience = "https://storage.azure.com";
  int lifetime_seconds = 3600;  // of the tokens issued
  int port = 0;                 // 0: any free port
};

// A token Azurite accepts: aud, iss, iat, nbf (now - 60 s), exp (now + lifetime).
std::string MakeTestAccessToken(const std::string& audience, const std::string& tenant_id,
                                const std::string& client_id, int lifetime_seconds);

// Checks a client assertion as Entra ID would: RS256 signature by the
// certificate's key, x5t and x5t#S256 thumbprints of it, aud, iss = sub =
// client_id, a jti, and nbf <= now < exp. The message says what failed.
Status VerifyClientAssertion(const std::string& jwt, const std::string& cert_pem,
                             const std::string& audience, const std::string& client_id);

// A self-signed RSA certificate and its private key, one PEM text (tests).
std::string MakeSelfSignedPem(const std::string& common_name);

class TokenServer {
 public:
  static Result<std::unique_ptr<TokenServer>> Start(TokenServerOptions options);
  ~TokenServer();

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int count(const std::string& form) const;
  void set_lifetime(int seconds);
  void set_refusing(bool refusing);  // every request refused (an outage of Entra ID)

 private:
  TokenServer() = default;
  void Serve();
  void Handle(int fd);
  std::string Answer(const std::string& method, const std::string& target,
                     const std::map<std::string, std::string>& headers, const std::string& body,
                     int* status);
  std::string Issue(const std::string& form, bool epoch_strings);

  TokenServerOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> refusing_{false};
  std::atomic<int> lifetime_{3600};
  mutable std::mutex mu_;
  std::map<std::string, int> counts_;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace stampfs::testing
