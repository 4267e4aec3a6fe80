@persistence
Feature: Persistence and restart
  Regions and items outlive the processes that use them. Everything an
  instance created - regions, items, their names, modes, global descriptors
  and bytes - is there again after fam_finalize and a new fam_initialize on
  the same data directory. A persistent region lives in a file of the data
  directory and survives a reboot; a volatile region lives on tmpfs and
  survives processes but not a reboot. A famd stopped and started again on
  the same data directory serves the same regions and items to new clients.

  Scenario: a persistent region survives finalize and initialize
    Given an OpenFAM instance
    And I create region "durable" of 64 KiB with mode 0640 and persistent memory
    And I allocate item "journal" of 4096 bytes with mode 0600 in region "durable"
    And I put "written before finalize" at offset 1000 of item "journal"
    And I note the global descriptor of item "journal"
    When I finalize and initialize OpenFAM again
    And I look up region "durable"
    And I look up item "journal" in region "durable" as "journal2"
    Then reading 23 bytes at offset 1000 of item "journal2" gives "written before finalize"
    And region "durable" has
      | field  | value      |
      | size   | 65536      |
      | mode   | 0640       |
      | memory | persistent |
    When I note the global descriptor of item "journal2"
    Then items "journal" and "journal2" have the same global descriptor

  Scenario: a volatile region survives finalize and initialize in the same boot
    Given an OpenFAM instance
    And I create region "scratch" of 64 KiB with mode 0600 and volatile memory
    And I allocate item "tmp" of 128 bytes with mode 0600 in region "scratch"
    And I apply set to the uint64 at offset 8 of item "tmp" with 777
    When I finalize and initialize OpenFAM again
    And I look up item "tmp" in region "scratch"
    Then the uint64 at offset 8 of item "tmp" is 777

  Scenario: handles from before finalize are not valid after initialize
    Given an OpenFAM instance
    And I create region "stale" of 64 KiB with mode 0600 and persistent memory
    And I allocate item "old" of 64 bytes with mode 0600 in region "stale"
    When I finalize and initialize OpenFAM again
    And I try to put "x" at offset 0 of item "old"
    Then it fails with FAM_EINVAL
    When I look up item "old" in region "stale"
    Then I put "x" at offset 0 of item "old"

  Scenario: a global descriptor names the same item in a later run
    Given an OpenFAM instance
    And I create region "ids" of 64 KiB with mode 0600 and persistent memory
    And I allocate an unnamed item "anon" of 64 bytes with mode 0600 in region "ids"
    And I put "by descriptor" at offset 0 of item "anon"
    And I note the global descriptor of item "anon"
    When I finalize and initialize OpenFAM again
    And I open item "anon-again" from the global descriptor of item "anon"
    Then reading 13 bytes at offset 0 of item "anon-again" gives "by descriptor"

  Scenario: deallocation and destruction are persistent too
    Given an OpenFAM instance
    And I create region "keep" of 64 KiB with mode 0600 and persistent memory
    And I create region "drop" of 64 KiB with mode 0600 and persistent memory
    And I allocate item "k1" of 64 bytes with mode 0600 in region "keep"
    And I allocate item "k2" of 64 bytes with mode 0600 in region "keep"
    And I deallocate item "k1"
    And I destroy region "drop"
    When I finalize and initialize OpenFAM again
    And I try to look up region "drop"
    Then it fails with FAM_ENOTFOUND
    When I try to look up item "k1" in region "keep"
    Then it fails with FAM_ENOTFOUND
    When I look up item "k2" in region "keep"
    Then item "k2" has
      | field | value |
      | size  | 64    |

  Scenario: regions and items survive a famd restart
    Given an OpenFAM instance served by famd over unix
    And I create region "served" of 64 KiB with mode 0600 and persistent memory
    And I create region "served-v" of 64 KiB with mode 0600 and volatile memory
    And I allocate item "rec" of 4096 bytes with mode 0640 in region "served"
    And I allocate item "vrec" of 64 bytes with mode 0600 in region "served-v"
    And I put "kept by famd" at offset 2048 of item "rec"
    And I apply set to the int64 at offset 0 of item "vrec" with -42
    When I finalize OpenFAM
    And famd is stopped and started again on the same data directory
    And I initialize OpenFAM
    And I look up item "rec" in region "served"
    And I look up item "vrec" in region "served-v"
    Then reading 12 bytes at offset 2048 of item "rec" gives "kept by famd"
    And the int64 at offset 0 of item "vrec" is -42
    And item "rec" has
      | field | value |
      | size  | 4096  |
      | mode  | 0640  |
      | name  | rec   |

  Scenario: a client's handles fail cleanly when its famd restarts under it
    Given an OpenFAM instance served by famd over unix
    And I create region "restart" of 64 KiB with mode 0600 and persistent memory
    And I allocate item "r1" of 64 bytes with mode 0600 in region "restart"
    When I finalize OpenFAM
    And famd is stopped and started again on the same data directory
    And I initialize OpenFAM
    And I try to get 4 bytes at offset 0 of item "r1" into buffer "b"
    Then it fails with FAM_EINVAL
