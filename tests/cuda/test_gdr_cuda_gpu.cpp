// GPU tests of gdr_cuda against the real driver (label gpu; skipped without a CUDA device).
// Allocations go through the same dlopen'ed driver table the library uses, so the test binary
// needs no CUDA toolkit either.
#include "gdr_cuda.h"

#include <gdr_cuda_driver/driver.hpp>

#include <gtest/gtest.h>

#include <infiniband/verbs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace gdr::cuda_driver;

namespace {

const driver_api &cu()
{
    return driver::instance().api();
}

#define ASSERT_CU(call)                                                     \
    do {                                                                    \
        CUresult gdr_result_ = (call);                                      \
        ASSERT_EQ(gdr_result_, CUDA_SUCCESS)                                \
            << #call << ": " << driver::instance().error_text(gdr_result_); \
    } while (0)

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

void *ptr(CUdeviceptr p)
{
    return reinterpret_cast<void *>(p);
}

gdr_cuda_mem_info_t query(const void *addr, size_t length)
{
    gdr_cuda_mem_info_t info{};
    EXPECT_EQ(gdr_cuda_mem_query(addr, length, &info), UCS_OK);
    return info;
}

CUcontext current_context()
{
    CUcontext ctx = nullptr;
    EXPECT_EQ(cu().cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    return ctx;
}

/** Size of a dma-buf fd (the exporter sets it; lseek to the end is how importers read it). */
off_t dmabuf_size(int fd)
{
    return lseek(fd, 0, SEEK_END);
}

/** Device 0's primary context, current on the test thread. */
class Gpu : public ::testing::Test {
protected:
    void SetUp() override
    {
        gdr_reason_t reason;
        if (gdr_cuda_available(&reason) != UCS_OK) {
            GTEST_SKIP() << reason.text;
        }
        ASSERT_CU(cu().cuDeviceGet(&device_, 0));
        ASSERT_CU(cu().cuDevicePrimaryCtxRetain(&context_, device_));
        ASSERT_CU(cu().cuCtxSetCurrent(context_));
    }

    void TearDown() override
    {
        if (context_ != nullptr) {
            cu().cuCtxSetCurrent(nullptr);
            cu().cuDevicePrimaryCtxRelease_v2(device_);
        }
    }

    int attribute(int which)
    {
        int value = 0;
        EXPECT_EQ(cu().cuDeviceGetAttribute(&value, which, device_), CUDA_SUCCESS);
        return value;
    }

    CUdevice device_   = 0;
    CUcontext context_ = nullptr;
};

/** A cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess allocation. */
struct VmmAllocation {
    CUdeviceptr va                      = 0;
    size_t size                         = 0;
    size_t reserve                      = 0;
    CUmemGenericAllocationHandle handle = 0;

    CUresult map_new(CUdevice device, bool gdr_capable)
    {
        CUmemAllocationProp prop{};
        prop.type                            = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.requestedHandleTypes            = CU_MEM_HANDLE_TYPE_NONE;
        prop.location.type                   = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id                     = device;
        prop.allocFlags.gpuDirectRDMACapable = gdr_capable ? 1 : 0;
        CUresult r                           = CUDA_SUCCESS;
        if (size == 0) {
            r = cu().cuMemGetAllocationGranularity(&size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
            if (r != CUDA_SUCCESS)
                return r;
            reserve = 2 * size;  // room on both sides: the mapping is in the middle of nothing
            r       = cu().cuMemAddressReserve(&va, reserve, 0, 0, 0);
            if (r != CUDA_SUCCESS)
                return r;
        }
        if ((r = cu().cuMemCreate(&handle, size, &prop, 0)) != CUDA_SUCCESS)
            return r;
        if ((r = cu().cuMemMap(va, size, 0, handle, 0)) != CUDA_SUCCESS)
            return r;
        CUmemAccessDesc access{};
        access.location = prop.location;
        access.flags    = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        return cu().cuMemSetAccess(va, size, &access, 1);
    }

    void unmap()
    {
        if (handle != 0) {
            cu().cuMemUnmap(va, size);
            cu().cuMemRelease(handle);
            handle = 0;
        }
    }

    ~VmmAllocation()
    {
        unmap();
        if (va != 0) {
            cu().cuMemAddressFree(va, reserve);
        }
    }
};

}  // namespace

TEST_F(Gpu, DetectsCuMemAlloc)
{
    CUdeviceptr buffer = 0;
    ASSERT_CU(cu().cuMemAlloc_v2(&buffer, 3 << 20));
    gdr_cuda_mem_info_t info = query(ptr(buffer + 4097), 100);
    EXPECT_EQ(info.kind, GDR_CUDA_MEM_DEVICE);
    EXPECT_EQ(info.is_vmm, 0);
    EXPECT_EQ(info.base, ptr(buffer));
    EXPECT_EQ(info.alloc_length, size_t(3) << 20);
    EXPECT_NE(info.buffer_id, 0u);
    EXPECT_EQ(info.device_ordinal, 0);
    EXPECT_EQ(info.pci_domain, attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
    EXPECT_EQ(info.pci_bus, attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID));
    EXPECT_EQ(info.pci_device, attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
    std::printf("cuMemAlloc: gpu_direct_rdma_capable=%d buffer_id=%llu pci %04x:%02x:%02x\n",
                info.gpu_direct_rdma_capable, (unsigned long long)info.buffer_id, info.pci_domain,
                info.pci_bus, info.pci_device);
    ASSERT_CU(cu().cuMemFree_v2(buffer));
}

TEST_F(Gpu, DetectsVmmMapping)
{
    if (!attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)) {
        GTEST_SKIP() << "no VMM support on this GPU";
    }
    bool gdr_vmm = attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED) != 0;
    VmmAllocation vmm;
    ASSERT_CU(vmm.map_new(device_, gdr_vmm));
    gdr_cuda_mem_info_t info = query(ptr(vmm.va + vmm.size / 2), 8);
    EXPECT_EQ(info.kind, GDR_CUDA_MEM_DEVICE);
    EXPECT_EQ(info.is_vmm, 1);
    // The mapped allocation, not the 2x larger reservation around it.
    EXPECT_EQ(info.base, ptr(vmm.va));
    EXPECT_EQ(info.alloc_length, vmm.size);
    EXPECT_NE(info.buffer_id, 0u);
    EXPECT_EQ(info.device_ordinal, 0);
    EXPECT_EQ(info.gpu_direct_rdma_capable, gdr_vmm ? 1 : 0);

    // The reserved but unmapped half is not memory at all.
    EXPECT_EQ(query(ptr(vmm.va + vmm.size), 8).kind, GDR_CUDA_MEM_HOST);

    int fd          = -1;
    uint64_t offset = 0;
    gdr_reason_t reason;
    EXPECT_EQ(gdr_cuda_dmabuf_export(ptr(vmm.va + 100), 5000, &fd, &offset, &reason), UCS_OK)
        << reason.text;
    if (fd >= 0) {
        EXPECT_EQ(offset, 100u);
        EXPECT_GE(dmabuf_size(fd), off_t(offset + 5000));
        close(fd);
    }
    // The whole mapped allocation exports; a range running into the unmapped part must get a
    // clean answer (recorded in docs/gpu-memory.md).
    fd = -1;
    EXPECT_EQ(gdr_cuda_dmabuf_export(info.base, info.alloc_length, &fd, &offset, &reason), UCS_OK)
        << reason.text;
    if (fd >= 0)
        close(fd);
    fd                  = -1;
    ucs_status_t status = gdr_cuda_dmabuf_export(ptr(vmm.va + vmm.size - 8), 16, &fd, &offset,
                                                 &reason);
    EXPECT_TRUE(status == UCS_OK || status == UCS_ERR_UNSUPPORTED) << status;
    std::printf("VMM: export running past the mapping into the reservation: %s %s\n",
                status == UCS_OK ? "ok" : "refused", reason.text);
    if (fd >= 0)
        close(fd);
}

TEST_F(Gpu, DetectsManagedMemory)
{
    CUdeviceptr managed = 0;
    ASSERT_CU(cu().cuMemAllocManaged(&managed, 64 << 10, CU_MEM_ATTACH_GLOBAL));  // small
    gdr_cuda_mem_info_t info = query(ptr(managed + 10), 10);
    EXPECT_EQ(info.kind, GDR_CUDA_MEM_MANAGED);
    EXPECT_NE(info.buffer_id, 0u);
    EXPECT_EQ(info.is_vmm, 0);
    std::printf("managed: base=%p+%zu (asked %p+10) ordinal=%d\n", info.base, info.alloc_length,
                ptr(managed + 10), info.device_ordinal);

    int fd = -1;
    uint64_t offset;
    gdr_reason_t reason;
    EXPECT_EQ(gdr_cuda_dmabuf_export(ptr(managed), 4096, &fd, &offset, &reason),
              UCS_ERR_INVALID_ADDR);
    EXPECT_EQ(fd, -1);
    ASSERT_CU(cu().cuMemFree_v2(managed));
}

TEST_F(Gpu, DetectsPinnedHostMemory)
{
    void *pinned = nullptr;
    ASSERT_CU(cu().cuMemHostAlloc(&pinned, 64 << 10,
                                  CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    gdr_cuda_mem_info_t info = query(static_cast<char *>(pinned) + 1, 10);
    EXPECT_EQ(info.kind, GDR_CUDA_MEM_HOST_PINNED);
    EXPECT_NE(info.buffer_id, 0u);
    EXPECT_EQ(info.device_ordinal, -1);
    ASSERT_CU(cu().cuMemFreeHost(pinned));

    // cuMemHostRegister'ed pageable memory is pinned while registered, plain host after.
    void *host = std::aligned_alloc(kPage, 16 * kPage);
    ASSERT_NE(host, nullptr);
    EXPECT_EQ(query(host, kPage).kind, GDR_CUDA_MEM_HOST);
    ASSERT_CU(cu().cuMemHostRegister_v2(host, 16 * kPage, CU_MEMHOSTREGISTER_PORTABLE));
    EXPECT_EQ(query(static_cast<char *>(host) + kPage, kPage).kind, GDR_CUDA_MEM_HOST_PINNED);
    ASSERT_CU(cu().cuMemHostUnregister(host));
    EXPECT_EQ(query(host, kPage).kind, GDR_CUDA_MEM_HOST);
    std::free(host);
}

TEST_F(Gpu, DetectsPageableHostMemory)
{
    std::vector<char> heap(1 << 20);
    char stack[64];
    for (const void *addr :
         {static_cast<const void *>(heap.data()), static_cast<const void *>(stack)}) {
        gdr_cuda_mem_info_t info = query(addr, 64);
        EXPECT_EQ(info.kind, GDR_CUDA_MEM_HOST);
        EXPECT_EQ(info.base, addr);
        EXPECT_EQ(info.alloc_length, 64u);
        EXPECT_EQ(info.buffer_id, 0u);
        EXPECT_EQ(info.device_ordinal, -1);
        EXPECT_EQ(info.pci_bus, -1);
    }
    int fd = -1;
    uint64_t offset;
    gdr_reason_t reason;
    EXPECT_EQ(gdr_cuda_dmabuf_export(heap.data(), 100, &fd, &offset, &reason),
              UCS_ERR_INVALID_ADDR);
    EXPECT_NE(std::string(reason.text).find("is not CUDA device memory"), std::string::npos)
        << reason.text;
}

// Queries from a thread with no current context: right answers, and still no context after.
TEST_F(Gpu, QueriesNeitherCreateNorChangeContexts)
{
    CUdeviceptr buffer = 0;
    ASSERT_CU(cu().cuMemAlloc_v2(&buffer, 1 << 20));
    std::thread([&] {
        EXPECT_EQ(current_context(), nullptr);
        gdr_cuda_mem_info_t info = query(ptr(buffer + 5), 5);
        EXPECT_EQ(info.kind, GDR_CUDA_MEM_DEVICE);
        EXPECT_EQ(info.base, ptr(buffer));
        int fd = -1;
        uint64_t offset;
        gdr_reason_t reason;
        EXPECT_EQ(gdr_cuda_dmabuf_export(ptr(buffer + 5), 5, &fd, &offset, &reason), UCS_OK)
            << reason.text;
        if (fd >= 0)
            close(fd);
        uint64_t id = 0;
        EXPECT_EQ(gdr_cuda_buffer_id(ptr(buffer), &id), UCS_OK);
        EXPECT_EQ(current_context(), nullptr);
    }).join();
    EXPECT_EQ(current_context(), context_);
    query(ptr(buffer), 1);
    EXPECT_EQ(current_context(), context_);
    ASSERT_CU(cu().cuMemFree_v2(buffer));
}

// dma-buf export over aligned and unaligned ranges, 1 B .. 1 GiB: the fd must cover the
// page-aligned hull, and offset must locate addr inside it.
TEST_F(Gpu, DmabufExportCoversAlignedAndUnalignedRanges)
{
    if (!attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)) {
        GTEST_SKIP() << "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0";
    }
    const size_t kGiB  = size_t(1) << 30;
    const size_t total = kGiB + (4 << 20);
    CUdeviceptr base   = 0;
    ASSERT_CU(cu().cuMemAlloc_v2(&base, total));
    const size_t sizes[]   = {1,
                              2,
                              4095,
                              4096,
                              4097,
                              65537,
                              (2 << 20) - 1,
                              2 << 20,
                              (2 << 20) + 1,
                              (256 << 20) + 5,
                              kGiB - 1,
                              kGiB};
    const size_t offsets[] = {0, 1, 100, kPage - 1, kPage, kPage + 17, (2 << 20) - 3};
    int checked            = 0;
    for (size_t size : sizes) {
        for (size_t start : offsets) {
            if (start + size > total)
                continue;
            const uintptr_t addr = base + start;
            int fd               = -1;
            uint64_t offset      = 0;
            gdr_reason_t reason;
            ASSERT_EQ(gdr_cuda_dmabuf_export(ptr(addr), size, &fd, &offset, &reason), UCS_OK)
                << "start " << start << " size " << size << ": " << reason.text;
            const uintptr_t hull_start = addr & ~(kPage - 1);
            const uintptr_t hull_end   = (addr + size + kPage - 1) & ~(kPage - 1);
            off_t fd_size              = dmabuf_size(fd);
            EXPECT_EQ(offset, addr - hull_start);
            EXPECT_EQ(fd_size % off_t(kPage), 0) << fd_size;
            EXPECT_GE(fd_size, off_t(offset + size)) << "start " << start << " size " << size;
            EXPECT_EQ(fd_size, off_t(hull_end - hull_start))
                << "start " << start << " size " << size;
            close(fd);
            ++checked;
        }
    }
    std::printf("dma-buf export: %d (offset, size) cases from 1 B to 1 GiB ok\n", checked);

    // Last byte of the allocation: the hull ends at the allocation's (page-aligned) end.
    int fd = -1;
    uint64_t offset;
    gdr_reason_t reason;
    ASSERT_EQ(gdr_cuda_dmabuf_export(ptr(base + total - 1), 1, &fd, &offset, &reason), UCS_OK)
        << reason.text;
    EXPECT_EQ(offset, kPage - 1);
    EXPECT_EQ(dmabuf_size(fd), off_t(kPage));
    close(fd);

    EXPECT_EQ(gdr_cuda_dmabuf_export(ptr(base), 0, &fd, &offset, &reason), UCS_ERR_INVALID_PARAM);
    ASSERT_CU(cu().cuMemFree_v2(base));
}

// Tiny allocations share a GPU page with their neighbours: the page-aligned hull still exports.
TEST_F(Gpu, DmabufExportOfTinyAllocations)
{
    if (!attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)) {
        GTEST_SKIP() << "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0";
    }
    std::vector<CUdeviceptr> buffers(4);
    for (CUdeviceptr &b : buffers) {
        ASSERT_CU(cu().cuMemAlloc_v2(&b, 1));
    }
    for (CUdeviceptr b : buffers) {
        int fd = -1;
        uint64_t offset;
        gdr_reason_t reason;
        ASSERT_EQ(gdr_cuda_dmabuf_export(ptr(b), 1, &fd, &offset, &reason), UCS_OK) << reason.text;
        EXPECT_EQ(offset, b % kPage);
        EXPECT_EQ(dmabuf_size(fd), off_t(kPage));
        close(fd);
    }
    std::printf("1-byte cuMemAllocs at 0x%llx 0x%llx 0x%llx 0x%llx\n", buffers[0], buffers[1],
                buffers[2], buffers[3]);

    // A range spanning two neighbouring allocations (what a merging registration cache would
    // ask for): the answer must be clean, either way; the docs record which one it is.
    std::sort(buffers.begin(), buffers.end());
    int fd = -1;
    uint64_t offset;
    gdr_reason_t reason;
    ucs_status_t status = gdr_cuda_dmabuf_export(ptr(buffers[0]), buffers[1] - buffers[0] + 1, &fd,
                                                 &offset, &reason);
    EXPECT_TRUE(status == UCS_OK || status == UCS_ERR_UNSUPPORTED) << status;
    std::printf("export spanning two cuMemAllocs: %s %s\n", status == UCS_OK ? "ok" : "refused",
                reason.text);
    if (fd >= 0)
        close(fd);
    for (CUdeviceptr b : buffers) {
        ASSERT_CU(cu().cuMemFree_v2(b));
    }
}

TEST_F(Gpu, ProbeWithoutHcaSaysNoVerbsDeviceAndWhatWorks)
{
    int num_devices      = 0;
    ibv_device **devices = ibv_get_device_list(&num_devices);
    if (devices != nullptr)
        ibv_free_device_list(devices);
    if (num_devices > 0) {
        GTEST_SKIP() << "an RDMA device is present; this test covers the no-HCA verdict";
    }
    gdr_cuda_config_t config{GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_TRY};
    gdr_cuda_probe_result_t result;
    ASSERT_EQ(gdr_cuda_probe(nullptr, &config, 0, &result), UCS_OK) << result.reason.text;
    std::printf("probe verdict: registrable=%d methods=%u reason: %s\n", result.cuda_registrable,
                result.methods, result.reason.text);
    const std::string reason = result.reason.text;
    EXPECT_EQ(result.cuda_registrable, 0);
    EXPECT_EQ(result.methods, 0u);
    EXPECT_EQ(reason.rfind("no verbs device (no protection domain to register with); GPU0 ", 0), 0u)
        << reason;
    if (attribute(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)) {
        // The fixture's primary context is active: the probe really allocated and exported.
        EXPECT_NE(reason.find("dma-buf: DMA_BUF_SUPPORTED=1, export of a 2 MiB cuMemAlloc ok, "
                              "not registered (no pd)"),
                  std::string::npos)
            << reason;
    }
    struct stat st;
    bool peermem = stat("/sys/module/nvidia_peermem/version", &st) == 0 ||
                   stat("/sys/module/nv_peer_mem/version", &st) == 0 ||
                   stat("/sys/kernel/mm/memory_peers/nv_mem/version", &st) == 0;
    if (!attribute(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)) {
        EXPECT_NE(reason.find("peermem: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED=0"),
                  std::string::npos);
    } else if (!peermem) {
        EXPECT_NE(reason.find("peermem: neither nvidia_peermem nor nv_peer_mem is loaded"),
                  std::string::npos)
            << reason;
    }

    config = {GDR_CUDA_POLICY_YES, GDR_CUDA_POLICY_TRY};
    EXPECT_EQ(gdr_cuda_probe(nullptr, &config, 0, &result), UCS_ERR_UNSUPPORTED);
    EXPECT_EQ(std::string(result.reason.text)
                  .rfind("UCX_GDR_GPU_DIRECT_RDMA=yes but GPU memory "
                         "registration is not available: no verbs device",
                         0),
              0u)
        << result.reason.text;
    config = {GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_YES};
    EXPECT_EQ(gdr_cuda_probe(nullptr, &config, 0, &result), UCS_ERR_UNSUPPORTED);
    config = {GDR_CUDA_POLICY_NO, GDR_CUDA_POLICY_TRY};
    EXPECT_EQ(gdr_cuda_probe(nullptr, &config, 0, &result), UCS_OK);
    EXPECT_STREQ(result.reason.text,
                 "CUDA memory registration disabled by UCX_GDR_GPU_DIRECT_RDMA=no");
}

// Without an active context and without permission to create one, the probe must not create one.
TEST_F(Gpu, ProbeCreatesNoContext)
{
    std::thread([&] {
        gdr_cuda_config_t config{GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_TRY};
        gdr_cuda_probe_result_t result;
        EXPECT_EQ(gdr_cuda_probe(nullptr, &config, 0, &result), UCS_OK);
        EXPECT_EQ(current_context(), nullptr);
    }).join();
    EXPECT_EQ(current_context(), context_);
}

// ctest runs each test in its own process: here no context exists yet.  Without permission the
// probe must not create one (and says what it could not exercise); with it, it really exports.
TEST(GpuNoContext, ProbeCreatesAContextOnlyWhenAllowed)
{
    gdr_reason_t reason;
    if (gdr_cuda_available(&reason) != UCS_OK) {
        GTEST_SKIP() << reason.text;
    }
    CUdevice device = 0;
    ASSERT_EQ(cu().cuDeviceGet(&device, 0), CUDA_SUCCESS);
    unsigned flags = 0;
    int active     = 0;
    ASSERT_EQ(cu().cuDevicePrimaryCtxGetState(device, &flags, &active), CUDA_SUCCESS);
    if (active) {
        GTEST_SKIP() << "GPU0's primary context is already active in this process";
    }
    gdr_cuda_config_t config{GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_TRY};
    gdr_cuda_probe_result_t result;
    ASSERT_EQ(gdr_cuda_probe(nullptr, &config, 0, &result), UCS_OK);
    EXPECT_NE(
        std::string(result.reason.text).find("(not exercised: no active CUDA context on this GPU)"),
        std::string::npos)
        << result.reason.text;
    ASSERT_EQ(cu().cuDevicePrimaryCtxGetState(device, &flags, &active), CUDA_SUCCESS);
    EXPECT_EQ(active, 0) << "the probe created a context";
    EXPECT_EQ(current_context(), nullptr);

    ASSERT_EQ(gdr_cuda_probe(nullptr, &config, GDR_CUDA_PROBE_MAY_CREATE_CONTEXT, &result), UCS_OK);
    EXPECT_NE(std::string(result.reason.text).find("export of a 2 MiB cuMemAlloc ok"),
              std::string::npos)
        << result.reason.text;
    EXPECT_EQ(current_context(), nullptr);
    ASSERT_EQ(cu().cuDevicePrimaryCtxGetState(device, &flags, &active), CUDA_SUCCESS);
    std::printf("probe with MAY_CREATE_CONTEXT: primary context active afterwards: %d\n", active);
}

TEST_F(Gpu, RegistrationArgumentsAreChecked)
{
    CUdeviceptr buffer = 0;
    ASSERT_CU(cu().cuMemAlloc_v2(&buffer, 1 << 20));
    gdr_cuda_config_t config{GDR_CUDA_POLICY_TRY, GDR_CUDA_POLICY_TRY};
    gdr_cuda_reg_result_t result;
    gdr_reason_t reason;
    EXPECT_EQ(gdr_cuda_reg_mr(nullptr, ptr(buffer), 4096, 0, &config, 0, &result, &reason),
              UCS_ERR_INVALID_PARAM);
    EXPECT_STREQ(reason.text, "no protection domain");
    std::vector<char> host(4096);
    EXPECT_EQ(gdr_cuda_reg_mr(reinterpret_cast<ibv_pd *>(0x1), host.data(), host.size(), 0, &config,
                              0, &result, &reason),
              UCS_ERR_INVALID_ADDR);
    EXPECT_NE(std::string(reason.text).find("is not CUDA device memory"), std::string::npos);
    ASSERT_CU(cu().cuMemFree_v2(buffer));
}

// What the md's registration cache relies on: a freed allocation, or a new allocation at the same
// address, never matches a registration made for the old buffer id.
TEST_F(Gpu, BufferIdChangesOnFreeAndReallocationAtTheSameAddress)
{
    const size_t size = 8 << 20;
    CUdeviceptr first = 0;
    ASSERT_CU(cu().cuMemAlloc_v2(&first, size));
    uint64_t first_id = 0;
    ASSERT_EQ(gdr_cuda_buffer_id(ptr(first + 123), &first_id), UCS_OK);
    EXPECT_EQ(query(ptr(first), 1).buffer_id, first_id);
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(first), first_id), 0);  // cache hit stays valid
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(first + size - 1), first_id), 0);
    ASSERT_CU(cu().cuMemFree_v2(first));
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(first), first_id), 1);  // freed
    uint64_t id = 7;
    EXPECT_EQ(gdr_cuda_buffer_id(ptr(first), &id), UCS_ERR_INVALID_ADDR);

    CUdeviceptr again = 0;
    ASSERT_CU(cu().cuMemAlloc_v2(&again, size));
    if (again != first) {
        cu().cuMemFree_v2(again);
        GTEST_SKIP() << "the driver did not reuse the address";
    }
    uint64_t again_id = 0;
    ASSERT_EQ(gdr_cuda_buffer_id(ptr(again), &again_id), UCS_OK);
    EXPECT_NE(again_id, first_id);
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(again), first_id), 1);  // same address, new buffer
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(again), again_id), 0);
    ASSERT_CU(cu().cuMemFree_v2(again));
}

// The same for VMM: unmapping and mapping new physical memory at the same virtual address
// (what PyTorch's expandable segments do) must change the id.
TEST_F(Gpu, BufferIdChangesOnVmmRemapAtTheSameAddress)
{
    if (!attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)) {
        GTEST_SKIP() << "no VMM support on this GPU";
    }
    VmmAllocation vmm;
    ASSERT_CU(vmm.map_new(device_, false));
    uint64_t first_id = 0;
    ASSERT_EQ(gdr_cuda_buffer_id(ptr(vmm.va), &first_id), UCS_OK);
    vmm.unmap();
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(vmm.va), first_id), 1);
    ASSERT_CU(vmm.map_new(device_, false));
    uint64_t second_id = 0;
    ASSERT_EQ(gdr_cuda_buffer_id(ptr(vmm.va), &second_id), UCS_OK);
    EXPECT_NE(second_id, first_id);
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(vmm.va), first_id), 1);
    EXPECT_EQ(gdr_cuda_region_is_stale(ptr(vmm.va), second_id), 0);
}
