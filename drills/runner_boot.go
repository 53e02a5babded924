// The boot step: each candidate restored and booted through the fleet's own launcher, judged
// warm or not, and recorded for a clean-up; candidate faults are detected by the verdicts.

package drills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/providers"
	"lifeboat/verify/replicate"
	"lifeboat/verify/warm"
)

// boot restores and boots a candidate of every region with an exec launcher, keeping the warm
// ones running for the failover and the traffic.
//
// The lost region is never a candidate: when it has a launcher (no endpoint of its own), the
// drill boots a stand-in there that plays the region's own serving before the loss and after
// the failback, restored from another region's verified replica (x.source), never its own.
func (x *run) boot() (string, error) {
	cands := x.candidates()
	if len(cands) == 0 {
		return "", fmt.Errorf("no region other than the lost %s has a launcher: the drill has no candidate to recover on", x.Drill.Lose)
	}
	standIn := ""
	if x.Fleet.Regions[x.Drill.Lose].Candidate() {
		if x.source == "" && !x.verified {
			x.source = x.repairSource(cands) // no verify step ran: a candidate's replica, unverified
		}
		if x.source == "" {
			return "", fmt.Errorf("no replica outside the lost region %s passed verification: nothing to restore its stand-in from (a drill that loses %s never restores from it)", x.Drill.Lose, x.Drill.Lose)
		}
		standIn = x.Drill.Lose
	}
	all := cands
	if standIn != "" {
		all = append(slices.Clone(cands), standIn)
	}
	type out struct {
		res *warm.BootResult
		err error
	}
	outs := make([]out, len(all))
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, region := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-x.ctx.Done():
				outs[i].err = x.ctx.Err()
				return
			}
			defer func() { <-sem }()
			outs[i].res, outs[i].err = x.bootOne(region)
		}()
	}
	wg.Wait()
	var warmN []string
	var problems []string
	standInDetail := ""
	var standInErr error
	for i, region := range all {
		o := outs[i]
		bs := BootSummary{Region: region, Role: RoleCandidate}
		if region == standIn {
			bs.Role, bs.From = RoleStandIn, x.source
		}
		if o.res != nil {
			bs.Verdict, bs.Reason, bs.OK, bs.URL = string(o.res.Verdict), providers.Redact(o.res.Reason), o.res.OK, o.res.URL
			bs.WarmS, bs.TTFTS, bs.TotalS = o.res.Timings.WarmS, o.res.Timings.TTFTS, o.res.Timings.TotalS
			x.boots[region] = o.res
			if o.res.Kept {
				x.insts[region] = o.res.Instance
				if len(x.models) == 0 {
					x.models = o.res.Models
				}
			}
		}
		if o.err != nil {
			bs.Verdict, bs.Reason = "ERROR", providers.Redact(o.err.Error())
		}
		x.rep.Boots = append(x.rep.Boots, bs)
		x.detectBoot(region, bs)
		if region == standIn {
			standInDetail = fmt.Sprintf("; the lost region %s is played by a stand-in restored from %s's replica (%s), not a candidate", standIn, x.source, bs.Verdict)
			if !bs.OK {
				standInErr = fmt.Errorf("the stand-in for the lost region %s is not warm (%s: %s): nothing serves it before the loss or takes the failback", standIn, bs.Verdict, bs.Reason)
			}
			continue
		}
		if bs.OK {
			warmN = append(warmN, region)
		} else {
			problems = append(problems, region+" "+bs.Verdict)
		}
	}
	x.exFl = x.executorFleet()
	// Each candidate was recorded before its command ran (ownCandidate); a launcher that
	// records nothing there (one that starts no process group here) is recorded now.
	x.recMu.Lock()
	for _, region := range slices.Sorted(mapsKeys(x.insts)) {
		c := CandidateRecord{Region: region, URL: x.insts[region].BaseURL()}
		if pg, ok := x.insts[region].(launch.ProcessGroup); ok {
			c.PGID = pg.PGID()
		}
		if !slices.ContainsFunc(x.drec.Candidates, func(r CandidateRecord) bool { return r.Region == region && (c.PGID == 0 || r.PGID == c.PGID) }) {
			c.Start = launch.ProcStart(c.PGID)
			x.drec.Candidates = append(x.drec.Candidates, c)
		}
	}
	x.drec.Models = x.models
	err := saveRecord(x.ctx, x.state, x.drec)
	x.recMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("record the candidates for a clean-up: %w", err)
	}
	detail := fmt.Sprintf("%d of %d candidate(s) warm (%s)", len(warmN), len(cands), strings.Join(warmN, ", "))
	if len(problems) > 0 {
		detail += "; not warm: " + strings.Join(problems, ", ")
	}
	detail += standInDetail
	if len(warmN) == 0 {
		return detail, errors.New("no candidate came up warm")
	}
	if standInErr != nil {
		return detail, standInErr
	}
	if x.insts[x.Drill.Lose] == nil && x.Fleet.Regions[x.Drill.Lose].Endpoint == "" {
		return detail, fmt.Errorf("the lost region %s has no stand-in and no endpoint: nothing serves it before the drill", x.Drill.Lose)
	}
	if un := x.unexplainedBoots(problems); len(un) > 0 {
		return detail, fmt.Errorf("candidates not warm with no injected fault to explain it: %s", strings.Join(un, ", "))
	}
	return detail, nil
}

func (x *run) unexplainedBoots(problems []string) []string {
	var out []string
	for _, p := range problems {
		region, _, _ := strings.Cut(p, " ")
		explained := false
		for _, f := range x.rep.Faults {
			explained = explained || (effectOf(f.Fault) == effectCandidate && f.Region == region)
		}
		if !explained {
			out = append(out, region)
		}
	}
	return out
}

func (x *run) detectBoot(region string, bs BootSummary) {
	for i := range x.rep.Faults {
		fr := &x.rep.Faults[i]
		if effectOf(fr.Fault) == effectCandidate && fr.Region == region {
			fr.Injected, fr.At = true, x.offset(x.stepStart)
			if !bs.OK {
				fr.Detected = true
				fr.Evidence = fmt.Sprintf("the candidate in %s was judged %s: %s; it receives no traffic", region, bs.Verdict, bs.Reason)
			} else {
				fr.Evidence = fmt.Sprintf("the candidate in %s was judged WARM despite the fault", region)
			}
		}
	}
}

// bootOne boots the region's candidate through the fleet's own launcher (warm.FleetBootOptions),
// whatever its kind; a fault that alters the command line (boot-fails, saturate) rewrites it
// through LaunchOptions.Command, which Check made sure the region's launcher takes.
func (x *run) bootOne(region string) (*warm.BootResult, error) {
	r := x.Fleet.Regions[region]
	lo := fleet.LaunchOptions{Command: func(cmd string) string {
		if x.Command != nil {
			cmd = x.Command(cmd)
		}
		for _, f := range x.rep.Faults {
			if k, _ := kindOfFault(f.Kind); f.Region == region && k.command != nil {
				cmd = k.command(f.Fault, cmd)
			}
		}
		return cmd
	}}
	o, err := warm.FleetBootOptions(x.Fleet, region, lo)
	if err != nil {
		return nil, err
	}
	from := r.Replica
	if region == x.Drill.Lose {
		from = x.Fleet.Regions[x.source].Replica // the stand-in: never from the lost region's own replica
	}
	o.Manifest, o.From, o.Workdir = x.Manifest, x.stores[from], filepath.Join(x.tmp, "boot", region)
	o.Trusted, o.OpenSigned, o.Warn = x.trusted, x.OpenSigned, x.Warn // the drill's check, of these bytes
	o.Probe, o.Keep, o.Restore = x.Probe, true, replicate.Options{Log: x.log()}
	o.Starting = func(st launch.Started) error { return x.ownCandidate(region, st) }
	o.Probe.Auth = x.Fleet.ProbeAuth(region) // the bearer token's source, never the token
	if err := os.MkdirAll(filepath.Join(x.tmp, "boot"), 0o700); err != nil {
		return nil, err
	}
	return warm.Boot(x.ctx, o)
}
