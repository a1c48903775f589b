// The config file (fs/daemon/mount_config.h), credentials from files, refusal of
// readable secret files, SAS grants and the http rule.
#include "fs/daemon/mount_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "storage/sas.h"

namespace stampfs {
namespace {

// The emulator's published key: a well-known test value, not a secret.
constexpr const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

class MountConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stampfs-config-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(MountConfigTest, AConfigFileSetsMountOptionsFlagsAndTheMount) {
  std::string config = Write("m.conf",
                             "# a comment\n"
                             "container = photos\n"
                             "mountpoint = /mnt/photos\n"
                             "\n"
                             "  attr_timeout = 7  \n"
                             "cache_dir = \"/var/cache/x y\"\n"
                             "cache_size = 2G\n"
                             "block_size = 1M\n"
                             "conflict = fail\n"
                             "log_level = warning\n"
                             "shutdown_timeout = 12\n"
                             "ro = true\n"
                             "allow_other = no\n"
                             "options = nosuid,nodev\n");
  auto o = ParseMountArgs({"--config", config});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->container, "photos");
  EXPECT_EQ(o->mountpoint, "/mnt/photos");
  EXPECT_EQ(o->attr_timeout, 7.0);
  EXPECT_EQ(o->cache_dir, "/var/cache/x y");
  EXPECT_EQ(o->cache_size, 2ull << 30);
  EXPECT_EQ(o->block_size, 1ull << 20);
  EXPECT_EQ(o->conflict, "fail");
  EXPECT_EQ(o->log_level, "warning");
  EXPECT_EQ(o->shutdown_timeout, 12.0);
  EXPECT_TRUE(o->read_only);
  EXPECT_FALSE(o->allow_other);
  EXPECT_EQ(o->kernel_options, (std::vector<std::string>{"nosuid", "nodev"}));
  EXPECT_EQ(o->table, DefaultTableName("photos"));
}

TEST_F(MountConfigTest, TheCommandLineOverridesTheConfigFileWhereverItIsNamed) {
  std::string config = Write("m.conf", "container = photos\nattr_timeout = 7\n");
  auto o = ParseMountArgs({"-o", "attr_timeout=9,config=" + config, "/mnt/p"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->container, "photos");
  EXPECT_EQ(o->mountpoint, "/mnt/p");
  EXPECT_EQ(o->attr_timeout, 9.0);
  auto both = ParseMountArgs({"other", "/mnt/o", "--config=" + config});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->container, "other");
}

TEST_F(MountConfigTest, UnknownKeysAndBadValuesNameTheLine) {
  MountOptions o;
  Status s = ApplyConfigText("attr_timeout = 1\ncache_sise = 1G\n", "f.conf", true, &o);
  EXPECT_TRUE(s.Is(Code::kInvalidArgument));
  EXPECT_NE(s.message().find("f.conf:2"), std::string::npos) << s.message();
  EXPECT_FALSE(ApplyConfigText("ro = maybe\n", "f.conf", true, &o).ok());
  EXPECT_FALSE(ApplyConfigText("just words\n", "f.conf", true, &o).ok());
  EXPECT_FALSE(ApplyConfigText("conflict = sometimes\n", "f.conf", true, &o).ok());
}

TEST_F(MountConfigTest, ASecretInAConfigFileOthersCanReadIsRefusedWithoutEchoingIt) {
  MountOptions o;
  Status s =
      ApplyConfigText(std::string("account_key = ") + kDevKey + "\n", "/etc/x.conf", false, &o);
  EXPECT_TRUE(s.Is(Code::kInvalidArgument));
  EXPECT_NE(s.message().find("chmod 600 /etc/x.conf"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find(kDevKey), std::string::npos);
  std::string readable = Write("open.conf", "sas_token = sv=1&sp=r&sig=SECRETSIG\n", 0644);
  auto parsed = ParseMountArgs({"--config", readable, "c-1", "/mnt"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message().find("SECRETSIG"), std::string::npos);
}

TEST_F(MountConfigTest, ASecretInAPrivateConfigFileSignsTheMount) {
  std::string config = Write("key.conf", std::string("account_name = devstoreaccount1\n") +
                                             "account_key = " + kDevKey + "\n" +
                                             "blob_endpoint = http://127.0.0.1:10000/"
                                             "devstoreaccount1\n"
                                             "table_endpoint = http://127.0.0.1:10002/"
                                             "devstoreaccount1\n");
  auto o = ParseMountArgs({"--config", config, "box", "/mnt"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  auto account = LoadAccount(*o);
  ASSERT_TRUE(account.ok()) << account.status().ToString();
  EXPECT_EQ(account->account_name, "devstoreaccount1");
  EXPECT_TRUE(account->HasKey());
}

TEST_F(MountConfigTest, AKeyFileReadableByOthersIsRefused) {
  MountOptions o;
  o.account_name = "devstoreaccount1";
  o.account_key_file = Write("key", std::string(kDevKey) + "\n", 0644);
  auto account = LoadAccount(o);
  ASSERT_FALSE(account.ok());
  EXPECT_NE(account.status().message().find("readable by group or others (mode 0644)"),
            std::string::npos)
      << account.status().message();
  EXPECT_EQ(account.status().message().find(kDevKey), std::string::npos);
  chmod(o.account_key_file.c_str(), 0640);
  EXPECT_FALSE(LoadAccount(o).ok());
  chmod(o.account_key_file.c_str(), 0600);
  account = LoadAccount(o);
  ASSERT_TRUE(account.ok()) << account.status().ToString();
  EXPECT_EQ(account->account_key, kDevKey);
  EXPECT_EQ(account->blob_endpoint, "https://devstoreaccount1.blob.core.windows.net");
}

TEST_F(MountConfigTest, ConnectionStringAndSasFilesAreCheckedToo) {
  MountOptions cs;
  cs.connection_string_file = Write("cs", "UseDevelopmentStorage=true\n", 0604);
  EXPECT_FALSE(LoadAccount(cs).ok());
  MountOptions sas;
  sas.account_name = "acct";
  sas.sas_token_file = Write("sas", "?sv=2021-08-06&ss=bt&srt=sco&sp=rl&sig=abc%3D\n", 0644);
  EXPECT_FALSE(LoadAccount(sas).ok());
  chmod(sas.sas_token_file.c_str(), 0600);
  auto account = LoadAccount(sas);
  ASSERT_TRUE(account.ok()) << account.status().ToString();
  EXPECT_EQ(account->sas_token, "sv=2021-08-06&ss=bt&srt=sco&sp=rl&sig=abc%3D");
  sas.table_sas_token_file = Write("tsas", "sv=2021-08-06&tn=fsacct&sp=raud&sig=t\n");
  account = LoadAccount(sas);
  ASSERT_TRUE(account.ok()) << account.status().ToString();
  EXPECT_EQ(account->table_sas_token, "sv=2021-08-06&tn=fsacct&sp=raud&sig=t");
}

TEST_F(MountConfigTest, SecretsOnTheCommandLineAreRefused) {
  for (const char* opt : {"account_key=abc", "sas_token=sp=r", "connection_string=x"}) {
    auto o = ParseMountArgs({"-o", opt, "box", "/mnt"});
    EXPECT_FALSE(o.ok()) << opt;
  }
}

TEST_F(MountConfigTest, PlainHttpIsOnlyForLoopbackUnlessAllowed) {
  MountOptions o;
  o.account_name = "acct";
  o.account_key_file = Write("key", kDevKey);
  o.blob_endpoint = "http://storage.example.com/acct";
  o.table_endpoint = "https://storage.example.com:444/acct";
  auto refused = LoadAccount(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("allow_http"), std::string::npos);
  o.allow_http = true;
  EXPECT_TRUE(LoadAccount(o).ok());
  o.allow_http = false;
  o.blob_endpoint = "http://127.0.0.1:10000/acct";
  o.table_endpoint = "http://localhost:10002/acct";
  EXPECT_TRUE(LoadAccount(o).ok());
}

TEST(Sas, ReadOnlyIsATokenWithoutAnyPermissionThatChangesThings) {
  EXPECT_TRUE(ParseSas("sv=2021-08-06&ss=bt&srt=sco&sp=rl&se=2030-01-01&sig=x").read_only());
  EXPECT_TRUE(ParseSas("?sr=c&sp=r&sig=x").read_only());
  EXPECT_FALSE(ParseSas("ss=bt&sp=racwdlup&sig=x").read_only());
  EXPECT_FALSE(ParseSas("sr=c&sp=rw&sig=x").read_only());
  EXPECT_FALSE(ParseSas("tn=t&sp=raud&sig=x").read_only());
  SasGrant g = ParseSas("sv=1&ss=bt&srt=sco&sp=rl&se=2030-01-01T00%3A00%3A00Z&sig=SIG");
  EXPECT_TRUE(g.account_sas());
  EXPECT_EQ(g.expiry, "2030-01-01T00:00:00Z");
  std::string described = DescribeSas("sv=1&ss=bt&srt=sco&sp=rl&sig=SIG");
  EXPECT_EQ(described, "sp=rl, ss=bt");
  EXPECT_EQ(described.find("SIG"), std::string::npos);
}

}  // namespace
}  // namespace stampfs
