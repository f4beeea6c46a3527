// gdr_perftest: this rank's CUDA driver (memory.cpp), for the files that put work on the device
// (nccl.cpp). libcuda.so.1 is dlopen'ed on first use by the project's driver layer.
#pragma once

#include <gdr_cuda_driver/driver.hpp>

namespace gdr_perftest {

/// The driver API with the device of this rank current on the first calling thread (the rank's
/// only CUDA thread); throws with the reason when CUDA cannot be used.
const gdr::cuda_driver::driver_api &cuda();

/// Throws naming @p what and the driver's error text unless @p rc is CUDA_SUCCESS.
void cuda_check(gdr::cuda_driver::CUresult rc, const char *what);

}  // namespace gdr_perftest
