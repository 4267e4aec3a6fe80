@atomics
Feature: Atomics
  Atomic operations act on one naturally aligned word of a data item: 4 bytes
  for int32, uint32 and float, 8 for int64, uint64 and double, 16 for int128.
  They are atomic with respect to every other atomic on the same word, from
  any PE, thread or transport. The non-fetching operations (set, add,
  subtract, min, max, and the bitwise and, or, xor on unsigned types) return
  nothing; the fetching ones (fetch, fetch_add, fetch_subtract, fetch_min,
  fetch_max, fetch_and, fetch_or, fetch_xor, swap, compare_swap) return the
  word's previous value. Integer arithmetic wraps around in two's
  complement. min and max compare signed types as signed and unsigned as
  unsigned; on floats a NaN operand never replaces the word, a NaN word is
  replaced by any number, and -0 orders below +0. compare_swap stores the
  desired value only if the word equals the expected value (int32, int64,
  uint32, uint64, int128). int128 has set, fetch and compare_swap. An offset
  that is not a multiple of the word size fails with FAM_EINVAL, a word past
  the end of the item with FAM_ERANGE. Words are little-endian in memory, as
  a plain get of the same bytes shows.

  Background:
    Given an OpenFAM instance
    And I create region "amo" of 64 KiB with mode 0600
    And I allocate item "cell" of 64 bytes with mode 0600 in region "amo"

  Scenario Outline: non-fetching <op> on <type>
    Given item "cell" holds the <type> <initial> at offset 16
    When I apply <op> to the <type> at offset 16 of item "cell" with <operand>
    Then the <type> at offset 16 of item "cell" is <result>
    And the uint64 at offset 0 of item "cell" is 0
    And the uint64 at offset 32 of item "cell" is 0

    Examples: set
      | op  | type   | initial | operand                                  | result                                   |
      | set | int32  | 7       | -5                                       | -5                                       |
      | set | int64  | 7       | -9223372036854775808                     | -9223372036854775808                     |
      | set | uint32 | 7       | 4294967295                               | 4294967295                               |
      | set | uint64 | 7       | 18446744073709551615                     | 18446744073709551615                     |
      | set | float  | 7       | -2.5                                     | -2.5                                     |
      | set | double | 7       | 6.02214076e23                            | 6.02214076e23                            |
      | set | int128 | 7       | -170141183460469231731687303715884105728 | -170141183460469231731687303715884105728 |

    Examples: add
      | op  | type   | initial              | operand | result              |
      | add | int32  | 2147483647           | 1       | -2147483648         |
      | add | int64  | -10                  | 25      | 15                  |
      | add | uint32 | 4294967295           | 2       | 1                   |
      | add | uint64 | 18446744073709551615 | 1       | 0                   |
      | add | float  | 1.5                  | 2.25    | 3.75                |
      | add | double | 0.1                  | 0.2     | 0.30000000000000004 |

    Examples: subtract
      | op       | type   | initial              | operand | result              |
      | subtract | int32  | 5                    | 7       | -2                  |
      | subtract | int64  | -9223372036854775808 | 1       | 9223372036854775807 |
      | subtract | uint32 | 0                    | 1       | 4294967295          |
      | subtract | uint64 | 10                   | 3       | 7                   |
      | subtract | float  | 1                    | 0.5     | 0.5                 |
      | subtract | double | 10.5                 | 0.25    | 10.25               |

    Examples: min
      | op  | type   | initial    | operand              | result |
      | min | int32  | -3         | -7                   | -7     |
      | min | int64  | 100        | -100                 | -100   |
      | min | uint32 | 4000000000 | 3                    | 3      |
      | min | uint64 | 5          | 18446744073709551615 | 5      |
      | min | float  | 2.5        | -1.5                 | -1.5   |
      | min | double | -0.5       | 3                    | -0.5   |

    Examples: max
      | op  | type   | initial | operand    | result     |
      | max | int32  | -3      | -7         | -3         |
      | max | int64  | -100    | 100        | 100        |
      | max | uint32 | 3       | 4000000000 | 4000000000 |
      | max | uint64 | 1       | 0          | 1          |
      | max | float  | -2      | -1         | -1         |
      | max | double | 1e300   | 2e300      | 2e300      |

    Examples: bitwise
      | op  | type   | initial            | operand            | result             |
      | and | uint32 | 0xF0F0F0F0         | 0xFF00FF00         | 0xF000F000         |
      | and | uint64 | 0xFFFF0000FFFF0000 | 0x0F0F0F0F0F0F0F0F | 0x0F0F00000F0F0000 |
      | or  | uint32 | 0xF0F0F0F0         | 0xFF00FF00         | 0xFFF0FFF0         |
      | or  | uint64 | 0xFFFF0000FFFF0000 | 0x0F0F0F0F0F0F0F0F | 0xFFFF0F0FFFFF0F0F |
      | xor | uint32 | 0xF0F0F0F0         | 0xFF00FF00         | 0x0FF00FF0         |
      | xor | uint64 | 0xFFFF0000FFFF0000 | 0x0F0F0F0F0F0F0F0F | 0xF0F00F0FF0F00F0F |

  Scenario Outline: float <op> on <type> with signed zeros and NaN
    Given item "cell" holds the <type> <initial> at offset 8
    When I apply <op> to the <type> at offset 8 of item "cell" with <operand>
    Then the <type> at offset 8 of item "cell" is <result>

    Examples:
      | op        | type   | initial | operand | result |
      | min       | float  | 0       | -0      | -0     |
      | min       | double | -0      | 0       | -0     |
      | max       | float  | -0      | 0       | 0      |
      | max       | double | 0       | -0      | 0      |
      | min       | float  | 1       | NaN     | 1      |
      | max       | double | 1       | NaN     | 1      |
      | min       | double | NaN     | 4       | 4      |
      | max       | float  | NaN     | -4      | -4     |
      | fetch_min | float  | 0       | -0      | -0     |
      | fetch_max | double | -0      | 0       | 0      |

  Scenario Outline: <op> on <type> returns the previous value
    Given item "cell" holds the <type> <initial> at offset 24
    When I apply <op> to the <type> at offset 24 of item "cell" with <operand>
    Then the atomic returned <initial>
    And the <type> at offset 24 of item "cell" is <result>

    Examples: fetch_add
      | op        | type   | initial              | operand | result           |
      | fetch_add | int32  | 40                   | 2       | 42               |
      | fetch_add | int64  | -1                   | 1       | 0                |
      | fetch_add | uint32 | 4294967295           | 1       | 0                |
      | fetch_add | uint64 | 18446744073709551615 | 5       | 4                |
      | fetch_add | float  | 0.5                  | 0.25    | 0.75             |
      | fetch_add | double | 1e15                 | 1       | 1000000000000001 |

    Examples: fetch_subtract
      | op             | type   | initial | operand | result               |
      | fetch_subtract | int32  | 0       | 1       | -1                   |
      | fetch_subtract | int64  | 100     | 250     | -150                 |
      | fetch_subtract | uint32 | 1       | 2       | 4294967295           |
      | fetch_subtract | uint64 | 0       | 1       | 18446744073709551615 |
      | fetch_subtract | float  | 3       | 0.5     | 2.5                  |
      | fetch_subtract | double | 3       | 0.5     | 2.5                  |

    Examples: fetch_min and fetch_max
      | op        | type   | initial | operand              | result               |
      | fetch_min | int32  | 10      | -10                  | -10                  |
      | fetch_min | int64  | -5      | 5                    | -5                   |
      | fetch_min | uint32 | 7       | 4294967295           | 7                    |
      | fetch_min | uint64 | 9       | 2                    | 2                    |
      | fetch_min | float  | 1.25    | 1.5                  | 1.25                 |
      | fetch_min | double | 8       | -8                   | -8                   |
      | fetch_max | int32  | -10     | -20                  | -10                  |
      | fetch_max | int64  | 5       | 6                    | 6                    |
      | fetch_max | uint32 | 7       | 4294967295           | 4294967295           |
      | fetch_max | uint64 | 9       | 18446744073709551615 | 18446744073709551615 |
      | fetch_max | float  | 1.25    | 1.5                  | 1.5                  |
      | fetch_max | double | 8       | -8                   | 8                    |

    Examples: fetch_and, fetch_or, fetch_xor
      | op        | type   | initial            | operand            | result             |
      | fetch_and | uint32 | 0xF0F0F0F0         | 0xFF00FF00         | 0xF000F000         |
      | fetch_and | uint64 | 0xFFFF0000FFFF0000 | 0x0F0F0F0F0F0F0F0F | 0x0F0F00000F0F0000 |
      | fetch_or  | uint32 | 0xF0F0F0F0         | 0xFF00FF00         | 0xFFF0FFF0         |
      | fetch_or  | uint64 | 0xFFFF0000FFFF0000 | 0x0F0F0F0F0F0F0F0F | 0xFFFF0F0FFFFF0F0F |
      | fetch_xor | uint32 | 0xF0F0F0F0         | 0xFF00FF00         | 0x0FF00FF0         |
      | fetch_xor | uint64 | 0xFFFF0000FFFF0000 | 0x0F0F0F0F0F0F0F0F | 0xF0F00F0FF0F00F0F |

    Examples: swap
      | op   | type   | initial | operand              | result               |
      | swap | int32  | 1       | -1                   | -1                   |
      | swap | int64  | 2       | 9223372036854775807  | 9223372036854775807  |
      | swap | uint32 | 3       | 0                    | 0                    |
      | swap | uint64 | 4       | 18446744073709551615 | 18446744073709551615 |
      | swap | float  | 5       | -0.125               | -0.125               |
      | swap | double | 6       | 3.141592653589793    | 3.141592653589793    |

  Scenario Outline: fetch reads a <type> without changing it
    Given item "cell" holds the <type> <value> at offset 32
    When I fetch the <type> at offset 32 of item "cell"
    Then the atomic returned <value>
    And the <type> at offset 32 of item "cell" is <value>

    Examples:
      | type   | value                                   |
      | int32  | -123456                                 |
      | int64  | -1234567890123                          |
      | uint32 | 3000000000                              |
      | uint64 | 12345678901234567890                    |
      | float  | 0.1                                     |
      | double | -1e-300                                 |
      | int128 | 170141183460469231731687303715884105727 |

  Scenario Outline: compare_swap on <type> stores only on a match
    Given item "cell" holds the <type> <initial> at offset 16
    When I compare and swap the <type> at offset 16 of item "cell" expecting <expected> with <desired>
    Then the atomic returned <initial>
    And the <type> at offset 16 of item "cell" is <result>

    Examples:
      | type   | initial                                  | expected                                 | desired                                 | result                                  |
      | int32  | -7                                       | -7                                       | 9                                       | 9                                       |
      | int32  | -7                                       | 7                                        | 9                                       | -7                                      |
      | int64  | 9223372036854775807                      | 9223372036854775807                      | -1                                      | -1                                      |
      | int64  | 5                                        | 6                                        | -1                                      | 5                                       |
      | uint32 | 4294967295                               | 4294967295                               | 1                                       | 1                                       |
      | uint32 | 4294967295                               | 1                                        | 2                                       | 4294967295                              |
      | uint64 | 18446744073709551615                     | 18446744073709551615                     | 42                                      | 42                                      |
      | uint64 | 0                                        | 1                                        | 42                                      | 0                                       |
      | int128 | 18446744073709551616                     | 18446744073709551616                     | -2                                      | -2                                      |
      | int128 | -170141183460469231731687303715884105728 | -170141183460469231731687303715884105728 | 170141183460469231731687303715884105727 | 170141183460469231731687303715884105727 |
      | int128 | 18446744073709551616                     | 1                                        | -2                                      | 18446744073709551616                    |
      | int128 | 36893488147419103232                     | 18446744073709551616                     | 0                                       | 36893488147419103232                    |

  Scenario: int128 compare_swap compares all 16 bytes
    Given item "cell" holds the int128 18446744073709551617 at offset 48
    When I compare and swap the int128 at offset 48 of item "cell" expecting 1 with 5
    Then the atomic returned 18446744073709551617
    And the uint64 at offset 48 of item "cell" is 1
    And the uint64 at offset 56 of item "cell" is 1

  Scenario: atomics on an explicit context
    Given I open context "amo-ctx"
    And item "cell" holds the int64 10 at offset 8
    When I apply add to the int64 at offset 8 of item "cell" with 5 on context "amo-ctx"
    And I apply fetch_add to the int64 at offset 8 of item "cell" with 1 on context "amo-ctx"
    Then the atomic returned 15
    When I compare and swap the int64 at offset 8 of item "cell" expecting 16 with 100 on context "amo-ctx"
    And I fetch the int64 at offset 8 of item "cell" on context "amo-ctx"
    Then the atomic returned 100
    And I quiet context "amo-ctx"

  Scenario Outline: a misaligned <type> word is rejected
    When I try to apply set to the <type> at offset <offset> of item "cell" with 1
    Then it fails with FAM_EINVAL
    And reading 64 bytes at offset 0 of item "cell" gives 64 zero bytes

    Examples:
      | type   | offset |
      | int32  | 2      |
      | uint64 | 4      |
      | double | 12     |
      | int128 | 8      |

  Scenario Outline: a <type> word past the end of the item is rejected
    When I try to apply <op> to the <type> at offset <offset> of item "cell" with 1
    Then it fails with FAM_ERANGE

    Examples:
      | op        | type   | offset               |
      | add       | int32  | 64                   |
      | fetch_add | uint64 | 64                   |
      | set       | int128 | 64                   |
      | swap      | double | 18446744073709551608 |

  # Read-only for a user the mode binds (the owner is bound by none, as in
  # OpenFAM): here a group member, this instance on famd's Unix socket,
  # with the item mapped read-only on its host.
  Scenario: a read-only int128 word can be fetched
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix, beside user 7030 of my group over TCP
    And user 7030 creates region "ro128" of 64 KiB with mode 0770 and data item-level permissions
    And user 7030 allocates item "frozen" of 64 bytes with mode 0660 in region "ro128"
    And I look up item "frozen" in region "ro128"
    And item "frozen" holds the int128 -3 at offset 0
    And user 7030 changes the permissions of item "frozen" to 0640
    And I look up item "frozen" in region "ro128" as "frozen-ro"
    When I fetch the int128 at offset 0 of item "frozen-ro"
    Then the atomic returned -3
    When I try to apply set to the int128 at offset 0 of item "frozen-ro" with 1
    Then it fails with FAM_ENOPERM

  @go-only
  Scenario: a read-only int128 word can be fetched from the embedded store
    Given I create region "ro128e" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "frozen" of 64 bytes with mode 0640 in region "ro128e"
    And item "frozen" holds the int128 -3 at offset 0
    When I act as user 50005 of my group
    And I look up item "frozen" in region "ro128e" as "frozen-ro"
    And I fetch the int128 at offset 0 of item "frozen-ro"
    Then the atomic returned -3
    When I try to apply set to the int128 at offset 0 of item "frozen-ro" with 1
    Then it fails with FAM_ENOPERM
    When I act as myself again
    And I change the permissions of item "frozen" to 0400
    And I apply set to the int128 at offset 0 of item "frozen" with 1
    Then the int128 at offset 0 of item "frozen" is 1

  Scenario Outline: <op> on <type> served by famd over TCP
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over TCP
    And I create region "netamo" of 64 KiB with mode 0600
    And I allocate item "ncell" of 64 bytes with mode 0600 in region "netamo"
    And item "ncell" holds the <type> <initial> at offset 16
    When I apply <op> to the <type> at offset 16 of item "ncell" with <operand>
    Then the atomic returned <initial>
    And the <type> at offset 16 of item "ncell" is <result>

    Examples:
      | op        | type   | initial | operand | result |
      | fetch_add | int64  | 41      | 1       | 42     |
      | fetch_min | float  | 2       | -0.5    | -0.5   |
      | fetch_xor | uint32 | 0xFF    | 0x0F    | 0xF0   |
      | swap      | double | 1.5     | -1.5    | -1.5   |

  Scenario: a 128-bit compare_swap served by famd over TCP
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over TCP
    And I create region "net128" of 64 KiB with mode 0600
    And I allocate item "w" of 64 bytes with mode 0600 in region "net128"
    And item "w" holds the int128 -170141183460469231731687303715884105728 at offset 32
    When I compare and swap the int128 at offset 32 of item "w" expecting -170141183460469231731687303715884105728 with 99
    Then the atomic returned -170141183460469231731687303715884105728
    And the int128 at offset 32 of item "w" is 99
    When I fetch the int128 at offset 32 of item "w"
    Then the atomic returned 99
