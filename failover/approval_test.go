package failover

import "testing"

func TestApprovalPolicy(t *testing.T) {
	complete := &Plan{Complete: true}
	short := &Plan{Complete: false, Hold: "eu-central-1 would exceed its capacity"}
	onlyBlocked := &Plan{Complete: false, SkipBlocked: true, Blocked: []ClassBlock{{Class: "eu-only"}}}
	for _, c := range []struct {
		name                      string
		p                         *Plan
		allowPartial, skipBlocked bool
		want                      Approval
		saved                     bool
	}{
		{"complete", complete, false, false, Approval{YesFlags: "--yes"}, true},
		{"short", short, false, false, Approval{Partial: true, YesFlags: "--yes --allow-partial"}, false},
		{"short, allowed", short, true, false, Approval{YesFlags: "--yes"}, true},
		{"short, skip-blocked but held", short, false, true, Approval{Partial: true, YesFlags: "--yes --allow-partial"}, false},
		{"only blocked, skipped", onlyBlocked, false, true, Approval{Partial: true, YesFlags: "--yes"}, true},
		{"only blocked, not skipped", onlyBlocked, false, false, Approval{Partial: true, YesFlags: "--yes --allow-partial"}, true},
	} {
		if got := ApprovalFor(c.p, c.allowPartial, c.skipBlocked); got != c.want {
			t.Errorf("%s: ApprovalFor = %+v, want %+v", c.name, got, c.want)
		}
		if got := SavedPlanApproved(c.p, c.allowPartial); got != c.saved {
			t.Errorf("%s: SavedPlanApproved = %v, want %v", c.name, got, c.saved)
		}
	}
}
