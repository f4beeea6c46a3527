// Garbage in every UCX_GDR_* variable: each variable the gdr md and gdr_rc know (as
// `ucx_info -c` lists them with the loaded plugin) is set in the environment to a word, nothing,
// -1, a number past 2^64 and 0, one at a time; then md, worker and iface are opened and, when
// that works, an endpoint pair is connected and moves a put.  Each either works or fails with
// an error whose log names the variable; never a crash or a hang.  (UCX's own parser reads a
// past-range number as "inf" or the largest value: our range checks must catch those.)
#include "pair_fixture.h"

#include "../plugin/run_command.h"

#include <link.h>

#include <algorithm>

namespace uctest {
namespace {

/// The path of the libuct_gdr.so this process loaded.
std::string loaded_plugin()
{
    std::string path;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *out) {
            if (std::strstr(info->dlpi_name, "libuct_gdr") != nullptr) {
                *static_cast<std::string *>(out) = info->dlpi_name;
                return 1;
            }
            return 0;
        },
        &path);
    return path;
}

std::vector<std::string> gdr_variables(const std::string &plugin)
{
    std::vector<std::string> names;
    // with_plugin: ucx_info is not instrumented, so a sanitized plugin needs the runtimes first
    FILE *p = popen(with_plugin(plugin.c_str(), "ucx_info -c 2>/dev/null").c_str(), "r");
    if (p == nullptr)
        return names;
    char line[1024];
    while (std::fgets(line, sizeof(line), p) != nullptr) {
        const std::string l(line);
        if (l.rfind("UCX_GDR_", 0) == 0 && l.find('=') != std::string::npos)
            names.push_back(l.substr(0, l.find('=')));
    }
    pclose(p);
    return names;
}

/// Opens md + iface and connects a pair with the environment as it is; "" or what failed.
/// The suite's own iface settings (default_iface_overrides) are kept but for `field`'s, which
/// would override the environment.
std::string try_open_and_connect(const TlResource &res, const std::string &field)
{
    std::vector<ConfigOverride> overrides;
    for (const ConfigOverride &o : default_iface_overrides()) {
        if (std::find(o.names.begin(), o.names.end(), field) == o.names.end())
            overrides.push_back(o);
    }
    try {
        Entity a(res, overrides), b(res, overrides);
        EpPair pair = connect_pair(a, b);
        RegisteredBuffer remote(b.md(), 64, 4096), local(a.md(), 64, 4096);
        RemoteKey rkey(a.md().component(), remote.registration().packed_rkey());
        local.fill_pattern(3);
        Transfer t(a, pair.ab);
        const ucs_status_t s = t.post_retry(Op::PutBcopy, local, 0, 64, remote.address(),
                                            rkey.rkey(), 0, {&a, &b});
        if (UCS_STATUS_IS_ERR(s))
            return std::string("put_bcopy: ") + ucs_status_string(s);
        if (!progress_until([&] { return t.completion().done() || a.failed(pair.ab); }, {&a, &b},
                            "the put", Seconds(20)))
            return "the put did not complete";
        if (a.failed(pair.ab) || t.completion().status() != UCS_OK)
            return "the put failed";
        if (flush_and_wait(a, pair.ab, {&a, &b}) != UCS_OK)
            return "the flush failed";
        return remote.check_pattern(3, 64, 0) ? "" : "the put landed wrong";
    } catch (const std::exception &e) {
        return e.what();
    }
}

TEST(ConfigGarbage, EveryGdrVariableWorksOrIsRefusedByName)
{
    TlResource res;
    UCTEST_REQUIRE_TARGET(res);
    if (res.component_name != "gdr") {
        GTEST_SKIP() << "UCX_GDR_* configure the gdr component; the target is "
                     << res.component_name;
    }
    const std::string plugin = loaded_plugin();
    ASSERT_FALSE(plugin.empty()) << "libuct_gdr is not loaded";
    const auto names = gdr_variables(plugin);
    ASSERT_GE(names.size(), 20u) << "ucx_info -c with " << plugin << " listed too few";
    // numbers past 2^64 and -1 are where UCX's parser is lenient
    const std::vector<std::string> values = {"lots", "", "-1", "99999999999999999999999", "0"};
    for (const std::string &name : names) {
        std::string summary;
        for (const std::string &value : values) {
            ASSERT_EQ(0, setenv(name.c_str(), value.c_str(), 1));
            ::testing::internal::CaptureStdout();
            ::testing::internal::CaptureStderr();
            const std::string field   = name.substr(std::strlen("UCX_GDR_"));
            const std::string failure = try_open_and_connect(res, field);
            const std::string log     = ::testing::internal::GetCapturedStdout() +
                                    ::testing::internal::GetCapturedStderr();
            unsetenv(name.c_str());
            summary += " '" + value + "':" + (failure.empty() ? "ok" : "refused");
            if (!failure.empty()) {
                // UCX's parser says "Invalid value for FIELD", our checks "UCX_GDR_FIELD=..."
                EXPECT_NE(log.find(field), std::string::npos)
                    << name << "='" << value << "' failed (" << failure
                    << ") without naming the variable:\n"
                    << log;
            }
        }
        std::printf("[  CONFIG  ] %s:%s\n", name.c_str(), summary.c_str());
    }
}

}  // namespace
}  // namespace uctest
