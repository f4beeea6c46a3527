// The project's one PCI address parser (gdr_topo), through the C API the UCT glue uses.
#include "gdr_topo.h"

#include <gtest/gtest.h>

#include <string>

TEST(PciAddressCApi, ParsesWhatSysfsNames)
{
    gdr_pci_addr_t pci{};
    ASSERT_EQ(gdr_topo_parse_pci_address("0001:3b:1f.7", &pci, nullptr), UCS_OK);
    EXPECT_EQ(pci.domain, 1);
    EXPECT_EQ(pci.bus, 0x3b);
    EXPECT_EQ(pci.device, 0x1f);
    EXPECT_EQ(pci.function, 7);
}

TEST(PciAddressCApi, RejectsWhatIsNotOne)
{
    gdr_pci_addr_t pci{};
    gdr_reason_t reason;
    for (const char *bad : {"", "rxe0", "0000:3b:00", "0000:3b:00.8", "0000:3b:20.0",
                            "0000:3b:00.0x", "00000:3b:00.0"}) {
        EXPECT_EQ(gdr_topo_parse_pci_address(bad, &pci, &reason), UCS_ERR_INVALID_PARAM) << bad;
        EXPECT_EQ(std::string(reason.text), std::string("not a PCI address: \"") + bad + "\"");
    }
    EXPECT_EQ(gdr_topo_parse_pci_address(nullptr, &pci, nullptr), UCS_ERR_INVALID_PARAM);
    EXPECT_EQ(gdr_topo_parse_pci_address("0000:3b:00.0", nullptr, nullptr), UCS_ERR_INVALID_PARAM);
}
