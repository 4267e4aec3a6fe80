@permissions
Feature: Permissions
  Access follows POSIX mode bits, applied to the caller's class: the owner's
  bits when the caller's uid owns the object, the group's when its gid
  matches, the others' otherwise, with no bypass for root. With region-level
  permissions (the default) the region's mode governs every item in it; with
  data item-level permissions each item's own mode does. Reading needs r,
  writing and modifying atomics need w, fetching atomics need both where they
  modify. Allocating, resizing and destroying need write permission on the
  region, not ownership: as in OpenFAM, another user whose class has w may
  resize or destroy it. Only the owner may change a mode, and every open
  handle sees the new rights at once; as in OpenFAM, an item of a region
  with region-level permissions has no mode of its own to change
  (FAM_ENOPERM). Denials fail with FAM_ENOPERM and
  change nothing. Scenarios in which another user owns the region run on
  both backends: that user has an instance of its own on the scenario's
  store. Scenarios in which this instance acts as another user carry the tag
  go-only: the C ABI has one process-wide instance acting for the process's
  own uid, so they run against the Go core only.

  Background:
    Given an OpenFAM instance

  Scenario: a read-only region refuses allocation
    Given I create region "ro" of 64 KiB with mode 0400
    When I try to allocate item "x" of 64 bytes with mode 0600 in region "ro"
    Then it fails with FAM_ENOPERM

  Scenario: region-level permissions govern the region's items
    Given I create region "rl" of 64 KiB with mode 0600
    And I allocate item "doc" of 64 bytes with mode 0400 in region "rl"
    When I put "writable" at offset 0 of item "doc"
    Then reading 8 bytes at offset 0 of item "doc" gives "writable"

  Scenario: an item of a region with region-level permissions cannot change its own mode
    Given I create region "rl-chmod" of 64 KiB with mode 0600
    And I allocate item "doc" of 64 bytes with mode 0600 in region "rl-chmod"
    When I try to change the permissions of item "doc" to 0644
    Then it fails with FAM_ENOPERM
    And item "doc" has
      | field | value |
      | mode  | 0600  |

  Scenario: data item-level permissions use the item's own mode
    Given I create region "il" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "ro-item" of 64 bytes with mode 0400 in region "il"
    When I try to put "denied" at offset 0 of item "ro-item"
    Then it fails with FAM_ENOPERM
    And reading 6 bytes at offset 0 of item "ro-item" gives 6 zero bytes

  Scenario: a write-only item can be written but not read
    Given I create region "wo" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "drop" of 64 bytes with mode 0200 in region "wo"
    When I put "blind" at offset 0 of item "drop"
    And I try to get 5 bytes at offset 0 of item "drop" into buffer "b"
    Then it fails with FAM_ENOPERM

  Scenario: a fetching atomic needs read permission as well as write
    Given I create region "amo" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "ctr" of 64 bytes with mode 0200 in region "amo"
    When I apply add to the uint64 at offset 0 of item "ctr" with 5
    And I try to apply fetch_add to the uint64 at offset 0 of item "ctr" with 5
    Then it fails with FAM_ENOPERM

  Scenario: changing an item's mode takes effect on open handles
    Given I create region "chm" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "flip" of 64 bytes with mode 0400 in region "chm"
    And I try to put "no" at offset 0 of item "flip"
    And it fails with FAM_ENOPERM
    When I change the permissions of item "flip" to 0600
    And I put "yes" at offset 0 of item "flip"
    Then reading 3 bytes at offset 0 of item "flip" gives "yes"
    And item "flip" has
      | field | value |
      | mode  | 0600  |

  Scenario: changing a region's mode takes effect on its items' open handles
    Given I create region "rchm" of 64 KiB with mode 0600
    And I allocate item "it" of 64 bytes with mode 0600 in region "rchm"
    When I change the permissions of region "rchm" to 0400
    And I try to put "late" at offset 0 of item "it"
    Then it fails with FAM_ENOPERM
    And region "rchm" has
      | field | value |
      | mode  | 0400  |

  Scenario: a region without read or write permission cannot be looked up
    Given I create region "sealed" of 64 KiB with mode 0600
    And I change the permissions of region "sealed" to 0000
    When I try to look up region "sealed"
    Then it fails with FAM_ENOPERM

  Scenario: the owner may deallocate an item it cannot write
    Given I create region "own" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "mine" of 64 bytes with mode 0400 in region "own"
    When I deallocate item "mine"
    And I try to look up item "mine" in region "own"
    Then it fails with FAM_ENOTFOUND

  @go-only
  Scenario: the group class applies to a member of the owner's group
    Given I create region "team" of 64 KiB with mode 0640
    And I allocate item "notes" of 64 bytes with mode 0600 in region "team"
    And I put "for the team" at offset 0 of item "notes"
    When I act as user 50001 of my group
    And I look up item "notes" in region "team" as "member-view"
    Then reading 12 bytes at offset 0 of item "member-view" gives "for the team"
    When I try to put "vandal" at offset 0 of item "member-view"
    Then it fails with FAM_ENOPERM

  @go-only
  Scenario: others get the other class, and only the owner changes modes
    Given I create region "public" of 64 KiB with mode 0604
    And I allocate item "board" of 64 bytes with mode 0600 in region "public"
    When I act as user 50002 of another group
    And I look up item "board" in region "public" as "stranger-view"
    And I try to change the permissions of item "stranger-view" to 0666
    Then it fails with FAM_ENOPERM
    When I look up region "public" as "stranger-region"
    And I try to allocate item "spam" of 64 bytes with mode 0600 in region "stranger-region"
    Then it fails with FAM_ENOPERM
    When I act as myself again
    And I change the permissions of region "public" to 0606
    And I act as user 50002 of another group
    Then I put "posted" at offset 0 of item "stranger-view"

  @go-only
  Scenario: a stranger cannot look up a region closed to others
    Given I create region "private" of 64 KiB with mode 0600
    When I act as user 50003 of another group
    And I try to look up region "private"
    Then it fails with FAM_ENOPERM

  # What a mapping reaches: every page of it, not only the item's bytes.
  # Items of one owner, group and mode share heap files; items that differ
  # in any of them never share a mapped page, so mapping one item (in
  # this process, or from the descriptor famd passes on its host) shows no
  # byte of an item with other permissions.
  Scenario Outline: a mapping reaches no item with other permissions (<where>)
    Given I finalize OpenFAM
    And <instance>
    And I create region "pages" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "secret" of 64 bytes with mode 0600 in region "pages"
    And I allocate item "shared" of 64 bytes with mode 0644 in region "pages"
    And I allocate item "secret2" of 64 bytes with mode 0600 in region "pages"
    And I put "top-secret-bytes" at offset 0 of item "secret"
    And I put "for-everyone" at offset 0 of item "shared"
    And I put "more-secret-bytes" at offset 0 of item "secret2"
    When I map item "shared"
    Then the pages of the mapping of item "shared" contain "for-everyone"
    And the pages of the mapping of item "shared" do not contain "top-secret-bytes"
    And the pages of the mapping of item "shared" do not contain "more-secret-bytes"
    When I map item "secret"
    Then the pages of the mapping of item "secret" contain "more-secret-bytes"
    And the pages of the mapping of item "secret" do not contain "for-everyone"

    Examples:
      | where      | instance                                     |
      | embedded   | an OpenFAM instance                          |
      | famd, unix | an OpenFAM instance served by famd over unix |

  Scenario: a permission change moves an item out of pages mapped before it
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix
    And I create region "moving" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "a" of 64 bytes with mode 0644 in region "moving"
    And I allocate item "b" of 64 bytes with mode 0644 in region "moving"
    And I put "stays-public" at offset 0 of item "a"
    And I put "becomes-private" at offset 0 of item "b"
    And I map item "a"
    When I change the permissions of item "b" to 0600
    Then the pages of the mapping of item "a" contain "stays-public"
    And the pages of the mapping of item "a" do not contain "becomes-private"
    And reading 15 bytes at offset 0 of item "b" gives "becomes-private"

  Scenario: a writer who is not the owner may resize and destroy a region
    Given user 7010 of another group created region "commons" of 64 KiB with mode 0606
    When I look up region "commons"
    And I resize region "commons" to 128 KiB
    Then region "commons" has
      | field | value        |
      | size  | 131072       |
      | owner | someone else |
    When I destroy region "commons"
    And I try to look up region "commons"
    Then it fails with FAM_ENOTFOUND

  Scenario: a group writer who is not the owner may destroy a region
    Given user 7011 of my group created region "team-space" of 64 KiB with mode 0660
    When I look up region "team-space"
    And I destroy region "team-space"
    And I try to look up region "team-space"
    Then it fails with FAM_ENOTFOUND

  Scenario: a reader who is not the owner may neither resize nor destroy a region
    Given user 7012 of another group created region "notice-board" of 64 KiB with mode 0604
    When I look up region "notice-board"
    And I try to resize region "notice-board" to 128 KiB
    Then it fails with FAM_ENOPERM
    When I try to destroy region "notice-board"
    Then it fails with FAM_ENOPERM
    And region "notice-board" has
      | field | value |
      | size  | 65536 |

  Scenario: over TCP with the cluster token only, a client acts as famd's one TCP identity
    # famd --tcp-identity: the token proves the host, not the user, so famd
    # never takes a uid from a TCP client; it gives every one the identity
    # it was configured with (spec/auth.md).
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over TCP where every client acts as uid 4321 gid 4322
    When I create region "tcp-made" of 64 KiB with mode 0600
    Then region "tcp-made" has
      | field | value        |
      | uid   | 4321         |
      | gid   | 4322         |
      | owner | someone else |
    And I allocate item "x" of 64 bytes with mode 0600 in region "tcp-made"
    And I put "as 4321" at offset 0 of item "x"
    And reading 7 bytes at offset 0 of item "x" gives "as 4321"
