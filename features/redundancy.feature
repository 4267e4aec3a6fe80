@redundancy
Feature: Redundant regions survive the loss of a memory server
  A region created with redundancy level RAID1 or RAID5 on a metadata famd
  with memory servers keeps every byte a put or an atomic acknowledged when
  one memory server dies: RAID1 keeps every interleave block on two
  different servers, RAID5 stripes blocks with a rotating parity block over
  three or more servers. While a memory server is down, gets read the
  surviving copy or reconstruct the lost block, and puts and atomics
  complete on the survivors. The metadata famd decides that the server is
  down and famctl servers --json says so. A memory famd restarted on its
  data directory (famd --role memory --join) rejoins with its id and is
  rebuilt from the survivors in the background while programs keep
  working; once the rebuild ends, famctl servers --json shows it rebuilt
  and the loss of another memory server, a copy's partner, again loses
  nothing. A region that asks for more copies than there are memory
  servers (RAID1 needs 2, RAID5 needs 3) fails at fam_create_region with a
  message naming the count, and so does a RAID level on a famd that
  serves regions from its own storage; the default level stays NONE. In
  these scenarios the metadata famd runs in the test process and its
  memory servers are famd processes of their own, killed with SIGKILL,
  with 4 KiB blocks so that short items span every server.

  Scenario Outline: data written to a <level> region reads back exactly after a memory famd is killed
    Given an OpenFAM instance served by a metadata famd with 3 memory famd processes and an interleave size of 4 KiB
    And I create region "safe" of 1 MiB with mode 0600 and <level> redundancy
    And I allocate item "data" of 40000 bytes with mode 0600 in region "safe"
    And I put pattern "before" of 40000 bytes at offset 0 of item "data"
    When memory famd 2 is killed with SIGKILL
    Then reading 40000 bytes at offset 0 of item "data" gives pattern "before"
    And reading 7 bytes at offset 4093 of item "data" gives pattern "before"
    And famctl servers --json shows memory famd 2 down within 60 seconds
    And famctl regions --json shows region "safe" degraded within 60 seconds
    And reading 40000 bytes at offset 0 of item "data" gives pattern "before"

    Examples:
      | level |
      | RAID1 |
      | RAID5 |

  Scenario Outline: puts and atomics on a <level> region succeed while a memory famd is down
    Given an OpenFAM instance served by a metadata famd with 3 memory famd processes and an interleave size of 4 KiB
    And I create region "safe" of 1 MiB with mode 0600 and <level> redundancy
    And I allocate item "data" of 40000 bytes with mode 0600 in region "safe"
    And I allocate item "counters" of 16384 bytes with mode 0600 in region "safe"
    And I put pattern "before" of 40000 bytes at offset 0 of item "data"
    And item "counters" holds the int64 100 at offset 0
    And item "counters" holds the int64 200 at offset 8192
    When memory famd 3 is killed with SIGKILL
    And I put pattern "outage" of 20000 bytes at offset 10000 of item "data"
    And I apply fetch_add to the int64 at offset 0 of item "counters" with 5
    Then the atomic returned 100
    When I apply fetch_add to the int64 at offset 8192 of item "counters" with 7
    Then the atomic returned 200
    When I compare and swap the int64 at offset 4096 of item "counters" expecting 0 with 9
    Then the atomic returned 0
    And the int64 at offset 0 of item "counters" is 105
    And the int64 at offset 8192 of item "counters" is 207
    And the int64 at offset 4096 of item "counters" is 9
    And reading 10000 bytes at offset 0 of item "data" gives pattern "before"
    And reading 20000 bytes at offset 10000 of item "data" gives pattern "outage"
    And reading 10000 bytes at offset 30000 of item "data" gives pattern "before"
    When famctl servers --json shows memory famd 3 down within 60 seconds
    And I put pattern "decided" of 12288 bytes at offset 4096 of item "data"
    And I apply fetch_add to the int64 at offset 0 of item "counters" with 1
    Then the atomic returned 105
    And reading 4096 bytes at offset 0 of item "data" gives pattern "before"
    And reading 12288 bytes at offset 4096 of item "data" gives pattern "decided"
    And reading 13616 bytes at offset 16384 of item "data" gives pattern "outage"

    Examples:
      | level |
      | RAID1 |
      | RAID5 |

  Scenario Outline: after a killed memory famd returns and its <level> rebuild ends, losing another memory famd loses nothing
    Given an OpenFAM instance served by a metadata famd with 3 memory famd processes and an interleave size of 4 KiB
    And I create region "safe" of 1 MiB with mode 0600 and <level> redundancy
    And I allocate item "data" of 40000 bytes with mode 0600 in region "safe"
    And I allocate item "counters" of 16384 bytes with mode 0600 in region "safe"
    And I put pattern "before" of 40000 bytes at offset 0 of item "data"
    And item "counters" holds the int64 100 at offset 0
    And item "counters" holds the int64 200 at offset 12288
    When memory famd 1 is killed with SIGKILL
    And I put pattern "outage" of 20000 bytes at offset 5000 of item "data"
    And I apply fetch_add to the int64 at offset 0 of item "counters" with 5
    And famctl servers --json shows memory famd 1 down within 60 seconds
    And memory famd 1 is started again on its data directory
    And I put pattern "rebuilding" of 5000 bytes at offset 30000 of item "data"
    And I apply fetch_add to the int64 at offset 12288 of item "counters" with 7
    Then famctl servers --json shows memory famd 1 rebuilt within 180 seconds
    And famctl regions --json shows region "safe" ok within 60 seconds
    When memory famd 2 is killed with SIGKILL
    Then reading 5000 bytes at offset 0 of item "data" gives pattern "before"
    And reading 20000 bytes at offset 5000 of item "data" gives pattern "outage"
    And reading 5000 bytes at offset 25000 of item "data" gives pattern "before"
    And reading 5000 bytes at offset 30000 of item "data" gives pattern "rebuilding"
    And reading 5000 bytes at offset 35000 of item "data" gives pattern "before"
    And the int64 at offset 0 of item "counters" is 105
    And the int64 at offset 12288 of item "counters" is 207
    When I apply fetch_add to the int64 at offset 0 of item "counters" with 1
    Then the atomic returned 105
    When I put pattern "second" of 40000 bytes at offset 0 of item "data"
    Then reading 40000 bytes at offset 0 of item "data" gives pattern "second"

    Examples:
      | level |
      | RAID1 |
      | RAID5 |

  # famd 2 is restarted at once, maybe before famd noticed it was gone:
  # its rejoin alone must mark its copies stale.
  Scenario: a memory famd restarted at once holds the current copy once rebuilt, and the other can then be lost
    Given an OpenFAM instance served by a metadata famd with 2 memory famd processes and an interleave size of 4 KiB
    And I create region "pair" of 1 MiB with mode 0600 and RAID1 redundancy
    And I allocate item "data" of 20000 bytes with mode 0600 in region "pair"
    And I put pattern "first" of 20000 bytes at offset 0 of item "data"
    When memory famd 2 is killed with SIGKILL
    And I put pattern "while-down" of 20000 bytes at offset 0 of item "data"
    And memory famd 2 is started again on its data directory
    Then famctl servers --json shows memory famd 2 rebuilt within 180 seconds
    When memory famd 1 is killed with SIGKILL
    Then reading 20000 bytes at offset 0 of item "data" gives pattern "while-down"

  Scenario: the default redundancy of a region on memory servers is NONE
    Given an OpenFAM instance served by a famd with 3 memory servers and an interleave size of 4 KiB
    When I create region "plain" of 64 KiB with mode 0600
    And I create region "asked" of 64 KiB with mode 0600 and DEFAULT redundancy
    Then region "plain" has redundancy none
    And region "asked" has redundancy none

  Scenario: a RAID1 region and a RAID5 region record their level
    Given an OpenFAM instance served by a famd with 3 memory servers and an interleave size of 4 KiB
    When I create region "one" of 64 KiB with mode 0600 and RAID1 redundancy
    And I create region "five" of 64 KiB with mode 0600 and RAID5 redundancy
    Then region "one" has redundancy raid1
    And region "five" has redundancy raid5

  Scenario: RAID1 with a single memory server fails at creation, naming the count
    Given an OpenFAM instance served by a famd with 1 memory server and an interleave size of 4 KiB
    When I try to create region "lonely" of 64 KiB with mode 0600 and RAID1 redundancy
    Then it fails with FAM_EINVAL or FAM_ERESOURCE
    And the error message names RAID1 and the count 2
    When I try to look up region "lonely"
    Then it fails with FAM_ENOTFOUND

  Scenario: RAID5 with two memory servers fails at creation, naming the count
    Given an OpenFAM instance served by a famd with 2 memory servers and an interleave size of 4 KiB
    When I try to create region "short" of 64 KiB with mode 0600 and RAID5 redundancy
    Then it fails with FAM_EINVAL or FAM_ERESOURCE
    And the error message names RAID5 and the count 3
    When I try to look up region "short"
    Then it fails with FAM_ENOTFOUND
    When I create region "short" of 64 KiB with mode 0600 and RAID1 redundancy
    Then region "short" has redundancy raid1

  Scenario Outline: <level> on a famd that serves regions from its own storage is refused
    Given an OpenFAM instance served by famd over unix
    When I try to create region "local" of 64 KiB with mode 0600 and <level> redundancy
    Then it fails with FAM_EINVAL or FAM_ERESOURCE
    And the error message names <level> and the count <count>
    When I try to look up region "local"
    Then it fails with FAM_ENOTFOUND

    Examples:
      | level | count |
      | RAID1 | 2     |
      | RAID5 | 3     |
