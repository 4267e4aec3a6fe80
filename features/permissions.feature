@permissions
Feature: Permissions
  Access follows POSIX mode bits, applied to the caller's class: the group's
  bits when the caller's gid matches the owner's, the others' otherwise, with
  no bypass for root. The owner is bound by no mode bits: as in OpenFAM,
  whose metadata service checks a mode only when the caller's uid is not the
  owner's, the owner may read, write, allocate in, resize and destroy its
  own regions and items whatever their mode (a program may create a region
  0444 and allocate in it, or change its own item to 0333 and read it).
  With region-level permissions (the default) the region's mode governs
  every item in it; with data item-level permissions each item's own mode
  does. Reading needs r, writing and modifying atomics need w, fetching
  atomics need both where they modify. Allocating, resizing and destroying
  need write permission on the region, not ownership: as in OpenFAM,
  another user whose class has w may resize or destroy it. Only the owner
  may change a mode, and every open handle of every other user sees the new
  rights at once (a change cuts off access at once); as in OpenFAM, an item
  of a region with region-level permissions has no mode of its own to
  change (FAM_ENOPERM). Denials fail with FAM_ENOPERM and change nothing.
  Scenarios in which another user owns the region or item run on both
  backends: that user has an instance of its own, either on the scenario's
  store or as a client that famd knows over TCP as that user while the
  instance under test uses famd's Unix socket. Scenarios in which this
  instance acts as another user carry the tag go-only: the C ABI has one
  process-wide instance acting for the process's own uid, so they run
  against the Go core only.

  Background:
    Given an OpenFAM instance

  Scenario: a read-only region refuses allocation
    Given user 7013 of another group created region "ro" of 64 KiB with mode 0444
    When I look up region "ro"
    And I try to allocate item "x" of 64 bytes with mode 0600 in region "ro"
    Then it fails with FAM_ENOPERM

  Scenario: region-level permissions govern the region's items
    Given user 7014 of another group created region "rl" of 64 KiB with mode 0606
    When I look up region "rl"
    And I allocate item "doc" of 64 bytes with mode 0400 in region "rl"
    And I put "writable" at offset 0 of item "doc"
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
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7020 of my group over TCP
    And user 7020 creates region "il" of 64 KiB with mode 0770 and data item-level permissions
    And user 7020 allocates item "ro-item" of 64 bytes with mode 0440 in region "il"
    When I look up item "ro-item" in region "il"
    And I try to put "denied" at offset 0 of item "ro-item"
    Then it fails with FAM_ENOPERM
    And reading 6 bytes at offset 0 of item "ro-item" gives 6 zero bytes

  Scenario: a write-only item can be written but not read
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7021 of my group over TCP
    And user 7021 creates region "wo" of 64 KiB with mode 0770 and data item-level permissions
    And user 7021 allocates item "drop" of 64 bytes with mode 0220 in region "wo"
    When I look up item "drop" in region "wo"
    And I put "blind" at offset 0 of item "drop"
    And I try to get 5 bytes at offset 0 of item "drop" into buffer "b"
    Then it fails with FAM_ENOPERM
    And user 7021 reads "blind" at offset 0 of item "drop"

  Scenario: a fetching atomic needs read permission as well as write
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7022 of another group over TCP
    And user 7022 creates region "amo" of 64 KiB with mode 0707 and data item-level permissions
    And user 7022 allocates item "ctr" of 64 bytes with mode 0602 in region "amo"
    When I look up item "ctr" in region "amo"
    And I apply add to the uint64 at offset 0 of item "ctr" with 5
    And I try to apply fetch_add to the uint64 at offset 0 of item "ctr" with 5
    Then it fails with FAM_ENOPERM

  Scenario: changing an item's mode takes effect on another user's open handles
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7023 of my group over TCP
    And user 7023 creates region "chm" of 64 KiB with mode 0770 and data item-level permissions
    And user 7023 allocates item "flip" of 64 bytes with mode 0640 in region "chm"
    When I look up item "flip" in region "chm"
    And I try to put "no" at offset 0 of item "flip"
    Then it fails with FAM_ENOPERM
    When user 7023 changes the permissions of item "flip" to 0660
    Then within 10 seconds I can put "yes" at offset 0 of item "flip"
    And within 10 seconds reading 3 bytes at offset 0 of item "flip" gives "yes"
    And item "flip" has
      | field | value |
      | mode  | 0660  |
    When user 7023 changes the permissions of item "flip" to 0600
    Then within 10 seconds getting 3 bytes at offset 0 of item "flip" fails with FAM_ENOPERM
    When I try to put "cut" at offset 0 of item "flip"
    Then it fails with FAM_ENOPERM
    And user 7023 reads "yes" at offset 0 of item "flip"

  Scenario: changing a region's mode takes effect on its items' open handles
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7024 of my group over TCP
    And user 7024 creates region "rchm" of 64 KiB with mode 0660
    And user 7024 allocates item "it" of 64 bytes with mode 0600 in region "rchm"
    When I look up region "rchm"
    And I look up item "it" in region "rchm"
    And I put "early" at offset 0 of item "it"
    And user 7024 changes the permissions of region "rchm" to 0640
    Then within 10 seconds putting "late!" at offset 0 of item "it" fails with FAM_ENOPERM
    And reading 5 bytes at offset 0 of item "it" gives "early"
    And user 7024 reads "early" at offset 0 of item "it"
    And region "rchm" has
      | field | value |
      | mode  | 0640  |

  Scenario: a region without read or write permission cannot be looked up
    Given user 7015 of another group created region "sealed" of 64 KiB with mode 0660
    When I try to look up region "sealed"
    Then it fails with FAM_ENOPERM

  # The owner is bound by no mode bits, as in OpenFAM (its metadata service
  # checks modes only for callers other than the owner), embedded and
  # through famd alike.
  Scenario Outline: the owner allocates in its own read-only region (<where>)
    Given I finalize OpenFAM
    And <instance>
    And I create region "ro-own" of 64 KiB with mode 0444
    When I allocate item "x" of 64 bytes with mode 0600 in region "ro-own"
    And I put "mine" at offset 0 of item "x"
    Then reading 4 bytes at offset 0 of item "x" gives "mine"

    Examples:
      | where      | instance                                     |
      | embedded   | an OpenFAM instance                          |
      | famd, unix | an OpenFAM instance served by famd over unix |

  Scenario Outline: the owner destroys its own region after changing its mode to 0 (<where>)
    Given I finalize OpenFAM
    And <instance>
    And I create region "zero" of 64 KiB with mode 0600
    And I allocate item "x" of 64 bytes with mode 0600 in region "zero"
    When I change the permissions of region "zero" to 0000
    And I look up region "zero" as "zero-again"
    And I deallocate item "x"
    And I destroy region "zero"
    And I try to look up region "zero"
    Then it fails with FAM_ENOTFOUND

    Examples:
      | where      | instance                                     |
      | embedded   | an OpenFAM instance                          |
      | famd, unix | an OpenFAM instance served by famd over unix |

  Scenario Outline: the owner reads its own item after changing its mode to 0333 (<where>)
    Given I finalize OpenFAM
    And <instance>
    And I create region "own-il" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "mine" of 64 bytes with mode 0600 in region "own-il"
    And I put "kept" at offset 0 of item "mine"
    When I change the permissions of item "mine" to 0333
    Then reading 4 bytes at offset 0 of item "mine" gives "kept"
    And item "mine" has
      | field | value |
      | mode  | 0333  |
    When I look up item "mine" in region "own-il" as "mine-again"
    And I put "also" at offset 0 of item "mine-again"
    Then reading 4 bytes at offset 0 of item "mine" gives "also"

    Examples:
      | where      | instance                                     |
      | embedded   | an OpenFAM instance                          |
      | famd, unix | an OpenFAM instance served by famd over unix |

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

  # The C fast path follows the owner's chmod before this program's next
  # call: a put through the renewed key and a get right after it see the
  # same heap file (3 of 8 runs read zeros before).
  Scenario: a put after another user widens an item's mode is read back at once
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7023 of my group over TCP
    And user 7023 creates region "chm" of 64 KiB with mode 0770 and data item-level permissions
    And user 7023 allocates item "flip" of 64 bytes with mode 0640 in region "chm"
    When I look up item "flip" in region "chm"
    And reading 3 bytes at offset 0 of item "flip" gives 3 zero bytes
    When user 7023 changes the permissions of item "flip" to 0660
    Then within 10 seconds I can put "yes" at offset 0 of item "flip"
    And reading 3 bytes at offset 0 of item "flip" gives "yes"
