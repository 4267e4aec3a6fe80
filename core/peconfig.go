package core

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OpenFAM 3.2 programs configure a PE with fam_pe_config.yaml under
// $OPENFAM_ROOT/config (or /opt/OpenFAM/config). Its keys differ from the
// option names; peConfigKeys maps the ones that mean something here.
var peConfigKeys = map[string]string{
	"FamThreadModel":        "FAM_THREAD_MODEL",
	"provider":              "LIBFABRIC_PROVIDER",
	"openfam_model":         "OPENFAM_MODEL",
	"runtime":               "RUNTIME",
	"client_interface_type": "CIS_INTERFACE_TYPE",
	"if_device":             "IF_DEVICE",
	"default_memory_type":   "FAM_DEFAULT_MEMORY_TYPE",
}

// peConfigPath returns the config file to read, "" for none. OpenFAM treats
// a set OPENFAM_ROOT without the file as an error; so do we.
func peConfigPath() (string, error) {
	if root := os.Getenv("OPENFAM_ROOT"); root != "" {
		p := filepath.Join(root, "config", "fam_pe_config.yaml")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("config file %s not found ($OPENFAM_ROOT is set)", p)
		}
		return p, nil
	}
	p := "/opt/OpenFAM/config/fam_pe_config.yaml"
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", nil
}

// readPEConfig reads the flat "key: value" YAML of fam_pe_config.yaml into
// option settings. Values already in into (from Fam_Options) win, as in
// OpenFAM. Unknown keys are ignored: the file also carries keys for
// OpenFAM's own services.
func readPEConfig(path string, into map[string]string) error {
	fl, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fl.Close()
	sc := bufio.NewScanner(fl)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.Index(s, "#"); i >= 0 {
			s = s[:i]
		}
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t") || strings.HasPrefix(strings.TrimSpace(s), "-") {
			continue // comments, blank lines and nested values
		}
		k, v, ok := strings.Cut(s, ":")
		if !ok {
			return fmt.Errorf("%s:%d: expected \"key: value\"", path, line)
		}
		k = strings.TrimSpace(k)
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		set := func(name, val string) {
			if _, given := into[name]; !given {
				into[name] = val
			}
		}
		switch k {
		case "FamThreadModel":
			if strings.EqualFold(v, "single") {
				set("FAM_THREAD_MODEL", "FAM_THREAD_SERIALIZE")
			} else {
				set("FAM_THREAD_MODEL", "FAM_THREAD_MULTIPLE")
			}
		case "fam_client_interface_service_address":
			host, port, ok := strings.Cut(v, ":")
			if ok {
				set("CIS_SERVER", host)
				set("GRPC_PORT", port)
			}
		default:
			if name, ok := peConfigKeys[k]; ok && v != "" {
				set(name, v)
			}
		}
	}
	return sc.Err()
}

// applyPEConfig merges the PE config file, if any, into opts.Settings.
func applyPEConfig(opts *Options) error {
	p, err := peConfigPath()
	if err != nil {
		return err
	}
	if p == "" {
		return nil
	}
	s := map[string]string{}
	for k, v := range opts.Settings {
		s[k] = v
	}
	if err := readPEConfig(p, s); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("config file %s not found", p)
		}
		return err
	}
	opts.Settings = s
	return nil
}
