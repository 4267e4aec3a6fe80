"""Tests of md2man (run by make test-install: python3 docs/man/md2man_test.py)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import md2man  # noqa: E402


def page(body):
    return md2man.convert("# tool(1) -- does things\n\n" + body, "1.0", "2026-01-01", "test.md")


class Md2ManTest(unittest.TestCase):
    def test_header_and_name(self):
        out = page("")
        self.assertTrue(out.startswith('.TH "TOOL" "1" "2026-01-01" "OpenFAM 1.0" "OpenFAM Manual"\n.SH NAME\ntool \\- does things\n'))

    def test_roff_specials_are_escaped(self):
        # A backslash is printed, not read as an escape; a line starting with
        # a dot or a quote is text, not a request.
        out = page("a \\n b\n.so /etc/passwd\n'x\n")
        self.assertIn("a \\en b", out)
        self.assertIn("\\&.so /etc/passwd", out)
        self.assertIn("\\&'x", out)
        self.assertNotIn("\n.so", out)

    def test_inline_fonts(self):
        out = page("use `--data-dir` with **bold** and *DIR*\n")
        self.assertIn("use \\fB\\-\\-data\\-dir\\fR with \\fBbold\\fR and \\fIDIR\\fR", out)

    def test_definition_list(self):
        out = page("`--x` *N*\n:   first line\n    second line\n")
        self.assertIn(".TP\n\\fB\\-\\-x\\fR \\fIN\\fR\nfirst line\nsecond line\n", out)

    def test_literal_block(self):
        out = page("```\n.not a request\nprintf(\"\\n\");\n```\n")
        self.assertIn(".nf\n\\&.not a request\n\\&printf(\"\\en\");\n.fi", out)

    def test_sections(self):
        out = page("## options\n### Sub part\n")
        self.assertIn('.SH "OPTIONS"\n.SS "Sub part"', out)

    def test_errors(self):
        for bad in ["no title\n", "# tool -- no section\n", "# tool(1) -- x\n```\nopen\n", "# tool(1) -- x\n# again\n"]:
            with self.assertRaises(ValueError, msg=bad):
                md2man.convert(bad, "1.0", "2026-01-01", "bad.md")


if __name__ == "__main__":
    unittest.main()
