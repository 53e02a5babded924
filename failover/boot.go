package failover

import (
	"fmt"
	"sort"
	"strings"

	"lifeboat/verify/warm"
)

// BootOptions turns a region of the fleet into what warm.Boot needs to start it: the launcher
// (exec: the command checked now, so a bad template is bad input before anything is restored;
// endpoint: a replica already running, nothing to restore) and the launcher's env, sorted.
// command rewrites an exec command line before it is checked (the CLI makes "lifeboat …" run
// itself). Restore source, manifest, workdir and probe settings are the caller's.
func (f *Fleet) BootOptions(region string, command func(string) string) (warm.BootOptions, error) {
	var o warm.BootOptions
	r := f.Regions[region]
	if r == nil {
		names := f.RegionNames()
		if len(names) > 20 {
			names = append(names[:20:20], fmt.Sprintf("… %d more", len(f.RegionNames())-20))
		}
		return o, fmt.Errorf("--region %s: not in %s (regions: %s)", region, f.File, strings.Join(names, ", "))
	}
	if r.Launcher == nil {
		return o, fmt.Errorf("%s:%d: regions.%s has no launcher: add launcher: {kind: exec, command: ...} or {kind: endpoint}", f.File, r.Line, region)
	}
	keys := make([]string, 0, len(r.Launcher.Env))
	for k := range r.Launcher.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o.Env = append(o.Env, k+"="+r.Launcher.Env[k])
	}
	if r.Launcher.Kind == LauncherEndpoint {
		u := r.Launcher.URL
		if u == "" {
			u = r.Endpoint
		}
		o.Launcher, o.NoRestore = &warm.EndpointLauncher{URL: u}, true
		return o, nil
	}
	cmdline := r.Launcher.Command
	if command != nil {
		cmdline = command(cmdline)
	}
	el := &warm.ExecLauncher{Command: cmdline, Port: r.Launcher.Port}
	if _, err := el.CommandArgs(warm.ExecVars{ModelDir: "/m", EngineConfig: "/e", Host: "127.0.0.1", Port: 1}); err != nil {
		return o, fmt.Errorf("%s: regions.%s.launcher.command: %w", f.File, region, err)
	}
	o.Launcher = el
	return o, nil
}
