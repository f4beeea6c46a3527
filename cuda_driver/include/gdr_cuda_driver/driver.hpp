/**
 * @file gdr_cuda_driver/driver.hpp
 * @brief libcuda.so.1 loaded with dlopen: the one CUDA driver loader of ucx-gdr (the transport's
 *        gdr_cuda library, ucp_cpp's collectives, gdr_perftest and gdr-doctor all use it).
 *
 * Nothing here links CUDA or needs a toolkit.  Loading never prints and never throws on a
 * missing or unusable driver: what went wrong is one line in driver::reason(), for the caller to
 * report the way it reports things.
 */
#pragma once

#include <gdr_cuda_driver/api.hpp>

#include <dlfcn.h>

#include <string>

namespace gdr::cuda_driver {

/**
 * @brief A loaded CUDA driver: its entry points, whether it can be used, and why not.
 *
 * Threading: instance() loads once (a function-local static); a driver object is immutable after
 * construction, so any thread may use it.
 * Lifetime: instance() is never destroyed and never dlclose()s libcuda (the driver does not
 * support being unloaded while contexts exist, and others in the process may share it); a driver
 * constructed by hand (tests) dlclose()s its library when destroyed.
 */
class driver {
public:
    /**
     * @brief Loads @p soname, resolves every entry point and calls cuInit(0).
     * @param soname  "libcuda.so.1" in production; any library in tests.
     */
    explicit driver(const char *soname)
    {
        // RTLD_LOCAL: lookups go through dlsym; never inject libcuda's symbols into the global
        // namespace of an application that did not ask for CUDA.
        handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr) {
            const char *err = dlerror();
            reason_         = std::string("cannot load ") + soname + " (" + (err ? err : "?") + ")";
            return;
        }
        for (const entry_point &entry : entry_points) {
            void *symbol = dlsym(handle_, entry.symbol);
            if (symbol == nullptr && !entry.optional) {
                reason_ = std::string(soname) + " lacks " + entry.symbol +
                          " (driver too old for this build)";
                return;
            }
            *reinterpret_cast<void **>(reinterpret_cast<char *>(&api_) + entry.offset) = symbol;
        }

        api_.cuDriverGetVersion(&version_);
        CUresult result = api_.cuInit(0);
        if (result != CUDA_SUCCESS) {
            // CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY (the toolkit's stub), a driver and
            // kernel module mismatch...: all mean "no usable GPU".
            reason_ = "cuInit failed: " + error_text(result);
            return;
        }
        initialized_ = true;
        result       = api_.cuDeviceGetCount(&device_count_);
        if (result != CUDA_SUCCESS || device_count_ <= 0) {
            reason_ = "no CUDA device (cuDeviceGetCount: " +
                      (result == CUDA_SUCCESS ? std::string("0") : error_text(result)) + ")";
            device_count_ = 0;
        }
    }

    ~driver()
    {
        if (handle_ != nullptr) {
            dlclose(handle_);
        }
    }

    driver(const driver &)            = delete;
    driver &operator=(const driver &) = delete;

    /**
     * @brief The process-wide driver from libcuda.so.1, loaded on first use.
     * @return the same object on every call, from any thread.
     */
    [[nodiscard]] static const driver &instance()
    {
        // Intentionally leaked: see the class comment.
        static const driver *const loaded = new driver("libcuda.so.1");
        return *loaded;
    }

    /** @return true when the library loaded, every mandatory entry point resolved and cuInit(0)
     *          succeeded (there may still be no device). */
    [[nodiscard]] bool initialized() const noexcept { return initialized_; }
    /** @return true when initialized() and at least one device is visible. */
    [[nodiscard]] bool usable() const noexcept { return initialized_ && device_count_ > 0; }
    /** @return why not usable(): one line without a trailing newline; empty when usable. */
    [[nodiscard]] const std::string &reason() const noexcept { return reason_; }
    /** @return the entry points; call only when initialized() (members are null otherwise). */
    [[nodiscard]] const driver_api &api() const noexcept { return api_; }
    /** @return the number of visible devices, 0 unless usable(). */
    [[nodiscard]] int device_count() const noexcept { return device_count_; }
    /** @return cuDriverGetVersion (13000 = 13.0); 0 when the library did not load. */
    [[nodiscard]] int version() const noexcept { return version_; }

    /**
     * @brief A driver result in words.
     * @return "CUDA_ERROR_NAME (description)", or "CUresult <n>" for a code the driver does not
     *         know (or when the library did not load).
     */
    [[nodiscard]] std::string error_text(CUresult result) const
    {
        const char *name = nullptr;
        const char *text = nullptr;
        if (api_.cuGetErrorName != nullptr) {
            api_.cuGetErrorName(result, &name);
        }
        if (api_.cuGetErrorString != nullptr) {
            api_.cuGetErrorString(result, &text);
        }
        std::string out = name != nullptr ? name : "CUresult " + std::to_string(result);
        if (text != nullptr) {
            out += std::string(" (") + text + ")";
        }
        return out;
    }

    /** @return "<call> failed: " + error_text(result), the line a failed call is reported by. */
    [[nodiscard]] std::string failure(const char *call, CUresult result) const
    {
        return std::string(call) + " failed: " + error_text(result);
    }

private:
    void *handle_ = nullptr;
    driver_api api_{};
    bool initialized_ = false;
    int device_count_ = 0;
    int version_      = 0;
    std::string reason_;
};

}  // namespace gdr::cuda_driver
