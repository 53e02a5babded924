package failover

// Approval is what applying a plan takes from the operator: the policy, not the asking (the CLI
// prompts on a terminal, or reads the answer from stdin, or takes --yes).
type Approval struct {
	// Partial: the plan cannot reach its target and falling short was not accepted beforehand
	// (allow-partial), so the question must say the outcome ends held for safety.
	Partial bool
	// YesFlags are the flags that approve this plan without a prompt: "--yes", or "--yes
	// --allow-partial" for a plan that falls short for more than the classes skip-blocked left.
	YesFlags string
}

// ApprovalFor is the approval the plan p needs, given whether falling short was accepted
// (allowPartial) and whether blocked classes are skipped on purpose (skipBlocked).
func ApprovalFor(p *Plan, allowPartial, skipBlocked bool) Approval {
	a := Approval{Partial: !p.Complete && !allowPartial, YesFlags: "--yes"}
	if !p.Complete && !allowPartial && !(skipBlocked && p.OnlyBlocked()) {
		a.YesFlags = "--yes --allow-partial"
	}
	return a
}

// SavedPlanApproved says whether a saved plan (failover run --plan FILE) runs without asking: it
// was approved when it was saved (as terraform apply PLANFILE) — unless it cannot reach its
// target, which needs allowPartial, or was saved with skip-blocked and leaves out only the
// blocked classes (the operator's acceptance then).
func SavedPlanApproved(p *Plan, allowPartial bool) bool {
	return p.Complete || allowPartial || p.SkipBlocked && p.OnlyBlocked()
}
