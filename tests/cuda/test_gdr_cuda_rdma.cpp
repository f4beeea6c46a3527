// gdr_cuda with a real verbs device (label rdma: Soft-RoCE in the VM; skipped without one).
// Where there is no CUDA (the VM), the md-open probe with a real protection domain must say
// "no CUDA" cleanly, honour the `yes` policies, and registration must refuse host memory.
#include "gdr_cuda.h"

#include <gtest/gtest.h>

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

namespace {

class VerbsDevice : public ::testing::Test {
protected:
    void SetUp() override
    {
        int num = 0;
        std::unique_ptr<ibv_device *, decltype(&ibv_free_device_list)> list(ibv_get_device_list(
                                                                                &num),
                                                                            ibv_free_device_list);
        if (list == nullptr || num == 0) {
            GTEST_SKIP() << "no verbs device (run through tests/rxe-vm/run)";
        }
        context_ = ibv_open_device(list.get()[0]);
        ASSERT_NE(context_, nullptr) << ibv_get_device_name(list.get()[0]);
        pd_ = ibv_alloc_pd(context_);
        ASSERT_NE(pd_, nullptr);
    }

    void TearDown() override
    {
        if (pd_ != nullptr)
            ibv_dealloc_pd(pd_);
        if (context_ != nullptr)
            ibv_close_device(context_);
    }

    ibv_context *context_ = nullptr;
    ibv_pd *pd_           = nullptr;
};

bool cuda_available()
{
    return gdr_cuda_available(nullptr) == UCS_OK;
}

}  // namespace

TEST_F(VerbsDevice, ProbeWithoutCudaSaysSoAndHonoursYes)
{
    if (cuda_available()) {
        GTEST_SKIP() << "CUDA is present here: this test covers the host-only verdict";
    }
    testing::internal::CaptureStderr();
    gdr_cuda_config_t config{GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_TRY};
    gdr_cuda_probe_result_t result;
    EXPECT_EQ(gdr_cuda_probe(pd_, &config, 0, &result), UCS_OK);
    EXPECT_EQ(result.cuda_registrable, 0);
    EXPECT_EQ(result.methods, 0u);
    EXPECT_EQ(std::string(result.reason.text).rfind("no CUDA: cannot load libcuda.so.1", 0), 0u)
        << result.reason.text;

    config = {GDR_CUDA_POLICY_YES, GDR_CUDA_POLICY_TRY};
    EXPECT_EQ(gdr_cuda_probe(pd_, &config, 0, &result), UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(result.reason.text)
                  .rfind("UCX_GDR_GPU_DIRECT_RDMA=yes but GPU memory "
                         "registration is not available: no CUDA",
                         0),
              0u)
        << result.reason.text;
    config = {GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_YES};
    EXPECT_EQ(gdr_cuda_probe(pd_, &config, 0, &result), UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(result.reason.text).rfind("UCX_GDR_DMABUF=yes but", 0), 0u)
        << result.reason.text;
    config = {GDR_CUDA_POLICY_NO, GDR_CUDA_POLICY_YES};
    EXPECT_EQ(gdr_cuda_probe(pd_, &config, 0, &result), UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(VerbsDevice, HostMemoryIsNotForTheCudaPath)
{
    std::vector<char> host(1 << 16);
    gdr_cuda_config_t config{GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_TRY};
    gdr_cuda_reg_result_t result;
    gdr_reason_t reason;
    EXPECT_EQ(gdr_cuda_reg_mr(pd_, host.data(), host.size(),
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, &config, 0, &result,
                              &reason),
              UCS_ERR_INVALID_ADDR);
    EXPECT_EQ(result.mr, nullptr);
    EXPECT_NE(reason.text[0], '\0');
    // ...and the md's ordinary host path still registers it on this device.
    ibv_mr *mr = ibv_reg_mr(pd_, host.data(), host.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    ibv_dereg_mr(mr);
}
