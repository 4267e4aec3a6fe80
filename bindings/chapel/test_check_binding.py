"""Self-tests of check_binding.py.

Each test copies the real header and module into a temporary directory,
changes one thing in the copy, and runs the checker on the pair. The real
files are never modified. Run: python3 -m unittest discover -s bindings/chapel
"""

import re
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADER = os.path.join(ROOT, "include", "openfam.h")
MODULE = os.path.join(HERE, "OpenFAM.chpl")
CHECKER = os.path.join(HERE, "check_binding.py")
CC = os.environ.get("CC") or "gcc"

sys.path.insert(0, HERE)
import check_binding  # noqa: E402


class MutationTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="chapel-check-")
        self.header = os.path.join(self.tmp, "include", "openfam.h")
        self.module = os.path.join(self.tmp, "OpenFAM.chpl")
        os.makedirs(os.path.dirname(self.header))
        shutil.copy(HEADER, self.header)
        shutil.copy(MODULE, self.module)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, path, old, new):
        """Replaces the one occurrence of old in the copy at path."""
        with open(path) as f:
            text = f.read()
        self.assertEqual(text.count(old), 1,
                         f"test fixture: {old!r} not found exactly once")
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def problems(self):
        return check_binding.check(self.header, self.module, CC)[2]

    def assertFlags(self, *fragments):
        """The checker must fail, naming every fragment in one message."""
        probs = self.problems()
        self.assertTrue(probs, "checker accepted a mismatched pair")
        for frag in fragments:
            self.assertTrue(any(frag in p for p in probs),
                            f"no problem mentions {frag!r}: {probs}")
        return probs

    def run_cli(self):
        return subprocess.run(
            [sys.executable, CHECKER, "--header", self.header,
             "--module", self.module, "--cc", CC],
            capture_output=True, text=True)

    # ---- the unmodified pair

    def test_unmodified_pair_passes(self):
        hdr, mod, probs = check_binding.check(self.header, self.module, CC)
        self.assertEqual(probs, [])
        # Every prototype line of the header is a function the checker found.
        with open(self.header) as fh:
            protos = [l for l in fh if re.match(r"^[a-z][\w *]*\bfam_\w+\(.*\);$", l)]
        self.assertEqual(len(hdr.funcs), len(protos))
        self.assertEqual({p.cname for p in mod.procs},
                         set(hdr.funcs) | {"free"})
        res = self.run_cli()
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn(f"OK: {len(protos)} functions", res.stdout)

    # ---- header mutations

    def test_removed_function_fails(self):
        self.edit(self.header, "int fam_fence(void);\n", "")
        self.assertFlags("fam_fence", "no prototype in the header")
        res = self.run_cli()
        self.assertEqual(res.returncode, 1)
        self.assertIn("fam_fence", res.stderr)

    def test_added_function_fails(self):
        self.edit(self.header, "int fam_fence(void);\n",
                  "int fam_fence(void);\nint fam_fence_all(int how);\n")
        self.assertFlags("fam_fence_all: in the header but no extern proc")

    def test_changed_parameter_type_fails(self):
        self.edit(self.header,
                  "int fam_resize_region(fam_region_t *r, uint64_t nbytes);",
                  "int fam_resize_region(fam_region_t *r, uint32_t nbytes);")
        self.assertFlags("fam_resize_region: parameter 2", "'uint(32)'")

    def test_changed_constness_fails(self):
        self.edit(self.header,
                  "fam_region_t *fam_lookup_region(const char *name);",
                  "fam_region_t *fam_lookup_region(char *name);")
        self.assertFlags("fam_lookup_region: parameter 1", "'c_ptr(c_char)'")

    def test_changed_pointer_depth_fails(self):
        self.edit(self.header, "mode_t perm, fam_desc_t **out);",
                  "mode_t perm, fam_desc_t *out);")
        self.assertFlags("fam_restore_region: parameter 5",
                         "'c_ptr(fam_desc_t)'")

    def test_changed_return_type_fails(self):
        self.edit(self.header, "uint64_t fam_progress(void);",
                  "int fam_progress(void);")
        self.assertFlags("fam_progress: return type", "'c_int'")

    def test_void_return_fails(self):
        self.edit(self.header, "int fam_barrier_all(void);",
                  "void fam_barrier_all(void);")
        self.assertFlags("fam_barrier_all: return type")

    def test_added_parameter_fails(self):
        self.edit(self.header, "int fam_abort(int status);",
                  "int fam_abort(int status, int flags);")
        self.assertFlags("fam_abort: 1 parameters in the module, 2 in the "
                         "header")

    def test_reordered_parameters_fail(self):
        self.edit(self.header,
                  "fam_desc_t *fam_allocate(const char *name, uint64_t "
                  "nbytes, mode_t perm, fam_region_t *r);",
                  "fam_desc_t *fam_allocate(const char *name, mode_t perm, "
                  "uint64_t nbytes, fam_region_t *r);")
        self.assertFlags("fam_allocate: parameter 2", "fam_allocate: "
                         "parameter 3")

    def test_unmappable_type_fails(self):
        self.edit(self.header, "int fam_abort(int status);",
                  "int fam_abort(long double status);")
        self.assertFlags("fam_abort: parameter 1", "no Chapel mapping")

    def test_struct_field_change_fails(self):
        self.edit(self.header, "    uint32_t uid;\n", "    uint64_t uid;\n")
        self.assertFlags("struct fam_stat_t")

    def test_struct_array_size_change_fails(self):
        self.edit(self.header, "memory_servers[256];",
                  "memory_servers[128];")
        self.assertFlags("struct fam_stat_t")

    def test_constant_value_change_fails(self):
        self.edit(self.header, "#define FAM_EINVAL 4\n",
                  "#define FAM_EINVAL 40\n")
        self.assertFlags("constant FAM_EINVAL")

    def test_new_enum_constant_fails(self):
        self.edit(self.header, "    FAM_MEMORY_PERSISTENT\n",
                  "    FAM_MEMORY_PERSISTENT,\n    FAM_MEMORY_CXL\n")
        self.assertFlags("constant FAM_MEMORY_CXL")

    def test_enum_renumbering_fails(self):
        self.edit(self.header, "FAM_INTERLEAVE_DEFAULT = 0,",
                  "FAM_INTERLEAVE_DEFAULT = 1,")
        self.assertFlags("constant FAM_INTERLEAVE_ENABLE")

    def test_opaque_handle_made_scalar_fails(self):
        self.edit(self.header, "typedef struct fam_ctx fam_ctx_t;",
                  "typedef uint64_t fam_ctx_t;")
        self.assertFlags("type fam_ctx_t")

    def test_unreadable_header_construct_fails(self):
        self.edit(self.header, "int fam_fence(void);",
                  "int fam_fence(void);\nextern int fam_debug_level;")
        self.assertFlags("unsupported declaration")

    def test_variadic_function_fails(self):
        self.edit(self.header, "int fam_abort(int status);",
                  "int fam_abort(int status, ...);")
        self.assertFlags("variadic")

    def test_preprocessor_conditionals_are_honoured(self):
        # A function hidden by #if 0 is not part of the C interface, so its
        # extern becomes an extra one.
        self.edit(self.header, "int fam_fence(void);",
                  "#if 0\nint fam_fence(void);\n#endif")
        self.assertFlags("fam_fence", "no prototype in the header")

    # ---- module mutations

    def test_missing_extern_fails(self):
        self.edit(self.module, "  extern proc fam_quiet(): c_int;\n", "")
        self.assertFlags("fam_quiet: in the header but no extern proc")

    def test_duplicate_extern_fails(self):
        self.edit(self.module, "  extern proc fam_quiet(): c_int;\n",
                  "  extern proc fam_quiet(): c_int;\n"
                  "  extern proc fam_quiet(): c_int;\n")
        self.assertFlags("second extern for fam_quiet")

    def test_ref_intent_fails(self):
        self.edit(self.module,
                  "extern proc fam_stat(d: c_ptr(fam_desc_t), "
                  "outp: c_ptr(fam_stat_t)): c_int;",
                  "extern proc fam_stat(d: c_ptr(fam_desc_t), "
                  "ref outp: fam_stat_t): c_int;")
        self.assertFlags("fam_stat: parameter 2", "intent 'ref'")

    def test_reserved_parameter_name_fails(self):
        self.edit(self.module,
                  "extern proc fam_get_blocking(buf: c_ptr(void)",
                  "extern proc fam_get_blocking(local: c_ptr(void)")
        self.assertFlags("'local' is a Chapel reserved word")

    def test_int_for_c_int_fails(self):
        self.edit(self.module, "extern proc fam_abort(status: c_int): c_int;",
                  "extern proc fam_abort(status: int): c_int;")
        self.assertFlags("fam_abort: parameter 1", "needs 'c_int'")

    def test_missing_require_fails(self):
        self.edit(self.module, 'require "openfam.h", "-lopenfam";',
                  'require "openfam.h";')
        self.assertFlags("'-lopenfam'")

    def test_wrong_libc_free_signature_fails(self):
        self.edit(self.module,
                  'extern "free" proc libcFree(ptr: c_ptr(void));',
                  'extern "free" proc libcFree(ptr: c_ptr(c_char));')
        self.assertFlags("free: libc extern")

    def test_extern_inside_comment_is_ignored(self):
        # Commenting an extern out removes it, it must not count.
        self.edit(self.module, "  extern proc fam_quiet(): c_int;\n",
                  "  // extern proc fam_quiet(): c_int;\n"
                  "  /* extern proc fam_quiet(): c_int; */\n")
        self.assertFlags("fam_quiet: in the header but no extern proc")


if __name__ == "__main__":
    unittest.main()
