package main

import (
	"fmt"
	"os"
)

// runFinalizeUpgrade is `restarea admin finalize-upgrade`: once every
// member runs the new release, raise the cluster version so that the new
// release's formats may be used; from then on older releases can no
// longer start on the cluster's data or join it (docs/upgrades.md).
func runFinalizeUpgrade(name string, args []string) int {
	f := newAdminFlags(name, "")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	r, err := a.FinalizeUpgrade(ctx)
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, r)
	}
	fmt.Fprintln(os.Stdout, r.Message)
	fmt.Fprintf(os.Stdout, "cluster version: %d (this node's binary knows up to %d)\n", r.Status.ClusterVersion, r.Status.ClusterVersionMax)
	tw := newTable(os.Stdout)
	row(tw, "MEMBER", "VERSION", "CLUSTER_VERSION_MAX")
	for _, m := range r.Status.Members {
		row(tw, cell(m.ID, 0), versionCell(m.Version), maxCell(m.ClusterVersionMax))
	}
	tw.Flush()
	return adminOK
}

// versionCell shows a member's release; "?" when it did not say.
func versionCell(v string) string {
	if v == "" {
		return "?"
	}
	return cell(v, 0)
}

// maxCell shows the newest cluster version a member knows; "?" unknown.
func maxCell(n int) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprint(n)
}
