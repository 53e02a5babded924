package warm

import (
	"fmt"
	"slices"
	"sort"

	"lifeboat/fleet"
	"lifeboat/manifest/signature"
)

// FleetBootOptions turns a region of the fleet into what Boot needs to start it, through the
// region's launcher kind: the launcher (an exec command is checked now, so a bad template is bad
// input before anything is restored), whether there is anything to restore (nothing for a
// launcher that only attaches to a replica already serving), and the launcher's env, sorted.
// Restore source, manifest, workdir and probe settings are the caller's. It is the one place a
// region's launcher is built: the boot command and the drills both come here.
func FleetBootOptions(f *fleet.Fleet, region string, lo fleet.LaunchOptions) (BootOptions, error) {
	var o BootOptions
	r := f.Regions[region]
	if r == nil {
		return o, f.UnknownRegion(region) // the one message: the regions, and the closest
	}
	if r.Launcher == nil {
		return o, fmt.Errorf("%s:%d: regions.%s has no launcher: add launcher: {kind: exec, command: ...} or {kind: endpoint}", f.File, r.Line, region)
	}
	if r.Launcher.Config == nil {
		return o, fmt.Errorf("%s:%d: regions.%s.launcher.kind: %s", f.File, r.Line, region, fleet.UnknownKind(r.Launcher.Kind, fleet.LauncherKinds()))
	}
	keys := make([]string, 0, len(r.Launcher.Env))
	for k := range r.Launcher.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o.Env = append(o.Env, k+"="+r.Launcher.Env[k])
	}
	o.PassEnv = slices.Clone(r.Launcher.PassEnv)
	l, err := r.Launcher.Config.Launcher(f, r, lo)
	if err != nil {
		return o, err
	}
	o.Launcher, o.NoRestore = l, r.Launcher.AttachesOnly()
	if f.Trust != nil { // Boot enforces the fleet's trust: (see BootOptions.Trust)
		o.Trust, o.ManifestRef = signature.FleetPolicy(f.Trust.Keys, f.Trust.Require, f.File), f.Model.Manifest
	}
	if ip, ok := r.Launcher.Config.(fleet.InPlaceLauncher); ok && ip.RestoresModelInPlace() {
		o.ModelInPlace = true
	}
	return o, nil
}
