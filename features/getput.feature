@getput
Feature: Get and put
  fam_put_blocking copies n bytes from a local buffer to a data item at a byte
  offset, and fam_get_blocking copies them back; both return when the copy is
  done. The range [offset, offset + n) must lie inside the item, n must be
  at least 1, and a range that does not fit fails with FAM_ERANGE without
  touching the item or the buffer. The non-blocking forms start the same
  transfer; the local buffer belongs to the library until fam_quiet returns,
  and the data is in place after it. Every form exists on the default
  context and on an explicit context, and behaves the same on an embedded
  instance and on one served by famd.

  Background:
    Given an OpenFAM instance
    And I create region "data" of 1 MiB with mode 0600
    And I allocate item "blk" of 4096 bytes with mode 0600 in region "data"

  Scenario: a put is read back by a get
    When I put "hello, fabric" at offset 100 of item "blk"
    Then reading 13 bytes at offset 100 of item "blk" gives "hello, fabric"
    And reading 4 bytes at offset 96 of item "blk" gives 4 zero bytes

  Scenario: the first and the last byte of an item are addressable
    When I put "A" at offset 0 of item "blk"
    And I put "Z" at offset 4095 of item "blk"
    Then reading 1 bytes at offset 0 of item "blk" gives "A"
    And reading 1 bytes at offset 4095 of item "blk" gives "Z"

  Scenario: the whole item moves in one transfer
    When I put 4096 bytes of "w" at offset 0 of item "blk"
    Then reading 4096 bytes at offset 0 of item "blk" gives 4096 bytes of "w"

  Scenario: a later put overwrites part of an earlier one
    When I put "aaaaaaaa" at offset 8 of item "blk"
    And I put "BB" at offset 11 of item "blk"
    Then reading 8 bytes at offset 8 of item "blk" gives "aaaBBaaa"

  Scenario Outline: a range that ends past the item fails and changes nothing
    Given I put 4096 bytes of "k" at offset 0 of item "blk"
    When I try to put "<data>" at offset <offset> of item "blk"
    Then it fails with FAM_ERANGE
    And reading 4096 bytes at offset 0 of item "blk" gives 4096 bytes of "k"

    Examples:
      | data | offset |
      | xy   | 4095   |
      | x    | 4096   |
      | x    | 10000  |

  Scenario: a get past the end fails and leaves the buffer alone
    When I try to get 2 bytes at offset 4095 of item "blk" into buffer "b"
    Then it fails with FAM_ERANGE
    And buffer "b" holds 2 zero bytes

  Scenario: non-blocking puts and gets complete by quiet
    When I put "first" at offset 0 of item "blk" non-blocking
    And I put "second" at offset 2000 of item "blk" non-blocking
    And I quiet
    And I get 6 bytes at offset 2000 of item "blk" into buffer "nb" non-blocking
    And I quiet
    Then buffer "nb" holds "second"
    And reading 5 bytes at offset 0 of item "blk" gives "first"

  Scenario: get and put on an explicit context
    Given I open context "c1"
    When I put "on c1" at offset 50 of item "blk" on context "c1"
    And I get 5 bytes at offset 50 of item "blk" into buffer "b1" on context "c1"
    Then buffer "b1" holds "on c1"
    And I close context "c1"

  Scenario: get and put through famd over TCP
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over TCP
    And I create region "net" of 64 KiB with mode 0600
    And I allocate item "n1" of 8192 bytes with mode 0600 in region "net"
    When I put "across the network" at offset 4000 of item "n1"
    And I put 3000 bytes of "m" at offset 5000 of item "n1" non-blocking
    And I quiet
    Then reading 18 bytes at offset 4000 of item "n1" gives "across the network"
    And reading 3000 bytes at offset 5000 of item "n1" gives 3000 bytes of "m"
    When I try to put "xy" at offset 8191 of item "n1"
    Then it fails with FAM_ERANGE
