/*
 * fam/fam.h - OpenFAM 3.2 (master) source-compatible API over libopenfam.
 *
 * Programs written for OpenFAM 3.2 compile unchanged against this header and
 * link with -lopenfam:
 *
 *     #include <fam/fam.h>
 *     using namespace openfam;
 *     fam *f = new fam();
 *     f->fam_initialize("default", &opts);
 *     Fam_Region_Descriptor *r = f->fam_create_region("r", 1 << 20, 0777, NULL);
 *     ...
 *     f->fam_finalize("default");
 *     delete f;
 *
 * In C the header yields only OpenFAM's C types (enums and structs, with
 * OpenFAM's unprefixed names); the C functions are in fam/fam_c.h. In C++ the
 * types live in namespace openfam, followed by the classes, all header-only
 * inline wrappers over the native functions of openfam.h.
 *
 * Errors: every method that can fail throws openfam::Fam_Exception whose
 * fam_error() is OpenFAM's Fam_Error number (equal to the native FAM_E*
 * code) and whose message is the native fam_errmsg() text.
 *
 * Instances: libopenfam has one process-wide instance. Every openfam::fam
 * object maps onto it: the first fam_initialize starts it (with that call's
 * options), later ones on other fam objects only count a reference, and the
 * fam_finalize that drops the last reference stops it.
 *
 * Threads: every method may be called from any thread once fam_initialize
 * has returned, as with FAM_THREAD_MULTIPLE. Descriptors may be shared
 * between threads; their lazy resolution is internally locked.
 */
#ifndef OPENFAM_COMPAT_FAM_H
#define OPENFAM_COMPAT_FAM_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "../openfam.h"
#include "fam_exception.h"

namespace openfam {

#define FAM_SUCCESS 0

#ifdef __SIZEOF_INT128__
/* Value type of the 128-bit atomics; the same type as openfam.h's fam_int128_t. */
__extension__ typedef __int128 int128_t;
#else
typedef long long int128_t;
#endif

extern "C" {
#endif /* __cplusplus */

/* Interleaving of a region's data items over its memory servers. */
typedef enum { INTERLEAVE_DEFAULT = 0, ENABLE, DISABLE } Fam_Interleave_Enable;

/* Volatile (tmpfs) or persistent (disk) backing of a region. */
typedef enum { MEMORY_TYPE_DEFAULT = 0, VOLATILE, PERSISTENT } Fam_Memory_Type;

/* Redundancy level of a region (recorded; see MIGRATING.md). */
typedef enum {
    REDUNDANCY_LEVEL_DEFAULT = 0,
    NONE,
    RAID1,
    RAID5
} Fam_Redundancy_Level;

/* Whether item permissions come from the region or from each item. */
typedef enum {
    PERMISSION_LEVEL_DEFAULT = 0,
    REGION,
    DATAITEM
} Fam_Permission_Level;

/* Region attributes, OpenFAM 3.2 master layout (16 bytes). */
typedef struct {
    Fam_Redundancy_Level redundancyLevel;
    Fam_Memory_Type memoryType;
    Fam_Interleave_Enable interleaveEnable;
    Fam_Permission_Level permissionLevel;
} Fam_Region_Attributes;

/* Values of Fam_Descriptor::get_desc_status(). */
typedef enum {
    DESC_INVALID,
    DESC_INIT_DONE,
    DESC_INIT_DONE_BUT_KEY_NOT_VALID,
    DESC_UNINITIALIZED
} Fam_Descriptor_Status;

/* Names a region (offset == (uint64_t)-1) or a data item anywhere in the
 * system; valid in any process and shareable between PEs. */
typedef struct {
    uint64_t regionId;
    uint64_t offset;
} Fam_Global_Descriptor;

/* Filled by fam_stat. name points into library-owned storage, valid until
 * the descriptor's handle is released; "" for unnamed items, never NULL. */
typedef struct {
    uint64_t size;
    mode_t perm;
    char *name;
    uint32_t uid;
    uint32_t gid;
    Fam_Region_Attributes region_attributes;
    uint64_t num_memservers;
    uint64_t interleaveSize;
    uint64_t memory_servers[256];
} Fam_Stat;

/* Reserved; pass NULL or a zeroed struct. */
typedef struct {
    uint32_t backup_option_reserved;
} Fam_Backup_Options;

/* Initialization options. A NULL field (or a NULL Fam_Options pointer) means
 * "from $OPENFAM_ROOT/config/fam_pe_config.yaml, else the default". */
typedef struct {
    char *defaultRegionName;
    char *cisServer;
    char *grpcPort;
    char *libfabricProvider;
    char *famThreadModel;
    char *cisInterfaceType;
    char *openFamModel;
    char *famContextModel;
    char *numConsumer;
    char *runtime;
    char *fam_default_memory_type;
    char *if_device;
    void *local_buf_addr;
    uint64_t local_buf_size;
} Fam_Options;

#ifdef __cplusplus
} /* extern "C" */

/* The compat types are the native types under OpenFAM's names: same size and
 * field offsets, so pointers are passed straight through. */
#define OPENFAM_COMPAT_SAME_FIELD_(A, a, B, b)                                 \
    static_assert(offsetof(A, a) == offsetof(B, b), #A "." #a " layout")
static_assert(sizeof(Fam_Region_Attributes) == sizeof(fam_region_attr_t), "Fam_Region_Attributes size");
OPENFAM_COMPAT_SAME_FIELD_(Fam_Region_Attributes, redundancyLevel, fam_region_attr_t, redundancy_level);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Region_Attributes, memoryType, fam_region_attr_t, memory_type);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Region_Attributes, interleaveEnable, fam_region_attr_t, interleave_enable);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Region_Attributes, permissionLevel, fam_region_attr_t, permission_level);
static_assert(sizeof(Fam_Global_Descriptor) == sizeof(fam_global_desc_t), "Fam_Global_Descriptor size");
OPENFAM_COMPAT_SAME_FIELD_(Fam_Global_Descriptor, regionId, fam_global_desc_t, region_id);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Global_Descriptor, offset, fam_global_desc_t, offset);
static_assert(sizeof(Fam_Stat) == sizeof(fam_stat_t), "Fam_Stat size");
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, size, fam_stat_t, size);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, perm, fam_stat_t, perm);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, name, fam_stat_t, name);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, uid, fam_stat_t, uid);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, gid, fam_stat_t, gid);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, region_attributes, fam_stat_t, region_attributes);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, num_memservers, fam_stat_t, num_memservers);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, interleaveSize, fam_stat_t, interleave_size);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Stat, memory_servers, fam_stat_t, memory_servers);
static_assert(sizeof(Fam_Options) == sizeof(fam_options_t), "Fam_Options size");
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, defaultRegionName, fam_options_t, default_region_name);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, cisServer, fam_options_t, cis_server);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, grpcPort, fam_options_t, grpc_port);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, libfabricProvider, fam_options_t, libfabric_provider);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, famThreadModel, fam_options_t, fam_thread_model);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, cisInterfaceType, fam_options_t, cis_interface_type);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, openFamModel, fam_options_t, openfam_model);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, famContextModel, fam_options_t, fam_context_model);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, numConsumer, fam_options_t, num_consumer);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, runtime, fam_options_t, runtime);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, fam_default_memory_type, fam_options_t, fam_default_memory_type);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, if_device, fam_options_t, if_device);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, local_buf_addr, fam_options_t, local_buf_addr);
OPENFAM_COMPAT_SAME_FIELD_(Fam_Options, local_buf_size, fam_options_t, local_buf_size);
static_assert(sizeof(Fam_Backup_Options) == sizeof(fam_backup_options_t), "Fam_Backup_Options size");
static_assert(sizeof(Fam_Memory_Type) == sizeof(fam_memory_type_t), "Fam_Memory_Type size");
static_assert(VOLATILE == (int)FAM_MEMORY_VOLATILE && PERSISTENT == (int)FAM_MEMORY_PERSISTENT, "Fam_Memory_Type values");
static_assert(ENABLE == (int)FAM_INTERLEAVE_ENABLE && DISABLE == (int)FAM_INTERLEAVE_DISABLE, "Fam_Interleave_Enable values");
static_assert(NONE == (int)FAM_REDUNDANCY_NONE && RAID5 == (int)FAM_REDUNDANCY_RAID5, "Fam_Redundancy_Level values");
static_assert(REGION == (int)FAM_PERMISSION_REGION && DATAITEM == (int)FAM_PERMISSION_DATAITEM, "Fam_Permission_Level values");
static_assert(FAM_ERR_NOT_PWR_TWO == FAM_ENOTPWRTWO && FAM_ERR_NO_SPACE == FAM_ENOSPACE, "Fam_Error values");
#undef OPENFAM_COMPAT_SAME_FIELD_

/* Internals of the header; not part of the API. */
namespace compat_detail {

/* Process-wide bookkeeping shared by every fam object. Native handles are
 * released by fam_finalize; generation counts finalizes so that a descriptor
 * holding a handle from an earlier generation neither uses nor closes it
 * (the pointer may by then name another handle). */
struct State {
    std::mutex mu;
    int refs;
    std::atomic<uint64_t> generation;
    State() : refs(0), generation(1) {}
};

inline State &state() {
    static State s;
    return s;
}

[[noreturn]] inline void raise(int code, const char *msg) {
    if (code <= 0 || code > FAM_ERR_NOT_PWR_TWO)
        code = FAM_ERR_UNKNOWN;
    throw Fam_Exception(static_cast<Fam_Error>(code), msg);
}

/* Throws the calling thread's last native failure (for NULL returns). */
[[noreturn]] inline void raise_last() { raise(::fam_errcode(), ::fam_errmsg()); }

/* Throws for a negative native return code. */
inline void check(int rc) {
    if (rc < 0)
        raise(-rc, ::fam_errmsg());
}

[[noreturn]] inline void noperm(const char *method) {
    std::string m = std::string(method) + ": cannot be invoked from fam_context object";
    raise(FAM_ERR_NOPERM, m.c_str());
}

} // namespace compat_detail

class fam;
class fam_context;

/*
 * A data item. Made by fam::fam_allocate/fam_lookup/fam_restore, or by the
 * program from a Fam_Global_Descriptor (possibly received from another PE);
 * the latter is DESC_UNINITIALIZED until its first use, which resolves it
 * and checks permissions (a failure throws from that call).
 *
 * Ownership: the program deletes descriptors it got; deleting one releases
 * its native handle (the item stays). Deleting after fam_deallocate, after
 * fam_close or after fam_finalize is safe. Not copyable.
 *
 * The getters report the item as seen by fam_stat on first query (size,
 * permissions, name, owner, interleave size, memory servers), falling back
 * to the values given to the constructor or setters when the item cannot be
 * reached; they never throw. The setters exist for source compatibility:
 * they change what the getters report, never the item.
 */
class Fam_Descriptor {
  public:
    /* A descriptor for the item gDescriptor names, of itemSize bytes. */
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t itemSize)
        : Fam_Descriptor() {
        gd_ = gDescriptor;
        has_gd_ = true;
        size_ = itemSize;
    }
    /* A descriptor for the item gDescriptor names. */
    Fam_Descriptor(Fam_Global_Descriptor gDescriptor) : Fam_Descriptor() {
        gd_ = gDescriptor;
        has_gd_ = true;
    }
    /* An empty descriptor that names nothing; data-path calls on it throw
     * FAM_ERR_INVALID. */
    Fam_Descriptor()
        : h_(nullptr), gen_(0), gd_(), has_gd_(false),
          status_(DESC_UNINITIALIZED), stat_valid_(false), size_(0), perm_(0),
          uid_(0), gid_(0), interleave_(0), used_memsrv_(0),
          perm_level_(PERMISSION_LEVEL_DEFAULT), context_(nullptr) {}
    Fam_Descriptor(const Fam_Descriptor &) = delete;
    Fam_Descriptor &operator=(const Fam_Descriptor &) = delete;
    ~Fam_Descriptor() {
        fam_desc_t *h = h_.load(std::memory_order_acquire);
        if (h != nullptr &&
            gen_.load(std::memory_order_relaxed) == compat_detail::state().generation.load())
            (void)::fam_close(h);
    }

    /* The item's global descriptor ({0,0} for an empty descriptor). */
    Fam_Global_Descriptor get_global_descriptor() {
        std::lock_guard<std::mutex> g(mu_);
        load_gd_locked();
        return gd_;
    }
    /* Record access keys (kept for getters; libopenfam manages its own). */
    void bind_keys(uint64_t *tempKey, uint64_t cnt) {
        std::lock_guard<std::mutex> g(mu_);
        keys_.assign(tempKey, tempKey + (tempKey ? cnt : 0));
    }
    /* Keys recorded by bind_keys, or NULL. Valid until the next bind_keys. */
    uint64_t *get_keys() {
        std::lock_guard<std::mutex> g(mu_);
        return keys_.empty() ? nullptr : keys_.data();
    }
    void *get_context() { return context_.load(); }
    void set_context(void *context) { context_.store(context); }
    /* Record base addresses (kept for getters). */
    void set_base_address_list(uint64_t *addressList, uint64_t cnt) {
        std::lock_guard<std::mutex> g(mu_);
        bases_.assign(addressList, addressList + (addressList ? cnt : 0));
    }
    uint64_t *get_base_address_list() {
        std::lock_guard<std::mutex> g(mu_);
        return bases_.empty() ? nullptr : bases_.data();
    }
    /* A Fam_Descriptor_Status value: DESC_UNINITIALIZED until resolved,
     * DESC_INIT_DONE once resolved, DESC_INVALID after fam_deallocate. */
    int get_desc_status() {
        std::lock_guard<std::mutex> g(mu_);
        return status_;
    }
    void set_desc_status(int update_status) {
        std::lock_guard<std::mutex> g(mu_);
        status_ = update_status;
    }
    void set_size(uint64_t itemSize) { set_(&Fam_Descriptor::size_, itemSize); }
    void set_perm(mode_t perm) { set_(&Fam_Descriptor::perm_, perm); }
    void set_name(char *name) { set_(&Fam_Descriptor::name_, std::string(name ? name : "")); }
    void set_interleave_size(uint64_t size) { set_(&Fam_Descriptor::interleave_, size); }
    void set_uid(uint32_t uid) { set_(&Fam_Descriptor::uid_, uid); }
    void set_gid(uint32_t gid) { set_(&Fam_Descriptor::gid_, gid); }
    void set_used_memsrv_cnt(uint64_t cnt) { set_(&Fam_Descriptor::used_memsrv_, cnt); }
    /* Copies get_used_memsrv_cnt() ids from ids. */
    void set_memserver_ids(uint64_t *ids) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        memsrv_.assign(ids, ids + (ids ? used_memsrv_ : 0));
    }
    void set_permissionLevel(Fam_Permission_Level level) { set_(&Fam_Descriptor::perm_level_, level); }
    uint64_t get_size() { return get_(&Fam_Descriptor::size_); }
    mode_t get_perm() { return get_(&Fam_Descriptor::perm_); }
    /* The item's name ("" if unnamed); owned by the descriptor, valid until
     * the next set_name or its deletion. */
    char *get_name() {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return &name_[0];
    }
    uint64_t get_interleave_size() { return get_(&Fam_Descriptor::interleave_); }
    uint32_t get_uid() { return get_(&Fam_Descriptor::uid_); }
    uint32_t get_gid() { return get_(&Fam_Descriptor::gid_); }
    /* Number of memory servers the item is spread over. */
    uint64_t get_used_memsrv_cnt() { return get_(&Fam_Descriptor::used_memsrv_); }
    /* Ids of those servers in interleave order (get_used_memsrv_cnt()
     * entries, NULL if none); owned by the descriptor. */
    uint64_t *get_memserver_ids() {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return memsrv_.empty() ? nullptr : memsrv_.data();
    }
    uint64_t get_first_memserver_id() {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return memsrv_.empty() ? 0 : memsrv_[0];
    }
    Fam_Permission_Level get_permissionLevel() { return get_(&Fam_Descriptor::perm_level_); }

  private:
    friend class fam;

    /* Wraps a handle the library just returned. */
    explicit Fam_Descriptor(fam_desc_t *h) : Fam_Descriptor() {
        gen_.store(compat_detail::state().generation.load());
        h_.store(h);
        status_ = DESC_INIT_DONE;
        std::lock_guard<std::mutex> g(mu_);
        load_gd_locked();
    }

    /* The native handle, resolving the global descriptor on first use (and
     * again after a fam_close or a re-initialization). Throws. */
    fam_desc_t *handle() {
        fam_desc_t *h = h_.load(std::memory_order_acquire);
        if (h != nullptr && gen_.load(std::memory_order_relaxed) ==
                                compat_detail::state().generation.load())
            return h;
        std::lock_guard<std::mutex> g(mu_);
        return resolve_locked(true);
    }

    /* The handle if one is held for the current generation, else NULL. */
    fam_desc_t *current_handle() {
        fam_desc_t *h = h_.load(std::memory_order_acquire);
        if (h != nullptr && gen_.load(std::memory_order_relaxed) ==
                                compat_detail::state().generation.load())
            return h;
        return nullptr;
    }

    /* Called after the library released the handle (fam_close: the item
     * stays and the descriptor re-resolves on next use; fam_deallocate: the
     * descriptor is dead). */
    void released(int status) {
        std::lock_guard<std::mutex> g(mu_);
        h_.store(nullptr, std::memory_order_release);
        status_ = status;
        stat_valid_ = false;
    }

    /* After fam_close: the descriptor stays dead, whatever happens to the
     * item. */
    void closed() {
        std::lock_guard<std::mutex> g(mu_);
        h_.store(nullptr, std::memory_order_release);
        status_ = DESC_INVALID;
        closed_ = true;
        stat_valid_ = false;
    }

    /* After a permission change through fam. */
    void invalidate() {
        std::lock_guard<std::mutex> g(mu_);
        stat_valid_ = false;
    }

    /* Keeps the global descriptor so the item can be found again after the
     * handle is gone. */
    void load_gd_locked() {
        if (has_gd_)
            return;
        fam_desc_t *h = current_handle();
        fam_global_desc_t g;
        if (h != nullptr && ::fam_desc_global(h, &g) == 0) {
            gd_.regionId = g.region_id;
            gd_.offset = g.offset;
            has_gd_ = true;
        }
    }

    fam_desc_t *resolve_locked(bool throwing) {
        uint64_t cur = compat_detail::state().generation.load();
        fam_desc_t *h = h_.load(std::memory_order_relaxed);
        if (h != nullptr && gen_.load(std::memory_order_relaxed) == cur)
            return h;
        h_.store(nullptr, std::memory_order_relaxed);
        if (status_ == DESC_INVALID) {
            if (throwing)
                compat_detail::raise(FAM_ERR_INVALID, closed_ ? "Fam_Descriptor: closed with fam_close (look the item up again)"
                                                              : "Fam_Descriptor: the data item was deallocated");
            return nullptr;
        }
        if (!has_gd_) {
            if (throwing)
                compat_detail::raise(FAM_ERR_INVALID, "Fam_Descriptor: descriptor does not name a data item");
            return nullptr;
        }
        fam_global_desc_t g;
        g.region_id = gd_.regionId;
        g.offset = gd_.offset;
        h = ::fam_desc_from_global(g);
        if (h == nullptr) {
            if (throwing)
                compat_detail::raise_last();
            return nullptr;
        }
        gen_.store(cur, std::memory_order_relaxed);
        h_.store(h, std::memory_order_release);
        status_ = DESC_INIT_DONE;
        return h;
    }

    /* Fills the getter cache from fam_stat once; silently keeps the stored
     * values when the item cannot be reached. */
    void refresh_locked() {
        if (stat_valid_)
            return;
        fam_desc_t *h = resolve_locked(false);
        fam_stat_t st;
        if (h == nullptr || ::fam_stat(h, &st) != 0)
            return;
        size_ = st.size;
        perm_ = st.perm;
        name_ = st.name ? st.name : "";
        uid_ = st.uid;
        gid_ = st.gid;
        interleave_ = st.interleave_size;
        uint64_t n = st.num_memservers < 256 ? st.num_memservers : 256;
        used_memsrv_ = n;
        memsrv_.assign(st.memory_servers, st.memory_servers + n);
        stat_valid_ = true;
    }

    template <class T, class V> void set_(T Fam_Descriptor::*field, V value) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        this->*field = value;
    }
    template <class T> T get_(T Fam_Descriptor::*field) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return this->*field;
    }

    std::atomic<fam_desc_t *> h_;
    std::atomic<uint64_t> gen_;
    std::mutex mu_;
    Fam_Global_Descriptor gd_;
    bool has_gd_;
    bool closed_ = false;
    int status_;
    bool stat_valid_;
    uint64_t size_;
    mode_t perm_;
    std::string name_;
    uint32_t uid_, gid_;
    uint64_t interleave_;
    uint64_t used_memsrv_;
    std::vector<uint64_t> memsrv_;
    Fam_Permission_Level perm_level_;
    std::atomic<void *> context_;
    std::vector<uint64_t> keys_, bases_;
};

/*
 * A region. Made by fam::fam_create_region/fam_lookup_region or by the
 * program from a Fam_Global_Descriptor (resolved on first use). The program
 * deletes descriptors it got; deleting is always safe. Getters report
 * fam_stat's view on first query (size, permissions, name, attributes, first
 * memory server), never throw, and setters only change what getters report.
 * Not copyable.
 */
class Fam_Region_Descriptor {
  public:
    /* A descriptor for the region gDescriptor names, of regionSize bytes. */
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t regionSize)
        : Fam_Region_Descriptor() {
        gd_ = gDescriptor;
        has_gd_ = true;
        size_ = regionSize;
    }
    /* A descriptor for the region gDescriptor names. */
    Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor) : Fam_Region_Descriptor() {
        gd_ = gDescriptor;
        has_gd_ = true;
    }
    /* An empty descriptor; calls taking it throw FAM_ERR_INVALID. */
    Fam_Region_Descriptor()
        : h_(nullptr), gen_(0), gd_(), has_gd_(false),
          status_(DESC_UNINITIALIZED), stat_valid_(false), size_(0), perm_(0),
          memsrv_(0), context_(nullptr) {
        attr_.redundancyLevel = REDUNDANCY_LEVEL_DEFAULT;
        attr_.memoryType = MEMORY_TYPE_DEFAULT;
        attr_.interleaveEnable = INTERLEAVE_DEFAULT;
        attr_.permissionLevel = PERMISSION_LEVEL_DEFAULT;
    }
    Fam_Region_Descriptor(const Fam_Region_Descriptor &) = delete;
    Fam_Region_Descriptor &operator=(const Fam_Region_Descriptor &) = delete;
    /* Releases the native handle (fam_close_region); the region stays.
     * A handle from before the last fam_finalize is not touched. */
    ~Fam_Region_Descriptor() {
        fam_region_t *h = h_.load(std::memory_order_acquire);
        if (h != nullptr &&
            gen_.load(std::memory_order_relaxed) == compat_detail::state().generation.load())
            (void)::fam_close_region(h);
    }

    /* The region's global descriptor (offset (uint64_t)-1). */
    Fam_Global_Descriptor get_global_descriptor() {
        std::lock_guard<std::mutex> g(mu_);
        load_gd_locked();
        return gd_;
    }
    void *get_context() { return context_.load(); }
    void set_context(void *context) { context_.store(context); }
    /* DESC_UNINITIALIZED until resolved, DESC_INIT_DONE once resolved,
     * DESC_INVALID after fam_destroy_region. */
    int get_desc_status() {
        std::lock_guard<std::mutex> g(mu_);
        return status_;
    }
    void set_desc_status(int update_status) {
        std::lock_guard<std::mutex> g(mu_);
        status_ = update_status;
    }
    void set_size(uint64_t size) { set_(&Fam_Region_Descriptor::size_, size); }
    void set_perm(mode_t perm) { set_(&Fam_Region_Descriptor::perm_, perm); }
    void set_name(char *name) { set_(&Fam_Region_Descriptor::name_, std::string(name ? name : "")); }
    void set_redundancyLevel(Fam_Redundancy_Level level) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        attr_.redundancyLevel = level;
    }
    void set_memoryType(Fam_Memory_Type type) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        attr_.memoryType = type;
    }
    void set_interleaveEnable(Fam_Interleave_Enable enable) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        attr_.interleaveEnable = enable;
    }
    void set_permissionLevel(Fam_Permission_Level level) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        attr_.permissionLevel = level;
    }
    Fam_Redundancy_Level get_redundancyLevel() { return attrs().redundancyLevel; }
    Fam_Memory_Type get_memoryType() { return attrs().memoryType; }
    Fam_Interleave_Enable get_interleaveEnable() { return attrs().interleaveEnable; }
    Fam_Permission_Level get_permissionLevel() { return attrs().permissionLevel; }
    uint64_t get_size() { return get_(&Fam_Region_Descriptor::size_); }
    mode_t get_perm() { return get_(&Fam_Region_Descriptor::perm_); }
    /* The region's name, owned by the descriptor. */
    char *get_name() {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return &name_[0];
    }
    /* The first memory server holding the region. */
    uint64_t get_memserver_id() { return get_(&Fam_Region_Descriptor::memsrv_); }

  private:
    friend class fam;

    explicit Fam_Region_Descriptor(fam_region_t *h) : Fam_Region_Descriptor() {
        gen_.store(compat_detail::state().generation.load());
        h_.store(h);
        status_ = DESC_INIT_DONE;
        std::lock_guard<std::mutex> g(mu_);
        load_gd_locked();
    }

    fam_region_t *handle() {
        fam_region_t *h = h_.load(std::memory_order_acquire);
        if (h != nullptr && gen_.load(std::memory_order_relaxed) ==
                                compat_detail::state().generation.load())
            return h;
        std::lock_guard<std::mutex> g(mu_);
        return resolve_locked(true);
    }

    void released(int status) {
        std::lock_guard<std::mutex> g(mu_);
        h_.store(nullptr, std::memory_order_release);
        status_ = status;
        stat_valid_ = false;
    }

    /* After a resize or permission change through fam. */
    void invalidate() {
        std::lock_guard<std::mutex> g(mu_);
        stat_valid_ = false;
    }

    void load_gd_locked() {
        if (has_gd_)
            return;
        fam_region_t *h = h_.load(std::memory_order_relaxed);
        fam_global_desc_t g;
        if (h != nullptr && ::fam_region_global(h, &g) == 0) {
            gd_.regionId = g.region_id;
            gd_.offset = g.offset;
            has_gd_ = true;
        }
    }

    fam_region_t *resolve_locked(bool throwing) {
        uint64_t cur = compat_detail::state().generation.load();
        fam_region_t *h = h_.load(std::memory_order_relaxed);
        if (h != nullptr && gen_.load(std::memory_order_relaxed) == cur)
            return h;
        h_.store(nullptr, std::memory_order_relaxed);
        if (status_ == DESC_INVALID) {
            if (throwing)
                compat_detail::raise(FAM_ERR_INVALID, "Fam_Region_Descriptor: the region was destroyed");
            return nullptr;
        }
        if (!has_gd_) {
            if (throwing)
                compat_detail::raise(FAM_ERR_INVALID, "Fam_Region_Descriptor: descriptor does not name a region");
            return nullptr;
        }
        fam_global_desc_t g;
        g.region_id = gd_.regionId;
        g.offset = gd_.offset;
        h = ::fam_region_from_global(g);
        if (h == nullptr) {
            if (throwing)
                compat_detail::raise_last();
            return nullptr;
        }
        gen_.store(cur, std::memory_order_relaxed);
        h_.store(h, std::memory_order_release);
        status_ = DESC_INIT_DONE;
        return h;
    }

    void refresh_locked() {
        if (stat_valid_)
            return;
        fam_region_t *h = resolve_locked(false);
        fam_stat_t st;
        if (h == nullptr || ::fam_stat_region(h, &st) != 0)
            return;
        size_ = st.size;
        perm_ = st.perm;
        name_ = st.name ? st.name : "";
        attr_.redundancyLevel = static_cast<Fam_Redundancy_Level>(st.region_attributes.redundancy_level);
        attr_.memoryType = static_cast<Fam_Memory_Type>(st.region_attributes.memory_type);
        attr_.interleaveEnable = static_cast<Fam_Interleave_Enable>(st.region_attributes.interleave_enable);
        attr_.permissionLevel = static_cast<Fam_Permission_Level>(st.region_attributes.permission_level);
        memsrv_ = st.num_memservers > 0 ? st.memory_servers[0] : 0;
        stat_valid_ = true;
    }

    Fam_Region_Attributes attrs() {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return attr_;
    }
    template <class T, class V> void set_(T Fam_Region_Descriptor::*field, V value) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        this->*field = value;
    }
    template <class T> T get_(T Fam_Region_Descriptor::*field) {
        std::lock_guard<std::mutex> g(mu_);
        refresh_locked();
        return this->*field;
    }

    std::atomic<fam_region_t *> h_;
    std::atomic<uint64_t> gen_;
    std::mutex mu_;
    Fam_Global_Descriptor gd_;
    bool has_gd_;
    int status_;
    bool stat_valid_;
    uint64_t size_;
    mode_t perm_;
    std::string name_;
    Fam_Region_Attributes attr_;
    uint64_t memsrv_;
    std::atomic<void *> context_;
};

/* One method per OpenFAM atomic overload; each dispatches to the context's
 * native call when this object is a fam_context. */
#define OPENFAM_COMPAT_NONFETCH_(op, T, sfx)                                   \
    void fam_##op(Fam_Descriptor *descriptor, uint64_t offset, T value) {      \
        fam_desc_t *d_ = h_(descriptor);                                       \
        compat_detail::check(is_ctx_ ? ::fam_ctx_##op##_##sfx(ctx_, d_, offset, value) \
                                     : ::fam_##op##_##sfx(d_, offset, value)); \
    }
#define OPENFAM_COMPAT_FETCHOP_(op, T, sfx)                                    \
    T fam_##op(Fam_Descriptor *descriptor, uint64_t offset, T value) {         \
        fam_desc_t *d_ = h_(descriptor);                                       \
        T old_ = T();                                                          \
        compat_detail::check(is_ctx_ ? ::fam_ctx_##op##_##sfx(ctx_, d_, offset, value, &old_) \
                                     : ::fam_##op##_##sfx(d_, offset, value, &old_)); \
        return old_;                                                           \
    }
#define OPENFAM_COMPAT_CAS_(T, sfx)                                            \
    T fam_compare_swap(Fam_Descriptor *descriptor, uint64_t offset, T oldValue, T newValue) { \
        fam_desc_t *d_ = h_(descriptor);                                       \
        T old_ = T();                                                          \
        compat_detail::check(is_ctx_ ? ::fam_ctx_compare_swap_##sfx(ctx_, d_, offset, oldValue, newValue, &old_) \
                                     : ::fam_compare_swap_##sfx(d_, offset, oldValue, newValue, &old_)); \
        return old_;                                                           \
    }
#define OPENFAM_COMPAT_READ_(T, sfx)                                           \
    T fam_fetch_##sfx(Fam_Descriptor *descriptor, uint64_t offset) {           \
        fam_desc_t *d_ = h_(descriptor);                                       \
        T v_ = T();                                                            \
        compat_detail::check(is_ctx_ ? ::fam_ctx_fetch_##sfx(ctx_, d_, offset, &v_) \
                                     : ::fam_fetch_##sfx(d_, offset, &v_));    \
        return v_;                                                             \
    }
#define OPENFAM_COMPAT_ARITH_(M)                                               \
    M(int32_t, int32) M(int64_t, int64) M(uint32_t, uint32)                    \
    M(uint64_t, uint64) M(float, float) M(double, double)
#define OPENFAM_COMPAT_LOGIC_(M) M(uint32_t, uint32) M(uint64_t, uint64)

#define OPENFAM_COMPAT_SET_(T, s) OPENFAM_COMPAT_NONFETCH_(set, T, s)
#define OPENFAM_COMPAT_ADD_(T, s) OPENFAM_COMPAT_NONFETCH_(add, T, s)
#define OPENFAM_COMPAT_SUB_(T, s) OPENFAM_COMPAT_NONFETCH_(subtract, T, s)
#define OPENFAM_COMPAT_MIN_(T, s) OPENFAM_COMPAT_NONFETCH_(min, T, s)
#define OPENFAM_COMPAT_MAX_(T, s) OPENFAM_COMPAT_NONFETCH_(max, T, s)
#define OPENFAM_COMPAT_AND_(T, s) OPENFAM_COMPAT_NONFETCH_(and, T, s)
#define OPENFAM_COMPAT_OR_(T, s) OPENFAM_COMPAT_NONFETCH_(or, T, s)
#define OPENFAM_COMPAT_XOR_(T, s) OPENFAM_COMPAT_NONFETCH_(xor, T, s)
#define OPENFAM_COMPAT_FADD_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_add, T, s)
#define OPENFAM_COMPAT_FSUB_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_subtract, T, s)
#define OPENFAM_COMPAT_FMIN_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_min, T, s)
#define OPENFAM_COMPAT_FMAX_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_max, T, s)
#define OPENFAM_COMPAT_FAND_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_and, T, s)
#define OPENFAM_COMPAT_FOR_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_or, T, s)
#define OPENFAM_COMPAT_FXOR_(T, s) OPENFAM_COMPAT_FETCHOP_(fetch_xor, T, s)
#define OPENFAM_COMPAT_SWAP_(T, s) OPENFAM_COMPAT_FETCHOP_(swap, T, s)

/*
 * The OpenFAM instance. See the top of this file for how fam objects map
 * onto libopenfam's single instance. Not copyable.
 */
class fam {
  public:
    fam() : ctx_(nullptr), is_ctx_(false), initialized_(false), ctx_gen_(0) {}
    fam(const fam &) = delete;
    fam &operator=(const fam &) = delete;
    /* Does not finalize: an OpenFAM program finalizes explicitly. */
    ~fam() {}

    /* ---- Initialization and runtime ---- */

    /* Starts the library for this object. options may be NULL or have NULL
     * fields (defaults / fam_pe_config.yaml). Throws FAM_ERR_INVALID for a
     * NULL groupName, invalid option values, or a second call on this object
     * without fam_finalize. When another fam object already initialized the
     * library, options are not applied again. */
    void fam_initialize(const char *groupName, Fam_Options *options) {
        if (groupName == nullptr)
            compat_detail::raise(FAM_ERR_INVALID, "fam_initialize: group name is NULL");
        compat_detail::State &s = compat_detail::state();
        std::lock_guard<std::mutex> g(s.mu);
        if (initialized_)
            compat_detail::raise(FAM_ERR_INVALID, "fam_initialize: already initialized");
        if (s.refs == 0)
            compat_detail::check(::fam_initialize(groupName, reinterpret_cast<fam_options_t *>(options)));
        s.refs++;
        initialized_ = true;
    }

    /* Ends this object's use of the library; the last one waits for
     * outstanding operations and stops it, after which every descriptor and
     * context is stale (deleting them stays safe). groupName may be NULL. */
    void fam_finalize(const char *groupName) {
        (void)groupName; // NULL is fine, as in OpenFAM: the name selects nothing
        compat_detail::State &s = compat_detail::state();
        std::lock_guard<std::mutex> g(s.mu);
        if (!initialized_)
            compat_detail::raise(FAM_ERR_INVALID, "fam_finalize: not initialized");
        initialized_ = false;
        if (--s.refs == 0) {
            s.generation.fetch_add(1);
            compat_detail::check(::fam_finalize(groupName));
        }
    }

    /* Terminates every PE of the job with status (alone: this process exits
     * with status). Returns only where the launcher cannot be told, throwing
     * the reason. */
    void fam_abort(int status) { compat_detail::check(::fam_abort(status)); }

    /* Waits until every PE of the job has called it. */
    void fam_barrier_all() { compat_detail::check(::fam_barrier_all()); }

    /* NULL-terminated option names in OpenFAM's order, one malloc'd block the
     * caller free()s. */
    const char **fam_list_options(void) {
        const char **r = ::fam_list_options();
        if (r == nullptr)
            compat_detail::raise_last();
        return r;
    }

    /* A malloc'd copy of an option's value that the caller free()s: int* for
     * PE_ID and PE_COUNT, uint64_t* for LOC_BUF_SIZE, char* otherwise.
     * Throws FAM_ERR_INVALID for an unknown name. */
    const void *fam_get_option(char *optionName) {
        return fam_get_option(const_cast<const char *>(optionName));
    }
    /* Same, for a const name (string literals); an addition to OpenFAM. */
    const void *fam_get_option(const char *optionName) {
        const void *r = ::fam_get_option(optionName);
        if (r == nullptr)
            compat_detail::raise_last();
        return r;
    }

    /* ---- Names, regions, items ---- */

    /* A new descriptor for the region called name (throws
     * FAM_ERR_NOTFOUND if there is none). The caller deletes it. */
    Fam_Region_Descriptor *fam_lookup_region(const char *name) {
        return wrap_(::fam_lookup_region(name));
    }

    /* A new descriptor for item itemName of region regionName. */
    Fam_Descriptor *fam_lookup(const char *itemName, const char *regionName) {
        return wrap_(::fam_lookup(itemName, regionName));
    }

    /* Creates a region; regionAttributes may be NULL. The caller deletes the
     * returned descriptor. */
    Fam_Region_Descriptor *fam_create_region(const char *name, uint64_t size, mode_t permissions,
                                             Fam_Region_Attributes *regionAttributes) {
        return wrap_(::fam_create_region(name, size, permissions,
                                         reinterpret_cast<fam_region_attr_t *>(regionAttributes)));
    }

    /* Destroys the region and everything in it. The descriptor becomes
     * DESC_INVALID; the caller still deletes it. */
    void fam_destroy_region(Fam_Region_Descriptor *descriptor) {
        compat_detail::check(::fam_destroy_region(rh_(descriptor)));
        descriptor->released(DESC_INVALID);
    }

    /* Changes the region's size to nbytes. */
    void fam_resize_region(Fam_Region_Descriptor *descriptor, uint64_t nbytes) {
        compat_detail::check(::fam_resize_region(rh_(descriptor), nbytes));
        descriptor->invalidate();
    }

    /* Allocates an unnamed item; the caller deletes the descriptor. */
    Fam_Descriptor *fam_allocate(uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region) {
        return wrap_(::fam_allocate(nullptr, nbytes, accessPermissions, rh_(region)));
    }

    /* Allocates a named item; the caller deletes the descriptor. */
    Fam_Descriptor *fam_allocate(const char *name, uint64_t nbytes, mode_t accessPermissions,
                                 Fam_Region_Descriptor *region) {
        return wrap_(::fam_allocate(name, nbytes, accessPermissions, rh_(region)));
    }

    /* Frees the item. The descriptor becomes DESC_INVALID; the caller still
     * deletes it. */
    void fam_deallocate(Fam_Descriptor *descriptor) {
        compat_detail::check(::fam_deallocate(h_(descriptor)));
        descriptor->released(DESC_INVALID);
    }

    /* Releases the library's resources for this descriptor; the item stays.
     * As in OpenFAM, the descriptor is unusable afterwards (FAM_ERR_INVALID;
     * look the item up again), and closing a descriptor whose item was
     * deallocated, or one already closed, throws FAM_ERR_INVALID. */
    void fam_close(Fam_Descriptor *descriptor) {
        if (descriptor == nullptr)
            compat_detail::raise(FAM_ERR_INVALID, "fam_close: NULL descriptor");
        fam_desc_t *h = descriptor->handle();
        compat_detail::check(::fam_close(h));
        descriptor->closed();
    }

    void fam_change_permissions(Fam_Descriptor *descriptor, mode_t accessPermissions) {
        compat_detail::check(::fam_change_permissions(h_(descriptor), accessPermissions));
        descriptor->invalidate();
    }
    void fam_change_permissions(Fam_Region_Descriptor *descriptor, mode_t accessPermissions) {
        compat_detail::check(::fam_change_region_permissions(rh_(descriptor), accessPermissions));
        descriptor->invalidate();
    }

    /* Fills famInfo for the item; famInfo->name stays valid while the
     * descriptor's handle is held. */
    void fam_stat(Fam_Descriptor *descriptor, Fam_Stat *famInfo) {
        compat_detail::check(::fam_stat(h_(descriptor), reinterpret_cast<fam_stat_t *>(famInfo)));
    }
    void fam_stat(Fam_Region_Descriptor *descriptor, Fam_Stat *famInfo) {
        compat_detail::check(::fam_stat_region(rh_(descriptor), reinterpret_cast<fam_stat_t *>(famInfo)));
    }

    /* ---- Data path ---- */

    void fam_get_blocking(void *local, Fam_Descriptor *descriptor, uint64_t offset, uint64_t nbytes) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_get_blocking(ctx_, local, d, offset, nbytes)
                                     : ::fam_get_blocking(local, d, offset, nbytes));
    }
    /* local must stay valid until fam_quiet on this object. */
    void fam_get_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t offset, uint64_t nbytes) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_get_nonblocking(ctx_, local, d, offset, nbytes)
                                     : ::fam_get_nonblocking(local, d, offset, nbytes));
    }
    void fam_put_blocking(void *local, Fam_Descriptor *descriptor, uint64_t offset, uint64_t nbytes) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_put_blocking(ctx_, local, d, offset, nbytes)
                                     : ::fam_put_blocking(local, d, offset, nbytes));
    }
    /* local must stay valid until fam_quiet on this object. */
    void fam_put_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t offset, uint64_t nbytes) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_put_nonblocking(ctx_, local, d, offset, nbytes)
                                     : ::fam_put_nonblocking(local, d, offset, nbytes));
    }

    /* Maps the item into this process (throws FAM_ERR_UNIMPL where its
     * memory is not on this host). */
    void *fam_map(Fam_Descriptor *descriptor) {
        void *p = ::fam_map(h_(descriptor));
        if (p == nullptr)
            compat_detail::raise_last();
        return p;
    }
    void fam_unmap(void *local, Fam_Descriptor *descriptor) {
        compat_detail::check(::fam_unmap(local, h_(descriptor)));
    }

    /* Element i at byte (firstElement + i*stride) * elementSize of the item,
     * byte i*elementSize of local. */
    void fam_gather_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                             uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_gather_blocking_strided(ctx_, local, d, nElements, firstElement, stride, elementSize)
                                     : ::fam_gather_blocking_strided(local, d, nElements, firstElement, stride, elementSize));
    }
    /* Element i at byte elementIndex[i] * elementSize of the item. */
    void fam_gather_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                             uint64_t *elementIndex, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_gather_blocking_indexed(ctx_, local, d, nElements, elementIndex, elementSize)
                                     : ::fam_gather_blocking_indexed(local, d, nElements, elementIndex, elementSize));
    }
    void fam_gather_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_gather_nonblocking_strided(ctx_, local, d, nElements, firstElement, stride, elementSize)
                                     : ::fam_gather_nonblocking_strided(local, d, nElements, firstElement, stride, elementSize));
    }
    void fam_gather_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                uint64_t *elementIndex, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_gather_nonblocking_indexed(ctx_, local, d, nElements, elementIndex, elementSize)
                                     : ::fam_gather_nonblocking_indexed(local, d, nElements, elementIndex, elementSize));
    }
    void fam_scatter_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                              uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_scatter_blocking_strided(ctx_, local, d, nElements, firstElement, stride, elementSize)
                                     : ::fam_scatter_blocking_strided(local, d, nElements, firstElement, stride, elementSize));
    }
    void fam_scatter_blocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                              uint64_t *elementIndex, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_scatter_blocking_indexed(ctx_, local, d, nElements, elementIndex, elementSize)
                                     : ::fam_scatter_blocking_indexed(local, d, nElements, elementIndex, elementSize));
    }
    void fam_scatter_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                 uint64_t firstElement, uint64_t stride, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_scatter_nonblocking_strided(ctx_, local, d, nElements, firstElement, stride, elementSize)
                                     : ::fam_scatter_nonblocking_strided(local, d, nElements, firstElement, stride, elementSize));
    }
    void fam_scatter_nonblocking(void *local, Fam_Descriptor *descriptor, uint64_t nElements,
                                 uint64_t *elementIndex, uint64_t elementSize) {
        fam_desc_t *d = h_(descriptor);
        compat_detail::check(is_ctx_ ? ::fam_ctx_scatter_nonblocking_indexed(ctx_, local, d, nElements, elementIndex, elementSize)
                                     : ::fam_scatter_nonblocking_indexed(local, d, nElements, elementIndex, elementSize));
    }

    /* ---- Copy, backup, restore ---- */

    /* Starts a copy; pass the returned object to fam_copy_wait exactly once. */
    void *fam_copy(Fam_Descriptor *src, uint64_t srcOffset, Fam_Descriptor *dest,
                   uint64_t destOffset, uint64_t nbytes) {
        fam_desc_t *s = h_(src);
        fam_desc_t *d = h_(dest);
        fam_wait_t *w = is_ctx_ ? ::fam_ctx_copy(ctx_, s, srcOffset, d, destOffset, nbytes)
                                : ::fam_copy(s, srcOffset, d, destOffset, nbytes);
        if (w == nullptr)
            compat_detail::raise_last();
        return w;
    }
    void fam_copy_wait(void *waitObj) {
        compat_detail::check(::fam_copy_wait(static_cast<fam_wait_t *>(waitObj)));
    }

    /* Starts a backup of src named BackupName; wait with fam_backup_wait. */
    void *fam_backup(Fam_Descriptor *src, const char *BackupName, Fam_Backup_Options *backupOptions) {
        return waitobj_(::fam_backup(h_(src), BackupName,
                                     reinterpret_cast<fam_backup_options_t *>(backupOptions)));
    }
    /* Starts restoring a backup into an existing item; wait with
     * fam_restore_wait. */
    void *fam_restore(const char *BackupName, Fam_Descriptor *dest) {
        return waitobj_(::fam_restore(BackupName, h_(dest)));
    }
    /* Starts restoring a backup into a new item dataitemName of destRegion;
     * *dest receives its descriptor (owned by the caller, usable after
     * fam_restore_wait). */
    void *fam_restore(const char *BackupName, Fam_Region_Descriptor *destRegion,
                      const char *dataitemName, mode_t accessPermissions, Fam_Descriptor **dest) {
        fam_desc_t *out = nullptr;
        void *w = waitobj_(::fam_restore_region(BackupName, rh_(destRegion), dataitemName,
                                                accessPermissions, &out));
        if (dest != nullptr)
            *dest = out != nullptr ? new Fam_Descriptor(out) : nullptr;
        return w;
    }
    void fam_backup_wait(void *waitObj) {
        compat_detail::check(::fam_backup_wait(static_cast<fam_wait_t *>(waitObj)));
    }
    void fam_restore_wait(void *waitObj) {
        compat_detail::check(::fam_restore_wait(static_cast<fam_wait_t *>(waitObj)));
    }
    void *fam_delete_backup(const char *BackupName) {
        return waitobj_(::fam_delete_backup(BackupName));
    }
    void fam_delete_backup_wait(void *waitObj) {
        compat_detail::check(::fam_delete_backup_wait(static_cast<fam_wait_t *>(waitObj)));
    }
    /* One line per backup whose name starts with BackupName; malloc'd, the
     * caller free()s it. */
    char *fam_list_backup(const char *BackupName) {
        char *r = ::fam_list_backup(BackupName);
        if (r == nullptr)
            compat_detail::raise_last();
        return r;
    }

    /* ---- Atomics ---- */

    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_SET_)
#ifdef __SIZEOF_INT128__
    OPENFAM_COMPAT_SET_(int128_t, int128)
#endif
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_ADD_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_SUB_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_MIN_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_MAX_)
    OPENFAM_COMPAT_LOGIC_(OPENFAM_COMPAT_AND_)
    OPENFAM_COMPAT_LOGIC_(OPENFAM_COMPAT_OR_)
    OPENFAM_COMPAT_LOGIC_(OPENFAM_COMPAT_XOR_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_READ_)
#ifdef __SIZEOF_INT128__
    OPENFAM_COMPAT_READ_(int128_t, int128)
#endif
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_SWAP_)
    OPENFAM_COMPAT_CAS_(int32_t, int32)
    OPENFAM_COMPAT_CAS_(int64_t, int64)
    OPENFAM_COMPAT_CAS_(uint32_t, uint32)
    OPENFAM_COMPAT_CAS_(uint64_t, uint64)
#ifdef __SIZEOF_INT128__
    OPENFAM_COMPAT_CAS_(int128_t, int128)
#endif
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_FADD_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_FSUB_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_FMIN_)
    OPENFAM_COMPAT_ARITH_(OPENFAM_COMPAT_FMAX_)
    OPENFAM_COMPAT_LOGIC_(OPENFAM_COMPAT_FAND_)
    OPENFAM_COMPAT_LOGIC_(OPENFAM_COMPAT_FOR_)
    OPENFAM_COMPAT_LOGIC_(OPENFAM_COMPAT_FXOR_)

    /* ---- Ordering and contexts ---- */

    /* Orders this object's earlier non-blocking operations before later ones. */
    void fam_fence(void) {
        compat_detail::check(is_ctx_ ? ::fam_ctx_fence(ctx_) : ::fam_fence());
    }
    /* Waits for this object's non-blocking operations (a context's own only)
     * and throws the first error among them. */
    void fam_quiet(void) {
        compat_detail::check(is_ctx_ ? ::fam_ctx_quiet(ctx_) : ::fam_quiet());
    }
    /* Number of this object's operations not yet complete. */
    uint64_t fam_progress(void) { return is_ctx_ ? ::fam_ctx_progress(ctx_) : ::fam_progress(); }

    /* Opens a context with its own completion queue. The caller may delete
     * it after fam_context_close (deleting an open one closes it). */
    fam_context *fam_context_open();
    /* Closes the context's queue (waiting for its operations); the object
     * stays allocated and rejects further use with FAM_ERR_INVALID. */
    void fam_context_close(fam_context *fam_ctx);

  protected:
    /* For fam_context: data-path calls go to native context c. */
    explicit fam(fam_ctx_t *c)
        : ctx_(c), is_ctx_(true), initialized_(false),
          ctx_gen_(compat_detail::state().generation.load()) {}

    static fam_desc_t *h_(Fam_Descriptor *d) { return d != nullptr ? d->handle() : nullptr; }
    static fam_region_t *rh_(Fam_Region_Descriptor *r) { return r != nullptr ? r->handle() : nullptr; }

    fam_ctx_t *ctx_;
    bool is_ctx_;

  private:
    static Fam_Region_Descriptor *wrap_(fam_region_t *r) {
        if (r == nullptr)
            compat_detail::raise_last();
        return new Fam_Region_Descriptor(r);
    }
    static Fam_Descriptor *wrap_(fam_desc_t *d) {
        if (d == nullptr)
            compat_detail::raise_last();
        return new Fam_Descriptor(d);
    }
    static void *waitobj_(fam_wait_t *w) {
        if (w == nullptr)
            compat_detail::raise_last();
        return w;
    }

    bool initialized_;

  protected:
    uint64_t ctx_gen_;
};

/*
 * A context: the data path, atomics, gather/scatter, copy, fence, quiet,
 * progress, stat and map of fam, acting on the context's own completion
 * queue. Control-path methods are hidden and throw FAM_ERR_NOPERM, as in
 * OpenFAM. Made by fam::fam_context_open.
 */
class fam_context : public fam {
  public:
    /* inp_fam_impl is the native fam_ctx_t * (fam_context_open passes it). */
    explicit fam_context(void *inp_fam_impl) : fam(static_cast<fam_ctx_t *>(inp_fam_impl)) {}
    /* Closes the native context if fam_context_close was not called. */
    ~fam_context() {
        if (ctx_ != nullptr && ctx_gen_ == compat_detail::state().generation.load())
            (void)::fam_context_close(ctx_);
    }

    void fam_initialize(const char *, Fam_Options *) { compat_detail::noperm("fam_initialize"); }
    void fam_finalize(const char *) { compat_detail::noperm("fam_finalize"); }
    void fam_abort(int) { compat_detail::noperm("fam_abort"); }
    void fam_barrier_all() { compat_detail::noperm("fam_barrier_all"); }
    const char **fam_list_options(void) { compat_detail::noperm("fam_list_options"); }
    const void *fam_get_option(char *) { compat_detail::noperm("fam_get_option"); }
    const void *fam_get_option(const char *) { compat_detail::noperm("fam_get_option"); }
    Fam_Region_Descriptor *fam_lookup_region(const char *) { compat_detail::noperm("fam_lookup_region"); }
    Fam_Descriptor *fam_lookup(const char *, const char *) { compat_detail::noperm("fam_lookup"); }
    Fam_Region_Descriptor *fam_create_region(const char *, uint64_t, mode_t, Fam_Region_Attributes *) {
        compat_detail::noperm("fam_create_region");
    }
    void fam_destroy_region(Fam_Region_Descriptor *) { compat_detail::noperm("fam_destroy_region"); }
    void fam_resize_region(Fam_Region_Descriptor *, uint64_t) { compat_detail::noperm("fam_resize_region"); }
    Fam_Descriptor *fam_allocate(uint64_t, mode_t, Fam_Region_Descriptor *) {
        compat_detail::noperm("fam_allocate");
    }
    Fam_Descriptor *fam_allocate(const char *, uint64_t, mode_t, Fam_Region_Descriptor *) {
        compat_detail::noperm("fam_allocate");
    }
    void fam_deallocate(Fam_Descriptor *) { compat_detail::noperm("fam_deallocate"); }
    void fam_close(Fam_Descriptor *) { compat_detail::noperm("fam_close"); }
    void fam_change_permissions(Fam_Descriptor *, mode_t) { compat_detail::noperm("fam_change_permissions"); }
    fam_context *fam_context_open() { compat_detail::noperm("fam_context_open"); }
    void fam_context_close(fam_context *) { compat_detail::noperm("fam_context_close"); }
};

inline fam_context *fam::fam_context_open() {
    fam_ctx_t *c = ::fam_context_open();
    if (c == nullptr)
        compat_detail::raise_last();
    return new fam_context(c);
}

inline void fam::fam_context_close(fam_context *fam_ctx) {
    if (fam_ctx == nullptr)
        compat_detail::raise(FAM_ERR_INVALID, "fam_context_close: NULL context");
    fam_ctx_t *c = fam_ctx->ctx_;
    if (c == nullptr)
        compat_detail::raise(FAM_ERR_INVALID, "fam_context_close: context already closed");
    fam_ctx->ctx_ = nullptr;
    if (fam_ctx->ctx_gen_ == compat_detail::state().generation.load())
        compat_detail::check(::fam_context_close(c));
}

#undef OPENFAM_COMPAT_NONFETCH_
#undef OPENFAM_COMPAT_FETCHOP_
#undef OPENFAM_COMPAT_CAS_
#undef OPENFAM_COMPAT_READ_
#undef OPENFAM_COMPAT_ARITH_
#undef OPENFAM_COMPAT_LOGIC_
#undef OPENFAM_COMPAT_SET_
#undef OPENFAM_COMPAT_ADD_
#undef OPENFAM_COMPAT_SUB_
#undef OPENFAM_COMPAT_MIN_
#undef OPENFAM_COMPAT_MAX_
#undef OPENFAM_COMPAT_AND_
#undef OPENFAM_COMPAT_OR_
#undef OPENFAM_COMPAT_XOR_
#undef OPENFAM_COMPAT_FADD_
#undef OPENFAM_COMPAT_FSUB_
#undef OPENFAM_COMPAT_FMIN_
#undef OPENFAM_COMPAT_FMAX_
#undef OPENFAM_COMPAT_FAND_
#undef OPENFAM_COMPAT_FOR_
#undef OPENFAM_COMPAT_FXOR_
#undef OPENFAM_COMPAT_SWAP_

} // namespace openfam

/* The global aliases OpenFAM 3.2 provides (types only). */
using openfam::Fam_Global_Descriptor;
using openfam::Fam_Options;
using openfam::Fam_Interleave_Enable;
using openfam::Fam_Memory_Type;
using openfam::Fam_Redundancy_Level;
using openfam::Fam_Permission_Level;
using openfam::Fam_Region_Attributes;
using openfam::Fam_Stat;
using openfam::Fam_Backup_Options;

#endif /* __cplusplus */

#endif /* OPENFAM_COMPAT_FAM_H */
