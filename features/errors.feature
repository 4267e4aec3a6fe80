@errors
Feature: Errors and bad input
  Every call validates its input and reports a failure as a FAM_E* code (a
  negative return in C, with fam_errcode and fam_errmsg describing it) rather
  than crashing, hanging or doing part of the work. NULL handles, released
  handles and handles from before fam_finalize fail with FAM_EINVAL, as does
  every call before fam_initialize or after fam_finalize. Zero sizes and NULL
  buffers are FAM_EINVAL; ranges outside an item, including offsets whose end
  overflows 64 bits, are FAM_ERANGE. Names longer than 40 bytes are
  FAM_ENAMETOOLONG; empty and path-like names (containing '/', "." or "..",
  or containing a control character) are FAM_EINVAL, for regions, items and
  backups alike; taken names are FAM_EEXIST, unknown names FAM_ENOTFOUND. A
  mode with any bit outside 0777 is FAM_EINVAL, with a message naming it,
  wherever a mode is given.

  Background:
    Given an OpenFAM instance
    And I create region "err" of 64 KiB with mode 0600
    And I allocate item "it" of 100 bytes with mode 0600 in region "err"

  Scenario Outline: bad region names are rejected
    When I try to create region "<name>" of 4096 bytes with mode 0600
    Then it fails with <error>

    Examples:
      | name                                      | error            |
      | abcdefghijklmnopqrstuvwxyzabcdefghijklmno | FAM_ENAMETOOLONG |
      |                                           | FAM_EINVAL       |
      | a/b                                       | FAM_EINVAL       |
      | .                                         | FAM_EINVAL       |
      | ..                                        | FAM_EINVAL       |
      | ../etc                                    | FAM_EINVAL       |
      | err                                       | FAM_EEXIST       |

  Scenario: a name of exactly 40 bytes is accepted
    When I create region "abcdefghijklmnopqrstuvwxyzabcdefghijklmn" of 4096 bytes with mode 0600
    And I allocate item "abcdefghijklmnopqrstuvwxyzabcdefghijklmn" of 8 bytes with mode 0600 in region "abcdefghijklmnopqrstuvwxyzabcdefghijklmn"
    Then item "abcdefghijklmnopqrstuvwxyzabcdefghijklmn" has
      | field | value                                    |
      | name  | abcdefghijklmnopqrstuvwxyzabcdefghijklmn |

  Scenario Outline: bad item names are rejected
    When I try to allocate item "<name>" of 8 bytes with mode 0600 in region "err"
    Then it fails with <error>

    Examples:
      | name                                      | error            |
      | abcdefghijklmnopqrstuvwxyzabcdefghijklmno | FAM_ENAMETOOLONG |
      | x/y                                       | FAM_EINVAL       |
      | ..                                        | FAM_EINVAL       |
      | it                                        | FAM_EEXIST       |

  Scenario: zero sizes are rejected
    When I try to create region "empty" of 0 bytes with mode 0600
    Then it fails with FAM_EINVAL
    When I try to allocate item "nothing" of 0 bytes with mode 0600 in region "err"
    Then it fails with FAM_EINVAL
    When I try to put "" at offset 0 of item "it"
    Then it fails with FAM_EINVAL
    When I try to resize region "err" to 0 bytes
    Then it fails with FAM_EINVAL

  Scenario: a region larger than the store can hold is refused
    When I try to create region "huge" of 18446744073709551615 bytes with mode 0600
    Then it fails with FAM_ENOSPACE
    When I try to allocate item "toobig" of 1048576 bytes with mode 0600 in region "err"
    Then it fails with FAM_ENOSPACE

  Scenario Outline: out-of-range and overflowing offsets are rejected
    When I try to get <n> bytes at offset <offset> of item "it" into buffer "b"
    Then it fails with FAM_ERANGE

    Examples:
      | n   | offset               |
      | 1   | 100                  |
      | 2   | 99                   |
      | 101 | 0                    |
      | 2   | 18446744073709551615 |
      | 16  | 18446744073709551608 |

  Scenario: NULL buffers are rejected
    When I try to get 8 bytes at offset 0 of item "it" with a NULL buffer
    Then it fails with FAM_EINVAL
    When I try to put 8 bytes at offset 0 of item "it" with a NULL buffer
    Then it fails with FAM_EINVAL

  Scenario: NULL handles are rejected
    When I try to put "x" at offset 0 of item "NULL"
    Then it fails with FAM_EINVAL
    When I try to allocate item "orphan" of 8 bytes with mode 0600 in region "NULL"
    Then it fails with FAM_EINVAL
    When I try to stat region "NULL"
    Then it fails with FAM_EINVAL
    When I try to deallocate item "NULL"
    Then it fails with FAM_EINVAL
    When I try to apply add to the int64 at offset 0 of item "NULL" with 1
    Then it fails with FAM_EINVAL
    When I try to quiet context "NULL"
    Then it fails with FAM_EINVAL

  Scenario: released handles are rejected and do not reach other items
    Given I allocate item "neighbour" of 100 bytes with mode 0600 in region "err"
    When I close item "it"
    And I try to put "stale" at offset 0 of item "it"
    Then it fails with FAM_EINVAL
    When I try to close item "it"
    Then it fails with FAM_EINVAL
    And reading 5 bytes at offset 0 of item "neighbour" gives 5 zero bytes

  Scenario: a destroyed region's handle is rejected
    Given I destroy region "err"
    When I try to resize region "err" to 8192 bytes
    Then it fails with FAM_EINVAL
    When I try to destroy region "err"
    Then it fails with FAM_EINVAL

  Scenario: unknown names are not found
    When I try to look up region "no-such-region"
    Then it fails with FAM_ENOTFOUND
    When I try to look up item "no-such-item" in region "err"
    Then it fails with FAM_ENOTFOUND
    When I try to look up item "it" in region "no-such-region"
    Then it fails with FAM_ENOTFOUND

  Scenario: a global descriptor that names nothing fails on first use
    When I open item "nowhere" from the global descriptor {999999, 4096}
    And I try to get 1 bytes at offset 0 of item "nowhere" into buffer "b"
    Then it fails with FAM_ENOTFOUND

  Scenario: a region's global descriptor is not an item's
    When I try to open item "confused" from the global descriptor {1, 18446744073709551615}
    Then it fails with FAM_EINVAL

  Scenario: calls after finalize are rejected
    Given I finalize OpenFAM
    When I try to put "late" at offset 0 of item "it"
    Then it fails with FAM_EINVAL
    When I try to create region "after" of 4096 bytes with mode 0600
    Then it fails with FAM_EINVAL
    When I try to look up region "err"
    Then it fails with FAM_EINVAL
    When I try to apply add to the uint64 at offset 0 of item "it" with 1
    Then it fails with FAM_EINVAL
    When I try to finalize OpenFAM
    Then it fails with FAM_EINVAL

  Scenario: calls before initialize are rejected
    Given OpenFAM is not initialized
    When I try to create region "early" of 4096 bytes with mode 0600
    Then it fails with FAM_EINVAL
    When I try to call fam_barrier_all
    Then it fails with FAM_EINVAL

  Scenario: an unreachable famd is reported at initialize
    Given I finalize OpenFAM
    And OPENFAM_SERVER names a socket where no famd listens, with a timeout of 300ms
    When I try to initialize OpenFAM
    Then it fails with FAM_ERPC

  Scenario Outline: modes with bits outside 0777 are rejected
    When I try to create region "odd" of 4096 bytes with mode <mode>
    Then it fails with FAM_EINVAL
    And the error message mentions "<mode>"
    When I try to allocate item "odd" of 8 bytes with mode <mode> in region "err"
    Then it fails with FAM_EINVAL
    When I try to change the permissions of region "err" to <mode>
    Then it fails with FAM_EINVAL
    When I try to change the permissions of item "it" to <mode>
    Then it fails with FAM_EINVAL
    When I back up item "it" as "odd-backup"
    And I try to restore backup "odd-backup" as a new item "odd" with mode <mode> in region "err"
    Then it fails with FAM_EINVAL
    When I try to look up region "odd"
    Then it fails with FAM_ENOTFOUND
    When I try to look up item "odd" in region "err"
    Then it fails with FAM_ENOTFOUND
    And region "err" has
      | field | value |
      | mode  | 0600  |
    And item "it" has
      | field | value |
      | mode  | 0600  |

    Examples:
      | mode    |
      | 01000   |
      | 04755   |
      | 02600   |
      | 0100644 |

  Scenario Outline: path-like backup names are rejected
    When I try to back up item "it" as "<name>"
    Then it fails with FAM_EINVAL
    When I try to restore backup "<name>" into item "it"
    Then it fails with FAM_EINVAL
    When I try to delete backup "<name>"
    Then it fails with FAM_EINVAL

    Examples:
      | name     |
      | .        |
      | ..       |
      | ../x     |
      | dir/file |
