// A TCP port on the loopback interface that nobody uses right now, for the tests' bootstrap
// roots and listeners that bind it later (a test that can pass a listening socket instead does:
// bootstrap_params::root_listener).  Drawn below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), which every connect() on the host draws from: a port the kernel
// hands out by bind(port 0) and that is closed again is free game for the next connect() of any
// process, and a parallel ctest took one between the pick and the root's bind (seen in CI:
// "Address already in use").  Below the range only another test's explicit bind can collide.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>

namespace gdr_test {

inline uint16_t free_loopback_port()
{
    int ephemeral_low = 32768;  // the kernel's default
    std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
    const int low  = 10000;
    const int high = ephemeral_low > low + 1000 ? ephemeral_low - 1 : 65535;
    std::mt19937 draw(std::random_device{}());
    std::uniform_int_distribution<int> port_in(low, high);
    for (int attempt = 0; attempt < 200; ++attempt) {
        const auto port = uint16_t(port_in(draw));
        int fd          = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family      = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port        = htons(port);
        const bool free = ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0;
        ::close(fd);
        if (free)
            return port;
    }
    return 0;  // binding port 0 later fails the test loudly
}

}  // namespace gdr_test
