@items
Feature: Data items and names
  A data item is a block of a region, allocated by fam_allocate with a size in
  bytes, mode bits and a name that is unique within its region (1 to 255 bytes)
  or no name at all. Its bytes start zeroed. fam_lookup finds a named item by
  item and region name; an unnamed item is reachable only through its global
  descriptor {region id, offset}, which fam_desc_global reports and
  fam_desc_from_global turns into a handle in any process, resolved on first
  use. fam_close releases one handle and leaves the item; fam_deallocate frees
  the item, its name and every handle on it, after which the name may be
  used again.

  Background:
    Given an OpenFAM instance
    And I create region "store" of 1 MiB with mode 0600

  Scenario: a new item has its size, mode and name, and zeroed bytes
    When I allocate item "rec" of 4096 bytes with mode 0640 in region "store"
    Then item "rec" has
      | field | value |
      | size  | 4096  |
      | mode  | 0640  |
      | name  | rec   |
      | owner | me    |
    And reading 4096 bytes at offset 0 of item "rec" gives 4096 zero bytes

  Scenario: a named item is found by name
    Given I allocate item "named" of 128 bytes with mode 0600 in region "store"
    And I put "found by name" at offset 7 of item "named"
    When I look up item "named" in region "store" as "again"
    Then reading 13 bytes at offset 7 of item "again" gives "found by name"
    And item "again" has
      | field | value |
      | size  | 128   |

  Scenario: an unnamed item is reached through its global descriptor
    Given I allocate an unnamed item "anon" of 256 bytes with mode 0600 in region "store"
    And I put "no name" at offset 0 of item "anon"
    And I note the global descriptor of item "anon"
    When I open item "anon-g" from the global descriptor of item "anon"
    Then reading 7 bytes at offset 0 of item "anon-g" gives "no name"
    And item "anon-g" has
      | field | value |
      | name  |       |
      | size  | 256   |

  Scenario: a looked-up item has the same global descriptor
    Given I allocate item "gd" of 64 bytes with mode 0600 in region "store"
    And I look up item "gd" in region "store" as "gd2"
    When I note the global descriptor of item "gd"
    And I note the global descriptor of item "gd2"
    Then items "gd" and "gd2" have the same global descriptor

  Scenario: item names are unique within a region
    Given I allocate item "dup" of 64 bytes with mode 0600 in region "store"
    When I try to allocate item "dup" of 64 bytes with mode 0600 in region "store"
    Then it fails with FAM_EEXIST

  Scenario: the same item name may be used in two regions
    Given I create region "other" of 64 KiB with mode 0600
    And I allocate item "same" of 64 bytes with mode 0600 in region "store"
    When I allocate item "same" of 32 bytes with mode 0600 in region "other"
    Then item "same" has
      | field | value |
      | size  | 32    |

  Scenario: closing a handle leaves the item
    Given I allocate item "kept" of 64 bytes with mode 0600 in region "store"
    And I put "still here" at offset 0 of item "kept"
    When I close item "kept"
    And I look up item "kept" in region "store"
    Then reading 10 bytes at offset 0 of item "kept" gives "still here"

  Scenario: deallocating frees the name and releases every handle
    Given I allocate item "gone" of 64 bytes with mode 0600 in region "store"
    And I look up item "gone" in region "store" as "gone2"
    When I deallocate item "gone"
    And I try to look up item "gone" in region "store"
    Then it fails with FAM_ENOTFOUND
    When I try to get 4 bytes at offset 0 of item "gone2" into buffer "b"
    Then it fails with FAM_EINVAL
    When I allocate item "gone" of 64 bytes with mode 0600 in region "store"
    Then reading 64 bytes at offset 0 of item "gone" gives 64 zero bytes

  Scenario: freed space is reused, and reused space starts zeroed
    Given I create region "small" of 8192 bytes with mode 0600
    And I allocate item "a" of 8192 bytes with mode 0600 in region "small"
    And I put 8192 bytes of "Q" at offset 0 of item "a"
    When I deallocate item "a"
    And I allocate item "b" of 8192 bytes with mode 0600 in region "small"
    Then reading 8192 bytes at offset 0 of item "b" gives 8192 zero bytes

  Scenario: a global descriptor of a deallocated item fails on first use
    Given I allocate item "ghost" of 64 bytes with mode 0600 in region "store"
    And I note the global descriptor of item "ghost"
    And I deallocate item "ghost"
    When I open item "ghost-g" from the global descriptor of item "ghost"
    And I try to stat item "ghost-g"
    Then it fails with FAM_ENOTFOUND

  Scenario: an item is mapped into the process and shares its bytes
    Given I allocate item "mapped" of 4096 bytes with mode 0600 in region "store"
    And I put "via put" at offset 10 of item "mapped"
    When I map item "mapped"
    Then the mapping of item "mapped" reads at offset 10 "via put"
    When I write "via map" at offset 200 through the mapping of item "mapped"
    Then reading 7 bytes at offset 200 of item "mapped" gives "via map"
    And I unmap item "mapped"

  Scenario: items allocated through a famd are shared through it
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix
    And I create region "served" of 64 KiB with mode 0600
    When I allocate item "s1" of 100 bytes with mode 0600 in region "served"
    And I put "over the socket" at offset 0 of item "s1"
    And I look up item "s1" in region "served" as "s1b"
    Then reading 15 bytes at offset 0 of item "s1b" gives "over the socket"
