// gdr_perftest: host and CUDA buffers.  CUDA goes through libcuda.so.1, dlopen'ed on first use,
// so the tool builds and runs without a CUDA toolkit and fails -m cuda with a clear message.
#include "perftest.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gdr_perftest {

namespace {

using CUresult    = int;
using CUdevice    = int;
using CUdeviceptr = unsigned long long;
using CUcontext   = void *;

struct cuda_api {
    CUresult (*cuInit)(unsigned) = nullptr;
    CUresult (*cuDeviceGetCount)(int *) = nullptr;
    CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
    CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
    CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
    CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
};

std::string cuda_error(const cuda_api &api, CUresult rc)
{
    const char *text = nullptr;
    if (api.cuGetErrorString != nullptr) api.cuGetErrorString(rc, &text);
    return "CUDA error " + std::to_string(rc) + (text != nullptr ? std::string(" (") + text + ")" : "");
}

/// The driver API, initialised with the device of this rank current; throws with the reason.
const cuda_api &cuda()
{
    static std::once_flag once;
    static cuda_api api;
    static std::string failure;
    std::call_once(once, [] {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char *why = dlerror();
            failure = std::string("cannot load libcuda.so.1 (no NVIDIA driver on this host?): ") +
                      (why != nullptr ? why : "dlopen failed");
            return;
        }
        auto get = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
            if (fn == nullptr && failure.empty()) failure = std::string("libcuda.so.1 lacks ") + name;
        };
        get(api.cuInit, "cuInit");
        get(api.cuDeviceGetCount, "cuDeviceGetCount");
        get(api.cuDeviceGet, "cuDeviceGet");
        get(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
        get(api.cuCtxSetCurrent, "cuCtxSetCurrent");
        get(api.cuMemAlloc, "cuMemAlloc_v2");
        get(api.cuMemFree, "cuMemFree_v2");
        get(api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
        get(api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
        get(api.cuMemsetD8, "cuMemsetD8_v2");
        get(api.cuGetErrorString, "cuGetErrorString");
        if (!failure.empty()) return;
        CUresult rc = api.cuInit(0);
        if (rc != 0) {
            failure = "cuInit failed: " + cuda_error(api, rc) + (rc == 100 ? ": no CUDA device" : "");
            return;
        }
        int count = 0;
        rc = api.cuDeviceGetCount(&count);
        if (rc != 0 || count == 0) {
            failure = "no CUDA device (" + (rc != 0 ? cuda_error(api, rc) : std::string("count 0")) + ")";
            return;
        }
        // One device per rank on the node: the local rank modulo the devices visible.
        const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        if (local == nullptr) local = std::getenv("LOCAL_RANK");
        if (local == nullptr) local = std::getenv("RANK");
        const int ordinal = (local != nullptr ? std::atoi(local) : 0) % count;
        CUdevice device = 0;
        CUcontext context = nullptr;
        if ((rc = api.cuDeviceGet(&device, ordinal)) != 0 ||
            (rc = api.cuDevicePrimaryCtxRetain(&context, device)) != 0 ||
            (rc = api.cuCtxSetCurrent(context)) != 0) {
            failure = "cannot make CUDA device " + std::to_string(ordinal) + " current: " + cuda_error(api, rc);
        }
    });
    if (!failure.empty()) throw std::runtime_error("-m cuda: " + failure);
    return api;
}

void cuda_check(CUresult rc, const char *what)
{
    if (rc != 0) throw std::runtime_error(std::string(what) + ": " + cuda_error(cuda(), rc));
}

}  // namespace

buffer::buffer(mem_kind kind, size_t length) : kind_(kind), length_(std::max<size_t>(length, 1))
{
    if (kind_ == mem_kind::cuda) {
        CUdeviceptr p = 0;
        cuda_check(cuda().cuMemAlloc(&p, length_), "cuMemAlloc");
        ptr_ = reinterpret_cast<void *>(p);
    } else {
        ptr_ = std::aligned_alloc(4096, (length_ + 4095) / 4096 * 4096);
        if (ptr_ == nullptr) throw std::bad_alloc();
    }
    clear(0, length_);
}

buffer::~buffer()
{
    if (kind_ == mem_kind::cuda) {
        cuda().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr_));
    } else {
        std::free(ptr_);
    }
}

void buffer::write(size_t offset, const void *src, size_t n)
{
    if (kind_ == mem_kind::cuda) {
        cuda_check(cuda().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(bytes() + offset), src, n), "cuMemcpyHtoD");
    } else {
        std::memcpy(bytes() + offset, src, n);
    }
}

void buffer::read(size_t offset, void *dst, size_t n) const
{
    if (kind_ == mem_kind::cuda) {
        cuda_check(cuda().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(bytes() + offset), n), "cuMemcpyDtoH");
    } else {
        std::memcpy(dst, bytes() + offset, n);
    }
}

void buffer::clear(size_t offset, size_t n)
{
    if (kind_ == mem_kind::cuda) {
        cuda_check(cuda().cuMemsetD8(reinterpret_cast<CUdeviceptr>(bytes() + offset), 0, n), "cuMemsetD8");
    } else {
        std::memset(bytes() + offset, 0, n);
    }
}

std::vector<std::byte> pattern(size_t size)
{
    std::vector<std::byte> p(size);
    for (size_t k = 0; k < size; ++k) p[k] = pattern_byte(size, k);
    return p;
}

size_t pattern_matches(const buffer &buf, size_t offset, size_t size)
{
    std::vector<std::byte> copy(size);
    buf.read(offset, copy.data(), size);
    size_t good = 0;
    for (size_t k = 0; k < size; ++k) good += copy[k] == pattern_byte(size, k);
    return good;
}

}  // namespace gdr_perftest
