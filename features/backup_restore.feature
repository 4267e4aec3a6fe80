@backup_restore
Feature: Backup and restore
  fam_backup copies a data item's bytes, size and mode into a named backup in
  the archive directory; fam_restore copies a backup back into an existing
  item at least as large as the backup, and fam_restore_region allocates a
  new item for it. Each returns a wait handle whose *_wait call reports the
  result. fam_list_backup describes the backups whose names start with a
  prefix, one line "name size mode uid gid time" each, and fam_delete_backup
  removes one. Backup names are unique: backing up to a taken name fails with
  FAM_EEXIST; restoring or deleting a missing backup fails with
  FAM_EBACKUPNOTFOUND; restoring into a smaller item fails with FAM_ERANGE.
  A backup carries the owner and mode that governed its item when it was
  taken (the region's with region-level permissions, the item's own with
  data item-level permissions) and is protected by them like an item:
  listing shows only the backups the caller may read, restoring needs read
  on the backup and write on the target, deleting needs ownership or write,
  and the names are shared by all users, so another user's backup can be
  neither replaced nor taken over. Denials fail with FAM_ENOPERM and change
  nothing.

  Background:
    Given an OpenFAM instance
    And I create region "vault" of 1 MiB with mode 0600
    And I allocate item "ledger" of 4096 bytes with mode 0640 in region "vault"
    And I put "balance=100" at offset 0 of item "ledger"

  Scenario: a backup restores the bytes it was taken with
    When I back up item "ledger" as "ledger-monday"
    And I put "balance=999" at offset 0 of item "ledger"
    And I restore backup "ledger-monday" into item "ledger"
    Then reading 11 bytes at offset 0 of item "ledger" gives "balance=100"

  Scenario: a backup restores into a new item
    Given I back up item "ledger" as "ledger-copy"
    When I restore backup "ledger-copy" as a new item "ledger2" with mode 0600 in region "vault"
    Then reading 11 bytes at offset 0 of item "ledger2" gives "balance=100"
    And item "ledger2" has
      | field | value   |
      | size  | 4096    |
      | name  | ledger2 |

  Scenario: restoring into a larger item leaves the rest alone
    Given I back up item "ledger" as "small-one"
    And I allocate item "larger" of 8192 bytes with mode 0600 in region "vault"
    And I put 8192 bytes of "L" at offset 0 of item "larger"
    When I restore backup "small-one" into item "larger"
    Then reading 11 bytes at offset 0 of item "larger" gives "balance=100"
    And reading 4096 bytes at offset 4096 of item "larger" gives 4096 bytes of "L"

  Scenario: restoring into a smaller item is refused
    Given I back up item "ledger" as "too-big"
    And I allocate item "tiny" of 100 bytes with mode 0600 in region "vault"
    When I try to restore backup "too-big" into item "tiny"
    Then it fails with FAM_ERANGE
    And reading 100 bytes at offset 0 of item "tiny" gives 100 zero bytes

  Scenario: backups are listed by prefix
    Given I back up item "ledger" as "daily-1"
    And I back up item "ledger" as "daily-2"
    And I back up item "ledger" as "weekly-1"
    Then listing the backups starting with "daily-" shows 2 backups
    And listing the backups starting with "" shows 3 backups
    And listing the backups starting with "monthly" shows 0 backups
    And the backup listing for "weekly" has a line for "weekly-1" of 4096 bytes with mode 0600

  Scenario: a deleted backup is gone
    Given I back up item "ledger" as "temp"
    When I delete backup "temp"
    Then listing the backups starting with "temp" shows 0 backups
    When I try to restore backup "temp" into item "ledger"
    Then it fails with FAM_EBACKUPNOTFOUND
    When I try to delete backup "temp"
    Then it fails with FAM_EBACKUPNOTFOUND

  Scenario: backup names are unique
    Given I back up item "ledger" as "once"
    When I try to back up item "ledger" as "once"
    Then it fails with FAM_EEXIST

  Scenario: a backup outlives its item
    Given I back up item "ledger" as "archive"
    And I deallocate item "ledger"
    When I restore backup "archive" as a new item "reborn" with mode 0600 in region "vault"
    Then reading 11 bytes at offset 0 of item "reborn" gives "balance=100"

  Scenario: backup and restore through famd
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix
    And I create region "remote-vault" of 64 KiB with mode 0600
    And I allocate item "doc" of 512 bytes with mode 0600 in region "remote-vault"
    And I put "remote state" at offset 0 of item "doc"
    When I back up item "doc" as "doc-v1"
    And I put "overwritten!" at offset 0 of item "doc"
    And I restore backup "doc-v1" into item "doc"
    Then reading 12 bytes at offset 0 of item "doc" gives "remote state"
    And listing the backups starting with "doc-" shows 1 backup
    When I try to restore backup "doc-v2" into item "doc"
    Then it fails with FAM_EBACKUPNOTFOUND

  Scenario: a backup carries the mode that governed its item
    Given I create region "per-item" of 64 KiB with mode 0600 and data item-level permissions
    And I allocate item "shared" of 64 bytes with mode 0644 in region "per-item"
    When I back up item "ledger" as "by-region"
    And I back up item "shared" as "by-item"
    Then the backup listing for "by-region" has a line for "by-region" of 4096 bytes with mode 0600
    And the backup listing for "by-item" has a line for "by-item" of 64 bytes with mode 0644

  Scenario: another user's private backup cannot be listed, restored, deleted or taken over
    Given user 7000 of another group has a backup "their-secret" of an item holding "not yours" in a region with mode 0700
    Then listing the backups starting with "their" shows 0 backups
    When I try to restore backup "their-secret" into item "ledger"
    Then it fails with FAM_ENOPERM
    And reading 11 bytes at offset 0 of item "ledger" gives "balance=100"
    When I try to restore backup "their-secret" as a new item "stolen" with mode 0600 in region "vault"
    Then it fails with FAM_ENOPERM
    When I try to look up item "stolen" in region "vault"
    Then it fails with FAM_ENOTFOUND
    When I try to delete backup "their-secret"
    Then it fails with FAM_ENOPERM
    When I try to back up item "ledger" as "their-secret"
    Then it fails with FAM_EEXIST
    And user 7000 of another group still finds "not yours" in backup "their-secret"

  Scenario: a group member restores a group-readable backup but may not delete it
    Given user 7001 of my group has a backup "team-notes" of an item holding "for the team" in a region with mode 0750
    Then listing the backups starting with "team" shows 1 backup
    When I restore backup "team-notes" as a new item "notes" with mode 0600 in region "vault"
    Then reading 12 bytes at offset 0 of item "notes" gives "for the team"
    When I try to delete backup "team-notes"
    Then it fails with FAM_ENOPERM
    And user 7001 of my group still finds "for the team" in backup "team-notes"

  Scenario: a backup writable by others may be deleted by them
    Given user 7002 of another group has a backup "scratch" of an item holding "disposable" in a region with mode 0707
    When I delete backup "scratch"
    Then listing the backups starting with "scratch" shows 0 backups

  Scenario: another user's private backup is refused through famd too
    Given I finalize OpenFAM
    And an OpenFAM instance served by famd over unix
    And I create region "remote-vault" of 64 KiB with mode 0600
    And I allocate item "doc" of 512 bytes with mode 0600 in region "remote-vault"
    And user 7003 of another group has a backup "their-doc" of an item holding "famd keeps it" in a region with mode 0700
    Then listing the backups starting with "" shows 0 backups
    When I try to restore backup "their-doc" into item "doc"
    Then it fails with FAM_ENOPERM
    When I try to restore backup "their-doc" as a new item "stolen" with mode 0600 in region "remote-vault"
    Then it fails with FAM_ENOPERM
    When I try to delete backup "their-doc"
    Then it fails with FAM_ENOPERM
    When I try to back up item "doc" as "their-doc"
    Then it fails with FAM_EEXIST
    And user 7003 of another group still finds "famd keeps it" in backup "their-doc"
