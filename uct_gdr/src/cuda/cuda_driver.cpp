// dlopen'ed CUDA driver: see cuda_driver.h.
#include "cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace gdr::cuda::drv {

namespace {

// One table drives both the lookup and the "which symbol is missing" message.
struct Symbol {
    const char *name;
    void      **slot;
    bool        optional;
};

}  // namespace

Driver::Driver(const char *soname)
{
    // RTLD_LOCAL: our lookups go through dlsym; never inject libcuda's symbols into the global
    // namespace of an application that did not ask for CUDA.
    handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
        const char *err = dlerror();
        reason_ = std::string("no CUDA: cannot load ") + soname + " (" + (err ? err : "?") + ")";
        return;
    }

    const Symbol symbols[] = {
#define GDR_CUDA_SYM(name) {#name, reinterpret_cast<void **>(&api_.name), false}
#define GDR_CUDA_OPT_SYM(name) {#name, reinterpret_cast<void **>(&api_.name), true}
        GDR_CUDA_SYM(cuInit),
        GDR_CUDA_SYM(cuDriverGetVersion),
        GDR_CUDA_SYM(cuGetErrorName),
        GDR_CUDA_SYM(cuGetErrorString),
        GDR_CUDA_SYM(cuDeviceGetCount),
        GDR_CUDA_SYM(cuDeviceGet),
        GDR_CUDA_SYM(cuDeviceGetName),
        GDR_CUDA_SYM(cuDeviceGetAttribute),
        GDR_CUDA_SYM(cuDevicePrimaryCtxRetain),
        GDR_CUDA_SYM(cuDevicePrimaryCtxRelease_v2),
        GDR_CUDA_SYM(cuDevicePrimaryCtxGetState),
        GDR_CUDA_SYM(cuCtxGetCurrent),
        GDR_CUDA_SYM(cuCtxSetCurrent),
        GDR_CUDA_SYM(cuCtxPushCurrent_v2),
        GDR_CUDA_SYM(cuCtxPopCurrent_v2),
        GDR_CUDA_SYM(cuCtxGetDevice),
        GDR_CUDA_SYM(cuCtxSynchronize),
        GDR_CUDA_SYM(cuPointerGetAttribute),
        GDR_CUDA_SYM(cuPointerGetAttributes),
        GDR_CUDA_SYM(cuMemGetAddressRange_v2),
        GDR_CUDA_SYM(cuMemAlloc_v2),
        GDR_CUDA_SYM(cuMemFree_v2),
        GDR_CUDA_SYM(cuMemAllocManaged),
        GDR_CUDA_SYM(cuMemHostAlloc),
        GDR_CUDA_SYM(cuMemFreeHost),
        GDR_CUDA_SYM(cuMemHostRegister_v2),
        GDR_CUDA_SYM(cuMemHostUnregister),
        GDR_CUDA_SYM(cuMemsetD8_v2),
        GDR_CUDA_SYM(cuMemCreate),
        GDR_CUDA_SYM(cuMemRelease),
        GDR_CUDA_SYM(cuMemAddressReserve),
        GDR_CUDA_SYM(cuMemAddressFree),
        GDR_CUDA_SYM(cuMemMap),
        GDR_CUDA_SYM(cuMemUnmap),
        GDR_CUDA_SYM(cuMemSetAccess),
        GDR_CUDA_SYM(cuMemGetAllocationGranularity),
        GDR_CUDA_SYM(cuMemRetainAllocationHandle),
        GDR_CUDA_OPT_SYM(cuMemGetHandleForAddressRange),
#undef GDR_CUDA_SYM
#undef GDR_CUDA_OPT_SYM
    };
    for (const Symbol &symbol : symbols) {
        *symbol.slot = dlsym(handle_, symbol.name);
        if (*symbol.slot == nullptr && !symbol.optional) {
            reason_ = std::string("no CUDA: ") + soname + " lacks " + symbol.name +
                      " (driver too old for this build)";
            return;
        }
    }

    api_.cuDriverGetVersion(&version_);
    CUresult result = api_.cuInit(0);
    if (result != CUDA_SUCCESS) {
        // CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY (the toolkit's stub), driver/library
        // mismatch...: all mean "host memory only".
        reason_ = "no CUDA: cuInit failed: " + error_text(result);
        return;
    }
    result = api_.cuDeviceGetCount(&device_count_);
    if (result != CUDA_SUCCESS || device_count_ <= 0) {
        reason_ = "no CUDA: no CUDA device (cuDeviceGetCount: " +
                  (result == CUDA_SUCCESS ? std::string("0") : error_text(result)) + ")";
        device_count_ = 0;
        return;
    }
    pci_.resize(static_cast<size_t>(device_count_));
    for (int ordinal = 0; ordinal < device_count_; ++ordinal) {
        CUdevice     device   = 0;
        PciLocation &location = pci_[static_cast<size_t>(ordinal)];
        if (api_.cuDeviceGet(&device, ordinal) == CUDA_SUCCESS) {
            api_.cuDeviceGetAttribute(&location.domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device);
            api_.cuDeviceGetAttribute(&location.bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
            api_.cuDeviceGetAttribute(&location.device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device);
        }
    }
    usable_ = true;
}

const Driver::PciLocation &Driver::pci_location(int ordinal) const
{
    static const PciLocation unknown;
    return ordinal >= 0 && static_cast<size_t>(ordinal) < pci_.size() ?
               pci_[static_cast<size_t>(ordinal)] : unknown;
}

Driver::~Driver()
{
    if (handle_ != nullptr) {
        dlclose(handle_);
    }
}

const Driver &Driver::instance()
{
    static std::once_flag once;
    static Driver        *driver = nullptr;
    // Intentionally never destroyed: see the class comment.
    std::call_once(once, [] { driver = new Driver("libcuda.so.1"); });
    return *driver;
}

std::string Driver::error_text(CUresult result) const
{
    const char *name = nullptr;
    const char *text = nullptr;
    if (api_.cuGetErrorName != nullptr) {
        api_.cuGetErrorName(result, &name);
    }
    if (api_.cuGetErrorString != nullptr) {
        api_.cuGetErrorString(result, &text);
    }
    std::string out = name ? name : "CUresult " + std::to_string(result);
    if (text != nullptr) {
        out += std::string(" (") + text + ")";
    }
    return out;
}

ScopedContext::ScopedContext(const Api &api, CUcontext ctx) : api_(api)
{
    CUcontext current = nullptr;
    if (ctx == nullptr || api_.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current == ctx) {
        return;
    }
    pushed_ = api_.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext()
{
    if (pushed_) {
        CUcontext popped = nullptr;
        api_.cuCtxPopCurrent_v2(&popped);
    }
}

RetainedPrimaryContext::RetainedPrimaryContext(const Api &api, CUdevice device, bool may_create) :
    api_(api), device_(device)
{
    unsigned flags = 0;
    int      active = 0;
    if (device < 0) {
        return;
    }
    if (!may_create &&
        (api_.cuDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || !active)) {
        return;
    }
    if (api_.cuDevicePrimaryCtxRetain(&ctx_, device) != CUDA_SUCCESS) {
        ctx_ = nullptr;
    }
}

RetainedPrimaryContext::~RetainedPrimaryContext()
{
    if (ctx_ != nullptr) {
        api_.cuDevicePrimaryCtxRelease_v2(device_);
    }
}

}  // namespace gdr::cuda::drv
