// ucp_cpp with CUDA buffers, two processes on one GPU: tagged send/recv (both directions) and
// RMA put/get into a peer's registered device memory, through the installed UCX (UCX_TLS as the
// caller sets it; by default all: cuda_copy/cuda_ipc where UCX has them).  Skips without a CUDA
// device, and when the UCX in use cannot access CUDA memory (Debian's and Ubuntu's UCX have no
// CUDA module: tests/device/run-gpu-tests GDR_DEVICE_UCX=cuda brings one that has).
//
// CUDA does not survive fork(): the parent touches neither CUDA nor UCX before the peer is forked;
// the capability probe runs in a child of its own.
#include "peer_harness.hpp"

#include <gdr_cuda_driver/driver.hpp>

#include <poll.h>
#include <sys/wait.h>

#include <functional>
#include <map>

using namespace ucp_cpp_test;

namespace {

/// Device 0's primary context, current on this thread, through the project's CUDA driver layer
/// (libcuda dlopen'ed: the test links no CUDA library).
struct cuda_device {
    using CUdeviceptr                       = gdr::cuda_driver::CUdeviceptr;
    const gdr::cuda_driver::driver_api &api = gdr::cuda_driver::driver::instance().api();
    bool ready                              = false;

    cuda_device()
    {
        gdr::cuda_driver::CUdevice dev  = 0;
        gdr::cuda_driver::CUcontext ctx = nullptr;
        ready = gdr::cuda_driver::driver::instance().usable() && api.cuDeviceGet(&dev, 0) == 0 &&
                api.cuDevicePrimaryCtxRetain(&ctx, dev) == 0 && api.cuCtxSetCurrent(ctx) == 0;
    }
};

struct device_buffer {
    device_buffer(cuda_device &cu, size_t n) : cu_(cu), size(n)
    {
        if (cu_.api.cuMemAlloc_v2(&ptr, n) != 0) {
            throw std::runtime_error("cuMemAlloc failed");
        }
    }
    ~device_buffer() { cu_.api.cuMemFree_v2(ptr); }
    void *get() const { return reinterpret_cast<void *>(ptr); }
    cuda_device &cu_;
    cuda_device::CUdeviceptr ptr = 0;
    size_t size;
};


/// Runs @p probe in a forked child (so that the caller's process has no CUDA/UCX state yet).
/// Returns the child's exit code.
int in_child(const std::function<int()> &probe)
{
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
        int code = 99;
        try {
            code = probe();
        } catch (...) {
        }
        ::_exit(code);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 98;
}

constexpr int probe_ok = 0, probe_no_gpu = 1, probe_no_ucx_cuda = 2;

int probe_environment()
{
    return in_child([] {
        cuda_device cu;
        if (!cu.ready) {
            return probe_no_gpu;
        }
        try {
            ucp_cpp::load_plugin();  // the gdr plugin, if installed: it detects CUDA memory too
        } catch (const ucp_cpp::ucx_error &) {
        }
        auto ctx = make_context("", all_features);
        return ctx->supports_memory_type(UCS_MEMORY_TYPE_CUDA) ? probe_ok : probe_no_ucx_cuda;
    });
}

std::vector<size_t> gpu_sizes()
{
    return {1, 8, 4099, 65536, 1000003, size_t(4) << 20};
}

constexpr ucp_tag_t to_peer = 21, from_peer = 22;
constexpr size_t rma_region = size_t(8) << 20;

/// Parameter: UCX_PROTO_ENABLE ("n": UCX 1.13's legacy protocols, "y": the new ones).
class UcpCppGpu : public ::testing::TestWithParam<const char *> {};

TEST_P(UcpCppGpu, TagAndRmaBetweenProcessesWithCudaBuffers)
{
    const std::map<std::string, std::string> config{{"PROTO_ENABLE", GetParam()}};
    const bool legacy = std::string(GetParam()) == "n";
    switch (probe_environment()) {
    case probe_ok:
        break;
    case probe_no_gpu:
        GTEST_SKIP() << "no CUDA device (libcuda.so.1 / cuInit)";
    case probe_no_ucx_cuda:
        GTEST_SKIP() << "the UCX in use cannot access CUDA memory (no CUDA transports, no usable "
                        "gdr plugin): run with a CUDA-enabled UCX (GDR_DEVICE_UCX=cuda)";
    default:
        FAIL() << "the capability probe crashed";
    }
    ucp_cpp::op_options on_gpu;
    on_gpu.memory_type = UCS_MEMORY_TYPE_CUDA;

    peer_process peer([&](channel &ch) {
        cuda_device cu;
        PEER_CHECK(cu.ready);
        side s = connect_by_address(ch, "", {}, config);
        PEER_CHECK(s.ctx->legacy_protocols() == legacy);
        // Echo: receive into device memory, check it there (via a copy), send it back from there.
        device_buffer buffer(cu, gpu_sizes().back());
        std::vector<uint8_t> host(gpu_sizes().back());
        for (size_t size : gpu_sizes()) {
            auto recv = s.wrk->tag_recv(buffer.get(), size, to_peer, ~ucp_tag_t(0), on_gpu);
            recv.wait(op_timeout);
            PEER_CHECK(recv.length() == size);
            PEER_CHECK(cu.api.cuMemcpyDtoH_v2(host.data(), buffer.ptr, size) == 0);
            PEER_CHECK(check_pattern(host.data(), size, size));
            s.ep->tag_send(buffer.get(), size, from_peer, on_gpu).wait(op_timeout);
        }
        if (legacy) {  // the parent checks that RMA is refused, and is done
            ch.recv_value();
            s.ep->close().wait(op_timeout);
            return;
        }
        // RMA target: a registered device region; the parent puts a pattern and gets it back.
        device_buffer region(cu, rma_region);
        auto memh = ucp_cpp::memory_handle::map(s.ctx, region.get(), rma_region,
                                                UCS_MEMORY_TYPE_CUDA);
        PEER_CHECK(memh->memory_type() == UCS_MEMORY_TYPE_CUDA);
        ch.send_value(memh->remote_address());
        ch.send(memh->pack_rkey().bytes);
        serve_until_message(*s.wrk, ch);  // RMA may need the target's progress (emulation)
        ch.recv_value();
        // The last put wrote rma_region bytes of pattern seed 77 at offset 0.
        std::vector<uint8_t> back(rma_region);
        PEER_CHECK(cu.api.cuMemcpyDtoH_v2(back.data(), region.ptr, rma_region) == 0);
        PEER_CHECK(check_pattern(back.data(), rma_region, 77));
        ch.send_value(1);
        s.ep->close().wait(op_timeout);
    });

    cuda_device cu;  // only now: after the fork
    ASSERT_TRUE(cu.ready);
    side s = connect_by_address(peer.control(), "", {}, config);
    std::vector<uint8_t> host(gpu_sizes().back()), back(gpu_sizes().back());
    device_buffer src(cu, gpu_sizes().back()), dst(cu, gpu_sizes().back());
    for (size_t size : gpu_sizes()) {
        fill_pattern(host.data(), size, size);
        ASSERT_EQ(cu.api.cuMemcpyHtoD_v2(src.ptr, host.data(), size), 0);
        auto echo = s.wrk->tag_recv(dst.get(), size, from_peer, ~ucp_tag_t(0), on_gpu);
        s.ep->tag_send(src.get(), size, to_peer, on_gpu).wait(op_timeout);
        echo.wait(op_timeout);
        ASSERT_EQ(echo.length(), size);
        ASSERT_EQ(cu.api.cuMemcpyDtoH_v2(back.data(), dst.ptr, size), 0);
        EXPECT_TRUE(check_pattern(back.data(), size, size)) << "tag echo, size " << size;
    }

    if (legacy) {
        // UCP's legacy RMA would memcpy from device memory (a segfault): the wrapper refuses
        // where that path exists; where UCX removed it, UCP fails the request itself.
        std::vector<uint8_t> target(64);
        auto memh = ucp_cpp::memory_handle::map(s.ctx, target.data(), target.size());
        auto rkey = s.ep->unpack_rkey(memh->pack_rkey());
        try {
            s.ep->put(src.get(), 8, memh->remote_address(), rkey, on_gpu).wait(op_timeout);
            ADD_FAILURE() << "put of a CUDA buffer under legacy protocols was not refused";
        } catch (const ucp_cpp::ucx_error &e) {
            EXPECT_EQ(e.status(), UCS_ERR_UNSUPPORTED) << e.what();
        }
        peer.control().send_value(1);
        EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
        return;
    }
    uint64_t base = peer.control().recv_value();
    ucp_cpp::packed_rkey packed{peer.control().recv()};
    auto rkey = s.ep->unpack_rkey(packed);
    device_buffer rma_src(cu, rma_region), fetched(cu, rma_region);
    std::vector<uint8_t> pattern(rma_region), got(rma_region);
    for (size_t size : gpu_sizes()) {  // put + get at growing sizes, each checked
        fill_pattern(pattern.data(), size, size + 1);
        ASSERT_EQ(cu.api.cuMemcpyHtoD_v2(rma_src.ptr, pattern.data(), size), 0);
        s.ep->put(rma_src.get(), size, base, rkey, on_gpu).wait(op_timeout);
        s.ep->flush().wait(op_timeout);
        s.ep->get(fetched.get(), size, base, rkey, on_gpu).wait(op_timeout);
        ASSERT_EQ(cu.api.cuMemcpyDtoH_v2(got.data(), fetched.ptr, size), 0);
        EXPECT_TRUE(check_pattern(got.data(), size, size + 1)) << "put/get, size " << size;
    }
    fill_pattern(pattern.data(), rma_region, 77);  // the whole region, checked by the target
    ASSERT_EQ(cu.api.cuMemcpyHtoD_v2(rma_src.ptr, pattern.data(), rma_region), 0);
    s.ep->put(rma_src.get(), rma_region, base, rkey, on_gpu).wait(op_timeout);
    s.ep->flush().wait(op_timeout);
    peer.control().send_value(1);
    EXPECT_EQ(peer.control().recv_value(), 1u) << "the target saw other bytes than were put";
    EXPECT_EQ(peer.wait_exit_progressing(*s.wrk), 0);
}

INSTANTIATE_TEST_SUITE_P(Protocols, UcpCppGpu, ::testing::Values("n", "y"), [](const auto &info) {
    return std::string(info.param) == "y" ? "new" : "legacy";
});

}  // namespace
