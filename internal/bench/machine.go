package bench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// Machine describes where a run happened.
type Machine struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model,omitempty"`
	MemoryMiB  int64  `json:"memory_mib,omitempty"`
	OS         string `json:"os"`
	GoVersion  string `json:"go_version"`
	Filesystem string `json:"filesystem,omitempty"`
}

func describeMachine(dir string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		var kb int64
		for _, c := range strings.Fields(v)[0] {
			kb = kb*10 + int64(c-'0')
		}
		m.MemoryMiB = kb >> 10
	}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil {
		m.Filesystem = fsName(st.Type)
	}
	return m
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func fsName(t int64) string {
	switch t {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794c7630:
		return "overlayfs"
	}
	return "other"
}
