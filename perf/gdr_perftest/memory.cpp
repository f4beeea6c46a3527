// gdr_perftest: host and CUDA buffers.  CUDA goes through libcuda.so.1, dlopen'ed on first use
// by the project's driver layer, so the tool builds and runs without a CUDA toolkit and fails
// -m cuda with a clear message.
#include "perftest.hpp"

#include "cuda.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gdr_perftest {

namespace cu = gdr::cuda_driver;

const cu::driver_api &cuda()
{
    static std::once_flag once;
    static std::string failure;
    const cu::driver &driver = cu::driver::instance();
    std::call_once(once, [&driver] {
        if (!driver.usable()) {
            failure = driver.reason();
            return;
        }
        // One device per rank on the node: the local rank modulo the devices visible.
        const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        if (local == nullptr)
            local = std::getenv("LOCAL_RANK");
        if (local == nullptr)
            local = std::getenv("RANK");
        const int ordinal = (local != nullptr ? std::atoi(local) : 0) % driver.device_count();
        const cu::driver_api &api = driver.api();
        cu::CUdevice device       = 0;
        cu::CUcontext context     = nullptr;
        cu::CUresult rc;
        if ((rc = api.cuDeviceGet(&device, ordinal)) != cu::CUDA_SUCCESS ||
            (rc = api.cuDevicePrimaryCtxRetain(&context, device)) != cu::CUDA_SUCCESS ||
            (rc = api.cuCtxSetCurrent(context)) != cu::CUDA_SUCCESS) {
            failure = "cannot make CUDA device " + std::to_string(ordinal) +
                      " current: " + driver.error_text(rc);
        }
    });
    if (!failure.empty())
        throw std::runtime_error("-m cuda: " + failure);
    return driver.api();
}

void cuda_check(cu::CUresult rc, const char *what)
{
    if (rc != cu::CUDA_SUCCESS) {
        throw std::runtime_error(cu::driver::instance().failure(what, rc));
    }
}

namespace {

cu::CUdeviceptr device_address(const void *p)
{
    return static_cast<cu::CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

}  // namespace

buffer::buffer(mem_kind kind, size_t length) : kind_(kind), length_(std::max<size_t>(length, 1))
{
    if (kind_ == mem_kind::cuda) {
        cu::CUdeviceptr p = 0;
        cuda_check(cuda().cuMemAlloc_v2(&p, length_), "cuMemAlloc");
        ptr_ = reinterpret_cast<void *>(p);
    } else {
        ptr_ = std::aligned_alloc(4096, (length_ + 4095) / 4096 * 4096);
        if (ptr_ == nullptr)
            throw std::bad_alloc();
    }
    clear(0, length_);
}

buffer::~buffer()
{
    if (kind_ == mem_kind::cuda) {
        cuda().cuMemFree_v2(device_address(ptr_));
    } else {
        std::free(ptr_);
    }
}

void buffer::write(size_t offset, const void *src, size_t n)
{
    if (kind_ == mem_kind::cuda) {
        // From pageable memory cuMemcpyHtoD may return before the DMA reached the device, and
        // ucp_cpp::coll's non-blocking stream does not wait for the legacy one: without this a
        // collective can read the bytes the buffer held before (seen: bcast sent zeros).
        cuda_check(cuda().cuMemcpyHtoD_v2(device_address(bytes() + offset), src, n),
                   "cuMemcpyHtoD");
        cuda_check(cuda().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    } else {
        std::memcpy(bytes() + offset, src, n);
    }
}

void buffer::read(size_t offset, void *dst, size_t n) const
{
    if (kind_ == mem_kind::cuda) {
        cuda_check(cuda().cuMemcpyDtoH_v2(dst, device_address(bytes() + offset), n),
                   "cuMemcpyDtoH");
    } else {
        std::memcpy(dst, bytes() + offset, n);
    }
}

void buffer::clear(size_t offset, size_t n)
{
    if (kind_ == mem_kind::cuda) {
        // cuMemsetD8 on device memory may return before it ran, and ucp_cpp::coll works on a
        // non-blocking stream that does not wait for the legacy one: the buffer must be ready.
        cuda_check(cuda().cuMemsetD8_v2(device_address(bytes() + offset), 0, n), "cuMemsetD8");
        cuda_check(cuda().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    } else {
        std::memset(bytes() + offset, 0, n);
    }
}

double device_copy_GBps(size_t bytes)
{
    const cu::driver_api &api = cuda();
    buffer a(mem_kind::cuda, bytes), b(mem_kind::cuda, bytes);
    auto copy = [&] {
        cuda_check(api.cuMemcpyAsync(device_address(b.data()), device_address(a.data()), bytes,
                                     nullptr),
                   "cuMemcpyAsync");
    };
    copy();  // first touch and clocks up, untimed
    cuda_check(api.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    const int reps   = 20;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
        copy();
    cuda_check(api.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return double(bytes) * reps / s / 1e9;
}

std::vector<std::byte> pattern(size_t size)
{
    std::vector<std::byte> p(size);
    for (size_t k = 0; k < size; ++k)
        p[k] = pattern_byte(size, k);
    return p;
}

size_t pattern_matches(const buffer &buf, size_t offset, size_t size)
{
    std::vector<std::byte> copy(size);
    buf.read(offset, copy.data(), size);
    size_t good = 0;
    for (size_t k = 0; k < size; ++k)
        good += copy[k] == pattern_byte(size, k);
    return good;
}

}  // namespace gdr_perftest
