// The verify and reverify steps: every replica checked against the manifest, the broken ones
// repaired from a good one, and the file faults detected by what failed.

package drills

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"lifeboat/providers"
	"lifeboat/verify"
	"lifeboat/verify/replicate"
)

// verify quick-verifies every region's replica, deep for the candidates' and for every replica
// whose store keeps no checksum to compare quickly (a quick UNVERIFIED is hashed); in the first
// pass, replicas that failed are repaired from one that passed outside the lost region. A copy
// that stays UNVERIFIED makes the step inconclusive, never passed.
func (x *run) verify(phase string) (string, error) {
	jobs := x.verifyJobs(phase)
	results := x.runVerify(jobs)
	hashed := 0
	for i, j := range jobs {
		if j.mode == verify.ModeQuick && results[i].Status == verify.ReplicaUnverified && x.ctx.Err() == nil {
			s := x.stores[x.Fleet.Regions[j.region].Replica]
			results[i] = verify.Deep(x.ctx, x.Manifest, s, verify.Options{Jobs: 4})
			jobs[i].mode = verify.ModeDeep
			hashed++
		}
	}
	vr := VerifyRun{Phase: phase}
	var bad, good, unproven []string
	for i, j := range jobs {
		res := results[i]
		vr.Replicas = append(vr.Replicas, x.replicaVerdict(j, res))
		switch {
		case res.Status == verify.ReplicaOK:
			good = append(good, j.region)
		case res.Status == verify.ReplicaUnverified:
			unproven = append(unproven, j.region) // nothing failed; nothing proven either
		default:
			bad = append(bad, j.region)
		}
	}
	x.rep.Verify = append(x.rep.Verify, vr)
	detail := fmt.Sprintf("%d replica(s): %d OK", len(jobs), len(good))
	if hashed > 0 {
		detail += fmt.Sprintf(" (%d hashed in full: no native checksum to compare quickly)", hashed)
	}
	if len(unproven) > 0 {
		detail += fmt.Sprintf(", %d UNVERIFIED (%s)", len(unproven), strings.Join(unproven, ", "))
	}
	if phase == "before" {
		x.source, x.verified = x.repairSource(good), true // where the lost region's stand-in is restored from, too
	}
	if len(bad) == 0 {
		if len(unproven) > 0 {
			return detail, fmt.Errorf("%w: %d of %d replica(s) not verified (%s): nothing failed, but nothing proved them intact either", errInconclusive, len(unproven), len(jobs), strings.Join(unproven, ", "))
		}
		return detail, nil
	}
	detail += fmt.Sprintf(", %d failed (%s)", len(bad), strings.Join(bad, ", "))
	if phase == "after" {
		return detail, fmt.Errorf("replicas failed verification: %s", strings.Join(bad, ", "))
	}
	from := x.source
	if from == "" {
		return detail, fmt.Errorf("replicas failed verification: %s; no replica outside the lost region %s passed, so there is nothing to repair them from (a drill that loses %s never copies from it)", strings.Join(bad, ", "), x.Drill.Lose, x.Drill.Lose)
	}
	unrepaired := x.repair(bad, from)
	detail += fmt.Sprintf("; repaired %d from %s", len(bad)-len(unrepaired), from)
	if len(unrepaired) > 0 {
		return detail, fmt.Errorf("could not repair %s", strings.Join(unrepaired, ", "))
	}
	if undetected := x.unexplained(bad); len(undetected) > 0 {
		return detail, fmt.Errorf("replicas broken by no injected fault: %s (a real gap: fix it)", strings.Join(undetected, ", "))
	}
	return detail, nil
}

// repairSource is the first region of good whose replica is not the lost region's: a drill that
// loses a region never copies from it. "" when there is none.
func (x *run) repairSource(good []string) string {
	lost := x.Fleet.Regions[x.Drill.Lose].Replica
	for _, g := range good {
		if g != x.Drill.Lose && x.Fleet.Regions[g].Replica != lost {
			return g
		}
	}
	return ""
}

// verifyJob is one replica to verify, named by the first region that has it.
type verifyJob struct {
	region string
	mode   verify.Mode
}

// verifyJobs: each distinct replica once, deep for a candidate's in the first pass.
func (x *run) verifyJobs(phase string) []verifyJob {
	var jobs []verifyJob
	seen := map[string]bool{}
	cands := x.candidates()
	for _, n := range x.Fleet.RegionNames() {
		u := x.Fleet.Regions[n].Replica
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		mode := verify.ModeQuick
		if phase == "before" && slices.Contains(cands, n) {
			mode = verify.ModeDeep
		}
		jobs = append(jobs, verifyJob{n, mode})
	}
	return jobs
}

// runVerify verifies the jobs' replicas, all at once (each with 4 requests in flight).
func (x *run) runVerify(jobs []verifyJob) []verify.ReplicaResult {
	results := make([]verify.ReplicaResult, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := x.stores[x.Fleet.Regions[j.region].Replica]
			if j.mode == verify.ModeDeep {
				results[i] = verify.Deep(x.ctx, x.Manifest, s, verify.Options{Jobs: 4})
			} else {
				results[i] = verify.Quick(x.ctx, x.Manifest, s, verify.Options{Jobs: 4})
			}
		}()
	}
	wg.Wait()
	return results
}

// replicaVerdict is one replica's result for the report; its failed files detect file faults.
func (x *run) replicaVerdict(j verifyJob, res verify.ReplicaResult) ReplicaVerdict {
	rv := ReplicaVerdict{Region: j.region, URL: providers.Redact(res.URL), Mode: string(j.mode), Status: string(res.Status), Counts: map[string]int{}, Problems: []string{}, Error: providers.Redact(res.Error)}
	for st, c := range res.Counts {
		rv.Counts[string(st)] = c
	}
	for _, f := range res.Files {
		if f.Status.Failed() || f.Status == verify.StatusError {
			rv.Problems = append(rv.Problems, fmt.Sprintf("%s: %s", f.Path, f.Status))
			x.detectFile(j.region, f, res.URL, string(j.mode))
		}
	}
	return rv
}

// repair copies what is missing or wrong into each failed replica from the one in region from
// (deep: every byte checked), so that its candidate can boot; it returns the regions it could
// not repair.
func (x *run) repair(bad []string, from string) []string {
	var unrepaired []string
	src := x.stores[x.Fleet.Regions[from].Replica]
	for _, region := range bad {
		to := x.stores[x.Fleet.Regions[region].Replica]
		rr, err := replicate.Run(x.ctx, x.Manifest, src, to, replicate.Options{Deep: true, Log: x.log()})
		rp := Repair{Region: region, From: from}
		if rr != nil {
			rp.Status, rp.Copied = string(rr.Status), rr.Copied
		}
		if err != nil {
			rp.Detail = providers.Redact(err.Error())
		}
		if err != nil || rr == nil || rr.Status != replicate.OK {
			unrepaired = append(unrepaired, region)
		}
		x.rep.Repairs = append(x.rep.Repairs, rp)
	}
	return unrepaired
}

// unexplained are failed regions whose failure no injected file fault explains.
func (x *run) unexplained(bad []string) []string {
	var out []string
	for _, region := range bad {
		explained := false
		for _, ff := range x.files {
			explained = explained || x.Fleet.Regions[ff.f.Region].Replica == x.Fleet.Regions[region].Replica
		}
		if !explained {
			out = append(out, region)
		}
	}
	return out
}

func (x *run) detectFile(region string, f verify.FileResult, url, mode string) {
	for i := range x.rep.Faults {
		fr := &x.rep.Faults[i]
		if effectOf(fr.Fault) != effectReplica || fr.Path != f.Path || fr.Detected {
			continue
		}
		if x.Fleet.Regions[fr.Region].Replica != x.Fleet.Regions[region].Replica {
			continue
		}
		fr.Detected = true
		fr.Evidence = providers.Redact(fmt.Sprintf("%s verify of %s: %s %s (%s)", mode, url, f.Path, f.Status, f.Detail))
	}
}
