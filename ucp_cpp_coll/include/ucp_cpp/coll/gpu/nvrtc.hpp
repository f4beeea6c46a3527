/**
 * @file coll/gpu/nvrtc.hpp
 * @brief NVRTC, loaded with dlopen the first time a CUDA reduction is needed, and one
 *        compilation: CUDA source to a cubin for the device (or PTX for the driver to JIT).
 *
 * Threading: the library is loaded once per process (any thread); compile() may run
 * concurrently (NVRTC programs are independent).
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ucp_cpp::coll::gpu::detail {

/// The NVRTC entry points used (nvrtcResult and nvrtcProgram as int and an opaque pointer).
struct nvrtc_api {
    using program = struct _nvrtcProgram *;
    int (*create)(program *, const char *, const char *, int, const char *const *,
                  const char *const *);
    int (*compile)(program, int, const char *const *);
    int (*log_size)(program, size_t *);
    int (*log)(program, char *);
    int (*cubin_size)(program, size_t *);  // null: this NVRTC makes PTX only
    int (*cubin)(program, char *);
    int (*ptx_size)(program, size_t *);
    int (*ptx)(program, char *);
    int (*destroy)(program *);
    int (*num_archs)(int *);  // nvrtcGetNumSupportedArchs (CUDA >= 11.2), may be null
    int (*archs)(int *);
    std::string loaded_from;
    std::string why;  ///< why create is null
};

template <class F> bool resolve(void *lib, F &fn, const char *name)
{
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

/// NVRTC from $UCP_CPP_COLL_NVRTC, else the usual sonames and the toolkit's default path.
inline const nvrtc_api &load_nvrtc()
{
    static const nvrtc_api api = [] {
        nvrtc_api a{};
        std::vector<std::string> names;
        if (const char *env = std::getenv("UCP_CPP_COLL_NVRTC"))
            names.emplace_back(env);
        for (const char *n :
             {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
              "libnvrtc.so.11.1", "libnvrtc.so.11.0", "/usr/local/cuda/lib64/libnvrtc.so",
              "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12"}) {
            names.emplace_back(n);
        }
        void *lib = nullptr;
        for (const auto &n : names) {
            lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (lib != nullptr) {
                a.loaded_from = n;
                break;
            }
        }
        if (lib == nullptr) {
            a.why = "cannot load NVRTC (tried libnvrtc.so, .so.13, .so.12, .so.11.x and "
                    "/usr/local/cuda/lib64; set UCP_CPP_COLL_NVRTC=/path/libnvrtc.so): it "
                    "compiles the reduction kernels for CUDA buffers";
            return a;
        }
        const bool ok = resolve(lib, a.create, "nvrtcCreateProgram") &&
                        resolve(lib, a.compile, "nvrtcCompileProgram") &&
                        resolve(lib, a.log_size, "nvrtcGetProgramLogSize") &&
                        resolve(lib, a.log, "nvrtcGetProgramLog") &&
                        resolve(lib, a.ptx_size, "nvrtcGetPTXSize") &&
                        resolve(lib, a.ptx, "nvrtcGetPTX") &&
                        resolve(lib, a.destroy, "nvrtcDestroyProgram");
        if (!ok) {
            a.why    = a.loaded_from + " lacks an NVRTC entry point";
            a.create = nullptr;
            return a;
        }
        if (!resolve(lib, a.cubin_size, "nvrtcGetCUBINSize") ||
            !resolve(lib, a.cubin, "nvrtcGetCUBIN")) {
            a.cubin_size = nullptr;
            a.cubin      = nullptr;
        }
        if (!resolve(lib, a.num_archs, "nvrtcGetNumSupportedArchs") ||
            !resolve(lib, a.archs, "nvrtcGetSupportedArchs")) {
            a.num_archs = nullptr;
        }
        return a;
    }();
    return api;
}

/**
 * @brief Compiles @p source for compute capability @p cc (e.g. 90): a native cubin, else PTX for
 *        this architecture, else PTX for the newest one NVRTC knows below it.
 * @param how  set to what was built, e.g. "cubin sm_90 by libnvrtc.so.13".
 * @return the image, ready for cuModuleLoadData (PTX includes its terminating NUL).
 * @throws ucx_error(UCS_ERR_UNSUPPORTED) without NVRTC or when no attempt compiles (with NVRTC's
 *         logs); ucx_error(UCS_ERR_NO_MEMORY) when NVRTC cannot create a program.
 */
inline std::shared_ptr<const std::string> compile(const char *source, const char *file_name, int cc,
                                                  std::string *how)
{
    const nvrtc_api &nv = load_nvrtc();
    if (nv.create == nullptr)
        throw ucx_error(UCS_ERR_UNSUPPORTED, "coll/gpu: " + nv.why);

    std::vector<std::pair<std::string, bool>> attempts;  // (--gpu-architecture=..., cubin?)
    if (nv.cubin != nullptr)
        attempts.emplace_back("sm_" + std::to_string(cc), true);
    attempts.emplace_back("compute_" + std::to_string(cc), false);
    if (nv.num_archs != nullptr) {
        int n = 0;
        if (nv.num_archs(&n) == 0 && n > 0) {
            std::vector<int> archs(size_t(n), 0);
            nv.archs(archs.data());
            int best = 0;
            for (int a : archs) {
                if (a <= cc && a > best)
                    best = a;
            }
            if (best != 0 && best != cc) {
                attempts.emplace_back("compute_" + std::to_string(best), false);
            }
        }
    }
    std::string errors;
    for (const auto &[arch, cubin] : attempts) {
        nvrtc_api::program prog = nullptr;
        if (nv.create(&prog, source, file_name, 0, nullptr, nullptr) != 0) {
            throw ucx_error(UCS_ERR_NO_MEMORY, "coll/gpu: nvrtcCreateProgram failed");
        }
        const std::string option = "--gpu-architecture=" + arch;
        const char *options[]    = {option.c_str(), "--std=c++14", "-default-device"};
        const int rc             = nv.compile(prog, 3, options);
        if (rc != 0) {
            size_t size = 0;
            nv.log_size(prog, &size);
            std::string log(size, '\0');
            if (size != 0)
                nv.log(prog, log.data());
            errors += "\n  " + option + ": nvrtcResult " + std::to_string(rc) + " " + log.c_str();
            nv.destroy(&prog);
            continue;
        }
        size_t size = 0;
        auto image  = std::make_shared<std::string>();
        if (cubin) {
            nv.cubin_size(prog, &size);
            image->resize(size);
            nv.cubin(prog, image->data());
        } else {
            nv.ptx_size(prog, &size);
            image->resize(size);  // includes the terminating NUL cuModuleLoadData needs
            nv.ptx(prog, image->data());
        }
        nv.destroy(&prog);
        *how = (cubin ? "cubin " : "ptx ") + arch + " by " + nv.loaded_from;
        return image;
    }
    throw ucx_error(UCS_ERR_UNSUPPORTED, "coll/gpu: NVRTC (" + nv.loaded_from +
                                             ") could not compile the reduction kernels for sm_" +
                                             std::to_string(cc) + ":" + errors);
}

}  // namespace ucp_cpp::coll::gpu::detail
