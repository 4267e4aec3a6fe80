/*
 * fam_compat_init_test.cpp - fam_initialize/fam_finalize, Fam_Options and
 * fam_pe_config.yaml as OpenFAM 3.2 programs see them. Each case runs its
 * own initialize/finalize cycle; configuration-file cases re-execute this
 * binary with OPENFAM_ROOT set (the library reads the environment when it
 * loads) and read the options it reports. Single PE.
 */
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <gtest/gtest.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

using namespace openfam;

static int run_id;

static std::string get_str(fam *f, const char *name) {
    char *v = (char *)f->fam_get_option(name);
    std::string s = v ? v : "(null)";
    free(v);
    return s;
}

/* Fam_Error thrown by stmt, or -1 if none. */
#define FAM_ERROR_OF(stmt)                                                     \
    ([&]() -> int {                                                            \
        try {                                                                  \
            stmt;                                                              \
        } catch (Fam_Exception & e_) {                                         \
            return e_.fam_error();                                             \
        }                                                                      \
        return -1;                                                             \
    }())

/* Initializes with one option field set to value and returns the Fam_Error
 * (or -1 when it succeeded; the library is finalized again then). */
static int init_with(char *Fam_Options::*field, const char *value) {
    fam *f = new fam();
    Fam_Options o;
    memset(&o, 0, sizeof o);
    o.*field = const_cast<char *>(value);
    int err = FAM_ERROR_OF(f->fam_initialize("default", &o));
    if (err == -1)
        f->fam_finalize("default");
    delete f;
    return err;
}

TEST(Initialize, NullGroupAndUninitializedFinalize) {
    fam *f = new fam();
    Fam_Options o;
    memset(&o, 0, sizeof o);
    EXPECT_EQ(FAM_ERROR_OF(f->fam_initialize(NULL, &o)), FAM_ERR_INVALID);
    EXPECT_EQ(FAM_ERROR_OF(f->fam_finalize("default")), FAM_ERR_INVALID);
    delete f;
}

TEST(Initialize, InvalidOptionValuesThrowInvalid) {
    EXPECT_EQ(init_with(&Fam_Options::famThreadModel, "FAM_THREAD_BOGUS"), FAM_ERR_INVALID);
    EXPECT_EQ(init_with(&Fam_Options::cisInterfaceType, "carrier-pigeon"), FAM_ERR_INVALID);
    EXPECT_EQ(init_with(&Fam_Options::openFamModel, "cloud"), FAM_ERR_INVALID);
    EXPECT_EQ(init_with(&Fam_Options::famContextModel, "FAM_CONTEXT_BOGUS"), FAM_ERR_INVALID);
    EXPECT_EQ(init_with(&Fam_Options::runtime, "MPI"), FAM_ERR_INVALID);
}

TEST(Initialize, OpenFamValuesAccepted) {
    const struct {
        char *Fam_Options::*field;
        const char *option;
        const char *value;
    } cases[] = {
        {&Fam_Options::runtime, "RUNTIME", "NONE"},
        {&Fam_Options::runtime, "RUNTIME", "PMIX"},
        {&Fam_Options::runtime, "RUNTIME", "PMI2"},
        {&Fam_Options::openFamModel, "OPENFAM_MODEL", "memory_server"},
        {&Fam_Options::openFamModel, "OPENFAM_MODEL", "shared_memory"},
        {&Fam_Options::famThreadModel, "FAM_THREAD_MODEL", "FAM_THREAD_SERIALIZE"},
        {&Fam_Options::famThreadModel, "FAM_THREAD_MODEL", "FAM_THREAD_MULTIPLE"},
        {&Fam_Options::famContextModel, "FAM_CONTEXT_MODEL", "FAM_CONTEXT_DEFAULT"},
        {&Fam_Options::famContextModel, "FAM_CONTEXT_MODEL", "FAM_CONTEXT_REGION"},
        {&Fam_Options::cisInterfaceType, "CIS_INTERFACE_TYPE", "rpc"},
        {&Fam_Options::cisInterfaceType, "CIS_INTERFACE_TYPE", "direct"},
    };
    for (const auto &c : cases) {
        fam *f = new fam();
        Fam_Options o;
        memset(&o, 0, sizeof o);
        o.*(c.field) = const_cast<char *>(c.value);
        try {
            f->fam_initialize("default", &o);
            EXPECT_EQ(get_str(f, c.option), c.value);
            f->fam_finalize("default");
        } catch (Fam_Exception &e) {
            ADD_FAILURE() << c.option << "=" << c.value << ": " << e.fam_error() << " " << e.fam_error_msg();
        }
        delete f;
    }
}

TEST(Initialize, DefaultsWithNullOptions) {
    fam *f = new fam();
    f->fam_initialize("default", NULL);
    EXPECT_EQ(get_str(f, "VERSION"), "3.2.0");
    EXPECT_EQ(get_str(f, "DEFAULT_REGION_NAME"), "Default");
    EXPECT_EQ(get_str(f, "FAM_CONTEXT_MODEL"), "FAM_CONTEXT_DEFAULT");
    EXPECT_EQ(get_str(f, "NUM_CONSUMER"), "1");
    std::string rt = get_str(f, "RUNTIME");
    EXPECT_TRUE(rt == "PMIX" || rt == "PMI2" || rt == "NONE") << rt;
    std::string tm = get_str(f, "FAM_THREAD_MODEL");
    EXPECT_TRUE(tm == "FAM_THREAD_SERIALIZE" || tm == "FAM_THREAD_MULTIPLE") << tm;
    std::string model = get_str(f, "OPENFAM_MODEL");
    EXPECT_TRUE(model == "memory_server" || model == "shared_memory") << model;
    std::string cis = get_str(f, "CIS_INTERFACE_TYPE");
    EXPECT_TRUE(cis == "rpc" || cis == "direct") << cis;
    int *n = (int *)f->fam_get_option("PE_COUNT");
    EXPECT_EQ(*n, 1);
    free(n);
    n = (int *)f->fam_get_option("PE_ID");
    EXPECT_EQ(*n, 0);
    free(n);
    uint64_t *sz = (uint64_t *)f->fam_get_option("LOC_BUF_SIZE");
    EXPECT_EQ(*sz, 0u);
    free(sz);
    f->fam_finalize("default");
    delete f;
}

TEST(Initialize, EveryFamOptionsFieldHonoured) {
    static char buf[4096];
    fam *f = new fam();
    Fam_Options o;
    memset(&o, 0, sizeof o);
    o.defaultRegionName = (char *)"myDefault";
    o.cisServer = (char *)"10.1.2.3";
    o.grpcPort = (char *)"9999";
    o.libfabricProvider = (char *)"verbs";
    o.famThreadModel = (char *)"FAM_THREAD_MULTIPLE";
    o.cisInterfaceType = (char *)"direct";
    o.openFamModel = (char *)"shared_memory";
    o.famContextModel = (char *)"FAM_CONTEXT_REGION";
    o.numConsumer = (char *)"4";
    o.runtime = (char *)"NONE";
    o.fam_default_memory_type = (char *)"persistent";
    o.if_device = (char *)"eth7";
    o.local_buf_addr = buf;
    o.local_buf_size = sizeof buf;
    f->fam_initialize("default", &o);
    EXPECT_EQ(get_str(f, "DEFAULT_REGION_NAME"), "myDefault");
    EXPECT_EQ(get_str(f, "CIS_SERVER"), "10.1.2.3");
    EXPECT_EQ(get_str(f, "GRPC_PORT"), "9999");
    EXPECT_EQ(get_str(f, "LIBFABRIC_PROVIDER"), "verbs");
    EXPECT_EQ(get_str(f, "FAM_THREAD_MODEL"), "FAM_THREAD_MULTIPLE");
    EXPECT_EQ(get_str(f, "CIS_INTERFACE_TYPE"), "direct");
    EXPECT_EQ(get_str(f, "OPENFAM_MODEL"), "shared_memory");
    EXPECT_EQ(get_str(f, "FAM_CONTEXT_MODEL"), "FAM_CONTEXT_REGION");
    EXPECT_EQ(get_str(f, "NUM_CONSUMER"), "4");
    EXPECT_EQ(get_str(f, "RUNTIME"), "NONE");
    EXPECT_EQ(get_str(f, "FAM_DEFAULT_MEMORY_TYPE"), "persistent");
    EXPECT_EQ(get_str(f, "IF_DEVICE"), "eth7");
    char addr[64];
    snprintf(addr, sizeof addr, "%p", (void *)buf);
    EXPECT_EQ(get_str(f, "LOC_BUF_ADDR"), addr);
    uint64_t *sz = (uint64_t *)f->fam_get_option("LOC_BUF_SIZE");
    EXPECT_EQ(*sz, sizeof buf);
    free(sz);

    /* fam_default_memory_type decides the type of regions made without
     * attributes. */
    char rn[48];
    snprintf(rn, sizeof rn, "cxinit%d_pers", run_id);
    Fam_Region_Descriptor *rd = f->fam_create_region(rn, 8192, 0777, NULL);
    Fam_Stat st;
    f->fam_stat(rd, &st);
    EXPECT_EQ(st.region_attributes.memoryType, PERSISTENT);
    f->fam_destroy_region(rd);
    delete rd;
    f->fam_finalize("default");
    delete f;
}

TEST(Initialize, SeveralFamObjectsShareTheInstance) {
    fam *a = new fam(), *b = new fam();
    a->fam_initialize("default", NULL);
    EXPECT_EQ(FAM_ERROR_OF(a->fam_initialize("default", NULL)), FAM_ERR_INVALID);
    b->fam_initialize("default", NULL);
    b->fam_finalize("default");
    delete b;
    char rn[48];
    snprintf(rn, sizeof rn, "cxinit%d_shared", run_id);
    Fam_Region_Descriptor *rd = a->fam_create_region(rn, 8192, 0777, NULL);
    a->fam_destroy_region(rd);
    delete rd;
    a->fam_finalize("default");
    delete a;
}

TEST(Initialize, DescriptorsSurviveReinitialization) {
    char rn[48];
    snprintf(rn, sizeof rn, "cxinit%d_reinit", run_id);
    Fam_Region_Attributes attr;
    memset(&attr, 0, sizeof attr);
    attr.memoryType = PERSISTENT;
    fam *f = new fam();
    f->fam_initialize("default", NULL);
    Fam_Region_Descriptor *rd = f->fam_create_region(rn, 1 << 16, 0777, &attr);
    Fam_Descriptor *it = f->fam_allocate("x", 64, 0600, rd);
    uint64_t v = 99, got = 0;
    f->fam_put_blocking(&v, it, 0, sizeof v);
    fam_context *ctx = f->fam_context_open();
    f->fam_finalize("default");

    /* Handles from the finished instance are never used again: the item
     * descriptor re-resolves from its global descriptor, the context is
     * dead, and deleting either is safe. */
    f->fam_initialize("default", NULL);
    f->fam_get_blocking(&got, it, 0, sizeof got);
    EXPECT_EQ(got, 99u);
    EXPECT_THROW(ctx->fam_quiet(), Fam_Exception);
    delete ctx;
    f->fam_destroy_region(rd);
    delete it;
    delete rd;
    f->fam_finalize("default");
    delete f;
}

/* ---- fam_pe_config.yaml, through a re-executed probe ---- */

static std::string self_exe() {
    char p[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
    if (n < 0)
        return "";
    p[n] = '\0';
    return p;
}

/* Runs this binary as a probe with OPENFAM_ROOT=root; returns NAME -> value
 * of every option, or {"INIT_FAILED" -> code}. */
static std::map<std::string, std::string> probe(const std::string &root, bool override_thread_model) {
    std::string cmd = "OPENFAM_ROOT='" + root + "' COMPAT_PROBE=" + (override_thread_model ? "2" : "1") +
                      " '" + self_exe() + "'";
    std::map<std::string, std::string> out;
    FILE *p = popen(cmd.c_str(), "r");
    if (p == NULL)
        return out;
    char line[512];
    while (fgets(line, sizeof line, p) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (eq != NULL) {
            *eq = '\0';
            out[line] = eq + 1;
        }
    }
    pclose(p);
    return out;
}

static int probe_main(int mode) {
    fam *f = new fam();
    Fam_Options o;
    memset(&o, 0, sizeof o);
    if (mode == 2)
        o.famThreadModel = (char *)"FAM_THREAD_SERIALIZE";
    try {
        f->fam_initialize("default", &o);
    } catch (Fam_Exception &e) {
        printf("INIT_FAILED=%d\n", e.fam_error());
        return 0;
    }
    const char **names = f->fam_list_options();
    for (size_t i = 0; names[i] != NULL; i++) {
        const char *n = names[i];
        const void *v = f->fam_get_option(n);
        if (strncmp(n, "PE", 2) == 0)
            printf("%s=%d\n", n, *(const int *)v);
        else if (strcmp(n, "LOC_BUF_SIZE") == 0)
            printf("%s=%llu\n", n, (unsigned long long)*(const uint64_t *)v);
        else
            printf("%s=%s\n", n, (const char *)v);
        free((void *)v);
    }
    free(names);
    f->fam_finalize("default");
    delete f;
    return 0;
}

class ConfigFile : public ::testing::Test {
  protected:
    void SetUp() override {
        const char *tmp = getenv("TMPDIR");
        root = std::string(tmp ? tmp : "/tmp") + "/famcompat.XXXXXX";
        ASSERT_NE(mkdtemp(&root[0]), nullptr);
    }
    void TearDown() override {
        std::string cmd = "rm -rf '" + root + "'";
        EXPECT_EQ(system(cmd.c_str()), 0);
    }
    void write_config(const char *text) {
        ASSERT_EQ(mkdir((root + "/config").c_str(), 0755), 0);
        FILE *f = fopen((root + "/config/fam_pe_config.yaml").c_str(), "w");
        ASSERT_NE(f, nullptr);
        fputs(text, f);
        fclose(f);
    }
    std::string root;
};

TEST_F(ConfigFile, PeConfigKeysRead) {
    write_config("# OpenFAM PE configuration\n"
                 "FamThreadModel: multiple\n"
                 "provider: verbs\n"
                 "openfam_model: shared_memory\n"
                 "runtime: NONE\n"
                 "client_interface_type: direct\n"
                 "fam_client_interface_service_address: 10.9.8.7:8795\n"
                 "if_device: ib0\n"
                 "rpc_framework_type: grpc\n"
                 "resource_release: enable\n"
                 "default_memory_type: persistent\n");
    std::map<std::string, std::string> o = probe(root, false);
    ASSERT_EQ(o.count("INIT_FAILED"), 0u) << "init failed: " << o["INIT_FAILED"];
    EXPECT_EQ(o["VERSION"], "3.2.0");
    EXPECT_EQ(o["FAM_THREAD_MODEL"], "FAM_THREAD_MULTIPLE");
    EXPECT_EQ(o["LIBFABRIC_PROVIDER"], "verbs");
    EXPECT_EQ(o["OPENFAM_MODEL"], "shared_memory");
    EXPECT_EQ(o["RUNTIME"], "NONE");
    EXPECT_EQ(o["CIS_INTERFACE_TYPE"], "direct");
    EXPECT_EQ(o["CIS_SERVER"], "10.9.8.7");
    EXPECT_EQ(o["GRPC_PORT"], "8795");
    EXPECT_EQ(o["IF_DEVICE"], "ib0");
    EXPECT_EQ(o["FAM_DEFAULT_MEMORY_TYPE"], "persistent");
}

TEST_F(ConfigFile, OptionsOverrideFile) {
    write_config("FamThreadModel: multiple\nruntime: NONE\n");
    std::map<std::string, std::string> o = probe(root, true);
    ASSERT_EQ(o.count("INIT_FAILED"), 0u) << "init failed: " << o["INIT_FAILED"];
    EXPECT_EQ(o["FAM_THREAD_MODEL"], "FAM_THREAD_SERIALIZE");
    EXPECT_EQ(o["RUNTIME"], "NONE");
}

TEST_F(ConfigFile, MissingFileUnderOpenFamRootIsInvalid) {
    std::map<std::string, std::string> o = probe(root, false);
    EXPECT_EQ(o["INIT_FAILED"], std::to_string(FAM_ERR_INVALID));
}

int main(int argc, char **argv) {
    const char *mode = getenv("COMPAT_PROBE");
    if (mode != NULL)
        return probe_main(atoi(mode));
    ::testing::InitGoogleTest(&argc, argv);
    const char *rid = getenv("COMPAT_RUN_ID");
    run_id = rid ? atoi(rid) : (int)getpid();
    return RUN_ALL_TESTS();
}
