// A stand-in for libcuda.so.1 in host tests of gdr_cuda_driver: exports every entry point the
// layer looks up except the optional cuMemGetHandleForAddressRange.  cuInit returns
// $FAKE_CUDA_INIT_RESULT (default 0), cuDeviceGetCount $FAKE_CUDA_DEVICES (default 1); pointers,
// a context stack and the error names are just enough for the layer's own logic.  Entry points
// the layer never calls in these tests are stubs (their signatures do not matter to dlsym).
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

int env_int(const char *name, int fallback)
{
    const char *value = std::getenv(name);
    return value != nullptr ? std::atoi(value) : fallback;
}

std::vector<void *> context_stack;
int pointer_queries = 0;

}  // namespace

extern "C" {

#define FAKE_STUB(name) \
    int name()          \
    {                   \
        return 0;       \
    }
FAKE_STUB(cuDeviceGet)
FAKE_STUB(cuDeviceGetName)
FAKE_STUB(cuDeviceGetAttribute)
FAKE_STUB(cuDevicePrimaryCtxRetain)
FAKE_STUB(cuDevicePrimaryCtxRelease_v2)
FAKE_STUB(cuDevicePrimaryCtxGetState)
FAKE_STUB(cuCtxSetCurrent)
FAKE_STUB(cuCtxGetDevice)
FAKE_STUB(cuCtxSynchronize)
FAKE_STUB(cuPointerGetAttribute)
FAKE_STUB(cuMemGetAddressRange_v2)
FAKE_STUB(cuMemAlloc_v2)
FAKE_STUB(cuMemFree_v2)
FAKE_STUB(cuMemAllocManaged)
FAKE_STUB(cuMemHostAlloc)
FAKE_STUB(cuMemFreeHost)
FAKE_STUB(cuMemHostRegister_v2)
FAKE_STUB(cuMemHostUnregister)
FAKE_STUB(cuMemsetD8_v2)
FAKE_STUB(cuMemcpyHtoD_v2)
FAKE_STUB(cuMemcpyDtoH_v2)
FAKE_STUB(cuMemcpyAsync)
FAKE_STUB(cuMemcpyHtoDAsync_v2)
FAKE_STUB(cuMemcpyDtoHAsync_v2)
FAKE_STUB(cuStreamCreate)
FAKE_STUB(cuStreamDestroy_v2)
FAKE_STUB(cuStreamSynchronize)
FAKE_STUB(cuStreamWaitEvent)
FAKE_STUB(cuEventCreate)
FAKE_STUB(cuEventDestroy_v2)
FAKE_STUB(cuEventRecord)
FAKE_STUB(cuEventQuery)
FAKE_STUB(cuEventSynchronize)
FAKE_STUB(cuModuleLoadData)
FAKE_STUB(cuModuleGetFunction)
FAKE_STUB(cuLaunchKernel)
FAKE_STUB(cuMemCreate)
FAKE_STUB(cuMemRelease)
FAKE_STUB(cuMemAddressReserve)
FAKE_STUB(cuMemAddressFree)
FAKE_STUB(cuMemMap)
FAKE_STUB(cuMemUnmap)
FAKE_STUB(cuMemSetAccess)
FAKE_STUB(cuMemGetAllocationGranularity)
FAKE_STUB(cuMemRetainAllocationHandle)
FAKE_STUB(cuIpcGetMemHandle)
FAKE_STUB(cuIpcOpenMemHandle_v2)
FAKE_STUB(cuIpcCloseMemHandle)
#undef FAKE_STUB


int cuInit(unsigned)
{
    return env_int("FAKE_CUDA_INIT_RESULT", 0);
}

int cuDriverGetVersion(int *version)
{
    *version = 13000;
    return 0;
}

int cuDeviceGetCount(int *count)
{
    *count = env_int("FAKE_CUDA_DEVICES", 1);
    return 0;
}

int cuGetErrorName(int error, const char **name)
{
    if (error != 100) {
        *name = nullptr;
        return 1;  // CUDA_ERROR_INVALID_VALUE: unknown code
    }
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
}

int cuGetErrorString(int error, const char **text)
{
    *text = error == 100 ? "no CUDA-capable device is detected" : nullptr;
    return error == 100 ? 0 : 1;
}

int cuCtxGetCurrent(void **ctx)
{
    *ctx = context_stack.empty() ? nullptr : context_stack.back();
    return 0;
}

int cuCtxPushCurrent_v2(void *ctx)
{
    context_stack.push_back(ctx);
    return 0;
}

int cuCtxPopCurrent_v2(void **ctx)
{
    if (context_stack.empty()) {
        return 201;  // CUDA_ERROR_INVALID_CONTEXT
    }
    *ctx = context_stack.back();
    context_stack.pop_back();
    return 0;
}

/** Address 0x1000 is device memory of device 1 (buffer id 42, context 0x77); nothing else is
 *  known, which the real driver reports as success with zeroed values. */
int cuPointerGetAttributes(unsigned count, const int *attributes, void **data,
                           unsigned long long ptr)
{
    ++pointer_queries;
    const bool known = ptr == 0x1000;
    for (unsigned i = 0; i < count; ++i) {
        switch (attributes[i]) {
        case 1:
            *static_cast<void **>(data[i]) = known ? reinterpret_cast<void *>(0x77) : nullptr;
            break;  // CONTEXT
        case 2:
            *static_cast<unsigned *>(data[i]) = known ? 2 : 0;
            break;  // MEMORY_TYPE
        case 7:
            *static_cast<unsigned long long *>(data[i]) = known ? 42 : 0;
            break;  // BUFFER_ID
        case 8:
            *static_cast<bool *>(data[i]) = false;
            break;  // IS_MANAGED
        case 9:
            *static_cast<int *>(data[i]) = known ? 1 : -1;
            break;  // DEVICE_ORDINAL
        default:
            return 1;
        }
    }
    return 0;
}

/** For the tests: how many cuPointerGetAttributes calls were made. */
int fake_cuda_pointer_queries()
{
    return pointer_queries;
}

/** For the tests: the depth of the calling process's context stack. */
size_t fake_cuda_context_depth()
{
    return context_stack.size();
}

}  // extern "C"
