package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ImageConfig is the part of an OCI image configuration a Dockerfile sets
// (the "config" object), with the field names the image spec gives it.
type ImageConfig struct {
	User         string              `json:"User,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Volumes      map[string]struct{} `json:"Volumes,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`

	// Copies are the COPY instructions' destinations and owners
	// ("uid:gid", "" for root), which the layer reproduces.
	Copies map[string]string `json:"-"`
}

// ParseDockerfile reads the runtime configuration of the project's
// Dockerfile, so that the release image and `docker build` cannot
// disagree: USER, EXPOSE, VOLUME, ENTRYPOINT and CMD (exec form). FROM
// must be scratch; COPY is what the layer holds (the builder writes it
// itself); any other instruction is refused by name, since the release
// image would silently lack it.
func ParseDockerfile(r io.Reader) (ImageConfig, error) {
	var c ImageConfig
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(text, "\\") && sc.Scan() {
			line++
			text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(sc.Text())
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		instr, arg, _ := strings.Cut(text, " ")
		arg = strings.TrimSpace(arg)
		fail := func(format string, a ...any) (ImageConfig, error) {
			return ImageConfig{}, fmt.Errorf("Dockerfile line %d (%s): %s", line, strings.ToUpper(instr), fmt.Sprintf(format, a...))
		}
		switch strings.ToUpper(instr) {
		case "FROM":
			if arg != "scratch" {
				return fail("the release image is built FROM scratch, not %q", arg)
			}
		case "COPY":
			f := strings.Fields(arg)
			owner := ""
			if len(f) > 0 && strings.HasPrefix(f[0], "--chown=") {
				owner, f = strings.TrimPrefix(f[0], "--chown="), f[1:]
			}
			if len(f) != 2 || strings.HasPrefix(f[0], "--") {
				return fail("want COPY [--chown=UID:GID] SRC DST, got %q", arg)
			}
			if c.Copies == nil {
				c.Copies = map[string]string{}
			}
			c.Copies[f[1]] = owner
		case "USER":
			c.User = arg
		case "EXPOSE":
			if c.ExposedPorts == nil {
				c.ExposedPorts = map[string]struct{}{}
			}
			for _, p := range strings.Fields(arg) {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				c.ExposedPorts[p] = struct{}{}
			}
		case "VOLUME":
			if c.Volumes == nil {
				c.Volumes = map[string]struct{}{}
			}
			var vs []string
			if strings.HasPrefix(arg, "[") {
				if err := json.Unmarshal([]byte(arg), &vs); err != nil {
					return fail("%v", err)
				}
			} else {
				vs = strings.Fields(arg)
			}
			for _, v := range vs {
				c.Volumes[v] = struct{}{}
			}
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(arg), &v); err != nil {
				return fail("want the exec form (a JSON array): %v", err)
			}
			if strings.ToUpper(instr) == "CMD" {
				c.Cmd = v
			} else {
				c.Entrypoint = v
			}
		default:
			return fail("the release image builder (internal/release) does not carry this instruction; teach it before using it")
		}
	}
	if err := sc.Err(); err != nil {
		return ImageConfig{}, err
	}
	if len(c.Entrypoint) == 0 {
		return ImageConfig{}, fmt.Errorf("Dockerfile: no ENTRYPOINT")
	}
	return c, nil
}
