@regions
Feature: Regions
  A region is a named, sized pool of fabric-attached memory owned by the user
  who created it. fam_create_region makes one with a name of 1 to 255 bytes, a
  size in bytes and POSIX mode bits; unset attributes default to volatile
  memory, interleaving enabled and region-level permissions. Region names are
  unique. Any number of handles may name one region: fam_lookup_region opens
  another, fam_close_region releases one, fam_destroy_region deletes the
  region with all its items and releases every handle on it. A region grows
  with fam_resize_region, and shrinks only down to the end of its last item,
  which never moves. A region's global descriptor has offset UINT64_MAX and
  names it in any process. A famd serving as metadata service for several
  memory servers stripes a region with default attributes over all of them
  (striping.feature has the details); one with interleaving disabled goes to
  one server; with no memory server it has nowhere to place a region.
  As in OpenFAM, a region holds at least 1 MiB whatever size it was created
  with (fam_stat reports the size asked for).
  fam_stat reports the region's interleave block size even when the region is
  on one server (the service's configured size, 1 MiB by default), never 0.
  fam_list_regions (an extension) lists the regions the caller may read or
  write, its own whatever their mode, and fam_list_items the data items of a
  region by offset, one tab-separated line each, unnamed items with an empty
  name; the caller frees each listing.

  Background:
    Given an OpenFAM instance

  Scenario: a new region reports what it was created with
    When I create region "alpha" of 1 MiB with mode 0600
    Then region "alpha" has
      | field            | value    |
      | size             | 1048576  |
      | mode             | 0600     |
      | name             | alpha    |
      | owner            | me       |
      | memory           | volatile |
      | permission level | region   |
      | interleave       | enabled  |
      | memory servers   | 1        |
      | interleave size  | 1048576  |

  Scenario: attributes given at creation are kept
    When I create region "beta" of 64 KiB with mode 0640 and persistent memory and data item-level permissions
    Then region "beta" has
      | field            | value      |
      | size             | 65536      |
      | mode             | 0640       |
      | memory           | persistent |
      | permission level | data item  |

  Scenario: region names are unique
    Given I create region "gamma" of 4096 bytes with mode 0600
    When I try to create region "gamma" of 8192 bytes with mode 0600
    Then it fails with FAM_EEXIST

  Scenario: a looked-up handle names the same region
    Given I create region "delta" of 4096 bytes with mode 0600
    And I allocate item "cell" of 64 bytes with mode 0600 in region "delta"
    And I put "shared" at offset 0 of item "cell"
    When I look up region "delta" as "delta2"
    And I close region "delta2"
    And I look up item "cell" in region "delta" as "cell2"
    Then reading 6 bytes at offset 0 of item "cell2" gives "shared"

  Scenario: closing a handle leaves the region in place
    Given I create region "eps" of 4096 bytes with mode 0600
    When I close region "eps"
    And I look up region "eps"
    Then region "eps" has
      | field | value |
      | size  | 4096  |

  Scenario: destroying a region removes it and its items
    Given I create region "zeta" of 4096 bytes with mode 0600
    And I allocate item "z1" of 100 bytes with mode 0600 in region "zeta"
    When I destroy region "zeta"
    And I try to look up region "zeta"
    Then it fails with FAM_ENOTFOUND
    When I try to put "x" at offset 0 of item "z1"
    Then it fails with FAM_EINVAL

  Scenario: a destroyed name can be created again, empty
    Given I create region "eta" of 4096 bytes with mode 0600
    And I allocate item "old" of 16 bytes with mode 0600 in region "eta"
    And I destroy region "eta"
    When I create region "eta" of 4096 bytes with mode 0600
    And I try to look up item "old" in region "eta"
    Then it fails with FAM_ENOTFOUND

  Scenario: a region grows in place and its items keep their bytes
    Given I create region "theta" of 1 MiB with mode 0600
    And I allocate item "t1" of 1 MiB with mode 0600 in region "theta"
    And I put "before resize" at offset 100 of item "t1"
    And I try to allocate item "t2" of 4096 bytes with mode 0600 in region "theta"
    And it fails with FAM_ENOSPACE
    When I resize region "theta" to 2 MiB
    And I allocate item "t2" of 4096 bytes with mode 0600 in region "theta"
    Then region "theta" has
      | field | value   |
      | size  | 2097152 |
    And reading 13 bytes at offset 100 of item "t1" gives "before resize"

  Scenario: a region does not shrink below the end of its last item
    Given I create region "iota" of 4 MiB with mode 0600
    And I allocate item "i1" of 2 MiB with mode 0600 in region "iota"
    When I try to resize region "iota" to 1 MiB
    Then it fails with FAM_EINVAL
    When I resize region "iota" to 3 MiB
    Then region "iota" has
      | field | value   |
      | size  | 3145728 |

  Scenario: a region handle made from a global descriptor names the region
    Given I create region "kappa" of 4096 bytes with mode 0600
    And I note the global descriptor of region "kappa"
    When I open region "kappa-g" from the global descriptor of region "kappa"
    Then region "kappa-g" has
      | field | value |
      | name  | kappa |
      | size  | 4096  |

  Scenario: a global descriptor of a destroyed region fails on first use
    Given I create region "lambda" of 4096 bytes with mode 0600
    And I note the global descriptor of region "lambda"
    And I destroy region "lambda"
    When I open region "lambda-g" from the global descriptor of region "lambda"
    And I try to stat region "lambda-g"
    Then it fails with FAM_ENOTFOUND

  Scenario: a region is striped over every memory server of a multi-server famd
    Given an OpenFAM instance served by a famd with 2 memory servers
    When I create region "wide" of 1 MiB with mode 0600
    Then region "wide" has
      | field          | value   |
      | interleave     | enabled |
      | memory servers | 2       |

  Scenario: a small region holds at least 1 MiB, as in OpenFAM
    When I create region "tiny" of 8 KiB with mode 0600
    And I allocate item "a" of 512 KiB with mode 0600 in region "tiny"
    And I allocate item "b" of 256 KiB with mode 0600 in region "tiny"
    Then region "tiny" has
      | field | value |
      | size  | 8192  |
    When I try to allocate item "c" of 512 KiB with mode 0600 in region "tiny"
    Then it fails with FAM_ENOSPACE

  Scenario: a region on one memory server reports the default interleave size
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix
    When I create region "single" of 64 KiB with mode 0600 and interleaving disabled
    And I allocate item "one" of 64 bytes with mode 0600 in region "single"
    Then region "single" has
      | field           | value   |
      | interleave size | 1048576 |
    And item "one" has
      | field           | value   |
      | interleave size | 1048576 |

  Scenario: a region with interleaving disabled goes to one memory server
    Given an OpenFAM instance served by a famd with 2 memory servers
    When I create region "narrow" of 1 MiB with mode 0600 and interleaving disabled
    Then region "narrow" has
      | field          | value    |
      | interleave     | disabled |
      | memory servers | 1        |

  Scenario: a famd without memory servers cannot place a region
    Given an OpenFAM instance served by a famd with no memory servers
    When I try to create region "nowhere" of 1 MiB with mode 0600
    Then it fails with FAM_ERESOURCE

  Scenario: the listings describe my regions and their items by offset
    Given I create region "shelf" of 1 MiB with mode 0640
    And I allocate item "first" of 100 bytes with mode 0600 in region "shelf"
    And I allocate an unnamed item "anon" of 200 bytes with mode 0644 in region "shelf"
    And I create region "empty shelf" of 64 KiB with mode 0000
    Then the region listing shows "shelf" of 1 MiB with mode 0640 owned by me
    And the region listing shows "empty shelf" of 64 KiB with mode 0000 owned by me
    And the item listing of region "shelf" is
      | item  | name  | size | mode |
      | first | first | 100  | 0600 |
      | anon  |       | 200  | 0644 |
    And the item listing of region "empty shelf" is
      | item | name | size | mode |
    When I deallocate item "first"
    And I destroy region "empty shelf"
    Then the item listing of region "shelf" is
      | item | name | size | mode |
      | anon |      | 200  | 0644 |
    And the region listing does not show "empty shelf"
    When I close region "shelf"
    And I try to list the items of region "shelf"
    Then it fails with FAM_EINVAL

  Scenario: through famd, another user's regions are listed only where their mode lets me in
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7040 of another group over TCP
    And user 7040 creates region "public" of 64 KiB with mode 0604
    And user 7040 creates region "group only" of 64 KiB with mode 0640
    And user 7040 allocates item "notice" of 64 bytes with mode 0644 in region "public"
    When I create region "mine" of 64 KiB with mode 0600
    Then the region listing shows "public" of 64 KiB with mode 0604 owned by user 7040
    And the region listing shows "mine" of 64 KiB with mode 0600 owned by me
    And the region listing does not show "group only"
    When I look up region "public"
    And I look up item "notice" in region "public"
    Then the item listing of region "public" is
      | item   | name   | size | mode | owner     |
      | notice | notice | 64   | 0644 | user 7040 |
