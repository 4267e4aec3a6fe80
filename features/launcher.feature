@launcher
Feature: The launcher and the barrier
  A job is a set of PEs started together by a launcher (famrun, SLURM, PMI or
  Open MPI), each told its rank and the job size; fam_get_option reports them
  as PE_ID and PE_COUNT, 0 and 1 for a program run alone. fam_barrier_all
  returns once every PE of the job has called it, so what any PE wrote before
  the barrier is visible to every PE after it. Alone it returns at once. PEs
  of one job meet at their famd under the job's id (FAMRUN_JOB); an embedded
  instance in a multi-PE job has nowhere to meet and fails with FAM_EUNIMPL.
  In these scenarios PE 0 is the instance under test, configured through the
  FAMRUN_* environment exactly as famrun configures a PE, and the other PEs
  are Go clients of the same famd with their own ranks: one process can hold
  only one C-ABI instance, so the C backend runs PE 0 while the Go core runs
  the rest, all against one real famd. A job may also run against a famd
  with K memory servers (what famrun --servers K starts): its regions are
  striped over all K, and every PE reads and writes them as any other; here
  that famd and its memory servers run in the test process.

  Scenario: a program run alone is PE 0 of 1 and its barrier returns at once
    Given an OpenFAM instance
    Then PE_ID is 0 and PE_COUNT is 1
    And I call fam_barrier_all

  Scenario: a PE learns its rank and the job size from the launcher
    Given a famd running job "job-17" of 3 PEs, where this instance is PE 0
    Then PE_ID is 0 and PE_COUNT is 3

  Scenario: what every PE wrote before the barrier is visible after it
    Given a famd running job "job-42" of 3 PEs, where this instance is PE 0
    And I create region "job" of 64 KiB with mode 0600
    And I allocate item "ranks" of 64 bytes with mode 0600 in region "job"
    Then every PE writes its rank plus 100 into item "ranks" of region "job", calls fam_barrier_all and then reads every rank

  Scenario: a job meets at the barrier more than once
    Given a famd running job "job-43" of 2 PEs, where this instance is PE 0
    And I create region "again" of 64 KiB with mode 0600
    And I allocate item "ranks" of 64 bytes with mode 0600 in region "again"
    Then every PE writes its rank plus 100 into item "ranks" of region "again", calls fam_barrier_all and then reads every rank
    And every PE writes its rank plus 100 into item "ranks" of region "again", calls fam_barrier_all and then reads every rank

  Scenario: an embedded instance cannot hold a barrier for several PEs
    Given an OpenFAM instance without famd in a job of 2 PEs
    When I try to call fam_barrier_all
    Then it fails with FAM_EUNIMPL

  Scenario: a job striped over two memory servers
    Given a famd with 2 memory servers running job "wide" of 2 PEs, where this instance is PE 0
    When I create region "striped" of 1 MiB with mode 0600
    Then region "striped" has
      | field          | value |
      | memory servers | 2     |
    And PE_ID is 0 and PE_COUNT is 2

  Scenario: an item interleaved over two memory servers reads back whole
    Given a famd with 2 memory servers running job "wide2" of 2 PEs, where this instance is PE 0
    And I create region "inter" of 1 MiB with mode 0600
    And I allocate item "span" of 262144 bytes with mode 0600 in region "inter"
    When I put 262144 bytes of "s" at offset 0 of item "span"
    Then reading 262144 bytes at offset 0 of item "span" gives 262144 bytes of "s"
    And every PE writes its rank plus 100 into item "span" of region "inter", calls fam_barrier_all and then reads every rank
