package core

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Options configure an instance. Start from DefaultOptions, which applies the
// environment, and change what you need.
type Options struct {
	// Group is the OpenFAM group name given to fam_initialize (informational).
	Group string
	// DataDir holds metadata, persistent regions and (by default) backups.
	// Default: $OPENFAM_DATA_DIR, else $XDG_DATA_HOME/openfam, else
	// ~/.local/share/openfam.
	DataDir string
	// ShmDir holds the files of volatile regions; it should be on tmpfs.
	// Default: $OPENFAM_SHM_DIR, else /dev/shm/openfam-<uid>.
	ShmDir string
	// BackupDir is the archive directory of fam_backup. Default:
	// $OPENFAM_BACKUP_DIR, else DataDir/backups.
	BackupDir string
	// DefaultMemoryType is used for regions created with MemoryDefault.
	// Default: $OPENFAM_DEFAULT_MEMORY_TYPE ("volatile" or "persistent"),
	// else Volatile.
	DefaultMemoryType MemoryType
	// UID and GID are the identity permission checks use; -1 means the
	// process's real ids. Only tests and trusted servers set them.
	UID, GID int
	// PEID and PECount give this PE's rank and the job size; -1 means "from
	// the launcher's environment" (famrun, SLURM, PMI, Open MPI) or 0 and 1.
	PEID, PECount int
	// Settings holds OpenFAM option values by their fam_get_option names
	// (OPENFAM_MODEL, RUNTIME, ...). Unset names take OpenFAM's defaults.
	Settings map[string]string
	// Server names the famd to use: "unix:/path/to/socket" (same host:
	// identity from the kernel, items mapped locally) or "host:port" (needs
	// TokenFile). Empty: the embedded service. Default: $OPENFAM_SERVER.
	Server string
	// TokenFile holds the cluster token for a TCP Server (mode 0600).
	// Default: $OPENFAM_TOKEN_FILE.
	TokenFile string
	// Timeout bounds each call to an unresponsive server. Default:
	// $OPENFAM_TIMEOUT (a Go duration such as "5s", or seconds), else 10s.
	Timeout time.Duration
	// Spin is how long a caller blocked on a reply from a memory server
	// over TCP polls the socket before sleeping (0: never). Polling saves
	// the wake-ups of a sleeping thread, which cost more than a loopback
	// round trip, at the price of up to Spin of CPU per blocking call; the
	// C library turns it on (100us) because its callers' threads pay a
	// second wake-up through cgo. Default: $OPENFAM_SPIN (a Go duration;
	// "0" turns it off), else 0.
	Spin time.Duration
	// Placer, when set, places new regions on memory servers (famd's
	// metadata service sets it; see Placer). Not read from the
	// environment.
	Placer Placer
	// Persist says when writes to persistent regions reach stable
	// storage (see PersistPolicy). Default: $OPENFAM_PERSIST ("quiet",
	// "each" or "lazy"), else quiet.
	Persist PersistPolicy
	// PersistInterval is the lazy policy's flush period. Default:
	// $OPENFAM_PERSIST_INTERVAL (a Go duration), else
	// DefaultPersistInterval (5s).
	PersistInterval time.Duration
	// Provider is the data-plane provider the program insists on with a
	// famd-served instance: "tcp" (the project's own protocol) or a
	// libfabric provider string ("tcp;ofi_rxm", "sockets", ...). A server
	// running another is refused with both names. "" follows the
	// servers (an OpenFAM LIBFABRIC_PROVIDER setting that differs only
	// warns; see fabricplane.go). Embedded instances ignore it. Default:
	// $OPENFAM_PROVIDER.
	Provider string
	// persistErr is a bad $OPENFAM_PERSIST* value, reported by Initialize.
	persistErr error
}

// DefaultOptions returns options filled from the environment: see each
// field of Options for the variables it reads.
func DefaultOptions() Options {
	o := Options{Group: "default", UID: -1, GID: -1, PEID: -1, PECount: -1}
	o.DataDir = os.Getenv("OPENFAM_DATA_DIR")
	o.ShmDir = os.Getenv("OPENFAM_SHM_DIR")
	o.BackupDir = os.Getenv("OPENFAM_BACKUP_DIR")
	o.Server = os.Getenv("OPENFAM_SERVER")
	o.TokenFile = os.Getenv("OPENFAM_TOKEN_FILE")
	o.Provider = os.Getenv("OPENFAM_PROVIDER")
	if t := os.Getenv("OPENFAM_TIMEOUT"); t != "" {
		if d, err := time.ParseDuration(t); err == nil {
			o.Timeout = d
		} else if n, err := strconv.Atoi(t); err == nil {
			o.Timeout = time.Duration(n) * time.Second
		}
	}
	if t := os.Getenv("OPENFAM_SPIN"); t != "" {
		if d, err := time.ParseDuration(t); err == nil && d >= 0 {
			o.Spin = d
		}
	}
	o.persistFromEnv()
	switch strings.ToLower(os.Getenv("OPENFAM_DEFAULT_MEMORY_TYPE")) {
	case "persistent":
		o.DefaultMemoryType = Persistent
	case "volatile":
		o.DefaultMemoryType = Volatile
	}
	return o
}

// resolveDirs fills the directory defaults that DefaultOptions left empty.
func (o *Options) resolveDirs() {
	if o.DataDir == "" {
		base := os.Getenv("XDG_DATA_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil || home == "" {
				home = os.TempDir()
			}
			base = filepath.Join(home, ".local", "share")
		}
		o.DataDir = filepath.Join(base, "openfam")
	}
	if o.ShmDir == "" {
		shm := "/dev/shm"
		if st, err := os.Stat(shm); err != nil || !st.IsDir() {
			shm = os.TempDir()
		}
		o.ShmDir = filepath.Join(shm, "openfam-"+strconv.Itoa(os.Getuid()))
	}
	if o.BackupDir == "" {
		o.BackupDir = filepath.Join(o.DataDir, "backups")
	}
}

// launcherRank reads rank and size from whichever launcher started us.
func launcherRank() (rank, size int) {
	pairs := [][2]string{
		{"FAMRUN_RANK", "FAMRUN_SIZE"},
		{"PMI_RANK", "PMI_SIZE"},
		{"SLURM_PROCID", "SLURM_NTASKS"},
		{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	}
	for _, p := range pairs {
		r, errR := strconv.Atoi(os.Getenv(p[0]))
		s, errS := strconv.Atoi(os.Getenv(p[1]))
		if errR == nil && errS == nil && s > 0 && r >= 0 && r < s {
			return r, s
		}
	}
	return 0, 1
}

// optionNames is OpenFAM 3.2's fam_list_options order; programs index it.
var optionNames = []string{
	"VERSION", "DEFAULT_REGION_NAME", "CIS_SERVER", "GRPC_PORT", "LIBFABRIC_PROVIDER",
	"FAM_THREAD_MODEL", "CIS_INTERFACE_TYPE", "OPENFAM_MODEL", "FAM_CONTEXT_MODEL",
	"PE_COUNT", "PE_ID", "RUNTIME", "NUM_CONSUMER", "FAM_DEFAULT_MEMORY_TYPE", "IF_DEVICE",
	"LOC_BUF_ADDR", "LOC_BUF_SIZE",
}

// APIVersion is the OpenFAM API version this implementation matches.
const APIVersion = "3.2.0"

var optionDefaults = map[string]string{
	"DEFAULT_REGION_NAME": "Default", "CIS_SERVER": "127.0.0.1", "GRPC_PORT": "8787",
	"LIBFABRIC_PROVIDER": "sockets", "FAM_THREAD_MODEL": "FAM_THREAD_MULTIPLE",
	"CIS_INTERFACE_TYPE": "rpc", "OPENFAM_MODEL": "shared_memory",
	"FAM_CONTEXT_MODEL": "FAM_CONTEXT_DEFAULT", "RUNTIME": "NONE", "NUM_CONSUMER": "1",
	"FAM_DEFAULT_MEMORY_TYPE": "volatile", "IF_DEVICE": "", "LOC_BUF_ADDR": "(nil)",
	"LOC_BUF_SIZE": "0",
}

var optionChoices = map[string][]string{
	"FAM_THREAD_MODEL":        {"FAM_THREAD_SERIALIZE", "FAM_THREAD_MULTIPLE"},
	"CIS_INTERFACE_TYPE":      {"direct", "rpc"},
	"OPENFAM_MODEL":           {"memory_server", "shared_memory"},
	"FAM_CONTEXT_MODEL":       {"FAM_CONTEXT_DEFAULT", "FAM_CONTEXT_REGION"},
	"RUNTIME":                 {"PMIX", "PMI2", "NONE"},
	"FAM_DEFAULT_MEMORY_TYPE": {"", "volatile", "persistent"},
}

// OptionNames lists the option names of fam_list_options in OpenFAM's order.
// The caller owns the returned slice.
func OptionNames() []string { return append([]string(nil), optionNames...) }

// checkSettings validates OpenFAM option values the way OpenFAM does.
func checkSettings(s map[string]string) error {
	for k, v := range s {
		if _, known := optionDefaults[k]; !known {
			return Errorf(CodeInvalid, "fam_initialize", "unknown option %q", k)
		}
		if choices, ok := optionChoices[k]; ok {
			found := false
			for _, c := range choices {
				if strings.EqualFold(c, v) {
					found = true
				}
			}
			if !found {
				return Errorf(CodeInvalid, "fam_initialize", "option %s=%q is not one of %q", k, v, choices)
			}
		}
	}
	return nil
}
