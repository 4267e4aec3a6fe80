package main

import (
	"fmt"
	"net"
	"os"
)

// sdNotify sends state (such as "READY=1") to the service manager when
// famd runs under systemd with Type=notify: systemd names a Unix datagram
// socket in $NOTIFY_SOCKET (a path, or an abstract name starting with
// '@'). Without the variable it does nothing and returns nil. This is the
// whole of sd_notify(3)'s protocol, so famd needs no libsystemd.
func sdNotify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	if name[0] != '/' && name[0] != '@' {
		return fmt.Errorf("NOTIFY_SOCKET=%q: want a socket path or an abstract name (@...)", name)
	}
	addr := &net.UnixAddr{Name: name, Net: "unixgram"}
	if name[0] == '@' {
		// Go spells Linux's abstract namespace with a leading NUL byte.
		addr.Name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return fmt.Errorf("notifying the service manager at %s: %w", name, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("notifying the service manager at %s: %w", name, err)
	}
	return nil
}

// notifyReady tells the service manager famd is serving (every listener
// is open), with a status line systemctl status shows.
func notifyReady(lg *logger, status string) {
	if err := sdNotify(fmt.Sprintf("READY=1\nSTATUS=%s\nMAINPID=%d", status, os.Getpid())); err != nil {
		lg.warnf("%v", err)
	}
}

// notifyStopping tells the service manager famd is shutting down.
func notifyStopping(lg *logger) {
	if err := sdNotify("STOPPING=1"); err != nil {
		lg.debugf("%v", err)
	}
}
