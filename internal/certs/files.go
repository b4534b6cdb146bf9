package certs

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ExistsError reports files that are already there with other content;
// nothing was written.
type ExistsError struct {
	Paths []string
}

func (e *ExistsError) Error() string {
	return "certs: refusing to overwrite " + strings.Join(e.Paths, ", ")
}

// Is makes errors.Is(err, fs.ErrExist) true.
func (e *ExistsError) Is(target error) bool { return target == fs.ErrExist }

type file struct {
	name string
	data []byte
	mode os.FileMode
}

// writeFiles writes every file into dir with its exact mode. A file that
// already holds the same bytes is left alone. Without force, any other
// existing file stops the whole write before anything is written, and a
// failure part-way removes what this call created. With force, each file
// is replaced atomically (written beside it, then renamed), so a reader
// never sees half a key and an old file's wider mode is not inherited.
func writeFiles(dir string, force bool, files []file) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	var todo []file
	var exists []string
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		old, err := os.ReadFile(path)
		switch {
		case err == nil && bytes.Equal(old, f.data):
			continue
		case err == nil || !errors.Is(err, fs.ErrNotExist):
			// Present (or unreadable, or a directory): never clobbered
			// without force.
			exists = append(exists, path)
		}
		todo = append(todo, f)
	}
	if len(exists) > 0 && !force {
		return &ExistsError{Paths: exists}
	}
	var created []string
	for _, f := range todo {
		path := filepath.Join(dir, f.name)
		var err error
		if force {
			err = replaceFile(dir, path, f)
		} else {
			err = createFile(path, f)
		}
		if err != nil {
			for _, p := range created {
				os.Remove(p)
			}
			return fmt.Errorf("certs: write %s: %w", path, err)
		}
		created = append(created, path)
	}
	return syncDir(dir)
}

// createFile writes a file that must not exist yet (O_EXCL: a file that
// appeared since the check is not overwritten either).
func createFile(path string, f file) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
	if err != nil {
		return err
	}
	err = fill(out, f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func replaceFile(dir, path string, f file) error {
	tmp, err := os.CreateTemp(dir, "."+f.name+".tmp-*")
	if err != nil {
		return err
	}
	err = fill(tmp, f)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// fill sets the mode explicitly (the umask only ever narrows it, but a
// key must be exactly 0600), writes and syncs.
func fill(out *os.File, f file) error {
	if err := out.Chmod(f.mode); err != nil {
		return err
	}
	if _, err := out.Write(f.data); err != nil {
		return err
	}
	return out.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("certs: sync %s: %w", dir, err)
	}
	return nil
}

// LoadPool returns the system's trusted roots plus every certificate in
// the PEM file path: the roots a client verifies a public port with when
// its certificate comes from a private CA. A file without a certificate
// is an error.
func LoadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("certs: %s holds no PEM certificate", path)
	}
	return pool, nil
}
