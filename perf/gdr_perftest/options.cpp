// gdr_perftest: command line (nccl-tests / ucx_perftest conventions).
#include "perftest.hpp"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace gdr_perftest {

const std::vector<test_info> &all_tests()
{
    static const std::vector<test_info> tests = {
        {"tag_lat", test_family::p2p_lat, "tag send/recv ping-pong (half round trip)"},
        {"tag_bw", test_family::p2p_bw, "tag sends, rank 0 -> rank 1, -O outstanding"},
        {"put_lat", test_family::p2p_lat,
         "put ping-pong, each side polls its buffer (host memory)"},
        {"put_bw", test_family::p2p_bw, "puts rank 0 -> rank 1, timed until the flush completes"},
        {"get_bw", test_family::p2p_bw, "gets by rank 0 from rank 1"},
        {"am_lat", test_family::p2p_lat, "active-message ping-pong (half round trip)"},
        {"am_bw", test_family::p2p_bw, "active messages, rank 0 -> rank 1, -O outstanding"},
        {"allreduce", test_family::coll, "busbw factor 2(p-1)/p"},
        {"allgather", test_family::coll, "size = gathered bytes; busbw factor (p-1)/p"},
        {"bcast", test_family::coll, "busbw factor 1"},
        {"reduce", test_family::coll, "busbw factor 1"},
        {"reduce_scatter", test_family::coll, "size = input bytes per rank; busbw factor (p-1)/p"},
        {"alltoall", test_family::coll, "size = bytes per rank; busbw factor (p-1)/p"},
        {"barrier", test_family::coll, "time only"},
    };
    return tests;
}

const test_info *find_test(const std::string &name)
{
    for (const auto &t : all_tests()) {
        if (name == t.name)
            return &t;
    }
    return nullptr;
}

const char *name_of(mem_kind kind)
{
    return kind == mem_kind::cuda ? "cuda" : "host";
}

size_t parse_size(const std::string &text, const std::string &flag)
{
    if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) {
        throw usage_error(flag + ": '" + text + "' is not a size (e.g. 8, 64K, 1M, 2G)");
    }
    errno        = 0;
    char *end    = nullptr;
    double value = std::strtod(text.c_str(), &end);
    std::string suffix(end);
    if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b'))
        suffix.pop_back();
    double scale = 1;
    if (suffix == "K" || suffix == "k")
        scale = 1024.0;
    else if (suffix == "M" || suffix == "m")
        scale = 1024.0 * 1024;
    else if (suffix == "G" || suffix == "g")
        scale = 1024.0 * 1024 * 1024;
    else if (!suffix.empty())
        throw usage_error(flag + ": '" + text + "': unknown suffix (use K, M or G)");
    value *= scale;
    if (errno != 0 || !std::isfinite(value) || value < 0 || value > 1e15 ||
        value != std::floor(value)) {
        throw usage_error(flag + ": '" + text + "' is not a whole number of bytes");
    }
    return size_t(value);
}

std::string size_text(size_t bytes)
{
    const char *units[] = {"", "K", "M", "G"};
    int u               = 0;
    while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++u;
    }
    return std::to_string(bytes) + units[u];
}

namespace {

void print_help()
{
    std::printf(
        "Usage: gdr_perftest [-t TEST[,TEST...]] [-b MIN -e MAX [-f FACTOR] | -s SIZE[,SIZE...]]\n"
        "                    [-n ITERS] [-w WARMUP] [-O WINDOW] [-m host|cuda[,host|cuda]] [-c "
        "0|1]\n"
        "                    [-x TLS] [-N NRANKS] [-p PORT] [--csv FILE] [--json FILE]\n"
        "                    [--plugin PATH] [-d TYPE] [-r ROOT] [--timeout SEC] [--progress] "
        "[-q]\n"
        "                    [--bw-timing receiver|sender] [--err-mode MODE] [--wakeup MODE]\n"
        "                    [--library ucp|nccl|both]\n"
        "\n"
        "Point-to-point and collective benchmarks over ucp_cpp (see docs/gdr_perftest.md).\n"
        "Units: sizes in bytes (K/M/G suffixes = 2^10/2^20/2^30), times in us, bandwidth in\n"
        "GB/s (1 GB = 10^9 bytes), message rate in messages/s.\n"
        "\n"
        "Tests (-t, default tag_lat; p2p tests use ranks 0 and 1):\n");
    for (const auto &t : all_tests())
        std::printf("  %-15s %s\n", t.name, t.what);
    std::printf(
        "\n"
        "Options:\n"
        "  -t, --test LIST       tests to run, comma separated\n"
        "  -b, --minbytes SIZE   smallest size of the sweep (default p2p 8, collectives 8)\n"
        "  -e, --maxbytes SIZE   largest size of the sweep (default p2p 8, collectives 1M)\n"
        "  -f, --stepfactor F    multiply the size by F each step (default 2)\n"
        "  -s, --sizes LIST      explicit sizes instead of a sweep, e.g. -s 8,4K,1M\n"
        "  -n, --iters N         timed iterations per size (default p2p 1000, collectives 20)\n"
        "  -w, --warmup N        untimed iterations first (default p2p 100, collectives 5)\n"
        "  -O, --window N        outstanding operations in the bw tests (default 32)\n"
        "      --bw-timing SIDE  which rank times tag_bw and am_bw: receiver (default; rank 1,\n"
        "                        start signal to last completion) or sender (rank 0, first send\n"
        "                        until the endpoint is flushed: ucx_perftest's view)\n"
        "  -m, --memory KINDS    host or cuda, per rank: -m host,cuda = rank 0 host, rank 1 cuda\n"
        "  -c, --check 0|1       1: verify the content of every message/result (slower);\n"
        "                        0 (default): lengths of every message, content of the last\n"
        "  -x, --tls TLS         UCX_TLS for this run (default: the environment / UCX's choice)\n"
        "  -N, --nranks N        start N ranks on this host (default 2 unless launched by mpirun\n"
        "                        or with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set)\n"
        "  -p, --port PORT       bootstrap TCP port of rank 0 (default: a free port with -N;\n"
        "                        else MASTER_PORT, else 29517)\n"
        "  -d, --datatype TYPE   collectives: float (default), double, int32, int64, bfloat16\n"
        "  -r, --root R          bcast/reduce root (default 0)\n"
        "      --csv FILE        also write the results as CSV\n"
        "      --json FILE       also write the results as JSON\n"
        "      --plugin PATH     load a UCT plugin (e.g. libuct_gdr.so) before UCP starts\n"
        "      --timeout SEC     bound of every wait (default 60); a dead rank fails the run\n"
        "      --err-mode MODE   peer (detect dead peers), none (as ucx_perftest; what shared\n"
        "                        memory needs), auto (default: none for shared memory only)\n"
        "      --wakeup MODE     on: waiting ranks sleep on the worker's event fd\n"
        "                        (UCP_FEATURE_WAKEUP), off: they poll; auto (default): on when\n"
        "                        the job has more ranks than this host has CPUs\n"
        "      --library LIB     collectives of ucp_cpp::coll (ucp, default), of NCCL (nccl;\n"
        "                        -m cuda, libnccl.so.2 loaded at run time, GDR_PERFTEST_NCCL\n"
        "                        names another), or both, size by size, with their ratios\n"
        "      --progress        progress line on stderr (default: when stderr is a terminal)\n"
        "  -q, --quiet           no table on stdout (use with --csv/--json)\n"
        "  -h, --help            this text;  -V, --version\n"
        "\n"
        "Exit status: 0 passed, 1 error (a rank failed, timed out, ...), 2 usage error,\n"
        "3 verification failed (bytes counted != expected, or wrong data).\n");
}

std::vector<std::string> split(const std::string &text, char sep)
{
    std::vector<std::string> parts;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, sep))
        parts.push_back(item);
    if (!text.empty() && text.back() == sep)
        parts.push_back("");
    return parts;
}

long parse_int(const std::string &text, const std::string &flag, long lo, long hi)
{
    char *end = nullptr;
    errno     = 0;
    long v    = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
        throw usage_error(flag + ": '" + text + "' is not an integer in [" + std::to_string(lo) +
                          ", " + std::to_string(hi) + "]");
    }
    return v;
}

}  // namespace

std::optional<options> parse_options(int argc, char **argv)
{
    enum long_only {
        o_csv = 256,
        o_json,
        o_plugin,
        o_progress,
        o_timeout,
        o_err_mode,
        o_wakeup,
        o_bw_timing,
        o_library,
        o_inject
    };
    static const option longs[] = {
        {"test", required_argument, nullptr, 't'},
        {"minbytes", required_argument, nullptr, 'b'},
        {"maxbytes", required_argument, nullptr, 'e'},
        {"stepfactor", required_argument, nullptr, 'f'},
        {"sizes", required_argument, nullptr, 's'},
        {"iters", required_argument, nullptr, 'n'},
        {"warmup", required_argument, nullptr, 'w'},
        {"window", required_argument, nullptr, 'O'},
        {"memory", required_argument, nullptr, 'm'},
        {"check", required_argument, nullptr, 'c'},
        {"tls", required_argument, nullptr, 'x'},
        {"nranks", required_argument, nullptr, 'N'},
        {"port", required_argument, nullptr, 'p'},
        {"datatype", required_argument, nullptr, 'd'},
        {"root", required_argument, nullptr, 'r'},
        {"quiet", no_argument, nullptr, 'q'},
        {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},
        {"csv", required_argument, nullptr, o_csv},
        {"json", required_argument, nullptr, o_json},
        {"plugin", required_argument, nullptr, o_plugin},
        {"progress", no_argument, nullptr, o_progress},
        {"timeout", required_argument, nullptr, o_timeout},
        {"err-mode", required_argument, nullptr, o_err_mode},
        {"wakeup", required_argument, nullptr, o_wakeup},
        {"bw-timing", required_argument, nullptr, o_bw_timing},
        {"library", required_argument, nullptr, o_library},
        {"inject", required_argument, nullptr, o_inject},  // hidden: tests of the tool
        {nullptr, 0, nullptr, 0},
    };
    options opt;
    std::optional<size_t> min_bytes, max_bytes;
    double factor = 2;
    bool sweep = false, list = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":t:b:e:f:s:n:w:O:m:c:x:N:p:d:r:qhV", longs, nullptr)) !=
           -1) {
        const std::string arg  = optarg != nullptr ? optarg : "";
        const std::string flag = optopt > 0 && optopt < 256 ? std::string("-") + char(optopt)
                                                            : std::string(argv[optind - 1]);
        switch (c) {
        case 't':
            opt.tests = split(arg, ',');
            for (const auto &name : opt.tests) {
                if (find_test(name) == nullptr) {
                    std::string known;
                    for (const auto &t : all_tests())
                        known += std::string(known.empty() ? "" : ", ") + t.name;
                    throw usage_error("-t: unknown test '" + name + "' (tests: " + known + ")");
                }
            }
            break;
        case 'b':
            min_bytes = parse_size(arg, "-b");
            sweep     = true;
            break;
        case 'e':
            max_bytes = parse_size(arg, "-e");
            sweep     = true;
            break;
        case 'f': {
            char *end = nullptr;
            factor    = std::strtod(arg.c_str(), &end);
            if (arg.empty() || *end != '\0' || !(factor > 1) || factor > 1e6) {
                throw usage_error("-f: '" + arg + "' is not a factor > 1");
            }
            sweep = true;
            break;
        }
        case 's':
            for (const auto &item : split(arg, ','))
                opt.sizes.push_back(parse_size(item, "-s"));
            list = true;
            break;
        case 'n':
            opt.iterations       = size_t(parse_int(arg, "-n", 1, 1L << 30));
            opt.iterations_given = true;
            break;
        case 'w':
            opt.warmup       = size_t(parse_int(arg, "-w", 0, 1L << 30));
            opt.warmup_given = true;
            break;
        case 'O':
            opt.window = size_t(parse_int(arg, "-O", 1, 4096));
            break;
        case 'm':
            opt.memory.clear();
            for (const auto &item : split(arg, ',')) {
                if (item == "host")
                    opt.memory.push_back(mem_kind::host);
                else if (item == "cuda")
                    opt.memory.push_back(mem_kind::cuda);
                else
                    throw usage_error("-m: '" + item + "' is not a memory type (host or cuda)");
            }
            break;
        case 'c':
            opt.check = parse_int(arg, "-c", 0, 1) == 1;
            break;
        case 'x':
            if (arg.empty())
                throw usage_error("-x: empty transport list");
            opt.tls = arg;
            break;
        case 'N':
            opt.nranks = int(parse_int(arg, "-N", 1, 256));
            break;
        case 'p':
            opt.port = int(parse_int(arg, "-p", 1, 65535));
            break;
        case 'd':
            if (arg != "float" && arg != "double" && arg != "int32" && arg != "int64" &&
                arg != "bfloat16") {
                throw usage_error("-d: '" + arg +
                                  "' is not one of float, double, int32, int64, bfloat16");
            }
            opt.dtype = arg;
            break;
        case 'r':
            opt.root = int(parse_int(arg, "-r", 0, 255));
            break;
        case 'q':
            opt.quiet = true;
            break;
        case o_csv:
            opt.csv_path = arg;
            break;
        case o_json:
            opt.json_path = arg;
            break;
        case o_plugin:
            opt.plugin = arg;
            break;
        case o_progress:
            opt.progress = true;
            break;
        case o_timeout: {
            char *end     = nullptr;
            opt.timeout_s = std::strtod(arg.c_str(), &end);
            if (arg.empty() || *end != '\0' || !(opt.timeout_s > 0) || opt.timeout_s > 1e6) {
                throw usage_error("--timeout: '" + arg + "' is not a positive number of seconds");
            }
            break;
        }
        case o_err_mode:
            if (arg != "peer" && arg != "none" && arg != "auto") {
                throw usage_error("--err-mode: '" + arg + "' is not peer, none or auto");
            }
            opt.err_mode = arg;
            break;
        case o_wakeup:
            if (arg != "on" && arg != "off" && arg != "auto") {
                throw usage_error("--wakeup: '" + arg + "' is not on, off or auto");
            }
            opt.wakeup = arg;
            break;
        case o_bw_timing:
            if (arg != "receiver" && arg != "sender") {
                throw usage_error("--bw-timing: '" + arg + "' is not receiver or sender");
            }
            opt.bw_at_sender = arg == "sender";
            break;
        case o_library:
            if (arg == "ucp")
                opt.library = coll_library::ucp;
            else if (arg == "nccl")
                opt.library = coll_library::nccl;
            else if (arg == "both")
                opt.library = coll_library::both;
            else
                throw usage_error("--library: '" + arg + "' is not ucp, nccl or both");
            break;
        case o_inject:
            if (arg == "corrupt")
                opt.inject = injection::corrupt;
            else if (arg == "short")
                opt.inject = injection::short_message;
            else if (arg.rfind("kill:", 0) == 0) {
                opt.inject      = injection::kill;
                opt.inject_rank = int(parse_int(arg.substr(5), "--inject kill:", 0, 255));
            } else
                throw usage_error("--inject: corrupt, short or kill:RANK");
            break;
        case 'h':
            print_help();
            return std::nullopt;
        case 'V':
            std::printf("gdr_perftest %s\n", version);
            return std::nullopt;
        case ':':
            throw usage_error("option " + flag + " needs a value");
        default:
            throw usage_error("unknown option '" + std::string(argv[optind - 1]) + "'");
        }
    }
    if (optind < argc)
        throw usage_error("unexpected argument '" + std::string(argv[optind]) + "'");
    if (sweep && list)
        throw usage_error("-s and -b/-e/-f are alternatives: use one of them");
    if (sweep) {
        const size_t lo = min_bytes.value_or(max_bytes.value_or(8));
        const size_t hi = max_bytes.value_or(lo);
        if (lo > hi)
            throw usage_error("-b " + size_text(lo) + " is larger than -e " + size_text(hi));
        for (double s = double(lo); s <= double(hi) * (1 + 1e-12);) {
            opt.sizes.push_back(size_t(s));
            double next = std::floor(s * factor);
            s           = next > s ? next : s + 1;
            if (opt.sizes.size() > 4096)
                throw usage_error("-b/-e/-f: more than 4096 sizes");
        }
    }
    opt.sizes_given = sweep || list;
    bool any_coll = false, any_p2p = false;
    for (const auto &name : opt.tests) {
        (find_test(name)->family == test_family::coll ? any_coll : any_p2p) = true;
    }
    if (any_p2p) {
        for (size_t s : opt.sizes) {
            if (s == 0)
                throw usage_error("point-to-point tests need sizes of at least 1 byte");
        }
    }
    if (any_coll && opt.memory.size() > 1) {
        for (auto kind : opt.memory) {
            if (kind != opt.memory[0])
                throw usage_error("-m: collectives use one memory type on all ranks");
        }
    }
    if (opt.library != coll_library::ucp) {
        for (const auto &name : opt.tests) {
            if (find_test(name)->family != test_family::coll || name == "barrier") {
                throw usage_error("--library nccl/both: " + name +
                                  " is not one of NCCL's collectives (allreduce, allgather, "
                                  "reduce_scatter, alltoall, bcast, reduce)");
            }
        }
        for (auto kind : opt.memory) {
            if (kind != mem_kind::cuda)
                throw usage_error("--library nccl/both: NCCL's buffers are device memory: -m cuda");
        }
        if (opt.inject != injection::none)
            throw usage_error("--inject: ucp_cpp's collectives only (--library ucp)");
    }
    if (opt.nranks == 1 && any_p2p)
        throw usage_error("-N 1: point-to-point tests need 2 ranks");
    return opt;
}

}  // namespace gdr_perftest
