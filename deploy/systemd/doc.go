// Package systemd holds no code of its own: it tests restarea.service and
// the restarea.env example beside it. The tests check the directives the
// README's "Three machines with systemd" relies on (dedicated user, state
// directory, hardening, restart, file limit, a stop timeout long enough
// for the leader hand-over); that every RESTAREA_* variable names a flag
// of `restarea serve` (read from the built binary's `serve -h`); run
// `systemd-analyze verify` and `systemd-analyze security --offline` on a
// copy of the unit whose ExecStart is the freshly built binary; and play
// the walkthrough on loopback: certificates from `restarea tls`, three
// `restarea serve` processes configured only by the unit's environment and
// the example's, a cluster over mutual TLS, the leader stopped by SIGTERM.
//
// The systemd-analyze tests skip, saying so, when the tool is not
// installed; the walkthrough skips under -short. systemd itself is not
// run (a test cannot start units), so the sandboxing directives are
// checked statically only.
package systemd
