// ucp_cpp with CUDA buffers: tagged send/recv and RMA of device memory through the installed
// UCX (or the gdr plugin when it can be loaded).  Skips without a CUDA device, and when no UCX
// transport in this process can access CUDA memory (Debian's UCX has no CUDA module).
#include "peer_harness.hpp"

#include <dlfcn.h>

using namespace ucp_cpp_test;

namespace {

/// The few CUDA driver calls the test needs, resolved from libcuda at run time (never linked).
struct cuda_driver {
    using CUresult  = int;
    using CUdevice  = int;
    using CUcontext = void *;
    using CUdeviceptr = unsigned long long;
    CUresult (*cuInit)(unsigned)                                     = nullptr;
    CUresult (*cuDeviceGet)(CUdevice *, int)                         = nullptr;
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice)      = nullptr;
    CUresult (*cuCtxSetCurrent)(CUcontext)                           = nullptr;
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t)                    = nullptr;
    CUresult (*cuMemFree)(CUdeviceptr)                               = nullptr;
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t)      = nullptr;
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t)            = nullptr;
    bool ready                                                        = false;

    cuda_driver()
    {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        if (lib == nullptr) {
            return;
        }
        auto load = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(lib, name));
            return fn != nullptr;
        };
        bool ok = load(cuInit, "cuInit") && load(cuDeviceGet, "cuDeviceGet") &&
                  load(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
                  load(cuCtxSetCurrent, "cuCtxSetCurrent") && load(cuMemAlloc, "cuMemAlloc_v2") &&
                  load(cuMemFree, "cuMemFree_v2") && load(cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
                  load(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
        CUdevice dev   = 0;
        CUcontext ctx  = nullptr;
        ready = ok && cuInit(0) == 0 && cuDeviceGet(&dev, 0) == 0 &&
                cuDevicePrimaryCtxRetain(&ctx, dev) == 0 && cuCtxSetCurrent(ctx) == 0;
    }
};

struct device_buffer {
    device_buffer(cuda_driver &cu, size_t n) : cu_(cu), size(n)
    {
        if (cu_.cuMemAlloc(&ptr, n) != 0) {
            throw std::runtime_error("cuMemAlloc failed");
        }
    }
    ~device_buffer() { cu_.cuMemFree(ptr); }
    void *get() const { return reinterpret_cast<void *>(ptr); }
    cuda_driver &cu_;
    cuda_driver::CUdeviceptr ptr = 0;
    size_t size;
};

std::shared_ptr<ucp_cpp::context> cuda_capable_context()
{
    try {
        ucp_cpp::load_plugin();  // the gdr plugin, if installed; otherwise the stock transports
    } catch (const ucp_cpp::ucx_error &) {
    }
    auto ctx = make_context("", all_features);
    return ctx->supports_memory_type(UCS_MEMORY_TYPE_CUDA) ? ctx : nullptr;
}

TEST(UcpCppGpu, TagAndRmaWithCudaBuffers)
{
    cuda_driver cu;
    if (!cu.ready) {
        GTEST_SKIP() << "no CUDA device (libcuda.so.1 / cuInit)";
    }
    auto ctx = cuda_capable_context();
    if (!ctx) {
        GTEST_SKIP() << "no UCX transport here can access CUDA memory (UCX without CUDA support "
                        "and no usable gdr plugin)";
    }
    auto wrk = ucp_cpp::worker::create(ctx);
    auto ep  = ucp_cpp::endpoint::connect(wrk, wrk->address());
    ucp_cpp::op_options on_gpu;
    on_gpu.memory_type = UCS_MEMORY_TYPE_CUDA;
    for (size_t size : {size_t(8), size_t(65536), size_t(4u << 20)}) {
        std::vector<uint8_t> host(size), back(size);
        fill_pattern(host.data(), size, size);
        device_buffer src(cu, size), dst(cu, size);
        ASSERT_EQ(cu.cuMemcpyHtoD(src.ptr, host.data(), size), 0);
        auto recv = wrk->tag_recv(dst.get(), size, 11, ~ucp_tag_t(0), on_gpu);
        ep->tag_send(src.get(), size, 11, on_gpu).wait(op_timeout);
        recv.wait(op_timeout);
        ASSERT_EQ(cu.cuMemcpyDtoH(back.data(), dst.ptr, size), 0);
        EXPECT_TRUE(check_pattern(back.data(), size, size)) << "tag, size " << size;

        // RMA: put from one device buffer into a registered device region, then get it back.
        device_buffer region(cu, size);
        auto memh = ucp_cpp::memory_handle::map(ctx, region.get(), size, UCS_MEMORY_TYPE_CUDA);
        EXPECT_EQ(memh->memory_type(), UCS_MEMORY_TYPE_CUDA);
        auto rkey = ep->unpack_rkey(memh->pack_rkey());
        ep->put(src.get(), size, memh->remote_address(), rkey, on_gpu).wait(op_timeout);
        ep->flush().wait(op_timeout);
        device_buffer fetched(cu, size);
        ep->get(fetched.get(), size, memh->remote_address(), rkey, on_gpu).wait(op_timeout);
        ASSERT_EQ(cu.cuMemcpyDtoH(back.data(), fetched.ptr, size), 0);
        EXPECT_TRUE(check_pattern(back.data(), size, size)) << "rma, size " << size;
    }
}

}  // namespace
