package main

import (
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/restarea/restarea/internal/certs"
)

// envFlags lets every flag of fs also be set by an environment variable:
// --data-dir ↔ RESTAREA_DATA_DIR. A flag given on the command line wins.
func envFlags(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		name := "RESTAREA_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %v", name, e)
			}
		}
	})
	return err
}

// parseFlags parses args and then the environment; on error it prints
// and returns false.
func parseFlags(fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		return false
	}
	if err := envFlags(fs); err != nil {
		fmt.Fprintf(os.Stderr, "restarea %s: %v\n", fs.Name(), err)
		return false
	}
	return true
}

// loadCA returns the roots of a --ca flag: the system's plus the
// certificates in file; nil (the system's alone) when file is "".
func loadCA(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pool, err := certs.LoadPool(file)
	if err != nil {
		return nil, fmt.Errorf("--ca: %s", strings.TrimPrefix(err.Error(), "certs: "))
	}
	return pool, nil
}

// jsonLogger is the logger of the commands that run a node (serve,
// restore): JSON lines on stderr, each with time, level and msg, the
// shape of every line a node writes.
func jsonLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
