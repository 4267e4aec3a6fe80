package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// backupsCommand lists and deletes backups through famd's ListBackups and
// DeleteBackup, which apply the caller's permissions: a listing shows only
// the backups the caller may read, and only one the caller may write can be
// deleted.
var backupsCommand = &command{
	name: "backups", args: "[list [PREFIX] | delete NAME]", summary: "list backups, or delete one",
	max: 2, run: cmdBackups, flags: yesFlag,
	help: "'famctl backups' and 'famctl backups list [PREFIX]' list the backups you\n" +
		"may read (those whose names start with PREFIX): NAME, SIZE, MODE, OWNER,\n" +
		"CREATED. With --json: {\"backups\": [{\"name\", \"size\", \"mode\", \"uid\",\n" +
		"\"gid\", \"owner\", \"created\"}, ...]}.\n\n" +
		"'famctl backups delete NAME' deletes one backup (you must own it or may\n" +
		"write it). " + confirmHelp,
}

// backupJSON is a backup in --json output.
type backupJSON struct {
	Name    string `json:"name"`
	Size    uint64 `json:"size"`
	Mode    string `json:"mode"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Owner   string `json:"owner"`
	Created string `json:"created"` // RFC 3339, UTC
}

func cmdBackups(s *session, o *cmdOpts, args []string) error {
	sub := "list"
	if len(args) > 0 {
		sub = args[0]
	}
	switch {
	case sub == "list" && len(args) <= 2:
		prefix := ""
		if len(args) == 2 {
			prefix = args[1]
		}
		return s.listBackupsCmd(prefix)
	case sub == "delete" && len(args) == 2:
		return s.deleteBackupCmd(o, args[1])
	case sub == "delete":
		return usagef("backups delete: want the NAME of one backup")
	}
	return usagef("backups: want 'list [PREFIX]' or 'delete NAME', not %q", strings.Join(args, " "))
}

func (s *session) listBackups(prefix string) ([]backupJSON, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.ListBackups(ctx, &pb.BackupNameRequest{Name: prefix})
	if err != nil {
		return nil, s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return nil, err
	}
	return parseBackupList(r.GetText())
}

// parseBackupList reads the core's listing: one backup a line, "name size
// mode uid gid created"; the name may itself hold spaces, so the fields
// are taken from the right.
func parseBackupList(text string) ([]backupJSON, error) {
	out := []backupJSON{}
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 {
			return nil, fmt.Errorf("famd listed a backup as %q: want name size mode uid gid created", line)
		}
		n := len(f)
		size, err1 := strconv.ParseUint(f[n-5], 10, 64)
		mode, err2 := strconv.ParseUint(f[n-4], 0, 32)
		uid, err3 := strconv.ParseUint(f[n-3], 10, 32)
		gid, err4 := strconv.ParseUint(f[n-2], 10, 32)
		_, err5 := time.Parse(time.RFC3339, f[n-1])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
			return nil, fmt.Errorf("famd listed a backup as %q: want name size mode uid gid created", line)
		}
		// The name is what precedes the five fields, spaces kept.
		name := strings.TrimSuffix(line, " "+strings.Join(f[n-5:], " "))
		out = append(out, backupJSON{Name: name, Size: size, Mode: fmtMode(uint32(mode)), UID: uint32(uid), GID: uint32(gid),
			Owner: owner(uint32(uid), uint32(gid)), Created: f[n-1]})
	}
	return out, nil
}

func (s *session) listBackupsCmd(prefix string) error {
	bs, err := s.listBackups(prefix)
	if err != nil {
		return err
	}
	if s.g.json {
		return s.emit(map[string]any{"backups": bs})
	}
	t := newTable(s.stdout, "NAME", "SIZE", "MODE", "OWNER", "CREATED")
	for _, b := range bs {
		t.row(b.Name, fmtSize(b.Size), b.Mode, b.Owner, b.Created)
	}
	return t.flush()
}

func (s *session) deleteBackupCmd(o *cmdOpts, name string) error {
	what := fmt.Sprintf("backup %s", name)
	bs, err := s.listBackups(name)
	if err != nil {
		return err
	}
	var found *backupJSON
	for i := range bs {
		if bs[i].Name == name {
			found = &bs[i]
		}
	}
	if found != nil {
		what = fmt.Sprintf("backup %s (%s, owner %s, created %s)", name, fmtSize(found.Size), found.Owner, found.Created)
	}
	if err := confirm(o, "backups delete", what); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	r, err := s.fam.DeleteBackup(ctx, &pb.BackupNameRequest{Name: name})
	if err != nil {
		return s.transport(err)
	}
	if err := check(r.GetErr()); err != nil {
		return err
	}
	if s.g.json {
		deleted := backupJSON{Name: name}
		if found != nil {
			deleted = *found
		}
		return s.emit(map[string]any{"deleted": deleted})
	}
	fmt.Fprintf(s.stdout, "deleted backup %s\n", name)
	return nil
}
