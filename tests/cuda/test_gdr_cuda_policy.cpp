// Host tests of gdr_cuda: the registration order and policy logic (driven through a backend
// whose libcuda/libibverbs calls fail or succeed on demand), the md-open verdict, config rules,
// reasons cut with a mark, and the behaviour without libcuda (real: this runs where there is none).
// (Peer-memory detection is gdr_topo's, shared with gdr-doctor: tests/topo/test_peermem.cpp.)
#include "gdr_cuda.h"
#include "gdr_status.hpp"
#include "reg_policy.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

using namespace gdr::cuda;

namespace {

constexpr gdr_cuda_policy_t NO  = GDR_CUDA_POLICY_NO;
constexpr gdr_cuda_policy_t YES = GDR_CUDA_POLICY_YES;
constexpr gdr_cuda_policy_t TRY = GDR_CUDA_POLICY_TRY;

/**
 * Scripted stand-in for libcuda/libibverbs: each step's outcome is set by the test, and every
 * call is recorded so the test can check what the order logic did (and did not) call.
 */
struct ScriptedWorld {
    // script
    ucs_status_t export_status = UCS_OK;
    uint64_t export_offset     = 123;
    int reg_dmabuf_errno       = 0;  // 0: succeed
    std::string peermem        = "nvidia_peermem";
    int reg_mr_errno           = 0;
    // record
    std::vector<std::string> calls;
    int open_fds         = 0;
    uint64_t seen_offset = 0, seen_iova = 0;
    size_t seen_length = 0;
    int seen_access    = 0;
    ibv_mr *fake_mr    = reinterpret_cast<ibv_mr *>(0x1000);

    RegBackend backend()
    {
        RegBackend b;
        b.ctx           = this;
        b.export_dmabuf = [](void *ctx, const void *, size_t, int *fd, uint64_t *offset,
                             std::string *why) {
            auto *w = static_cast<ScriptedWorld *>(ctx);
            w->calls.push_back("export");
            if (w->export_status != UCS_OK) {
                *why = "CUDA_ERROR_NOT_SUPPORTED (scripted)";
                return w->export_status;
            }
            *fd     = 77;
            *offset = w->export_offset;
            ++w->open_fds;
            return UCS_OK;
        };
        b.close_fd = [](void *ctx, int fd) {
            auto *w = static_cast<ScriptedWorld *>(ctx);
            w->calls.push_back("close");
            EXPECT_EQ(fd, 77);
            --w->open_fds;
        };
        b.reg_dmabuf_mr = [](void *ctx, ibv_pd *, uint64_t offset, size_t length, uint64_t iova,
                             int fd, int access) -> ibv_mr * {
            auto *w = static_cast<ScriptedWorld *>(ctx);
            w->calls.push_back("reg_dmabuf_mr");
            EXPECT_EQ(fd, 77);
            w->seen_offset = offset, w->seen_iova = iova, w->seen_length = length;
            w->seen_access = access;
            errno          = w->reg_dmabuf_errno;
            return w->reg_dmabuf_errno == 0 ? w->fake_mr : nullptr;
        };
        b.peermem_module = [](void *ctx) {
            auto *w = static_cast<ScriptedWorld *>(ctx);
            w->calls.push_back("peermem_module");
            return w->peermem;
        };
        b.reg_mr = [](void *ctx, ibv_pd *, void *, size_t, int) -> ibv_mr * {
            auto *w = static_cast<ScriptedWorld *>(ctx);
            w->calls.push_back("reg_mr");
            errno = w->reg_mr_errno;
            return w->reg_mr_errno == 0 ? w->fake_mr : nullptr;
        };
        return b;
    }

    RegOutcome run(gdr_cuda_config_t config, unsigned methods = 0)
    {
        return register_in_order(backend(), config, methods, fake_pd(), buffer(), 4096, 7);
    }

    static ibv_pd *fake_pd() { return reinterpret_cast<ibv_pd *>(0x2000); }
    static const void *buffer() { return reinterpret_cast<const void *>(0x7f0000001234); }
};

using Calls = std::vector<std::string>;

}  // namespace

TEST(RegisterInOrder, DmabufFirstWithOffsetAndIovaAndFdClosed)
{
    ScriptedWorld world;
    RegOutcome out = world.run({TRY, TRY});
    EXPECT_EQ(out.status, UCS_OK);
    EXPECT_EQ(out.method, GDR_CUDA_REG_DMABUF);
    EXPECT_EQ(out.mr, world.fake_mr);
    EXPECT_EQ(world.calls, (Calls{"export", "reg_dmabuf_mr", "close"}));
    EXPECT_EQ(world.seen_offset, 123u);
    EXPECT_EQ(world.seen_iova, reinterpret_cast<uintptr_t>(ScriptedWorld::buffer()));
    EXPECT_EQ(world.seen_length, 4096u);
    EXPECT_EQ(world.seen_access, 7);
    EXPECT_EQ(world.open_fds, 0);
    EXPECT_EQ(out.reason, "");
}

TEST(RegisterInOrder, ExportFailureFallsBackToPeermemAndSaysWhy)
{
    ScriptedWorld world;
    world.export_status = UCS_ERR_UNSUPPORTED;
    RegOutcome out      = world.run({TRY, TRY});
    EXPECT_EQ(out.status, UCS_OK);
    EXPECT_EQ(out.method, GDR_CUDA_REG_PEERMEM);
    EXPECT_EQ(world.calls, (Calls{"export", "peermem_module", "reg_mr"}));
    EXPECT_EQ(out.reason, "dma-buf: export failed: CUDA_ERROR_NOT_SUPPORTED (scripted)");
}

TEST(RegisterInOrder, DmabufMrFailureFallsBackToPeermemAndClosesFd)
{
    ScriptedWorld world;
    world.reg_dmabuf_errno = EOPNOTSUPP;
    RegOutcome out         = world.run({TRY, TRY});
    EXPECT_EQ(out.status, UCS_OK);
    EXPECT_EQ(out.method, GDR_CUDA_REG_PEERMEM);
    EXPECT_EQ(world.calls, (Calls{"export", "reg_dmabuf_mr", "close", "peermem_module", "reg_mr"}));
    EXPECT_EQ(world.open_fds, 0);
    EXPECT_NE(out.reason.find("ibv_reg_dmabuf_mr(offset 123, length 4096) failed"),
              std::string::npos)
        << out.reason;
    EXPECT_NE(out.reason.find("errno " + std::to_string(EOPNOTSUPP)), std::string::npos)
        << out.reason;
}

TEST(RegisterInOrder, BothFailRefusesWithEveryReason)
{
    ScriptedWorld world;
    world.reg_dmabuf_errno = EOPNOTSUPP;
    world.reg_mr_errno     = EFAULT;
    RegOutcome out         = world.run({TRY, TRY});
    EXPECT_EQ(out.status, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(out.mr, nullptr);
    EXPECT_EQ(out.method, GDR_CUDA_REG_NONE);
    // nothing is left behind: no MR was made, and the dma-buf was closed
    EXPECT_EQ(world.calls, (Calls{"export", "reg_dmabuf_mr", "close", "peermem_module", "reg_mr"}));
    EXPECT_EQ(world.open_fds, 0);
    EXPECT_NE(out.reason.find("dma-buf: ibv_reg_dmabuf_mr"), std::string::npos) << out.reason;
    EXPECT_NE(out.reason.find("peermem: ibv_reg_mr on the device pointer failed with "
                              "nvidia_peermem loaded: Bad address (errno 14)"),
              std::string::npos)
        << out.reason;
}

TEST(RegisterInOrder, NoPeermemModuleRefusesWithoutCallingRegMr)
{
    ScriptedWorld world;
    world.export_status = UCS_ERR_UNSUPPORTED;
    world.peermem       = "";
    RegOutcome out      = world.run({TRY, TRY});
    EXPECT_EQ(out.status, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(world.calls, (Calls{"export", "peermem_module"}));
    EXPECT_EQ(out.reason, "dma-buf: export failed: CUDA_ERROR_NOT_SUPPORTED (scripted); "
                          "peermem: neither nvidia_peermem nor nv_peer_mem is loaded");
}

TEST(RegisterInOrder, DmabufNoGoesStraightToPeermem)
{
    ScriptedWorld world;
    RegOutcome out = world.run({TRY, NO});
    EXPECT_EQ(out.method, GDR_CUDA_REG_PEERMEM);
    EXPECT_EQ(world.calls, (Calls{"peermem_module", "reg_mr"}));
    EXPECT_EQ(out.reason, "dma-buf: disabled by UCX_GDR_DMABUF=no");
}

TEST(RegisterInOrder, DmabufYesNeverFallsBackToPeermem)
{
    ScriptedWorld world;
    world.reg_dmabuf_errno = EINVAL;
    RegOutcome out         = world.run({TRY, YES});
    EXPECT_EQ(out.status, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(world.calls, (Calls{"export", "reg_dmabuf_mr", "close"}));
    EXPECT_NE(out.reason.find("peermem: not tried (UCX_GDR_DMABUF=yes)"), std::string::npos)
        << out.reason;
}

TEST(RegisterInOrder, GpuDirectRdmaNoTouchesNothing)
{
    for (gdr_cuda_policy_t dmabuf : {NO, TRY}) {
        ScriptedWorld world;
        RegOutcome out = world.run({NO, dmabuf});
        EXPECT_EQ(out.status, UCS_ERR_UNSUPPORTED);
        EXPECT_TRUE(world.calls.empty());
        EXPECT_EQ(out.reason, "CUDA memory registration disabled by UCX_GDR_GPU_DIRECT_RDMA=no");
    }
}

TEST(RegisterInOrder, ProbeMaskSkipsMethodsKnownNotToWork)
{
    ScriptedWorld world;
    RegOutcome out = world.run({TRY, TRY}, GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_PEERMEM));
    EXPECT_EQ(out.method, GDR_CUDA_REG_PEERMEM);
    EXPECT_EQ(world.calls, (Calls{"peermem_module", "reg_mr"}));

    ScriptedWorld only_dmabuf;
    only_dmabuf.reg_dmabuf_errno = EIO;
    out = only_dmabuf.run({TRY, TRY}, GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_DMABUF));
    EXPECT_EQ(out.status, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(only_dmabuf.calls, (Calls{"export", "reg_dmabuf_mr", "close"}));
    EXPECT_NE(out.reason.find("peermem: not used (md-open probe found it unavailable)"),
              std::string::npos);
}

TEST(RegisterInOrder, BadArgumentsAreInvalidParam)
{
    ScriptedWorld world;
    RegBackend backend = world.backend();
    EXPECT_EQ(
        register_in_order(backend, {TRY, TRY}, 0, nullptr, ScriptedWorld::buffer(), 1, 0).status,
        UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(register_in_order(backend, {TRY, TRY}, 0, ScriptedWorld::fake_pd(),
                                ScriptedWorld::buffer(), 0, 0)
                  .status,
              UCS_ERR_INVALID_PARAM);
    EXPECT_TRUE(world.calls.empty());
}

constexpr unsigned kDmabuf  = GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_DMABUF);
constexpr unsigned kPeermem = GDR_CUDA_METHOD_BIT(GDR_CUDA_REG_PEERMEM);

TEST(Config, OnlyDmabufYesWithGpuDirectNoIsContradictory)
{
    gdr_reason_t reason;
    for (gdr_cuda_policy_t gdr : {NO, YES, TRY}) {
        for (gdr_cuda_policy_t dmabuf : {NO, YES, TRY}) {
            gdr_cuda_config_t config{gdr, dmabuf};
            bool contradictory = gdr == NO && dmabuf == YES;
            EXPECT_EQ(gdr_cuda_config_check(&config, &reason),
                      contradictory ? UCS_ERR_INVALID_PARAM : UCS_OK);
            EXPECT_EQ(std::string(reason.text),
                      contradictory ? "UCX_GDR_DMABUF=yes contradicts UCX_GDR_GPU_DIRECT_RDMA=no"
                                    : "");
        }
    }
    EXPECT_EQ(gdr_cuda_config_check(nullptr, &reason), UCS_ERR_INVALID_PARAM);
}

TEST(Config, PolicyNumbersMatchUcxTernary)
{
    // The glue may cast ucs_ternary_auto_value_t (UCS_NO=0, UCS_YES=1, UCS_TRY=2) directly.
    EXPECT_EQ(GDR_CUDA_POLICY_NO, 0);
    EXPECT_EQ(GDR_CUDA_POLICY_YES, 1);
    EXPECT_EQ(GDR_CUDA_POLICY_TRY, 2);
    EXPECT_STREQ(gdr_cuda_policy_name(TRY), "try");
    EXPECT_STREQ(gdr_cuda_reg_method_name(GDR_CUDA_REG_DMABUF), "dma-buf");
    EXPECT_STREQ(gdr_cuda_reg_method_name(GDR_CUDA_REG_PEERMEM), "peermem");
    EXPECT_STREQ(gdr_cuda_reg_method_name(GDR_CUDA_REG_NONE), "none");
}

namespace {

DeviceFacts device(bool dmabuf_ok, bool peermem_ok)
{
    DeviceFacts facts;
    facts.label          = "GPU0 Test [0000:01:00]";
    facts.dmabuf_ok      = dmabuf_ok;
    facts.dmabuf_detail  = dmabuf_ok ? "works" : "broken";
    facts.peermem_ok     = peermem_ok;
    facts.peermem_detail = peermem_ok ? "loaded" : "absent";
    return facts;
}

ProbeInput with_cuda(std::vector<DeviceFacts> devices, bool have_pd = true)
{
    ProbeInput input;
    input.cuda_available = true;
    input.have_pd        = have_pd;
    input.devices        = std::move(devices);
    return input;
}

ProbeInput without_cuda()
{
    ProbeInput input;
    input.no_cuda_reason = "no CUDA: cannot load libcuda.so.1 (test)";
    input.have_pd        = true;
    return input;
}


}  // namespace

TEST(ProbeVerdict, NoCudaIsHostOnlyUnlessRequired)
{
    ProbeVerdict v = decide_probe_verdict({TRY, TRY}, without_cuda());
    EXPECT_EQ(v.status, UCS_OK);
    EXPECT_FALSE(v.registrable);
    EXPECT_EQ(v.reason, "no CUDA: cannot load libcuda.so.1 (test)");

    v = decide_probe_verdict({YES, TRY}, without_cuda());
    EXPECT_EQ(v.status, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(v.reason, "UCX_GDR_GPU_DIRECT_RDMA=yes but GPU memory registration is not available: "
                        "no CUDA: cannot load libcuda.so.1 (test)");

    v = decide_probe_verdict({TRY, YES}, without_cuda());
    EXPECT_EQ(v.status, UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(v.reason.rfind("UCX_GDR_DMABUF=yes but dma-buf registration is not available", 0), 0u)
        << v.reason;
}

TEST(ProbeVerdict, DisabledAndContradictory)
{
    ProbeVerdict v = decide_probe_verdict({NO, TRY}, with_cuda({device(true, true)}));
    EXPECT_EQ(v.status, UCS_OK);
    EXPECT_FALSE(v.registrable);
    EXPECT_EQ(v.methods, 0u);
    EXPECT_EQ(v.reason, "CUDA memory registration disabled by UCX_GDR_GPU_DIRECT_RDMA=no");

    v = decide_probe_verdict({NO, YES}, with_cuda({device(true, true)}));
    EXPECT_EQ(v.status, UCS_ERR_INVALID_PARAM);
}

TEST(ProbeVerdict, NoVerbsDeviceIsNotRegistrable)
{
    ProbeVerdict v = decide_probe_verdict({TRY, TRY}, with_cuda({device(true, true)}, false));
    EXPECT_EQ(v.status, UCS_OK);
    EXPECT_FALSE(v.registrable);
    EXPECT_EQ(v.reason.rfind("no verbs device (no protection domain to register with); "
                             "GPU0 Test [0000:01:00]: dma-buf: works; peermem: loaded",
                             0),
              0u)
        << v.reason;
    EXPECT_EQ(decide_probe_verdict({YES, TRY}, with_cuda({device(true, true)}, false)).status,
              UCS_ERR_UNSUPPORTED);
}

TEST(ProbeVerdict, MethodsFollowFactsAndPolicy)
{
    struct Case {
        gdr_cuda_config_t config;
        std::vector<DeviceFacts> devices;
        ucs_status_t status;
        unsigned methods;
    } cases[] = {
        {{TRY, TRY}, {device(true, false)}, UCS_OK, kDmabuf},
        {{TRY, TRY}, {device(false, true)}, UCS_OK, kPeermem},
        {{TRY, TRY}, {device(true, true)}, UCS_OK, kDmabuf | kPeermem},
        {{TRY, TRY}, {device(true, false), device(false, true)}, UCS_OK, kDmabuf | kPeermem},
        {{TRY, TRY}, {device(false, false)}, UCS_OK, 0},
        {{YES, TRY}, {device(false, false)}, UCS_ERR_UNSUPPORTED, 0},
        {{YES, TRY}, {device(false, true)}, UCS_OK, kPeermem},
        {{TRY, NO}, {device(true, false)}, UCS_OK, 0},
        {{YES, NO}, {device(true, false)}, UCS_ERR_UNSUPPORTED, 0},
        {{TRY, NO}, {device(true, true)}, UCS_OK, kPeermem},
        {{TRY, YES}, {device(true, true)}, UCS_OK, kDmabuf},  // no peermem fallback
        {{TRY, YES}, {device(false, true)}, UCS_ERR_UNSUPPORTED, 0},
        {{YES, YES}, {device(true, false)}, UCS_OK, kDmabuf},
    };
    for (const Case &c : cases) {
        ProbeVerdict v = decide_probe_verdict(c.config, with_cuda(c.devices));
        SCOPED_TRACE(std::string("gdr=") + gdr_cuda_policy_name(c.config.gpu_direct_rdma) +
                     " dmabuf=" + gdr_cuda_policy_name(c.config.dmabuf) + ": " + v.reason);
        EXPECT_EQ(v.status, c.status);
        EXPECT_EQ(v.methods, c.methods);
        EXPECT_EQ(v.registrable, c.methods != 0);
        if (c.methods == 0) {
            EXPECT_NE(v.reason.find("no GPU memory registration method works"), std::string::npos);
        }
    }
}

TEST(Reason, CutLinesEndInAnEllipsis)
{
    gdr_reason_t reason;
    gdr::set_reason(&reason, "abcdef");
    EXPECT_STREQ(reason.text, "abcdef");
    const std::string fits(GDR_REASON_MAX - 1, 'x');  // fits exactly: not cut
    gdr::set_reason(&reason, fits.c_str());
    EXPECT_EQ(std::string(reason.text), fits);
    const std::string longer(GDR_REASON_MAX + 10, 'y');
    gdr::set_reason(&reason, longer.c_str());
    EXPECT_EQ(std::string(reason.text), std::string(GDR_REASON_MAX - 4, 'y') + "...");
    gdr::set_reason(nullptr, "ignored");  // must not crash
}

namespace {

bool libcuda_loadable()
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle == nullptr) {
        handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    }
    if (handle != nullptr) {
        dlclose(handle);
        return true;
    }
    return false;
}

}  // namespace

// The whole public API on a machine without libcuda (this development machine, CI, the Soft-RoCE
// VM): host-only answers, clean reasons, and not a byte on stdout/stderr.
TEST(NoLibcuda, PublicApiIsHostOnlyAndSilent)
{
    if (libcuda_loadable()) {
        GTEST_SKIP() << "libcuda.so.1 is installed here; covered by the gpu tests instead";
    }
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();

    gdr_reason_t reason;
    EXPECT_EQ(gdr_cuda_available(&reason), UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(reason.text).rfind("no CUDA: cannot load libcuda.so.1", 0), 0u)
        << reason.text;
    EXPECT_EQ(gdr_cuda_available(nullptr), UCS_ERR_UNSUPPORTED);

    std::vector<char> host(100);
    gdr_cuda_mem_info_t info;
    ASSERT_EQ(gdr_cuda_mem_query(host.data(), host.size(), &info), UCS_OK);
    EXPECT_EQ(info.kind, GDR_CUDA_MEM_HOST);
    EXPECT_EQ(info.base, host.data());
    EXPECT_EQ(info.alloc_length, host.size());
    EXPECT_EQ(info.buffer_id, 0u);
    EXPECT_EQ(info.device_ordinal, -1);
    EXPECT_EQ(info.pci_domain, -1);
    EXPECT_EQ(gdr_cuda_mem_query(host.data(), 1, nullptr), UCS_ERR_INVALID_PARAM);

    uint64_t id = 1;
    EXPECT_EQ(gdr_cuda_buffer_id(host.data(), &id), UCS_ERR_INVALID_ADDR);
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(gdr_cuda_region_is_stale(host.data(), 0), 0);
    EXPECT_EQ(gdr_cuda_region_is_stale(host.data(), 42), 1);

    int fd          = 5;
    uint64_t offset = 0;
    EXPECT_EQ(gdr_cuda_dmabuf_export(host.data(), 10, &fd, &offset, &reason), UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(std::string(reason.text).rfind("no CUDA: cannot load libcuda.so.1", 0), 0u)
        << reason.text;
    EXPECT_EQ(gdr_cuda_dmabuf_export(host.data(), 0, &fd, &offset, &reason), UCS_ERR_INVALID_PARAM);
    EXPECT_STREQ(reason.text, "NULL fd/offset or empty range");

    gdr_cuda_probe_result_t probe;
    gdr_cuda_config_t config{TRY, TRY};
    EXPECT_EQ(gdr_cuda_probe(nullptr, &config, 0, &probe), UCS_OK);
    EXPECT_EQ(probe.cuda_registrable, 0);
    EXPECT_EQ(probe.methods, 0u);
    EXPECT_EQ(std::string(probe.reason.text).rfind("no CUDA: cannot load libcuda.so.1", 0), 0u)
        << probe.reason.text;
    config = {YES, TRY};
    EXPECT_EQ(gdr_cuda_probe(nullptr, &config, 0, &probe), UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(probe.reason.text).rfind("UCX_GDR_GPU_DIRECT_RDMA=yes but", 0), 0u)
        << probe.reason.text;

    gdr_cuda_reg_result_t reg;
    config = {TRY, TRY};
    EXPECT_EQ(gdr_cuda_reg_mr(reinterpret_cast<ibv_pd *>(0x1), host.data(), host.size(), 0, &config,
                              0, &reg, &reason),
              UCS_ERR_INVALID_ADDR);
    EXPECT_EQ(reg.mr, nullptr);
    EXPECT_EQ(std::string(reason.text).rfind("no CUDA: cannot load libcuda.so.1", 0), 0u)
        << reason.text;
    // the md's way: its own classification (host memory here) is not registered as CUDA memory
    EXPECT_EQ(gdr_cuda_reg_mr_classified(reinterpret_cast<ibv_pd *>(0x1), &info, host.data(),
                                         host.size(), 0, &config, 0, &reg, &reason),
              UCS_ERR_INVALID_ADDR);
    EXPECT_EQ(reg.mr, nullptr);
    EXPECT_EQ(std::string(reason.text).rfind("no CUDA: cannot load libcuda.so.1", 0), 0u)
        << reason.text;
    EXPECT_EQ(gdr_cuda_reg_mr_classified(reinterpret_cast<ibv_pd *>(0x1), nullptr, host.data(),
                                         host.size(), 0, &config, 0, &reg, &reason),
              UCS_ERR_INVALID_PARAM);

    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}
