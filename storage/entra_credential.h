// Which Entra ID sign-in a mount uses, and the TokenCredential for it.
// The caller (fs/daemon/mount_config.cc) reads options, environment and secret
// files; this only assembles sources (token_sources.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "storage/status.h"
#include "storage/token_credential.h"
#include "storage/token_sources.h"

namespace stampfs {

enum class AuthMethod {
  kAuto,              // key or SAS if given, else the Entra ID chain below
  kKey,               // Shared Key
  kSas,               // SAS token
  kManagedIdentity,   // msi
  kWorkloadIdentity,  // workload
  kServicePrincipal,  // sp: client secret or certificate
  kAzureCli,          // cli
};

// "auto", "key", "sas", "msi", "workload", "sp", "cli".
Result<AuthMethod> ParseAuthMethod(const std::string& name);
const char* AuthMethodName(AuthMethod method);
inline bool IsEntraMethod(AuthMethod m) {
  return m != AuthMethod::kAuto && m != AuthMethod::kKey && m != AuthMethod::kSas;
}

struct EntraOptions {
  AuthMethod method = AuthMethod::kAuto;
  std::string tenant_id;
  std::string client_id;      // a service principal, or a user-assigned managed identity
  std::string client_secret;  // read from its file by the caller. Never log.
  std::string client_cert_file;
  std::string federated_token_file;
  std::string authority_host = kPublicAuthorityHost;
  // IMDS form; when empty, identity_endpoint (App Service) if given, else IMDS.
  std::string msi_endpoint;
  std::string identity_endpoint;  // $IDENTITY_ENDPOINT
  std::string identity_header;    // $IDENTITY_HEADER. Never log.
  std::string resource = kStorageResource;
  std::string ca_file;  // for https token endpoints too
  std::string az = "az";
  bool allow_http = false;
  TokenRefreshPolicy refresh;
  // Each method auto tries gets this long before the next is tried.
  std::chrono::milliseconds probe_deadline{5000};
};

// The credential for `options.method` (an Entra method, or kAuto for the
// chain: service principal when tenant, client id and a secret or
// certificate are given; workload identity when a federated token file is;
// managed identity; the az CLI). No token is fetched yet. kInvalidArgument
// when the method lacks what it needs (the message says what).
Result<std::shared_ptr<TokenCredential>> MakeEntraCredential(const EntraOptions& options);

}  // namespace stampfs
