// Package systemd holds no code of its own: it tests restarea.service and
// the restarea.env example beside it. The tests check the directives the
// README's "Three machines with systemd" relies on (dedicated user, state
// directory, hardening, restart, file limit, a stop timeout long enough
// for the leader hand-over), that every RESTAREA_* variable names a flag of
// `restarea serve` (read from the built binary's `serve -h`), and run
// `systemd-analyze verify` and `systemd-analyze security --offline` on a
// copy of the unit whose ExecStart is the freshly built binary.
//
// The systemd-analyze tests skip, saying so, when the tool is not
// installed.
package systemd
