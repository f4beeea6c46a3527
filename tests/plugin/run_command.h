// Run a shell command, capture stdout+stderr and the exit status.
#pragma once
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

struct CommandResult {
    std::string output;
    int status = -1;
};

inline CommandResult run_command(const std::string &cmd)
{
    CommandResult r;
    FILE *p = popen((cmd + " 2>&1").c_str(), "r");
    if (p == nullptr) {
        return r;
    }
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) {
        r.output.append(buf.data(), n);
    }
    int st   = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

inline std::string with_plugin(const char *plugin, const std::string &cmd)
{
    // env after timeout: only the command under test loads the plugin. tests/sanitize/preload
    // puts the sanitizer runtimes first when the plugin is from ./configure --sanitize.
    return std::string("timeout 60 env LD_PRELOAD=$(" GDR_PRELOAD_TOOL " ") + plugin + ") " + cmd;
}
