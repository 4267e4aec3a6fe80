@gather_scatter
Feature: Gather and scatter
  Gather reads n elements of elem_size bytes from a data item into a dense
  local buffer; scatter writes n dense elements to the item. In the strided
  form element i lives at byte (first + i * stride) * elem_size of the item;
  in the indexed form at byte index[i] * elem_size. Element i of the local
  buffer is at byte i * elem_size. n and elem_size must be at least 1. If any
  element falls outside the item, or its position overflows 64 bits, the call
  fails with FAM_ERANGE and no element is read or written. Each form has a
  blocking and a non-blocking variant (complete after fam_quiet), on the
  default context and on an explicit one.

  Background:
    Given an OpenFAM instance
    And I create region "vec" of 64 KiB with mode 0600
    And I allocate item "row" of 16 bytes with mode 0600 in region "vec"
    And I put "ABCDEFGHIJKLMNOP" at offset 0 of item "row"

  Scenario: a strided gather takes every other pair of bytes
    When I gather 3 elements of 2 bytes from item "row" starting at element 1 with stride 2 into buffer "g"
    Then buffer "g" holds "CDGHKL"

  Scenario: a stride of 1 gathers a contiguous run
    When I gather 4 elements of 1 byte from item "row" starting at element 12 with stride 1 into buffer "g"
    Then buffer "g" holds "MNOP"

  Scenario: a strided scatter writes only its elements
    When I scatter "wxyz" as 2 elements of 2 bytes into item "row" starting at element 0 with stride 4
    Then reading 16 bytes at offset 0 of item "row" gives "wxCDEFGHyzKLMNOP"

  Scenario: an indexed gather follows the index order
    When I gather elements 3, 0, 2 of 4 bytes from item "row" into buffer "g"
    Then buffer "g" holds "MNOPABCDIJKL"

  Scenario: an indexed scatter writes each element where its index says
    When I scatter "12345678" to elements 7, 0, 3, 5 of 2 bytes of item "row"
    Then reading 16 bytes at offset 0 of item "row" gives "34CDEF56IJ78MN12"

  Scenario: non-blocking gather and scatter complete by quiet
    When I scatter "ab" as 2 elements of 1 byte into item "row" starting at element 14 with stride 1 non-blocking
    And I quiet
    And I gather elements 15, 14 of 1 byte from item "row" into buffer "g" non-blocking
    And I quiet
    Then buffer "g" holds "ba"

  Scenario: gather and scatter on an explicit context
    Given I open context "gs"
    When I scatter "QR" to element 0 of 2 bytes of item "row" on context "gs"
    And I gather 2 elements of 2 bytes from item "row" starting at element 0 with stride 1 into buffer "g" on context "gs"
    And I quiet context "gs"
    Then buffer "g" holds "QRCD"

  Scenario Outline: a strided element out of range fails and writes nothing
    When I try to scatter "<data>" as <n> elements of <size> bytes into item "row" starting at element <first> with stride <stride>
    Then it fails with FAM_ERANGE
    And reading 16 bytes at offset 0 of item "row" gives "ABCDEFGHIJKLMNOP"

    Examples:
      | data     | n | size | first               | stride               |
      | zzzz     | 2 | 2    | 6                   | 2                    |
      | zz       | 2 | 1    | 0                   | 16                   |
      | zzzzzzzz | 2 | 4    | 3                   | 1                    |
      | zz       | 2 | 1    | 1                   | 18446744073709551615 |
      | zz       | 1 | 2    | 9223372036854775808 | 1                    |

  Scenario: an indexed element out of range fails and reads nothing
    When I try to gather elements 1, 4 of 4 bytes from item "row" into buffer "g"
    Then it fails with FAM_ERANGE
    And buffer "g" holds 8 zero bytes

  Scenario: an indexed scatter with one bad index writes nothing
    When I try to scatter "!!??" to elements 0, 16 of 2 bytes of item "row"
    Then it fails with FAM_ERANGE
    And reading 16 bytes at offset 0 of item "row" gives "ABCDEFGHIJKLMNOP"

  Scenario: zero elements or zero-sized elements are rejected
    When I try to gather 0 elements of 2 bytes from item "row" starting at element 0 with stride 1 into buffer "g"
    Then it fails with FAM_EINVAL
    When I try to gather 2 elements of 0 bytes from item "row" starting at element 0 with stride 1 into buffer "g"
    Then it fails with FAM_EINVAL

  Scenario: gather and scatter through famd over TCP
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over TCP
    And I create region "netvec" of 64 KiB with mode 0600
    And I allocate item "nrow" of 16 bytes with mode 0600 in region "netvec"
    And I put "abcdefghijklmnop" at offset 0 of item "nrow"
    When I scatter "XY" to elements 15, 0 of 1 byte of item "nrow"
    And I gather 4 elements of 2 bytes from item "nrow" starting at element 0 with stride 2 into buffer "g"
    Then buffer "g" holds "Ybefijmn"
    When I try to gather elements 0, 8 of 2 bytes from item "nrow" into buffer "h"
    Then it fails with FAM_ERANGE
