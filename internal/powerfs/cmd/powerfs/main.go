// Command powerfs mounts a powerfs file system (package
// internal/powerfs) and lets a test harness cut its power from outside the
// processes that use it, over a unix socket:
//
//	powerfs --backing DISK --mount MNT --control CTL.sock &
//	restarea serve --data-dir MNT/data ...
//	echo cut | nc -U CTL.sock      # the power cut: pending writes and names dropped, EIO from now on
//	kill -9 <the node>
//	echo reboot | nc -U CTL.sock   # unmount, mount DISK again
//	echo stats | nc -U CTL.sock    # {"pending_bytes":...}
//
// SIGINT or SIGTERM unmounts and exits. It is a tool of its own rather
// than a subcommand of restarea, since it is no part of running a board;
// tests in Go and `restarea chaos --power-fs` use the package directly.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/restarea/restarea/internal/powerfs"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("powerfs", flag.ContinueOnError)
	backing := fs.String("backing", "", "directory that holds the synced state (the disk); created if missing")
	mount := fs.String("mount", "", "existing empty directory to mount on")
	control := fs.String("control", "", "unix socket to create for the commands cut, reboot and stats")
	syncBacking := fs.Bool("sync-backing", false, "also fsync the backing directory's files when the mount's fsyncs write them")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for name, v := range map[string]string{"--backing": *backing, "--mount": *mount, "--control": *control} {
		if v == "" {
			fmt.Fprintf(os.Stderr, "powerfs: %s is required\n", name)
			return 2
		}
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ln, err := net.Listen("unix", *control)
	if err != nil {
		fmt.Fprintf(os.Stderr, "powerfs: --control %s: %v\n", *control, err)
		return 1
	}
	defer os.Remove(*control)
	m, err := powerfs.NewMachine(*backing, *mount, powerfs.Options{SyncBacking: *syncBacking, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	log.Info("powerfs: mounted", "backing", *backing, "mount", *mount, "control", *control)
	go powerfs.ServeControl(ln, m)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	ln.Close()
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
