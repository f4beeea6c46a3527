// Host tests of gdr_cuda_driver, the one CUDA driver layer: loading without libcuda (a reason,
// no crash, no output), a library that is not a CUDA driver, and the whole load path, error
// names, batched pointer queries and scoped contexts against a fake libcuda (fake_libcuda.cpp).
#include <gdr_cuda_driver/context.hpp>
#include <gdr_cuda_driver/driver.hpp>
#include <gdr_cuda_driver/pointer.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <set>
#include <thread>
#include <vector>

namespace cu = gdr::cuda_driver;

namespace {

/** Sets an environment variable for the scope (the fake reads it when the driver loads). */
class scoped_env {
public:
    scoped_env(const char *name, const char *value) : name_(name) { setenv(name, value, 1); }
    ~scoped_env() { unsetenv(name_); }

private:
    const char *name_;
};

template <typename T> T fake_symbol(const char *name)
{
    void *handle = dlopen(GDR_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    EXPECT_NE(handle, nullptr);
    T symbol = handle != nullptr ? reinterpret_cast<T>(dlsym(handle, name)) : nullptr;
    if (handle != nullptr) {
        dlclose(handle);  // drops only the NOLOAD reference
    }
    return symbol;
}

bool libcuda_loadable()
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
        dlclose(handle);
    }
    return handle != nullptr;
}

}  // namespace

TEST(CudaDriver, MissingLibraryIsAReasonNotAnError)
{
    testing::internal::CaptureStderr();
    cu::driver driver("libgdr-test-no-such-library.so.1");
    EXPECT_FALSE(driver.initialized());
    EXPECT_FALSE(driver.usable());
    EXPECT_EQ(driver.device_count(), 0);
    EXPECT_EQ(driver.version(), 0);
    EXPECT_EQ(driver.reason().rfind("cannot load libgdr-test-no-such-library.so.1 (", 0), 0u)
        << driver.reason();
    EXPECT_EQ(driver.api().cuInit, nullptr);
    EXPECT_EQ(driver.error_text(100), "CUresult 100");  // no library: no names, no crash
    EXPECT_EQ(driver.failure("cuInit", 3), "cuInit failed: CUresult 3");
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(CudaDriver, LibraryWithoutTheDriverApiIsRejectedByName)
{
    cu::driver driver("libc.so.6");
    EXPECT_FALSE(driver.usable());
    EXPECT_EQ(driver.reason(), "libc.so.6 lacks cuInit (driver too old for this build)");
}

// This machine, CI and the Soft-RoCE VM have no libcuda: the process-wide driver says so.
TEST(CudaDriver, InstanceWithoutLibcudaSaysWhyOnceForAllThreads)
{
    if (libcuda_loadable()) {
        GTEST_SKIP() << "libcuda.so.1 is installed here; the gpu tests cover the real driver";
    }
    std::vector<const cu::driver *> seen(8, nullptr);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < seen.size(); ++i) {
        threads.emplace_back([&seen, i] { seen[i] = &cu::driver::instance(); });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }
    EXPECT_EQ(std::set<const cu::driver *>(seen.begin(), seen.end()).size(), 1u);
    EXPECT_FALSE(seen[0]->usable());
    EXPECT_EQ(seen[0]->reason().rfind("cannot load libcuda.so.1 (", 0), 0u) << seen[0]->reason();
}

TEST(CudaDriver, LoadsEveryEntryPointAndLeavesTheOptionalOneNull)
{
    cu::driver driver(GDR_FAKE_LIBCUDA);
    ASSERT_TRUE(driver.usable()) << driver.reason();
    EXPECT_TRUE(driver.reason().empty());
    EXPECT_EQ(driver.device_count(), 1);
    EXPECT_EQ(driver.version(), 13000);
    for (const cu::entry_point &entry : cu::entry_points) {
        const void *slot = *reinterpret_cast<void *const *>(
            reinterpret_cast<const char *>(&driver.api()) + entry.offset);
        EXPECT_EQ(slot == nullptr, entry.optional) << entry.symbol;
    }
    EXPECT_EQ(driver.api().cuMemGetHandleForAddressRange, nullptr);
}

TEST(CudaDriver, CuInitFailureIsNamedWithTheDriversWords)
{
    scoped_env no_device("FAKE_CUDA_INIT_RESULT", "100");
    cu::driver driver(GDR_FAKE_LIBCUDA);
    EXPECT_FALSE(driver.initialized());
    EXPECT_FALSE(driver.usable());
    EXPECT_EQ(driver.reason(),
              "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
    EXPECT_EQ(driver.error_text(999), "CUresult 999");
}

TEST(CudaDriver, NoDeviceAfterASuccessfulCuInitIsNotUsable)
{
    scoped_env none("FAKE_CUDA_DEVICES", "0");
    cu::driver driver(GDR_FAKE_LIBCUDA);
    EXPECT_TRUE(driver.initialized());
    EXPECT_FALSE(driver.usable());
    EXPECT_EQ(driver.device_count(), 0);
    EXPECT_EQ(driver.reason(), "no CUDA device (cuDeviceGetCount: 0)");
}

TEST(CudaDriver, PointerAttributesComeFromOneBatchedCall)
{
    cu::driver driver(GDR_FAKE_LIBCUDA);
    ASSERT_TRUE(driver.usable()) << driver.reason();
    auto queries = fake_symbol<int (*)()>("fake_cuda_pointer_queries");
    ASSERT_NE(queries, nullptr);
    const int before = queries();

    cu::pointer_attributes device;
    ASSERT_TRUE(device.query(driver.api(), reinterpret_cast<const void *>(0x1000)));
    EXPECT_EQ(queries(), before + 1);
    EXPECT_TRUE(device.is_device());
    EXPECT_EQ(device.memory_type, cu::CU_MEMORYTYPE_DEVICE);
    EXPECT_EQ(device.device_ordinal, 1);
    EXPECT_EQ(device.buffer_id, 42u);
    EXPECT_EQ(device.context, reinterpret_cast<cu::CUcontext>(0x77));

    int on_stack = 0;
    cu::pointer_attributes host;
    EXPECT_FALSE(host.query(driver.api(), &on_stack));  // unknown to the driver: host memory
    EXPECT_FALSE(host.is_device());
    EXPECT_EQ(queries(), before + 2);
}

TEST(CudaDriver, ScopedContextRestoresTheCallersStack)
{
    cu::driver driver(GDR_FAKE_LIBCUDA);
    ASSERT_TRUE(driver.usable()) << driver.reason();
    auto depth = fake_symbol<size_t (*)()>("fake_cuda_context_depth");
    ASSERT_NE(depth, nullptr);
    const auto mine  = reinterpret_cast<cu::CUcontext>(0x10);
    const auto other = reinterpret_cast<cu::CUcontext>(0x20);
    {
        cu::scoped_context outer(driver.api(), mine);
        EXPECT_EQ(outer.result(), cu::CUDA_SUCCESS);
        EXPECT_EQ(depth(), 1u);
        {
            cu::scoped_context same(driver.api(), mine);  // already current: no push
            EXPECT_EQ(depth(), 1u);
            cu::scoped_context switched(driver.api(), other);
            EXPECT_EQ(depth(), 2u);
            cu::scoped_context none(driver.api(), nullptr);
            EXPECT_EQ(none.result(), cu::CUDA_SUCCESS);
            EXPECT_EQ(depth(), 2u);
        }
        EXPECT_EQ(depth(), 1u);
    }
    EXPECT_EQ(depth(), 0u);
}
