// The ways to a Microsoft Entra ID token for the storage resource:
//   managed identity   the VM's IMDS endpoint, or the App Service / Container
//                      Apps IDENTITY_ENDPOINT (+ IDENTITY_HEADER)
//   service principal  client credentials with a client secret, a certificate
//                      (client assertion signed by client_assertion.h), or a
//                      federated token file (workload identity, as AKS sets it)
//   az CLI             `az account get-access-token` of a logged-in CLI
// Each Fetch is one bounded request (or one bounded process), no caching:
// TokenCredential (token_credential.h) caches and refreshes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/client_assertion.h"
#include "storage/http.h"
#include "storage/token_credential.h"

namespace stampfs {

inline constexpr const char* kStorageResource = "https://storage.azure.com";
inline constexpr const char* kPublicAuthorityHost = "https://login.microsoftonline.com";
inline constexpr const char* kImdsTokenEndpoint =
    "http://169.254.169.254/metadata/identity/oauth2/token";

// "https://storage.azure.com/" -> "https://storage.azure.com" (what IMDS, App
// Service and the CLI take); the v2.0 scope is that + "/.default".
std::string ResourceWithoutSlash(const std::string& resource);

// Managed identity through IMDS: GET ENDPOINT?api-version=2018-02-01&resource=R
// [&client_id=ID] with `Metadata: true`.
std::unique_ptr<TokenSource> MakeImdsSource(std::shared_ptr<HttpTransport> transport,
                                            std::string endpoint, std::string resource,
                                            std::string client_id);

// Managed identity on App Service / Container Apps / Functions: GET
// IDENTITY_ENDPOINT?api-version=2019-08-01&resource=R[&client_id=ID] with
// `X-IDENTITY-HEADER: IDENTITY_HEADER`.
std::unique_ptr<TokenSource> MakeAppServiceSource(std::shared_ptr<HttpTransport> transport,
                                                  std::string endpoint, std::string header,
                                                  std::string resource, std::string client_id);

// A client assertion for each token request: a certificate's signed JWT, or
// the current contents of a federated token file (rotated by Kubernetes).
using AssertionFn = std::function<Result<std::string>(const std::string& audience)>;

struct ClientCredentials {
  std::string authority_host = kPublicAuthorityHost;  // no trailing slash
  std::string tenant_id;
  std::string client_id;
  std::string resource = kStorageResource;
  std::string client_secret;  // Never log. Empty: `assertion` is used.
  AssertionFn assertion;
  std::string kind;  // "service principal (client secret)", ... for Describe
};

// POST AUTHORITY/TENANT/oauth2/v2.0/token, grant_type=client_credentials.
std::unique_ptr<TokenSource> MakeClientCredentialSource(std::shared_ptr<HttpTransport> transport,
                                                        ClientCredentials credentials);

// Reads the federated token file at every request (workload identity).
AssertionFn FederatedTokenFileAssertion(std::string path);
// Signs a fresh assertion with the certificate at every request.
AssertionFn CertificateAssertion(std::shared_ptr<const ClientCertificate> cert,
                                 std::string client_id, SystemClockFn now = {});

// Runs `AZ account get-access-token --resource R -o json [--tenant T]`
// (AZ found on PATH), killed at the deadline.
std::unique_ptr<TokenSource> MakeAzCliSource(std::string az, std::string resource,
                                             std::string tenant_id);

// DefaultAzureCredential's way: the first source that yields a token is kept
// for every later refresh; until one does, each is tried in order (probes
// bounded by `probe_deadline` each) and a failure lists every reason.
std::unique_ptr<TokenSource> MakeChainSource(std::vector<std::unique_ptr<TokenSource>> sources,
                                             std::chrono::milliseconds probe_deadline);

// Token endpoints may be plain http only on loopback or link-local hosts
// (IMDS at 169.254.169.254, App Service's localhost), unless allow_http.
Status CheckTokenEndpoint(const std::string& url, const std::string& what, bool allow_http);

}  // namespace stampfs
