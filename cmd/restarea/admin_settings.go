package main

import (
	"flag"
	"os"

	"github.com/restarea/restarea"
)

// runSettingsGet is `restarea admin settings get`.
func runSettingsGet(name string, args []string) int {
	f := newAdminFlags(name, "")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	ctx, stop := adminContext()
	defer stop()
	s, err := a.Settings(ctx)
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, s)
	}
	printSettings(os.Stdout, s)
	return adminOK
}

// runSettingsSet is `restarea admin settings set`: only the flags given
// are sent, so two operators changing different settings do not undo
// each other.
func runSettingsSet(name string, args []string) int {
	f := newAdminFlags(name, "[--writes-disabled=true|false] [--rate-per-source 30/m] [--rate-global 2000/h]")
	writesDisabled := f.fs.Bool("writes-disabled", false, "refuse new posts (true) or accept them again (false)")
	perSource := f.fs.String("rate-per-source", "", "post attempts per source, COUNT/WINDOW as serve takes it (30/m, 5/10s)")
	global := f.fs.String("rate-global", "", "new entries site-wide, COUNT/WINDOW (2000/h)")
	a, _, code, ok := f.setup(args, 0)
	if !ok {
		return code
	}
	var patch restarea.SettingsPatch
	var bad error
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "writes-disabled":
			patch.WritesDisabled = writesDisabled
		case "rate-per-source":
			l, err := restarea.ParseLimit(*perSource)
			if err != nil && bad == nil {
				bad = err
			}
			patch.PerSourceLimit = &l
		case "rate-global":
			l, err := restarea.ParseLimit(*global)
			if err != nil && bad == nil {
				bad = err
			}
			patch.GlobalLimit = &l
		}
	})
	if bad != nil {
		return f.usage("%v", bad)
	}
	if patch.WritesDisabled == nil && patch.PerSourceLimit == nil && patch.GlobalLimit == nil {
		return f.usage("give at least one of --writes-disabled, --rate-per-source, --rate-global")
	}
	ctx, stop := adminContext()
	defer stop()
	s, err := a.UpdateSettings(ctx, patch)
	if err != nil {
		return f.fail(err)
	}
	if f.output == "json" {
		return printJSON(os.Stdout, s)
	}
	printSettings(os.Stdout, s)
	return adminOK
}
