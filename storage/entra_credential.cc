#include "storage/entra_credential.h"

#include <vector>

namespace stampfs {
namespace {

constexpr std::pair<AuthMethod, const char*> kMethods[] = {
    {AuthMethod::kAuto, "auto"},
    {AuthMethod::kKey, "key"},
    {AuthMethod::kSas, "sas"},
    {AuthMethod::kManagedIdentity, "msi"},
    {AuthMethod::kWorkloadIdentity, "workload"},
    {AuthMethod::kServicePrincipal, "sp"},
    {AuthMethod::kAzureCli, "cli"},
};

Status Missing(const std::string& what) { return Status(Code::kInvalidArgument, what); }

bool HasServicePrincipal(const EntraOptions& o) {
  return !o.tenant_id.empty() && !o.client_id.empty() &&
         (!o.client_secret.empty() || !o.client_cert_file.empty());
}

bool HasWorkloadIdentity(const EntraOptions& o) {
  return !o.federated_token_file.empty() && !o.tenant_id.empty() && !o.client_id.empty();
}

// The client-credentials request both service principals and workload
// identities make, without its proof.
Result<ClientCredentials> ClientCredentialsFor(const EntraOptions& o) {
  STAMPFS_RETURN_IF_ERROR(CheckTokenEndpoint(o.authority_host, "authority_host", o.allow_http));
  ClientCredentials c;
  c.authority_host = o.authority_host;
  c.tenant_id = o.tenant_id;
  c.client_id = o.client_id;
  c.resource = o.resource;
  return c;
}

Result<std::unique_ptr<TokenSource>> ServicePrincipal(const EntraOptions& o,
                                                      std::shared_ptr<HttpTransport> transport) {
  if (o.tenant_id.empty() || o.client_id.empty()) {
    return Missing("auth=sp needs tenant_id and client_id (or $AZURE_TENANT_ID, $AZURE_CLIENT_ID)");
  }
  auto credentials = ClientCredentialsFor(o);
  STAMPFS_RETURN_IF_ERROR(credentials);
  ClientCredentials& c = *credentials;
  if (!o.client_secret.empty()) {
    c.client_secret = o.client_secret;
    c.kind = "service principal (client secret)";
  } else if (!o.client_cert_file.empty()) {
    auto cert = ClientCertificate::Load(o.client_cert_file);
    STAMPFS_RETURN_IF_ERROR(cert);
    c.assertion = CertificateAssertion(*cert, o.client_id);
    c.kind = "service principal (certificate " + o.client_cert_file + ")";
  } else {
    return Missing("auth=sp needs client_secret_file or client_cert_file");
  }
  return MakeClientCredentialSource(std::move(transport), std::move(c));
}

Result<std::unique_ptr<TokenSource>> Workload(const EntraOptions& o,
                                              std::shared_ptr<HttpTransport> transport) {
  if (o.federated_token_file.empty() || o.tenant_id.empty() || o.client_id.empty()) {
    return Missing(
        "auth=workload needs $AZURE_FEDERATED_TOKEN_FILE, $AZURE_TENANT_ID and $AZURE_CLIENT_ID "
        "(or federated_token_file, tenant_id, client_id)");
  }
  auto credentials = ClientCredentialsFor(o);
  STAMPFS_RETURN_IF_ERROR(credentials);
  ClientCredentials& c = *credentials;
  c.assertion = FederatedTokenFileAssertion(o.federated_token_file);
  c.kind = "workload identity (" + o.federated_token_file + ")";
  return MakeClientCredentialSource(std::move(transport), std::move(c));
}

Result<std::unique_ptr<TokenSource>> ManagedIdentity(const EntraOptions& o,
                                                     std::shared_ptr<HttpTransport> transport) {
  if (o.msi_endpoint.empty() && !o.identity_endpoint.empty()) {
    if (o.identity_header.empty()) {
      return Missing("$IDENTITY_ENDPOINT is set without $IDENTITY_HEADER");
    }
    STAMPFS_RETURN_IF_ERROR(
        CheckTokenEndpoint(o.identity_endpoint, "IDENTITY_ENDPOINT", o.allow_http));
    return MakeAppServiceSource(std::move(transport), o.identity_endpoint, o.identity_header,
                                o.resource, o.client_id);
  }
  const std::string endpoint = o.msi_endpoint.empty() ? kImdsTokenEndpoint : o.msi_endpoint;
  STAMPFS_RETURN_IF_ERROR(CheckTokenEndpoint(endpoint, "msi_endpoint", o.allow_http));
  return MakeImdsSource(std::move(transport), endpoint, o.resource, o.client_id);
}

}  // namespace

Result<AuthMethod> ParseAuthMethod(const std::string& name) {
  for (const auto& [method, text] : kMethods) {
    if (name == text) return method;
  }
  return Status(Code::kInvalidArgument,
                "option auth=" + name + ": expected auto, key, sas, msi, workload, sp or cli");
}

const char* AuthMethodName(AuthMethod method) {
  for (const auto& [m, text] : kMethods) {
    if (m == method) return text;
  }
  return "?";
}

Result<std::shared_ptr<TokenCredential>> MakeEntraCredential(const EntraOptions& o) {
  std::shared_ptr<HttpTransport> transport = MakeCurlTransport({o.ca_file});
  Result<std::unique_ptr<TokenSource>> source = Missing("no method");
  switch (o.method) {
    case AuthMethod::kServicePrincipal:
      source = ServicePrincipal(o, transport);
      break;
    case AuthMethod::kWorkloadIdentity:
      source = Workload(o, transport);
      break;
    case AuthMethod::kManagedIdentity:
      source = ManagedIdentity(o, transport);
      break;
    case AuthMethod::kAzureCli:
      source = MakeAzCliSource(o.az, o.resource, o.tenant_id);
      break;
    case AuthMethod::kAuto: {
      std::vector<std::unique_ptr<TokenSource>> chain;
      if (HasServicePrincipal(o)) {
        auto sp = ServicePrincipal(o, transport);
        STAMPFS_RETURN_IF_ERROR(sp);
        chain.push_back(std::move(*sp));
      }
      if (HasWorkloadIdentity(o)) {
        auto wi = Workload(o, transport);
        STAMPFS_RETURN_IF_ERROR(wi);
        chain.push_back(std::move(*wi));
      }
      auto mi = ManagedIdentity(o, transport);
      STAMPFS_RETURN_IF_ERROR(mi);
      chain.push_back(std::move(*mi));
      chain.push_back(MakeAzCliSource(o.az, o.resource, o.tenant_id));
      source = MakeChainSource(std::move(chain), o.probe_deadline);
      break;
    }
    case AuthMethod::kKey:
    case AuthMethod::kSas:
      return Status(Code::kInvalidArgument,
                    std::string("auth=") + AuthMethodName(o.method) + " is not an Entra ID method");
  }
  STAMPFS_RETURN_IF_ERROR(source);
  return std::make_shared<TokenCredential>(std::move(*source), o.refresh);
}

}  // namespace stampfs
