/**
 * gdr_loader.c - libuct_gdr.so: the file UCX or the application loads.
 *
 * The component itself (libuct_gdr-ucx<major>.<minor>.so, in the ucx-gdr/
 * directory next to this library) is built against the internal headers of
 * one UCX release, and refers to internal symbols that other releases do not
 * export (uct_iface_base_query_v2 exists only in 1.20+, uct_md_config_rcache_table
 * only up to 1.13, ...).  Loaded into another release it would not even get
 * to its ABI guard: the dynamic loader stops the whole process at the first
 * missing symbol.  So this small library, which uses nothing from UCX but
 * ucp_get_version() (looked up, never linked), checks the running UCX's
 * version first, and only then loads the component.  It does depend on
 * libucs.so.0 and libuct.so.0 (sonames every release keeps), so that
 * LD_PRELOAD brings UCX into the process as early as before:
 *
 *   same major.minor   dlopen(ucx-gdr/libuct_gdr-ucxM.m.so): its constructor
 *                      checks the class sizes and registers component "gdr"
 *   anything else      one line on stderr; nothing registered; UCX goes on
 *
 * Any of UCX's ways to load a plugin reaches this constructor: LD_PRELOAD,
 * linking, dlopen() before ucp_init(), and, from UCX 1.22, its own directory
 * scan (lib<framework>_<name>.so.<ext> in the module directory or in
 * UCX_PLUGIN_PATH; the ucx-gdr/ subdirectory keeps the component out of it).
 *
 * GDR_ABI_SKEW (a test build only) pretends to be built for another minor
 * release, to prove the refusal.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#ifndef GDR_ABI_SKEW
#define GDR_ABI_SKEW 0
#endif

#define GDR_BUILT_MAJOR GDR_UCX_BUILT_MAJOR
#define GDR_BUILT_MINOR (GDR_UCX_BUILT_MINOR + GDR_ABI_SKEW)
#define GDR_STR_(_x)    #_x
#define GDR_STR(_x)     GDR_STR_(_x)

typedef void (*gdr_ucp_get_version_func_t)(unsigned *, unsigned *, unsigned *);

/* Copies the directory of the object that defines @a symbol into @a dir */
static int gdr_loader_dir_of(const void *symbol, char *dir, size_t dir_len)
{
    char path[PATH_MAX];
    Dl_info info;

    if (!dladdr(symbol, &info) || (info.dli_fname == NULL)) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s", info.dli_fname);
    snprintf(dir, dir_len, "%s", dirname(path));
    return 0;
}

/* ucp_get_version() of the UCX this process runs: UCP applications have it;
 * a pure-UCT process (ucx_info, ucx_perftest -x) gets the libucp beside its
 * libuct */
static gdr_ucp_get_version_func_t gdr_loader_ucp_get_version(void)
{
    gdr_ucp_get_version_func_t func;
    char path[PATH_MAX];
    void *uct_symbol, *handle;

    func = (gdr_ucp_get_version_func_t)dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (func != NULL) {
        return func;
    }
    uct_symbol = dlsym(RTLD_DEFAULT, "uct_components_list");
    if ((uct_symbol == NULL) ||
        (gdr_loader_dir_of(uct_symbol, path, sizeof(path) - 16) != 0)) {
        return NULL;
    }
    strcat(path, "/libucp.so.0");
    handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    return (handle == NULL) ?
                   NULL :
                   (gdr_ucp_get_version_func_t)dlsym(handle, "ucp_get_version");
}

static void gdr_loader_refuse(const char *reason)
{
    /* One line, on stderr: UCX's logging is not ours to use before the check */
    fprintf(stderr, "libuct_gdr: not registering component 'gdr': %s\n",
            reason);
}

static void __attribute__((constructor)) gdr_loader_init(void)
{
    static const char impl_name[] = "ucx-gdr/libuct_gdr-ucx" GDR_STR(
            GDR_BUILT_MAJOR) "." GDR_STR(GDR_UCX_BUILT_MINOR) ".so";
    gdr_ucp_get_version_func_t get_version;
    unsigned major, minor, release;
    char reason[PATH_MAX + 128];
    char path[PATH_MAX];

    get_version = gdr_loader_ucp_get_version();
    if (get_version == NULL) {
        snprintf(reason, sizeof(reason),
                 "no UCX in this process (cannot find "
                 "ucp_get_version(); built for UCX %u.%u)",
                 GDR_BUILT_MAJOR, GDR_BUILT_MINOR);
        gdr_loader_refuse(reason);
        return;
    }

    get_version(&major, &minor, &release);
    if ((major != GDR_BUILT_MAJOR) || (minor != GDR_BUILT_MINOR)) {
        snprintf(reason, sizeof(reason),
                 "built for UCX %u.%u but running in UCX "
                 "%u.%u.%u; rebuild ucx-gdr against this UCX",
                 GDR_BUILT_MAJOR, GDR_BUILT_MINOR, major, minor, release);
        gdr_loader_refuse(reason);
        return;
    }

    if (gdr_loader_dir_of((const void *)gdr_loader_init, path,
                          sizeof(path) - sizeof(impl_name) - 1) != 0) {
        gdr_loader_refuse("cannot tell where libuct_gdr.so was loaded from");
        return;
    }
    strcat(path, "/");
    strcat(path, impl_name);
    /* RTLD_NOW: a symbol missing now is a clear error, later it is a crash */
    if (dlopen(path, RTLD_NOW | RTLD_LOCAL) == NULL) {
        snprintf(reason, sizeof(reason), "%s", dlerror());
        gdr_loader_refuse(reason);
    }
}
