@striping
Feature: Regions striped over several memory servers
  A famd may run as a metadata service (role metadata) that keeps only the
  catalogue of regions and items, with the memory itself on memory servers
  that join it. A region created with default attributes (interleaving
  enabled) is striped over every memory server that has joined, in blocks of
  the service's interleave size: byte b of the region lives on server
  (b / size) mod K. fam_stat and fam_stat_region report the number of
  servers, and the interleave size. A region created with interleaving
  disabled lives whole on exactly one memory server. Clients split every
  request at block boundaries and send the pieces to their servers at once,
  so an interleaved item behaves exactly like any other: blocking and
  non-blocking transfers, atomics, gather and scatter, and copies read and
  write the bytes the program addressed, whichever servers hold them, and
  ranges are checked against the item before any server is asked.
  fam_map is not available on interleaved items (the bytes are not in one
  local file) and fails with FAM_EUNIMPL; fam_backup and fam_restore work,
  the metadata service fetching and storing the bytes on the memory
  servers. With no memory server joined, a
  metadata service cannot place a region and fam_create_region fails with
  FAM_ERESOURCE. In these scenarios the famd and its memory servers run in
  the test process on real sockets, with 4 KiB blocks so that short items
  span several servers.

  Background:
    Given an OpenFAM instance served by a famd with 3 memory servers and an interleave size of 4 KiB
    And I create region "wide" of 1 MiB with mode 0600
    And I allocate item "span" of 20000 bytes with mode 0600 in region "wide"

  Scenario: a region with default attributes is striped over every memory server
    Then region "wide" has
      | field          | value   |
      | interleave     | enabled |
      | memory servers | 3       |
    And item "span" has
      | field          | value |
      | size           | 20000 |
      | memory servers | 3     |

  Scenario: stat reports the interleave size of the metadata service
    Then region "wide" has
      | field           | value |
      | interleave size | 4096  |
    And item "span" has
      | field           | value |
      | interleave size | 4096  |

  Scenario: a region with interleaving disabled lives on exactly one memory server
    When I create region "narrow" of 64 KiB with mode 0600 and interleaving disabled
    And I allocate item "whole" of 10000 bytes with mode 0600 in region "narrow"
    And I put 10000 bytes of "n" at offset 0 of item "whole"
    Then region "narrow" has
      | field          | value    |
      | interleave     | disabled |
      | memory servers | 1        |
    And reading 10000 bytes at offset 0 of item "whole" gives 10000 bytes of "n"

  Scenario: an item of several blocks reads back whole, and fresh bytes are zero
    Given reading 20000 bytes at offset 0 of item "span" gives 20000 zero bytes
    When I put 20000 bytes of "s" at offset 0 of item "span"
    Then reading 20000 bytes at offset 0 of item "span" gives 20000 bytes of "s"

  Scenario: each block keeps its own bytes, on whichever server holds it
    When I put 4096 bytes of "a" at offset 0 of item "span"
    And I put 4096 bytes of "b" at offset 4096 of item "span"
    And I put 4096 bytes of "c" at offset 8192 of item "span"
    And I put 4096 bytes of "d" at offset 12288 of item "span"
    Then reading 8 bytes at offset 4092 of item "span" gives "aaaabbbb"
    And reading 8 bytes at offset 8188 of item "span" gives "bbbbcccc"
    And reading 8 bytes at offset 12284 of item "span" gives "ccccdddd"
    And reading 4 bytes at offset 16380 of item "span" gives "dddd"
    And reading 4 bytes at offset 16384 of item "span" gives 4 zero bytes

  Scenario: unaligned ranges crossing block boundaries change only their bytes
    When I put "across-the-boundary" at offset 4090 of item "span"
    And I put 10000 bytes of "u" at offset 6000 of item "span"
    Then reading 19 bytes at offset 4090 of item "span" gives "across-the-boundary"
    And reading 6 bytes at offset 4090 of item "span" gives "across"
    And reading 13 bytes at offset 4096 of item "span" gives "-the-boundary"
    And reading 100 bytes at offset 5900 of item "span" gives 100 zero bytes
    And reading 10000 bytes at offset 6000 of item "span" gives 10000 bytes of "u"
    And reading 4000 bytes at offset 16000 of item "span" gives 4000 zero bytes

  Scenario: non-blocking transfers across blocks complete by quiet
    When I put 9000 bytes of "q" at offset 100 of item "span" non-blocking
    And I quiet
    And I get 9000 bytes at offset 100 of item "span" into buffer "back" non-blocking
    And I quiet
    Then buffer "back" holds 9000 bytes of "q"
    And reading 100 bytes at offset 0 of item "span" gives 100 zero bytes
    And reading 100 bytes at offset 9100 of item "span" gives 100 zero bytes

  Scenario Outline: a fence orders non-blocking puts whichever servers they go to (round <round>)
    When I put 20000 bytes of "o" at offset 0 of item "span" non-blocking
    And I fence
    And I put 20000 bytes of "<new>" at offset 0 of item "span" non-blocking
    And I fence
    And I get 20000 bytes at offset 0 of item "span" into buffer "after"
    Then buffer "after" holds 20000 bytes of "<new>"
    And I quiet

    Examples:
      | round | new |
      | 1     | a   |
      | 2     | b   |
      | 3     | c   |
      | 4     | d   |
      | 5     | e   |

  Scenario: atomics reach words in different blocks
    Given item "span" holds the int64 40 at offset 4096
    And item "span" holds the int64 5 at offset 8192
    When I apply fetch_add to the int64 at offset 4096 of item "span" with 2
    Then the atomic returned 40
    And the int64 at offset 4096 of item "span" is 42
    When I compare and swap the int64 at offset 8192 of item "span" expecting 5 with -9
    Then the atomic returned 5
    And the int64 at offset 8192 of item "span" is -9
    When I compare and swap the int64 at offset 12288 of item "span" expecting 1 with 77
    Then the atomic returned 0
    And the int64 at offset 12288 of item "span" is 0
    When I apply add to the int64 at offset 19992 of item "span" with 3
    Then the int64 at offset 19992 of item "span" is 3
    And the int64 at offset 0 of item "span" is 0

  Scenario: strided gather and scatter take one element from each block
    When I scatter "AAAABBBBCCCCDDDD" as 4 elements of 4 bytes into item "span" starting at element 1023 with stride 1024
    Then reading 4 bytes at offset 4092 of item "span" gives "AAAA"
    And reading 4 bytes at offset 4096 of item "span" gives 4 zero bytes
    And reading 4 bytes at offset 8188 of item "span" gives "BBBB"
    And reading 4 bytes at offset 16380 of item "span" gives "DDDD"
    When I gather 3 elements of 4 bytes from item "span" starting at element 2047 with stride 1024 into buffer "g"
    Then buffer "g" holds "BBBBCCCCDDDD"

  Scenario: indexed gather and scatter follow their index across blocks
    When I scatter "11223344" to elements 4999, 0, 2048, 6144 of 2 bytes of item "span"
    Then reading 2 bytes at offset 9998 of item "span" gives "11"
    And reading 2 bytes at offset 0 of item "span" gives "22"
    And reading 2 bytes at offset 4096 of item "span" gives "33"
    And reading 2 bytes at offset 12288 of item "span" gives "44"
    When I gather elements 6144, 2048, 4999, 0 of 2 bytes from item "span" into buffer "g"
    Then buffer "g" holds "44331122"

  Scenario: a copy between interleaved items moves every block
    Given I allocate item "dst" of 20000 bytes with mode 0600 in region "wide"
    And I put 8192 bytes of "x" at offset 0 of item "span"
    And I put 8192 bytes of "y" at offset 8192 of item "span"
    When I copy 12000 bytes from offset 2000 of item "span" to offset 3001 of item "dst"
    And I wait for the copy
    Then reading 3001 bytes at offset 0 of item "dst" gives 3001 zero bytes
    And reading 6192 bytes at offset 3001 of item "dst" gives 6192 bytes of "x"
    And reading 5808 bytes at offset 9193 of item "dst" gives 5808 bytes of "y"
    And reading 4999 bytes at offset 15001 of item "dst" gives 4999 zero bytes

  Scenario: a copy from an interleaved item to one on a single server
    Given I create region "narrow" of 64 KiB with mode 0600 and interleaving disabled
    And I allocate item "one" of 10000 bytes with mode 0600 in region "narrow"
    And I put "from-three-servers" at offset 4088 of item "span"
    When I copy 18 bytes from offset 4088 of item "span" to offset 9000 of item "one"
    And I wait for the copy
    Then reading 18 bytes at offset 9000 of item "one" gives "from-three-servers"

  Scenario: an interleaved item cannot be mapped
    When I try to map item "span"
    Then it fails with FAM_EUNIMPL

  Scenario: an interleaved item is backed up and restored across every server
    Given I put "first block" at offset 10 of item "span"
    And I put "across a boundary" at offset 4090 of item "span"
    And I put "last block" at offset 19990 of item "span"
    When I back up item "span" as "span-backup"
    And I put "overwritten" at offset 10 of item "span"
    And I restore backup "span-backup" into item "span"
    Then reading 11 bytes at offset 10 of item "span" gives "first block"
    And reading 17 bytes at offset 4090 of item "span" gives "across a boundary"
    When I restore backup "span-backup" as a new item "span2" with mode 0600 in region "wide"
    Then reading 10 bytes at offset 19990 of item "span2" gives "last block"
    And reading 17 bytes at offset 4090 of item "span2" gives "across a boundary"

  # Read-only for a user the mode binds (the owner is bound by none, as in
  # OpenFAM): this instance, a group member of the owner, who is user 7031
  # over TCP.
  Scenario: a read-only item refuses puts on every server and still reads
    Given an OpenFAM instance served by a famd with 3 memory servers and an interleave size of 4 KiB, beside user 7031 of my group over TCP
    And user 7031 creates region "perm" of 64 KiB with mode 0770 and data item-level permissions
    And user 7031 allocates item "doc" of 12000 bytes with mode 0660 in region "perm"
    And I look up item "doc" in region "perm"
    And I put 12000 bytes of "w" at offset 0 of item "doc"
    When user 7031 changes the permissions of item "doc" to 0640
    And I look up item "doc" in region "perm" as "doc-ro"
    And I try to put "late" at offset 4094 of item "doc-ro"
    Then it fails with FAM_ENOPERM
    When I try to put "late" at offset 8200 of item "doc-ro"
    Then it fails with FAM_ENOPERM
    And reading 12000 bytes at offset 0 of item "doc-ro" gives 12000 bytes of "w"
    When user 7031 changes the permissions of item "doc" to 0400
    Then user 7031 puts "owner" at offset 4094 of item "doc"
    And user 7031 reads "owner" at offset 4094 of item "doc"

  Scenario: ranges past the end of an interleaved item are refused
    When I try to put "xy" at offset 19999 of item "span"
    Then it fails with FAM_ERANGE
    When I try to get 20001 bytes at offset 0 of item "span" into buffer "b"
    Then it fails with FAM_ERANGE
    When I try to gather 2 elements of 4 bytes from item "span" starting at element 4999 with stride 1 into buffer "g"
    Then it fails with FAM_ERANGE
    And reading 4 bytes at offset 19996 of item "span" gives 4 zero bytes
