/*
  OpenFAM for Chapel.

  This module binds ``libopenfam`` through its C interface, ``openfam.h``,
  in two layers:

  * an ``extern proc`` for every function of the header, with the exact C
    types (``c_ptr``, ``c_ptrConst(c_char)``, ``uint(64)``, ``c_int`` ...),
    plus the header's structs as ``extern record`` and its constants as
    ``param``. ``check_binding.py`` compares this layer with the header on
    every ``make test``; edit both together.
  * Chapel classes over it: :proc:`initialize` returns a :class:`Fam`, which
    makes and finds :class:`Region` and :class:`DataItem` objects;
    :class:`Context` groups non-blocking operations; :class:`Pending` is a
    started copy, backup or restore. Every failure is thrown as a
    :class:`FamError` carrying the ``FAM_E*`` code.

  The library keeps one instance per process. Each Chapel program is one
  OpenFAM PE: build with ``CHPL_COMM=none`` and start several PEs with
  ``famrun``. All calls act on the calling locale's memory; arrays passed to
  ``get``/``put`` must be local, non-distributed and rectangular.

  Threads: every call may be made from any task. Objects are not
  synchronised beyond what the library does, so closing a handle while
  another task uses it is a program error (the library then reports
  ``FAM_EINVAL``; it does not crash).
*/
module OpenFAM {
  use CTypes;

  require "openfam.h", "-lopenfam";

  // ---------------------------------------------------------------------
  // Constants of openfam.h (checked against the header by check_binding.py)

  /* The OpenFAM API version the library implements. */
  param OPENFAM_API_VERSION = "3.2.0";
  /* Longest region or data item name, in bytes. */
  param OPENFAM_NAME_MAX = 255;

  // Error codes, as carried by FamError.code.
  // BEGIN GENERATED from internal/gentables/errors.table; DO NOT EDIT
  param FAM_EUNKNOWN = 1;
  param FAM_ENOPERM = 2;
  param FAM_ETIMEOUT = 3;
  param FAM_EINVAL = 4;
  param FAM_ELIBFABRIC = 5;
  param FAM_ESHM = 6;
  param FAM_ENOTCREATED = 7;
  param FAM_ENOTFOUND = 8;
  param FAM_EEXIST = 9;
  param FAM_EALLOCATOR = 10;
  param FAM_ERPC = 11;
  param FAM_EPMI = 12;
  param FAM_ERANGE = 13;
  param FAM_ENOSPACE = 14;
  param FAM_ENULLPTR = 15;
  param FAM_EUNIMPL = 16;
  param FAM_ERESOURCE = 17;
  param FAM_EINVALIDOP = 18;
  param FAM_ERPCCLIENTNOTFOUND = 19;
  param FAM_EMEMSERVLISTEMPTY = 20;
  param FAM_EMETADATA = 21;
  param FAM_EMEMORY = 22;
  param FAM_ENAMETOOLONG = 23;
  param FAM_EATLQUEUEFULL = 24;
  param FAM_EATLQUEUEINSERT = 25;
  param FAM_EATLNOTENABLED = 26;
  param FAM_EATL = 27;
  param FAM_EBACKUPNOTCREATED = 28;
  param FAM_EBACKUPNOTFOUND = 29;
  param FAM_EBACKUPINFONOTFOUND = 30;
  param FAM_ENOTPWRTWO = 31;
  // END GENERATED

  // ---------------------------------------------------------------------
  // Types of openfam.h

  // From <sys/types.h>; unsigned int on Linux.
  extern type mode_t = c_uint;

  // C enums are ints; their constants are params of the enum's type.
  extern type fam_redundancy_level_t = c_int;
  param FAM_REDUNDANCY_DEFAULT: fam_redundancy_level_t = 0;
  param FAM_REDUNDANCY_NONE: fam_redundancy_level_t = 1;
  param FAM_REDUNDANCY_RAID1: fam_redundancy_level_t = 2;
  param FAM_REDUNDANCY_RAID5: fam_redundancy_level_t = 3;

  extern type fam_memory_type_t = c_int;
  param FAM_MEMORY_DEFAULT: fam_memory_type_t = 0;
  param FAM_MEMORY_VOLATILE: fam_memory_type_t = 1;
  param FAM_MEMORY_PERSISTENT: fam_memory_type_t = 2;

  extern type fam_interleave_t = c_int;
  param FAM_INTERLEAVE_DEFAULT: fam_interleave_t = 0;
  param FAM_INTERLEAVE_ENABLE: fam_interleave_t = 1;
  param FAM_INTERLEAVE_DISABLE: fam_interleave_t = 2;

  extern type fam_permission_level_t = c_int;
  param FAM_PERMISSION_DEFAULT: fam_permission_level_t = 0;
  param FAM_PERMISSION_REGION: fam_permission_level_t = 1;
  param FAM_PERMISSION_DATAITEM: fam_permission_level_t = 2;

  /* Region attributes given to :proc:`Fam.createRegion`. */
  extern record fam_region_attr_t {
    var redundancy_level: fam_redundancy_level_t;
    var memory_type: fam_memory_type_t;
    var interleave_enable: fam_interleave_t;
    var permission_level: fam_permission_level_t;
  }

  /* Names a region (``offset == max(uint(64))``) or a data item across
     processes; see :proc:`Region.global` and :proc:`DataItem.global`. */
  extern record fam_global_desc_t {
    var region_id: uint(64);
    var offset: uint(64);
  }

  /* Raw result of ``fam_stat``; :proc:`DataItem.stat` returns the friendlier
     :record:`FamStat`. */
  extern record fam_stat_t {
    var size: uint(64);
    var perm: mode_t;
    var name: c_ptr(c_char);
    var uid: uint(32);
    var gid: uint(32);
    var region_attributes: fam_region_attr_t;
    var num_memservers: uint(64);
    var interleave_size: uint(64);
    var memory_servers: c_array(uint(64), 256);
  }

  /* Options for ``fam_initialize``; a nil field means "default". The
     strings are read during the call only. */
  extern record fam_options_t {
    var default_region_name: c_ptr(c_char);
    var cis_server: c_ptr(c_char);
    var grpc_port: c_ptr(c_char);
    var libfabric_provider: c_ptr(c_char);
    var fam_thread_model: c_ptr(c_char);
    var cis_interface_type: c_ptr(c_char);
    var openfam_model: c_ptr(c_char);
    var fam_context_model: c_ptr(c_char);
    var num_consumer: c_ptr(c_char);
    var runtime: c_ptr(c_char);
    var fam_default_memory_type: c_ptr(c_char);
    var if_device: c_ptr(c_char);
    var local_buf_addr: c_ptr(void);
    var local_buf_size: uint(64);
  }

  /* Reserved options of ``fam_backup``. */
  extern record fam_backup_options_t {
    var backup_option_reserved: uint(32);
  }

  // Chapel has no 128-bit integer, but an opaque extern type is still
  // passed by value with the C compiler's own ABI, so the int128 atomics
  // bind exactly; Int128 below converts to and from it.
  extern type fam_int128_t;

  // Opaque handles, only ever used through c_ptr.
  extern type fam_region_t;
  extern type fam_desc_t;
  extern type fam_ctx_t;
  extern type fam_wait_t;

  // ---------------------------------------------------------------------
  // Functions of openfam.h, in the header's order. Ownership, threads and
  // errors are as documented there.

  // Errors
  extern proc fam_errmsg(): c_ptrConst(c_char);
  extern proc fam_errcode(): c_int;

  // Life cycle and runtime
  extern proc fam_initialize(group: c_ptrConst(c_char), opts: c_ptr(fam_options_t)): c_int;
  extern proc fam_finalize(group: c_ptrConst(c_char)): c_int;
  extern proc fam_abort(status: c_int): c_int;
  extern proc fam_barrier_all(): c_int;
  extern proc fam_list_options(): c_ptr(c_ptrConst(c_char));
  extern proc fam_get_option(name: c_ptrConst(c_char)): c_ptrConst(void);

  // Regions
  extern proc fam_create_region(name: c_ptrConst(c_char), size: uint(64), perm: mode_t, attr: c_ptr(fam_region_attr_t)): c_ptr(fam_region_t);
  extern proc fam_lookup_region(name: c_ptrConst(c_char)): c_ptr(fam_region_t);
  extern proc fam_destroy_region(r: c_ptr(fam_region_t)): c_int;
  extern proc fam_close_region(r: c_ptr(fam_region_t)): c_int;
  extern proc fam_resize_region(r: c_ptr(fam_region_t), nbytes: uint(64)): c_int;
  extern proc fam_change_region_permissions(r: c_ptr(fam_region_t), perm: mode_t): c_int;
  extern proc fam_stat_region(r: c_ptr(fam_region_t), outp: c_ptr(fam_stat_t)): c_int;
  extern proc fam_region_global(r: c_ptr(fam_region_t), outp: c_ptr(fam_global_desc_t)): c_int;
  extern proc fam_region_from_global(g: fam_global_desc_t): c_ptr(fam_region_t);

  // Data items
  extern proc fam_allocate(name: c_ptrConst(c_char), nbytes: uint(64), perm: mode_t, r: c_ptr(fam_region_t)): c_ptr(fam_desc_t);
  extern proc fam_lookup(item: c_ptrConst(c_char), region: c_ptrConst(c_char)): c_ptr(fam_desc_t);
  extern proc fam_deallocate(d: c_ptr(fam_desc_t)): c_int;
  extern proc fam_close(d: c_ptr(fam_desc_t)): c_int;
  extern proc fam_change_permissions(d: c_ptr(fam_desc_t), perm: mode_t): c_int;
  extern proc fam_stat(d: c_ptr(fam_desc_t), outp: c_ptr(fam_stat_t)): c_int;
  extern proc fam_desc_global(d: c_ptr(fam_desc_t), outp: c_ptr(fam_global_desc_t)): c_int;
  extern proc fam_desc_from_global(g: fam_global_desc_t): c_ptr(fam_desc_t);

  // Data path
  extern proc fam_get_blocking(buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_put_blocking(buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_get_nonblocking(buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_put_nonblocking(buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_gather_blocking_strided(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_scatter_blocking_strided(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_gather_nonblocking_strided(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_scatter_nonblocking_strided(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_gather_blocking_indexed(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_scatter_blocking_indexed(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_gather_nonblocking_indexed(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_scatter_nonblocking_indexed(buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_map(d: c_ptr(fam_desc_t)): c_ptr(void);
  extern proc fam_unmap(buf: c_ptr(void), d: c_ptr(fam_desc_t)): c_int;
  extern proc fam_copy(src: c_ptr(fam_desc_t), src_offset: uint(64), dst: c_ptr(fam_desc_t), dst_offset: uint(64), nbytes: uint(64)): c_ptr(fam_wait_t);
  extern proc fam_copy_wait(w: c_ptr(fam_wait_t)): c_int;

  // Backup and restore
  extern proc fam_backup(src: c_ptr(fam_desc_t), backup_name: c_ptrConst(c_char), opts: c_ptr(fam_backup_options_t)): c_ptr(fam_wait_t);
  extern proc fam_backup_wait(w: c_ptr(fam_wait_t)): c_int;
  extern proc fam_restore(backup_name: c_ptrConst(c_char), dst: c_ptr(fam_desc_t)): c_ptr(fam_wait_t);
  extern proc fam_restore_region(backup_name: c_ptrConst(c_char), r: c_ptr(fam_region_t), item_name: c_ptrConst(c_char), perm: mode_t, outp: c_ptr(c_ptr(fam_desc_t))): c_ptr(fam_wait_t);
  extern proc fam_restore_wait(w: c_ptr(fam_wait_t)): c_int;
  extern proc fam_delete_backup(backup_name: c_ptrConst(c_char)): c_ptr(fam_wait_t);
  extern proc fam_delete_backup_wait(w: c_ptr(fam_wait_t)): c_int;
  extern proc fam_list_backup(backup_name: c_ptrConst(c_char)): c_ptr(c_char);

  // Listing (not in OpenFAM): malloc'd strings, released with free().
  extern proc fam_list_regions(): c_ptr(c_char);
  extern proc fam_list_items(r: c_ptr(fam_region_t)): c_ptr(c_char);

  // Ordering and contexts
  extern proc fam_fence(): c_int;
  extern proc fam_quiet(): c_int;
  extern proc fam_persist(d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_progress(): uint(64);
  extern proc fam_context_open(): c_ptr(fam_ctx_t);
  extern proc fam_context_close(c: c_ptr(fam_ctx_t)): c_int;

  // Atomics on the default context
  extern proc fam_set_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_set_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_set_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_set_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_set_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_set_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_set_int128(d: c_ptr(fam_desc_t), offset: uint(64), value: fam_int128_t): c_int;
  extern proc fam_add_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_add_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_add_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_add_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_add_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_add_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_subtract_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_subtract_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_subtract_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_subtract_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_subtract_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_subtract_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_min_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_min_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_min_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_min_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_min_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_min_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_max_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_max_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_max_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_max_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_max_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_max_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_and_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_and_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_or_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_or_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_xor_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_xor_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_fetch_int32(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(int(32))): c_int;
  extern proc fam_fetch_int64(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(int(64))): c_int;
  extern proc fam_fetch_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_float(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(real(32))): c_int;
  extern proc fam_fetch_double(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(real(64))): c_int;
  extern proc fam_fetch_int128(d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(fam_int128_t)): c_int;
  extern proc fam_fetch_add_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_fetch_add_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_fetch_add_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_add_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_add_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_fetch_add_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_fetch_subtract_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_fetch_subtract_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_fetch_subtract_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_subtract_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_subtract_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_fetch_subtract_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_fetch_min_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_fetch_min_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_fetch_min_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_min_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_min_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_fetch_min_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_fetch_max_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_fetch_max_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_fetch_max_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_max_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_max_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_fetch_max_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_fetch_and_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_and_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_or_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_or_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_fetch_xor_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_fetch_xor_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_swap_int32(d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_swap_int64(d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_swap_uint32(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_swap_uint64(d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_swap_float(d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_swap_double(d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_compare_swap_int32(d: c_ptr(fam_desc_t), offset: uint(64), expected: int(32), desired: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_compare_swap_int64(d: c_ptr(fam_desc_t), offset: uint(64), expected: int(64), desired: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_compare_swap_uint32(d: c_ptr(fam_desc_t), offset: uint(64), expected: uint(32), desired: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_compare_swap_uint64(d: c_ptr(fam_desc_t), offset: uint(64), expected: uint(64), desired: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_compare_swap_int128(d: c_ptr(fam_desc_t), offset: uint(64), expected: fam_int128_t, desired: fam_int128_t, old_out: c_ptr(fam_int128_t)): c_int;

  // The data path on a context
  extern proc fam_ctx_get_blocking(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_ctx_put_blocking(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_ctx_get_nonblocking(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_ctx_put_nonblocking(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;
  extern proc fam_ctx_gather_blocking_strided(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_ctx_scatter_blocking_strided(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_ctx_gather_nonblocking_strided(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_ctx_scatter_nonblocking_strided(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), first: uint(64), stride: uint(64), elem_size: uint(64)): c_int;
  extern proc fam_ctx_gather_blocking_indexed(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_ctx_scatter_blocking_indexed(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_ctx_gather_nonblocking_indexed(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_ctx_scatter_nonblocking_indexed(c: c_ptr(fam_ctx_t), buf: c_ptr(void), d: c_ptr(fam_desc_t), n: uint(64), idx: c_ptrConst(uint(64)), elem_size: uint(64)): c_int;
  extern proc fam_ctx_copy(c: c_ptr(fam_ctx_t), src: c_ptr(fam_desc_t), src_offset: uint(64), dst: c_ptr(fam_desc_t), dst_offset: uint(64), nbytes: uint(64)): c_ptr(fam_wait_t);
  extern proc fam_ctx_fence(c: c_ptr(fam_ctx_t)): c_int;
  extern proc fam_ctx_quiet(c: c_ptr(fam_ctx_t)): c_int;
  extern proc fam_ctx_progress(c: c_ptr(fam_ctx_t)): uint(64);
  extern proc fam_ctx_persist(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), nbytes: uint(64)): c_int;

  // Atomics on a context
  extern proc fam_ctx_set_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_ctx_set_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_ctx_set_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_set_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_set_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_ctx_set_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_ctx_set_int128(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: fam_int128_t): c_int;
  extern proc fam_ctx_add_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_ctx_add_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_ctx_add_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_add_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_add_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_ctx_add_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_ctx_subtract_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_ctx_subtract_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_ctx_subtract_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_subtract_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_subtract_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_ctx_subtract_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_ctx_min_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_ctx_min_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_ctx_min_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_min_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_min_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_ctx_min_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_ctx_max_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32)): c_int;
  extern proc fam_ctx_max_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64)): c_int;
  extern proc fam_ctx_max_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_max_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_max_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32)): c_int;
  extern proc fam_ctx_max_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64)): c_int;
  extern proc fam_ctx_and_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_and_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_or_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_or_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_xor_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32)): c_int;
  extern proc fam_ctx_xor_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64)): c_int;
  extern proc fam_ctx_fetch_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_fetch_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_fetch_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(real(32))): c_int;
  extern proc fam_ctx_fetch_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(real(64))): c_int;
  extern proc fam_ctx_fetch_int128(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value_out: c_ptr(fam_int128_t)): c_int;
  extern proc fam_ctx_fetch_add_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_fetch_add_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_fetch_add_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_add_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_add_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_ctx_fetch_add_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_ctx_fetch_subtract_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_fetch_subtract_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_fetch_subtract_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_subtract_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_subtract_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_ctx_fetch_subtract_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_ctx_fetch_min_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_fetch_min_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_fetch_min_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_min_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_min_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_ctx_fetch_min_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_ctx_fetch_max_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_fetch_max_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_fetch_max_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_max_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_max_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_ctx_fetch_max_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_ctx_fetch_and_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_and_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_or_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_or_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_fetch_xor_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_fetch_xor_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_swap_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_swap_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_swap_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_swap_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_swap_float(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(32), old_out: c_ptr(real(32))): c_int;
  extern proc fam_ctx_swap_double(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), value: real(64), old_out: c_ptr(real(64))): c_int;
  extern proc fam_ctx_compare_swap_int32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), expected: int(32), desired: int(32), old_out: c_ptr(int(32))): c_int;
  extern proc fam_ctx_compare_swap_int64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), expected: int(64), desired: int(64), old_out: c_ptr(int(64))): c_int;
  extern proc fam_ctx_compare_swap_uint32(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), expected: uint(32), desired: uint(32), old_out: c_ptr(uint(32))): c_int;
  extern proc fam_ctx_compare_swap_uint64(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), expected: uint(64), desired: uint(64), old_out: c_ptr(uint(64))): c_int;
  extern proc fam_ctx_compare_swap_int128(c: c_ptr(fam_ctx_t), d: c_ptr(fam_desc_t), offset: uint(64), expected: fam_int128_t, desired: fam_int128_t, old_out: c_ptr(fam_int128_t)): c_int;

  // The library hands out malloc'd memory (fam_list_options, fam_get_option,
  // fam_list_backup) that must go back to libc, not to Chapel's allocator.
  private extern "free" proc libcFree(ptr: c_ptr(void));

  // ---------------------------------------------------------------------
  // Chapel interface

  /* The error every wrapper throws when the library reports a failure. */
  class FamError : Error {
    /* Positive ``FAM_E*`` code of the failure, e.g. ``FAM_ENOTFOUND``. */
    const code: int;
    /* The operation that failed. */
    const op: string;
    /* The library's message for the failure. */
    const detail: string;

    proc init(code: int, op: string, detail: string) {
      this.code = code;
      this.op = op;
      this.detail = detail;
    }

    override proc message(): string {
      return op + ": " + detail + " (FAM error " + code:string + ")";
    }
  }

  // A Chapel string copy of a C string; never throws, because a message
  // that fails to decode should not hide the error being reported.
  private proc fromCString(p: c_ptrConst(c_char)): string {
    if p == nil then return "";
    try {
      return string.createCopyingBuffer(p);
    } catch {
      return "<message is not UTF-8>";
    }
  }

  // The calling thread's last failure as a FamError. rc is the failing
  // call's return value, used when the library left no code behind.
  private proc lastError(op: string, rc: c_int = 0): owned FamError {
    var code = fam_errcode(): int;
    if code == 0 && rc < 0 then code = -(rc: int);
    if code == 0 then code = FAM_EUNKNOWN;
    return new FamError(code, op, fromCString(fam_errmsg()));
  }

  private proc check(rc: c_int, op: string) throws {
    if rc != 0 then throw lastError(op, rc);
  }

  private proc invalid(op: string, why: string): owned FamError {
    return new FamError(FAM_EINVAL, op, why);
  }

  private proc byteOffset(x: integral): uint(64) throws {
    if x < 0 then throw invalid("offset", "negative offset " + x:string);
    return x: uint(64);
  }

  private proc toMode(perm: integral): mode_t throws {
    if perm < 0 || perm > 0o7777 then
      throw invalid("perm", "permission bits out of range: " + perm:string);
    return perm: mode_t;
  }

  private proc byteCount(const ref A: [] ?t): uint(64) {
    return A.size: uint(64) * c_sizeof(t): uint(64);
  }

  private proc ctxHandle(ctx: borrowed Context?): c_ptr(fam_ctx_t) {
    if ctx == nil then return nil;
    return ctx!.handle;
  }

  /* A 128-bit two's-complement integer, ``hi * 2**64 + lo``, for the
     ``Int128`` atomics (set, fetch, compareSwap). */
  record Int128 {
    var lo: uint(64);
    var hi: int(64);
  }

  /* ``x`` as an :record:`Int128` (sign-extended). */
  proc toInt128(x: int(64)): Int128 {
    return new Int128(lo = x: uint(64), hi = if x < 0 then -1 else 0);
  }

  // fam_int128_t is opaque to Chapel; its bytes are written through a
  // uint(64) view, low half first (every target of this library is
  // little-endian).
  private proc toC(v: Int128): fam_int128_t {
    var r: fam_int128_t;
    const p = c_ptrTo(r): c_ptr(uint(64));
    p[0] = v.lo;
    p[1] = v.hi: uint(64);
    return r;
  }

  private proc fromC(v: fam_int128_t): Int128 {
    var copy = v;
    const p = c_ptrTo(copy): c_ptr(uint(64));
    return new Int128(lo = p[0], hi = p[1]: int(64));
  }

  /* What ``stat`` reports about a region or data item. */
  record FamStat {
    /* Size in bytes. */
    var size: uint(64);
    /* Permission bits. */
    var perm: uint(32);
    /* Name; "" for an unnamed data item. */
    var name: string;
    var uid: uint(32);
    var gid: uint(32);
    /* The region's attributes (for a data item: those of its region). */
    var attributes: fam_region_attr_t;
    var numMemservers: uint(64);
    var interleaveSize: uint(64);
  }

  private proc toFamStat(const ref st: fam_stat_t): FamStat {
    return new FamStat(size = st.size, perm = st.perm: uint(32),
                       name = fromCString(st.name),
                       uid = st.uid, gid = st.gid,
                       attributes = st.region_attributes,
                       numMemservers = st.num_memservers,
                       interleaveSize = st.interleave_size);
  }

  // PE_ID and PE_COUNT come back from fam_get_option as a malloc'd int.
  private proc intOption(name: string): int throws {
    const p = fam_get_option(name.c_str());
    if p == nil then throw lastError("fam_get_option(" + name + ")");
    const v = (p: c_ptrConst(c_int))[0];
    libcFree(p: c_ptr(void));
    return v: int;
  }

  /* Starts this process's OpenFAM instance (``fam_initialize``) and
     returns the object that finalizes it.

     :arg group: the group name, passed to ``fam_initialize`` and
                 ``fam_finalize``.
     :arg opts: options, or ``nil`` for the defaults and configuration file.
     :throws FamError: ``FAM_EINVAL`` when already initialized, or any
                       start-up failure.
  */
  proc initialize(group: string = "default",
                  opts: c_ptr(fam_options_t) = nil): owned Fam throws {
    try check(fam_initialize(group.c_str(), opts), "fam_initialize");
    return new Fam(group);
  }

  /* The process's OpenFAM instance, from :proc:`initialize`. Deleting it
     (the end of its ``owned`` scope) finalizes the library if
     :proc:`finalize` was not called; that also releases every handle, so
     Region, DataItem and Context objects must not be used afterwards. */
  class Fam {
    /* The group name given to :proc:`initialize`. */
    const group: string;
    // Cleared by finalize() so deinit does not finalize twice.
    var live = true;

    /* Waits for outstanding operations and stops the instance. */
    proc finalize() throws {
      if !live then return;
      live = false;
      try check(fam_finalize(group.c_str()), "fam_finalize");
    }

    proc deinit() {
      if live then fam_finalize(group.c_str());
    }

    /* Ends the whole job with ``status`` (every PE under a launcher).
       Returns only by throwing. */
    proc abort(status: int) throws {
      try check(fam_abort(status: c_int), "fam_abort");
    }

    /* Waits until every PE of the job has called it. */
    proc barrierAll() throws {
      try check(fam_barrier_all(), "fam_barrier_all");
    }

    /* This PE's rank, 0 ..< :proc:`peCount`. */
    proc peId(): int throws { return try intOption("PE_ID"); }

    /* The number of PEs in the job (1 without a launcher). */
    proc peCount(): int throws { return try intOption("PE_COUNT"); }

    /* The value of option ``name`` (one of :proc:`listOptions`) as text. */
    proc option(name: string): string throws {
      if name == "PE_ID" || name == "PE_COUNT" {
        const v = try intOption(name);
        return v: string;
      }
      const p = fam_get_option(name.c_str());
      if p == nil then throw lastError("fam_get_option(" + name + ")");
      defer libcFree(p: c_ptr(void));
      if name == "LOC_BUF_SIZE" then
        return (p: c_ptrConst(uint(64)))[0]: string;
      return fromCString(p: c_ptrConst(c_char));
    }

    /* The names of every option :proc:`option` accepts. */
    proc listOptions(): [] string throws {
      const p = fam_list_options();
      if p == nil then throw lastError("fam_list_options");
      defer libcFree(p: c_ptr(void));
      var n = 0;
      while p[n] != nil do n += 1;
      var names: [0..<n] string;
      for i in 0..<n do names[i] = fromCString(p[i]);
      return names;
    }

    /* Creates a region of ``size`` bytes owned by the caller.

       :throws FamError: ``FAM_EEXIST``, ``FAM_ENAMETOOLONG``,
                         ``FAM_ENOSPACE``, ``FAM_EINVAL``.
    */
    proc createRegion(name: string, size: integral,
                      perm: integral = 0o777): owned Region throws {
      const sz = try byteOffset(size), mode = try toMode(perm);
      const h = fam_create_region(name.c_str(), sz, mode, nil);
      if h == nil then throw lastError("fam_create_region(" + name + ")");
      return new Region(h);
    }

    /* As above, with explicit region attributes. */
    proc createRegion(name: string, size: integral, perm: integral,
                      attr: fam_region_attr_t): owned Region throws {
      const sz = try byteOffset(size), mode = try toMode(perm);
      var a = attr;
      const h = fam_create_region(name.c_str(), sz, mode, c_ptrTo(a));
      if h == nil then throw lastError("fam_create_region(" + name + ")");
      return new Region(h);
    }

    /* Finds a region by name. :throws FamError: ``FAM_ENOTFOUND``. */
    proc lookupRegion(name: string): owned Region throws {
      const h = fam_lookup_region(name.c_str());
      if h == nil then throw lastError("fam_lookup_region(" + name + ")");
      return new Region(h);
    }

    /* A region named by a global descriptor from another process. */
    proc regionFromGlobal(g: fam_global_desc_t): owned Region throws {
      const h = fam_region_from_global(g);
      if h == nil then throw lastError("fam_region_from_global");
      return new Region(h);
    }

    /* Finds data item ``item`` in region ``region``.
       :throws FamError: ``FAM_ENOTFOUND``, ``FAM_ENOPERM``. */
    proc lookup(item: string, region: string): owned DataItem throws {
      const h = fam_lookup(item.c_str(), region.c_str());
      if h == nil then
        throw lastError("fam_lookup(" + item + ", " + region + ")");
      return new DataItem(h);
    }

    /* A data item named by a global descriptor (possibly made by another
       process); checked on first use. */
    proc itemFromGlobal(g: fam_global_desc_t): owned DataItem throws {
      const h = fam_desc_from_global(g);
      if h == nil then throw lastError("fam_desc_from_global");
      return new DataItem(h);
    }

    /* Opens a context: operations given it complete independently of the
       default context's (see :proc:`Context.quiet`). */
    proc openContext(): owned Context throws {
      const h = fam_context_open();
      if h == nil then throw lastError("fam_context_open");
      return new Context(h);
    }

    /* Orders earlier non-blocking operations on the default context
       before later ones. */
    proc fence() throws { try check(fam_fence(), "fam_fence"); }

    /* Waits for every non-blocking operation on the default context and
       throws the first error among them. Arrays given to those operations
       may be reused once it returns. */
    proc quiet() throws { try check(fam_quiet(), "fam_quiet"); }

    /* Number of operations on the default context not yet complete. */
    proc progress(): uint(64) { return fam_progress(); }

    /* Starts restoring backup ``backupName`` into the existing item
       ``dst``; wait on the result. */
    proc restore(backupName: string, dst: borrowed DataItem): owned Pending throws {
      const w = fam_restore(backupName.c_str(), dst.handle);
      if w == nil then throw lastError("fam_restore(" + backupName + ")");
      return new Pending(w, waitKind.restore);
    }

    /* Starts deleting backup ``backupName``; wait on the result. */
    proc deleteBackup(backupName: string): owned Pending throws {
      const w = fam_delete_backup(backupName.c_str());
      if w == nil then throw lastError("fam_delete_backup(" + backupName + ")");
      return new Pending(w, waitKind.deleteBackup);
    }

    /* One line per backup whose name starts with ``prefix`` ("" for all):
       "name size mode uid gid time". */
    proc listBackup(prefix: string = ""): string throws {
      const p = fam_list_backup(prefix.c_str());
      if p == nil then throw lastError("fam_list_backup");
      defer libcFree(p: c_ptr(void));
      return fromCString(p);
    }
  }

  /* A region handle. The library owns it until :proc:`destroy` or the
     end of the instance; the object itself holds nothing to release. */
  class Region {
    /* The C handle, for calling the extern procs directly. */
    var handle: c_ptr(fam_region_t);

    /* Destroys the region and every item in it (needs write permission on
       the region, not ownership). */
    proc destroy() throws {
      try check(fam_destroy_region(handle), "fam_destroy_region");
      handle = nil;
    }

    /* Releases this handle; the region stays. */
    proc close() throws {
      try check(fam_close_region(handle), "fam_close_region");
      handle = nil;
    }

    /* Grows the region, or shrinks it down to the end of its last item. */
    proc resize(nbytes: integral) throws {
      const n = try byteOffset(nbytes);
      try check(fam_resize_region(handle, n), "fam_resize_region");
    }

    proc changePermissions(perm: integral) throws {
      const mode = try toMode(perm);
      try check(fam_change_region_permissions(handle, mode),
                "fam_change_region_permissions");
    }

    proc stat(): FamStat throws {
      var st: fam_stat_t;
      try check(fam_stat_region(handle, c_ptrTo(st)), "fam_stat_region");
      return toFamStat(st);
    }

    /* The descriptor another process passes to
       :proc:`Fam.regionFromGlobal`. */
    proc global(): fam_global_desc_t throws {
      var g: fam_global_desc_t;
      try check(fam_region_global(handle, c_ptrTo(g)), "fam_region_global");
      return g;
    }

    /* Allocates ``nbytes`` in this region; ``name`` "" makes an unnamed
       item, reachable only through its global descriptor. */
    proc allocate(name: string, nbytes: integral,
                  perm: integral = 0o600): owned DataItem throws {
      var cname: c_ptrConst(c_char) = nil;
      if !name.isEmpty() then cname = name.c_str();
      const n = try byteOffset(nbytes), mode = try toMode(perm);
      const h = fam_allocate(cname, n, mode, handle);
      if h == nil then throw lastError("fam_allocate(" + name + ")");
      return new DataItem(h);
    }

    /* Starts restoring backup ``backupName`` into a new item of this
       region; after :proc:`Pending.wait`, :proc:`Pending.item` returns it. */
    proc restore(backupName: string, itemName: string = "",
                 perm: integral = 0o600): owned Pending throws {
      var cname: c_ptrConst(c_char) = nil;
      if !itemName.isEmpty() then cname = itemName.c_str();
      const mode = try toMode(perm);
      var outItem: c_ptr(fam_desc_t);
      const w = fam_restore_region(backupName.c_str(), handle, cname, mode,
                                   c_ptrTo(outItem));
      if w == nil then
        throw lastError("fam_restore_region(" + backupName + ")");
      return new Pending(w, waitKind.restoreRegion, outItem);
    }
  }

  /* Which ``*_wait`` call completes a :class:`Pending`. */
  enum waitKind { copy, backup, restore, restoreRegion, deleteBackup }

  /* A started copy, backup, restore or backup deletion. Call
     :proc:`wait` exactly once; until then the library holds the handle
     (fam_finalize releases it otherwise). */
  class Pending {
    var handle: c_ptr(fam_wait_t);
    const kind: waitKind;
    // The item fam_restore_region created; handed out by item().
    var outItem: c_ptr(fam_desc_t);

    /* Waits for the operation and throws its error, if any. */
    proc wait() throws {
      var rc: c_int;
      select kind {
        when waitKind.copy do rc = fam_copy_wait(handle);
        when waitKind.backup do rc = fam_backup_wait(handle);
        when waitKind.restore, waitKind.restoreRegion do
          rc = fam_restore_wait(handle);
        when waitKind.deleteBackup do rc = fam_delete_backup_wait(handle);
      }
      handle = nil;
      try check(rc, "wait(" + kind:string + ")");
    }

    /* The item a :proc:`Region.restore` created, after :proc:`wait`
       succeeded. Can be taken once. */
    proc item(): owned DataItem throws {
      if kind != waitKind.restoreRegion || handle != nil || outItem == nil then
        throw invalid("Pending.item", "no restored item to take");
      const h = outItem;
      outItem = nil;
      return new DataItem(h);
    }
  }

  /* A context: its own queue of operations, completed by its own
     :proc:`quiet`. Pass it as ``ctx`` to DataItem methods. Closed when
     deleted, or by :proc:`close`. Safe to share between tasks. */
  class Context {
    /* The C handle, for calling the extern procs directly. */
    var handle: c_ptr(fam_ctx_t);

    proc close() throws {
      const h = handle;
      handle = nil;
      try check(fam_context_close(h), "fam_context_close");
    }

    proc deinit() {
      if handle != nil then fam_context_close(handle);
    }

    proc fence() throws { try check(fam_ctx_fence(handle), "fam_ctx_fence"); }

    /* Waits for this context's operations and throws the first error. */
    proc quiet() throws { try check(fam_ctx_quiet(handle), "fam_ctx_quiet"); }

    /* Number of this context's operations not yet complete. */
    proc progress(): uint(64) { return fam_ctx_progress(handle); }
  }

  /* A data item handle. Closed (``fam_close``) when deleted, unless
     :proc:`close` or :proc:`deallocate` ran first.

     Data methods move whole Chapel arrays of numeric elements in the
     arrays' storage order; ``offset`` is in bytes. With ``nonblocking=true``
     the array must stay alive and untouched until ``quiet`` of the same
     context returns. ``ctx`` selects a :class:`Context`; ``nil`` uses the
     default one. */
  class DataItem {
    /* The C handle, for calling the extern procs directly. */
    var handle: c_ptr(fam_desc_t);

    proc deinit() {
      if handle != nil then fam_close(handle);
    }

    /* Releases the handle; the item stays. */
    proc close() throws {
      const h = handle;
      handle = nil;
      try check(fam_close(h), "fam_close");
    }

    /* Frees the item and its name, and releases the handle. */
    proc deallocate() throws {
      try check(fam_deallocate(handle), "fam_deallocate");
      handle = nil;
    }

    proc changePermissions(perm: integral) throws {
      const mode = try toMode(perm);
      try check(fam_change_permissions(handle, mode), "fam_change_permissions");
    }

    proc stat(): FamStat throws {
      var st: fam_stat_t;
      try check(fam_stat(handle, c_ptrTo(st)), "fam_stat");
      return toFamStat(st);
    }

    /* Size of the item in bytes. */
    proc size(): uint(64) throws {
      const st = try stat();
      return st.size;
    }

    /* The descriptor another process passes to :proc:`Fam.itemFromGlobal`. */
    proc global(): fam_global_desc_t throws {
      var g: fam_global_desc_t;
      try check(fam_desc_global(handle, c_ptrTo(g)), "fam_desc_global");
      return g;
    }

    /* Reads ``A.size`` elements from byte ``offset`` into ``A``. */
    proc get(ref A: [] ?t, offset: integral = 0, ctx: borrowed Context? = nil,
             nonblocking = false) throws where isNumericType(t) {
      const off = try byteOffset(offset), n = byteCount(A);
      if n == 0 then return;
      const buf = c_ptrTo(A): c_ptr(void), c = ctxHandle(ctx);
      var rc: c_int;
      if c == nil {
        rc = if nonblocking then fam_get_nonblocking(buf, handle, off, n)
             else fam_get_blocking(buf, handle, off, n);
      } else {
        rc = if nonblocking then fam_ctx_get_nonblocking(c, buf, handle, off, n)
             else fam_ctx_get_blocking(c, buf, handle, off, n);
      }
      try check(rc, "get");
    }

    /* Writes ``A`` to the item at byte ``offset``. */
    proc put(const ref A: [] ?t, offset: integral = 0,
             ctx: borrowed Context? = nil,
             nonblocking = false) throws where isNumericType(t) {
      const off = try byteOffset(offset), n = byteCount(A);
      if n == 0 then return;
      // The C prototype takes void* for both directions; put only reads.
      const buf = c_ptrToConst(A): c_ptr(void), c = ctxHandle(ctx);
      var rc: c_int;
      if c == nil {
        rc = if nonblocking then fam_put_nonblocking(buf, handle, off, n)
             else fam_put_blocking(buf, handle, off, n);
      } else {
        rc = if nonblocking then fam_ctx_put_nonblocking(c, buf, handle, off, n)
             else fam_ctx_put_blocking(c, buf, handle, off, n);
      }
      try check(rc, "put");
    }

    /* Strided gather: ``A[i]`` gets item element ``first + i*stride``
       (in units of ``t``). */
    proc gather(ref A: [] ?t, first: integral, stride: integral,
                ctx: borrowed Context? = nil,
                nonblocking = false) throws where isNumericType(t) {
      if A.size == 0 then return;
      const n = A.size: uint(64), f = try byteOffset(first),
            s = try byteOffset(stride), es = c_sizeof(t): uint(64);
      const buf = c_ptrTo(A): c_ptr(void), c = ctxHandle(ctx);
      var rc: c_int;
      if c == nil {
        rc = if nonblocking
             then fam_gather_nonblocking_strided(buf, handle, n, f, s, es)
             else fam_gather_blocking_strided(buf, handle, n, f, s, es);
      } else {
        rc = if nonblocking
             then fam_ctx_gather_nonblocking_strided(c, buf, handle, n, f, s, es)
             else fam_ctx_gather_blocking_strided(c, buf, handle, n, f, s, es);
      }
      try check(rc, "gather");
    }

    /* Strided scatter: item element ``first + i*stride`` gets ``A[i]``. */
    proc scatter(const ref A: [] ?t, first: integral, stride: integral,
                 ctx: borrowed Context? = nil,
                 nonblocking = false) throws where isNumericType(t) {
      if A.size == 0 then return;
      const n = A.size: uint(64), f = try byteOffset(first),
            s = try byteOffset(stride), es = c_sizeof(t): uint(64);
      const buf = c_ptrToConst(A): c_ptr(void), c = ctxHandle(ctx);
      var rc: c_int;
      if c == nil {
        rc = if nonblocking
             then fam_scatter_nonblocking_strided(buf, handle, n, f, s, es)
             else fam_scatter_blocking_strided(buf, handle, n, f, s, es);
      } else {
        rc = if nonblocking
             then fam_ctx_scatter_nonblocking_strided(c, buf, handle, n, f, s, es)
             else fam_ctx_scatter_blocking_strided(c, buf, handle, n, f, s, es);
      }
      try check(rc, "scatter");
    }

    /* Indexed gather: ``A[i]`` gets item element ``indices[i]``. With
       ``nonblocking=true`` ``indices`` must stay alive until ``quiet``. */
    proc gather(ref A: [] ?t, const ref indices: [] uint(64),
                ctx: borrowed Context? = nil,
                nonblocking = false) throws where isNumericType(t) {
      if A.size != indices.size then
        throw invalid("gather", "A and indices differ in size");
      if A.size == 0 then return;
      const n = A.size: uint(64), es = c_sizeof(t): uint(64);
      const buf = c_ptrTo(A): c_ptr(void), ix = c_ptrToConst(indices),
            c = ctxHandle(ctx);
      var rc: c_int;
      if c == nil {
        rc = if nonblocking
             then fam_gather_nonblocking_indexed(buf, handle, n, ix, es)
             else fam_gather_blocking_indexed(buf, handle, n, ix, es);
      } else {
        rc = if nonblocking
             then fam_ctx_gather_nonblocking_indexed(c, buf, handle, n, ix, es)
             else fam_ctx_gather_blocking_indexed(c, buf, handle, n, ix, es);
      }
      try check(rc, "gather");
    }

    /* Indexed scatter: item element ``indices[i]`` gets ``A[i]``. */
    proc scatter(const ref A: [] ?t, const ref indices: [] uint(64),
                 ctx: borrowed Context? = nil,
                 nonblocking = false) throws where isNumericType(t) {
      if A.size != indices.size then
        throw invalid("scatter", "A and indices differ in size");
      if A.size == 0 then return;
      const n = A.size: uint(64), es = c_sizeof(t): uint(64);
      const buf = c_ptrToConst(A): c_ptr(void), ix = c_ptrToConst(indices),
            c = ctxHandle(ctx);
      var rc: c_int;
      if c == nil {
        rc = if nonblocking
             then fam_scatter_nonblocking_indexed(buf, handle, n, ix, es)
             else fam_scatter_blocking_indexed(buf, handle, n, ix, es);
      } else {
        rc = if nonblocking
             then fam_ctx_scatter_nonblocking_indexed(c, buf, handle, n, ix, es)
             else fam_ctx_scatter_blocking_indexed(c, buf, handle, n, ix, es);
      }
      try check(rc, "scatter");
    }

    /* Maps the item into this process (same-host memory only, else
       ``FAM_EUNIMPL``). The pointer is valid until :proc:`unmap`,
       close, deallocate or finalize. */
    proc map(): c_ptr(void) throws {
      const p = fam_map(handle);
      if p == nil then throw lastError("fam_map");
      return p;
    }

    proc unmap(p: c_ptr(void)) throws {
      try check(fam_unmap(p, handle), "fam_unmap");
    }

    /* Starts copying ``nbytes`` from byte ``srcOffset`` of this item to
       byte ``dstOffset`` of ``dst``; wait on the result. */
    proc copyTo(srcOffset: integral, dst: borrowed DataItem,
                dstOffset: integral, nbytes: integral,
                ctx: borrowed Context? = nil): owned Pending throws {
      const so = try byteOffset(srcOffset), doff = try byteOffset(dstOffset),
            n = try byteOffset(nbytes), c = ctxHandle(ctx);
      const w = if c == nil then fam_copy(handle, so, dst.handle, doff, n)
                else fam_ctx_copy(c, handle, so, dst.handle, doff, n);
      if w == nil then throw lastError("fam_copy");
      return new Pending(w, waitKind.copy);
    }

    /* Starts backing the item up as ``backupName``; wait on the result. */
    proc backup(backupName: string): owned Pending throws {
      const w = fam_backup(handle, backupName.c_str(), nil);
      if w == nil then throw lastError("fam_backup(" + backupName + ")");
      return new Pending(w, waitKind.backup);
    }

    // ---- Atomics. offset is in bytes and must be a multiple of the
    // element size. The element type follows the value's type: pass
    // 1:int(32) for a 32-bit operation; an unsupported type is a
    // compile-time error.

    /* Atomically stores ``value`` at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc set(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == int(32) {
        rc = if c == nil then fam_set_int32(handle, off, value)
             else fam_ctx_set_int32(c, handle, off, value);
      } else if t == int(64) {
        rc = if c == nil then fam_set_int64(handle, off, value)
             else fam_ctx_set_int64(c, handle, off, value);
      } else if t == uint(32) {
        rc = if c == nil then fam_set_uint32(handle, off, value)
             else fam_ctx_set_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_set_uint64(handle, off, value)
             else fam_ctx_set_uint64(c, handle, off, value);
      } else if t == real(32) {
        rc = if c == nil then fam_set_float(handle, off, value)
             else fam_ctx_set_float(c, handle, off, value);
      } else if t == real(64) {
        rc = if c == nil then fam_set_double(handle, off, value)
             else fam_ctx_set_double(c, handle, off, value);
      } else if t == Int128 {
        rc = if c == nil then fam_set_int128(handle, off, toC(value))
             else fam_ctx_set_int128(c, handle, off, toC(value));
      } else {
        compilerError("set: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), Int128, not ", t:string);
      }
      try check(rc, "set");
    }

    /* Atomically reads the ``t`` at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc fetch(type t, offset: integral, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var v: t;
      if t == int(32) {
        rc = if c == nil then fam_fetch_int32(handle, off, c_ptrTo(v))
             else fam_ctx_fetch_int32(c, handle, off, c_ptrTo(v));
      } else if t == int(64) {
        rc = if c == nil then fam_fetch_int64(handle, off, c_ptrTo(v))
             else fam_ctx_fetch_int64(c, handle, off, c_ptrTo(v));
      } else if t == uint(32) {
        rc = if c == nil then fam_fetch_uint32(handle, off, c_ptrTo(v))
             else fam_ctx_fetch_uint32(c, handle, off, c_ptrTo(v));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_uint64(handle, off, c_ptrTo(v))
             else fam_ctx_fetch_uint64(c, handle, off, c_ptrTo(v));
      } else if t == real(32) {
        rc = if c == nil then fam_fetch_float(handle, off, c_ptrTo(v))
             else fam_ctx_fetch_float(c, handle, off, c_ptrTo(v));
      } else if t == real(64) {
        rc = if c == nil then fam_fetch_double(handle, off, c_ptrTo(v))
             else fam_ctx_fetch_double(c, handle, off, c_ptrTo(v));
      } else if t == Int128 {
        var raw: fam_int128_t;
        rc = if c == nil then fam_fetch_int128(handle, off, c_ptrTo(raw))
             else fam_ctx_fetch_int128(c, handle, off, c_ptrTo(raw));
        v = fromC(raw);
      } else {
        compilerError("fetch: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), Int128, not ", t:string);
      }
      try check(rc, "fetch");
      return v;
    }

    /* Atomically adds ``value`` to the element at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc add(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == int(32) {
        rc = if c == nil then fam_add_int32(handle, off, value)
             else fam_ctx_add_int32(c, handle, off, value);
      } else if t == int(64) {
        rc = if c == nil then fam_add_int64(handle, off, value)
             else fam_ctx_add_int64(c, handle, off, value);
      } else if t == uint(32) {
        rc = if c == nil then fam_add_uint32(handle, off, value)
             else fam_ctx_add_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_add_uint64(handle, off, value)
             else fam_ctx_add_uint64(c, handle, off, value);
      } else if t == real(32) {
        rc = if c == nil then fam_add_float(handle, off, value)
             else fam_ctx_add_float(c, handle, off, value);
      } else if t == real(64) {
        rc = if c == nil then fam_add_double(handle, off, value)
             else fam_ctx_add_double(c, handle, off, value);
      } else {
        compilerError("add: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "add");
    }

    /* Atomically subtracts ``value`` from the element at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc subtract(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == int(32) {
        rc = if c == nil then fam_subtract_int32(handle, off, value)
             else fam_ctx_subtract_int32(c, handle, off, value);
      } else if t == int(64) {
        rc = if c == nil then fam_subtract_int64(handle, off, value)
             else fam_ctx_subtract_int64(c, handle, off, value);
      } else if t == uint(32) {
        rc = if c == nil then fam_subtract_uint32(handle, off, value)
             else fam_ctx_subtract_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_subtract_uint64(handle, off, value)
             else fam_ctx_subtract_uint64(c, handle, off, value);
      } else if t == real(32) {
        rc = if c == nil then fam_subtract_float(handle, off, value)
             else fam_ctx_subtract_float(c, handle, off, value);
      } else if t == real(64) {
        rc = if c == nil then fam_subtract_double(handle, off, value)
             else fam_ctx_subtract_double(c, handle, off, value);
      } else {
        compilerError("subtract: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "subtract");
    }

    /* Atomically replaces the element at byte ``offset`` by the smaller of it and ``value``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc min(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == int(32) {
        rc = if c == nil then fam_min_int32(handle, off, value)
             else fam_ctx_min_int32(c, handle, off, value);
      } else if t == int(64) {
        rc = if c == nil then fam_min_int64(handle, off, value)
             else fam_ctx_min_int64(c, handle, off, value);
      } else if t == uint(32) {
        rc = if c == nil then fam_min_uint32(handle, off, value)
             else fam_ctx_min_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_min_uint64(handle, off, value)
             else fam_ctx_min_uint64(c, handle, off, value);
      } else if t == real(32) {
        rc = if c == nil then fam_min_float(handle, off, value)
             else fam_ctx_min_float(c, handle, off, value);
      } else if t == real(64) {
        rc = if c == nil then fam_min_double(handle, off, value)
             else fam_ctx_min_double(c, handle, off, value);
      } else {
        compilerError("min: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "min");
    }

    /* Atomically replaces the element at byte ``offset`` by the larger of it and ``value``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc max(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == int(32) {
        rc = if c == nil then fam_max_int32(handle, off, value)
             else fam_ctx_max_int32(c, handle, off, value);
      } else if t == int(64) {
        rc = if c == nil then fam_max_int64(handle, off, value)
             else fam_ctx_max_int64(c, handle, off, value);
      } else if t == uint(32) {
        rc = if c == nil then fam_max_uint32(handle, off, value)
             else fam_ctx_max_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_max_uint64(handle, off, value)
             else fam_ctx_max_uint64(c, handle, off, value);
      } else if t == real(32) {
        rc = if c == nil then fam_max_float(handle, off, value)
             else fam_ctx_max_float(c, handle, off, value);
      } else if t == real(64) {
        rc = if c == nil then fam_max_double(handle, off, value)
             else fam_ctx_max_double(c, handle, off, value);
      } else {
        compilerError("max: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "max");
    }

    /* Atomically ANDs ``value`` into the element at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc and(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == uint(32) {
        rc = if c == nil then fam_and_uint32(handle, off, value)
             else fam_ctx_and_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_and_uint64(handle, off, value)
             else fam_ctx_and_uint64(c, handle, off, value);
      } else {
        compilerError("and: element type must be one of uint(32), uint(64), not ", t:string);
      }
      try check(rc, "and");
    }

    /* Atomically ORs ``value`` into the element at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc or(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == uint(32) {
        rc = if c == nil then fam_or_uint32(handle, off, value)
             else fam_ctx_or_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_or_uint64(handle, off, value)
             else fam_ctx_or_uint64(c, handle, off, value);
      } else {
        compilerError("or: element type must be one of uint(32), uint(64), not ", t:string);
      }
      try check(rc, "or");
    }

    /* Atomically XORs ``value`` into the element at byte ``offset``.
       ``ctx`` selects a context; ``nil`` uses the default one. */
    proc xor(offset: integral, value: ?t, ctx: borrowed Context? = nil) throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      if t == uint(32) {
        rc = if c == nil then fam_xor_uint32(handle, off, value)
             else fam_ctx_xor_uint32(c, handle, off, value);
      } else if t == uint(64) {
        rc = if c == nil then fam_xor_uint64(handle, off, value)
             else fam_ctx_xor_uint64(c, handle, off, value);
      } else {
        compilerError("xor: element type must be one of uint(32), uint(64), not ", t:string);
      }
      try check(rc, "xor");
    }

    /* Like :proc:`add`.
       Returns the value held before the operation. */
    proc fetchAdd(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == int(32) {
        rc = if c == nil then fam_fetch_add_int32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_add_int32(c, handle, off, value, c_ptrTo(old));
      } else if t == int(64) {
        rc = if c == nil then fam_fetch_add_int64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_add_int64(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(32) {
        rc = if c == nil then fam_fetch_add_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_add_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_add_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_add_uint64(c, handle, off, value, c_ptrTo(old));
      } else if t == real(32) {
        rc = if c == nil then fam_fetch_add_float(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_add_float(c, handle, off, value, c_ptrTo(old));
      } else if t == real(64) {
        rc = if c == nil then fam_fetch_add_double(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_add_double(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchAdd: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "fetchAdd");
      return old;
    }

    /* Like :proc:`subtract`.
       Returns the value held before the operation. */
    proc fetchSubtract(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == int(32) {
        rc = if c == nil then fam_fetch_subtract_int32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_subtract_int32(c, handle, off, value, c_ptrTo(old));
      } else if t == int(64) {
        rc = if c == nil then fam_fetch_subtract_int64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_subtract_int64(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(32) {
        rc = if c == nil then fam_fetch_subtract_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_subtract_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_subtract_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_subtract_uint64(c, handle, off, value, c_ptrTo(old));
      } else if t == real(32) {
        rc = if c == nil then fam_fetch_subtract_float(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_subtract_float(c, handle, off, value, c_ptrTo(old));
      } else if t == real(64) {
        rc = if c == nil then fam_fetch_subtract_double(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_subtract_double(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchSubtract: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "fetchSubtract");
      return old;
    }

    /* Like :proc:`min`.
       Returns the value held before the operation. */
    proc fetchMin(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == int(32) {
        rc = if c == nil then fam_fetch_min_int32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_min_int32(c, handle, off, value, c_ptrTo(old));
      } else if t == int(64) {
        rc = if c == nil then fam_fetch_min_int64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_min_int64(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(32) {
        rc = if c == nil then fam_fetch_min_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_min_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_min_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_min_uint64(c, handle, off, value, c_ptrTo(old));
      } else if t == real(32) {
        rc = if c == nil then fam_fetch_min_float(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_min_float(c, handle, off, value, c_ptrTo(old));
      } else if t == real(64) {
        rc = if c == nil then fam_fetch_min_double(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_min_double(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchMin: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "fetchMin");
      return old;
    }

    /* Like :proc:`max`.
       Returns the value held before the operation. */
    proc fetchMax(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == int(32) {
        rc = if c == nil then fam_fetch_max_int32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_max_int32(c, handle, off, value, c_ptrTo(old));
      } else if t == int(64) {
        rc = if c == nil then fam_fetch_max_int64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_max_int64(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(32) {
        rc = if c == nil then fam_fetch_max_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_max_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_max_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_max_uint64(c, handle, off, value, c_ptrTo(old));
      } else if t == real(32) {
        rc = if c == nil then fam_fetch_max_float(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_max_float(c, handle, off, value, c_ptrTo(old));
      } else if t == real(64) {
        rc = if c == nil then fam_fetch_max_double(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_max_double(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchMax: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "fetchMax");
      return old;
    }

    /* Like :proc:`and`.
       Returns the value held before the operation. */
    proc fetchAnd(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == uint(32) {
        rc = if c == nil then fam_fetch_and_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_and_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_and_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_and_uint64(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchAnd: element type must be one of uint(32), uint(64), not ", t:string);
      }
      try check(rc, "fetchAnd");
      return old;
    }

    /* Like :proc:`or`.
       Returns the value held before the operation. */
    proc fetchOr(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == uint(32) {
        rc = if c == nil then fam_fetch_or_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_or_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_or_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_or_uint64(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchOr: element type must be one of uint(32), uint(64), not ", t:string);
      }
      try check(rc, "fetchOr");
      return old;
    }

    /* Like :proc:`xor`.
       Returns the value held before the operation. */
    proc fetchXor(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == uint(32) {
        rc = if c == nil then fam_fetch_xor_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_xor_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_fetch_xor_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_fetch_xor_uint64(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("fetchXor: element type must be one of uint(32), uint(64), not ", t:string);
      }
      try check(rc, "fetchXor");
      return old;
    }

    /* Atomically stores ``value`` at byte ``offset``.
       Returns the value held before the operation. */
    proc swap(offset: integral, value: ?t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == int(32) {
        rc = if c == nil then fam_swap_int32(handle, off, value, c_ptrTo(old))
             else fam_ctx_swap_int32(c, handle, off, value, c_ptrTo(old));
      } else if t == int(64) {
        rc = if c == nil then fam_swap_int64(handle, off, value, c_ptrTo(old))
             else fam_ctx_swap_int64(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(32) {
        rc = if c == nil then fam_swap_uint32(handle, off, value, c_ptrTo(old))
             else fam_ctx_swap_uint32(c, handle, off, value, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_swap_uint64(handle, off, value, c_ptrTo(old))
             else fam_ctx_swap_uint64(c, handle, off, value, c_ptrTo(old));
      } else if t == real(32) {
        rc = if c == nil then fam_swap_float(handle, off, value, c_ptrTo(old))
             else fam_ctx_swap_float(c, handle, off, value, c_ptrTo(old));
      } else if t == real(64) {
        rc = if c == nil then fam_swap_double(handle, off, value, c_ptrTo(old))
             else fam_ctx_swap_double(c, handle, off, value, c_ptrTo(old));
      } else {
        compilerError("swap: element type must be one of int(32), int(64), uint(32), uint(64), real(32), real(64), not ", t:string);
      }
      try check(rc, "swap");
      return old;
    }

    /* Atomically stores ``desired`` at byte ``offset`` if the element there
       equals ``expected``. Returns the value held before, whether or not
       it was replaced. */
    proc compareSwap(offset: integral, expected: ?t, desired: t, ctx: borrowed Context? = nil): t throws {
      const off = try byteOffset(offset), c = ctxHandle(ctx);
      var rc: c_int;
      var old: t;
      if t == int(32) {
        rc = if c == nil then fam_compare_swap_int32(handle, off, expected, desired, c_ptrTo(old))
             else fam_ctx_compare_swap_int32(c, handle, off, expected, desired, c_ptrTo(old));
      } else if t == int(64) {
        rc = if c == nil then fam_compare_swap_int64(handle, off, expected, desired, c_ptrTo(old))
             else fam_ctx_compare_swap_int64(c, handle, off, expected, desired, c_ptrTo(old));
      } else if t == uint(32) {
        rc = if c == nil then fam_compare_swap_uint32(handle, off, expected, desired, c_ptrTo(old))
             else fam_ctx_compare_swap_uint32(c, handle, off, expected, desired, c_ptrTo(old));
      } else if t == uint(64) {
        rc = if c == nil then fam_compare_swap_uint64(handle, off, expected, desired, c_ptrTo(old))
             else fam_ctx_compare_swap_uint64(c, handle, off, expected, desired, c_ptrTo(old));
      } else if t == Int128 {
        var raw: fam_int128_t;
        rc = if c == nil then fam_compare_swap_int128(handle, off, toC(expected), toC(desired), c_ptrTo(raw))
             else fam_ctx_compare_swap_int128(c, handle, off, toC(expected), toC(desired), c_ptrTo(raw));
        old = fromC(raw);
      } else {
        compilerError("compareSwap: element type must be one of int(32), int(64), uint(32), uint(64), Int128, not ", t:string);
      }
      try check(rc, "compareSwap");
      return old;
    }
  }
}
