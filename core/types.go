package core

import (
	"fmt"
	"math"
)

// MemoryType says where a region's bytes live. Values equal fam_memory_type_t.
type MemoryType uint8

const (
	MemoryDefault MemoryType = iota // the instance's default (Options.DefaultMemoryType)
	Volatile                        // tmpfs: survives processes, not a reboot
	Persistent                      // a disk file: survives reboots
)

// Interleave says whether items are striped over the region's memory
// servers. Values equal fam_interleave_t.
type Interleave uint8

const (
	InterleaveDefault Interleave = iota
	InterleaveEnable
	InterleaveDisable
)

// Redundancy is recorded with a region. Values equal fam_redundancy_level_t.
type Redundancy uint8

const (
	RedundancyDefault Redundancy = iota
	RedundancyNone
	RAID1
	RAID5
)

// PermLevel says whose mode bits govern a region's items: the region's
// (PermRegion, the default) or each item's own. Values equal
// fam_permission_level_t.
type PermLevel uint8

const (
	PermDefault PermLevel = iota
	PermRegion
	PermDataItem
)

// RegionAttr are a region's non-functional properties.
type RegionAttr struct {
	Redundancy Redundancy
	Memory     MemoryType
	Interleave Interleave
	PermLevel  PermLevel
}

// GlobalDesc names a region or item across processes and runs. A region's
// descriptor has Offset == RegionOffset.
type GlobalDesc struct{ RegionID, Offset uint64 }

// RegionOffset is the Offset of a region's global descriptor.
const RegionOffset = math.MaxUint64

// Stat describes a region or item (fam_stat_t).
type Stat struct {
	Size           uint64
	Mode           uint32
	Name           string
	UID, GID       uint32
	Attr           RegionAttr // zero for items, as in OpenFAM
	NumServers     uint64
	InterleaveSize uint64
	Servers        []uint64
}

// Rights are what the caller may do with an item.
type Rights uint8

const (
	RightRead  Rights = 1
	RightWrite Rights = 2
)

// NameMax is the longest region or item name in bytes.
const NameMax = 255

// checkName validates a region or data item name: 1 to NameMax bytes and
// not path-like (see nameProblem). Names become file and key names on the
// service side, so a name such as ".." or "a/b" is refused rather than
// trusted to be harmless there.
func checkName(op, what, name string) error {
	if name == "" {
		return Errorf(CodeInvalid, op, "%s name is empty", what)
	}
	if len(name) > NameMax {
		return Errorf(CodeNameTooLong, op, "%s name %q is %d bytes; the limit is %d", what, name, len(name), NameMax)
	}
	if p := nameProblem(name); p != "" {
		return Errorf(CodeInvalid, op, "%s name %q %s", what, name, p)
	}
	return nil
}

// nameProblem says why name is path-like ("" if it is not): it contains
// '/', NUL or another control character (below 0x20, or 0x7f), or is "."
// or "..". Bytes from 0x80 up (UTF-8) are allowed.
func nameProblem(name string) string {
	if name == "." || name == ".." {
		return "is a path component (\".\" and \"..\" are not allowed)"
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '/':
			return "contains '/'"
		case c == 0:
			return "contains NUL"
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("contains the control character 0x%02x at byte %d", c, i)
		}
	}
	return ""
}

// ModeMask is the permission bits a region or data item mode may carry.
const ModeMask = 0o777

// checkMode refuses a mode with any bit outside ModeMask (setuid, sticky,
// file-type bits, or garbage from an unsigned conversion): OpenFAM modes
// are rwx for owner, group and others, and silently dropping bits would
// hide a caller's mistake.
func checkMode(op string, mode uint32) error {
	if mode&^ModeMask != 0 {
		return Errorf(CodeInvalid, op, "mode %#o has bits outside 0777 set (%#o)", mode, mode&^ModeMask)
	}
	return nil
}

// rightsFor is the caller's rights on a region, data item or backup with
// the given mode and owner. The owner may always read and write, whatever
// the mode: OpenFAM checks mode bits only when the caller is not the owner
// (a program may create a region 0444 and allocate in it, or chmod its own
// item 0333 and read it), and programs written for it rely on that. Mode
// bits bind everyone else: the group class if gid matches, else other.
// Root gets no bypass when it is not the owner: the bits are the contract.
func rightsFor(mode, ouid, ogid, uid, gid uint32) Rights {
	var bits uint32
	switch {
	case uid == ouid:
		return RightRead | RightWrite
	case gid == ogid:
		bits = mode >> 3
	default:
		bits = mode
	}
	var r Rights
	if bits&4 != 0 {
		r |= RightRead
	}
	if bits&2 != 0 {
		r |= RightWrite
	}
	return r
}
