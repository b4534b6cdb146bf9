package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Compact rewrites the journal keeping only the records of posts that are
// still pending, and returns how many records it dropped. The new file
// replaces the old one by an atomic rename, fsynced with its directory.
func (j *Journal) Compact() (int, error) {
	dropped := 0
	err := j.locked(func() error {
		recs, err := j.read()
		if err != nil {
			return err
		}
		keep := map[string]bool{}
		for _, p := range pendingOf(recs) {
			keep[p.Request.RequestID] = true
		}
		var buf bytes.Buffer
		for _, r := range recs {
			if !keep[r.RequestID] {
				dropped++
				continue
			}
			line, err := json.Marshal(r)
			if err != nil {
				return err
			}
			buf.Write(append(line, '\n'))
		}
		if dropped == 0 {
			return nil
		}
		tmp := j.path + ".tmp"
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("journal compact: %w", err)
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			f.Close()
			return fmt.Errorf("journal compact: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("journal compact: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("journal compact: %w", err)
		}
		if err := os.Rename(tmp, j.path); err != nil {
			return fmt.Errorf("journal compact: %w", err)
		}
		return syncDir(filepath.Dir(j.path))
	})
	return dropped, err
}

// locked runs fn holding the in-process mutex and the exclusive file lock.
// The lock is on a sidecar file rather than the journal itself because
// Compact replaces the journal: a lock on the old inode would not exclude
// a writer that opened the new one.
func (j *Journal) locked(fn func() error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	lf, err := os.OpenFile(j.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("journal lock: %w", err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return fmt.Errorf("journal lock: %w", err)
	}
	defer unlockFile(lf)
	return fn()
}

// openAppend opens the journal for appending and reports whether it was
// created by this call.
func (j *Journal) openAppend() (*os.File, bool, error) {
	_, statErr := os.Stat(j.path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("journal: %w", err)
	}
	return f, created, nil
}

// closeSynced fsyncs and closes f, and fsyncs the directory when the file
// was just created (its directory entry is not durable otherwise).
func (j *Journal) closeSynced(f *os.File, created bool) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal fsync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if created {
		return syncDir(filepath.Dir(j.path))
	}
	return nil
}

// append writes r as one line and fsyncs. The caller holds the lock. If a
// crash left the last line without its newline, a newline is written
// first so that the torn line stays alone and r stays readable.
func (j *Journal) append(r Record) error {
	r.V = journalVersion
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, created, err := j.openAppend()
	if err != nil {
		return err
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("journal write: %w", err)
	}
	return j.closeSynced(f, created)
}

// read parses the journal. The caller holds the lock.
func (j *Journal) read() ([]Record, error) {
	data, err := os.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Record
		if json.Unmarshal(line, &r) != nil || r.RequestID == "" {
			continue
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("journal dir fsync: %w", err)
	}
	return nil
}
