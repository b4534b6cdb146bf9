package powerfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// Machine is a backing directory and its current mount: a simulated
// machine whose power a harness cuts and which it reboots.
type Machine struct {
	backing, mountpoint string
	opts                Options

	mu sync.Mutex
	fs *FS // nil while unmounted
}

// NewMachine mounts backing at mountpoint.
func NewMachine(backing, mountpoint string, opts Options) (*Machine, error) {
	fs, err := Mount(backing, mountpoint, opts)
	if err != nil {
		return nil, err
	}
	return &Machine{backing: backing, mountpoint: mountpoint, opts: opts, fs: fs}, nil
}

// Cut cuts the power (see FS.Cut).
func (m *Machine) Cut() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs != nil {
		m.fs.Cut()
	}
}

// Reboot cuts the power if it is still on, unmounts, and mounts the
// backing directory again. Kill the processes that used the mount first.
func (m *Machine) Reboot() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs != nil {
		m.fs.Cut()
		if err := m.fs.Unmount(); err != nil {
			return err
		}
		m.fs = nil
	}
	fs, err := Mount(m.backing, m.mountpoint, m.opts)
	if err != nil {
		return err
	}
	m.fs = fs
	return nil
}

// Stats reports the current mount's Stats.
func (m *Machine) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs == nil {
		return Stats{Cut: true}
	}
	return m.fs.Stats()
}

// Close unmounts (dropping what is pending, like Reboot without the
// mount).
func (m *Machine) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs == nil {
		return nil
	}
	err := m.fs.Unmount()
	m.fs = nil
	return err
}

// ServeControl answers control commands, one per line, on every
// connection ln accepts, until ln is closed: "cut" (the power cut),
// "reboot" (unmount and mount again), "stats" (a JSON line of Stats).
// Each command is answered with one line: "ok", the JSON, or
// "error: ..." naming what went wrong.
func ServeControl(ln net.Listener, m *Machine) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go serveConn(c, m)
	}
}

func serveConn(c net.Conn, m *Machine) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		var answer string
		switch cmd := strings.TrimSpace(sc.Text()); cmd {
		case "cut":
			m.Cut()
			answer = "ok"
		case "reboot":
			answer = "ok"
			if err := m.Reboot(); err != nil {
				answer = "error: " + err.Error()
			}
		case "stats":
			b, _ := json.Marshal(m.Stats())
			answer = string(b)
		default:
			answer = fmt.Sprintf("error: unknown command %q (want cut, reboot or stats)", cmd)
		}
		if _, err := fmt.Fprintln(c, answer); err != nil {
			return
		}
	}
}
