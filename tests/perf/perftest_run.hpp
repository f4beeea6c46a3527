// Runs the real gdr_perftest binary with a bounded wall time and captures its output.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace perftest_test {

struct outcome {
    int status     = -1;  // exit status, or 128 + signal
    bool timed_out = false;
    std::string out, err;
    double seconds = 0;
    std::string describe() const
    {
        return "exit " + std::to_string(status) + (timed_out ? " (TIMED OUT)" : "") +
               "\n--- stdout:\n" + out + "--- stderr:\n" + err;
    }
};

inline std::string slurp(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

/// A scratch directory, removed at the end of the test.
class scratch {
public:
    scratch()
    {
        char tmpl[] = "/tmp/perftest_test.XXXXXX";
        dir_        = ::mkdtemp(tmpl);
    }
    ~scratch() { std::system(("rm -rf '" + dir_ + "'").c_str()); }
    std::string path(const std::string &name) const { return dir_ + "/" + name; }

private:
    std::string dir_;
};

/// Runs GDR_PERFTEST_BIN with @p args and the environment of the test plus @p env (a value of ""
/// unsets the variable); kills the whole process group after @p limit.
inline outcome run_tool(const std::vector<std::string> &args,
                        const std::map<std::string, std::string> &env = {},
                        std::chrono::seconds limit                    = std::chrono::seconds(60))
{
    scratch tmp;
    const std::string out_path = tmp.path("stdout"), err_path = tmp.path("stderr");
    std::fflush(nullptr);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid        = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        if (!std::freopen(out_path.c_str(), "w", stdout) ||
            !std::freopen(err_path.c_str(), "w", stderr))
            ::_exit(126);
        for (const auto &[key, value] : env) {
            if (value.empty())
                ::unsetenv(key.c_str());
            else
                ::setenv(key.c_str(), value.c_str(), 1);
        }
        std::vector<char *> argv{const_cast<char *>(GDR_PERFTEST_BIN)};
        for (const auto &a : args)
            argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(GDR_PERFTEST_BIN, argv.data());
        ::_exit(127);
    }
    outcome result;
    int status = 0;
    while (true) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid)
            break;
        if (std::chrono::steady_clock::now() - start > limit) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            result.timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out    = slurp(out_path);
    result.err    = slurp(err_path);
    return result;
}

/// The data rows of the table: whitespace-split lines that start with a number.
inline std::vector<std::vector<std::string>> table_rows(const std::string &out)
{
    std::vector<std::vector<std::string>> rows;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::vector<std::string> row;
        std::string w;
        while (words >> w)
            row.push_back(w);
        if (!row.empty() && std::isdigit(static_cast<unsigned char>(row[0][0])))
            rows.push_back(row);
    }
    return rows;
}

inline nlohmann::json load_json(const std::string &path)
{
    std::ifstream in(path);
    return nlohmann::json::parse(in);  // throws (fails the test) on a malformed file
}

}  // namespace perftest_test
