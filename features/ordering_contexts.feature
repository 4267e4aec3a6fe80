@ordering_contexts
Feature: Ordering and contexts
  Non-blocking operations return before they are complete. fam_fence orders
  the instance's earlier non-blocking operations before its later ones;
  fam_quiet waits until every operation issued on the instance's default
  context is complete and reports the first error among them, after which
  fam_progress counts zero. fam_copy starts a copy between two items in the
  background: its wait handle reports the result, and the copy is among the
  operations quiet waits for. A context (fam_context_open) is an independent
  stream with its own completion tracking: fam_ctx_quiet waits for that
  context's operations only, and closing a context waits for them too. The
  default context cannot be closed, and a closed context is rejected with
  FAM_EINVAL. These rules hold for an embedded instance and for one served
  by famd over the network, where non-blocking transfers really are in
  flight when they return. As in OpenFAM, a non-blocking transfer that fails
  (no permission, an unreachable server) is reported by the fam_quiet that
  completes it, not by the call that issued it; that call still refuses bad
  arguments at once.

  Scenario: quiet reports the failure of a non-blocking put, not the put
    Given user 7020 of another group created region "theirs" of 64 KiB with mode 0666 and item "ro" of 64 bytes with mode 0644
    And an OpenFAM instance
    And I look up item "ro" in region "theirs"
    When I put "nope" at offset 0 of item "ro" non-blocking
    And I try to quiet
    Then it fails with FAM_ENOPERM
    And reading 4 bytes at offset 0 of item "ro" gives 4 zero bytes
    When I try to quiet
    Then it succeeds

  Scenario: a non-blocking put still refuses bad arguments at once
    Given an OpenFAM instance
    And I create region "args" of 64 KiB with mode 0600
    And I allocate item "small" of 64 bytes with mode 0600 in region "args"
    When I try to put "too far" at offset 60 of item "small" non-blocking
    Then it fails with FAM_ERANGE

  Scenario: quiet completes non-blocking puts before a get sees them
    Given an OpenFAM instance
    And I create region "ord" of 64 KiB with mode 0600
    And I allocate item "log" of 4096 bytes with mode 0600 in region "ord"
    When I put "one" at offset 0 of item "log" non-blocking
    And I fence
    And I put "two" at offset 0 of item "log" non-blocking
    And I quiet
    Then the operations in progress number 0
    And reading 3 bytes at offset 0 of item "log" gives "two"

  Scenario: a copy runs in the background and its wait reports success
    Given an OpenFAM instance
    And I create region "cp" of 1 MiB with mode 0600
    And I allocate item "src" of 4096 bytes with mode 0600 in region "cp"
    And I allocate item "dst" of 4096 bytes with mode 0600 in region "cp"
    And I put "copy me please" at offset 100 of item "src"
    When I copy 14 bytes from offset 100 of item "src" to offset 3000 of item "dst"
    And I wait for the copy
    Then reading 14 bytes at offset 3000 of item "dst" gives "copy me please"

  Scenario: quiet waits for a background copy
    Given an OpenFAM instance
    And I create region "cpq" of 1 MiB with mode 0600
    And I allocate item "big" of 262144 bytes with mode 0600 in region "cpq"
    And I allocate item "twin" of 262144 bytes with mode 0600 in region "cpq"
    And I put 262144 bytes of "c" at offset 0 of item "big"
    When I copy 262144 bytes from offset 0 of item "big" to offset 0 of item "twin"
    And I quiet
    Then the operations in progress number 0
    And reading 262144 bytes at offset 0 of item "twin" gives 262144 bytes of "c"
    And I wait for the copy

  Scenario: a copy out of range is refused before it starts
    Given an OpenFAM instance
    And I create region "cpr" of 64 KiB with mode 0600
    And I allocate item "a" of 100 bytes with mode 0600 in region "cpr"
    And I allocate item "b" of 50 bytes with mode 0600 in region "cpr"
    When I try to copy 60 bytes from offset 0 of item "a" to offset 0 of item "b"
    Then it fails with FAM_ERANGE
    When I try to copy 10 bytes from offset 95 of item "a" to offset 0 of item "b"
    Then it fails with FAM_ERANGE

  Scenario: contexts complete their own operations
    Given an OpenFAM instance
    And I create region "ctx" of 64 KiB with mode 0600
    And I allocate item "x" of 4096 bytes with mode 0600 in region "ctx"
    And I open context "c1"
    And I open context "c2"
    When I put "from c1" at offset 0 of item "x" non-blocking on context "c1"
    And I put "from c2" at offset 100 of item "x" non-blocking on context "c2"
    And I quiet context "c1"
    And I quiet context "c2"
    Then the operations in progress on context "c1" number 0
    And the operations in progress on context "c2" number 0
    And reading 7 bytes at offset 0 of item "x" gives "from c1"
    And reading 7 bytes at offset 100 of item "x" gives "from c2"
    When I close context "c1"
    And I try to quiet context "c1"
    Then it fails with FAM_EINVAL
    When I try to close context "c1"
    Then it fails with FAM_EINVAL
    And I close context "c2"

  Scenario: a copy on a context is waited for by that context's quiet
    Given an OpenFAM instance
    And I create region "ctxcp" of 1 MiB with mode 0600
    And I allocate item "from" of 65536 bytes with mode 0600 in region "ctxcp"
    And I allocate item "to" of 65536 bytes with mode 0600 in region "ctxcp"
    And I put 65536 bytes of "z" at offset 0 of item "from"
    And I open context "mover"
    When I copy 65536 bytes from offset 0 of item "from" to offset 0 of item "to" on context "mover"
    And I quiet context "mover"
    Then the operations in progress on context "mover" number 0
    And reading 65536 bytes at offset 0 of item "to" gives 65536 bytes of "z"
    And I wait for the copy

  Scenario: non-blocking transfers over the network are in flight until quiet
    Given an OpenFAM instance served by famd over TCP
    And I create region "wire" of 4 MiB with mode 0600
    And I allocate item "w" of 1048576 bytes with mode 0600 in region "wire"
    And I put 1048576 bytes of "n" at offset 0 of item "w"
    When I get 1048572 bytes at offset 0 of item "w" into buffer "in" non-blocking
    And I put "tail" at offset 1048572 of item "w" non-blocking
    And I quiet
    Then the operations in progress number 0
    And buffer "in" holds 1048572 bytes of "n"
    And reading 4 bytes at offset 1048572 of item "w" gives "tail"

  Scenario: a network copy is waited for by quiet
    Given an OpenFAM instance served by famd over TCP
    And I create region "wcp" of 4 MiB with mode 0600
    And I allocate item "p" of 1048576 bytes with mode 0600 in region "wcp"
    And I allocate item "q" of 1048576 bytes with mode 0600 in region "wcp"
    And I put 1048576 bytes of "p" at offset 0 of item "p"
    When I copy 1 MiB from offset 0 of item "p" to offset 0 of item "q"
    And I quiet
    Then the operations in progress number 0
    And reading 1048576 bytes at offset 0 of item "q" gives 1048576 bytes of "p"
    And I wait for the copy

  Scenario: contexts on a famd-served instance quiet independently
    Given an OpenFAM instance served by famd over TCP
    And I create region "wctx" of 4 MiB with mode 0600
    And I allocate item "v" of 2097152 bytes with mode 0600 in region "wctx"
    And I open context "slow"
    When I put 2097152 bytes of "s" at offset 0 of item "v" non-blocking on context "slow"
    And I quiet context "slow"
    Then the operations in progress on context "slow" number 0
    And reading 2097152 bytes at offset 0 of item "v" gives 2097152 bytes of "s"
    And I close context "slow"
