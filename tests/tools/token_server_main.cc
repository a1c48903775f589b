// stampfs_token_server: the test stand-in for Entra ID (token_server.h), two ways.
//
//   stampfs_token_server serve --port-file FILE [--port N] [--lifetime S]
//       [--client-secret-file F] [--cert-file PEM] [--federated-token-file F]
//       [--identity-header H]
//     serves until SIGTERM/SIGINT; writes its port to FILE once listening.
//
//   az account get-access-token --resource R -o json [--tenant T]
//     run through a symlink named `az`: a fake Azure CLI printing what the
//     real one prints. $FAKE_AZ_LIFETIME (3600) sets the token's life,
//     $FAKE_AZ_FAIL=1 fails as a CLI that is not logged in, $FAKE_AZ_LOG
//     gets one line per call.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/token_server.h"

using stampfs::testing::TokenServer;
using stampfs::testing::TokenServerOptions;

namespace {

volatile sig_atomic_t g_stop = 0;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string s = buffer.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

int FakeAz(const std::vector<std::string>& args) {
  if (const char* log = std::getenv("FAKE_AZ_LOG")) {
    std::ofstream(log, std::ios::app) << "get-access-token\n";
  }
  if (const char* fail = std::getenv("FAKE_AZ_FAIL"); fail && std::string(fail) == "1") {
    std::cerr << "ERROR: Please run 'az login' to setup account.\n";
    return 1;
  }
  std::string resource, output, tenant;
  bool get_token = args.size() >= 2 && args[0] == "account" && args[1] == "get-access-token";
  for (size_t i = 2; i + 1 < args.size(); ++i) {
    if (args[i] == "--resource") resource = args[i + 1];
    if (args[i] == "-o" || args[i] == "--output") output = args[i + 1];
    if (args[i] == "--tenant") tenant = args[i + 1];
  }
  if (!get_token || output != "json" ||
      (resource != "https://storage.azure.com/" && resource != "https://storage.azure.com")) {
    std::cerr << "ERROR: fake az: unexpected arguments\n";
    return 2;
  }
  int lifetime = 3600;
  if (const char* l = std::getenv("FAKE_AZ_LIFETIME")) lifetime = std::atoi(l);
  TokenServerOptions o;
  if (!tenant.empty()) o.tenant_id = tenant;
  const std::time_t expires = std::time(nullptr) + lifetime;
  std::tm local{};
  localtime_r(&expires, &local);
  char expires_on[64];
  std::strftime(expires_on, sizeof expires_on, "%Y-%m-%d %H:%M:%S.000000", &local);
  nlohmann::json answer = {{"accessToken", stampfs::testing::MakeTestAccessToken(
                                               "https://storage.azure.com", o.tenant_id,
                                               "04b07795-8ddb-461a-bbee-02f9e1bf7b46", lifetime)},
                           {"expiresOn", expires_on},
                           {"expires_on", static_cast<int64_t>(expires)},
                           {"subscription", "00000000-0000-0000-0000-000000000000"},
                           {"tenant", o.tenant_id},
                           {"tokenType", "Bearer"}};
  std::cout << answer.dump(2) << "\n";
  return 0;
}

int Serve(const std::vector<std::string>& args) {
  TokenServerOptions o;
  std::string port_file;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& flag = args[i];
    const std::string& value = args[i + 1];
    if (flag == "--port-file")
      port_file = value;
    else if (flag == "--port")
      o.port = std::atoi(value.c_str());
    else if (flag == "--lifetime")
      o.lifetime_seconds = std::atoi(value.c_str());
    else if (flag == "--client-secret-file")
      o.client_secret = ReadFile(value);
    else if (flag == "--cert-file")
      o.cert_pem = ReadFile(value);
    else if (flag == "--federated-token-file")
      o.federated_token = ReadFile(value);
    else if (flag == "--identity-header")
      o.identity_header = value;
    else {
      std::cerr << "stampfs_token_server: unknown flag " << flag << "\n";
      return 2;
    }
  }
  signal(SIGTERM, [](int) { g_stop = 1; });
  signal(SIGINT, [](int) { g_stop = 1; });
  auto server = TokenServer::Start(o);
  if (!server.ok()) {
    std::cerr << server.status().ToString() << "\n";
    return 1;
  }
  if (!port_file.empty()) {
    std::ofstream(port_file + ".tmp") << (*server)->port() << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  while (!g_stop) ::usleep(100 * 1000);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = argv[0];
  self = self.substr(self.rfind('/') + 1);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (self == "az") return FakeAz(args);
  if (!args.empty() && args[0] == "serve") return Serve({args.begin() + 1, args.end()});
  std::cerr << "usage: stampfs_token_server serve --port-file FILE [...] | az (via a symlink)\n";
  return 2;
}
