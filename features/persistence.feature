@persistence
Feature: Persistence and restart
  Regions and items outlive the processes that use them. Everything an
  instance created - regions, items, their names, modes, global descriptors
  and bytes - is there again after fam_finalize and a new fam_initialize on
  the same data directory. A persistent region lives in a file of the data
  directory and survives a reboot; a volatile region lives on tmpfs and
  survives processes but not a reboot. A famd stopped and started again on
  the same data directory serves the same regions and items to new clients.
  
  Durability: for a persistent region, when fam_quiet (or fam_ctx_quiet)
  returns 0, every put, scatter, copy and atomic issued before it is on
  stable storage at the server that holds it; a blocking put is visible at
  once but durable only at the next quiet. fam_persist makes a range durable
  at once. No page of a persistent region's files is then left dirty in any
  process mapping them, which is what these scenarios check.
  OPENFAM_PERSIST=each makes every blocking call durable; OPENFAM_PERSIST=lazy
  leaves it to a periodic flush (OPENFAM_PERSIST_INTERVAL).

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

  Scenario: quiet makes the writes to a persistent region durable
    Given an OpenFAM instance
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    When I put "first record" at offset 0 of item "log"
    And I put "second record" at offset 8192 of item "log" non-blocking
    And I apply add to the uint64 at offset 32768 of item "log" with 1
    Then pages of the persistent regions' files are dirty
    When I quiet
    Then no page of the persistent regions' files is dirty
    And reading 12 bytes at offset 0 of item "log" gives "first record"

  Scenario: quiet on a context makes that context's writes durable
    Given an OpenFAM instance
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    And I open context "c"
    When I put "on a context" at offset 4096 of item "log" on context "c"
    Then pages of the persistent regions' files are dirty
    When I quiet context "c"
    Then no page of the persistent regions' files is dirty

  Scenario: quiet makes writes durable through famd over its Unix socket
    Given an OpenFAM instance served by famd over unix
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    When I put "through famd" at offset 0 of item "log"
    And I apply set to the uint64 at offset 16384 of item "log" with 7
    Then pages of the persistent regions' files are dirty
    When I quiet
    Then no page of the persistent regions' files is dirty

  Scenario: quiet makes writes durable through famd over TCP
    Given an OpenFAM instance served by famd over TCP
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    When I put "over the network" at offset 0 of item "log"
    And I put "later" at offset 40000 of item "log" non-blocking
    Then pages of the persistent regions' files are dirty
    When I quiet
    Then no page of the persistent regions' files is dirty

  Scenario: quiet makes writes durable on every memory server of a striped region
    Given a famd with 2 memory servers and an interleave size of 4 KiB
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    When I put 16384 bytes of "s" at offset 0 of item "log"
    Then pages of the persistent regions' files are dirty
    When I quiet
    Then no page of the persistent regions' files is dirty

  Scenario: fam_persist makes a range durable while quiet is lazy
    Given OPENFAM_PERSIST is "lazy" with an interval of 1h
    And an OpenFAM instance
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    When I put "left to the timer" at offset 0 of item "log"
    And I quiet
    Then pages of the persistent regions' files are dirty
    When I persist 65536 bytes at offset 0 of item "log"
    Then no page of the persistent regions' files is dirty

  Scenario: under OPENFAM_PERSIST=each a blocking put is durable when it returns
    Given OPENFAM_PERSIST is "each"
    And an OpenFAM instance
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 65536 bytes with mode 0600 in region "pm"
    When I put "at once" at offset 0 of item "log"
    Then no page of the persistent regions' files is dirty

  Scenario: fam_persist checks its range, and a volatile item has nothing to flush
    Given an OpenFAM instance
    And I create region "pm" of 1 MiB with mode 0600 and persistent memory
    And I allocate item "log" of 4096 bytes with mode 0600 in region "pm"
    And I create region "vm" of 1 MiB with mode 0600 and volatile memory
    And I allocate item "tmp" of 4096 bytes with mode 0600 in region "vm"
    When I try to persist 0 bytes at offset 0 of item "log"
    Then it fails with FAM_EINVAL
    When I try to persist 1 bytes at offset 4096 of item "log"
    Then it fails with FAM_ERANGE
    When I try to persist 8 bytes at offset 0 of item "NULL"
    Then it fails with FAM_EINVAL
    When I put "scratch" at offset 0 of item "tmp"
    Then I persist 4096 bytes at offset 0 of item "tmp"
    And I quiet

  Scenario: an unknown OPENFAM_PERSIST is refused at initialization
    Given OPENFAM_PERSIST is "sometimes"
    When I try to initialize OpenFAM
    Then it fails with FAM_EINVAL
    And the error message mentions "OPENFAM_PERSIST"
