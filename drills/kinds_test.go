//go:build integration

package drills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	_ "lifeboat/failover/routers/caddy" // the kinds the tests' fleet files use
	_ "lifeboat/failover/routers/file"
	_ "lifeboat/failover/routers/haproxy"
	_ "lifeboat/failover/routers/httpdoc"
	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/internal/base/yamlnode"
	_ "lifeboat/verify/warm/endpoint"
	"lifeboat/verify/warm/execlauncher"
)

// simConfig is a launcher kind registered by this test, as a kind in its own package is: it
// boots the engine simulator of a given binary, and runs no command line a fault could alter
// (it is not a fleet.CommandLauncher).
type simConfig struct{ Binary string }

var _ fleet.LauncherConfig = (*simConfig)(nil)

func init() {
	fleet.RegisterLauncher(fleet.LauncherKind{Name: "engine-sim", Config: func() fleet.LauncherConfig { return &simConfig{} }})
}

func (c *simConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"binary": func(n *yaml.Node, at string) { c.Binary = d.Path(n, at) }}
}

func (c *simConfig) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
	if c.Binary == "" {
		d.Errf(d.Line("regions."+r.Name+".launcher"), "regions."+r.Name+".launcher.binary", "required with kind engine-sim")
	}
}

func (c *simConfig) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	return &execlauncher.Launcher{Command: c.Binary + " engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}"}, nil
}

// TestDrillBootsThroughRegisteredLauncher: a drill boots its candidates through the fleet's own
// launcher kind, whatever it is — here one registered outside package failover — and a fault
// that needs what the kind cannot do is refused before anything runs, at its line.
func TestDrillBootsThroughRegisteredLauncher(t *testing.T) {
	rig := newDrillRig(t, fileRegions(t), fileOpen, rigOptions{launcher: func(bin string, _ int) string {
		return fmt.Sprintf("{kind: engine-sim, binary: %q}", bin)
	}})
	if _, ok := rig.fleet.Regions["eu-central-1"].Launcher.Config.(*simConfig); !ok {
		t.Fatalf("launcher %+v", rig.fleet.Regions["eu-central-1"].Launcher)
	}
	d := rig.drill(t, `name: boot-only
fleet: fleet.yaml
lose: eu-west-1
steps: [boot, teardown]
expect:
  - warm: eu-central-1
  - warm: us-west-2
`)
	rep, err := rig.runner(d).Run(drillCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Boots) != 5 {
		t.Fatalf("drill failed or booted %d candidates:\n%s", len(rep.Boots), dumpSteps(rep))
	}
	for _, b := range rep.Boots {
		if !b.OK {
			t.Errorf("boot %+v", b)
		}
	}
	checkNothingLeft(t, rig, rep)

	path := filepath.Join(rig.dir, "faulty.yaml")
	if err := os.WriteFile(path, []byte("name: boot-fails\nfleet: fleet.yaml\nlose: eu-west-1\nsteps: [boot, teardown]\nfaults:\n  - {kind: boot-fails, region: us-west-2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rig.runner(fd).Run(drillCtx(t))
	var de *DrillError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "faulty.yaml:6: faults[0].region: us-west-2 has no launcher that runs a command line") {
		t.Fatalf("a boot-fails fault on a launcher without a command line: %v", err)
	}
}

// leftoverConfig is a launcher kind whose candidates leave something behind outside this host's
// process groups (here: a file per boot in a directory, as a pod is in a namespace), which its
// launcher finds and removes again (fleet.LeftoverCleaner).
type leftoverConfig struct{ Dir string }

func init() {
	fleet.RegisterLauncher(fleet.LauncherKind{Name: "leaves-files", Config: func() fleet.LauncherConfig { return &leftoverConfig{} }})
}

var _ fleet.LeftoverCleaner = (*leftoverLauncher)(nil)

func (c *leftoverConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"dir": func(n *yaml.Node, at string) { c.Dir = d.Path(n, at) }}
}
func (c *leftoverConfig) Check(*fleet.Decoder, *fleet.Fleet, *fleet.Region) {}
func (c *leftoverConfig) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	return &leftoverLauncher{dir: c.Dir, region: r.Name}, nil
}

type leftoverLauncher struct{ dir, region string }

func (l *leftoverLauncher) Launch(context.Context, launch.Spec) (launch.Instance, error) {
	return nil, errors.New("not used here")
}

// CleanupLeftovers removes this region's marks, and nothing else.
func (l *leftoverLauncher) CleanupLeftovers(context.Context) ([]string, error) {
	ms, err := filepath.Glob(filepath.Join(l.dir, l.region+".*.boot"))
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// TestDrillCleanupAsksTheLauncher: `drill cleanup` after a dead drill removes what the
// candidates' launcher left behind (through its LeftoverCleaner), and only that.
func TestDrillCleanupAsksTheLauncher(t *testing.T) {
	marks := t.TempDir()
	rig := newDrillRig(t, fileRegions(t), fileOpen, rigOptions{launcher: func(string, int) string {
		return fmt.Sprintf("{kind: leaves-files, dir: %q}", marks)
	}})
	for _, n := range []string{"eu-central-1.1.boot", "us-west-2.7.boot", "someone-else.boot"} {
		if err := os.WriteFile(filepath.Join(marks, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := drillCtx(t)
	state := mustOpen(t, rig.fleet.State)
	host, boot := thisHost()
	dead := &DrillRecord{ID: "20261202T000000.000Z-dead-1", Drill: "dead", Host: host, Boot: boot, PID: os.Getpid(), PIDStart: "1", /* this process started later: another process */
		Started: time.Now().Add(-time.Hour), Baseline: baseline, Faults: []FaultUndo{}, Candidates: []CandidateRecord{}, Left: []string{},
		FleetDigest: "sha256:this-fleet"}
	if err := saveRecord(ctx, state, dead); err != nil {
		t.Fatal(err)
	}
	res, err := (&Cleaner{Fleet: rig.fleet, Manifest: rig.m, Open: rig.open, FleetDigest: "sha256:this-fleet"}).Cleanup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !slices.Contains(res[0].Teardown.Stopped, "eu-central-1") || !slices.Contains(res[0].Teardown.Stopped, "us-west-2") {
		t.Fatalf("cleanup %+v", res)
	}
	left, _ := filepath.Glob(filepath.Join(marks, "*"))
	if len(left) != 1 || filepath.Base(left[0]) != "someone-else.boot" {
		t.Errorf("left in the launcher's place: %v (want only what it did not create)", left)
	}
}
