/*
 * fam_compat_test.cpp - the OpenFAM 3.2 C++ API (fam/fam.h) exercised the way
 * OpenFAM programs use it: one fam object initialized in main, every method
 * and overload called from gtest cases, failures checked as Fam_Exception.
 *
 * Runs single-PE and under famrun -n N (multi-PE cases use PE_ID/PE_COUNT).
 * Names carry the PE id and a run id so runs never collide with leftovers.
 */
#include <fam/fam.h>
#include <fam/fam_exception.h>
#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

using namespace openfam;

static fam *my_fam;
static Fam_Options fam_opts;
static int pe_id;
static int pe_count = 1;
static int run_id;

/* A name unique to this run, PE and tag (OpenFAM names are at most 40). */
static std::string uniq(const char *tag) {
    char buf[64];
    snprintf(buf, sizeof buf, "cx%d_%d_%s", run_id, pe_id, tag);
    return buf;
}

/* Fam_Error of the exception stmt throws, or -1 if it throws none. */
#define FAM_ERROR_OF(stmt)                                                     \
    ([&]() -> int {                                                            \
        try {                                                                  \
            stmt;                                                              \
        } catch (Fam_Exception & e_) {                                         \
            return e_.fam_error();                                             \
        }                                                                      \
        return -1;                                                             \
    }())

/* A region and one named item in it, destroyed at the end of the test. */
class FamTest : public ::testing::Test {
  protected:
    void SetUp() override {
        rname = uniq(::testing::UnitTest::GetInstance()->current_test_info()->name());
        rname.resize(std::min<size_t>(rname.size(), 40));
        region = my_fam->fam_create_region(rname.c_str(), 1 << 20, 0777, NULL);
        item = my_fam->fam_allocate("item", 4096, 0600, region);
    }
    void TearDown() override {
        my_fam->fam_destroy_region(region);
        delete item;
        delete region;
    }
    std::string rname;
    Fam_Region_Descriptor *region = NULL;
    Fam_Descriptor *item = NULL;
};

/* ---- Errors ---- */

static_assert(FAM_NO_ERROR == 0 && FAM_ERR_NOPERM == 2 && FAM_ERR_INVALID == 4, "Fam_Error");
static_assert(FAM_ERR_NOTFOUND == 8 && FAM_ERR_ALREADYEXIST == 9 && FAM_ERR_OUTOFRANGE == 13, "Fam_Error");
static_assert(FAM_ERR_NO_SPACE == 14 && FAM_ERR_UNIMPL == 16 && FAM_ERR_NAME_TOO_LONG == 23, "Fam_Error");
static_assert(FAM_BACKUP_NOTFOUND == 29 && FAM_ERR_NOT_PWR_TWO == 31, "Fam_Error");
static_assert(sizeof(Fam_Region_Attributes) == 16 && sizeof(Fam_Global_Descriptor) == 16, "layout");

TEST(FamException, ConstructCopyAssign) {
    Fam_Exception d;
    EXPECT_EQ(d.fam_error(), FAM_ERR_UNKNOWN);
    EXPECT_STREQ(d.fam_error_msg(), "");
    Fam_Exception m("plain");
    EXPECT_STREQ(m.what(), "plain");
    Fam_Exception e(FAM_ERR_NOTFOUND, "no such thing");
    EXPECT_EQ(e.fam_error(), FAM_ERR_NOTFOUND);
    EXPECT_STREQ(e.fam_error_msg(), "no such thing");
    EXPECT_STREQ(e.what(), "no such thing");
    Fam_Exception c(e);
    EXPECT_EQ(c.fam_error(), FAM_ERR_NOTFOUND);
    d = e;
    EXPECT_STREQ(d.fam_error_msg(), "no such thing");
    try {
        throw Fam_Exception(FAM_ERR_TIMEOUT, "late");
    } catch (std::exception &se) {
        EXPECT_STREQ(se.what(), "late");
    }
}

TEST(FamException, LibraryErrorsCarryCodeAndMessage) {
    try {
        my_fam->fam_lookup_region(uniq("absent").c_str());
        FAIL() << "lookup of a missing region did not throw";
    } catch (Fam_Exception &e) {
        EXPECT_EQ(e.fam_error(), FAM_ERR_NOTFOUND);
        EXPECT_STRNE(e.fam_error_msg(), "");
    }
}

/* ---- Options ---- */

// As in OpenFAM, fam_finalize takes a NULL group name.
TEST(Init, FinalizeAcceptsNullGroup) {
    fam *f = new fam();
    f->fam_initialize("default", nullptr);
    EXPECT_NO_THROW(f->fam_finalize(nullptr));
    delete f;
}

TEST(Options, ListInOpenFamOrder) {
    static const char *want[] = {"VERSION", "DEFAULT_REGION_NAME", "CIS_SERVER", "GRPC_PORT",
                                 "LIBFABRIC_PROVIDER", "FAM_THREAD_MODEL", "CIS_INTERFACE_TYPE",
                                 "OPENFAM_MODEL", "FAM_CONTEXT_MODEL", "PE_COUNT", "PE_ID", "RUNTIME",
                                 "NUM_CONSUMER", "FAM_DEFAULT_MEMORY_TYPE", "IF_DEVICE", "LOC_BUF_ADDR",
                                 "LOC_BUF_SIZE"};
    const char **opts = my_fam->fam_list_options();
    ASSERT_NE(opts, nullptr);
    size_t n = 0;
    while (opts[n] != NULL)
        n++;
    ASSERT_EQ(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        EXPECT_STREQ(opts[i], want[i]) << "index " << i;
    free(opts);
}

TEST(Options, GetTypedValues) {
    char *version = (char *)my_fam->fam_get_option((char *)"VERSION");
    EXPECT_STREQ(version, "3.2.0");
    free(version);
    char name[] = "DEFAULT_REGION_NAME";
    char *def = (char *)my_fam->fam_get_option(name);
    EXPECT_STREQ(def, "compatDefault");
    free(def);
    char *tm = (char *)my_fam->fam_get_option("FAM_THREAD_MODEL");
    EXPECT_STREQ(tm, "FAM_THREAD_MULTIPLE");
    free(tm);
    int *count = (int *)my_fam->fam_get_option("PE_COUNT");
    int *id = (int *)my_fam->fam_get_option("PE_ID");
    EXPECT_EQ(*count, pe_count);
    EXPECT_EQ(*id, pe_id);
    free(count);
    free(id);
    uint64_t *lbs = (uint64_t *)my_fam->fam_get_option("LOC_BUF_SIZE");
    EXPECT_EQ(*lbs, 0u);
    free(lbs);
    const char **opts = my_fam->fam_list_options();
    for (size_t i = 0; opts[i] != NULL; i++) {
        const void *v = my_fam->fam_get_option(opts[i]);
        EXPECT_NE(v, nullptr) << opts[i];
        free((void *)v);
    }
    free(opts);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_get_option("NO_SUCH_OPTION")), FAM_ERR_INVALID);
}

/* ---- Regions ---- */

TEST(Region, CreateStatLookupResizePermDestroy) {
    std::string n = uniq("reg");
    Fam_Region_Attributes attr;
    attr.redundancyLevel = NONE;
    attr.memoryType = VOLATILE;
    attr.interleaveEnable = DISABLE;
    attr.permissionLevel = REGION;
    Fam_Region_Descriptor *rd = my_fam->fam_create_region(n.c_str(), 1 << 20, 0777, &attr);
    EXPECT_EQ(rd->get_desc_status(), DESC_INIT_DONE);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_create_region(n.c_str(), 1 << 20, 0777, &attr)), FAM_ERR_ALREADYEXIST);

    Fam_Stat st;
    my_fam->fam_stat(rd, &st);
    EXPECT_GE(st.size, 1u << 20);
    EXPECT_EQ(st.perm & 0777, 0777u);
    EXPECT_STREQ(st.name, n.c_str());
    EXPECT_EQ(st.uid, getuid());
    EXPECT_EQ(st.region_attributes.memoryType, VOLATILE);
    EXPECT_EQ(st.region_attributes.interleaveEnable, DISABLE);
    EXPECT_EQ(st.region_attributes.permissionLevel, REGION);

    EXPECT_EQ(rd->get_size(), st.size);
    EXPECT_EQ(rd->get_perm() & 0777, 0777u);
    EXPECT_STREQ(rd->get_name(), n.c_str());
    EXPECT_EQ(rd->get_memoryType(), VOLATILE);
    EXPECT_EQ(rd->get_interleaveEnable(), DISABLE);
    EXPECT_EQ(rd->get_permissionLevel(), REGION);
    EXPECT_EQ(rd->get_redundancyLevel(), st.region_attributes.redundancyLevel);
    if (st.num_memservers > 0) {
        EXPECT_EQ(rd->get_memserver_id(), st.memory_servers[0]);
    }
    Fam_Global_Descriptor gd = rd->get_global_descriptor();
    EXPECT_EQ(gd.offset, (uint64_t)-1);

    Fam_Region_Descriptor *look = my_fam->fam_lookup_region(n.c_str());
    EXPECT_EQ(look->get_global_descriptor().regionId, gd.regionId);

    my_fam->fam_resize_region(rd, 4 << 20);
    my_fam->fam_stat(look, &st);
    EXPECT_GE(st.size, 4u << 20);
    EXPECT_GE(rd->get_size(), 4u << 20);

    my_fam->fam_change_permissions(rd, 0700);
    my_fam->fam_stat(rd, &st);
    EXPECT_EQ(st.perm & 0777, 0700u);
    EXPECT_EQ(rd->get_perm() & 0777, 0700u);

    /* A region named only by its global descriptor resolves on first use. */
    Fam_Region_Descriptor *byGd = new Fam_Region_Descriptor(gd);
    EXPECT_EQ(byGd->get_desc_status(), DESC_UNINITIALIZED);
    Fam_Descriptor *it = my_fam->fam_allocate(4096, 0600, byGd);
    EXPECT_EQ(byGd->get_desc_status(), DESC_INIT_DONE);
    delete it;

    my_fam->fam_destroy_region(rd);
    EXPECT_EQ(rd->get_desc_status(), DESC_INVALID);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_lookup_region(n.c_str())), FAM_ERR_NOTFOUND);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_allocate(64, 0600, rd)), FAM_ERR_INVALID);
    delete byGd;
    delete look;
    delete rd;
}

TEST(Region, DeletingADescriptorReleasesOnlyTheHandle) {
    std::string n = uniq("delrd");
    Fam_Region_Descriptor *rd = my_fam->fam_create_region(n.c_str(), 8192, 0600, NULL);
    Fam_Descriptor *it = my_fam->fam_allocate(n.c_str(), 64, 0600, rd);
    uint64_t v = 77;
    my_fam->fam_put_blocking(&v, it, 0, sizeof v);
    Fam_Region_Descriptor *look = my_fam->fam_lookup_region(n.c_str());
    delete look; /* releases the native handle (fam_close_region) */
    Fam_Region_Descriptor *again = my_fam->fam_lookup_region(n.c_str());
    ASSERT_NE(again, nullptr);
    uint64_t got = 0;
    my_fam->fam_get_blocking(&got, it, 0, sizeof got);
    EXPECT_EQ(got, 77u);
    Fam_Descriptor *it2 = my_fam->fam_allocate(64, 0600, again);
    delete it2;
    delete it;
    my_fam->fam_destroy_region(again);
    delete again;
    delete rd;
}

TEST(Region, NullAttributesDefaultsAndBadNames) {
    std::string n = uniq("defattr");
    Fam_Region_Descriptor *rd = my_fam->fam_create_region(n.c_str(), 8192, 0777, NULL);
    Fam_Stat st;
    my_fam->fam_stat(rd, &st);
    EXPECT_EQ(st.region_attributes.interleaveEnable, ENABLE);
    EXPECT_EQ(st.region_attributes.permissionLevel, REGION);
    my_fam->fam_destroy_region(rd);
    delete rd;
    std::string long_name(256, 'x');
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_create_region(long_name.c_str(), 8192, 0777, NULL)), FAM_ERR_NAME_TOO_LONG);
    EXPECT_THROW(my_fam->fam_create_region(NULL, 8192, 0777, NULL), Fam_Exception);
    EXPECT_THROW(my_fam->fam_destroy_region(NULL), Fam_Exception);
}

// As in OpenFAM, whose metadata service checks modes only for callers who
// are not the owner: the owner allocates in its own 0444 region, reads its
// own item after changing it to 0333, and destroys its region after
// changing it to 0.
TEST(Region, OwnerIsBoundByNoModeBits) {
    std::string n = uniq("ownro");
    Fam_Region_Descriptor *rd = my_fam->fam_create_region(n.c_str(), 1 << 20, 0444, NULL);
    Fam_Descriptor *item = my_fam->fam_allocate("x", 64, 0600, rd);
    uint64_t v = 42, got = 0;
    my_fam->fam_put_blocking(&v, item, 0, sizeof v);
    my_fam->fam_get_blocking(&got, item, 0, sizeof got);
    EXPECT_EQ(got, 42u);

    std::string d = uniq("owndi");
    Fam_Region_Attributes attr = {};
    attr.permissionLevel = DATAITEM;
    Fam_Region_Descriptor *rdi = my_fam->fam_create_region(d.c_str(), 1 << 20, 0600, &attr);
    Fam_Descriptor *own = my_fam->fam_allocate("own", 64, 0600, rdi);
    my_fam->fam_put_blocking(&v, own, 0, sizeof v);
    my_fam->fam_change_permissions(own, 0333);
    got = 0;
    my_fam->fam_get_blocking(&got, own, 0, sizeof got);
    EXPECT_EQ(got, 42u);
    EXPECT_EQ(my_fam->fam_fetch_uint64(own, 0), 42u);

    my_fam->fam_change_permissions(rdi, 0);
    my_fam->fam_destroy_region(rdi);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_lookup_region(d.c_str())), FAM_ERR_NOTFOUND);
    my_fam->fam_destroy_region(rd);
}

TEST(Region, SettersOverrideGetters) {
    Fam_Region_Descriptor empty;
    EXPECT_EQ(empty.get_desc_status(), DESC_UNINITIALIZED);
    int token;
    empty.set_context(&token);
    EXPECT_EQ(empty.get_context(), &token);
    empty.set_size(123);
    EXPECT_EQ(empty.get_size(), 123u);
    empty.set_perm(0640);
    EXPECT_EQ(empty.get_perm(), (mode_t)0640);
    char nm[] = "named";
    empty.set_name(nm);
    EXPECT_STREQ(empty.get_name(), "named");
    empty.set_redundancyLevel(RAID1);
    empty.set_memoryType(PERSISTENT);
    empty.set_interleaveEnable(ENABLE);
    empty.set_permissionLevel(DATAITEM);
    EXPECT_EQ(empty.get_redundancyLevel(), RAID1);
    EXPECT_EQ(empty.get_memoryType(), PERSISTENT);
    EXPECT_EQ(empty.get_interleaveEnable(), ENABLE);
    EXPECT_EQ(empty.get_permissionLevel(), DATAITEM);
    empty.set_desc_status(DESC_INVALID);
    EXPECT_EQ(empty.get_desc_status(), DESC_INVALID);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_allocate(64, 0600, &empty)), FAM_ERR_INVALID);
}

/* ---- Items ---- */

TEST_F(FamTest, AllocateLookupStatGetters) {
    Fam_Descriptor *anon = my_fam->fam_allocate(8192, 0640, region);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_allocate("item", 64, 0600, region)), FAM_ERR_ALREADYEXIST);

    Fam_Stat st;
    my_fam->fam_stat(item, &st);
    EXPECT_GE(st.size, 4096u);
    EXPECT_EQ(st.perm & 0777, 0600u);
    EXPECT_STREQ(st.name, "item");
    EXPECT_EQ(st.uid, getuid());
    EXPECT_EQ(st.gid, getgid());
    Fam_Stat ast;
    my_fam->fam_stat(anon, &ast);
    ASSERT_NE(ast.name, nullptr);
    EXPECT_STREQ(ast.name, "");
    EXPECT_GE(ast.size, 8192u);

    EXPECT_EQ(item->get_desc_status(), DESC_INIT_DONE);
    EXPECT_EQ(item->get_size(), st.size);
    EXPECT_EQ(item->get_perm() & 0777, 0600u);
    EXPECT_STREQ(item->get_name(), "item");
    EXPECT_STREQ(anon->get_name(), "");
    EXPECT_EQ(item->get_uid(), (uint32_t)getuid());
    EXPECT_EQ(item->get_gid(), (uint32_t)getgid());
    EXPECT_EQ(item->get_interleave_size(), st.interleaveSize);
    EXPECT_EQ(item->get_used_memsrv_cnt(), st.num_memservers);
    if (st.num_memservers > 0) {
        EXPECT_EQ(item->get_memserver_ids()[0], st.memory_servers[0]);
        EXPECT_EQ(item->get_first_memserver_id(), st.memory_servers[0]);
    }

    Fam_Descriptor *look = my_fam->fam_lookup("item", rname.c_str());
    Fam_Global_Descriptor a = item->get_global_descriptor(), b = look->get_global_descriptor();
    EXPECT_EQ(a.regionId, b.regionId);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.regionId, region->get_global_descriptor().regionId);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_lookup("nothing", rname.c_str())), FAM_ERR_NOTFOUND);

    // As in OpenFAM, an item of a region with region-level permissions (the
    // default) takes the region's mode and cannot change its own.
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_change_permissions(item, 0644)), FAM_ERR_NOPERM);
    {
        Fam_Region_Attributes attr = {};
        attr.permissionLevel = DATAITEM;
        std::string n = rname + "_di";
        Fam_Region_Descriptor *rd = my_fam->fam_create_region(n.c_str(), 1 << 20, 0777, &attr);
        Fam_Descriptor *own = my_fam->fam_allocate("own", 64, 0600, rd);
        Fam_Descriptor *own2 = my_fam->fam_lookup("own", n.c_str());
        my_fam->fam_change_permissions(own, 0644);
        my_fam->fam_stat(own2, &st);
        EXPECT_EQ(st.perm & 0777, 0644u);
        EXPECT_EQ(own->get_perm() & 0777, 0644u);
        my_fam->fam_destroy_region(rd);
    }

    my_fam->fam_deallocate(anon);
    EXPECT_EQ(anon->get_desc_status(), DESC_INVALID);
    uint64_t v = 1;
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_put_blocking(&v, anon, 0, sizeof v)), FAM_ERR_INVALID);
    delete anon;
    delete look;
}

TEST_F(FamTest, DescriptorSettersOverrideGetters) {
    uint64_t keys[2] = {11, 22}, bases[3] = {1, 2, 3}, ids[2] = {7, 8};
    item->bind_keys(keys, 2);
    EXPECT_EQ(item->get_keys()[1], 22u);
    item->set_base_address_list(bases, 3);
    EXPECT_EQ(item->get_base_address_list()[2], 3u);
    int token;
    item->set_context(&token);
    EXPECT_EQ(item->get_context(), &token);
    item->set_used_memsrv_cnt(2);
    item->set_memserver_ids(ids);
    EXPECT_EQ(item->get_used_memsrv_cnt(), 2u);
    EXPECT_EQ(item->get_memserver_ids()[1], 8u);
    EXPECT_EQ(item->get_first_memserver_id(), 7u);
    item->set_size(99);
    item->set_perm(0400);
    char nm[] = "renamed";
    item->set_name(nm);
    item->set_interleave_size(4096);
    item->set_uid(5);
    item->set_gid(6);
    item->set_permissionLevel(DATAITEM);
    EXPECT_EQ(item->get_size(), 99u);
    EXPECT_EQ(item->get_perm(), (mode_t)0400);
    EXPECT_STREQ(item->get_name(), "renamed");
    EXPECT_EQ(item->get_interleave_size(), 4096u);
    EXPECT_EQ(item->get_uid(), 5u);
    EXPECT_EQ(item->get_gid(), 6u);
    EXPECT_EQ(item->get_permissionLevel(), DATAITEM);
    item->set_desc_status(DESC_INIT_DONE_BUT_KEY_NOT_VALID);
    EXPECT_EQ(item->get_desc_status(), DESC_INIT_DONE_BUT_KEY_NOT_VALID);
    /* The setters change only the descriptor's view, never the item. */
    Fam_Stat st;
    my_fam->fam_stat(item, &st);
    EXPECT_STREQ(st.name, "item");
    EXPECT_EQ(st.perm & 0777, 0600u);
    Fam_Descriptor empty;
    EXPECT_EQ(empty.get_keys(), nullptr);
    EXPECT_EQ(empty.get_size(), 0u);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_get_blocking(keys, &empty, 0, 8)), FAM_ERR_INVALID);
}

TEST_F(FamTest, GlobalDescriptorResolvesLazily) {
    uint64_t out = 0x1122334455667788ULL, in = 0;
    my_fam->fam_put_blocking(&out, item, 8, sizeof out);
    Fam_Global_Descriptor gd = item->get_global_descriptor();
    Fam_Descriptor *copy = new Fam_Descriptor(gd);
    EXPECT_EQ(copy->get_desc_status(), DESC_UNINITIALIZED);
    my_fam->fam_get_blocking(&in, copy, 8, sizeof in);
    EXPECT_EQ(in, out);
    EXPECT_EQ(copy->get_desc_status(), DESC_INIT_DONE);
    Fam_Descriptor *sized = new Fam_Descriptor(gd, 4096);
    EXPECT_GE(sized->get_size(), 4096u);
    EXPECT_STREQ(sized->get_name(), "item");
    delete sized;
    delete copy;

    Fam_Global_Descriptor bogus = gd;
    bogus.regionId ^= 0x3fff;
    bogus.offset += 1 << 19;
    Fam_Descriptor *bad = new Fam_Descriptor(bogus);
    EXPECT_THROW(my_fam->fam_get_blocking(&in, bad, 0, sizeof in), Fam_Exception);
    delete bad;
}

// As in OpenFAM: fam_close keeps the item but makes the descriptor unusable;
// closing it again, or closing a deallocated item's descriptor, throws.
TEST_F(FamTest, CloseKeepsItemButNotTheDescriptor) {
    uint32_t out = 77, in = 0;
    my_fam->fam_put_blocking(&out, item, 0, sizeof out);
    my_fam->fam_close(item);
    EXPECT_EQ(item->get_desc_status(), DESC_INVALID);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_get_blocking(&in, item, 0, sizeof in)), FAM_ERR_INVALID);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_close(item)), FAM_ERR_INVALID);
    Fam_Descriptor *look = my_fam->fam_lookup("item", rname.c_str());
    my_fam->fam_get_blocking(&in, look, 0, sizeof in);
    EXPECT_EQ(in, 77u);
    /* Deleting an open second descriptor leaves the first one working. */
    Fam_Descriptor *other = my_fam->fam_lookup("item", rname.c_str());
    delete other;
    in = 0;
    my_fam->fam_get_blocking(&in, look, 0, sizeof in);
    EXPECT_EQ(in, 77u);
    my_fam->fam_deallocate(look);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_close(look)), FAM_ERR_INVALID);
    delete look;
    EXPECT_THROW(my_fam->fam_close(NULL), Fam_Exception);
}

TEST_F(FamTest, ThreadsShareLazyDescriptor) {
    uint64_t zero = 0;
    my_fam->fam_put_blocking(&zero, item, 0, sizeof zero);
    Fam_Descriptor *shared = new Fam_Descriptor(item->get_global_descriptor());
    const int nthreads = 8, adds = 200;
    std::vector<std::thread> ts;
    for (int t = 0; t < nthreads; t++)
        ts.emplace_back([&]() {
            for (int i = 0; i < adds; i++)
                my_fam->fam_add(shared, 0, (uint64_t)1);
        });
    for (auto &t : ts)
        t.join();
    EXPECT_EQ(my_fam->fam_fetch_uint64(item, 0), (uint64_t)nthreads * adds);
    EXPECT_EQ(shared->get_desc_status(), DESC_INIT_DONE);
    delete shared;
}

/* ---- Data path ---- */

TEST_F(FamTest, PutGetBlockingAndNonblocking) {
    std::vector<char> out(4096), in(4096, 0);
    for (size_t i = 0; i < out.size(); i++)
        out[i] = (char)(i * 7 + pe_id);
    my_fam->fam_put_blocking(out.data(), item, 0, 2048);
    my_fam->fam_put_nonblocking(out.data() + 2048, item, 2048, 2048);
    my_fam->fam_quiet();
    my_fam->fam_get_blocking(in.data(), item, 0, 1024);
    my_fam->fam_get_nonblocking(in.data() + 1024, item, 1024, 3072);
    my_fam->fam_quiet();
    EXPECT_EQ(in, out);
    EXPECT_EQ(my_fam->fam_progress(), 0u);
    EXPECT_THROW(my_fam->fam_put_blocking(out.data(), item, 4000, 200), Fam_Exception);
    EXPECT_THROW(my_fam->fam_get_blocking(in.data(), item, 8192, 8), Fam_Exception);
    EXPECT_THROW(my_fam->fam_get_blocking(in.data(), NULL, 0, 8), Fam_Exception);
}

TEST_F(FamTest, GatherScatterAllOverloads) {
    const uint64_t n = 8, first = 1, stride = 3, es = sizeof(uint64_t);
    uint64_t src[8], got[8], all[64], idx[8] = {60, 2, 33, 47, 5, 11, 0, 19};
    for (uint64_t i = 0; i < n; i++)
        src[i] = 1000 + i;
    std::vector<uint64_t> zero(512, 0);
    my_fam->fam_put_blocking(zero.data(), item, 0, 4096);

    my_fam->fam_scatter_blocking(src, item, n, first, stride, es);
    my_fam->fam_get_blocking(all, item, 0, sizeof all);
    for (uint64_t i = 0; i < n; i++)
        EXPECT_EQ(all[first + i * stride], src[i]);
    EXPECT_EQ(all[0], 0u);
    memset(got, 0, sizeof got);
    my_fam->fam_gather_blocking(got, item, n, first, stride, es);
    EXPECT_EQ(memcmp(got, src, sizeof src), 0);

    my_fam->fam_put_blocking(zero.data(), item, 0, 4096);
    my_fam->fam_scatter_blocking(src, item, n, idx, es);
    my_fam->fam_get_blocking(all, item, 0, sizeof all);
    for (uint64_t i = 0; i < n; i++)
        EXPECT_EQ(all[idx[i]], src[i]);
    memset(got, 0, sizeof got);
    my_fam->fam_gather_blocking(got, item, n, idx, es);
    EXPECT_EQ(memcmp(got, src, sizeof src), 0);

    for (uint64_t i = 0; i < n; i++)
        src[i] = 2000 + i;
    my_fam->fam_scatter_nonblocking(src, item, n, first, stride, es);
    my_fam->fam_quiet();
    memset(got, 0, sizeof got);
    my_fam->fam_gather_nonblocking(got, item, n, first, stride, es);
    my_fam->fam_quiet();
    EXPECT_EQ(memcmp(got, src, sizeof src), 0);
    for (uint64_t i = 0; i < n; i++)
        src[i] = 3000 + i;
    my_fam->fam_scatter_nonblocking(src, item, n, idx, es);
    my_fam->fam_quiet();
    memset(got, 0, sizeof got);
    my_fam->fam_gather_nonblocking(got, item, n, idx, es);
    my_fam->fam_quiet();
    EXPECT_EQ(memcmp(got, src, sizeof src), 0);

    uint64_t far[1] = {4096};
    EXPECT_THROW(my_fam->fam_gather_blocking(got, item, 1, far, es), Fam_Exception);
    EXPECT_THROW(my_fam->fam_scatter_blocking(src, item, 8, 500, 10, es), Fam_Exception);
}

TEST_F(FamTest, MapUnmapOrUnimplemented) {
    uint64_t v = 0xabcdef, w = 0;
    my_fam->fam_put_blocking(&v, item, 0, sizeof v);
    void *p = NULL;
    try {
        p = my_fam->fam_map(item);
    } catch (Fam_Exception &e) {
        EXPECT_EQ(e.fam_error(), FAM_ERR_UNIMPL);
        return;
    }
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*(volatile uint64_t *)p, v);
    ((volatile uint64_t *)p)[1] = 42;
    my_fam->fam_get_blocking(&w, item, 8, sizeof w);
    EXPECT_EQ(w, 42u);
    my_fam->fam_unmap(p, item);
}

TEST_F(FamTest, CopyBackupRestore) {
    char msg[128];
    snprintf(msg, sizeof msg, "compat copy data from PE %d", pe_id);
    my_fam->fam_put_blocking(msg, item, 0, sizeof msg);
    Fam_Descriptor *dst = my_fam->fam_allocate("dst", 4096, 0600, region);
    void *w = my_fam->fam_copy(item, 0, dst, 256, sizeof msg);
    my_fam->fam_copy_wait(w);
    char got[128] = {0};
    my_fam->fam_get_blocking(got, dst, 256, sizeof got);
    EXPECT_STREQ(got, msg);
    EXPECT_THROW(my_fam->fam_copy(item, 4000, dst, 0, 200), Fam_Exception);

    std::string bname = uniq("bk");
    Fam_Backup_Options bopts;
    memset(&bopts, 0, sizeof bopts);
    w = my_fam->fam_backup(item, bname.c_str(), &bopts);
    my_fam->fam_backup_wait(w);
    char *list = my_fam->fam_list_backup(bname.c_str());
    ASSERT_NE(list, nullptr);
    EXPECT_NE(strstr(list, bname.c_str()), nullptr) << list;
    free(list);

    std::vector<char> zero(4096, 0);
    my_fam->fam_put_blocking(zero.data(), dst, 0, 4096);
    w = my_fam->fam_restore(bname.c_str(), dst);
    my_fam->fam_restore_wait(w);
    memset(got, 0, sizeof got);
    my_fam->fam_get_blocking(got, dst, 0, sizeof got);
    EXPECT_STREQ(got, msg);

    Fam_Descriptor *restored = NULL;
    w = my_fam->fam_restore(bname.c_str(), region, "restored", 0600, &restored);
    my_fam->fam_restore_wait(w);
    ASSERT_NE(restored, nullptr);
    memset(got, 0, sizeof got);
    my_fam->fam_get_blocking(got, restored, 0, sizeof got);
    EXPECT_STREQ(got, msg);

    w = my_fam->fam_delete_backup(bname.c_str());
    my_fam->fam_delete_backup_wait(w);
    try {
        list = my_fam->fam_list_backup(bname.c_str());
        EXPECT_EQ(strstr(list, bname.c_str()), nullptr) << list;
        free(list);
    } catch (Fam_Exception &e) {
        EXPECT_EQ(e.fam_error(), FAM_BACKUP_NOTFOUND);
    }
    EXPECT_THROW(my_fam->fam_restore(bname.c_str(), dst), Fam_Exception);
    delete restored;
    delete dst;
}

/* ---- Atomics, through a fam or a fam_context (both as fam *) ---- */

template <class T> static T fetch(fam *f, Fam_Descriptor *d, uint64_t off);
template <> int32_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_int32(d, o); }
template <> int64_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_int64(d, o); }
template <> uint32_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_uint32(d, o); }
template <> uint64_t fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_uint64(d, o); }
template <> float fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_float(d, o); }
template <> double fetch(fam *f, Fam_Descriptor *d, uint64_t o) { return f->fam_fetch_double(d, o); }

template <class T> static void arith(fam *f, Fam_Descriptor *d, uint64_t off) {
    SCOPED_TRACE(off);
    f->fam_set(d, off, (T)10);
    EXPECT_EQ(fetch<T>(f, d, off), (T)10);
    f->fam_add(d, off, (T)5);
    f->fam_subtract(d, off, (T)3);
    EXPECT_EQ(fetch<T>(f, d, off), (T)12);
    f->fam_min(d, off, (T)7);
    f->fam_min(d, off, (T)9);
    EXPECT_EQ(fetch<T>(f, d, off), (T)7);
    f->fam_max(d, off, (T)20);
    f->fam_max(d, off, (T)2);
    EXPECT_EQ(fetch<T>(f, d, off), (T)20);
    EXPECT_EQ(f->fam_fetch_add(d, off, (T)2), (T)20);
    EXPECT_EQ(f->fam_fetch_subtract(d, off, (T)4), (T)22);
    EXPECT_EQ(f->fam_fetch_min(d, off, (T)1), (T)18);
    EXPECT_EQ(f->fam_fetch_max(d, off, (T)30), (T)1);
    EXPECT_EQ(f->fam_swap(d, off, (T)40), (T)30);
    EXPECT_EQ(fetch<T>(f, d, off), (T)40);
}

template <class T> static void cas(fam *f, Fam_Descriptor *d, uint64_t off) {
    f->fam_set(d, off, (T)5);
    EXPECT_EQ(f->fam_compare_swap(d, off, (T)4, (T)9), (T)5);
    EXPECT_EQ(fetch<T>(f, d, off), (T)5);
    EXPECT_EQ(f->fam_compare_swap(d, off, (T)5, (T)9), (T)5);
    EXPECT_EQ(fetch<T>(f, d, off), (T)9);
}

template <class T> static void logic(fam *f, Fam_Descriptor *d, uint64_t off) {
    f->fam_set(d, off, (T)0xC);
    f->fam_and(d, off, (T)0xA);
    EXPECT_EQ(fetch<T>(f, d, off), (T)0x8);
    f->fam_or(d, off, (T)0x1);
    EXPECT_EQ(fetch<T>(f, d, off), (T)0x9);
    f->fam_xor(d, off, (T)0xF);
    EXPECT_EQ(fetch<T>(f, d, off), (T)0x6);
    EXPECT_EQ(f->fam_fetch_and(d, off, (T)0x4), (T)0x6);
    EXPECT_EQ(f->fam_fetch_or(d, off, (T)0x3), (T)0x4);
    EXPECT_EQ(f->fam_fetch_xor(d, off, (T)0x7), (T)0x7);
    EXPECT_EQ(fetch<T>(f, d, off), (T)0x0);
}

static void all_atomics(fam *f, Fam_Descriptor *d) {
    arith<int32_t>(f, d, 0);
    arith<int64_t>(f, d, 16);
    arith<uint32_t>(f, d, 32);
    arith<uint64_t>(f, d, 48);
    arith<float>(f, d, 64);
    arith<double>(f, d, 80);
    cas<int32_t>(f, d, 96);
    cas<int64_t>(f, d, 112);
    cas<uint32_t>(f, d, 128);
    cas<uint64_t>(f, d, 144);
    logic<uint32_t>(f, d, 160);
    logic<uint64_t>(f, d, 176);
    int128_t big = (int128_t)1 << 100, big2 = big + 12345;
    f->fam_set(d, 192, big);
    EXPECT_TRUE(f->fam_fetch_int128(d, 192) == big);
    EXPECT_TRUE(f->fam_compare_swap(d, 192, big2, big) == big);
    EXPECT_TRUE(f->fam_compare_swap(d, 192, big, big2) == big);
    EXPECT_TRUE(f->fam_fetch_int128(d, 192) == big2);
    f->fam_set(d, 208, (int32_t)-3);
    EXPECT_EQ(f->fam_fetch_int32(d, 208), -3);
    EXPECT_THROW(f->fam_set(d, 4096, (uint64_t)1), Fam_Exception);
    EXPECT_THROW(f->fam_add(d, 3, (uint32_t)1), Fam_Exception);
}

TEST_F(FamTest, AtomicsEveryOverload) { all_atomics(my_fam, item); }

/* ---- Ordering and contexts ---- */

TEST_F(FamTest, FenceQuietProgress) {
    uint64_t a = 1, b = 2, got = 0;
    my_fam->fam_put_nonblocking(&a, item, 0, sizeof a);
    my_fam->fam_fence();
    my_fam->fam_put_nonblocking(&b, item, 0, sizeof b);
    my_fam->fam_quiet();
    EXPECT_EQ(my_fam->fam_progress(), 0u);
    my_fam->fam_get_blocking(&got, item, 0, sizeof got);
    EXPECT_EQ(got, 2u);
}

TEST_F(FamTest, ContextDataPathAndHiddenControlPath) {
    fam_context *ctx = my_fam->fam_context_open();
    ASSERT_NE(ctx, nullptr);
    uint64_t out[16], in[16];
    for (int i = 0; i < 16; i++)
        out[i] = 500 + i;
    ctx->fam_put_nonblocking(out, item, 0, sizeof out);
    ctx->fam_quiet();
    EXPECT_EQ(ctx->fam_progress(), 0u);
    ctx->fam_get_blocking(in, item, 0, sizeof in);
    EXPECT_EQ(memcmp(in, out, sizeof in), 0);
    memset(in, 0, sizeof in);
    ctx->fam_get_nonblocking(in, item, 0, sizeof in);
    ctx->fam_quiet();
    EXPECT_EQ(memcmp(in, out, sizeof in), 0);
    ctx->fam_put_blocking(out, item, 1024, sizeof out);
    uint64_t idx[2] = {1, 3}, two[2] = {0, 0};
    ctx->fam_gather_blocking(two, item, 2, idx, sizeof(uint64_t));
    EXPECT_EQ(two[1], 503u);
    ctx->fam_gather_blocking(two, item, 2, 0, 2, sizeof(uint64_t));
    EXPECT_EQ(two[1], 502u);
    /* Scatters land past the first 16 words, which the copy below checks. */
    uint64_t far_idx[2] = {20, 22}, back[2] = {0, 0};
    ctx->fam_scatter_blocking(two, item, 2, far_idx, sizeof(uint64_t));
    ctx->fam_gather_nonblocking(back, item, 2, far_idx, sizeof(uint64_t));
    ctx->fam_quiet();
    EXPECT_EQ(back[1], two[1]);
    ctx->fam_scatter_blocking(two, item, 2, 24, 2, sizeof(uint64_t));
    back[1] = 0;
    ctx->fam_gather_nonblocking(back, item, 2, 24, 2, sizeof(uint64_t));
    ctx->fam_quiet();
    EXPECT_EQ(back[1], two[1]);
    two[0] = 7;
    ctx->fam_scatter_nonblocking(two, item, 2, far_idx, sizeof(uint64_t));
    ctx->fam_scatter_nonblocking(two, item, 2, 30, 1, sizeof(uint64_t));
    ctx->fam_fence();
    ctx->fam_quiet();
    ctx->fam_gather_blocking(back, item, 2, 30, 1, sizeof(uint64_t));
    EXPECT_EQ(back[0], 7u);
    Fam_Descriptor *dst = my_fam->fam_allocate("ctxdst", 4096, 0600, region);
    ctx->fam_copy_wait(ctx->fam_copy(item, 0, dst, 0, sizeof out));
    memset(in, 0, sizeof in);
    my_fam->fam_get_blocking(in, dst, 0, sizeof in);
    EXPECT_EQ(memcmp(in, out, sizeof in), 0);
    Fam_Stat st;
    ctx->fam_stat(item, &st);
    EXPECT_STREQ(st.name, "item");

    all_atomics(ctx, dst);

    Fam_Options o;
    memset(&o, 0, sizeof o);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_initialize("default", &o)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_finalize("default")), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_abort(1)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_barrier_all()), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_list_options()), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_get_option((char *)"VERSION")), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_get_option("VERSION")), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_lookup_region(rname.c_str())), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_lookup("item", rname.c_str())), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_create_region("x", 8192, 0777, NULL)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_destroy_region(region)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_resize_region(region, 1 << 21)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_allocate(64, 0600, region)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_allocate("y", 64, 0600, region)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_deallocate(item)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_close(item)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_change_permissions(item, 0600)), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_context_open()), FAM_ERR_NOPERM);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_context_close(ctx)), FAM_ERR_NOPERM);

    my_fam->fam_context_close(ctx);
    EXPECT_EQ(FAM_ERROR_OF(ctx->fam_get_blocking(in, item, 0, 8)), FAM_ERR_INVALID);
    EXPECT_EQ(FAM_ERROR_OF(my_fam->fam_context_close(ctx)), FAM_ERR_INVALID);
    delete ctx;

    /* Deleting an open context closes it. */
    fam_context *c2 = my_fam->fam_context_open();
    c2->fam_put_blocking(out, item, 0, 8);
    delete c2;
    delete dst;
}

/* ---- Several PEs ---- */

TEST(MultiPE, BarrierSharedItemAndAtomics) {
    char rn[48];
    snprintf(rn, sizeof rn, "cxmpe%d", run_id);
    Fam_Region_Descriptor *rd = NULL;
    Fam_Descriptor *it = NULL;
    uint64_t magic = 0x5eed0000u + (uint64_t)run_id;
    if (pe_id == 0) {
        rd = my_fam->fam_create_region(rn, 1 << 20, 0777, NULL);
        it = my_fam->fam_allocate("shared", 4096, 0666, rd);
        uint64_t zero = 0;
        my_fam->fam_put_blocking(&magic, it, 0, sizeof magic);
        my_fam->fam_put_blocking(&zero, it, 8, sizeof zero);
    }
    my_fam->fam_barrier_all();
    if (pe_id != 0)
        it = my_fam->fam_lookup("shared", rn);
    uint64_t got = 0;
    my_fam->fam_get_blocking(&got, it, 0, sizeof got);
    EXPECT_EQ(got, magic);
    my_fam->fam_add(it, 8, (uint64_t)1);
    my_fam->fam_quiet();
    my_fam->fam_barrier_all();
    EXPECT_EQ(my_fam->fam_fetch_uint64(it, 8), (uint64_t)pe_count);
    my_fam->fam_barrier_all();
    if (pe_id == 0) {
        my_fam->fam_destroy_region(rd);
        delete rd;
    }
    delete it;
}

/* fam_abort ends the process with the status (no launcher: exit). Checked
 * in a re-executed copy of this program with its own store, since the
 * embedded store belongs to one process at a time. */
TEST(Runtime, AbortEndsProcessWithStatus) {
    if (pe_count > 1)
        GTEST_SKIP() << "fam_abort would end every PE";
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ASSERT_GT(n, 0);
    exe[n] = '\0';
    const char *tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp ? tmp : "/tmp") + "/famabort.XXXXXX";
    ASSERT_NE(mkdtemp(&dir[0]), nullptr);
    std::string cmd = "OPENFAM_DATA_DIR='" + dir + "' OPENFAM_SHM_DIR='" + dir + "/shm' COMPAT_ABORT=7 '" +
                      exe + "' >/dev/null 2>&1";
    int st = system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 7);
    EXPECT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
}

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const char *rid = getenv("COMPAT_RUN_ID");
    run_id = rid ? atoi(rid) : (int)getppid();

    my_fam = new fam();
    memset(&fam_opts, 0, sizeof fam_opts);
    fam_opts.defaultRegionName = strdup("compatDefault");
    fam_opts.famThreadModel = strdup("FAM_THREAD_MULTIPLE");
    try {
        my_fam->fam_initialize("default", &fam_opts);
    } catch (Fam_Exception &e) {
        printf("fam initialization failed: %d: %s\n", e.fam_error(), e.fam_error_msg());
        return 1;
    }
    if (getenv("COMPAT_ABORT") != NULL) {
        my_fam->fam_abort(atoi(getenv("COMPAT_ABORT")));
        return 100;
    }
    int *v = (int *)my_fam->fam_get_option("PE_ID");
    pe_id = *v;
    free(v);
    v = (int *)my_fam->fam_get_option("PE_COUNT");
    pe_count = *v;
    free(v);

    int ret = RUN_ALL_TESTS();

    try {
        my_fam->fam_finalize("default");
    } catch (Fam_Exception &e) {
        printf("fam finalize failed: %d: %s\n", e.fam_error(), e.fam_error_msg());
        ret = 1;
    }
    delete my_fam;
    free(fam_opts.defaultRegionName);
    free(fam_opts.famThreadModel);
    return ret;
}
